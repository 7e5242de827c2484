"""Scenario 4, cluster density: KWOK's shape with the scheduler and the controller-manager in the loop.

In one cluster (etcd, the APIServer, the controller-manager, the scheduler and
one kubelet_sim), three phases, each timed and watched:

1. **nodes**: kubelet_sim starts with ``nodes`` nodes; the phase ends when a
   watch has seen every one Ready;
2. **Pods**: ``controllers`` ReplicationControllers (or Deployments, with
   ``workload="Deployment"``: the Deployment controller makes a ReplicaSet
   each, the ReplicaSet controller its Pods) of ``replicas`` each are
   created at once; the controller-manager creates the Pods, the scheduler
   binds them, the kubelets run them (containers start at once, as KWOK's
   do). The phase ends when the watch has seen every Pod Running. Startup
   latency is per Pod from its first appearance in the watch (its creation)
   to Running, as the Pod startup SLO measures it; both ends are seen by the
   same watch, so its own delay cancels out;
3. **deletion**: the controllers are deleted with ``propagationPolicy=Background``,
   as kubectl does; the garbage collector deletes the Pods, the kubelets stop
   them; the phase ends when every Pod is gone.

The writes of phases 2 and 3 are read from etcd's history (those in the
Pods' namespace count per Pod), and the Pod rates are set beside the ceiling those writes allow.

Concurrency: one event loop; the node and Pod watches are its tasks.
"""

from __future__ import annotations

import asyncio
import functools
import time
from dataclasses import dataclass
from typing import Any, Final

from kubesim.bench.cluster import BenchCluster
from kubesim.bench.measure import (
    RSS_GOALS,
    PodTimes,
    Pool,
    Progress,
    Writes,
    add_cpu_per_pod,
    add_pod_rate,
    add_process_figures,
    check_alive,
    count_writes,
    cpu_mark,
    etcd_revision,
    events_dropped,
    events_pending,
    every_second,
    list_revision,
    start_component,
    start_nodes,
)
from kubesim.bench.results import ScenarioResult, percentile

NAMESPACE: Final = "density"
_PHASE_GOAL: Final = "goal <= 60 s"
_PHASE_TIMEOUT: Final = 1800.0
#: Writes that trail a phase (Events, the controllers' status) have this long to land in it.
_SETTLE: Final = 2.0
#: Seconds without a Pod event, mid-phase, after which a list checks the bench's watch (a lost event).
_STALL: Final = 60.0
_DROPPED: Final = "recorders' queues full: fewer writes per Pod"
_PENDING: Final = "recorded, not yet written when the phase ended: their writes land later"


@dataclass(frozen=True)
class Sizes:
    nodes: int = 5000
    controllers: int = 10
    replicas: int = 1000
    #: ``ReplicationController`` or ``Deployment``.
    workload: str = "ReplicationController"

    @property
    def collection(self) -> str:
        if self.workload == "Deployment":
            return f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments"
        return f"/api/v1/namespaces/{NAMESPACE}/replicationcontrollers"

    @property
    def short(self) -> str:
        return "Deployments" if self.workload == "Deployment" else "RCs"

    @property
    def pods(self) -> int:
        return self.controllers * self.replicas


def run(c: BenchCluster, sizes: Sizes = Sizes(), *, ceiling: float | None,
        progress: Progress, kubelet_shards: int = 1, title: str | None = None) -> ScenarioResult:
    """Start the components in ``c`` and run the three phases; ``ceiling`` is etcd's guarded txn/s.

    ``kubelet_shards`` kubelet_sim processes host the nodes between them.
    """
    if sizes.nodes < 1 or sizes.pods < 1:
        raise ValueError("cluster density needs at least one node and one Pod")
    metrics = [start_component(c, "controller-manager", "controller_manager"),
               start_component(c, "scheduler", "scheduler")]
    if title is None:
        title = "cluster density" if sizes.workload == "ReplicationController" else "cluster density (Deployments)"
    result = ScenarioResult(title)
    asyncio.run(_phases(c, metrics, sizes, result, ceiling, progress, kubelet_shards))
    add_process_figures(result, c, goals=RSS_GOALS)
    return result


async def _phases(c: BenchCluster, metrics: list[str], sizes: Sizes, result: ScenarioResult,
                  ceiling: float | None, progress: Progress, kubelet_shards: int) -> None:
    alive = functools.partial(check_alive, c)
    pool = Pool(c.url)
    try:
        await pool.call("POST", "/api/v1/namespaces", {"metadata": {"name": NAMESPACE}})
        progress(f"cluster density: {sizes.nodes} nodes")
        ready = await start_nodes(c, pool, sizes.nodes, progress=progress, label="density",
                                  timeout=_PHASE_TIMEOUT, shards=kubelet_shards)
        result.add("nodes Ready", ready.seconds, "s", _PHASE_GOAL)
        metrics.extend(ready.metrics)

        pods = PodTimes()
        rv = await list_revision(pool, f"/api/v1/namespaces/{NAMESPACE}/pods")
        watch = asyncio.create_task(pods.follow(c.url, NAMESPACE, rv), name="bench-pods")
        try:
            progress(f"cluster density: {sizes.controllers} {sizes.workload}s of {sizes.replicas} replicas")
            first = etcd_revision(c.etcd_url)
            cpu_start = cpu_mark(c)
            # The nodes' own Events (registration, Ready) may have filled the recorders already.
            dropped_before = events_dropped(metrics)
            result.add("nodes' Events dropped", dropped_before, "", _DROPPED)
            started = time.perf_counter()
            for i in range(sizes.controllers):
                await pool.call("POST", sizes.collection, _controller(i, sizes.replicas, sizes.workload))
            async with every_second(progress, lambda: f"density: {pods.counts()}"):
                await pods.until(lambda: len(pods.running) >= sizes.pods, timeout=_PHASE_TIMEOUT, alive=alive,
                                 stall=_STALL)
            running = time.perf_counter() - started
            await asyncio.sleep(_SETTLE)
            middle = etcd_revision(c.etcd_url)
            started_writes = await count_writes(c.etcd_url, first, middle, NAMESPACE)
            dropped_starting = events_dropped(metrics) - dropped_before
            pending_starting = events_pending(metrics)

            progress(f"cluster density: deleting the {sizes.workload}s")
            started = time.perf_counter()
            for i in range(sizes.controllers):
                await pool.call("DELETE", f"{sizes.collection}/density-{i}?propagationPolicy=Background")
            async with every_second(progress, lambda: f"density: {pods.counts()}"):
                await pods.until(lambda: len(pods.deleted) >= sizes.pods, timeout=_PHASE_TIMEOUT, alive=alive,
                                 stall=_STALL)
            deleting = time.perf_counter() - started
            result.add("bench's Pod watch relists (410s)", pods.relists, "",
                       "times after a relist are the list's" if pods.relists else "")
            result.add("Pod changes the bench's watch never got", pods.missed, "",
                       f"found by a list after {_STALL:.0f} s without events; should be 0")
            await asyncio.sleep(_SETTLE)
            deleted_writes = await count_writes(c.etcd_url, middle, etcd_revision(c.etcd_url), NAMESPACE)
            dropped_deleting = events_dropped(metrics) - dropped_starting - dropped_before
            pending_deleting = events_pending(metrics)
            add_cpu_per_pod(result, cpu_start, cpu_mark(c), sizes.pods)
        finally:
            watch.cancel()
            await asyncio.gather(watch, return_exceptions=True)
    finally:
        pool.close()
    _figures(result, sizes, pods, ceiling, running=(running, started_writes, dropped_starting, pending_starting),
             deleting=(deleting, deleted_writes, dropped_deleting, pending_deleting))


def _controller(i: int, replicas: int, workload: str = "ReplicationController") -> dict[str, Any]:
    labels = {"app": f"density-{i}"}
    template = {"metadata": {"labels": labels},
                "spec": {"containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.10",
                                         "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]}}
    if workload == "Deployment":
        return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": f"density-{i}"},
                "spec": {"replicas": replicas, "selector": {"matchLabels": labels}, "template": template}}
    return {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": f"density-{i}"},
            "spec": {"replicas": replicas, "selector": labels, "template": template}}


#: A phase's seconds, its writes, the Events the recorders dropped during it and those still pending at its end.
_Phase = tuple[float, Writes, int, int]


def _figures(result: ScenarioResult, sizes: Sizes, pods: PodTimes, ceiling: float | None, *, running: _Phase,
             deleting: _Phase) -> None:
    seconds, writes, dropped, pending = running
    result.add("Pods Running", seconds, "s", f"{sizes.pods} Pods from {sizes.controllers} {sizes.short}; "
                                             f"{_PHASE_GOAL}")
    add_pod_rate(result, "start", sizes.pods / seconds, writes, sizes.pods, ceiling,
                 "goal >= 50% of the ceiling")
    result.add("start Events dropped", dropped, "", _DROPPED)
    result.add("start Events still pending", pending, "", _PENDING)
    startup = [pods.running[name] - seen for name, seen in pods.seen.items() if name in pods.running]
    result.samples["startup latency (creation to Running)"] = startup
    if pods.seen:
        start = min(pods.seen.values())
        for name, times in (("created", pods.seen), ("bound", pods.bound), ("Running", pods.running),
                            ("deleted", pods.deleted)):
            result.add_series(name, times, start)
    slo = "creation to Running; Kubernetes SLO p99 <= 5 s"
    result.add("startup latency p50", percentile(startup, 50), "s", slo)
    result.add("startup latency p99", percentile(startup, 99), "s", slo)
    background = writes.background
    per_second = background / (seconds + _SETTLE) if background is not None else None
    result.add("background writes while starting", per_second, "/s",
               "node Leases and status, node Events: not counted per Pod")
    seconds, writes, dropped, pending = deleting
    result.add("all Pods deleted", seconds, "s", f"{sizes.short} deleted, Pods by the garbage collector; "
                                                 f"{_PHASE_GOAL}")
    add_pod_rate(result, "delete", sizes.pods / seconds, writes, sizes.pods, ceiling)
    result.add("delete Events dropped", dropped, "", _DROPPED)
    result.add("delete Events still pending", pending, "", _PENDING)
