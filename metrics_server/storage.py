"""What metrics-server remembers: the last two samples of every node and container, and the rates between them.

metrics-server's ``storage`` keeps, per node and per container, the latest
sample and the one before; cpu usage is the rate of the cumulative counter
between them and the window their distance in time. A container seen once
has a rate from its start time, if it started after the previous scrape (so
that a new Pod has metrics after one scrape, as metrics-server allows). A
counter that went back (the container restarted) starts over.

Pure values; replaced wholesale by the scrape loop, read by the API.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Sample:
    """A cumulative cpu counter (core-seconds) and a working set (bytes) at a time (seconds since the epoch)."""

    timestamp: float
    cpu: float
    memory: int
    start_time: float = 0.0


@dataclass(frozen=True, slots=True)
class Usage:
    """What the API reports: nanocores, bytes, the time of the latest sample and the window."""

    timestamp: float
    window: float
    nano_cores: int
    memory: int


def rate(latest: Sample, previous: Sample | None) -> Usage | None:
    """cpu usage between two samples, or from the start of a container seen only once; None when unknown."""
    if previous is not None and latest.cpu >= previous.cpu and latest.timestamp > previous.timestamp \
            and latest.start_time <= previous.timestamp:
        window = latest.timestamp - previous.timestamp
        return Usage(latest.timestamp, window, int((latest.cpu - previous.cpu) / window * 1e9), latest.memory)
    if latest.start_time and latest.timestamp > latest.start_time and (
            previous is None or latest.start_time > previous.timestamp or latest.cpu < previous.cpu):
        window = latest.timestamp - latest.start_time
        return Usage(latest.timestamp, window, int(latest.cpu / window * 1e9), latest.memory)
    return None


#: (namespace, pod) -> container -> sample
PodSamples = dict[tuple[str, str], dict[str, Sample]]


@dataclass
class Storage:
    nodes: dict[str, tuple[Sample, Sample | None]] = field(default_factory=dict)
    pods: dict[tuple[str, str], dict[str, tuple[Sample, Sample | None]]] = field(default_factory=dict)
    #: The Pods each node's last scrape reported.
    _node_pods: dict[str, set[tuple[str, str]]] = field(default_factory=dict)

    def store(self, node: str, sample: Sample | None, pods: PodSamples) -> None:
        """One node's scrape: its own sample and its containers'; its Pods missing from it are dropped."""
        if sample is not None:
            previous = self.nodes.get(node)
            self.nodes[node] = (sample, previous[0] if previous is not None else None)
        for key in self._node_pods.get(node, set()) - pods.keys():
            self.pods.pop(key, None)
        self._node_pods[node] = set(pods)
        for key, containers in pods.items():
            before = self.pods.get(key, {})
            self.pods[key] = {name: (s, before[name][0] if name in before else None)
                              for name, s in containers.items()}

    def forget(self, node: str) -> None:
        """The node is gone (or unreachable): its samples and its Pods' go too."""
        self.nodes.pop(node, None)
        for key in self._node_pods.pop(node, set()):
            self.pods.pop(key, None)

    def node_usage(self, name: str) -> Usage | None:
        entry = self.nodes.get(name)
        return rate(*entry) if entry is not None else None

    def pod_usage(self, namespace: str, name: str) -> Mapping[str, Usage] | None:
        """Every container's usage, or None unless all of them have one (metrics-server's rule)."""
        containers = self.pods.get((namespace, name))
        if not containers:
            return None
        usages = {c: rate(*entry) for c, entry in containers.items()}
        if any(u is None for u in usages.values()):
            return None
        return {c: u for c, u in usages.items() if u is not None}
