"""APIServices: an API group-version served elsewhere, where its backend is, and its Available condition.

An APIService (``apiregistration.k8s.io/v1``, named ``<version>.<group>``)
either has no ``spec.service`` (a *local* one: the APIServer serves the
group itself, always available) or names a Service whose backend serves the
group-version. :func:`resolve_backend` finds it as kube-aggregator does:

- an ``ExternalName`` Service is ``<externalName>:<spec.service.port>``
  (``proxy.ResolveCluster``); metrics-server registers itself so
  (:mod:`metrics_server.register`);
- any other Service is reached through its Endpoints, as kube-aggregator does
  with ``--enable-aggregator-routing`` (kubesim's only way: there is no
  kube-proxy to route a ClusterIP): the Service port ``spec.service.port``
  (default 443) names, and a ready address of the Endpoints for that port.

When one is missing, the reasons and messages are kube-aggregator's
(``ServiceNotFound``, ``ServicePortError``, ``EndpointsNotFound``,
``MissingEndpoints``).

kubesim has no TLS: the backend is spoken to over plain HTTP, and
``insecureSkipTLSVerify`` and ``caBundle`` are accepted and unused.

Pure functions over wire JSON; :class:`Backend` is an immutable value.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from machinery.api.meta import now_time

#: The condition every APIService's status carries.
AVAILABLE: Final = "Available"
LOCAL_MESSAGE: Final = "Local APIServices are always available"


@dataclass(frozen=True, slots=True)
class Backend:
    """One APIService as the aggregation layer serves it, from its last check."""

    name: str
    group: str
    version: str
    #: No ``spec.service``: the APIServer serves the group-version itself.
    local: bool
    #: The backend's base URL; ``None`` for a local APIService or an unresolved Service.
    url: str | None
    available: bool
    group_priority: int = 0
    version_priority: int = 0
    #: The backend's APIResourceList, from the last check that passed (for aggregated discovery).
    resources: Mapping[str, Any] | None = None


class Unavailable(Exception):
    """Why an APIService is not available: its condition's reason and message."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


#: Looks up an object by (namespace, name): the watch cache of Services or of Endpoints.
Lookup = Callable[[str, str], Mapping[str, Any] | None]


def resolve_backend(spec: Mapping[str, Any], services: Lookup, endpoints: Lookup) -> str:
    """The base URL of the APIService's backend (``spec.service`` given), or :class:`Unavailable`."""
    ref = spec.get("service") or {}
    namespace, name = str(ref.get("namespace") or ""), str(ref.get("name") or "")
    port = int(ref.get("port") or 443)
    service = services(namespace, name)
    if service is None:
        raise Unavailable("ServiceNotFound", f'service/{name} in "{namespace}" is not present')
    service_spec = service.get("spec") or {}
    if service_spec.get("type") == "ExternalName":
        return _url(str(service_spec.get("externalName") or "").removesuffix("."), port)
    service_port = next((p for p in (service.get("spec") or {}).get("ports") or () if p.get("port") == port), None)
    if service_port is None:
        raise Unavailable("ServicePortError", f'service/{name} in "{namespace}" is not listening on port {port}')
    found = endpoints(namespace, name)
    if found is None:
        raise Unavailable("EndpointsNotFound", f'cannot find endpoints for service/{name} in "{namespace}"')
    port_name = service_port.get("name") or ""
    for subset in found.get("subsets") or ():
        number = next((p.get("port") for p in subset.get("ports") or () if (p.get("name") or "") == port_name), None)
        addresses = [a.get("ip") for a in subset.get("addresses") or () if a.get("ip")]
        if number and addresses:
            return _url(addresses[0], int(number))
    raise Unavailable("MissingEndpoints",
                      f'endpoints for service/{name} in "{namespace}" have no addresses with port name "{port_name}"')


def _url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def available_condition(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    return next((c for c in (obj.get("status") or {}).get("conditions") or () if c.get("type") == AVAILABLE), None)


def with_condition(obj: dict[str, Any], available: bool, reason: str, message: str) -> dict[str, Any]:
    """``obj`` with its Available condition set (the transition time kept unless the status changes)."""
    status = "True" if available else "False"
    old = available_condition(obj)
    transition = old.get("lastTransitionTime") if old and old.get("status") == status else None
    condition = {"type": AVAILABLE, "status": status, "lastTransitionTime": transition or now_time(),
                 "reason": reason, "message": message}
    conditions = [c for c in (obj.get("status") or {}).get("conditions") or () if c.get("type") != AVAILABLE]
    obj.setdefault("status", {})["conditions"] = [*conditions, condition]
    return obj


def condition_differs(obj: Mapping[str, Any], available: bool, reason: str, message: str) -> bool:
    old = available_condition(obj)
    return old is None or (old.get("status"), old.get("reason"), old.get("message")) != \
        ("True" if available else "False", reason, message)
