"""Replay speed: how many times faster than real time a 30-minute, 1,000-node trace replays here.

The trace is :func:`kubesim.studies.synth.cluster_trace` (the client actions
a recording of such a half hour holds: 1,000 nodes joining, 50
ReplicationControllers scaled every 30 s, a Pod created every 2 s and deleted
a minute later), written to a file in the trace format and replayed by
``kubesim replay``'s :class:`~kubesim.studies.replay.Replayer` on the clock
but without waiting (``--speed`` so high that every action is due at once),
against a cluster of the APIServer, controller-manager, scheduler and a
kubelet_sim that adopts the trace's nodes. The figure is the trace's length
divided by the wall time from the first action to the cluster having settled
(every Pod bound, every controller at its replicas).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from kubesim import procs
from kubesim.bench.cluster import BenchCluster
from kubesim.bench.measure import add_process_figures, check_alive, start_component
from kubesim.bench.results import ScenarioResult
from kubesim.studies import api, traceformat
from kubesim.studies.actions import client_actions
from kubesim.studies.observe import Observer
from kubesim.studies.replay import Replayer, ReplayReport
from kubesim.studies.synth import cluster_trace
from machinery.client import ClientConfig


def run(c: BenchCluster, *, nodes: int, seconds: float, progress: Callable[[str], None]) -> ScenarioResult:
    result = ScenarioResult("replay")
    trace = cluster_trace(nodes=nodes, seconds=seconds)
    path = c.workdir / "bench-trace.jsonl.gz"
    traceformat.write(path, trace)
    trace = traceformat.read(path)
    actions = client_actions(trace.records)
    start_component(c, "controller-manager", "controller_manager")
    metrics = start_component(c, "scheduler", "scheduler")
    health = procs.free_port()
    c.start_component("kubelet_sim", "kubelet_sim", [*c.component_flags("kubelet"), "--master", str(c.url),
                                                     "--nodes=0", "--adopt-nodes", f"--health-port={health}"],
                      ready_url=f"http://{procs.LOOPBACK}:{health}/readyz")
    progress(f"replay: {len(actions)} client actions over {seconds:.0f}s of trace, {nodes} nodes, as fast as it goes")
    wall, settled, report = asyncio.run(_replay(c.config(), trace, metrics))
    check_alive(c)
    result.add("trace length", seconds, "s", f"{nodes} nodes, {len(actions)} client actions")
    result.add("replay wall time", wall, "s", "first action to the cluster settled")
    result.add("replay speed", seconds / wall if wall else None, "x", "times real time")
    result.add("actions failed", len(report.failed), "")
    if not settled:
        result.notes.append("the cluster had not settled when the replay gave up waiting")
    add_process_figures(result, c)
    return result


async def _replay(config: ClientConfig, trace: traceformat.Trace, metrics: str) -> tuple[float, bool, ReplayReport]:
    async with api.client(config, "bench-replay") as client:
        observer = Observer(client, scheduler_metrics=metrics)
        await observer.start()
        try:
            replayer = Replayer(client, speed=1e9, observer=observer, parallel=64)
            began = time.monotonic()
            report = await replayer.run([], client_actions(trace.records))
            settled = await observer.wait_settled(timeout=600)
            return time.monotonic() - began, settled, report
        finally:
            await observer.stop()
