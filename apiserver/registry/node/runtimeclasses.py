"""node.k8s.io/v1 RuntimeClasses: a container runtime configuration Pods may name; the handler is fixed."""

from __future__ import annotations

from datetime import datetime
from typing import Final

from apiserver import printers
from apiserver.printers import Column, Printer, Row, since
from apiserver.registry.resource import Resource
from apiserver.registry.strategy import Obj, Strategy
from apiserver.validation import node as validation
from apiserver.validation.field import FieldError
from machinery.api import kinds


class RuntimeClassStrategy(Strategy):
    def validate(self, obj: Obj) -> list[FieldError]:
        return validation.validate_runtime_class(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_runtime_class_update(new, old)


COLUMNS: Final = (
    printers.NAME,
    Column("Handler", "string", ("io.k8s.api.node.v1.RuntimeClass", "handler")),
    printers.AGE,
)


def _row(runtime_class: Obj, now: datetime) -> Row:
    metadata: Obj = runtime_class.get("metadata") or {}
    return Row([metadata.get("name", ""), runtime_class.get("handler", ""),
                since(metadata.get("creationTimestamp"), now)])


PRINTER: Final = Printer(COLUMNS, _row)

RESOURCE: Final = Resource(info=kinds.builtin("node.k8s.io", "v1", "runtimeclasses"), strategy=RuntimeClassStrategy(),
                           printer=PRINTER)
