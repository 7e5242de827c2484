"""core/v1 ResourceQuotas: ``spec.hard`` limits, ``status.hard``/``used`` written through ``/status``.

Resource names must be ones a quota can count (``pods``, ``requests.cpu``,
``count/deployments.apps`` ...), amounts non-negative (integers for counts),
and scopes must fit the limited resources; scopes are fixed at creation. The
quota controller fills the status; the Table shows ``used/hard`` per resource,
requests and limits apart, as ``kubectl get quota`` does.
"""

from __future__ import annotations

from datetime import datetime
from typing import Final

from apiserver import printers
from apiserver.printers import Column, Printer, Row, since
from apiserver.registry.generic import StatusREST
from apiserver.registry.resource import Resource
from apiserver.registry.strategy import Obj, StatusStrategy, Strategy
from apiserver.validation import core as validation
from apiserver.validation.field import FieldError
from machinery.api import kinds


class ResourceQuotaStrategy(Strategy):
    """The create and update rules of ResourceQuotas."""

    def validate(self, obj: Obj) -> list[FieldError]:
        return validation.validate_resource_quota(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_resource_quota_update(new, old)


class ResourceQuotaStatusStrategy(StatusStrategy):
    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_resource_quota_status_update(new, old)


_STRATEGY: Final = ResourceQuotaStrategy()

COLUMNS: Final = (
    printers.NAME,
    Column("Request", "string", "Request represents a minimum amount of cpu/memory that a container may consume."),
    Column("Limit", "string", "Limits control the maximum amount of cpu/memory that a container may use independent "
                              "of contention on the node."),
    printers.AGE,
)


def _row(quota: Obj, now: datetime) -> Row:
    metadata: Obj = quota.get("metadata") or {}
    status: Obj = quota.get("status") or {}
    hard, used = status.get("hard") or {}, status.get("used") or {}
    requests: list[str] = []
    limits: list[str] = []
    for resource in sorted(hard):
        column = limits if resource.split(".")[0] == "limits" and "." in resource else requests
        column.append(f"{resource}: {printers.quantity(used.get(resource, '0'))}/{printers.quantity(hard[resource])}")
    return Row([metadata.get("name", ""), ", ".join(requests), ", ".join(limits),
                since(metadata.get("creationTimestamp"), now)])


PRINTER: Final = Printer(COLUMNS, _row)

RESOURCE: Final = Resource(
    info=kinds.RESOURCE_QUOTAS,
    strategy=_STRATEGY,
    subresources={"status": StatusREST(ResourceQuotaStatusStrategy(_STRATEGY))},
    printer=PRINTER,
)
