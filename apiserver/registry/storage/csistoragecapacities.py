"""storage.k8s.io/v1 CSIStorageCapacities: what a CSI driver can still provision where; topology and class fixed."""

from __future__ import annotations

from datetime import datetime
from typing import Final

from apiserver import printers
from apiserver.printers import Column, Printer, Row, since
from apiserver.registry.resource import Resource
from apiserver.registry.strategy import Obj, Strategy
from apiserver.validation import storage as validation
from apiserver.validation.field import FieldError
from machinery.api import kinds


class CSIStorageCapacityStrategy(Strategy):
    def validate(self, obj: Obj) -> list[FieldError]:
        return validation.validate_csi_storage_capacity(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_csi_storage_capacity_update(new, old)


_CAP = "io.k8s.api.storage.v1.CSIStorageCapacity"
COLUMNS: Final = (
    printers.NAME,
    Column("StorageClassName", "string", (_CAP, "storageClassName")),
    Column("Capacity", "string", (_CAP, "capacity")),
    printers.AGE,
)


def _row(capacity: Obj, now: datetime) -> Row:
    metadata: Obj = capacity.get("metadata") or {}
    value = capacity.get("capacity")
    return Row([metadata.get("name", ""), capacity.get("storageClassName", ""),
                str(value) if value is not None else "<unset>", since(metadata.get("creationTimestamp"), now)])


PRINTER: Final = Printer(COLUMNS, _row)

RESOURCE: Final = Resource(info=kinds.builtin("storage.k8s.io", "v1", "csistoragecapacities"),
                           strategy=CSIStorageCapacityStrategy(), printer=PRINTER)
