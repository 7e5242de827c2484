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

import orjson

from kubelet_sim import bench as kubelet_bench
from kubesim import certs
from kubesim.bench import (
    api,
    churn,
    crd,
    density,
    envelope,
    etcd_ceiling,
    identities,
    rollout,
    scheduling,
    streaming,
)
from kubesim.bench import replay as replay_bench
from kubesim.bench.cluster import cluster
from kubesim.bench.measure import APISERVER_ARGS, RSS_GOALS, check_alive, start_component, start_kubelets
from kubesim.bench.plots import plot
from kubesim.bench.rawhttp import Connection
from kubesim.bench.results import ScenarioResult, table, write_json
from kubesim.bench.sizes import Size, pick


def _say(text: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {text}", flush=True)


@dataclass
class Run:
    """What one ``kubesim bench`` passes from scenario to scenario."""

    size: Size
    #: Guarded etcd transactions per second, once the etcd scenario has measured them: the slower of
    #: create-if-absent and compare-and-swap (a Pod's writes are mostly creates: itself, its Events).
    ceiling: float | None = None


def _etcd(run: Run) -> ScenarioResult:
    with cluster() as c:
        port = int(c.etcd_url.rsplit(":", 1)[1])
        _say("etcd ceiling: guarded transactions straight to etcd")
        result = asyncio.run(etcd_ceiling.run(port, size=run.size))
    rates = [v for v in (result.get("create-if-absent txn/s"), result.get("compare-and-swap txn/s")) if v]
    run.ceiling = min(rates, default=None)
    return result


#: The API scenario's client: a user RBAC binds to cluster-admin, so that every request is authorized by RBAC
#: (system:masters would be allowed before RBAC is asked).
_BENCH_USER = certs.Identity("kubesim-bench", "kubesim-bench")


def _api(run: Run) -> ScenarioResult:
    with cluster(insecure_port=True, extra_clients=[_BENCH_USER]) as c:
        asyncio.run(_bind_cluster_admin(c.url, _BENCH_USER.user))
        result = asyncio.run(api.run(c.endpoint(_BENCH_USER), size=run.size, progress=_say,
                                     insecure_url=c.insecure_url))
        c.sample()
        result.add("APIServer peak RSS", c.peak_rss.get("apiserver"), "bytes")
        return result


async def _bind_cluster_admin(url: str, user: str) -> None:
    conn = await Connection.open(url)
    try:
        reply = await conn.request("POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", orjson.dumps({
            "metadata": {"name": user}, "subjects": [{"kind": "User", "name": user,
                                                      "apiGroup": "rbac.authorization.k8s.io"}],
            "roleRef": {"kind": "ClusterRole", "name": "cluster-admin", "apiGroup": "rbac.authorization.k8s.io"}}))
        if reply.status != 201:
            raise RuntimeError(f"binding {user} to cluster-admin answered {reply.status}: {reply.body[:200]!r}")
    finally:
        conn.close()


def _identities(run: Run) -> ScenarioResult:
    return identities.run(size=run.size, progress=_say)


#: Smaller runs: the nodes, and each variant's (existing, to schedule) Pods.
_SCHEDULING_SIZES: dict[Size, tuple[int, dict[str, tuple[int, int]]]] = {
    Size.QUICK: (100, {"basic": (20, 300), "node-affinity": (100, 300), "pod-anti-affinity": (20, 60)}),
    Size.SMOKE: (10, {"basic": (5, 30), "node-affinity": (10, 30), "pod-anti-affinity": (2, 6)}),
}


def _scheduling(run: Run) -> ScenarioResult:
    workloads = scheduling.WORKLOADS
    if run.size in _SCHEDULING_SIZES:
        nodes, pods = _SCHEDULING_SIZES[run.size]
        workloads = tuple(replace(w, nodes=nodes, existing_pods=pods[w.variant][0], pods=pods[w.variant][1])
                          for w in workloads)
    return scheduling.run(workloads, ceiling=run.ceiling, progress=_say)


def _density(run: Run) -> ScenarioResult:
    with cluster(APISERVER_ARGS, service_accounts=True) as c:
        return density.run(c, _density_sizes(run), ceiling=run.ceiling, progress=_say)


def _density_sizes(run: Run, workload: str = "ReplicationController") -> density.Sizes:
    return pick(run.size, full=density.Sizes(workload=workload),
                quick=density.Sizes(nodes=100, controllers=10, replicas=20, workload=workload),
                smoke=density.Sizes(nodes=10, controllers=2, replicas=5, workload=workload))


def _scaleout(run: Run) -> ScenarioResult:
    """The density scenario on 2 APIServers and 2 kubelet_sim shards, as on several machines, all on this one."""
    with cluster(APISERVER_ARGS, apiservers=2, service_accounts=True) as c:
        return density.run(c, _density_sizes(run), ceiling=run.ceiling, progress=_say, kubelet_shards=2,
                           title="cluster density, 2 APIServers, 2 kubelet shards")


def _density_deployments(run: Run) -> ScenarioResult:
    with cluster(APISERVER_ARGS, service_accounts=True) as c:
        return density.run(c, _density_sizes(run, "Deployment"), ceiling=run.ceiling, progress=_say)


def _rollout(run: Run) -> ScenarioResult:
    sizes = pick(run.size, full=rollout.Sizes(), quick=rollout.Sizes(nodes=20, replicas=100),
                 smoke=rollout.Sizes(nodes=5, replicas=10))
    with cluster(APISERVER_ARGS, service_accounts=True) as c:
        return rollout.run(c, sizes, ceiling=run.ceiling, progress=_say)


def _kwok(run: Run) -> ScenarioResult:
    """KWOK's own benchmark: nodes to Ready, then pre-bound Pods to Running, no scheduler; heartbeats watched."""
    nodes, pods = pick(run.size, full=(5000, 10_000), quick=(100, 200), smoke=(10, 20))
    result = ScenarioResult("kubelet_sim (KWOK shape)")
    with cluster(APISERVER_ARGS) as c:
        # The node lifecycle controller alone: a late heartbeat would show as a node not Ready.
        start_component(c, "controller-manager", "controller_manager",
                        ["--controllers=node-lifecycle-controller"])
        start_kubelets(c, nodes)
        kubelet = c.components["kubelet_sim"]
        _say(f"kubelet_sim: {nodes} nodes, then {pods} Pods created already bound")
        figures = asyncio.run(kubelet_bench.density(c.config(), nodes=nodes, pods=pods, kubelet_pid=kubelet.pid,
                                                    progress=_say))
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


def _crd(run: Run) -> ScenarioResult:
    with cluster() as c:
        result = asyncio.run(crd.run(c.url, size=run.size, progress=_say,
                                     apiserver_cpu=lambda: c.cpu()["apiserver"]))
        c.sample()
        result.add("APIServer peak RSS", c.peak_rss.get("apiserver"), "bytes")
        return result


def _streaming(run: Run) -> ScenarioResult:
    with cluster() as c:
        return streaming.run_streaming(c, size=run.size, progress=_say)


def _metrics(run: Run) -> ScenarioResult:
    # What is measured is metrics-server's scrape: 5,000 nodes' heartbeats must not get the setup's writes a 429.
    with cluster((*APISERVER_ARGS, "--max-requests-inflight=0", "--max-mutating-requests-inflight=0")) as c:
        return streaming.run_metrics(c, size=run.size, progress=_say)


def _churn(run: Run) -> ScenarioResult:
    sizes = pick(run.size, full=churn.Sizes(), quick=churn.Sizes(nodes=100, rate=20, seconds=5, lifetime=2),
                 smoke=churn.Sizes(nodes=10, rate=10, seconds=2, lifetime=1))
    with cluster(APISERVER_ARGS, service_accounts=True) as c:
        return churn.run(c, sizes, ceiling=run.ceiling, progress=_say)


def _envelope(run: Run) -> ScenarioResult:
    """5,000 nodes and 150,000 Pods held 10 minutes (100 nodes, 3,000 Pods, 1 minute with --quick)."""
    sizes = pick(run.size, full=envelope.Sizes(),
                 quick=envelope.Sizes(nodes=100, pods=3000, hold=60.0, list_every=15.0),
                 smoke=envelope.Sizes(nodes=10, pods=60, hold=12.0, list_every=3.0))
    # etcd compacts as kube-apiserver has it do (every 5 minutes): no writes are counted here.
    with cluster() as c:
        return envelope.run(c, sizes, progress=_say)


def _replay(run: Run) -> ScenarioResult:
    """How many times real time a 30-minute, 1,000-node trace replays (3 minutes and 100 nodes with --quick,
    1 minute and 10 nodes with --smoke)."""
    nodes, seconds = pick(run.size, full=(1000, 1800.0), quick=(100, 180.0), smoke=(10, 60.0))
    with cluster(APISERVER_ARGS) as c:
        return replay_bench.run(c, nodes=nodes, seconds=seconds, progress=_say)


Scenario = Callable[[Run], ScenarioResult]
SCENARIOS: dict[str, Scenario] = {
    "etcd": _etcd,
    "api": _api,
    "scheduling": _scheduling,
    "density": _density,
    "density-deployments": _density_deployments,
    "rollout": _rollout,
    "scaleout": _scaleout,
    "kwok": _kwok,
    "churn": _churn,
    "envelope": _envelope,
    "crd": _crd,
    "streaming": _streaming,
    "metrics": _metrics,
    "replay": _replay,
    "identities": _identities,
}
#: The scenarios whose figures are read against the etcd ceiling: the etcd scenario runs before them.
_NEED_CEILING = frozenset({"scheduling", "density", "density-deployments", "rollout", "scaleout", "churn"})


def add_arguments(p: argparse.ArgumentParser) -> None:
    sizes = p.add_mutually_exclusive_group()
    sizes.add_argument("--quick", action="store_const", dest="size", const=Size.QUICK, default=Size.FULL,
                       help="small sizes, a few minutes per scenario: figures to compare before and after a change")
    sizes.add_argument("--smoke", action="store_const", dest="size", const=Size.SMOKE,
                       help="the smallest sizes that take every step of every scenario (make test runs these); "
                            "its figures mean nothing")
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
    run = Run(size=args.size)
    results: list[ScenarioResult] = []
    interrupted: int | None = None
    for name in names:
        _say(f"scenario {name}")
        started = time.perf_counter()
        try:
            result = SCENARIOS[name](run)
        except (KeyboardInterrupt, SystemExit) as e:
            # Ctrl-C or SIGTERM: the scenario's clusters are stopped by now; the finished scenarios'
            # figures are still printed and written, and the run ends with the signal's exit code.
            interrupted = 130 if isinstance(e, KeyboardInterrupt) else int(e.code or 1)
            results.append(ScenarioResult(name, error="interrupted"))
            break
        except Exception as e:  # noqa: BLE001 - a failed scenario is a row in the table, not a crash
            traceback.print_exc(file=sys.stderr)
            result = ScenarioResult(name, error=f"{type(e).__name__}: {e}")
        result.seconds = result.seconds or time.perf_counter() - started
        results.append(result)
    print()
    print(table(results))
    path = write_json(results, args.results_dir, args.size)
    print(f"\nresults written to {path}")
    for result in results:
        try:
            pictures = plot(result, args.results_dir, path.stem)  # beside the JSON, under its name
        except Exception as e:  # noqa: BLE001 - a picture that fails is said, the figures stand
            print(f"no picture of {result.scenario}: {type(e).__name__}: {e}")
            continue
        if pictures:
            print(f"picture of {result.scenario}: {', '.join(str(p) for p in pictures)}")
    return 0 if interrupted is None else interrupted
