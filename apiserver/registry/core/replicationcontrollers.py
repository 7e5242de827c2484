"""ReplicationControllers: generation bumps on spec changes; ``/scale`` reads and writes spec.replicas."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import ClassVar, Final

from apiserver import printers
from apiserver.printers import Column, Printer, Row, since
from apiserver.registry.generic import ScaleREST, StatusREST
from apiserver.registry.resource import Resource
from apiserver.registry.strategy import Obj, StatusStrategy, Strategy
from apiserver.validation import core as validation
from apiserver.validation import defaults
from apiserver.validation.field import FieldError
from machinery.api import kinds, labels


class ReplicationControllerStrategy(Strategy):
    has_generation = True
    selectable_fields: ClassVar[tuple[str, ...]] = ("status.replicas",)
    # core/v1 keeps the default it had before the garbage collector: the Pods outlive their RC
    # (kubectl delete asks for Background, and so removes them).
    default_propagation_policy = "Orphan"
    # The official clients require status.replicas.
    status_zeros: ClassVar[Mapping[str, object]] = {"replicas": 0}

    def default(self, obj: Obj) -> None:
        defaults.default_replication_controller(obj)

    def validate(self, obj: Obj) -> list[FieldError]:
        return validation.validate_replication_controller(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_replication_controller_update(new, old)


class ReplicationControllerStatusStrategy(StatusStrategy):
    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_replication_controller_status_update(new, old)


_STRATEGY: Final = ReplicationControllerStrategy()

_CORE = "io.k8s.api.core.v1."
COLUMNS: Final = (
    printers.NAME,
    Column("Desired", "integer", (_CORE + "ReplicationControllerSpec", "replicas")),
    Column("Current", "integer", (_CORE + "ReplicationControllerStatus", "replicas")),
    Column("Ready", "integer", (_CORE + "ReplicationControllerStatus", "readyReplicas")),
    printers.AGE,
    printers.CONTAINERS,
    printers.IMAGES,
    Column("Selector", "string", (_CORE + "ReplicationControllerSpec", "selector"), 1),
)


def _row(rc: Obj, now: datetime) -> Row:
    metadata: Obj = rc.get("metadata") or {}
    spec: Obj = rc.get("spec") or {}
    status: Obj = rc.get("status") or {}
    containers = printers.template_containers(rc)
    return Row([
        # An unset spec.replicas defaults to 1 in v1, so that is what Kubernetes prints.
        metadata.get("name", ""), spec.get("replicas", 1), status.get("replicas", 0),
        status.get("readyReplicas", 0), since(metadata.get("creationTimestamp"), now),
        printers.container_names(containers), printers.container_images(containers),
        # labels.FormatLabels: the selector's string form, or <none>.
        labels.format_selector(spec.get("selector") or {}) or "<none>",
    ])


PRINTER: Final = Printer(COLUMNS, _row)

RESOURCE: Final = Resource(
    info=kinds.REPLICATION_CONTROLLERS,
    strategy=_STRATEGY,
    subresources={
        "status": StatusREST(ReplicationControllerStatusStrategy(_STRATEGY)),
        "scale": ScaleREST(selector_text=lambda s: labels.format_selector(s or {})),
    },
    printer=PRINTER,
)
