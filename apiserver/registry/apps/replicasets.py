"""apps/v1 ReplicaSets: Kubernetes' defaults and validation, an immutable selector, and the printer.

As ``pkg/registry/apps/replicaset/strategy.go``: a spec change bumps the
generation, the selector cannot change in apps/v1, ``/status`` validates the
replica counts and ``/scale`` reads and writes ``spec.replicas``.
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
from apiserver.validation.field import FieldError, Path
from apiserver.validation.meta import validate_immutable
from machinery.api import kinds


class ReplicaSetStrategy(Strategy):
    has_generation = True
    selectable_fields: ClassVar[tuple[str, ...]] = ("status.replicas",)
    # The official clients require status.replicas.
    status_zeros: ClassVar[Mapping[str, object]] = {"replicas": 0}

    def default(self, obj: Obj) -> None:
        validation.default_replica_set(obj)

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        self.default(new)
        super().prepare_for_update(new, old)

    def validate(self, obj: Obj) -> list[FieldError]:
        return validation.validate_replica_set(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        errs = validation.validate_replica_set_update(new, old)
        return errs + validate_immutable((new.get("spec") or {}).get("selector"),
                                         (old.get("spec") or {}).get("selector"), Path("spec", "selector"))

    def fields(self, obj: Obj) -> dict[str, str]:
        out = super().fields(obj)
        # An unset status.replicas is Go's zero.
        out["status.replicas"] = str(((obj.get("status") or {}).get("replicas")) or 0)
        return out


class ReplicaSetStatusStrategy(StatusStrategy):
    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_replica_set_status_update(new, old)


_STRATEGY: Final = ReplicaSetStrategy()
_APPS = "io.k8s.api.apps.v1."

COLUMNS: Final = (
    printers.NAME,
    Column("Desired", "integer", (_APPS + "ReplicaSetSpec", "replicas")),
    Column("Current", "integer", (_APPS + "ReplicaSetStatus", "replicas")),
    Column("Ready", "integer", (_APPS + "ReplicaSetStatus", "readyReplicas")),
    printers.AGE,
    printers.CONTAINERS,
    printers.IMAGES,
    Column("Selector", "string", (_APPS + "ReplicaSetSpec", "selector"), 1),
)


def _row(replica_set: Obj, now: datetime) -> Row:
    metadata: Obj = replica_set.get("metadata") or {}
    spec: Obj = replica_set.get("spec") or {}
    status: Obj = replica_set.get("status") or {}
    containers = printers.template_containers(replica_set)
    return Row([
        metadata.get("name", ""), spec.get("replicas") or 0, status.get("replicas") or 0,
        status.get("readyReplicas") or 0, since(metadata.get("creationTimestamp"), now),
        printers.container_names(containers), printers.container_images(containers),
        printers.selector_string(spec.get("selector")),
    ])


PRINTER: Final = Printer(COLUMNS, _row)

RESOURCE: Final = Resource(
    info=kinds.REPLICA_SETS,
    strategy=_STRATEGY,
    subresources={"status": StatusREST(ReplicaSetStatusStrategy(_STRATEGY)), "scale": ScaleREST()},
    printer=PRINTER,
)
