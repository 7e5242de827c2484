"""policy/v1 PodDisruptionBudgets: validation, a generation bumped by spec changes, and the printer.

As ``pkg/registry/policy/poddisruptionbudget/strategy.go``. The disruption
controller writes the status through ``/status``; the eviction subresource
of Pods (``registry/core/eviction.py``) reads it and spends the allowed
disruptions.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import ClassVar, Final

from apiserver import printers
from apiserver.printers import Column, Printer, Row, since
from apiserver.registry.generic import StatusREST
from apiserver.registry.resource import Resource
from apiserver.registry.strategy import Obj, StatusStrategy, Strategy
from apiserver.validation import policy as validation
from apiserver.validation.field import FieldError
from machinery.api import kinds


class PodDisruptionBudgetStrategy(Strategy):
    has_generation = True
    # The counts have no omitempty.
    status_zeros: ClassVar[Mapping[str, object]] = {"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0}

    def validate(self, obj: Obj) -> list[FieldError]:
        return validation.validate_pod_disruption_budget(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_pod_disruption_budget_update(new, old)


class PodDisruptionBudgetStatusStrategy(StatusStrategy):
    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_pod_disruption_budget_status_update(new, old)


_STRATEGY: Final = PodDisruptionBudgetStrategy()
STATUS_STRATEGY: Final = PodDisruptionBudgetStatusStrategy(_STRATEGY)

COLUMNS: Final = (
    printers.NAME,
    Column("Min Available", "string", "The minimum number of pods that must be available."),
    Column("Max Unavailable", "string", "The maximum number of pods that may be unavailable."),
    Column("Allowed Disruptions", "integer", "Calculated number of pods that may be disrupted at this time."),
    printers.AGE,
)


def _row(pdb: Obj, now: datetime) -> Row:
    metadata: Obj = pdb.get("metadata") or {}
    spec: Obj = pdb.get("spec") or {}
    status: Obj = pdb.get("status") or {}
    low, high = spec.get("minAvailable"), spec.get("maxUnavailable")
    return Row([
        metadata.get("name", ""), str(low) if low is not None else "N/A", str(high) if high is not None else "N/A",
        status.get("disruptionsAllowed") or 0, since(metadata.get("creationTimestamp"), now),
    ])


PRINTER: Final = Printer(COLUMNS, _row)

RESOURCE: Final = Resource(
    info=kinds.POD_DISRUPTION_BUDGETS,
    strategy=_STRATEGY,
    subresources={"status": StatusREST(STATUS_STRATEGY)},
    printer=PRINTER,
)
