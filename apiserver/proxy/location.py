"""Where a connect request goes: kube-apiserver's stream locations and the kubelet's connection info.

``pkg/registry/core/pod/strategy.go`` builds the kubelet URL of an exec,
attach or port-forward from the Pod and its node, checking on the way, with
these messages (all 400 BadRequest unless said):

- the Pod must exist (``pods "x" not found``, 404);
- a container given must be one of the Pod's (``container c is not valid for
  pod x``); none given is fine with one container, else ``a container name
  must be specified for pod x, choose one of: [a b]``;
- the Pod must be bound (``pod x does not have a host assigned``);
- the node must exist and expose a kubelet (``nodes "n" not found``, 404).

The kubelet's query uses its own names: ``input``, ``output``, ``error`` and
``tty`` set to ``1``, ``command`` repeated. PodExecOptions and
PodAttachOptions default ``stdout`` and ``stderr`` to true.

Pure functions over wire JSON, plus reads of the Pod (store) and the Node
(watch cache).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import quote, urlencode

from apiserver import errors
from machinery.api import kinds

if TYPE_CHECKING:
    from apiserver.server import APIServer

_TRUE: Final = ("1", "t", "T", "true", "TRUE", "True")
_FALSE: Final = ("0", "f", "F", "false", "FALSE", "False")


@dataclass(frozen=True, slots=True)
class Location:
    """The kubelet (host, port) and the path with query to ask it for."""

    host: str
    port: int
    target: str
    node: str


def parse_bool(query: Mapping[str, list[str]], name: str, default: bool) -> bool:
    """A boolean query parameter as Go's ``strconv.ParseBool`` reads it; bad values are a 400."""
    values = query.get(name)
    if not values:
        return default
    value = values[-1]
    if value in _TRUE:
        return True
    if value in _FALSE or value == "":
        return False
    raise errors.bad_request(f'strconv.ParseBool: parsing "{value}": invalid syntax')


def parse_ports(values: list[str]) -> list[int]:
    """PodPortForwardOptions' ``ports``: comma-separated or repeated integers (``80,443``)."""
    ports: list[int] = []
    for value in values:
        for text in value.split(","):
            try:
                port = int(text)
            except ValueError:
                raise errors.bad_request(f'strconv.ParseInt: parsing "{text}": invalid syntax') from None
            if not 0 < port < 65536:
                raise errors.bad_request(f"port {port} is out of range: must be between 1 and 65535")
            ports.append(port)
    return ports


def container_names(pod: Mapping[str, Any]) -> list[str]:
    """Every container of the Pod in podutil.VisitContainers' order: init, regular, ephemeral."""
    spec = pod.get("spec") or {}
    return [str(c.get("name")) for key in ("initContainers", "containers", "ephemeralContainers")
            for c in spec.get(key) or ()]


def validate_container(pod: Mapping[str, Any], container: str) -> str:
    """kube-apiserver's ``validateContainer``: the container to use, or a 400."""
    name = (pod.get("metadata") or {}).get("name", "")
    containers = (pod.get("spec") or {}).get("containers") or []
    if not container:
        if len(containers) == 1:
            return str(containers[0].get("name"))
        if not containers:
            raise errors.bad_request(f"a container name must be specified for pod {name}")
        raise errors.bad_request(f"a container name must be specified for pod {name}, choose one of: "
                                 f"[{' '.join(container_names(pod))}]")
    if container not in container_names(pod):
        raise errors.bad_request(f"container {container} is not valid for pod {name}")
    return container


def kubelet_endpoint(server: APIServer, node_name: str) -> tuple[str, int]:
    """The node's kubelet: its InternalIP (else another address) and ``daemonEndpoints`` port."""
    entry = server.store(kinds.NODES).cache.get(kinds.NODES.etcd_key(None, node_name))
    if entry is None:
        raise errors.not_found(kinds.NODES, node_name)
    status = entry.obj.get("status") or {}
    port = ((status.get("daemonEndpoints") or {}).get("kubeletEndpoint") or {}).get("Port")
    addresses = status.get("addresses") or []
    address = next((a.get("address") for t in ("InternalIP", "ExternalIP", "Hostname")
                    for a in addresses if a.get("type") == t and a.get("address")), None)
    if not port or not address:
        raise errors.bad_request(f"node {node_name} has no kubelet endpoint")
    return str(address), int(port)


async def read_pod(server: APIServer, namespace: str, name: str) -> dict[str, Any]:
    entry = await server.store(kinds.PODS).get(namespace, name)
    return entry.obj


def _node_of(pod: Mapping[str, Any]) -> str:
    node = (pod.get("spec") or {}).get("nodeName")
    if not node:
        name = (pod.get("metadata") or {}).get("name", "")
        raise errors.bad_request(f"pod {name} does not have a host assigned")
    return str(node)


async def stream_location(server: APIServer, subresource: str, namespace: str, name: str,
                          query: Mapping[str, list[str]]) -> Location:
    """The kubelet location of ``pods/{name}/exec``, ``attach`` or ``portforward``."""
    pod = await read_pod(server, namespace, name)
    if subresource == "portforward":
        node = _node_of(pod)
        host, port = kubelet_endpoint(server, node)
        params: list[tuple[str, str]] = [("port", str(p)) for p in parse_ports(query.get("ports", []))]
        target = f"/portForward/{quote(namespace)}/{quote(name)}"
        return Location(host, port, target + (f"?{urlencode(params)}" if params else ""), node)
    container = validate_container(pod, (query.get("container") or [""])[-1])
    node = _node_of(pod)
    host, port = kubelet_endpoint(server, node)
    params = []
    if subresource == "exec":
        params.extend(("command", c) for c in query.get("command", []))
    for option, kubelet_name, default in (("stdin", "input", False), ("stdout", "output", True),
                                          ("stderr", "error", True), ("tty", "tty", False)):
        if parse_bool(query, option, default):
            params.append((kubelet_name, "1"))
    target = f"/{subresource}/{quote(namespace)}/{quote(name)}/{quote(container)}"
    return Location(host, port, target + (f"?{urlencode(params)}" if params else ""), node)


async def node_proxy_location(server: APIServer, node_spec: str, path: str, query_string: str) -> Location:
    """``nodes/{name}/proxy/{path}``: the kubelet's own paths (``/metrics/resource``, ``/stats/summary``...).

    One kubelet_sim process serves many nodes on one port, so the path is made node-scoped
    (``/nodes/{name}/{path}``), which kubelet_sim serves for every node it hosts.
    """
    node = node_spec.split(":")[1] if node_spec.count(":") == 2 else node_spec.split(":")[0]
    host, port = kubelet_endpoint(server, node)
    target = f"/nodes/{quote(node)}/{path.lstrip('/')}"
    return Location(host, port, target + (f"?{query_string}" if query_string else ""), node)
