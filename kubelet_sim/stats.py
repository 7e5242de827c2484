"""The kubelet's resource statistics: ``/metrics/resource`` and ``/stats/summary`` for each simulated node.

metrics-server reads ``/metrics/resource`` (Prometheus text: cumulative cpu
core-seconds and working-set bytes per container and node, with the time of
each sample in milliseconds); dashboards and ``kubectl describe`` tooling read
``/stats/summary`` (statsapi's ``Summary``). Both come from one
:class:`NodeSample` that :class:`StatsProvider` takes of a node: its Pods'
running containers as the runtime reports them
(:meth:`~kubelet_sim.runtimes.ContainerRuntime.usage`), plus the node's own
usage besides Pods (the profile's ``usage.systemCPU`` and ``systemMemory``).

The node's cpu counter is integrated from its rate at each sample, so it
never goes back when a Pod goes away. Counters are integrated on the
kubelet's monotonic clock, and the times a sample reports (its timestamp, a
container's start) are read from that clock too, anchored to the wall clock
once: a reader's rate is a counter difference over a timestamp difference,
which a step of the wall clock between two samples would otherwise distort
(CI once saw 590m for a container using 400m).

Concurrency: on the event loop; sampling a node reads its Pods without
awaiting, so a sample is consistent.
"""

from __future__ import annotations

import datetime as dt
import math
import time
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Final

from kubelet_sim.node import SimNode
from kubelet_sim.pods import PodManager, SimPod
from kubelet_sim.runtime import State
from kubelet_sim.runtimes import ContainerRuntime
from kubelet_sim.usage import UsageProfile
from machinery.api.meta import format_time
from machinery.client.clock import Clock, RealClock

_METRICS: Final = (
    ("container_cpu_usage_seconds_total", "counter", "Cumulative cpu time consumed by the container in core-seconds"),
    ("container_memory_working_set_bytes", "gauge", "Current working set of the container in bytes"),
    ("container_start_time_seconds", "gauge", "Start time of the container since unix epoch in seconds"),
    ("node_cpu_usage_seconds_total", "counter", "Cumulative cpu time consumed by the node in core-seconds"),
    ("node_memory_working_set_bytes", "gauge", "Current working set of the node in bytes"),
    ("pod_cpu_usage_seconds_total", "counter", "Cumulative cpu time consumed by the pod in core-seconds"),
    ("pod_memory_working_set_bytes", "gauge", "Current working set of the pod in bytes"),
    ("resource_scrape_error", "gauge", "1 if there was an error while getting container metrics, 0 otherwise"),
)


@dataclass(frozen=True, slots=True)
class ContainerSample:
    name: str
    start_time: float
    core_seconds: float
    nano_cores: int
    working_set: int


@dataclass(frozen=True, slots=True)
class PodSample:
    namespace: str
    name: str
    uid: str
    start_time: float
    containers: tuple[ContainerSample, ...]

    @property
    def core_seconds(self) -> float:
        return sum(c.core_seconds for c in self.containers)

    @property
    def nano_cores(self) -> int:
        return sum(c.nano_cores for c in self.containers)

    @property
    def working_set(self) -> int:
        return sum(c.working_set for c in self.containers)


@dataclass(frozen=True, slots=True)
class NodeSample:
    name: str
    timestamp: float
    start_time: float
    core_seconds: float
    nano_cores: int
    working_set: int
    memory_capacity: int
    pods: tuple[PodSample, ...]

    @property
    def memory_available(self) -> int:
        return max(self.memory_capacity - self.working_set, 0)


@dataclass(slots=True)
class _NodeCounter:
    last: float
    core_seconds: float = 0.0


@dataclass
class StatsProvider:
    """Samples the nodes of this process; ``usage`` of the node profile gives what the system uses."""

    pods: PodManager
    runtime: ContainerRuntime
    profile: UsageProfile
    clock: Clock = field(default_factory=RealClock)
    started: float = field(default_factory=time.time)
    _counters: dict[str, _NodeCounter] = field(default_factory=dict)
    #: (wall time, clock time) at this provider's start: the times a sample reports are read from the
    #: clock the counters are integrated on, so that a reader's rates (counter difference over
    #: timestamp difference) stay right when the wall clock is stepped.
    _anchor: tuple[float, float] = (0.0, 0.0)

    def __post_init__(self) -> None:
        self._anchor = (time.time(), self.clock.now())

    def wall(self, clock_time: float) -> float:
        """The wall time of a moment on the provider's clock, as its samples report it."""
        return self._anchor[0] + (clock_time - self._anchor[1])

    def sample(self, node: SimNode) -> NodeSample:
        now = self.clock.now()
        wall = self.wall(now)
        pods = tuple(s for s in (self._pod(p, now) for p in self.pods.pods_on(node)) if s is not None)
        nano = int(self.profile.system_cpu * 1e6) + sum(p.nano_cores for p in pods)
        counter = self._counters.get(node.name)
        if counter is None:
            # The node has been up since the process started: its counter starts from the system's share.
            counter = self._counters[node.name] = _NodeCounter(now, self.profile.system_cpu / 1000.0 *
                                                              max(wall - self.started, 0.0))
        counter.core_seconds += nano / 1e9 * max(now - counter.last, 0.0)
        counter.last = now
        memory = int(self.profile.system_memory) + sum(p.working_set for p in pods)
        capacity = node.capacity_memory
        return NodeSample(node.name, wall, self.started, counter.core_seconds, nano, memory, capacity, pods)

    def _pod(self, pod: SimPod, now: float) -> PodSample | None:
        containers = []
        for c in pod.all_containers:
            if c.state is not State.RUNNING:
                continue
            usage = self.runtime.usage(pod, c, now)
            if usage is None:
                continue
            core_seconds, nano_cores, working_set = usage
            # The start on the same clock as the counter (which starts from it) and the timestamps.
            started = self.wall(c.started_mono) if c.started_mono else c.started_wall or _wall(c.started_at)
            containers.append(ContainerSample(c.name, started, core_seconds, nano_cores, working_set))
        if not containers:
            return None
        return PodSample(pod.namespace, pod.name, pod.uid, _wall(pod.start_time), tuple(containers))


def _wall(stamp: str) -> float:
    try:
        return dt.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.UTC).timestamp()
    except ValueError:
        return time.time()


def _number(value: float) -> str:
    """A sample value as Go's Prometheus text writer prints it (``strconv`` 'g', shortest: ``1.4024704e+07``)."""
    if value == 0:
        return "0"
    if not math.isfinite(value):
        return "+Inf" if value > 0 else "-Inf" if value < 0 else "NaN"
    sign, digits, exponent = Decimal(repr(float(value))).normalize().as_tuple()
    assert isinstance(exponent, int)
    text = "".join(map(str, digits))
    point = len(digits) + exponent
    power = point - 1
    prefix = "-" if sign else ""
    if power < -4 or power >= 6:
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        return f"{prefix}{mantissa}e{'+' if power >= 0 else '-'}{abs(power):02d}"
    if point <= 0:
        return f"{prefix}0.{'0' * -point}{text}"
    if point >= len(text):
        return prefix + text + "0" * (point - len(text))
    return f"{prefix}{text[:point]}.{text[point:]}"


def resource_metrics(sample: NodeSample) -> str:
    """The kubelet's ``/metrics/resource`` for one node."""
    stamp = int(sample.timestamp * 1000)
    lines: dict[str, list[str]] = {name: [] for name, _, _ in _METRICS}
    for pod in sample.pods:
        pod_labels = f'namespace="{pod.namespace}",pod="{pod.name}"'
        for c in pod.containers:
            labels = f'{{container="{c.name}",{pod_labels}}}'
            lines["container_cpu_usage_seconds_total"].append(f"{labels} {_number(c.core_seconds)} {stamp}")
            lines["container_memory_working_set_bytes"].append(f"{labels} {_number(c.working_set)} {stamp}")
            lines["container_start_time_seconds"].append(f"{labels} {_number(c.start_time)} {stamp}")
        lines["pod_cpu_usage_seconds_total"].append(f"{{{pod_labels}}} {_number(pod.core_seconds)} {stamp}")
        lines["pod_memory_working_set_bytes"].append(f"{{{pod_labels}}} {_number(pod.working_set)} {stamp}")
    lines["node_cpu_usage_seconds_total"].append(f" {_number(sample.core_seconds)} {stamp}")
    lines["node_memory_working_set_bytes"].append(f" {_number(sample.working_set)} {stamp}")
    lines["resource_scrape_error"].append(" 0")
    out: list[str] = []
    for name, kind, help_text in _METRICS:
        out.append(f"# HELP {name} [STABLE] {help_text}")
        out.append(f"# TYPE {name} {kind}")
        out.extend(f"{name}{line}" for line in lines[name])
    return "\n".join(out) + "\n"


def _cpu(time_text: str, nano_cores: int, core_seconds: float) -> dict[str, Any]:
    return {"time": time_text, "usageNanoCores": nano_cores, "usageCoreNanoSeconds": int(core_seconds * 1e9)}


def _memory(time_text: str, working_set: int, available: int | None = None) -> dict[str, Any]:
    memory: dict[str, Any] = {"time": time_text, "usageBytes": working_set, "workingSetBytes": working_set,
                              "rssBytes": working_set, "pageFaults": 0, "majorPageFaults": 0}
    if available is not None:
        memory["availableBytes"] = available
    return memory


def summary(sample: NodeSample) -> dict[str, Any]:
    """statsapi's ``Summary`` of one node, as ``/stats/summary`` serves it."""
    now = format_time(dt.datetime.fromtimestamp(sample.timestamp, dt.UTC))
    start = format_time(dt.datetime.fromtimestamp(sample.start_time, dt.UTC))
    pods = []
    for pod in sample.pods:
        containers = [{"name": c.name,
                       "startTime": format_time(dt.datetime.fromtimestamp(c.start_time, dt.UTC)),
                       "cpu": _cpu(now, c.nano_cores, c.core_seconds), "memory": _memory(now, c.working_set)}
                      for c in pod.containers]
        pods.append({"podRef": {"name": pod.name, "namespace": pod.namespace, "uid": pod.uid},
                     "startTime": format_time(dt.datetime.fromtimestamp(pod.start_time, dt.UTC)),
                     "containers": containers, "cpu": _cpu(now, pod.nano_cores, pod.core_seconds),
                     "memory": _memory(now, pod.working_set)})
    node = {"nodeName": sample.name, "startTime": start,
            "cpu": _cpu(now, sample.nano_cores, sample.core_seconds),
            "memory": _memory(now, sample.working_set, sample.memory_available),
            "systemContainers": [{"name": "kubelet", "startTime": start,
                                  "cpu": _cpu(now, 0, 0.0), "memory": _memory(now, 0)}]}
    return {"node": node, "pods": pods}
