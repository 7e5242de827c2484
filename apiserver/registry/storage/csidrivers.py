"""storage.k8s.io/v1 CSIDrivers: defaults, validation (attachRequired and lifecycle modes immutable), printer."""

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


class CSIDriverStrategy(Strategy):
    def default(self, obj: Obj) -> None:
        validation.default_csi_driver(obj)

    def validate(self, obj: Obj) -> list[FieldError]:
        return validation.validate_csi_driver(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_csi_driver_update(new, old)


_SPEC = "io.k8s.api.storage.v1.CSIDriverSpec"
COLUMNS: Final = (
    printers.NAME,
    Column("AttachRequired", "boolean", (_SPEC, "attachRequired")),
    Column("PodInfoOnMount", "boolean", (_SPEC, "podInfoOnMount")),
    Column("StorageCapacity", "boolean", (_SPEC, "storageCapacity")),
    Column("TokenRequests", "string", (_SPEC, "tokenRequests")),
    Column("RequiresRepublish", "boolean", (_SPEC, "requiresRepublish")),
    Column("Modes", "string", (_SPEC, "volumeLifecycleModes")),
    printers.AGE,
)


def _row(driver: Obj, now: datetime) -> Row:
    metadata: Obj = driver.get("metadata") or {}
    spec: Obj = driver.get("spec") or {}
    attach = spec.get("attachRequired")
    requests = spec.get("tokenRequests")
    tokens = ",".join(str(r.get("audience", "")) for r in requests) if requests is not None else "<unset>"
    return Row([metadata.get("name", ""), True if attach is None else bool(attach), bool(spec.get("podInfoOnMount")),
                bool(spec.get("storageCapacity")), tokens, bool(spec.get("requiresRepublish")),
                ",".join(spec.get("volumeLifecycleModes") or []) or "<none>",
                since(metadata.get("creationTimestamp"), now)])


PRINTER: Final = Printer(COLUMNS, _row)

RESOURCE: Final = Resource(info=kinds.builtin("storage.k8s.io", "v1", "csidrivers"), strategy=CSIDriverStrategy(),
                           printer=PRINTER)
