"""VolumeRestrictions [the seed's NoDiskConflict]: a disk that allows one writer is mounted by one Pod per node.

As ``isVolumeConflict``: the same GCE PD or the same iSCSI IQN mounted by
another Pod on the node conflicts unless both mount it read-only; the same
RBD image (overlapping monitors, same pool and image) likewise; the same AWS
EBS volume always conflicts, read-only or not. Pods without such volumes skip
the plugin in PreFilter. (kubesim has no PersistentVolumeClaims, so the
ReadWriteOncePod check has nothing to look at.)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from kubernetes.client import V1Volume

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

NAME: Final = names.VOLUME_RESTRICTIONS
ERR_REASON_DISK_CONFLICT: Final = "node(s) had no available disk"

_REJECT: Final = Status(Code.UNSCHEDULABLE, ERR_REASON_DISK_CONFLICT, plugin=NAME)
_DEFAULT_RBD_POOL: Final = "rbd"


def _restricted(volume: V1Volume) -> bool:
    return any(v is not None for v in (volume.gce_persistent_disk, volume.aws_elastic_block_store, volume.iscsi,
                                       volume.rbd))


def _volumes(pod: PodInfo) -> list[V1Volume]:
    spec = pod.pod.spec
    return list(spec.volumes or ()) if spec is not None else []


def volumes_conflict(volume: V1Volume, existing: V1Volume) -> bool:
    """Whether mounting ``volume`` conflicts with another Pod's ``existing`` volume on the same node."""
    disk, other = volume.gce_persistent_disk, existing.gce_persistent_disk
    if disk is not None and other is not None and disk.pd_name == other.pd_name and not (
            disk.read_only and other.read_only):
        return True
    ebs, other_ebs = volume.aws_elastic_block_store, existing.aws_elastic_block_store
    if ebs is not None and other_ebs is not None and ebs.volume_id == other_ebs.volume_id:
        return True
    iscsi, other_iscsi = volume.iscsi, existing.iscsi
    if iscsi is not None and other_iscsi is not None and iscsi.iqn == other_iscsi.iqn and not (
            iscsi.read_only and other_iscsi.read_only):
        return True
    if volume.rbd is not None and existing.rbd is not None:
        rbd, other_rbd = volume.rbd, existing.rbd
        same_image = ((rbd.pool or _DEFAULT_RBD_POOL) == (other_rbd.pool or _DEFAULT_RBD_POOL)
                      and rbd.image == other_rbd.image)
        if (same_image and set(rbd.monitors or ()) & set(other_rbd.monitors or ())
                and not (rbd.read_only and other_rbd.read_only)):
            return True
    return False


class VolumeRestrictions:
    name = NAME

    def pre_filter(self, state: CycleState, pod: PodInfo,
                   nodes: Sequence[NodeInfo]) -> tuple[PreFilterResult | None, Status]:
        return None, SUCCESS if any(_restricted(v) for v in _volumes(pod)) else SKIP

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return None

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        wanted = [v for v in _volumes(pod) if _restricted(v)]
        for other in node.pods.values():
            for existing in _volumes(other):
                if any(volumes_conflict(v, existing) for v in wanted):
                    return _REJECT
        return SUCCESS

    def events_to_register(self) -> list[ClusterEvent]:
        return [ClusterEvent(EventResource.POD, ActionType.DELETE),
                ClusterEvent(EventResource.NODE, ActionType.ADD)]


def new(args: Mapping[str, Any] | None, handle: Handle) -> VolumeRestrictions:
    plugin_args(args, (), NAME)
    return VolumeRestrictions()
