"""Scenario: Kubernetes' scalability envelope on one machine, 5,000 nodes and 150,000 Pods held.

Kubernetes states what one cluster holds: 5,000 nodes, 150,000 Pods, with its
SLOs met (heartbeats on time, watch delivery, lists). This scenario fills one
kubesim cluster (etcd, the APIServer, the controller-manager with every
controller, the scheduler and one kubelet_sim) to that size and holds it:

1. **nodes**: kubelet_sim starts with ``nodes`` nodes; until a watch has seen
   every one Ready;
2. **fill**: ``pods`` Pods are created already bound (``spec.nodeName`` round
   robin over the nodes, as KWOK's benchmark creates them: filling through the
   scheduler would take most of an hour and measure the density scenario
   again), ``concurrency`` at a time; until the bench's watch has seen every
   one Running. The scheduler and the controller-manager run all along, so
   their informers hold every Pod as they would in a real cluster;
3. **hold**: for ``hold`` seconds, nothing changes but what a quiet cluster
   does (Lease renewals every 10 s per node, node status, the controllers'
   resyncs), and the bench measures:

   - heartbeats, through watches of the node Leases and Nodes: how late each
     renewal came, and whether any node was ever reported not Ready (the
     controller-manager's node lifecycle controller judges, as in Kubernetes);
   - watch delivery: ``probes`` merge patches a second, each stamping one Pod
     with an annotation, timed from the moment the patch is sent to the
     moment a cluster-wide watch of every Pod (the scheduler's kind of watch)
     delivers it;
   - lists of every Pod in one answer (no ``limit``), every ``list_every``
     seconds, timed to their last byte: alternately consistent (the
     default, which must first prove the watch cache current) and
     ``resourceVersion=0`` (whatever the cache holds);
   - every process's peak RSS and CPU (in cores) while holding.

Concurrency: one event loop; the watches and the probe writer are its tasks.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import re
import time
from dataclasses import dataclass
from typing import Any, Final

from kubelet_sim.bench import Heartbeats
from kubesim.bench.cluster import BenchCluster
from kubesim.bench.measure import (
    PodTimes,
    Pool,
    Progress,
    add_process_figures,
    check_alive,
    every_second,
    list_revision,
    start_component,
    start_nodes,
)
from kubesim.bench.rawhttp import Connection, open_watch, watch_lines
from kubesim.bench.results import ScenarioResult, percentile
from machinery.client import Client

NAMESPACE: Final = "envelope"
_FILL_TIMEOUT: Final = 7200.0
#: Kubelets renew their node Lease every 10 s.
_RENEW_INTERVAL: Final = 10.0
_PROBE: Final = "bench.kubesim.io/probe"
_PROBE_SEEN: Final = re.compile(rb'"' + re.escape(_PROBE.encode()) + rb'":"(\d+)"')
_MERGE_PATCH: Final = "application/merge-patch+json"


@dataclass(frozen=True)
class Sizes:
    nodes: int = 5000
    pods: int = 150_000
    #: Seconds the full cluster is held and watched.
    hold: float = 600.0
    #: Creates in flight while filling.
    concurrency: int = 64
    #: Watch-delivery probes (annotation patches) per second while holding.
    probes: float = 10.0
    #: Seconds between two lists of every Pod while holding.
    list_every: float = 60.0


def run(c: BenchCluster, sizes: Sizes = Sizes(), *, progress: Progress) -> ScenarioResult:
    """Start the components in ``c``, fill it and hold it; the figures."""
    if sizes.nodes < 1 or sizes.pods < 1 or sizes.hold <= 0:
        raise ValueError("the envelope needs at least one node, one Pod and a hold")
    start_component(c, "controller-manager", "controller_manager")
    start_component(c, "scheduler", "scheduler")
    result = ScenarioResult("scalability envelope")
    asyncio.run(_phases(c, sizes, result, progress))
    add_process_figures(result, c, goals={"apiserver": "goal <= 4 GiB (150,000 Pods)"})
    return result


async def _phases(c: BenchCluster, sizes: Sizes, result: ScenarioResult, progress: Progress) -> None:
    # Filling keeps the APIServer at its in-flight limit: a create refused with 429 is tried until it
    # goes through (the bench measures the cluster once full, not how often it refused).
    pool = Pool(c.url, tries_on_429=None)
    try:
        await pool.call("POST", "/api/v1/namespaces", {"metadata": {"name": NAMESPACE}})
        progress(f"envelope: {sizes.nodes} nodes")
        ready = await start_nodes(c, pool, sizes.nodes, progress=progress, label="envelope", timeout=_FILL_TIMEOUT)
        result.add("nodes Ready", ready.seconds, "s")
        names = ready.names

        heartbeats = Heartbeats(_RENEW_INTERVAL)
        async with Client(c.config(), user_agent="kubesim-bench") as client:
            watchers = [asyncio.create_task(heartbeats.watch_leases(client), name="bench-leases"),
                        asyncio.create_task(heartbeats.watch_nodes(client, names), name="bench-node-health")]
            try:
                await _fill(c, pool, names, sizes, result, progress)
                await _hold(c, pool, sizes, result, heartbeats, progress)
            finally:
                for task in watchers:
                    task.cancel()
                await asyncio.gather(*watchers, return_exceptions=True)
    finally:
        pool.close()


async def _fill(c: BenchCluster, pool: Pool, nodes: list[str], sizes: Sizes, result: ScenarioResult,
                progress: Progress) -> None:
    pods = PodTimes()
    watch = asyncio.create_task(
        pods.follow(c.url, NAMESPACE, await list_revision(pool, f"/api/v1/namespaces/{NAMESPACE}/pods")),
        name="bench-pods")
    try:
        progress(f"envelope: {sizes.pods} Pods, bound already, {sizes.concurrency} creates in flight")
        numbers = iter(range(sizes.pods))
        started = time.perf_counter()

        async def creator() -> None:
            for i in numbers:
                await pool.call("POST", f"/api/v1/namespaces/{NAMESPACE}/pods", _pod(i, nodes[i % len(nodes)]))

        async with every_second(progress, lambda: f"envelope: {pods.counts()}"):
            await asyncio.gather(*(creator() for _ in range(sizes.concurrency)))
            created = time.perf_counter() - started
            await pods.until(lambda: len(pods.running) >= sizes.pods, timeout=_FILL_TIMEOUT,
                             alive=functools.partial(check_alive, c), stall=60.0)
        running = time.perf_counter() - started
    finally:
        watch.cancel()
        await asyncio.gather(watch, return_exceptions=True)
    if pods.seen:
        first = min(pods.seen.values())
        result.add_series("created", pods.seen, first)
        result.add_series("Running", pods.running, first)
    result.add("Pods created", sizes.pods / created, "/s", f"{sizes.pods} Pods created already bound")
    result.add("all Pods Running", running, "s", "from the first create")
    result.add("Pod changes the bench's watch never got (fill)", pods.missed, "", "should be 0")


def _pod(i: int, node: str) -> dict[str, Any]:
    return {"metadata": {"name": f"envelope-{i}", "labels": {"app": f"envelope-{i % 100}"}},
            "spec": {"nodeName": node,
                     "containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.10",
                                     "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]}}


async def _hold(c: BenchCluster, pool: Pool, sizes: Sizes, result: ScenarioResult, heartbeats: Heartbeats,
                progress: Progress) -> None:
    late_before = len(heartbeats.lateness)
    not_ready_before = set(heartbeats.not_ready)
    cpu_before = c.cpu()
    probes = _Probes()
    rv = await list_revision(pool, "/api/v1/pods")
    stream = await open_watch(c.url, f"/api/v1/pods?watch=true&resourceVersion={rv}&timeoutSeconds=3600")
    reader = asyncio.create_task(probes.read(stream), name="bench-probe-watch")
    writer = asyncio.create_task(probes.write(pool, sizes), name="bench-probes")
    lists: dict[str, list[float]] = {"consistent": [], "resourceVersion=0": []}
    counted: list[int] = []
    kinds = itertools.cycle(lists)
    progress(f"envelope: holding {sizes.pods} Pods on {sizes.nodes} nodes for {sizes.hold:.0f} s")
    started = time.perf_counter()
    try:
        async with every_second(progress, lambda: f"envelope: holding; {probes.describe()}, "
                                                  f"{len(heartbeats.not_ready - not_ready_before)} nodes not Ready"):
            next_list = started + min(sizes.list_every, sizes.hold / 2)
            while (now := time.perf_counter()) < started + sizes.hold:
                check_alive(c)
                if now >= next_list:
                    kind = next(kinds)
                    seconds, items = await _list_all(c, kind)
                    lists[kind].append(seconds)
                    counted.append(items)
                    progress(f"envelope: a {kind} list of every Pod: {items} in {seconds:.2f} s")
                    next_list = time.perf_counter() + sizes.list_every
                    continue
                await asyncio.sleep(min(1.0, next_list - now, started + sizes.hold - now))
            if reader.done():
                reader.result()
    finally:
        for task in (writer, reader):
            task.cancel()
        await asyncio.gather(writer, reader, return_exceptions=True)
    held = time.perf_counter() - started
    cpu_after = c.cpu()

    result.add("held", held, "s", f"{sizes.pods} Pods on {sizes.nodes} nodes (Kubernetes' envelope: "
                                  "150,000 on 5,000, 600 s)")
    late = heartbeats.lateness[late_before:]
    result.add("heartbeat renewals seen while holding", len(late), "")
    result.add("heartbeat lateness p99", percentile(late, 99), "s", "beyond the 10 s renew interval")
    result.add("heartbeat lateness max", max(late, default=None), "s", "a node is unreachable after 40 s")
    result.add("nodes ever not Ready while holding", len(heartbeats.not_ready - not_ready_before), "", "goal 0")
    result.add("watch probes sent", probes.sent_count, "", f"{sizes.probes:g} merge patches/s")
    result.add("watch probes delivered", len(probes.latencies), "", "goal: every one")
    result.samples["watch delivery (patch sent to event received)"] = probes.latencies
    result.add("watch delivery p50", percentile(probes.latencies, 50), "s", "a cluster-wide watch of every Pod")
    result.add("watch delivery p99", percentile(probes.latencies, 99), "s", "goal <= 1 s")
    for kind, times in lists.items():
        result.add(f"list of every Pod ({kind}), slowest", max(times, default=None), "s",
                   f"{len(times)} list{'' if len(times) == 1 else 's'}; goal <= 5 s "
                   "(SLO for cluster-scope lists: 30 s)")
    result.add("Pods in each list, fewest", min(counted, default=None), "", f"of {sizes.pods}")
    for name, seconds in sorted(cpu_after.items()):
        result.add(f"{name} CPU while holding", (seconds - cpu_before.get(name, 0.0)) / held, "cores")


async def _list_all(c: BenchCluster, kind: str) -> tuple[float, int]:
    """Seconds for a list of every Pod in one answer, to its last byte, and how many Pods it held."""
    conn = await Connection.open(c.url)
    try:
        query = "?resourceVersion=0" if kind == "resourceVersion=0" else ""
        started = time.perf_counter()
        reply = await conn.request("GET", f"/api/v1/pods{query}")
        seconds = time.perf_counter() - started
    finally:
        conn.close()
    if reply.status != 200:
        raise RuntimeError(f"a list of every Pod answered {reply.status}: {reply.body[:300]!r}")
    # Every Pod here is bound: one nodeName per item, counted without decoding hundreds of megabytes.
    return seconds, reply.body.count(b'"nodeName":')


class _Probes:
    """Annotation patches sent at a steady rate, and when a watch delivered each."""

    def __init__(self) -> None:
        self.sent: dict[int, float] = {}
        self.sent_count = 0
        self.latencies: list[float] = []

    async def write(self, pool: Pool, sizes: Sizes) -> None:
        interval = 1.0 / sizes.probes
        due = time.perf_counter()
        for n in itertools.count():
            body = {"metadata": {"annotations": {_PROBE: str(n)}}}
            self.sent[n] = time.perf_counter()
            self.sent_count += 1
            await pool.call("PATCH", f"/api/v1/namespaces/{NAMESPACE}/pods/envelope-{n % sizes.pods}", body,
                            content_type=_MERGE_PATCH)
            due += interval
            await asyncio.sleep(max(0.0, due - time.perf_counter()))

    async def read(self, stream: Connection) -> None:
        async for now, line in watch_lines(stream):
            m = _PROBE_SEEN.search(line)
            if m is None:
                continue
            sent = self.sent.pop(int(m.group(1)), None)
            if sent is not None:
                self.latencies.append(now - sent)
        raise RuntimeError("the APIServer ended the bench's watch of every Pod")

    def describe(self) -> str:
        recent = self.latencies[-50:]
        worst = max(recent, default=0.0)
        return f"probes {self.sent_count} sent, {len(self.latencies)} delivered (worst of the last 50 {worst:.3f} s)"
