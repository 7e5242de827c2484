"""BinPacking: a Score plugin that puts each Pod on the node it fills most (best fit).

The example of the simplest out-of-tree plugin: one extension point, its
args from ``pluginConfig``, no state. A node's score is how full the Pod
would leave its *dominant* resource, the one it would use the largest share
of: ``100 * max over resources r of w_r / max(w) * (requested_r + pod_r) / allocatable_r``,
for the resources in ``args.resources`` with their weights ``w`` (default cpu
and memory, both weight 1; weight 0 leaves a resource out). Kubernetes' NodeResourcesFit ``MostAllocated`` averages
the resources instead, so a node full on memory but idle on cpu looks half
full to it and full to BinPacking. Pods without requests count with the
scheduler's non-zero defaults (100m cpu, 200Mi memory), as MostAllocated does.

Enable it in a profile (with ``--plugin-module scheduler_plugins.binpacking``)::

    plugins:
      score:
        enabled: [{name: BinPacking, weight: 5}]
    pluginConfig:
    - name: BinPacking
      args: {resources: [{name: cpu, weight: 1}, {name: memory, weight: 1}]}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from scheduler.framework.interface import MAX_NODE_SCORE, CycleState, Handle
from scheduler.framework.types import NodeInfo, PodInfo

NAME: Final = "BinPacking"
_RESOURCES: Final = ("cpu", "memory")


class BinPacking:
    name = NAME

    def __init__(self, resources: Mapping[str, int]) -> None:
        top = max(resources.values())
        self._resources = tuple((name, weight / top) for name, weight in resources.items())

    def score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[int]:
        return [self._score(pod, node) for node in nodes]

    def _score(self, pod: PodInfo, node: NodeInfo) -> int:
        fullest = 0.0
        for resource, weight in self._resources:
            if resource == "cpu":
                used, allocatable = node.nonzero_cpu + pod.nonzero_cpu, node.alloc_cpu
            else:
                used, allocatable = node.nonzero_memory + pod.nonzero_memory, node.alloc_memory
            if allocatable > 0:
                fullest = max(fullest, weight * min(used / allocatable, 1.0))
        return int(MAX_NODE_SCORE * fullest)


def new(args: Mapping[str, Any] | None, handle: Handle) -> BinPacking:
    """The factory: ``args.resources`` is a list of ``{name, weight}`` of cpu and memory."""
    args = args or {}
    unknown = sorted(k for k in args if k not in ("resources", "apiVersion", "kind"))
    if unknown:
        raise ValueError(f'strict decoding error: unknown field "{unknown[0]}"')
    raw = args.get("resources")
    if raw is None:
        return BinPacking(dict.fromkeys(_RESOURCES, 1))
    if not isinstance(raw, list):
        raise TypeError("resources: must be a list of {name, weight}")
    chosen: dict[str, int] = {}
    for i, item in enumerate(raw):
        if not isinstance(item, Mapping) or item.get("name") not in _RESOURCES:
            raise ValueError(f"resources[{i}].name: Unsupported value: {item!r}: supported values: cpu, memory")
        weight = item.get("weight", 1)
        if not isinstance(weight, int) or isinstance(weight, bool) or weight < 0:
            raise ValueError(f"resources[{i}].weight: Invalid value: {weight!r}: must be a non-negative integer")
        if weight:
            chosen[item["name"]] = weight
    if not chosen:
        raise ValueError("resources: Required value: at least one resource with a weight above 0")
    return BinPacking(chosen)


PLUGINS = {NAME: new}
