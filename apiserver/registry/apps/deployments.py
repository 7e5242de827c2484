"""apps/v1 Deployments: Kubernetes' defaults and validation, an immutable selector, and the printer.

As ``pkg/registry/apps/deployment/strategy.go``: a change of the spec or of
the annotations bumps ``metadata.generation`` (annotations are copied to the
ReplicaSets, so the controller must see them change); the selector cannot
change in apps/v1; ``/status`` changes only the status and validates its
counts; ``/scale`` reads and writes ``spec.replicas``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Final

from apiserver import printers
from apiserver.printers import Column, Printer, Row, since
from apiserver.registry.generic import ScaleREST, StatusREST
from apiserver.registry.resource import Resource
from apiserver.registry.strategy import Obj, StatusStrategy, Strategy
from apiserver.validation import apps as validation
from apiserver.validation.field import FieldError, Path
from apiserver.validation.meta import validate_immutable
from machinery.api import kinds


class DeploymentStrategy(Strategy):
    has_generation = True

    def default(self, obj: Obj) -> None:
        validation.default_deployment(obj)

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        # Kubernetes compares specs after decoding, that is after defaulting.
        self.default(new)
        super().prepare_for_update(new, old)
        new_meta, old_meta = new.get("metadata") or {}, old.get("metadata") or {}
        if new.get("spec") == old.get("spec") and new_meta.get("annotations") != old_meta.get("annotations"):
            new_meta["generation"] = int(old_meta.get("generation") or 1) + 1

    def validate(self, obj: Obj) -> list[FieldError]:
        return validation.validate_deployment(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        errs = validation.validate_deployment_update(new, old)
        return errs + validate_immutable((new.get("spec") or {}).get("selector"),
                                         (old.get("spec") or {}).get("selector"), Path("spec", "selector"))


class DeploymentStatusStrategy(StatusStrategy):
    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_deployment_status_update(new, old)


_STRATEGY: Final = DeploymentStrategy()
_APPS = "io.k8s.api.apps.v1."

COLUMNS: Final = (
    printers.NAME,
    Column("Ready", "string", "Number of the pod with ready state"),
    Column("Up-to-date", "string", (_APPS + "DeploymentStatus", "updatedReplicas")),
    Column("Available", "string", (_APPS + "DeploymentStatus", "availableReplicas")),
    printers.AGE,
    printers.CONTAINERS,
    printers.IMAGES,
    Column("Selector", "string", (_APPS + "DeploymentSpec", "selector"), 1),
)


def _row(deployment: Obj, now: datetime) -> Row:
    metadata: Obj = deployment.get("metadata") or {}
    spec: Obj = deployment.get("spec") or {}
    status: Obj = deployment.get("status") or {}
    containers = printers.template_containers(deployment)
    return Row([
        metadata.get("name", ""), f"{status.get('readyReplicas') or 0}/{spec.get('replicas') or 0}",
        status.get("updatedReplicas") or 0, status.get("availableReplicas") or 0,
        since(metadata.get("creationTimestamp"), now), printers.container_names(containers),
        printers.container_images(containers), printers.selector_string(spec.get("selector")),
    ])


PRINTER: Final = Printer(COLUMNS, _row)

RESOURCE: Final = Resource(
    info=kinds.DEPLOYMENTS,
    strategy=_STRATEGY,
    subresources={"status": StatusREST(DeploymentStatusStrategy(_STRATEGY)), "scale": ScaleREST()},
    printer=PRINTER,
)
