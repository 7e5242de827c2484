"""NodeResourcesBalancedAllocation: prefer nodes whose resources stay used to the same fraction.

With the Pod placed, each configured resource's utilization (real requests,
not the non-zero defaults) is computed; the score is ``(1 - standard
deviation) * 100``. BestEffort Pods, which request nothing, skip the plugin
(Kubernetes #129138: they would otherwise all pile onto one node).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from scheduler.framework.interface import SKIP, SUCCESS, CycleState, Handle, StateKey, Status
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.plugins import names
from scheduler.plugins.helper import plugin_args
from scheduler.plugins.noderesources import resource_allocation as ra

NAME: Final = names.NODE_RESOURCES_BALANCED_ALLOCATION


class _PreScoreState:
    __slots__ = ("requests",)

    def __init__(self, requests: list[int]) -> None:
        self.requests = requests

    def clone(self) -> _PreScoreState:
        return self


_PRE_SCORE_KEY: Final = StateKey[_PreScoreState]("PreScore" + NAME)


class BalancedAllocation:
    name = NAME

    def __init__(self, resources: tuple[ra.ResourceSpec, ...]) -> None:
        self._resources = resources
        self._cpu_memory = [r.name for r in resources] == ["cpu", "memory"]

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status:
        requests = [ra.pod_request(pod, r.name, use_requested=True) for r in self._resources]
        if not any(requests):
            return SKIP
        state.write(_PRE_SCORE_KEY, _PreScoreState(requests))
        return SUCCESS

    def score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[int]:
        requests = state.read(_PRE_SCORE_KEY).requests
        if self._cpu_memory:
            return _balanced_cpu_memory(nodes, requests[0], requests[1])
        return ra.score_nodes(nodes, self._resources, requests, ra.balanced, use_requested=True)


def _balanced_cpu_memory(nodes: Sequence[NodeInfo], pod_cpu: int, pod_memory: int) -> list[int]:
    """The balanced score over cpu and memory, inlined: ``(1 - |f_cpu - f_mem| / 2) * 100``, memoized per state."""
    scores: list[int] = []
    append = scores.append
    seen: dict[tuple[int, int, int, int], int] = {}
    for n in nodes:
        key = (n.alloc_cpu, n.req_cpu, n.alloc_memory, n.req_memory)
        score = seen.get(key)
        if score is None:
            cpu, memory = n.alloc_cpu, n.alloc_memory
            if cpu and memory:
                f_cpu = min((n.req_cpu + pod_cpu) / cpu, 1.0)
                f_mem = min((n.req_memory + pod_memory) / memory, 1.0)
                score = int((1 - abs(f_cpu - f_mem) / 2) * 100)
            else:
                # With one resource or none the standard deviation is 0.
                score = 100
            seen[key] = score
        append(score)
    return scores


def new(args: Mapping[str, Any] | None, handle: Handle) -> BalancedAllocation:
    parsed = plugin_args(args, ("resources",), NAME)
    return BalancedAllocation(ra.parse_resources(parsed.get("resources"), "resources"))
