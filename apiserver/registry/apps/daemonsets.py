"""apps/v1 DaemonSets: defaults, validation, template generations, an immutable selector, the printer.

As ``pkg/registry/apps/daemonset/strategy.go``. The internal
``spec.templateGeneration`` is kept, as apps/v1 keeps it, in the
``deprecated.daemonset.template.generation`` annotation: 1 on create, one more
on every template change, never set by a client. A spec change bumps the
generation; the selector cannot change; ``/status`` validates the counts.
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
from apiserver.validation import apps as validation
from apiserver.validation.apps import TEMPLATE_GENERATION_ANNOTATION
from apiserver.validation.field import FieldError, Path
from apiserver.validation.meta import validate_immutable
from machinery.api import kinds, labels


def _template_generation(obj: Obj) -> int:
    value = ((obj.get("metadata") or {}).get("annotations") or {}).get(TEMPLATE_GENERATION_ANNOTATION)
    try:
        return int(value) if value is not None else 0
    except ValueError:
        return 0


def _set_template_generation(obj: Obj, generation: int) -> None:
    meta = obj.setdefault("metadata", {})
    annotations = meta.get("annotations")
    if not isinstance(annotations, dict):
        annotations = meta["annotations"] = {}
    annotations[TEMPLATE_GENERATION_ANNOTATION] = str(generation)


class DaemonSetStrategy(Strategy):
    has_generation = True
    status_zeros: ClassVar[Mapping[str, object]] = {"currentNumberScheduled": 0, "numberMisscheduled": 0, "desiredNumberScheduled": 0,
                    "numberReady": 0}

    def prepare_for_create(self, obj: Obj) -> None:
        super().prepare_for_create(obj)
        _set_template_generation(obj, max(_template_generation(obj), 1))

    def default(self, obj: Obj) -> None:
        validation.default_daemon_set(obj)

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        self.default(new)
        super().prepare_for_update(new, old)
        generation = _template_generation(old)
        if (new.get("spec") or {}).get("template") != (old.get("spec") or {}).get("template"):
            generation += 1
        _set_template_generation(new, generation)

    def validate(self, obj: Obj) -> list[FieldError]:
        return validation.validate_daemon_set(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        errs = validation.validate_daemon_set_update(new, old)
        return errs + validate_immutable((new.get("spec") or {}).get("selector"),
                                         (old.get("spec") or {}).get("selector"), Path("spec", "selector"))


class DaemonSetStatusStrategy(StatusStrategy):
    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_daemon_set_status_update(new, old)


_STRATEGY: Final = DaemonSetStrategy()
_APPS = "io.k8s.api.apps.v1."

COLUMNS: Final = (
    printers.NAME,
    Column("Desired", "integer", (_APPS + "DaemonSetStatus", "desiredNumberScheduled")),
    Column("Current", "integer", (_APPS + "DaemonSetStatus", "currentNumberScheduled")),
    Column("Ready", "integer", (_APPS + "DaemonSetStatus", "numberReady")),
    Column("Up-to-date", "integer", (_APPS + "DaemonSetStatus", "updatedNumberScheduled")),
    Column("Available", "integer", (_APPS + "DaemonSetStatus", "numberAvailable")),
    Column("Node Selector", "string", ("io.k8s.api.core.v1.PodSpec", "nodeSelector")),
    printers.AGE,
    printers.CONTAINERS,
    printers.IMAGES,
    Column("Selector", "string", (_APPS + "DaemonSetSpec", "selector"), 1),
)


def _row(daemon_set: Obj, now: datetime) -> Row:
    metadata: Obj = daemon_set.get("metadata") or {}
    spec: Obj = daemon_set.get("spec") or {}
    status: Obj = daemon_set.get("status") or {}
    node_selector = ((spec.get("template") or {}).get("spec") or {}).get("nodeSelector") or {}
    containers = printers.template_containers(daemon_set)
    return Row([
        metadata.get("name", ""), status.get("desiredNumberScheduled") or 0,
        status.get("currentNumberScheduled") or 0, status.get("numberReady") or 0,
        status.get("updatedNumberScheduled") or 0, status.get("numberAvailable") or 0,
        labels.format_selector(node_selector) or "<none>", since(metadata.get("creationTimestamp"), now),
        printers.container_names(containers), printers.container_images(containers),
        printers.selector_string(spec.get("selector")),
    ])


PRINTER: Final = Printer(COLUMNS, _row)

RESOURCE: Final = Resource(
    info=kinds.DAEMON_SETS,
    strategy=_STRATEGY,
    subresources={"status": StatusREST(DaemonSetStatusStrategy(_STRATEGY))},
    printer=PRINTER,
)
