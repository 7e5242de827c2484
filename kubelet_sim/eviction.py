"""The kubelet's eviction manager, for memory: MemoryPressure, and evicting Pods to relieve it.

As ``pkg/kubelet/eviction`` does with the ``memory.available`` hard threshold
(``evictionHard`` in the node profile, 100Mi by default):

- every ``evictionMonitoringPeriod`` (10 s) each node's available memory is
  its capacity minus its working set (its Pods' simulated or measured usage
  plus the system's, :mod:`kubelet_sim.stats`);
- below the threshold the node reports ``MemoryPressure`` (``KubeletHasInsufficientMemory``;
  the node lifecycle controller then taints it ``node.kubernetes.io/memory-pressure``),
  admits no BestEffort Pod, and evicts one Pod per period, ranked as
  ``rankMemoryPressure`` ranks them: Pods using more memory than they request
  first, then lower priority, then the largest use above the request — so
  BestEffort Pods go first;
- the condition clears once memory has stayed above the threshold for
  ``evictionPressureTransitionPeriod`` (5 minutes).

The evicted Pod fails with reason ``Evicted`` and the kubelet's message
(``The node was low on resource: memory. Threshold quantity: 100Mi, available:
51200Ki. Container app was using 300Mi, request is 0, has larger consumption
of memory.``).

Concurrency: one task (:meth:`EvictionManager.run`) on the event loop; it yields
between nodes so that 5,000 nodes do not hold the loop.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass

from kubelet_sim.node import SimNode
from kubelet_sim.pods import PodManager, SimPod
from kubelet_sim.stats import NodeSample, PodSample, StatsProvider
from machinery.api.quantity import format_quantity, resource_list
from machinery.client.clock import Clock, RealClock

log = logging.getLogger("kubelet_sim.eviction")


def _bytes(amount: int) -> str:
    return format_quantity(amount * 1000, "memory")


@dataclass(frozen=True, slots=True)
class Candidate:
    pod: SimPod
    sample: PodSample
    request: int
    priority: int

    @property
    def above_request(self) -> int:
        return self.sample.working_set - self.request

    def rank(self) -> tuple[bool, int, int]:
        """Sorts first: over its request, lower priority, more above its request."""
        return (not self.above_request > 0, self.priority, -self.above_request)


def container_requests(pod: SimPod) -> dict[str, int]:
    """Each container's memory request in bytes."""
    specs = [*pod.view.spec.containers, *(pod.view.spec.init_containers or ())]
    return {c.name: resource_list((c.resources or {}).get("requests")).get("memory", 0) // 1000 for c in specs}


def eviction_message(sample: NodeSample, victim: Candidate, threshold: int) -> str:
    """The kubelet's ``evictionMessage`` for memory."""
    message = (f"The node was low on resource: memory. Threshold quantity: {_bytes(threshold)}, "
               f"available: {_bytes(sample.memory_available)}. ")
    requests = container_requests(victim.pod)
    for c in victim.sample.containers:
        request = requests.get(c.name, 0)
        if c.working_set > request:
            message += (f"Container {c.name} was using {_bytes(c.working_set)}, request is {_bytes(request)}, "
                        "has larger consumption of memory. ")
    return message


class EvictionManager:
    def __init__(self, nodes: Mapping[str, SimNode], pods: PodManager, stats: StatsProvider, *, threshold: int,
                 period: float = 10.0, transition: float = 300.0, clock: Clock | None = None) -> None:
        self._nodes = nodes
        self._pods = pods
        self._stats = stats
        self.threshold = threshold
        self._period = period
        self._transition = transition
        self._clock = clock or RealClock()

    async def run(self) -> None:
        while True:
            await self._clock.sleep(self._period)
            for index, node in enumerate(list(self._nodes.values())):
                if node.active:
                    self.check(node)
                if index % 200 == 199:
                    await self._clock.sleep(0)

    def check(self, node: SimNode) -> SimPod | None:
        """One look at a node: set or clear its pressure; the Pod evicted, if any."""
        sample = self._stats.sample(node)
        now = self._clock.now()
        if sample.memory_available >= self.threshold:
            if node.memory_pressure and now - node.memory_pressure_since >= self._transition:
                node.memory_pressure = False
                log.info("node %s: memory pressure is over (available %s)", node.name,
                         _bytes(sample.memory_available))
            return None
        if not node.memory_pressure:
            log.info("node %s: memory pressure: available %s is below %s", node.name,
                     _bytes(sample.memory_available), _bytes(self.threshold))
        node.memory_pressure = True
        node.memory_pressure_since = now
        victim = self._pick(sample)
        if victim is None:
            return None
        self._pods.evict(victim.pod, eviction_message(sample, victim, self.threshold))
        return victim.pod

    def _pick(self, sample: NodeSample) -> Candidate | None:
        candidates = []
        for pod_sample in sample.pods:
            pod = self._pods.pod(pod_sample.namespace, pod_sample.name)
            if pod is None or pod.evicted is not None or pod.terminating:
                continue
            request = sum(container_requests(pod).values())
            candidates.append(Candidate(pod, pod_sample, request, pod.view.spec.priority or 0))
        return min(candidates, key=Candidate.rank, default=None)
