"""coordination.k8s.io/v1 Leases: node heartbeats and leader election locks."""

from __future__ import annotations

from datetime import datetime
from typing import Final

from apiserver import printers
from apiserver.printers import Column, Printer, Row, since
from apiserver.registry.resource import Resource
from apiserver.registry.strategy import Obj, Strategy
from apiserver.validation import coordination as validation
from apiserver.validation.field import FieldError
from machinery.api import kinds


class LeaseStrategy(Strategy):
    def validate(self, obj: Obj) -> list[FieldError]:
        return validation.validate_lease(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_lease_update(new, old)


COLUMNS: Final = (
    printers.NAME,
    Column("Holder", "string", ("io.k8s.api.coordination.v1.LeaseSpec", "holderIdentity")),
    printers.AGE,
)


def _row(lease: Obj, now: datetime) -> Row:
    metadata: Obj = lease.get("metadata") or {}
    holder = (lease.get("spec") or {}).get("holderIdentity") or ""
    return Row([metadata.get("name", ""), holder, since(metadata.get("creationTimestamp"), now)])


RESOURCE: Final = Resource(info=kinds.LEASES, strategy=LeaseStrategy(), printer=Printer(COLUMNS, _row))
