"""Scenario 3, SchedulingBasic in scheduler_perf's shape, with its NodeAffinity and PodAntiAffinity variants.

Each workload runs :func:`scheduler.bench.scheduling_basic` in a cluster of its
own (etcd, the APIServer, the scheduler), as scheduler_perf starts each
workload afresh: nodes are created as objects, the existing Pods already
bound, then the measured Pods are created for the scheduler. Its figures:

- pods/s from the first create to the last binding seen (scheduler_perf's
  throughput), beside the writes per Pod read from etcd's history and the
  ceiling those writes allow (see :mod:`kubesim.bench.measure`);
- create-to-bound latency p50/p99, queueing included: the Pods are created
  faster than they are scheduled, as in scheduler_perf, so most of it is the
  wait in the scheduling queue;
- for the first workload, each process's CPU seconds over the measured Pods
  and peak RSS.

Concurrency: one event loop per workload, the benchmark's own.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from kubesim.bench.cluster import BenchCluster, cluster
from kubesim.bench.measure import (
    APISERVER_ARGS,
    CpuMark,
    Progress,
    Writes,
    add_cpu_per_pod,
    add_pod_rate,
    add_process_figures,
    count_writes,
    cpu_mark,
    etcd_revision,
    every_second,
    start_component,
)
from kubesim.bench.results import ScenarioResult
from scheduler.bench import Variant, scheduling_basic

_SETTLE_TIMEOUT: Final = 30.0


@dataclass(frozen=True)
class Workload:
    variant: Variant
    nodes: int
    existing_pods: int
    pods: int
    #: The figure to read the throughput against.
    goal: str


#: scheduler_perf's SchedulingBasic 5000Nodes_10000Pods, SchedulingNodeAffinity 5000Nodes_10000Pods and
#: SchedulingPodAntiAffinity 5000Nodes_2000Pods, with the floors Kubernetes' CI holds them to.
WORKLOADS: Final[tuple[Workload, ...]] = (
    Workload("basic", nodes=5000, existing_pods=1000, pods=10_000,
             goal="goal >= 680/s (scheduler_perf's floor; 270 in older configs)"),
    Workload("node-affinity", nodes=5000, existing_pods=5000, pods=10_000, goal="Kubernetes floor 220/s"),
    Workload("pod-anti-affinity", nodes=5000, existing_pods=1000, pods=2000, goal="Kubernetes floor 60/s"),
)


def run(workloads: Sequence[Workload] = WORKLOADS, *, ceiling: float | None,
        progress: Progress) -> ScenarioResult:
    """Run each workload in a fresh cluster; ``ceiling`` is etcd's guarded transactions per second."""
    result = ScenarioResult("SchedulingBasic")
    for i, workload in enumerate(workloads):
        label = workload.variant
        progress(f"SchedulingBasic {label}: {workload.nodes} nodes, {workload.existing_pods} existing Pods, "
                 f"{workload.pods} Pods to schedule")
        with cluster(APISERVER_ARGS) as c:
            start_component(c, "scheduler", "scheduler")
            phase = _Phase(c, label)
            figures, writes = asyncio.run(_measure(c, workload, phase, progress))
            bound = int(figures["bound"])
            add_pod_rate(result, label, figures["pods_per_second"], writes, bound, ceiling, workload.goal)
            result.add(f"{label} latency p50", figures["latency_p50_seconds"], "s", "create to bound")
            result.add(f"{label} latency p99", figures["latency_p99_seconds"], "s", "create to bound")
            if bound < workload.pods:
                result.notes.append(f"{label}: only {bound} of {workload.pods} Pods were bound")
            if i == 0:
                add_process_figures(result, c, cpu_since=phase.cpu.processes if phase.cpu else None,
                                    label=f"{label} ")
                if phase.cpu is not None:
                    add_cpu_per_pod(result, phase.cpu, cpu_mark(c), bound, label=f"{label} (to bound) ")
    return result


class _Phase:
    """The progress :func:`scheduling_basic` reports, and what the cluster stood at when measuring began."""

    def __init__(self, c: BenchCluster, variant: str) -> None:
        self._c = c
        self._variant = variant
        self._fields: dict[str, Any] = {}
        self.revision: int | None = None
        self.cpu: CpuMark | None = None

    def __call__(self, fields: dict[str, Any]) -> None:
        if fields.get("phase") != self._fields.get("phase"):
            self._fields.clear()
        self._fields.update(fields)
        if fields.get("phase") == "measure" and "pods" in fields:
            # Read right before the first measured create: every write after it is the measured Pods' cost.
            self.revision = etcd_revision(self._c.etcd_url)
            self.cpu = cpu_mark(self._c)

    def describe(self) -> str:
        shown = ("phase", "created", "total", "bound")
        return f"{self._variant}: " + ", ".join(f"{k} {self._fields[k]}" for k in shown if k in self._fields)


async def _measure(c: BenchCluster, workload: Workload, phase: _Phase,
                   progress: Progress) -> tuple[dict[str, Any], Writes]:
    async with every_second(progress, phase.describe):
        figures = await scheduling_basic(c.url, nodes=workload.nodes, existing_pods=workload.existing_pods,
                                         pods=workload.pods, variant=workload.variant, progress=phase)
    if phase.revision is None:
        raise RuntimeError("scheduling_basic never reported the start of its measured phase")
    upto = await _settled_revision(c.etcd_url)
    return figures, await count_writes(c.etcd_url, phase.revision, upto)


async def _settled_revision(etcd_url: str) -> int:
    """etcd's revision once a second has passed without a write: the scheduler's Events trail its bindings."""
    deadline = time.monotonic() + _SETTLE_TIMEOUT
    revision = etcd_revision(etcd_url)
    while time.monotonic() < deadline:
        await asyncio.sleep(1.0)
        now = etcd_revision(etcd_url)
        if now == revision:
            break
        revision = now
    return revision
