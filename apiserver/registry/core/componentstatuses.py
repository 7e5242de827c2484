"""core/v1 ComponentStatuses: the health of etcd, the scheduler and the controller-manager, never stored.

Deprecated since Kubernetes 1.19 but still served (``kubectl get cs``). etcd's
health is the APIServer's own probe of it; the scheduler's and the
controller-manager's are whether their leader election Lease in
``kube-system`` is held and renewed within its duration, which is what "the
component is running and working" means for a component kubesim cannot
reach on a health port of its own.

As kube-apiserver answers (``pkg/registry/core/componentstatus``):

- one ``Healthy`` condition per component; a component that does not answer
  its health check is ``False`` with the probe's text in ``message`` and no
  ``error`` (the HTTP prober reports a refused connection as a failed probe),
  etcd failing its check is ``False`` with the error in ``error``;
- a list honours label and field selectors (``metadata.name``), which match
  on objects that have no labels;
- a GET of a name it does not know is a 404 NotFound. kube-apiserver answers
  a 500 without a reason there (``Component not found: NAME``, a plain Go
  error); kubesim keeps its rule that no answer is a 500 while etcd is up;
- the Table prints ``Unknown`` when there is no ``Healthy`` condition.
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any, Final

from starlette.responses import Response

from apiserver import errors, printers
from apiserver.endpoints.responses import json_response, wants_table
from apiserver.printers import Column, Printer, Row
from apiserver.registry.resource import Resource
from machinery.api import kinds, meta
from machinery.api.fields import FieldSelector
from machinery.api.labels import Selector, SelectorError

if TYPE_CHECKING:
    from apiserver.endpoints.request import Call

Obj = dict[str, Any]

_WARNING: Final = '299 - "v1 ComponentStatus is deprecated in v1.19+"'
#: The components kube-apiserver reports, by name; the Leases that say whether they run.
_LEASED: Final = {"scheduler": "kube-scheduler", "controller-manager": "kube-controller-manager"}


def _lease_health(call: Call, lease_name: str) -> tuple[bool, str]:
    cache = call.server.store(kinds.LEASES).cache
    entry = cache.get(kinds.LEASES.etcd_key("kube-system", lease_name))
    if entry is None:
        return False, f"no leader: the kube-system/{lease_name} Lease does not exist"
    spec = entry.obj.get("spec") or {}
    renewed = meta.parse_time(spec.get("renewTime"))
    duration = int(spec.get("leaseDurationSeconds") or 15)
    if not spec.get("holderIdentity") or renewed is None:
        return False, f"no leader holds the kube-system/{lease_name} Lease"
    age = (meta.utcnow() - renewed).total_seconds()
    if age > duration:
        return False, f"the leader {spec['holderIdentity']} last renewed its Lease {int(age)}s ago"
    return True, "ok"


def _statuses(call: Call) -> list[Obj]:
    checks: list[tuple[str, bool, str]] = []
    for name, lease in _LEASED.items():
        checks.append((name, *_lease_health(call, lease)))
    etcd_ok = call.server.etcd_ok
    checks.append(("etcd-0", etcd_ok, "ok" if etcd_ok else "etcd is unreachable"))
    out = []
    for name, ok, message in checks:
        condition: Obj = {"type": "Healthy", "status": "True" if ok else "False"}
        if ok or name in _LEASED:
            condition["message"] = message
        else:
            condition["error"] = message
        out.append({"kind": "ComponentStatus", "apiVersion": "v1",
                    "metadata": {"name": name, "creationTimestamp": None}, "conditions": [condition]})
    return out


def _row(obj: Obj, _now: datetime.datetime) -> Row:
    status, message, error = "Unknown", "", ""
    for condition in obj.get("conditions") or ():
        if isinstance(condition, dict) and condition.get("type") == "Healthy":
            status = "Healthy" if condition.get("status") == "True" else "Unhealthy"
            message, error = condition.get("message", ""), condition.get("error", "")
            break
    return Row([obj["metadata"]["name"], status, message, error])


def _selected(call: Call, items: list[Obj]) -> list[Obj]:
    """The items a list's label and field selectors keep (only ``metadata.name`` is a field)."""
    try:
        label = Selector.parse(call.query.get("labelSelector") or "")
    except SelectorError as e:
        raise errors.bad_request(f"unable to parse requirement: {e}") from e
    except ValueError as e:
        raise errors.bad_request(str(e)) from e
    try:
        field = FieldSelector.parse(call.query.get("fieldSelector") or "")
    except (SelectorError, ValueError) as e:
        raise errors.bad_request(f"invalid field selector: {e}") from e
    return [item for item in items
            if label.matches({}) and field.matches({"metadata.name": item["metadata"]["name"]})]


PRINTER: Final = Printer((
    printers.NAME,
    Column("Status", "string", "Status of the component conditions"),
    Column("Message", "string", "Message of the component conditions"),
    Column("Error", "string", "Error of the component conditions"),
), _row)


class ComponentStatusREST:
    async def list(self, call: Call) -> Response:
        items = _selected(call, _statuses(call))
        if wants_table(call):
            body = printers.table_for(PRINTER, items, include_object=call.query.get("includeObject") or "Metadata")
        else:
            body = {"kind": "ComponentStatusList", "apiVersion": "v1", "metadata": {}, "items": items}
        return json_response(body, headers={"Warning": _WARNING})

    async def get(self, call: Call) -> Response:
        for item in _statuses(call):
            if item["metadata"]["name"] == call.name:
                if wants_table(call):
                    body = printers.table_for(PRINTER, [item],
                                              include_object=call.query.get("includeObject") or "Metadata")
                    return json_response(body, headers={"Warning": _WARNING})
                return json_response(item, headers={"Warning": _WARNING})
        raise errors.not_found(call.info, call.name or "")


RESOURCE: Final = Resource(info=kinds.builtin("", "v1", "componentstatuses"), rest=ComponentStatusREST(),
                           printer=PRINTER)
