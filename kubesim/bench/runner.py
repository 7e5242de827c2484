"""``kubesim bench``: run the scenarios, print one table, write a JSON file of results.

Each scenario starts its own cluster on free ports (or etcd alone, for the
ceiling) and stops it when done. Scenarios print a progress line as they go.
A failing scenario is reported in the table; it does not stop the others.
Benchmarks print figures; they never pass or fail anything.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from kubelet_sim import bench as kubelet_bench
from kubesim.bench import api, churn, density, etcd_ceiling, scheduling
from kubesim.bench.cluster import cluster
from kubesim.bench.measure import APISERVER_ARGS, RSS_GOALS, check_alive, start_component, start_kubelets
from kubesim.bench.results import ScenarioResult, table, write_json


def _say(text: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {text}", flush=True)


@dataclass
class Run:
    """What one ``kubesim bench`` passes from scenario to scenario."""

    quick: bool
    #: Guarded etcd transactions per second, once the etcd scenario has measured them: the slower of
    #: create-if-absent and compare-and-swap (a Pod's writes are mostly creates: itself, its Events).
    ceiling: float | None = None


def _etcd(run: Run) -> ScenarioResult:
    with cluster() as c:
        port = int(c.etcd_url.rsplit(":", 1)[1])
        _say("etcd ceiling: guarded transactions straight to etcd")
        result = asyncio.run(etcd_ceiling.run(port, quick=run.quick))
    rates = [v for v in (result.get("create-if-absent txn/s"), result.get("compare-and-swap txn/s")) if v]
    run.ceiling = min(rates, default=None)
    return result


def _api(run: Run) -> ScenarioResult:
    with cluster() as c:
        result = asyncio.run(api.run(c.url, quick=run.quick, progress=_say))
        c.sample()
        result.add("APIServer peak RSS", c.peak_rss.get("apiserver"), "bytes")
        return result


#: --quick: 100 nodes, and these (existing, to schedule) Pods per variant.
_QUICK_PODS = {"basic": (20, 300), "node-affinity": (100, 300), "pod-anti-affinity": (20, 60)}


def _scheduling(run: Run) -> ScenarioResult:
    workloads = scheduling.WORKLOADS
    if run.quick:
        workloads = tuple(replace(w, nodes=100, existing_pods=_QUICK_PODS[w.variant][0],
                                  pods=_QUICK_PODS[w.variant][1]) for w in workloads)
    return scheduling.run(workloads, ceiling=run.ceiling, progress=_say)


def _density(run: Run) -> ScenarioResult:
    sizes = density.Sizes(nodes=100, controllers=10, replicas=20) if run.quick else density.Sizes()
    with cluster(APISERVER_ARGS) as c:
        return density.run(c, sizes, ceiling=run.ceiling, progress=_say)


def _kwok(run: Run) -> ScenarioResult:
    """KWOK's own benchmark: nodes to Ready, then pre-bound Pods to Running, no scheduler; heartbeats watched."""
    nodes, pods = (100, 200) if run.quick else (5000, 10_000)
    result = ScenarioResult("kubelet_sim (KWOK shape)")
    with cluster(APISERVER_ARGS) as c:
        # The node lifecycle controller alone: a late heartbeat would show as a node not Ready.
        start_component(c, "controller-manager", "controller_manager",
                        ["--controllers=node-lifecycle-controller"])
        kubelet_metrics = start_kubelets(c, nodes)
        kubelet = c.components["kubelet_sim"]
        _say(f"kubelet_sim: {nodes} nodes, then {pods} Pods created already bound")
        figures = asyncio.run(kubelet_bench.density(c.url, nodes=nodes, pods=pods, kubelet_pid=kubelet.pid,
                                                    progress=_say))
        del kubelet_metrics
        check_alive(c)
        c.sample()
    result.add("nodes Ready", figures["nodes_ready_seconds"], "s", "KWOK: 5,000 nodes in < 60 s")
    result.add("Pods Running", figures["pods_running_seconds"], "s", f"{pods} Pods; KWOK: 10,000 in < 60 s")
    result.add("pods started/s", figures["pods_started_per_second"], "/s")
    result.add("heartbeat lateness p99", figures["heartbeat_lateness_p99_seconds"], "s",
               "Lease renewals later than the 10 s interval")
    result.add("heartbeat gap max", figures["heartbeat_gap_max_seconds"], "s",
               "a node is unreachable after 40 s")
    result.add("nodes ever not Ready", figures["nodes_not_ready"], "", "goal 0")
    result.add("kubelet_sim peak RSS", c.peak_rss.get("kubelet_sim"), "bytes", RSS_GOALS["kubelet_sim"])
    result.add("apiserver peak RSS", c.peak_rss.get("apiserver"), "bytes", RSS_GOALS["apiserver"])
    return result


def _churn(run: Run) -> ScenarioResult:
    sizes = churn.Sizes(nodes=100, rate=20, seconds=5, lifetime=2) if run.quick else churn.Sizes()
    with cluster(APISERVER_ARGS) as c:
        return churn.run(c, sizes, ceiling=run.ceiling, progress=_say)


Scenario = Callable[[Run], ScenarioResult]
SCENARIOS: dict[str, Scenario] = {
    "etcd": _etcd,
    "api": _api,
    "scheduling": _scheduling,
    "density": _density,
    "kwok": _kwok,
    "churn": _churn,
}
#: The scenarios whose figures are read against the etcd ceiling: the etcd scenario runs before them.
_NEED_CEILING = frozenset({"scheduling", "density", "churn"})


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--quick", action="store_true", help="small sizes: a smoke run of every scenario")
    p.add_argument("--scenario", action="append", choices=sorted(SCENARIOS), metavar="NAME",
                   help=f"run only this scenario (repeatable): {', '.join(SCENARIOS)}")
    p.add_argument("--results-dir", type=Path, default=Path("bench/results"),
                   help="where the JSON results go (default bench/results)")


def _exit_on_sigterm(signum: int, _frame: object) -> None:
    # SystemExit unwinds the scenario, so each cluster it started is stopped and its directory removed.
    raise SystemExit(128 + signum)


def main(args: argparse.Namespace) -> int:
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    names = args.scenario or list(SCENARIOS)
    if "etcd" not in names and _NEED_CEILING.intersection(names):
        names = ["etcd", *names]
    run = Run(quick=args.quick)
    results: list[ScenarioResult] = []
    for name in names:
        _say(f"scenario {name}")
        started = time.perf_counter()
        try:
            result = SCENARIOS[name](run)
        except Exception as e:  # noqa: BLE001 - a failed scenario is a row in the table, not a crash
            traceback.print_exc(file=sys.stderr)
            result = ScenarioResult(name, error=f"{type(e).__name__}: {e}")
        result.seconds = result.seconds or time.perf_counter() - started
        results.append(result)
    print()
    print(table(results))
    path = write_json(results, args.results_dir, quick=args.quick)
    print(f"\nresults written to {path}")
    return 0
