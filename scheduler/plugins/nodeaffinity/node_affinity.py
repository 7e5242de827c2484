"""NodeAffinity [the seed's PodSelectorMatches]: ``nodeSelector`` and node affinity, hard and soft.

Filter: the node must match ``spec.nodeSelector`` and one of the
``requiredDuringSchedulingIgnoredDuringExecution`` terms (terms are ORed,
expressions inside a term ANDed; In, NotIn, Exists, DoesNotExist, Gt, Lt;
``matchFields`` on ``metadata.name``), else ``node(s) didn't match Pod's node
affinity/selector``. When every required term pins node names with
``matchFields``, PreFilter narrows the cycle to those nodes, as Kubernetes does.

Score: the sum of the weights of the ``preferredDuringScheduling...`` terms the
node matches, normalized so the best node gets 100; PreScore skips the plugin
for Pods without preferences.

``pluginConfig`` ``addedAffinity`` applies a required and preferred affinity to
every Pod of the profile (``node(s) didn't match scheduler-enforced node affinity``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from machinery.api import NODE_NAME_FIELD, NodeSelector, PreferredTerms, RequiredNodeAffinity, SelectorError
from scheduler.framework.interface import (
    SKIP,
    SUCCESS,
    ActionType,
    ClusterEvent,
    Code,
    CycleState,
    EventResource,
    Handle,
    PreFilterExtensions,
    PreFilterResult,
    StateKey,
    Status,
)
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.plugins import names
from scheduler.plugins.helper import default_normalize_score, plugin_args

NAME: Final = names.NODE_AFFINITY
ERR_REASON_POD: Final = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_ENFORCED: Final = "node(s) didn't match scheduler-enforced node affinity"
ERR_REASON_CONFLICT: Final = "pod affinity terms conflict"

_REJECT_POD: Final = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_POD, plugin=NAME)
_REJECT_ENFORCED: Final = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_ENFORCED, plugin=NAME)


class _PreFilterState:
    __slots__ = ("required",)

    def __init__(self, required: RequiredNodeAffinity) -> None:
        self.required = required

    def clone(self) -> _PreFilterState:
        return self


class _PreScoreState:
    __slots__ = ("preferred",)

    def __init__(self, preferred: PreferredTerms) -> None:
        self.preferred = preferred

    def clone(self) -> _PreScoreState:
        return self


_PRE_FILTER_KEY: Final = StateKey[_PreFilterState]("PreFilter" + NAME)
_PRE_SCORE_KEY: Final = StateKey[_PreScoreState]("PreScore" + NAME)


def _required_selector(pod: PodInfo) -> Any:
    spec = pod.pod.spec
    affinity = spec.affinity if spec is not None else None
    node_affinity = affinity.node_affinity if affinity is not None else None
    return node_affinity.required_during_scheduling_ignored_during_execution if node_affinity is not None else None


def _preferred_terms(pod: PodInfo) -> list[Any]:
    spec = pod.pod.spec
    affinity = spec.affinity if spec is not None else None
    node_affinity = affinity.node_affinity if affinity is not None else None
    if node_affinity is None:
        return []
    return list(node_affinity.preferred_during_scheduling_ignored_during_execution or ())


def _pinned_node_names(required: Any) -> frozenset[str] | None | bool:
    """Node names the required terms allow via ``matchFields`` In; None when a term does not pin names.

    Returns False when the terms pin names that cannot all hold (an empty set).
    """
    allowed: set[str] | None = None
    for term in required.node_selector_terms or ():
        term_names: set[str] | None = None
        for requirement in term.match_fields or ():
            if requirement.key == NODE_NAME_FIELD and requirement.operator == "In":
                values = set(requirement.values or ())
                term_names = values if term_names is None else term_names & values
        if term_names is None:
            # A term without a node-name requirement allows every node: the terms are ORed.
            return None
        allowed = term_names if allowed is None else allowed | term_names
    if allowed is None:
        return None
    return frozenset(allowed) if allowed else False


class NodeAffinity:
    name = NAME

    def __init__(self, added_required: NodeSelector | None, added_preferred: list[Any]) -> None:
        self._added_required = added_required
        self._added_preferred = added_preferred

    def pre_filter(self, state: CycleState, pod: PodInfo,
                   nodes: Sequence[NodeInfo]) -> tuple[PreFilterResult | None, Status]:
        required = _required_selector(pod)
        spec = pod.pod.spec
        if required is None and self._added_required is None and not (spec is not None and spec.node_selector):
            return None, SKIP
        try:
            state.write(_PRE_FILTER_KEY, _PreFilterState(pod.required_node_affinity))
        except SelectorError as err:
            return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, f"parsing pod: {err}", plugin=NAME)
        if required is None or not required.node_selector_terms:
            return None, SUCCESS
        pinned = _pinned_node_names(required)
        if pinned is False:
            return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_CONFLICT, plugin=NAME)
        if isinstance(pinned, frozenset):
            return PreFilterResult(pinned), SUCCESS
        return None, SUCCESS

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        if self._added_required is not None and not self._added_required.matches(node.name, node.labels):
            return _REJECT_ENFORCED
        if not state.read(_PRE_FILTER_KEY).required.matches(node.name, node.labels):
            return _REJECT_POD
        return SUCCESS

    def filter_nodes(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]) -> list[NodeInfo]:
        added = self._added_required
        if added is not None:
            nodes = [n for n in nodes if added.matches(n.name, n.labels)]
        required = state.read(_PRE_FILTER_KEY).required
        return [n for n in nodes if required.matches(n.name, n.labels)]

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status:
        terms = _preferred_terms(pod) + self._added_preferred
        if not terms:
            return SKIP
        try:
            preferred = PreferredTerms.from_spec(terms)
        except SelectorError as err:
            return Status.from_error(f"parsing pod: {err}", plugin=NAME)
        state.write(_PRE_SCORE_KEY, _PreScoreState(preferred))
        return SUCCESS

    def score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[int]:
        preferred = state.read(_PRE_SCORE_KEY).preferred
        return [preferred.score(n.name, n.labels) for n in nodes]

    def normalize_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo],
                        scores: list[int]) -> list[int]:
        return default_normalize_score(scores, reverse=False)

    def events_to_register(self) -> list[ClusterEvent]:
        return [ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)]


def new(args: Mapping[str, Any] | None, handle: Handle) -> NodeAffinity:
    added = plugin_args(args, ("addedAffinity",), NAME).get("addedAffinity") or {}
    if not isinstance(added, Mapping):
        raise TypeError("addedAffinity must be an object")
    required_spec = added.get("requiredDuringSchedulingIgnoredDuringExecution")
    preferred = list(added.get("preferredDuringSchedulingIgnoredDuringExecution") or ())
    try:
        required = NodeSelector.from_spec(required_spec) if required_spec is not None else None
        PreferredTerms.from_spec(preferred)
    except SelectorError as err:
        raise ValueError(f"addedAffinity: {err}") from None
    return NodeAffinity(required, preferred)
