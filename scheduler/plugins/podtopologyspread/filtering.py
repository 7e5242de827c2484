"""PodTopologySpread's PreFilter and Filter: ``whenUnsatisfiable: DoNotSchedule`` constraints.

PreFilter counts, per constraint and topology value, the Pods matching the
constraint's selector on eligible nodes (those with every constraint's
topology key, that pass the inclusion policies), and keeps the two smallest
domains ("critical paths") so that Filter's skew test is O(1):

    matching Pods in the node's domain + (1 if the Pod matches itself) - global minimum <= maxSkew

with the global minimum taken as 0 while fewer than ``minDomains`` domains
exist. A node without the topology key is rejected outright
(``... (missing required label)``, UnschedulableAndUnresolvable).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from scheduler.framework.interface import (
    SKIP,
    SUCCESS,
    Code,
    CycleState,
    NodeInfoLister,
    PreFilterResult,
    StateKey,
    Status,
)
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.plugins.podtopologyspread.common import (
    NAME,
    Constraint,
    MatchCounts,
    count_matching,
    includes_every_node,
    node_has_topology_keys,
)

ERR_REASON_CONSTRAINTS_NOT_MATCH: Final = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH: Final = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"

_REJECT_SKEW: Final = Status(Code.UNSCHEDULABLE, ERR_REASON_CONSTRAINTS_NOT_MATCH, plugin=NAME)
_REJECT_LABEL: Final = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_NODE_LABEL_NOT_MATCH, plugin=NAME)
_MAX_INT32: Final = (1 << 31) - 1


class CriticalPaths:
    """The two domains with the fewest matching Pods; ``paths[0]`` always holds the minimum."""

    __slots__ = ("paths",)

    def __init__(self) -> None:
        self.paths: list[list[str | int]] = [["", _MAX_INT32], ["", _MAX_INT32]]

    def update(self, value: str, count: int) -> None:
        p = self.paths
        index = 0 if p[0][0] == value else 1 if p[1][0] == value else -1
        if index >= 0:
            p[index][1] = count
            if p[0][1] > p[1][1]:  # type: ignore[operator]
                p[0], p[1] = p[1], p[0]
        elif count < p[0][1]:  # type: ignore[operator]
            p[1] = p[0]
            p[0] = [value, count]
        elif count < p[1][1]:  # type: ignore[operator]
            p[1] = [value, count]

    @property
    def minimum(self) -> int:
        value = self.paths[0][1]
        assert isinstance(value, int)
        return value

    def clone(self) -> CriticalPaths:
        copy = CriticalPaths()
        copy.paths = [list(self.paths[0]), list(self.paths[1])]
        return copy


class PreFilterState:
    __slots__ = ("constraints", "critical_paths", "match_counts")

    def __init__(self, constraints: list[Constraint]) -> None:
        self.constraints = constraints
        self.critical_paths = [CriticalPaths() for _ in constraints]
        #: Per constraint: topology value -> matching Pods.
        self.match_counts: list[dict[str, int]] = [{} for _ in constraints]

    def min_match(self, index: int, min_domains: int) -> int:
        if len(self.match_counts[index]) < min_domains:
            return 0
        return self.critical_paths[index].minimum

    def clone(self) -> PreFilterState:
        copy = PreFilterState(self.constraints)
        copy.critical_paths = [p.clone() for p in self.critical_paths]
        copy.match_counts = [dict(m) for m in self.match_counts]
        return copy

    def update_with_pod(self, other: PodInfo, pod: PodInfo, node: NodeInfo, delta: int) -> None:
        if other.namespace != pod.namespace or not node_has_topology_keys(node, self.constraints):
            return
        for i, c in enumerate(self.constraints):
            if not c.selector.matches(other.labels) or not c.includes(pod, node):
                continue
            value = node.labels[c.topology_key]
            count = self.match_counts[i].get(value, 0) + delta
            self.match_counts[i][value] = count
            self.critical_paths[i].update(value, count)


_PRE_FILTER_KEY: Final = StateKey[PreFilterState]("PreFilter" + NAME)


def pre_filter(state: CycleState, pod: PodInfo, constraints: list[Constraint], nodes: Sequence[NodeInfo],
               memo: tuple[MatchCounts, NodeInfoLister] | None = None) -> tuple[PreFilterResult | None, Status]:
    """Count the matching Pods per domain of each DoNotSchedule constraint over ``nodes``.

    With ``memo`` (kept counts, and the cache whose every node ``nodes`` is),
    the counts come from the kept tallies when the Pod's inclusion policies
    admit every node; else they are counted node by node, as Kubernetes does.
    """
    if not constraints:
        return None, SKIP
    s = PreFilterState(constraints)
    if memo is not None and all(includes_every_node(c, pod) for c in constraints):
        # Every node with all the topology keys counts: the kept tallies are the counts.
        required = tuple(c.topology_key for c in constraints)
        for i, c in enumerate(constraints):
            s.match_counts[i] = dict(memo[0].tally(memo[1], pod.namespace, c.selector, c.topology_key,
                                                   required).totals)
    else:
        _count(s, pod, constraints, nodes)
    for i, counts in enumerate(s.match_counts):
        for value, count in counts.items():
            s.critical_paths[i].update(value, count)
    state.write(_PRE_FILTER_KEY, s)
    return None, SUCCESS


def _count(s: PreFilterState, pod: PodInfo, constraints: list[Constraint], nodes: Sequence[NodeInfo]) -> None:
    for node in nodes:
        if not node_has_topology_keys(node, constraints):
            continue
        for i, c in enumerate(constraints):
            if not c.includes(pod, node):
                continue
            value = node.labels[c.topology_key]
            counts = s.match_counts[i]
            counts[value] = counts.get(value, 0) + count_matching(node.pods.values(), c.selector, pod.namespace)


def add_pod(state: CycleState, pod: PodInfo, other: PodInfo, node: NodeInfo) -> Status:
    state.read(_PRE_FILTER_KEY).update_with_pod(other, pod, node, 1)
    return SUCCESS


def remove_pod(state: CycleState, pod: PodInfo, other: PodInfo, node: NodeInfo) -> Status:
    state.read(_PRE_FILTER_KEY).update_with_pod(other, pod, node, -1)
    return SUCCESS


def filter_node(state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
    s = state.read(_PRE_FILTER_KEY)
    for i, c in enumerate(s.constraints):
        value = node.labels.get(c.topology_key)
        if value is None:
            return _REJECT_LABEL
        self_match = 1 if c.selector.matches(pod.labels) else 0
        skew = s.match_counts[i].get(value, 0) + self_match - s.min_match(i, c.min_domains)
        if skew > c.max_skew:
            return _REJECT_SKEW
    return SUCCESS
