"""core/v1 ConfigMaps: string ``data`` and base64 ``binaryData``, which ``immutable: true`` freezes.

``binaryData`` values are byte strings: one that is not base64 is a 400, as
kube-apiserver answers while decoding the body (:mod:`.bytedata`). Keys are
validated as config keys; an immutable ConfigMap keeps its data and stays
immutable (``ValidateConfigMapUpdate``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Final

from apiserver import printers
from apiserver.printers import Column, Printer, Row, since
from apiserver.registry.core import bytedata
from apiserver.registry.resource import Resource
from apiserver.registry.strategy import Obj, Strategy
from apiserver.validation import core as validation
from apiserver.validation.field import FieldError
from machinery.api import kinds


class ConfigMapStrategy(Strategy):
    """The create and update rules of ConfigMaps."""

    def prepare_for_create(self, obj: Obj) -> None:
        bytedata.canonical_byte_map("ConfigMap", obj, "binaryData")

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        bytedata.canonical_byte_map("ConfigMap", new, "binaryData")

    def validate(self, obj: Obj) -> list[FieldError]:
        return validation.validate_config_map(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_config_map_update(new, old)


_STRATEGY: Final = ConfigMapStrategy()

COLUMNS: Final = (
    printers.NAME,
    Column("Data", "string", ("io.k8s.api.core.v1.ConfigMap", "data")),
    printers.AGE,
)


def _row(config_map: Obj, now: datetime) -> Row:
    metadata: Obj = config_map.get("metadata") or {}
    count = len(config_map.get("data") or {}) + len(config_map.get("binaryData") or {})
    return Row([metadata.get("name", ""), count, since(metadata.get("creationTimestamp"), now)])


PRINTER: Final = Printer(COLUMNS, _row)

RESOURCE: Final = Resource(
    info=kinds.CONFIG_MAPS,
    strategy=_STRATEGY,
    printer=PRINTER,
)
