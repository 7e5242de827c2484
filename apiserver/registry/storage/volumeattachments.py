"""storage.k8s.io/v1 VolumeAttachments: a read-only spec, a status the attacher writes, and the printer."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import ClassVar, Final

from apiserver import printers
from apiserver.printers import Column, Printer, Row, since
from apiserver.registry.generic import StatusREST
from apiserver.registry.resource import Resource
from apiserver.registry.strategy import Obj, StatusStrategy, Strategy
from apiserver.validation import storage as validation
from apiserver.validation.field import FieldError
from machinery.api import kinds


class VolumeAttachmentStrategy(Strategy):
    status_zeros: ClassVar[Mapping[str, object]] = {"attached": False}

    def validate(self, obj: Obj) -> list[FieldError]:
        return validation.validate_volume_attachment(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_volume_attachment_update(new, old)


class VolumeAttachmentStatusStrategy(StatusStrategy):
    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_volume_attachment_status_update(new, old)


_STRATEGY: Final = VolumeAttachmentStrategy()
_V1 = "io.k8s.api.storage.v1."
COLUMNS: Final = (
    printers.NAME,
    Column("Attacher", "string", (_V1 + "VolumeAttachmentSpec", "attacher")),
    Column("PV", "string", (_V1 + "VolumeAttachmentSource", "persistentVolumeName")),
    Column("Node", "string", (_V1 + "VolumeAttachmentSpec", "nodeName")),
    Column("Attached", "boolean", (_V1 + "VolumeAttachmentStatus", "attached")),
    printers.AGE,
)


def _row(attachment: Obj, now: datetime) -> Row:
    metadata: Obj = attachment.get("metadata") or {}
    spec: Obj = attachment.get("spec") or {}
    return Row([metadata.get("name", ""), spec.get("attacher", ""),
                (spec.get("source") or {}).get("persistentVolumeName") or "", spec.get("nodeName", ""),
                bool((attachment.get("status") or {}).get("attached")), since(metadata.get("creationTimestamp"), now)])


PRINTER: Final = Printer(COLUMNS, _row)

RESOURCE: Final = Resource(
    info=kinds.builtin("storage.k8s.io", "v1", "volumeattachments"),
    strategy=_STRATEGY,
    subresources={"status": StatusREST(VolumeAttachmentStatusStrategy(_STRATEGY))},
    printer=PRINTER,
)
