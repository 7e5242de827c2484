"""core/v1 PodTemplates: a named Pod template, defaulted and validated as workloads' templates are.

``metadata.generation`` starts at 1 and grows when ``template`` changes (a
PodTemplate has no ``spec``), as kube-apiserver's strategy counts it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Final

from apiserver import printers
from apiserver.printers import Column, Printer, Row
from apiserver.registry.resource import Resource
from apiserver.registry.strategy import Obj, Strategy
from apiserver.validation import core as validation
from apiserver.validation import defaults
from apiserver.validation.field import FieldError
from machinery.api import kinds, labels


class PodTemplateStrategy(Strategy):
    """The create and update rules of PodTemplates."""

    has_generation = True

    def spec_changed(self, new: Obj, old: Obj) -> bool:
        return bool(new.get("template") != old.get("template"))

    def default(self, obj: Obj) -> None:
        defaults.default_pod_template_object(obj)

    def validate(self, obj: Obj) -> list[FieldError]:
        return validation.validate_pod_template(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_pod_template_update(new, old)


_STRATEGY: Final = PodTemplateStrategy()

COLUMNS: Final = (
    printers.NAME,
    Column("Containers", "string", "Names of each container in the template."),
    Column("Images", "string", "Images referenced by each container in the template."),
    Column("Pod Labels", "string", "The labels for the pod template."),
)


def _row(pod_template: Obj, _now: datetime) -> Row:
    template: Obj = pod_template.get("template") or {}
    containers = list((template.get("spec") or {}).get("containers") or [])
    return Row([(pod_template.get("metadata") or {}).get("name", ""), printers.container_names(containers),
                printers.container_images(containers),
                labels.format_selector((template.get("metadata") or {}).get("labels") or {}) or "<none>"])


PRINTER: Final = Printer(COLUMNS, _row)

RESOURCE: Final = Resource(
    info=kinds.POD_TEMPLATES,
    strategy=_STRATEGY,
    printer=PRINTER,
)
