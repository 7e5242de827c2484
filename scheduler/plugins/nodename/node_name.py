"""NodeName [the seed's PodFitsHost]: a Pod that names a node in ``spec.nodeName`` fits only that node.

A Pod created with ``spec.nodeName`` never reaches the scheduler (the kubelet
takes it directly, as in Kubernetes); this plugin covers the framework's
side, for example a preemption or a profile that schedules such Pods.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

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

NAME: Final = names.NODE_NAME
ERR_REASON: Final = "node(s) didn't match the requested node name"

_REJECT: Final = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON, plugin=NAME)


class NodeName:
    name = NAME

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        wanted = pod.node_name
        return SUCCESS if not wanted or wanted == node.name else _REJECT

    def filter_nodes(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]) -> list[NodeInfo]:
        wanted = pod.node_name
        if not wanted:
            return nodes
        return [n for n in nodes if n.name == wanted]

    def events_to_register(self) -> list[ClusterEvent]:
        return [ClusterEvent(EventResource.NODE, ActionType.ADD)]


def new(args: Mapping[str, Any] | None, handle: Handle) -> NodeName:
    plugin_args(args, (), NAME)
    return NodeName()
