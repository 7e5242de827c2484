"""Scenario 5, churn: a steady stream of Pods created and deleted, and how the cluster holds up under it.

In one cluster (etcd, the APIServer, the controller-manager, the scheduler and
one kubelet_sim with ``nodes`` nodes, all Ready first), the benchmark creates
``rate`` Pods per second for ``seconds``, open loop (on a clock, whatever the
answers' latency, as real clients keep coming), and deletes each one
``lifetime`` seconds after its creation, or as soon as it runs if it runs
later than that, so that deletions keep pace with creations. It measures:

- startup latency: from the start of each create to its Pod seen Running
  through a watch (p50, p99);
- mutating API latency: each create's and delete's round trip (p50, p99),
  the load generator's own queueing left out; a 429 (the APIServer's
  in-flight limit) is tried again a second later until it goes through, and
  the round trip counts from the first try;
- the writes one Pod cost from creation to deletion, from etcd's history,
  and the share of etcd's ceiling the churn used.

Concurrency: one event loop. The creator and the deleter are tasks; each
request is a task of its own on a pooled keep-alive connection.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from kubesim.bench.cluster import BenchCluster
from kubesim.bench.measure import (
    PodTimes,
    Pool,
    Progress,
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

NAMESPACE: Final = "churn"
_TIMEOUT: Final = 600.0
#: A Pod that has not run this long after its creation is deleted anyway (and counted).
_GIVE_UP: Final = 30.0
_SETTLE: Final = 2.0


@dataclass(frozen=True)
class Sizes:
    nodes: int = 1000
    rate: float = 100.0
    seconds: float = 60.0
    lifetime: float = 5.0

    @property
    def pods(self) -> int:
        return round(self.rate * self.seconds)


def run(c: BenchCluster, sizes: Sizes = Sizes(), *, ceiling: float | None,
        progress: Progress) -> ScenarioResult:
    """Start the components in ``c``, wait for the nodes, churn; ``ceiling`` is etcd's guarded txn/s."""
    if sizes.nodes < 1 or sizes.pods < 1 or sizes.rate <= 0 or sizes.lifetime < 0:
        raise ValueError("churn needs nodes, a positive rate and duration, and a non-negative lifetime")
    metrics = [start_component(c, "controller-manager", "controller_manager"),
               start_component(c, "scheduler", "scheduler")]
    result = ScenarioResult("churn")
    asyncio.run(_churn(c, metrics, sizes, result, ceiling, progress))
    add_process_figures(result, c)
    return result


async def _churn(c: BenchCluster, metrics: list[str], sizes: Sizes, result: ScenarioResult,
                 ceiling: float | None, progress: Progress) -> None:
    alive = functools.partial(check_alive, c)
    # Open loop: an overloaded APIServer answers 429 to some requests again and again; each is tried
    # until it goes through (within the scenario's timeout), its wait counted in its latency.
    pool = Pool(c.url, tries_on_429=None)
    try:
        await pool.call("POST", "/api/v1/namespaces", {"metadata": {"name": NAMESPACE}})
        progress(f"churn: waiting for {sizes.nodes} nodes")
        metrics.extend((await start_nodes(c, pool, sizes.nodes, progress=progress, label="churn",
                                          timeout=_TIMEOUT)).metrics)

        pods = PodTimes()
        rv = await list_revision(pool, f"/api/v1/namespaces/{NAMESPACE}/pods")
        watch = asyncio.create_task(pods.follow(c.url, NAMESPACE, rv), name="bench-pods")
        load = _Load(pool, pods, sizes)
        try:
            progress(f"churn: {sizes.rate:g} Pods/s created and deleted for {sizes.seconds:g}s on "
                     f"{sizes.nodes} nodes")
            first = etcd_revision(c.etcd_url)
            cpu_start = cpu_mark(c)
            dropped = events_dropped(metrics)
            async with every_second(progress, lambda: f"churn: {pods.counts()}"):
                async with asyncio.timeout(_TIMEOUT):
                    await load.run(alive)
            await asyncio.sleep(_SETTLE)
            writes = await count_writes(c.etcd_url, first, etcd_revision(c.etcd_url), NAMESPACE)
            dropped = events_dropped(metrics) - dropped
            pending = events_pending(metrics)
            add_cpu_per_pod(result, cpu_start, cpu_mark(c), len(load.sent))
        finally:
            watch.cancel()
            await asyncio.gather(watch, return_exceptions=True)
    finally:
        pool.close()
    throttled = pool.throttled

    startup = [pods.running[name] - sent for name, sent in load.sent.items() if name in pods.running]
    result.samples["startup latency (create sent to Running)"] = startup
    if load.sent:
        start = min(load.sent.values())
        result.add_series("created", dict(load.sent), start)
        result.add_series("Running", pods.running, start)
        result.add_series("deleted", pods.deleted, start)
    mutating = load.creates + load.deletes
    result.add("Pods created", len(load.sent), "", f"{sizes.rate:g}/s for {sizes.seconds:g}s")
    result.add("startup latency p50", percentile(startup, 50), "s", "create to Running")
    result.add("startup latency p99", percentile(startup, 99), "s", "goal <= 1 s; Kubernetes SLO 5 s")
    result.add("mutating API p50", percentile(mutating, 50), "s", "creates and deletes")
    result.add("mutating API p99", percentile(mutating, 99), "s", "goal <= 50 ms; Kubernetes SLO 1 s")
    result.add("create p99", percentile(load.creates, 99), "s")
    result.add("delete p99", percentile(load.deletes, 99), "s")
    add_pod_rate(result, "create+delete", sizes.rate, writes, len(load.sent), ceiling,
                 "the load: create to delete, per second")
    result.add("Events dropped", dropped, "", "recorders' queues full: fewer writes per Pod")
    result.add("Events still pending", pending, "", "recorded, not yet written at the end: not in the writes per Pod")
    result.add("429s answered to the load", throttled, "", "each tried again 1 s later until it went through; "
                                                          "counted in the mutating latency")
    if load.gave_up:
        result.notes.append(f"churn: {load.gave_up} Pods were not Running {_GIVE_UP:g}s after their creation")


class _Load:
    """The open-loop creator and the deleter that follows it."""

    def __init__(self, pool: Pool, pods: PodTimes, sizes: Sizes) -> None:
        self._pool = pool
        self._pods = pods
        self._sizes = sizes
        #: When each Pod's create started, in creation order.
        self.sent: dict[str, float] = {}
        self.creates: list[float] = []
        self.deletes: list[float] = []
        self.gave_up = 0
        self._to_delete: deque[str] = deque()
        self._created_all = False
        self._requests: list[asyncio.Task[None]] = []

    async def run(self, alive: Callable[[], None]) -> None:
        """Create and delete every Pod, then wait until the watch has seen them all gone."""
        workers = [asyncio.create_task(self._create(), name="bench-churn-create"),
                   asyncio.create_task(self._delete(), name="bench-churn-delete")]
        try:
            await asyncio.gather(*workers)
            # Raises the first request that failed.
            await asyncio.gather(*self._requests)
            await self._pods.until(lambda: len(self._pods.deleted) >= len(self.sent), timeout=_TIMEOUT,
                                  alive=alive)
        finally:
            for task in (*workers, *self._requests):
                task.cancel()
            await asyncio.gather(*workers, *self._requests, return_exceptions=True)

    def _spawn(self, into: list[float], method: str, path: str, body: Any = None) -> None:
        async def timed() -> None:
            _, seconds = await self._pool.call(method, path, body)
            into.append(seconds)

        self._requests.append(asyncio.create_task(timed()))

    async def _create(self) -> None:
        started = time.perf_counter()
        path = f"/api/v1/namespaces/{NAMESPACE}/pods"
        for i in range(self._sizes.pods):
            await asyncio.sleep(max(0.0, started + i / self._sizes.rate - time.perf_counter()))
            name = f"churn-{i}"
            self.sent[name] = time.perf_counter()
            self._to_delete.append(name)
            self._spawn(self.creates, "POST", path, _pod(name))
        self._created_all = True

    async def _delete(self) -> None:
        # Polls the head of the line every 10 ms while it waits for a Pod to run: the deleter needs no
        # finer clock than that, and the watch's events need no second consumer.
        while self._to_delete or not self._created_all:
            if not self._to_delete:
                await asyncio.sleep(0.01)
                continue
            name = self._to_delete[0]
            age = time.perf_counter() - self.sent[name]
            if age < self._sizes.lifetime:
                await asyncio.sleep(self._sizes.lifetime - age)
                continue
            if name not in self._pods.running:
                if age < _GIVE_UP:
                    await asyncio.sleep(0.01)
                    continue
                self.gave_up += 1
            self._to_delete.popleft()
            self._spawn(self.deletes, "DELETE", f"/api/v1/namespaces/{NAMESPACE}/pods/{name}")


def _pod(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": "churn"}},
            "spec": {"containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.10",
                                     "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]}}
