"""flowcontrol.apiserver.k8s.io/v1 FlowSchemas: defaults, validation, a generation, ``/status``, the printer.

Stored and validated; kubesim does not do API Priority and Fairness with them.
"""

from __future__ import annotations

from datetime import datetime
from typing import Final

from apiserver import printers
from apiserver.printers import Column, Printer, Row, since
from apiserver.registry.generic import StatusREST
from apiserver.registry.resource import Resource
from apiserver.registry.strategy import Obj, StatusStrategy, Strategy
from apiserver.validation import flowcontrol as validation
from apiserver.validation.field import FieldError
from machinery.api import kinds


class FlowSchemaStrategy(Strategy):
    has_generation = True

    def default(self, obj: Obj) -> None:
        validation.default_flow_schema(obj)

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        self.default(new)
        super().prepare_for_update(new, old)

    def validate(self, obj: Obj) -> list[FieldError]:
        return validation.validate_flow_schema(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_flow_schema_update(new, old)


_STRATEGY: Final = FlowSchemaStrategy()
_SPEC = "io.k8s.api.flowcontrol.v1.FlowSchemaSpec"
COLUMNS: Final = (
    printers.NAME,
    Column("PriorityLevel", "string", (_SPEC, "priorityLevelConfiguration")),
    Column("MatchingPrecedence", "string", (_SPEC, "matchingPrecedence")),
    Column("DistinguisherMethod", "string", (_SPEC, "distinguisherMethod")),
    printers.AGE,
    Column("MissingPL", "string", "references a broken or non-existent PriorityLevelConfiguration"),
)


def _row(schema: Obj, now: datetime) -> Row:
    metadata: Obj = schema.get("metadata") or {}
    spec: Obj = schema.get("spec") or {}
    method = (spec.get("distinguisherMethod") or {}).get("type") or "<none>"
    dangling = next((str(c.get("status", "")) for c in (schema.get("status") or {}).get("conditions") or []
                     if c.get("type") == "Dangling"), "?")
    return Row([metadata.get("name", ""), (spec.get("priorityLevelConfiguration") or {}).get("name", ""),
                spec.get("matchingPrecedence") or 0, method, since(metadata.get("creationTimestamp"), now), dangling])


PRINTER: Final = Printer(COLUMNS, _row)

RESOURCE: Final = Resource(
    info=kinds.builtin("flowcontrol.apiserver.k8s.io", "v1", "flowschemas"),
    strategy=_STRATEGY,
    subresources={"status": StatusREST(StatusStrategy(_STRATEGY))},
    printer=PRINTER,
)
