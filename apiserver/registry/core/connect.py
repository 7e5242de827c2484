"""The connect subresources: pods' exec, attach, portforward and proxy; nodes' and services' proxy.

kube-apiserver's REST objects for them (``pkg/registry/core/pod/rest/subresources.go``,
``node/rest/proxy.go``, ``service/proxy.go``) each find where the request goes
and hand it to a proxy; none runs anything itself:

- :class:`ExecREST`, :class:`AttachREST`, :class:`PortForwardREST` find the
  Pod's kubelet (:func:`~apiserver.proxy.location.stream_location`, with
  kube-apiserver's checks and messages). Their connection is upgraded (SPDY/3.1
  or WebSocket) and relayed raw to the kubelet: :mod:`apiserver.proxy.connect`
  takes such requests' connections from the HTTP server and sends them
  through the handler chain like any request (authentication, audit and
  authorization see them), with the connection in the scope
  (:mod:`apiserver.proxy.hijack`); :meth:`UpgradeREST.connect` relays it once
  the location checks pass. A request without an upgrade gets kube-apiserver's
  ``400 Upgrade request required`` once they pass;
- :class:`PodProxyREST` sends ``pods/{name}/proxy/{path}`` to the Pod's port
  through its kubelet (:mod:`apiserver.proxy.podproxy`);
- :class:`NodeProxyREST` sends ``nodes/{name}/proxy/{path}`` to the node's
  kubelet, node-scoped (one kubelet_sim serves many nodes);
- :class:`ServiceProxyREST` picks a ready address of the Service's Endpoints
  for the port asked for (``name``, ``name:port`` or ``scheme:name:port``, the
  port by name or number) and proxies there: to the Pod the address names
  (``targetRef``) through its kubelet, else to the address itself.

Pure request handling; the I/O is the proxies'.
"""

from __future__ import annotations

import logging
import random
from typing import TYPE_CHECKING, Any, ClassVar, Final
from urllib.parse import parse_qs

from starlette.responses import Response

from apiserver import errors
from apiserver.proxy.hijack import HIJACKED, upgraded_connection
from apiserver.proxy.location import Location, node_proxy_location, stream_location
from apiserver.proxy.podproxy import pod_proxy, split_scheme_name_port
from apiserver.proxy.relay import relay_http
from apiserver.registry.resource import Subresource
from machinery.api import kinds

if TYPE_CHECKING:
    from collections.abc import Mapping

    from apiserver.endpoints.request import Call
    from apiserver.server import APIServer

log = logging.getLogger("apiserver.proxy")

#: The methods kube-apiserver's connecters for exec, attach and portforward accept.
_UPGRADE_METHODS: Final = ("GET", "POST")


def proxy_path(call: Call) -> str:
    """What follows ``.../{name}/proxy`` in the request's path, without its leading slash."""
    path: str = call.request.scope["path"]
    _, _, tail = path.partition(f"/{call.name}/{call.subresource}")
    return tail.lstrip("/")


class UpgradeREST(Subresource):
    """A subresource whose connection is upgraded and relayed to the Pod's kubelet."""

    connects = True
    #: The kubelet endpoint it names: exec, attach or portforward.
    subresource: ClassVar[str] = ""

    async def location(self, server: APIServer, namespace: str, name: str,
                       query: Mapping[str, list[str]]) -> Location:
        return await stream_location(server, self.subresource, namespace, name, query)

    async def connect(self, call: Call) -> Response:
        if call.request.method not in _UPGRADE_METHODS:
            raise errors.method_not_allowed()
        assert call.name is not None
        query = parse_qs(call.request.url.query, keep_blank_values=True)
        location = await self.location(call.server, call.namespace or "", call.name, query)
        connection = upgraded_connection(call.request.scope)
        if connection is None:
            raise errors.bad_request("Upgrade request required")
        log.info("%s %s/%s: relaying to the kubelet of %s (%s:%d)", self.subresource, call.namespace, call.name,
                 location.node, location.host, location.port)
        await connection.relay(location, call.server.kubelet.tls)
        return HIJACKED


class ExecREST(UpgradeREST):
    subresource = "exec"


class AttachREST(UpgradeREST):
    subresource = "attach"


class PortForwardREST(UpgradeREST):
    subresource = "portforward"


class PodProxyREST(Subresource):
    connects = True

    async def connect(self, call: Call) -> Response:
        assert call.name is not None
        return await pod_proxy(call.request, call.server, call.namespace or "", call.name, proxy_path(call))


class NodeProxyREST(Subresource):
    connects = True

    async def connect(self, call: Call) -> Response:
        assert call.name is not None
        location = await node_proxy_location(call.server, call.name, proxy_path(call), call.request.url.query)
        kubelet = call.server.kubelet
        url = kubelet.url(location.host, location.port, location.target)
        return await relay_http(call.request, kubelet.http, url)


def _service_port(service: Mapping[str, Any], port: str) -> Mapping[str, Any]:
    ports = (service.get("spec") or {}).get("ports") or []
    name = (service.get("metadata") or {}).get("name", "")
    for candidate in ports:
        if port == "" and len(ports) == 1:
            return candidate  # type: ignore[no-any-return]
        if candidate.get("name", "") == port or str(candidate.get("port")) == port:
            return candidate  # type: ignore[no-any-return]
    raise errors.service_unavailable(f'no service port "{port}" found for service "{name}"')


def endpoint_for(endpoints: Mapping[str, Any] | None, port_name: str,
                 service: str) -> tuple[Mapping[str, Any], int]:
    """A ready address of ``endpoints`` serving the port named ``port_name``, and that port's number."""
    choices: list[tuple[Mapping[str, Any], int]] = []
    for subset in (endpoints or {}).get("subsets") or ():
        for port in subset.get("ports") or ():
            if port.get("name", "") == port_name and port.get("port"):
                choices.extend((address, int(port["port"])) for address in subset.get("addresses") or ())
    if not choices:
        raise errors.service_unavailable(f'no endpoints available for service "{service}"')
    return random.choice(choices)


class ServiceProxyREST(Subresource):
    connects = True

    async def connect(self, call: Call) -> Response:
        assert call.name is not None
        namespace = call.namespace or ""
        scheme, name, port = split_scheme_name_port(call.name)
        if scheme == "https":
            raise errors.bad_request("kubesim cannot proxy to a Service over https")
        service = (await call.server.store(kinds.SERVICES).get(namespace, name)).obj
        service_port = _service_port(service, port)
        endpoints = call.server.store(kinds.ENDPOINTS).cache.get(kinds.ENDPOINTS.etcd_key(namespace, name))
        address, number = endpoint_for(endpoints.obj if endpoints else None, service_port.get("name", ""), name)
        target = address.get("targetRef") or {}
        path = proxy_path(call)
        if target.get("kind") == "Pod" and target.get("name"):
            return await pod_proxy(call.request, call.server, target.get("namespace") or namespace,
                                   f"{target['name']}:{number}", path)
        query = call.request.url.query
        url = f"http://{address.get('ip')}:{number}/{path}" + (f"?{query}" if query else "")
        return await relay_http(call.request, call.server.http, url)
