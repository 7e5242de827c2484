"""core/v1 PersistentVolumes: a piece of storage, its source fixed at creation, its phase in ``/status``.

A new PV is Pending (with ``lastPhaseTransitionTime``, as Kubernetes 1.31+
records it); the volume binder moves it through ``/status``, which stamps a
new transition time whenever the phase changes. The reclaim policy defaults
to Retain and the volume mode to Filesystem.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final

from apiserver import printers
from apiserver.printers import Column, Printer, Row, since
from apiserver.registry.generic import StatusREST
from apiserver.registry.resource import Resource
from apiserver.registry.strategy import Obj, StatusStrategy, Strategy
from apiserver.validation import defaults
from apiserver.validation import volume as validation
from apiserver.validation.field import FieldError
from machinery.api import kinds
from machinery.api.meta import now_time

_BETA_STORAGE_CLASS: Final = "volume.beta.kubernetes.io/storage-class"
_ACCESS_MODE_NAMES: Final = (("ReadWriteOnce", "RWO"), ("ReadOnlyMany", "ROX"), ("ReadWriteMany", "RWX"),
                             ("ReadWriteOncePod", "RWOP"))


class PersistentVolumeStrategy(Strategy):
    """The create and update rules of PersistentVolumes."""

    def prepare_for_create(self, obj: Obj) -> None:
        obj["status"] = {"phase": "Pending", "lastPhaseTransitionTime": now_time()}

    def default(self, obj: Obj) -> None:
        defaults.default_persistent_volume(obj)

    def validate(self, obj: Obj) -> list[FieldError]:
        return validation.validate_persistent_volume(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_persistent_volume_update(new, old)

    def warnings_on_create(self, obj: Obj) -> list[str]:
        return _warnings(obj)

    def warnings_on_update(self, new: Obj, old: Obj) -> list[str]:
        return _warnings(new)


def _warnings(pv: Obj) -> list[str]:
    if _BETA_STORAGE_CLASS in ((pv.get("metadata") or {}).get("annotations") or {}):
        return [(f"metadata.annotations[{_BETA_STORAGE_CLASS}]: "
                'deprecated since v1.8; use "storageClassName" attribute instead')]
    return []


class PersistentVolumeStatusStrategy(StatusStrategy):
    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        super().prepare_for_update(new, old)
        status, old_status = new.setdefault("status", {}), old.get("status") or {}
        stamp = status.get("lastPhaseTransitionTime")
        if status.get("phase") == old_status.get("phase"):
            if stamp is None:
                status["lastPhaseTransitionTime"] = old_status.get("lastPhaseTransitionTime")
                if status["lastPhaseTransitionTime"] is None:
                    del status["lastPhaseTransitionTime"]
        elif stamp is None or stamp == old_status.get("lastPhaseTransitionTime"):
            # The phase changed and the writer did not say when: now.
            status["lastPhaseTransitionTime"] = now_time()

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_persistent_volume_status_update(new, old)


_STRATEGY: Final = PersistentVolumeStrategy()


def access_modes(modes: Any) -> str:
    """``GetAccessModesAsString``: ``RWO,ROX``, in Kubernetes' order whatever the order written."""
    present = set(modes or ())
    return ",".join(short for mode, short in _ACCESS_MODE_NAMES if mode in present)


_CORE = "io.k8s.api.core.v1."
COLUMNS: Final = (
    printers.NAME,
    Column("Capacity", "string", (_CORE + "PersistentVolumeSpec", "capacity")),
    Column("Access Modes", "string", (_CORE + "PersistentVolumeSpec", "accessModes")),
    Column("Reclaim Policy", "string", (_CORE + "PersistentVolumeSpec", "persistentVolumeReclaimPolicy")),
    Column("Status", "string", (_CORE + "PersistentVolumeStatus", "phase")),
    Column("Claim", "string", (_CORE + "PersistentVolumeSpec", "claimRef")),
    Column("StorageClass", "string", "StorageClass of the pv"),
    Column("VolumeAttributesClass", "string", "VolumeAttributesClass of the pv"),
    Column("Reason", "string", (_CORE + "PersistentVolumeStatus", "reason")),
    printers.AGE,
    Column("VolumeMode", "string", (_CORE + "PersistentVolumeSpec", "volumeMode"), 1),
)


def _row(pv: Obj, now: datetime) -> Row:
    metadata: Obj = pv.get("metadata") or {}
    spec: Obj = pv.get("spec") or {}
    status: Obj = pv.get("status") or {}
    claim = spec.get("claimRef")
    claim_text = f"{claim.get('namespace') or ''}/{claim.get('name') or ''}" if isinstance(claim, dict) else ""
    storage = (spec.get("capacity") or {}).get("storage")
    phase = "Terminating" if metadata.get("deletionTimestamp") else status.get("phase") or ""
    storage_class = (metadata.get("annotations") or {}).get(_BETA_STORAGE_CLASS) or spec.get("storageClassName") or ""
    return Row([
        metadata.get("name", ""), printers.quantity(storage) if storage is not None else "0",
        access_modes(spec.get("accessModes")), spec.get("persistentVolumeReclaimPolicy") or "", phase, claim_text,
        storage_class, spec.get("volumeAttributesClassName") or "<unset>", status.get("reason") or "",
        since(metadata.get("creationTimestamp"), now), spec.get("volumeMode") or "<unset>",
    ])


PRINTER: Final = Printer(COLUMNS, _row)

RESOURCE: Final = Resource(
    info=kinds.PERSISTENT_VOLUMES,
    strategy=_STRATEGY,
    subresources={"status": StatusREST(PersistentVolumeStatusStrategy(_STRATEGY))},
    printer=PRINTER,
)
