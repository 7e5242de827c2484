"""apiregistration.k8s.io/v1 APIServices: stored, defaulted and validated, with kube-aggregator's printer.

The aggregation proxy and the ``Available`` condition it keeps are not this
module's (:mod:`apiserver.aggregator`); ``/status`` is where the availability
controller writes them, through :data:`STATUS_STRATEGY`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Final

from apiserver import printers
from apiserver.printers import Column, Printer, Row, since
from apiserver.registry.generic import StatusREST
from apiserver.registry.resource import Resource
from apiserver.registry.strategy import Obj, StatusStrategy, Strategy
from apiserver.validation import apiregistration as validation
from apiserver.validation.field import FieldError
from machinery.api import kinds


class APIServiceStrategy(Strategy):
    def default(self, obj: Obj) -> None:
        validation.default_api_service(obj)

    def validate(self, obj: Obj) -> list[FieldError]:
        return validation.validate_api_service(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_api_service_update(new, old)


class APIServiceStatusStrategy(StatusStrategy):
    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_api_service_status_update(new, old)


_STRATEGY: Final = APIServiceStrategy()
STATUS_STRATEGY: Final = APIServiceStatusStrategy(_STRATEGY)

COLUMNS: Final = (
    printers.NAME,
    Column("Service", "string", "The reference to the service that hosts this API endpoint."),
    Column("Available", "string", "Whether this service is available."),
    printers.AGE,
)


def available(api_service: Obj) -> str:
    for condition in (api_service.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "Available":
            status = str(condition.get("status") or "")
            if status != "True" and condition.get("reason"):
                return f"{status} ({condition['reason']})"
            return status
    return "Unknown"


def _row(api_service: Obj, now: datetime) -> Row:
    metadata: Obj = api_service.get("metadata") or {}
    service = (api_service.get("spec") or {}).get("service")
    where = f"{service.get('namespace', '')}/{service.get('name', '')}" if service else "Local"
    return Row([metadata.get("name", ""), where, available(api_service), since(metadata.get("creationTimestamp"), now)])


PRINTER: Final = Printer(COLUMNS, _row)

RESOURCE: Final = Resource(
    info=kinds.API_SERVICES,
    strategy=_STRATEGY,
    subresources={"status": StatusREST(STATUS_STRATEGY)},
    printer=PRINTER,
)
