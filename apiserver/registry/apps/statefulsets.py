"""apps/v1 StatefulSets: defaults, validation, a spec that is mostly immutable, and the printer.

As ``pkg/registry/apps/statefulset/strategy.go``: an update may change only
the replicas, ordinals, template, update strategy, PVC retention policy and
minReadySeconds (``spec: Forbidden`` otherwise, which covers the selector);
a spec change bumps the generation; ``/status`` validates the counts.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import ClassVar, Final

from apiserver import printers
from apiserver.printers import Column, Printer, Row, since
from apiserver.registry.generic import ScaleREST, StatusREST
from apiserver.registry.resource import Resource
from apiserver.registry.strategy import Obj, StatusStrategy, Strategy
from apiserver.validation import apps as validation
from apiserver.validation.field import FieldError
from machinery.api import kinds


class StatefulSetStrategy(Strategy):
    has_generation = True
    status_zeros: ClassVar[Mapping[str, object]] = {"replicas": 0, "availableReplicas": 0}

    def default(self, obj: Obj) -> None:
        validation.default_stateful_set(obj)

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        self.default(new)
        super().prepare_for_update(new, old)

    def validate(self, obj: Obj) -> list[FieldError]:
        return validation.validate_stateful_set(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_stateful_set_update(new, old)


class StatefulSetStatusStrategy(StatusStrategy):
    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_stateful_set_status_update(new, old)


_STRATEGY: Final = StatefulSetStrategy()

COLUMNS: Final = (
    printers.NAME,
    Column("Ready", "string", "Number of the pod with ready state"),
    printers.AGE,
    printers.CONTAINERS,
    printers.IMAGES,
)


def _row(stateful_set: Obj, now: datetime) -> Row:
    metadata: Obj = stateful_set.get("metadata") or {}
    spec: Obj = stateful_set.get("spec") or {}
    status: Obj = stateful_set.get("status") or {}
    containers = printers.template_containers(stateful_set)
    return Row([
        metadata.get("name", ""), f"{status.get('readyReplicas') or 0}/{spec.get('replicas') or 0}",
        since(metadata.get("creationTimestamp"), now), printers.container_names(containers),
        printers.container_images(containers),
    ])


PRINTER: Final = Printer(COLUMNS, _row)

RESOURCE: Final = Resource(
    info=kinds.STATEFUL_SETS,
    strategy=_STRATEGY,
    subresources={"status": StatusREST(StatefulSetStatusStrategy(_STRATEGY)), "scale": ScaleREST()},
    printer=PRINTER,
)
