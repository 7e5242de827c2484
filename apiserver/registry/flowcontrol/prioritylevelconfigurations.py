"""flowcontrol.apiserver.k8s.io/v1 PriorityLevelConfigurations: defaults, validation, ``/status``, the printer.

Stored and validated; kubesim does not do API Priority and Fairness with them.
"""

from __future__ import annotations

from datetime import datetime
from typing import Final

from apiserver import printers
from apiserver.printers import Cell, Column, Printer, Row, since
from apiserver.registry.generic import StatusREST
from apiserver.registry.resource import Resource
from apiserver.registry.strategy import Obj, StatusStrategy, Strategy
from apiserver.validation import flowcontrol as validation
from apiserver.validation.field import FieldError
from machinery.api import kinds


class PriorityLevelConfigurationStrategy(Strategy):
    has_generation = True

    def default(self, obj: Obj) -> None:
        validation.default_priority_level_configuration(obj)

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        self.default(new)
        super().prepare_for_update(new, old)

    def validate(self, obj: Obj) -> list[FieldError]:
        return validation.validate_priority_level_configuration(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_priority_level_configuration_update(new, old)


_STRATEGY: Final = PriorityLevelConfigurationStrategy()
_V1 = "io.k8s.api.flowcontrol.v1."
COLUMNS: Final = (
    printers.NAME,
    Column("Type", "string", (_V1 + "PriorityLevelConfigurationSpec", "type")),
    Column("NominalConcurrencyShares", "string",
           (_V1 + "LimitedPriorityLevelConfiguration", "nominalConcurrencyShares")),
    Column("Queues", "string", (_V1 + "QueuingConfiguration", "queues")),
    Column("HandSize", "string", (_V1 + "QueuingConfiguration", "handSize")),
    Column("QueueLengthLimit", "string", (_V1 + "QueuingConfiguration", "queueLengthLimit")),
    printers.AGE,
)


def _row(level: Obj, now: datetime) -> Row:
    metadata: Obj = level.get("metadata") or {}
    spec: Obj = level.get("spec") or {}
    cells: list[Cell] = ["<none>"] * 4
    limited = spec.get("limited")
    if limited is not None:
        cells[0] = limited.get("nominalConcurrencyShares") or 0
        queuing = (limited.get("limitResponse") or {}).get("queuing")
        if queuing is not None:
            cells[1:] = [queuing.get("queues") or 0, queuing.get("handSize") or 0, queuing.get("queueLengthLimit") or 0]
    return Row([metadata.get("name", ""), spec.get("type", ""), *cells, since(metadata.get("creationTimestamp"), now)])


PRINTER: Final = Printer(COLUMNS, _row)

RESOURCE: Final = Resource(
    info=kinds.builtin("flowcontrol.apiserver.k8s.io", "v1", "prioritylevelconfigurations"),
    strategy=_STRATEGY,
    subresources={"status": StatusREST(StatusStrategy(_STRATEGY))},
    printer=PRINTER,
)
