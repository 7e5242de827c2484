"""TaintToleration: NoSchedule and NoExecute taints must be tolerated; untolerated PreferNoSchedule taints lower the score.

Filter reports the first untolerated taint as ``node(s) had untolerated taint
{key: value}``, UnschedulableAndUnresolvable (evicting Pods does not remove
taints). Score counts the node's untolerated PreferNoSchedule taints, and
normalization reverses it, so the node with the fewest gets 100.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from kubernetes.client import V1Toleration

from machinery.api import (
    NO_EXECUTE,
    NO_SCHEDULE,
    PREFER_NO_SCHEDULE,
    count_intolerable_prefer_no_schedule,
    find_untolerated_taint,
    format_taint_kv,
)
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
from scheduler.plugins.helper import default_normalize_score, plugin_args

NAME: Final = names.TAINT_TOLERATION
_DO_NOT_SCHEDULE: Final = frozenset((NO_SCHEDULE, NO_EXECUTE))


def untolerated_taint_reason(taint: Any) -> str:
    return f"node(s) had untolerated taint {format_taint_kv(taint)}"


class _PreScoreState:
    __slots__ = ("tolerations",)

    def __init__(self, tolerations: list[V1Toleration]) -> None:
        self.tolerations = tolerations

    def clone(self) -> _PreScoreState:
        return self


_PRE_SCORE_KEY: Final = StateKey[_PreScoreState]("PreScore" + NAME)


class TaintToleration:
    name = NAME

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        if not node.hard_taints:
            return SUCCESS
        taint = find_untolerated_taint(node.taints, pod.tolerations, _DO_NOT_SCHEDULE)
        if taint is None:
            return SUCCESS
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, untolerated_taint_reason(taint), plugin=NAME)

    def filter_nodes(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]) -> list[NodeInfo]:
        tolerations = pod.tolerations
        return [n for n in nodes
                if not n.hard_taints or find_untolerated_taint(n.taints, tolerations, _DO_NOT_SCHEDULE) is None]

    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status:
        tolerations = [t for t in pod.tolerations if t.effect in (None, "", PREFER_NO_SCHEDULE)]
        state.write(_PRE_SCORE_KEY, _PreScoreState(tolerations))
        return SUCCESS

    def score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[int]:
        tolerations = state.read(_PRE_SCORE_KEY).tolerations
        return [count_intolerable_prefer_no_schedule(n.taints, tolerations) if n.prefer_no_schedule_taints else 0
                for n in nodes]

    def normalize_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo],
                        scores: list[int]) -> list[int]:
        return default_normalize_score(scores, reverse=True)

    def events_to_register(self) -> list[ClusterEvent]:
        return [ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT)]


def new(args: Mapping[str, Any] | None, handle: Handle) -> TaintToleration:
    plugin_args(args, (), NAME)
    return TaintToleration()
