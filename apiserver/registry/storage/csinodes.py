"""storage.k8s.io/v1 CSINodes: the CSI drivers a node runs; a driver's node ID and topology never change."""

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


class CSINodeStrategy(Strategy):
    def validate(self, obj: Obj) -> list[FieldError]:
        return validation.validate_csi_node(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_csi_node_update(new, old)


COLUMNS: Final = (
    printers.NAME,
    Column("Drivers", "integer", ("io.k8s.api.storage.v1.CSINodeSpec", "drivers")),
    printers.AGE,
)


def _row(node: Obj, now: datetime) -> Row:
    metadata: Obj = node.get("metadata") or {}
    return Row([metadata.get("name", ""), len((node.get("spec") or {}).get("drivers") or []),
                since(metadata.get("creationTimestamp"), now)])


PRINTER: Final = Printer(COLUMNS, _row)

RESOURCE: Final = Resource(info=kinds.CSI_NODES, strategy=CSINodeStrategy(), printer=PRINTER)
