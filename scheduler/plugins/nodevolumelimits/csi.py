"""NodeVolumeLimits: a node attaches at most as many CSI volumes per driver as its CSINode allows.

As Kubernetes' ``nodevolumelimits`` CSI plugin: the Pod's new volumes
(claims bound to CSI PersistentVolumes, counted once per volume handle,
those already on the node excluded) plus the node's, per driver, must not
exceed ``spec.drivers[].allocatable.count`` of the node's CSINode; a node
without a CSINode, or a driver without a count, has no limit. Over it:
"node(s) exceed max volume count". Pods without claims skip the plugin.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from machinery.api.kinds import CSI_NODES, PERSISTENT_VOLUME_CLAIMS, PERSISTENT_VOLUMES
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
from scheduler.plugins.volumebinding.volume_binding import pod_claims

NAME: Final = names.NODE_VOLUME_LIMITS
ERR_REASON_MAX_VOLUME_COUNT: Final = "node(s) exceed max volume count"


class NodeVolumeLimits:
    name = NAME

    def __init__(self, handle: Handle) -> None:
        self._handle = handle

    def pre_filter(self, state: CycleState, pod: PodInfo,
                   nodes: Sequence[NodeInfo]) -> tuple[PreFilterResult | None, Status]:
        return None, SUCCESS if pod_claims(pod) else SKIP

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return None

    def _csi_volumes(self, pod: PodInfo) -> dict[str, str]:
        """The Pod's CSI volumes: volume handle -> driver."""
        claims = self._handle.lister(PERSISTENT_VOLUME_CLAIMS)
        volumes = self._handle.lister(PERSISTENT_VOLUMES)
        result: dict[str, str] = {}
        if claims is None or volumes is None:
            return result
        for name in pod_claims(pod):
            claim = claims.get(f"{pod.namespace}/{name}")
            volume_name = claim.spec.volume_name if claim is not None and claim.spec is not None else None
            volume = volumes.get(volume_name) if volume_name else None
            csi = volume.spec.csi if volume is not None and volume.spec is not None else None
            if csi is not None:
                result[f"{csi.driver}/{csi.volume_handle}"] = csi.driver
        return result

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        new = self._csi_volumes(pod)
        if not new:
            return SUCCESS
        csi_nodes = self._handle.lister(CSI_NODES)
        csi_node = csi_nodes.get(node.name) if csi_nodes is not None else None
        limits: dict[str, int] = {}
        for driver in (csi_node.spec.drivers if csi_node is not None and csi_node.spec is not None else None) or ():
            if driver.allocatable is not None and driver.allocatable.count is not None:
                limits[driver.name] = driver.allocatable.count
        if not limits:
            return SUCCESS
        attached: dict[str, str] = {}
        for other in node.pods.values():
            attached.update(self._csi_volumes(other))
        for driver, limit in limits.items():
            total = {h for h, d in attached.items() if d == driver} | {h for h, d in new.items() if d == driver}
            if len(total) > limit:
                return Status(Code.UNSCHEDULABLE, ERR_REASON_MAX_VOLUME_COUNT, plugin=NAME)
        return SUCCESS

    def events_to_register(self) -> list[ClusterEvent]:
        return [ClusterEvent(EventResource.CSI_NODE, ActionType.ADD | ActionType.UPDATE),
                ClusterEvent(EventResource.POD, ActionType.DELETE),
                ClusterEvent(EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD)]


def new(args: Mapping[str, Any] | None, handle: Handle) -> NodeVolumeLimits:
    plugin_args(args, (), NAME)
    return NodeVolumeLimits(handle)
