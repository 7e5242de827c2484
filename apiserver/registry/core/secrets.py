"""core/v1 Secrets: base64 ``data``, ``stringData`` folded into it, a fixed ``type``, ``immutable``.

As kube-apiserver does while decoding a Secret:

- every ``data`` value must be base64, else the request is a ``400
  BadRequest`` naming the bad byte (:mod:`.bytedata`);
- ``stringData`` is a write-only convenience: its entries are encoded into
  ``data`` (winning over a ``data`` entry of the same key) and it is never
  stored, so a read never returns it.

``type`` defaults to ``Opaque`` and never changes afterwards; each well-known
type requires its keys (``tls.crt`` and ``tls.key`` for ``kubernetes.io/tls``,
and so on); ``immutable: true`` freezes ``data``. Secrets can be selected by
``type`` (``--field-selector type=kubernetes.io/tls``).
"""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar, Final

from apiserver import printers
from apiserver.printers import Column, Printer, Row, since
from apiserver.registry.core import bytedata
from apiserver.registry.resource import Resource
from apiserver.registry.strategy import Obj, Strategy
from apiserver.validation import core as validation
from apiserver.validation import defaults
from apiserver.validation.field import FieldError
from machinery.api import kinds


def merge_string_data(secret: Obj) -> None:
    """Check ``data`` as Kubernetes decodes it, then fold ``stringData`` into it and drop it."""
    bytedata.canonical_byte_map("Secret", secret, "data")
    string_data = secret.pop("stringData", None)
    if isinstance(string_data, dict) and string_data:
        data = secret.get("data")
        if not isinstance(data, dict):
            data = secret["data"] = {}
        for key, value in string_data.items():
            data[key] = bytedata.encode(str(value if value is not None else ""))


class SecretStrategy(Strategy):
    """The create and update rules of Secrets."""

    selectable_fields: ClassVar[tuple[str, ...]] = ("type",)

    def prepare_for_create(self, obj: Obj) -> None:
        merge_string_data(obj)

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        merge_string_data(new)
        # An update that leaves the type out keeps it (kube-apiserver's PrepareForUpdate).
        if not new.get("type"):
            new["type"] = old.get("type") or ""

    def default(self, obj: Obj) -> None:
        defaults.default_secret(obj)

    def validate(self, obj: Obj) -> list[FieldError]:
        return validation.validate_secret(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_secret_update(new, old)


_STRATEGY: Final = SecretStrategy()

_CORE = "io.k8s.api.core.v1."
COLUMNS: Final = (
    printers.NAME,
    Column("Type", "string", (_CORE + "Secret", "type")),
    Column("Data", "string", (_CORE + "Secret", "data")),
    printers.AGE,
)


def _row(secret: Obj, now: datetime) -> Row:
    metadata: Obj = secret.get("metadata") or {}
    return Row([metadata.get("name", ""), secret.get("type") or "", len(secret.get("data") or {}),
                since(metadata.get("creationTimestamp"), now)])


PRINTER: Final = Printer(COLUMNS, _row)

RESOURCE: Final = Resource(
    info=kinds.SECRETS,
    strategy=_STRATEGY,
    printer=PRINTER,
)
