"""core/v1 ServiceAccounts: metadata, and ``secrets`` references kept to their names.

As kube-apiserver's strategy does, each entry of ``secrets`` is reduced to
its ``name`` on every write. The ``token`` subresource is TokenRequest
(:mod:`apiserver.registry.core.serviceaccounttoken`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Final

from apiserver import printers
from apiserver.printers import Column, Printer, Row, since
from apiserver.registry.core.serviceaccounttoken import TokenREST
from apiserver.registry.resource import Resource
from apiserver.registry.strategy import Obj, Strategy
from apiserver.validation import core as validation
from apiserver.validation.field import FieldError
from machinery.api import kinds


def _clean_secret_references(service_account: Obj) -> None:
    secrets = service_account.get("secrets")
    if isinstance(secrets, list):
        service_account["secrets"] = [{"name": s.get("name")} if isinstance(s, dict) and s.get("name") is not None
                                      else {} for s in secrets]


class ServiceAccountStrategy(Strategy):
    """The create and update rules of ServiceAccounts."""

    def prepare_for_create(self, obj: Obj) -> None:
        _clean_secret_references(obj)

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        _clean_secret_references(new)

    def validate(self, obj: Obj) -> list[FieldError]:
        return validation.validate_service_account(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_service_account_update(new, old)


_STRATEGY: Final = ServiceAccountStrategy()

COLUMNS: Final = (
    printers.NAME,
    Column("Secrets", "string", ("io.k8s.api.core.v1.ServiceAccount", "secrets")),
    printers.AGE,
)


def _row(service_account: Obj, now: datetime) -> Row:
    metadata: Obj = service_account.get("metadata") or {}
    return Row([metadata.get("name", ""), len(service_account.get("secrets") or []),
                since(metadata.get("creationTimestamp"), now)])


PRINTER: Final = Printer(COLUMNS, _row)

RESOURCE: Final = Resource(
    info=kinds.SERVICE_ACCOUNTS,
    strategy=_STRATEGY,
    subresources={"token": TokenREST()},
    printer=PRINTER,
)
