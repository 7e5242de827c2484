"""storage.k8s.io/v1 StorageClasses: defaults, validation, immutable provisioning fields, the printer.

The printer marks the default class (``storageclass.kubernetes.io/is-default-class:
"true"``) as ``NAME (default)``, as kubectl shows it. kubesim creates a default
``standard`` class at first start (:data:`DEFAULT_STORAGE_CLASS`, created by
``server._bootstrap``), as the local clusters people try kubectl on (kind,
minikube) have one.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final

from apiserver import printers
from apiserver.printers import Column, Printer, Row, since
from apiserver.registry.resource import Resource
from apiserver.registry.strategy import Obj, Strategy
from apiserver.validation import storage as validation
from apiserver.validation.field import FieldError
from machinery.api import kinds

#: The provisioner named by the default class; kubesim's volume provisioning answers to it.
DEFAULT_PROVISIONER: Final = "kubesim.io/hostpath"


def default_storage_class() -> dict[str, Any]:
    """The ``standard`` class every kubesim cluster has from its first start, annotated as the default."""
    return {
        "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
        "metadata": {"name": "standard",
                     "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
        "provisioner": DEFAULT_PROVISIONER, "reclaimPolicy": "Delete", "volumeBindingMode": "Immediate",
    }


class StorageClassStrategy(Strategy):
    def default(self, obj: Obj) -> None:
        validation.default_storage_class(obj)

    def validate(self, obj: Obj) -> list[FieldError]:
        return validation.validate_storage_class(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_storage_class_update(new, old)


_SC = "io.k8s.api.storage.v1.StorageClass"
COLUMNS: Final = (
    printers.NAME,
    Column("Provisioner", "string", (_SC, "provisioner")),
    Column("ReclaimPolicy", "string", (_SC, "reclaimPolicy")),
    Column("VolumeBindingMode", "string", (_SC, "volumeBindingMode")),
    Column("AllowVolumeExpansion", "string", (_SC, "allowVolumeExpansion")),
    printers.AGE,
)


def _row(storage_class: Obj, now: datetime) -> Row:
    metadata: Obj = storage_class.get("metadata") or {}
    name = str(metadata.get("name", ""))
    if validation.is_default_class(storage_class):
        name += " (default)"
    return Row([name, storage_class.get("provisioner", ""), storage_class.get("reclaimPolicy") or "Delete",
                storage_class.get("volumeBindingMode") or "Immediate", bool(storage_class.get("allowVolumeExpansion")),
                since(metadata.get("creationTimestamp"), now)])


PRINTER: Final = Printer(COLUMNS, _row)

RESOURCE: Final = Resource(info=kinds.STORAGE_CLASSES, strategy=StorageClassStrategy(), printer=PRINTER)
