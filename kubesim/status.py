"""``kubesim status``: each component's health and the cluster's nodes and Pods at a glance.

Everything comes from the API, as a user of a real cluster would find it: the
APIServer's ``/readyz``, the leader-election Leases of the scheduler and the
controller-manager (renewed every 2 s by the leader), the node Leases the
kubelets renew, and the Nodes and Pods themselves. When ``kubesim up`` runs
from the same data directory, its component processes' ``/healthz`` are
checked too (it records their ports in ``<data-dir>/components.json``).
"""

from __future__ import annotations

import argparse
import collections
import datetime
import json
from pathlib import Path
from typing import Any

import httpx

from kubesim.kubeconfig import find_config
from machinery.api.meta import parse_time, utcnow
from machinery.client.config import ClientConfig, ConfigError

LEADER_LEASES = (("controller-manager", "kube-controller-manager"), ("scheduler", "kube-scheduler"))


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--server", help="the APIServer URL (default: $KUBECONFIG, else <data-dir>/kubeconfig)")
    p.add_argument("--data-dir", type=Path, default=Path(".kubesim"), help="kubesim up's data dir (default .kubesim)")


def _age(ts: str | None, now: datetime.datetime) -> float | None:
    t = parse_time(ts)
    return None if t is None else (now - t).total_seconds()


def _ready(node: dict[str, Any]) -> str:
    for cond in (node.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return {"True": "Ready", "False": "NotReady"}.get(cond.get("status"), "Unknown")
    return "Unknown"


def report(config: ClientConfig, data_dir: Path) -> tuple[str, bool]:
    """The status text, and whether everything is healthy."""
    lines: list[str] = []
    healthy = True
    now = utcnow()
    server = config.server
    with httpx.Client(**config.httpx_options(), timeout=5) as api:
        try:
            ready = api.get("/readyz", params={"verbose": ""})
        except httpx.HTTPError as e:
            return f"apiserver            unreachable   {server}: {e}", False
        ok = ready.status_code == 200
        healthy &= ok
        rows = [("apiserver", "ok" if ok else "not ready", server)]
        for name, lease_name in LEADER_LEASES:
            r = api.get(f"/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/{lease_name}")
            if r.status_code != 200:
                rows.append((name, "no leader", f"no Lease kube-system/{lease_name} yet"))
                healthy = False
                continue
            spec = r.json().get("spec") or {}
            age = _age(spec.get("renewTime"), now)
            duration = spec.get("leaseDurationSeconds") or 15
            fresh = age is not None and age <= duration
            healthy &= fresh
            rows.append((name, "ok" if fresh else "stale",
                         f"leader {spec.get('holderIdentity')}, renewed {age:.0f}s ago" if age is not None
                         else "no renewal yet"))
        nodes = api.get("/api/v1/nodes").json()["items"]
        leases = {item["metadata"]["name"]: item for item in
                  api.get("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases").json()["items"]}
        ready_nodes = [n for n in nodes if _ready(n) == "Ready"]
        fresh_leases = [n for n in nodes if (age := _age(
            ((leases.get(n["metadata"]["name"]) or {}).get("spec") or {}).get("renewTime"), now)) is not None
            and age <= 40]
        kubelets_ok = bool(nodes) and len(fresh_leases) == len(nodes)
        healthy &= kubelets_ok
        rows.append((f"kubelets ({len(nodes)} nodes)", "ok" if kubelets_ok else "degraded",
                     f"{len(ready_nodes)}/{len(nodes)} Ready, {len(fresh_leases)}/{len(nodes)} leases fresh"))
        pods = api.get("/api/v1/pods").json()["items"]

    local = data_dir / "components.json"
    if local.exists():
        for name, port in json.loads(local.read_text()).items():
            try:
                up = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200
            except httpx.HTTPError:
                up = False
            healthy &= up
            rows.append((f"{name} process", "ok" if up else "down", f"/healthz on 127.0.0.1:{port}"))

    width = max(len(r[0]) for r in rows)
    lines.append(f"{'COMPONENT'.ljust(width)}  {'STATUS'.ljust(9)}  DETAIL")
    lines += [f"{n.ljust(width)}  {s.ljust(9)}  {d}" for n, s, d in rows]

    per_node: collections.Counter[str] = collections.Counter()
    phases: collections.Counter[str] = collections.Counter()
    for pod in pods:
        phases[(pod.get("status") or {}).get("phase") or "Unknown"] += 1
        node = (pod.get("spec") or {}).get("nodeName")
        if node:
            per_node[node] += 1
    lines.append("")
    lines.append(f"{'NODE'.ljust(24)}  {'STATUS'.ljust(9)}  PODS  TAINTS")
    for n in sorted(nodes, key=lambda n: n["metadata"]["name"]):
        name = n["metadata"]["name"]
        status = _ready(n) + (",SchedulingDisabled" if (n.get("spec") or {}).get("unschedulable") else "")
        taints = ",".join(f"{t['key']}={t.get('value', '')}:{t['effect']}" if t.get("value") else
                          f"{t['key']}:{t['effect']}" for t in (n.get("spec") or {}).get("taints") or [])
        lines.append(f"{name.ljust(24)}  {status.ljust(9)}  {str(per_node[name]).rjust(4)}  {taints or '-'}")
    lines.append("")
    summary = ", ".join(f"{count} {phase}" for phase, count in sorted(phases.items())) or "none"
    lines.append(f"PODS: {len(pods)} ({summary})")
    return "\n".join(lines), healthy


def main(args: argparse.Namespace) -> int:
    try:
        config = find_config(args.server, args.data_dir)
    except (FileNotFoundError, ValueError, ConfigError) as e:
        print(f"kubesim status: {e}")
        return 2
    text, healthy = report(config, args.data_dir)
    print(text)
    return 0 if healthy else 1
