"""NodeUnschedulable: a cordoned node (``spec.unschedulable``) takes only Pods that tolerate
``node.kubernetes.io/unschedulable:NoSchedule``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kubernetes.client import V1Taint

from machinery.api import NO_SCHEDULE, find_untolerated_taint
from scheduler.framework.interface import (
    SUCCESS,
    ActionType,
    ClusterEvent,
    Code,
    CycleState,
    EventResource,
    Handle,
    Status,
)
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.plugins import names
from scheduler.plugins.helper import plugin_args

NAME: Final = names.NODE_UNSCHEDULABLE
ERR_REASON_UNSCHEDULABLE: Final = "node(s) were unschedulable"

_UNSCHEDULABLE_TAINT: Final = V1Taint(key="node.kubernetes.io/unschedulable", effect=NO_SCHEDULE)
_REJECT: Final = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_UNSCHEDULABLE, plugin=NAME)


def _tolerates_unschedulable(pod: PodInfo) -> bool:
    return find_untolerated_taint((_UNSCHEDULABLE_TAINT,), pod.tolerations) is None


class NodeUnschedulable:
    name = NAME

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        if not node.unschedulable or _tolerates_unschedulable(pod):
            return SUCCESS
        return _REJECT

    def filter_nodes(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]) -> list[NodeInfo]:
        if _tolerates_unschedulable(pod):
            return nodes
        return [n for n in nodes if not n.unschedulable]

    def events_to_register(self) -> list[ClusterEvent]:
        return [ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT)]


def new(args: Mapping[str, Any] | None, handle: Handle) -> NodeUnschedulable:
    plugin_args(args, (), NAME)
    return NodeUnschedulable()
