"""``kubesim explain NAMESPACE/POD [--node NODE]``: why the scheduler put a Pod where it did, and not elsewhere.

The scheduler keeps the full per-node results of its last decisions and
serves them on its health port at ``/debug/decisions/<namespace>/<pod>``
(see :mod:`scheduler.decisions`); this command prints the latest: the
nodes rejected, grouped by plugin and reason, and the scored nodes with each
plugin's share of their total. ``--node X`` answers "why not node X?": the
plugin that rejected it and why, or its score beside the chosen node's,
plugin by plugin, or that the cycle never reached it.

The scheduler is found at ``--scheduler URL``, else through the ports
``kubesim up`` records in ``<data-dir>/components.json``. When it has no
decision for the Pod (it restarted, or the decision is older than the last
``--decisions-kept``), the Pod's own ``kubesim.io/*`` annotations are shown
instead: the same decision, grouped, with the best nodes only.

Synchronous: a command run from a shell.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx

from kubesim.studies import api
from machinery.client import ConfigError

_SHOWN_NODES = 8


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("pod", metavar="NAMESPACE/POD", help="the Pod, e.g. default/web-x7k2p (default namespace if "
                                                             "no slash)")
    parser.add_argument("--node", metavar="NODE", help="why (not) this node?")
    parser.add_argument("--scheduler", metavar="URL",
                        help="the scheduler's health address, e.g. http://127.0.0.1:10259 (default: from "
                             "<data-dir>/components.json)")
    parser.add_argument("--data-dir", type=Path, default=Path(".kubesim"), help="kubesim up's data dir")
    parser.add_argument("--json", action="store_true", help="print the decision as JSON")
    api.add_connection_flags(parser)


def scheduler_url(explicit: str | None, data_dir: Path) -> str | None:
    if explicit:
        return explicit.rstrip("/")
    try:
        ports = json.loads((data_dir / "components.json").read_text())
    except (OSError, ValueError):
        return None
    port = ports.get("scheduler") if isinstance(ports, dict) else None
    return f"http://127.0.0.1:{port}" if port else None


def main(args: argparse.Namespace) -> int:
    namespace, _, name = args.pod.rpartition("/")
    namespace = namespace or "default"
    decision = None
    url = scheduler_url(args.scheduler, args.data_dir)
    if url is not None:
        try:
            response = httpx.get(f"{url}/debug/decisions/{namespace}/{name}", timeout=10)
            if response.status_code == 200:
                decision = response.json()["decisions"][-1]
        except (httpx.HTTPError, ValueError, KeyError, IndexError):
            decision = None
    if decision is None:
        try:
            decision = _from_annotations(args, namespace, name)
        except (ConfigError, httpx.HTTPError, LookupError) as err:
            print(f"error: {err}", file=sys.stderr)
            return 1
    if args.json:
        print(json.dumps(decision, indent=2))
        return 0
    print(describe(decision, node=args.node))
    return 0


def _from_annotations(args: argparse.Namespace, namespace: str, name: str) -> dict[str, Any]:
    config = api.connection(args.kubeconfig, args.server)
    with httpx.Client(**config.httpx_options(), timeout=10) as client:
        response = client.get(f"/api/v1/namespaces/{namespace}/pods/{name}")
    if response.status_code == 404:
        raise LookupError(f'pods "{name}" not found in namespace {namespace}')
    response.raise_for_status()
    pod = response.json()
    annotations = (pod.get("metadata") or {}).get("annotations") or {}
    if "kubesim.io/filter-result" not in annotations:
        raise LookupError(f"pod {namespace}/{name} has no scheduling decision yet (and the scheduler's "
                          "/debug/decisions could not be read: pass --scheduler URL)")
    filtered = json.loads(annotations["kubesim.io/filter-result"])
    decision: dict[str, Any] = {"pod": f"{namespace}/{name}", "fromAnnotations": True,
                                "result": "Scheduled" if annotations.get("kubesim.io/selected-node") else "Unschedulable",
                                "selectedNode": annotations.get("kubesim.io/selected-node"),
                                "nodes": filtered.get("nodes"), "evaluated": filtered.get("evaluated"),
                                "feasible": filtered.get("feasible"), "groups": filtered.get("rejected") or [],
                                "preFilter": filtered.get("allNodes")}
    if "kubesim.io/score-result" in annotations:
        scored = json.loads(annotations["kubesim.io/score-result"])
        decision["weights"] = scored.get("weights")
        decision["score"] = {n["node"]: {"total": n["total"], "plugins": {
            p: {"raw": s.get("raw"), "final": s.get("final")} for p, s in (n.get("scores") or {}).items()}}
            for n in scored.get("nodes") or ()}
    return decision


def _groups(decision: Mapping[str, Any]) -> list[dict[str, Any]]:
    if "groups" in decision:
        return list(decision["groups"])
    grouped: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for node, status in (decision.get("filter") or {}).items():
        grouped.setdefault((status.get("plugin", ""), tuple(status.get("reasons") or ())), []).append(node)
    return sorted(({"plugin": p, "reasons": list(r), "count": len(n), "nodes": sorted(n)}
                   for (p, r), n in grouped.items()), key=lambda g: (-g["count"], g["plugin"]))


def describe(decision: Mapping[str, Any], *, node: str | None = None) -> str:
    lines = [f"Pod {decision.get('pod')}: {decision.get('result')}"
             + (f" on {decision['selectedNode']}" if decision.get("selectedNode") else "")
             + (f" (profile {decision['profile']}, attempt {decision.get('attempt')}, {decision.get('time')})"
                if decision.get("profile") else " (from its annotations: best nodes only)")]
    if decision.get("message"):
        lines.append(f"  {decision['message']}")
    if decision.get("nodes") is not None:
        not_evaluated = (decision["nodes"] or 0) - (decision.get("evaluated") or 0)
        lines.append(f"{decision['nodes']} nodes: {decision.get('evaluated')} evaluated, {decision.get('feasible')} "
                     f"feasible" + (f", {not_evaluated} not evaluated (the cycle had enough feasible nodes: "
                                    "percentageOfNodesToScore)" if not_evaluated > 0 else ""))
    if node is not None:
        lines.append("")
        lines.append(why_node(decision, node))
        return "\n".join(lines)
    if decision.get("preFilter"):
        pre = decision["preFilter"]
        lines.append(f"PreFilter rejected every node: {pre.get('plugin')}: {', '.join(pre.get('reasons') or ())}")
    groups = _groups(decision)
    if groups:
        lines.append("Rejected:")
        for group in groups:
            names = ", ".join(group["nodes"][:_SHOWN_NODES]) + (", ..." if group["count"] > _SHOWN_NODES else "")
            lines.append(f"  {group['plugin'] or '-'}: {', '.join(group['reasons'])}: {group['count']} node(s): {names}")
    scores = decision.get("score") or {}
    if scores:
        ranked = sorted(scores.items(), key=lambda kv: -(kv[1].get("total") or 0))
        plugins = sorted({p for _, s in ranked for p in s.get("plugins") or {}})
        lines.append("Scores (weighted), best first:")
        header = ["NODE", "TOTAL", *plugins]
        rows = [[n, str(s.get("total")), *(str((s.get("plugins") or {}).get(p, {}).get("final", "-")) for p in plugins)]
                for n, s in ranked[:_SHOWN_NODES]]
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
        for r in [header, *rows]:
            lines.append("  " + "  ".join(c.ljust(widths[i]) for i, c in enumerate(r)).rstrip())
        if len(ranked) > _SHOWN_NODES:
            lines.append(f"  ... and {len(ranked) - _SHOWN_NODES} more feasible nodes (--node NODE, or --json)")
    return "\n".join(lines)


def why_node(decision: Mapping[str, Any], node: str) -> str:
    """The answer to "why not node X?" (or "why X?")."""
    chosen = decision.get("selectedNode")
    scores = decision.get("score") or {}
    filtered = decision.get("filter") or {}
    if node in filtered:
        status = filtered[node]
        return f"node {node} was rejected by {status.get('plugin')}: {', '.join(status.get('reasons') or ())}"
    for group in decision.get("groups") or ():
        if node in group.get("nodes") or ():
            return f"node {node} was rejected by {group['plugin']}: {', '.join(group['reasons'])}"
    if decision.get("preFilter"):
        pre = decision["preFilter"]
        return f"PreFilter rejected every node, {node} included: {pre.get('plugin')}: {', '.join(pre.get('reasons'))}"
    if node in scores:
        mine = scores[node]
        if node == chosen:
            others = sorted(((n, s) for n, s in scores.items() if n != node), key=lambda kv: -(kv[1].get("total") or 0))
            tail = f"; next best {others[0][0]} with {others[0][1].get('total')}" if others else ""
            return f"node {node} was chosen: total {mine.get('total')}{tail}"
        best = scores.get(chosen) if chosen else None
        lines = [f"node {node} was feasible and scored {mine.get('total')}"
                 + (f", behind {chosen}'s {best.get('total')}" if best else "") + ":"]
        if best:
            plugins = sorted(set(mine.get("plugins") or {}) | set(best.get("plugins") or {}))
            for plugin in plugins:
                a = (mine.get("plugins") or {}).get(plugin, {}).get("final", 0)
                b = (best.get("plugins") or {}).get(plugin, {}).get("final", 0)
                sign = "+" if a - b > 0 else ""
                lines.append(f"  {plugin:<36} {a:>5} vs {b:>5}  ({sign}{a - b})")
        return "\n".join(lines)
    if node == chosen:
        return f"node {node} was chosen: it was the only feasible node, so nothing was scored"
    if decision.get("fromAnnotations"):
        return (f"node {node} is not among the nodes the Pod's annotations keep (the best and the rejected groups' "
                "first names); the scheduler's /debug/decisions has every node")
    if (decision.get("notEvaluated") or 0) > 0:
        return (f"node {node} was not evaluated: the cycle stopped once it had {decision.get('feasible')} feasible "
                "nodes (percentageOfNodesToScore), before reaching it")
    return f"node {node} is not a node the scheduler knew when it decided"
