"""scheduling.k8s.io/v1 PriorityClasses: defaults, validation, an immutable value, and the printer.

The two system classes are created at first start (``server._bootstrap``);
the Priority admission plugin (``admission/priority.py``) resolves a Pod's
class into its priority and allows one ``globalDefault`` class only.
"""

from __future__ import annotations

from datetime import datetime
from typing import Final

from apiserver import printers
from apiserver.printers import Column, Printer, Row, since
from apiserver.registry.resource import Resource
from apiserver.registry.strategy import Obj, Strategy
from apiserver.validation import scheduling as validation
from apiserver.validation.field import FieldError
from machinery.api import kinds


class PriorityClassStrategy(Strategy):
    def default(self, obj: Obj) -> None:
        validation.default_priority_class(obj)

    def validate(self, obj: Obj) -> list[FieldError]:
        return validation.validate_priority_class(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_priority_class_update(new, old)


_PC = "io.k8s.api.scheduling.v1.PriorityClass"
COLUMNS: Final = (
    printers.NAME,
    Column("Value", "integer", (_PC, "value")),
    Column("Global-Default", "boolean", (_PC, "globalDefault")),
    printers.AGE,
    Column("PreemptionPolicy", "string", (_PC, "preemptionPolicy")),
)


def _row(pc: Obj, now: datetime) -> Row:
    metadata: Obj = pc.get("metadata") or {}
    return Row([metadata.get("name", ""), pc.get("value") or 0, bool(pc.get("globalDefault")),
                since(metadata.get("creationTimestamp"), now), pc.get("preemptionPolicy") or ""])


PRINTER: Final = Printer(COLUMNS, _row)

RESOURCE: Final = Resource(info=kinds.PRIORITY_CLASSES, strategy=PriorityClassStrategy(), printer=PRINTER)
