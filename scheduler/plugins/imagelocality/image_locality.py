"""ImageLocality: prefer nodes that already have the Pod's images, weighted by size and how rare they are.

As Kubernetes: each of the Pod's images present on the node contributes its
size times the fraction of nodes that have it (an image everyone has does
not help choose); the sum is clamped between 23 MB and 1000 MB per container
and scaled to 0..100. Images are compared by name, ``:latest`` added to
untagged names on the Pod's side.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from scheduler.framework.interface import MAX_NODE_SCORE, CycleState, Handle
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.plugins import names
from scheduler.plugins.helper import plugin_args

NAME: Final = names.IMAGE_LOCALITY

_MB: Final = 1024 * 1024
_MIN_THRESHOLD: Final = 23 * _MB
_MAX_CONTAINER_THRESHOLD: Final = 1000 * _MB


def calculate_priority(sum_scores: int, num_containers: int) -> int:
    max_threshold = _MAX_CONTAINER_THRESHOLD * num_containers
    clamped = min(max(sum_scores, _MIN_THRESHOLD), max_threshold)
    return MAX_NODE_SCORE * (clamped - _MIN_THRESHOLD) // (max_threshold - _MIN_THRESHOLD)


class ImageLocality:
    name = NAME

    def __init__(self, handle: Handle) -> None:
        self._handle = handle

    def score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[int]:
        snapshot = self._handle.snapshot
        spread = {image: snapshot.image_spread(image) for image in pod.images}
        if not any(spread.values()):
            # No node has any of the images: every node scores the minimum.
            return [0] * len(nodes)
        total_nodes = len(snapshot.node_infos())
        scores: list[int] = []
        for node in nodes:
            total = 0
            for image in pod.images:
                size = node.images.get(image)
                if size is not None:
                    total += int(size * (spread[image] / total_nodes))
            scores.append(calculate_priority(total, len(pod.images)))
        return scores


def new(args: Mapping[str, Any] | None, handle: Handle) -> ImageLocality:
    plugin_args(args, (), NAME)
    return ImageLocality(handle)
