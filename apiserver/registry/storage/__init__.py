"""storage.k8s.io: StorageClasses, CSIDrivers, CSINodes, CSIStorageCapacities, VolumeAttachments."""

from __future__ import annotations

from apiserver.registry.storage import (
    csidrivers,
    csinodes,
    csistoragecapacities,
    storageclasses,
    volumeattachments,
)

RESOURCES = [
    csidrivers.RESOURCE,
    csinodes.RESOURCE,
    csistoragecapacities.RESOURCE,
    storageclasses.RESOURCE,
    volumeattachments.RESOURCE,
]
