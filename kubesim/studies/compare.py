"""``kubesim compare TRACE --profile A.yaml --profile B.yaml``: one trace, two scheduler configurations.

Before anything starts, the trace is read and checked whole and every
profile is parsed and built (with ``--plugin-module`` plugins): a profile
naming an unknown plugin, or a broken trace, stops the comparison here.
Then each profile gets a fresh cluster (:mod:`.clusters`: one after the
other, or side by side with ``--parallel``), the trace is replayed on it
(:mod:`.replay`) while an :class:`~kubesim.studies.observe.Observer` watches,
and the runs are reported side by side (:mod:`.figures`):

- Pods scheduled and pending over time (and at the end), scheduling latency
  p50/p99, preemptions;
- per-node cpu and memory allocation: mean, standard deviation, Gini;
- fragmentation (Pods of the trace's median size that would still fit),
  nodes used;
- which placements differ between the first profile and each other one, and
  which Score plugin decided them in each run;

as a table on the terminal, ``compare.json`` and plots (``timeline``,
``allocation``, ``latency``, each PNG and SVG) in ``--out``.

With ``--seed N`` (passed to each scheduler and to the replay, which then
settles the cluster between the trace's instants), the same trace, seed and
profile give the same placements every time; without it, the replay runs
on the clock at ``--speed``, as production would.

Synchronous at the top (clusters are processes); each run has its own event
loop, in its own thread with ``--parallel``.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import datetime as dt
import json
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubesim.studies import api, clusters, figures, plots, tracefilter, traceformat
from kubesim.studies.actions import client_actions, initial_objects
from kubesim.studies.observe import Observer, Placement
from kubesim.studies.replay import Replayer, load_trace, parse_time, positive
from machinery.client.config import load_kubeconfig
from scheduler.framework.runtime import FrameworkError
from scheduler.outoftree import PluginModuleError, load_registry
from scheduler.profile import ConfigError, load_config
from scheduler.scheduler import check_profiles


class CompareError(ValueError):
    """Something that stops a comparison before it starts."""


@dataclass(frozen=True, slots=True)
class Profile:
    name: str
    path: Path


def check_profiles_first(paths: Sequence[Path], plugin_modules: Sequence[str]) -> list[Profile]:
    """Every profile parsed and built, or CompareError naming the file: nothing has started yet."""
    try:
        registry = load_registry(plugin_modules)
    except PluginModuleError as err:
        raise CompareError(str(err)) from None
    profiles: list[Profile] = []
    for path in paths:
        try:
            check_profiles(load_config(path), registry)
        except (ConfigError, FrameworkError) as err:
            raise CompareError(f"profile {path}: {err}") from None
        name = path.stem
        if any(p.name == name for p in profiles):
            name = f"{name}-{len(profiles) + 1}"
        profiles.append(Profile(name, path))
    return profiles


# --- one run ------------------------------------------------------------------------------------------------


def run_profile(profile: Profile, trace: traceformat.Trace, args: argparse.Namespace,
                say: Any = print) -> dict[str, Any]:
    spec = clusters.ClusterSpec(scheduler_config=profile.path, seed=args.seed,
                                plugin_modules=tuple(args.plugin_module), decisions_kept=args.decisions_kept)
    say(f"[{profile.name}] starting a cluster")
    with clusters.cluster(spec) as cluster:
        say(f"[{profile.name}] replaying {len(client_actions(trace.records))} client actions")
        return asyncio.run(_replay_and_observe(profile, cluster, trace, args))


async def _replay_and_observe(profile: Profile, cluster: clusters.StudyCluster, trace: traceformat.Trace,
                              args: argparse.Namespace) -> dict[str, Any]:
    async with api.client(load_kubeconfig(cluster.kubeconfig), "compare") as client:
        observer = Observer(client, scheduler_metrics=f"{cluster.scheduler_url}/metrics")
        await observer.start()
        try:
            replayer = Replayer(client, speed=args.speed, start=args.start, end=args.end,
                                deterministic=args.seed is not None, observer=observer,
                                settle_timeout=args.settle_timeout)
            report = await replayer.run(initial_objects(trace), client_actions(trace.records))
            if args.seed is None:
                await observer.wait_settled(timeout=args.settle_timeout)
                observer.sample(report.trace_seconds + args.start)
            return summarise(profile, report, observer)
        finally:
            await observer.stop()


def summarise(profile: Profile, report: Any, observer: Observer) -> dict[str, Any]:
    placements = observer.placements()
    allocatable = observer.allocatable()
    latencies = observer.observations.latencies
    cpu = figures.allocation(placements, allocatable, "cpu")
    memory = figures.allocation(placements, allocatable, "memory")
    nodes = sorted(allocatable)
    return {
        "name": profile.name, "profile": str(profile.path),
        "replay": {"sent": dict(report.sent), "failed": report.failed, "notServed": dict(report.not_served),
                   "wallSeconds": round(report.wall_seconds, 3), "traceSeconds": round(report.trace_seconds, 3),
                   "settled": report.settled},
        "timeline": [{"t": round(s.t, 3), "scheduled": s.scheduled, "pending": s.pending}
                     for s in observer.observations.samples],
        "scheduled": sum(1 for p in placements if p.node), "pending": sum(1 for p in placements if not p.node),
        "latency": {"p50": figures.percentile(latencies, 50), "p99": figures.percentile(latencies, 99),
                    "all": [round(x, 4) for x in latencies]},
        "preemptions": len(observer.observations.preempted),
        "allocation": {
            "cpu": {**figures.spread(cpu).as_dict(), "perNode": dict(zip(nodes, (round(x, 4) for x in cpu),
                                                                         strict=True))},
            "memory": {**figures.spread(memory).as_dict(), "perNode": dict(zip(nodes, (round(x, 4) for x in memory),
                                                                               strict=True))},
        },
        "fragmentation": figures.fragmentation(placements, allocatable, figures.median_size(placements)).as_dict(),
        "nodesUsed": figures.nodes_used(placements), "nodes": len(nodes),
        "placements": [{"namespace": p.namespace, "name": p.name, "owner": p.owner, "node": p.node,
                        "decidedBy": figures.decided_by(p.score_result) if p.node else None}
                       for p in placements],
    }


def differences(first: dict[str, Any], other: dict[str, Any]) -> dict[str, Any]:
    def placements(run: dict[str, Any]) -> list[Placement]:
        return [Placement(p["namespace"], p["name"], p["owner"], p["node"], 0, 0) for p in run["placements"]]
    only_first, only_other = figures.differing(placements(first), placements(other))
    decided = {run["name"]: dict(Counter(next(p["decidedBy"] or "(pending)" for p in run["placements"]
                                               if (p["namespace"], p["name"]) == (d.namespace, d.name))
                                          for d in diff))
               for run, diff in ((first, only_first), (other, only_other))}
    return {"between": [first["name"], other["name"]], "count": max(len(only_first), len(only_other)),
            "of": max(len(first["placements"]), len(other["placements"])), "decidedBy": decided}


# --- the report ---------------------------------------------------------------------------------------------


def _seconds(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.2f} s"


def table(runs: Sequence[dict[str, Any]], diffs: Sequence[dict[str, Any]]) -> str:
    rows: list[tuple[str, ...]] = [("", *(r["name"] for r in runs))]

    def row(label: str, cell: Any) -> None:
        rows.append((label, *(cell(r) for r in runs)))
    row("Pods scheduled / pending (end)", lambda r: f"{r['scheduled']} / {r['pending']}")
    row("most Pods pending at once", lambda r: str(max((s["pending"] for s in r["timeline"]), default=0)))
    row("scheduling latency p50 / p99",
        lambda r: f"{_seconds(r['latency']['p50'])} / {_seconds(r['latency']['p99'])}")
    row("preemptions", lambda r: str(r["preemptions"]))
    for resource in ("cpu", "memory"):
        row(f"{resource} allocation mean / stddev / Gini", lambda r, res=resource: "{mean:.1%} / {stddev:.3f} / "
            "{gini:.3f}".format(**r["allocation"][res]))
    row("median-size Pods that still fit", lambda r: str(r["fragmentation"]["medianPodsThatFit"]))
    row("free cpu on nodes that fit none", lambda r: f"{r['fragmentation']['strandedCpuShare']:.1%}")
    row("nodes used", lambda r: f"{r['nodesUsed']} of {r['nodes']}")
    row("replay: actions sent, failed", lambda r: f"{sum(r['replay']['sent'].values())}, {len(r['replay']['failed'])}")
    widths = [max(len(x[i]) for x in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(r)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    for diff in diffs:
        a, b = diff["between"]
        lines.append("")
        lines.append(f"placements that differ between {a} and {b}: {diff['count']} of {diff['of']} Pods")
        for name, counts in diff["decidedBy"].items():
            if counts:
                lines.append(f"  decided in {name} by: " + ", ".join(
                    f"{plugin} {n}" for plugin, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))))
    return "\n".join(lines)


# --- the command --------------------------------------------------------------------------------------------


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("trace", metavar="TRACE", help="a trace of kubesim record, or builtin:spread-vs-pack")
    parser.add_argument("--profile", action="append", type=Path, required=True, metavar="FILE",
                        help="a KubeSchedulerConfiguration (give two or more); each runs on its own cluster")
    parser.add_argument("--parallel", action="store_true", help="run the clusters side by side, not one after the other")
    parser.add_argument("--seed", type=int, default=None, metavar="N",
                        help="deterministic: the schedulers' tie-breaking and the replay take this seed")
    parser.add_argument("--speed", type=positive, default=10.0, metavar="K",
                        help="replay at K times real speed (default 10)")
    parser.add_argument("--from", dest="start", type=parse_time, default=0.0, metavar="T",
                        help="start T seconds (or a duration) into the trace")
    parser.add_argument("--to", dest="end", type=parse_time, default=None, metavar="T",
                        help="stop T seconds (or a duration) into the trace")
    parser.add_argument("--filter", action="append", default=[], metavar="OP",
                        help="edit the trace first (see kubesim replay --help)")
    parser.add_argument("--plugin-module", action="append", default=[], metavar="MODULE",
                        help="out-of-tree scheduler plugins the profiles may enable (repeatable)")
    parser.add_argument("--decisions-kept", type=int, default=100, metavar="N",
                        help="each scheduler's /debug/decisions size (default 100)")
    parser.add_argument("--settle-timeout", type=float, default=120.0, metavar="SECONDS",
                        help="how long to wait for a cluster to settle (default 120)")
    parser.add_argument("--out", type=Path, default=None, metavar="DIR",
                        help="where compare.json and the plots go (default compare-<date>-<time>)")
    parser.add_argument("--no-plots", action="store_true", help="write no plots")


def main(args: argparse.Namespace) -> int:
    if len(args.profile) < 2:
        print("error: give at least two --profile files to compare", file=sys.stderr)
        return 2
    try:
        trace = load_trace(args.trace, args.filter, args.seed or 0)
        profiles = check_profiles_first(args.profile, args.plugin_module)
    except (traceformat.TraceError, tracefilter.FilterError, CompareError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    out = args.out or Path(f"compare-{dt.datetime.now().strftime('%Y%m%d-%H%M%S')}")
    out.mkdir(parents=True, exist_ok=True)

    def say(message: str) -> None:
        print(f"[compare] {message}", file=sys.stderr, flush=True)
    if args.parallel:
        with concurrent.futures.ThreadPoolExecutor(max_workers=len(profiles)) as pool:
            runs = list(pool.map(lambda p: run_profile(p, trace, args, say), profiles))
    else:
        runs = [run_profile(p, trace, args, say) for p in profiles]
    diffs = [differences(runs[0], other) for other in runs[1:]]
    report = {"trace": args.trace, "seed": args.seed, "speed": args.speed, "filters": args.filter,
              "runs": runs, "differences": diffs}
    (out / "compare.json").write_text(json.dumps(report, indent=2) + "\n")
    print(table(runs, diffs))
    written = [] if args.no_plots else plots.draw(runs, out)
    print(f"\nresults: {out / 'compare.json'}" + (f", plots: {', '.join(p.name for p in written)}" if written else ""))
    return 1 if any(r["replay"]["failed"] for r in runs) else 0
