"""PodTopologySpread: spread matching Pods evenly over topology domains (``topologySpreadConstraints``).

DoNotSchedule constraints filter (:mod:`.filtering`), ScheduleAnyway ones
score (:mod:`.scoring`). A Pod without constraints of its own gets the
profile's defaults when it has an owner to spread with: with the default
``defaultingType: System`` these are hostname (maxSkew 3) and zone
(maxSkew 5), both ScheduleAnyway, selecting the Pods of its
ReplicationController; ``defaultingType: List`` uses ``defaultConstraints``.
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
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.plugins.helper import plugin_args
from scheduler.plugins.podtopologyspread import filtering, scoring
from scheduler.plugins.podtopologyspread.common import (
    DO_NOT_SCHEDULE,
    NAME,
    SCHEDULE_ANYWAY,
    SYSTEM_DEFAULT_CONSTRAINTS,
    Constraint,
    MatchCounts,
    default_selector,
    parse_constraints,
)

SYSTEM_DEFAULTING: Final = "System"
LIST_DEFAULTING: Final = "List"


class PodTopologySpread:
    name = NAME

    def __init__(self, handle: Handle, default_constraints: Sequence[Mapping[str, Any]], *,
                 system_defaulted: bool) -> None:
        self._handle = handle
        self._defaults = default_constraints
        self._system_defaulted = system_defaulted
        #: Matching-Pod counts kept across cycles (see MatchCounts).
        self._memo = MatchCounts()

    def _constraints(self, pod: PodInfo, action: str) -> list[Constraint]:
        spec = pod.pod.spec
        own = spec.topology_spread_constraints if spec is not None else None
        if own:
            return parse_constraints(own, pod, action)
        if not any(c.get("whenUnsatisfiable") == action for c in self._defaults):
            return []
        selector = default_selector(self._handle, pod)
        if selector.empty():
            return []
        return parse_constraints(self._defaults, pod, action, selector)

    def pre_filter(self, state: CycleState, pod: PodInfo,
                   nodes: Sequence[NodeInfo]) -> tuple[PreFilterResult | None, Status]:
        lister = self._handle.snapshot
        memo = (self._memo, lister) if nodes is lister.node_infos() else None
        return filtering.pre_filter(state, pod, self._constraints(pod, DO_NOT_SCHEDULE), nodes, memo)

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return self

    def add_pod(self, state: CycleState, pod: PodInfo, to_add: PodInfo, node: NodeInfo) -> Status:
        return filtering.add_pod(state, pod, to_add, node)

    def remove_pod(self, state: CycleState, pod: PodInfo, to_remove: PodInfo, node: NodeInfo) -> Status:
        return filtering.remove_pod(state, pod, to_remove, node)

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        return filtering.filter_node(state, pod, node)

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status:
        spec = pod.pod.spec
        has_own = bool(spec is not None and spec.topology_spread_constraints)
        # Only spreading the user asked for requires every topology key: system defaults
        # still spread by hostname over nodes that have no zone.
        return scoring.pre_score(self._handle, state, pod, self._constraints(pod, SCHEDULE_ANYWAY), nodes,
                                 require_all_topologies=has_own or not self._system_defaulted, memo=self._memo)

    def score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[int]:
        return scoring.score(state, pod, nodes)

    def normalize_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo],
                        scores: list[int]) -> list[int]:
        return scoring.normalize_score(state, nodes, scores)

    def events_to_register(self) -> list[ClusterEvent]:
        node_changes = ActionType.ADD | ActionType.DELETE | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_TAINT
        return [ClusterEvent(EventResource.POD, ActionType.ALL),
                ClusterEvent(EventResource.NODE, node_changes)]


def _validate_default_constraints(value: Any) -> list[Mapping[str, Any]]:
    if not isinstance(value, list):
        raise TypeError("defaultConstraints: must be a list")
    for i, c in enumerate(value):
        path = f"defaultConstraints[{i}]"
        if not isinstance(c, Mapping):
            raise TypeError(f"{path}: must be an object")
        if "labelSelector" in c:
            raise ValueError(f"{path}.labelSelector: Forbidden: constraint must not define a selector, as they "
                             "deduced for each pod")
        skew = c.get("maxSkew")
        if not isinstance(skew, int) or skew <= 0:
            raise ValueError(f"{path}.maxSkew: Invalid value: {skew!r}: must be greater than zero")
        if not isinstance(c.get("topologyKey"), str) or not c["topologyKey"]:
            raise ValueError(f"{path}.topologyKey: Required value: can not be empty")
        if c.get("whenUnsatisfiable") not in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY):
            raise ValueError(f'{path}.whenUnsatisfiable: Unsupported value: "{c.get("whenUnsatisfiable")}": '
                             f'supported values: "{DO_NOT_SCHEDULE}", "{SCHEDULE_ANYWAY}"')
    return value


def new(args: Mapping[str, Any] | None, handle: Handle) -> PodTopologySpread:
    parsed = plugin_args(args, ("defaultConstraints", "defaultingType"), NAME)
    defaulting = parsed.get("defaultingType") or SYSTEM_DEFAULTING
    if defaulting not in (SYSTEM_DEFAULTING, LIST_DEFAULTING):
        raise ValueError(f'defaultingType: Unsupported value: "{defaulting}": supported values: '
                         f'"{SYSTEM_DEFAULTING}", "{LIST_DEFAULTING}"')
    constraints = _validate_default_constraints(parsed.get("defaultConstraints") or [])
    if defaulting == SYSTEM_DEFAULTING:
        if constraints:
            raise ValueError("defaultConstraints: Invalid value: when .defaultingType is \"System\", "
                             "defaultConstraints must be empty")
        constraints = list(SYSTEM_DEFAULT_CONSTRAINTS)
    return PodTopologySpread(handle, constraints, system_defaulted=defaulting == SYSTEM_DEFAULTING)
