"""NodePorts [the seed's PodFitsHostPorts]: a Pod's ``hostPort``\\ s must be free on the node.

Ports conflict on the same protocol and port when either side binds
0.0.0.0 or both bind the same hostIP (``HostPortInfo.CheckConflict``). Pods
without host ports skip the plugin in PreFilter.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

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
    Status,
)
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.plugins import names
from scheduler.plugins.helper import plugin_args

NAME: Final = names.NODE_PORTS
ERR_REASON: Final = "node(s) didn't have free ports for the requested pod ports"

_REJECT: Final = Status(Code.UNSCHEDULABLE, ERR_REASON, plugin=NAME)


def _fits(pod: PodInfo, node: NodeInfo) -> bool:
    if not node.used_ports:
        return True
    return not any(node.port_conflicts(ip, protocol, port) for ip, protocol, port in pod.host_ports)


class NodePorts:
    name = NAME

    def pre_filter(self, state: CycleState, pod: PodInfo,
                   nodes: Sequence[NodeInfo]) -> tuple[PreFilterResult | None, Status]:
        # The wanted ports are computed once per Pod, in its PodInfo; nothing else to prepare.
        return None, SUCCESS if pod.host_ports else SKIP

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        return SUCCESS if _fits(pod, node) else _REJECT

    def filter_nodes(self, state: CycleState, pod: PodInfo, nodes: list[NodeInfo]) -> list[NodeInfo]:
        return [n for n in nodes if _fits(pod, n)]

    def events_to_register(self) -> list[ClusterEvent]:
        return [ClusterEvent(EventResource.POD, ActionType.DELETE),
                ClusterEvent(EventResource.NODE, ActionType.ADD)]


def new(args: Mapping[str, Any] | None, handle: Handle) -> NodePorts:
    plugin_args(args, (), NAME)
    return NodePorts()
