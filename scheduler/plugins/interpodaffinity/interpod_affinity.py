"""InterPodAffinity: required and preferred pod affinity and anti-affinity, by any topology key.

The plugin object wires :mod:`.filtering` (PreFilter, Filter and the
PreFilter extensions preemption needs) and :mod:`.scoring` (PreScore, Score,
NormalizeScore) to the framework, with Kubernetes' args:
``hardPodAffinityWeight`` (0..100, default 1) and
``ignorePreferredTermsOfExistingPods`` (default false).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from scheduler.framework.interface import (
    ActionType,
    ClusterEvent,
    CycleState,
    EventResource,
    Handle,
    PreFilterExtensions,
    PreFilterResult,
    Status,
)
from scheduler.framework.tallies import Tallies
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.plugins.helper import int_arg, plugin_args
from scheduler.plugins.interpodaffinity import filtering, scoring

NAME: Final = filtering.NAME


class InterPodAffinity:
    name = NAME

    def __init__(self, handle: Handle, *, hard_pod_affinity_weight: int,
                 ignore_preferred_terms_of_existing_pods: bool) -> None:
        self._handle = handle
        self._hard_weight = hard_pod_affinity_weight
        self._ignore_existing_preferred = ignore_preferred_terms_of_existing_pods
        #: Pods matching the incoming Pods' terms, per domain, kept across cycles.
        self._tallies = Tallies()

    def pre_filter(self, state: CycleState, pod: PodInfo,
                   nodes: Sequence[NodeInfo]) -> tuple[PreFilterResult | None, Status]:
        return filtering.pre_filter(self._handle, state, pod, nodes, self._tallies)

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return self

    def add_pod(self, state: CycleState, pod: PodInfo, to_add: PodInfo, node: NodeInfo) -> Status:
        return filtering.add_pod(state, to_add, node)

    def remove_pod(self, state: CycleState, pod: PodInfo, to_remove: PodInfo, node: NodeInfo) -> Status:
        return filtering.remove_pod(state, to_remove, node)

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        return filtering.filter_node(state, node)

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status:
        return scoring.pre_score(self._handle, state, pod, hard_pod_affinity_weight=self._hard_weight,
                                 ignore_preferred_terms_of_existing_pods=self._ignore_existing_preferred)

    def score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[int]:
        return scoring.score(state, nodes)

    def normalize_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo],
                        scores: list[int]) -> list[int]:
        return scoring.normalize_score(scores)

    def events_to_register(self) -> list[ClusterEvent]:
        return [ClusterEvent(EventResource.POD, ActionType.ALL),
                ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)]


def new(args: Mapping[str, Any] | None, handle: Handle) -> InterPodAffinity:
    parsed = plugin_args(args, ("hardPodAffinityWeight", "ignorePreferredTermsOfExistingPods"), NAME)
    ignore = parsed.get("ignorePreferredTermsOfExistingPods", False)
    if not isinstance(ignore, bool):
        raise TypeError(f"ignorePreferredTermsOfExistingPods: Invalid value: {ignore!r}: must be a boolean")
    return InterPodAffinity(handle, hard_pod_affinity_weight=int_arg(parsed, "hardPodAffinityWeight", 1, low=0,
                                                                     high=100),
                            ignore_preferred_terms_of_existing_pods=ignore)
