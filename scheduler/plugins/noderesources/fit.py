"""NodeResourcesFit [the seed's PodFitsResources]: the Pod's requests must fit what the node has left.

Filter, as ``fitsRequest``: one more Pod than ``pods`` allocatable is ``Too
many pods``; then cpu, memory, ephemeral-storage and every extended resource
the Pod requests (more than 0) must fit in allocatable minus what the node's
Pods (bound and assumed) request, else ``Insufficient <resource>`` for each.
A request larger than the whole node's allocatable is UnschedulableAndUnresolvable
(no preemption can help); otherwise Unschedulable. ``ignoredResources`` and
``ignoredResourceGroups`` exempt extended resources.

Score, by ``scoringStrategy``: LeastAllocated (default, cpu and memory of
weight 1), MostAllocated or RequestedToCapacityRatio (see
:mod:`.resource_allocation`).

The batch filter is three integer comparisons per node against the
NodeInfo's ``free_*`` fields; the per-node filter builds the reasons.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from scheduler.framework.interface import (
    SUCCESS,
    ActionType,
    ClusterEvent,
    Code,
    CycleState,
    EventResource,
    Handle,
    StateKey,
    Status,
)
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.plugins import names
from scheduler.plugins.helper import plugin_args
from scheduler.plugins.noderesources import resource_allocation as ra

NAME: Final = names.NODE_RESOURCES_FIT

LEAST_ALLOCATED: Final = "LeastAllocated"
MOST_ALLOCATED: Final = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO: Final = "RequestedToCapacityRatio"
_STRATEGIES: Final = (LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO)

TOO_MANY_PODS: Final = "Too many pods"
#: A threshold no free amount falls below, standing for "the Pod requests none of this".
_NO_REQUEST: Final = -(1 << 62)


def insufficient_reason(resource: str) -> str:
    return f"Insufficient {resource}"


def _is_extended(resource: str) -> bool:
    """``IsExtendedResourceName``: domain-prefixed, but not in the kubernetes.io domain."""
    return "/" in resource and not resource.startswith("kubernetes.io/") and not resource.startswith("requests.")


class _PreScoreState:
    __slots__ = ("requests",)

    def __init__(self, requests: list[int]) -> None:
        self.requests = requests

    def clone(self) -> _PreScoreState:
        return self


_PRE_SCORE_KEY: Final = StateKey[_PreScoreState]("PreScore" + NAME)


class Fit:
    name = NAME

    def __init__(self, *, ignored_resources: frozenset[str], ignored_groups: frozenset[str], strategy: str,
                 resources: tuple[ra.ResourceSpec, ...], scorer: ra.Scorer) -> None:
        self._ignored = ignored_resources
        self._ignored_groups = ignored_groups
        self.strategy = strategy
        self._resources = resources
        self._scorer = scorer
        self._fast_least = strategy == LEAST_ALLOCATED and [r.name for r in resources] == ["cpu", "memory"]

    def _checked_scalars(self, pod: PodInfo) -> list[tuple[str, int]]:
        return sorted((name, amount) for name, amount in pod.scalars.items()
                      if amount > 0 and not (_is_extended(name) and (
                          name in self._ignored or name.partition("/")[0] in self._ignored_groups)))

    def _insufficient(self, pod: PodInfo, node: NodeInfo) -> Status:
        reasons: list[str] = []
        unresolvable = False
        if len(node.pods) + 1 > node.allowed_pods:
            reasons.append(TOO_MANY_PODS)
        checks = [("cpu", pod.cpu, node.alloc_cpu, node.free_cpu),
                  ("memory", pod.memory, node.alloc_memory, node.free_memory),
                  ("ephemeral-storage", pod.ephemeral, node.alloc_ephemeral, node.free_ephemeral)]
        for name, amount in self._checked_scalars(pod):
            allocatable = node.alloc_scalars.get(name, 0)
            checks.append((name, amount, allocatable, allocatable - node.req_scalars.get(name, 0)))
        for name, want, allocatable, free in checks:
            if want > 0 and want > free:
                reasons.append(insufficient_reason(name))
                unresolvable = unresolvable or want > allocatable
        if not reasons:
            return SUCCESS
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE if unresolvable else Code.UNSCHEDULABLE, *reasons,
                      plugin=NAME)

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        return self._insufficient(pod, node)

    def filter_nodes(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]) -> list[NodeInfo]:
        if self._checked_scalars(pod):
            return [n for n in nodes if self._insufficient(pod, n) is SUCCESS]
        cpu = pod.cpu if pod.cpu > 0 else _NO_REQUEST
        memory = pod.memory if pod.memory > 0 else _NO_REQUEST
        ephemeral = pod.ephemeral if pod.ephemeral > 0 else _NO_REQUEST
        return [n for n in nodes
                if n.free_pods > 0 and n.free_cpu >= cpu and n.free_memory >= memory and n.free_ephemeral >= ephemeral]

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status:
        requests = [ra.pod_request(pod, r.name, use_requested=False) for r in self._resources]
        state.write(_PRE_SCORE_KEY, _PreScoreState(requests))
        return SUCCESS

    def score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[int]:
        requests = state.read(_PRE_SCORE_KEY).requests
        if self._fast_least:
            return _least_allocated_cpu_memory(nodes, requests[0], requests[1], self._resources[0].weight,
                                               self._resources[1].weight)
        return ra.score_nodes(nodes, self._resources, requests, self._scorer, use_requested=False)

    def events_to_register(self) -> list[ClusterEvent]:
        return [ClusterEvent(EventResource.POD, ActionType.DELETE | ActionType.UPDATE_POD_SCALE_DOWN),
                ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE)]


def _least_allocated_cpu_memory(nodes: Sequence[NodeInfo], pod_cpu: int, pod_memory: int, cpu_weight: int,
                                memory_weight: int) -> list[int]:
    """LeastAllocated over cpu and memory, inlined: the default profile's hottest loop.

    Nodes in the same state score the same, and big clusters have many of
    them (empty nodes, nodes of one shape), so scores are memoized per call.
    """
    scores: list[int] = []
    append = scores.append
    seen: dict[tuple[int, int, int, int], int] = {}
    for n in nodes:
        key = (n.alloc_cpu, n.nonzero_cpu, n.alloc_memory, n.nonzero_memory)
        score = seen.get(key)
        if score is None:
            total = weight_sum = 0
            alloc = n.alloc_cpu
            if alloc:
                req = n.nonzero_cpu + pod_cpu
                total += (0 if req > alloc else (alloc - req) * 100 // alloc) * cpu_weight
                weight_sum += cpu_weight
            alloc = n.alloc_memory
            if alloc:
                req = n.nonzero_memory + pod_memory
                total += (0 if req > alloc else (alloc - req) * 100 // alloc) * memory_weight
                weight_sum += memory_weight
            score = seen[key] = total // weight_sum if weight_sum else 0
        append(score)
    return scores


def _string_list(args: Mapping[str, Any], key: str) -> frozenset[str]:
    value = args.get(key) or []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{key}: must be a list of strings")
    return frozenset(value)


def new(args: Mapping[str, Any] | None, handle: Handle) -> Fit:
    parsed = plugin_args(args, ("ignoredResources", "ignoredResourceGroups", "scoringStrategy"), NAME)
    strategy_args = parsed.get("scoringStrategy") or {}
    if not isinstance(strategy_args, Mapping):
        raise TypeError("scoringStrategy must be an object")
    strategy = strategy_args.get("type") or LEAST_ALLOCATED
    if strategy not in _STRATEGIES:
        supported = ", ".join(f'"{s}"' for s in _STRATEGIES)
        raise ValueError(f'scoringStrategy.type: Unsupported value: "{strategy}": supported values: {supported}')
    resources = ra.parse_resources(strategy_args.get("resources"), "scoringStrategy.resources")
    scorer: ra.Scorer
    if strategy == LEAST_ALLOCATED:
        scorer = ra.least_allocated(resources)
    elif strategy == MOST_ALLOCATED:
        scorer = ra.most_allocated(resources)
    else:
        ratio = strategy_args.get("requestedToCapacityRatio") or {}
        shape = ra.parse_shape(ratio.get("shape") if isinstance(ratio, Mapping) else None,
                               "scoringStrategy.requestedToCapacityRatio.shape")
        scorer = ra.requested_to_capacity_ratio(resources, shape)
    return Fit(ignored_resources=_string_list(parsed, "ignoredResources"),
               ignored_groups=_string_list(parsed, "ignoredResourceGroups"), strategy=strategy,
               resources=resources, scorer=scorer)
