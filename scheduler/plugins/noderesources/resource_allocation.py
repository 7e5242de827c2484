"""Resource scoring shared by NodeResourcesFit and NodeResourcesBalancedAllocation (``resource_allocation.go``).

A scorer sees, for each configured resource, what the node would have
requested with the Pod on it and what it can allocate, and turns that into
0..100. The strategies are Kubernetes' own, with its integer arithmetic:

- LeastAllocated: ``(allocatable - requested) * 100 / allocatable`` per
  resource, averaged by weight (spreads Pods; the default);
- MostAllocated: ``requested * 100 / allocatable`` (packs them);
- RequestedToCapacityRatio: a broken-linear function of the utilization,
  from a user-given shape;
- balanced: ``(1 - std(utilizations)) * 100``.

"requested" counts cpu and memory with the scheduler's non-zero defaults
(100m, 200Mi per container that asks for none) for NodeResourcesFit, and the
real requests for BalancedAllocation. A resource the node cannot allocate is
left out; an extended resource the Pod does not ask for too.

Pure functions over NodeInfo; no state.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from scheduler.framework.interface import MAX_NODE_SCORE
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.plugins.helper import broken_linear

#: (requested, allocatable) per resource -> score.
Scorer = Callable[[list[int], list[int]], int]

_MAX_UTILIZATION: Final = 100
#: RequestedToCapacityRatio shapes score 0..10; Kubernetes scales them to 0..100.
_MAX_CUSTOM_PRIORITY_SCORE: Final = 10


@dataclass(frozen=True, slots=True)
class ResourceSpec:
    name: str
    weight: int


DEFAULT_RESOURCES: Final = (ResourceSpec("cpu", 1), ResourceSpec("memory", 1))


def parse_resources(value: Any, path: str) -> tuple[ResourceSpec, ...]:
    """A ``resources: [{name, weight}]`` list; weights are 1..100 and names unique."""
    if value is None:
        return DEFAULT_RESOURCES
    if not isinstance(value, list):
        raise TypeError(f"{path}: must be a list of {{name, weight}}")
    specs: list[ResourceSpec] = []
    for i, item in enumerate(value):
        if not isinstance(item, Mapping) or not isinstance(item.get("name"), str) or not item["name"]:
            raise ValueError(f"{path}[{i}].name: Required value")
        weight = item.get("weight", 1)
        if not isinstance(weight, int) or isinstance(weight, bool) or not 1 <= weight <= 100:
            raise ValueError(f"{path}[{i}].weight: Invalid value: {weight!r}: resource weight of "
                             f"{item['name']} should be in the range of [1, 100]")
        if any(s.name == item["name"] for s in specs):
            raise ValueError(f"{path}[{i}].name: Duplicate value: {item['name']!r}")
        specs.append(ResourceSpec(item["name"], weight))
    return tuple(specs)


def pod_request(pod: PodInfo, resource: str, *, use_requested: bool) -> int:
    """The Pod's request of ``resource`` as scoring counts it."""
    if resource == "cpu":
        return pod.cpu if use_requested else pod.nonzero_cpu
    if resource == "memory":
        return pod.memory if use_requested else pod.nonzero_memory
    if resource == "ephemeral-storage":
        return pod.ephemeral
    return pod.scalars.get(resource, 0)


def allocatable_and_requested(node: NodeInfo, resource: str, pod_request: int, *,
                              use_requested: bool) -> tuple[int, int]:
    """(allocatable, requested including the Pod) of one resource on one node; (0, 0) leaves it out."""
    if resource == "cpu":
        return node.alloc_cpu, (node.req_cpu if use_requested else node.nonzero_cpu) + pod_request
    if resource == "memory":
        return node.alloc_memory, (node.req_memory if use_requested else node.nonzero_memory) + pod_request
    if resource == "ephemeral-storage":
        return node.alloc_ephemeral, node.req_ephemeral + pod_request
    if pod_request == 0:
        return 0, 0
    allocatable = node.alloc_scalars.get(resource, 0)
    if not allocatable:
        return 0, 0
    return allocatable, node.req_scalars.get(resource, 0) + pod_request


def score_nodes(nodes: Sequence[NodeInfo], resources: Sequence[ResourceSpec], requests: Sequence[int],
                scorer: Scorer, *, use_requested: bool) -> list[int]:
    """Each node's score by ``scorer`` over the configured resources."""
    scores: list[int] = []
    for node in nodes:
        requested: list[int] = []
        allocatable: list[int] = []
        for spec, request in zip(resources, requests, strict=True):
            alloc, req = allocatable_and_requested(node, spec.name, request, use_requested=use_requested)
            allocatable.append(alloc)
            requested.append(req if alloc else 0)
        scores.append(scorer(requested, allocatable))
    return scores


def _weighted(resources: Sequence[ResourceSpec], per_resource: Callable[[int, int], int]) -> Scorer:
    weights = [r.weight for r in resources]

    def scorer(requested: list[int], allocatable: list[int]) -> int:
        total = weight_sum = 0
        for req, alloc, weight in zip(requested, allocatable, weights, strict=True):
            if alloc == 0:
                continue
            total += per_resource(req, alloc) * weight
            weight_sum += weight
        return total // weight_sum if weight_sum else 0

    return scorer


def _least_requested(requested: int, capacity: int) -> int:
    if requested > capacity:
        return 0
    return (capacity - requested) * MAX_NODE_SCORE // capacity


def _most_requested(requested: int, capacity: int) -> int:
    # Pods without requests count with the non-zero defaults, so requested may exceed capacity.
    return min(requested, capacity) * MAX_NODE_SCORE // capacity


def least_allocated(resources: Sequence[ResourceSpec]) -> Scorer:
    return _weighted(resources, _least_requested)


def most_allocated(resources: Sequence[ResourceSpec]) -> Scorer:
    return _weighted(resources, _most_requested)


def requested_to_capacity_ratio(resources: Sequence[ResourceSpec], shape: Sequence[tuple[int, int]]) -> Scorer:
    """``shape`` is [(utilization 0..100, score 0..10)], utilizations increasing."""
    scaled = [(u, s * (MAX_NODE_SCORE // _MAX_CUSTOM_PRIORITY_SCORE)) for u, s in shape]
    weights = [r.weight for r in resources]

    def resource_score(requested: int, capacity: int) -> int:
        if capacity == 0 or requested > capacity:
            return broken_linear(scaled, _MAX_UTILIZATION)
        return broken_linear(scaled, requested * _MAX_UTILIZATION // capacity)

    def scorer(requested: list[int], allocatable: list[int]) -> int:
        total = weight_sum = 0
        for req, alloc, weight in zip(requested, allocatable, weights, strict=True):
            if alloc == 0:
                continue
            score = resource_score(req, alloc)
            if score > 0:
                total += score * weight
                weight_sum += weight
        return round(total / weight_sum) if weight_sum else 0

    return scorer


def balanced(requested: list[int], allocatable: list[int]) -> int:
    """``balancedResourceScorer``: 100 when every resource is used to the same fraction."""
    fractions = [min(req / alloc, 1.0) for req, alloc in zip(requested, allocatable, strict=True) if alloc]
    if len(fractions) == 2:
        std = abs(fractions[0] - fractions[1]) / 2
    elif len(fractions) > 2:
        mean = sum(fractions) / len(fractions)
        std = math.sqrt(sum((f - mean) ** 2 for f in fractions) / len(fractions))
    else:
        std = 0.0
    return int((1 - std) * MAX_NODE_SCORE)


def parse_shape(value: Any, path: str) -> tuple[tuple[int, int], ...]:
    """A RequestedToCapacityRatio ``shape``: utilization 0..100 strictly increasing, score 0..10."""
    if not isinstance(value, list) or not value:
        raise ValueError(f"{path}: Required value: at least one point must be specified")
    points: list[tuple[int, int]] = []
    for i, item in enumerate(value):
        if not isinstance(item, Mapping):
            raise TypeError(f"{path}[{i}]: must be an object with utilization and score")
        utilization, score = item.get("utilization", 0), item.get("score", 0)
        if not isinstance(utilization, int) or not 0 <= utilization <= _MAX_UTILIZATION:
            raise ValueError(f"{path}[{i}].utilization: Invalid value: {utilization!r}: "
                             f"not in valid range [0-{_MAX_UTILIZATION}]")
        if points and utilization <= points[-1][0]:
            raise ValueError(f"{path}[{i}].utilization: Invalid value: {utilization}: "
                             "utilization values must be sorted in increasing order")
        if not isinstance(score, int) or not 0 <= score <= _MAX_CUSTOM_PRIORITY_SCORE:
            raise ValueError(f"{path}[{i}].score: Invalid value: {score!r}: "
                             f"not in valid range [0-{_MAX_CUSTOM_PRIORITY_SCORE}]")
        points.append((utilization, score))
    return tuple(points)
