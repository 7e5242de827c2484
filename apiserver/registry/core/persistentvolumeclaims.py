"""core/v1 PersistentVolumeClaims: a request for storage, immutable but for its size once bound.

A new claim is Pending; the volume binder sets ``spec.volumeName`` once and
the phase through ``/status``. Only ``resources.requests`` may change
afterwards (and not shrink), as ``ValidatePersistentVolumeClaimUpdate`` says.
"""

from __future__ import annotations

from datetime import datetime
from typing import Final

from apiserver import printers
from apiserver.printers import Column, Printer, Row, since
from apiserver.registry.core.persistentvolumes import access_modes
from apiserver.registry.generic import StatusREST
from apiserver.registry.resource import Resource
from apiserver.registry.strategy import Obj, StatusStrategy, Strategy
from apiserver.validation import defaults
from apiserver.validation import volume as validation
from apiserver.validation.field import FieldError
from machinery.api import kinds
from machinery.api.names import go_quote
from machinery.api.quantity import milli_value

_BETA_STORAGE_CLASS: Final = "volume.beta.kubernetes.io/storage-class"
DEPRECATED_CLASS_ANNOTATION: Final = 'deprecated since v1.8; use "storageClassName" attribute instead'


class PersistentVolumeClaimStrategy(Strategy):
    """The create and update rules of PersistentVolumeClaims."""

    def default(self, obj: Obj) -> None:
        defaults.default_persistent_volume_claim(obj)

    def validate(self, obj: Obj) -> list[FieldError]:
        return validation.validate_persistent_volume_claim(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_persistent_volume_claim_update(new, old)

    def warnings_on_create(self, obj: Obj) -> list[str]:
        return _warnings(obj)

    def warnings_on_update(self, new: Obj, old: Obj) -> list[str]:
        return _warnings(new)


def _warnings(pvc: Obj) -> list[str]:
    """``GetWarningsForPersistentVolumeClaim``: the deprecated class annotation, fractional byte sizes."""
    warnings: list[str] = []
    if _BETA_STORAGE_CLASS in ((pvc.get("metadata") or {}).get("annotations") or {}):
        warnings.append(f"metadata.annotations[{_BETA_STORAGE_CLASS}]: {DEPRECATED_CLASS_ANNOTATION}")
    resources = (pvc.get("spec") or {}).get("resources") or {}
    for key in ("requests", "limits"):
        value = (resources.get(key) or {}).get("storage")
        if value is None:
            continue
        try:
            fractional = milli_value(value) % 1000 != 0
        except ValueError:
            continue
        if fractional:
            warnings.append(f"spec.resources.{key}[storage]: fractional byte value "
                            f"{go_quote(printers.quantity(value))} is invalid, must be an integer")
    return warnings


class PersistentVolumeClaimStatusStrategy(StatusStrategy):
    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_persistent_volume_claim_status_update(new, old)


_STRATEGY: Final = PersistentVolumeClaimStrategy()

_CORE = "io.k8s.api.core.v1."
COLUMNS: Final = (
    printers.NAME,
    Column("Status", "string", (_CORE + "PersistentVolumeClaimStatus", "phase")),
    Column("Volume", "string", (_CORE + "PersistentVolumeClaimSpec", "volumeName")),
    Column("Capacity", "string", (_CORE + "PersistentVolumeClaimStatus", "capacity")),
    Column("Access Modes", "string", (_CORE + "PersistentVolumeClaimStatus", "accessModes")),
    Column("StorageClass", "string", "StorageClass of the pvc"),
    Column("VolumeAttributesClass", "string", "VolumeAttributesClass of the pvc"),
    printers.AGE,
    Column("VolumeMode", "string", (_CORE + "PersistentVolumeClaimSpec", "volumeMode"), 1),
)


def _row(pvc: Obj, now: datetime) -> Row:
    metadata: Obj = pvc.get("metadata") or {}
    spec: Obj = pvc.get("spec") or {}
    status: Obj = pvc.get("status") or {}
    phase = "Terminating" if metadata.get("deletionTimestamp") else status.get("phase") or ""
    capacity = modes = ""
    # Capacity and access modes are the bound volume's, so shown once bound.
    if spec.get("volumeName"):
        modes = access_modes(status.get("accessModes"))
        storage = (status.get("capacity") or {}).get("storage")
        capacity = printers.quantity(storage) if storage is not None else "0"
    annotations = metadata.get("annotations") or {}
    storage_class = annotations[_BETA_STORAGE_CLASS] if _BETA_STORAGE_CLASS in annotations else \
        spec.get("storageClassName") or ""
    return Row([
        metadata.get("name", ""), phase, spec.get("volumeName") or "", capacity, modes, storage_class,
        spec.get("volumeAttributesClassName") or "<unset>", since(metadata.get("creationTimestamp"), now),
        spec.get("volumeMode") or "<unset>",
    ])


PRINTER: Final = Printer(COLUMNS, _row)

RESOURCE: Final = Resource(
    info=kinds.PERSISTENT_VOLUME_CLAIMS,
    strategy=_STRATEGY,
    subresources={"status": StatusREST(PersistentVolumeClaimStatusStrategy(_STRATEGY))},
    printer=PRINTER,
)
