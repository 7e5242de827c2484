"""networking.k8s.io/v1 IngressClasses: a controller that never changes, parameters, and the printer."""

from __future__ import annotations

from datetime import datetime
from typing import Final

from apiserver import printers
from apiserver.printers import Column, Printer, Row, since
from apiserver.registry.resource import Resource
from apiserver.registry.strategy import Obj, Strategy
from apiserver.validation import networking as validation
from apiserver.validation.field import FieldError
from machinery.api import kinds


class IngressClassStrategy(Strategy):
    def default(self, obj: Obj) -> None:
        validation.default_ingress_class(obj)

    def validate(self, obj: Obj) -> list[FieldError]:
        return validation.validate_ingress_class(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_ingress_class_update(new, old)


COLUMNS: Final = (
    printers.NAME,
    Column("Controller", "string", "Controller that is responsible for handling this class"),
    Column("Parameters", "string", "A reference to a resource with additional parameters"),
    printers.AGE,
)


def _parameters(ingress_class: Obj) -> str:
    params = (ingress_class.get("spec") or {}).get("parameters")
    if not params:
        return "<none>"
    kind = str(params.get("kind", ""))
    if params.get("apiGroup") is not None:
        kind += "." + str(params["apiGroup"])
    return f"{kind}/{params.get('name', '')}"


def _row(ingress_class: Obj, now: datetime) -> Row:
    metadata: Obj = ingress_class.get("metadata") or {}
    return Row([metadata.get("name", ""), (ingress_class.get("spec") or {}).get("controller", ""),
                _parameters(ingress_class), since(metadata.get("creationTimestamp"), now)])


PRINTER: Final = Printer(COLUMNS, _row)

RESOURCE: Final = Resource(info=kinds.builtin("networking.k8s.io", "v1", "ingressclasses"),
                           strategy=IngressClassStrategy(), printer=PRINTER)
