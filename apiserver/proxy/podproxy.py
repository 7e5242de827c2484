"""``pods/{name}/proxy/{path}``: HTTP to a Pod's port, reached through its node's kubelet.

kube-apiserver's ``ProxyREST`` sends the request to ``<podIP>:<port>``
directly (``name`` may be ``pod``, ``pod:port`` or ``scheme:pod:port``; without
a port, the first container port, else the IP alone). Simulated Pod IPs are
not routable, and only the kubelet can reach a Pod's port (its runtime's
listener, or the process's socket), so kubesim's APIServer opens a
port-forward to the node's kubelet (SPDY, as kubectl would) and sends the
request through it, unchanged but for its path and the hop-by-hop headers.

Failures answer as kube-apiserver's proxy does: ``503`` with ``Error: '...'
Trying to reach: 'http://10.0.1.5:80/'``.

Concurrency: one SPDY connection per request, closed when the answer has
been relayed (or the client left).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import quote

from fastapi import Request
from fastapi.responses import Response, StreamingResponse

from apiserver import errors
from apiserver.proxy.location import kubelet_endpoint, read_pod
from machinery.httpstream.client import SpdyPortForwarder
from machinery.httpstream.http1 import HeadError, read_response_head

if TYPE_CHECKING:
    from apiserver.server import APIServer

_HOP_BY_HOP: Final = frozenset({"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te", "trailer",
                                "upgrade", "host", "authorization", "content-length"})


def split_scheme_name_port(spec: str) -> tuple[str, str, str]:
    """utilnet's ``SplitSchemeNamePort``: ``name``, ``name:port`` or ``scheme:name:port``."""
    parts = spec.split(":")
    if len(parts) == 1 and parts[0]:
        return "", parts[0], ""
    if len(parts) == 2 and parts[0]:
        return "", parts[0], parts[1]
    if len(parts) == 3 and parts[0] in ("http", "https") and parts[1]:
        return parts[0], parts[1], parts[2]
    raise errors.bad_request(f'invalid pod request "{spec}"')


def _first_port(pod: Mapping[str, Any]) -> str:
    for container in (pod.get("spec") or {}).get("containers") or ():
        for port in container.get("ports") or ():
            return str(port.get("containerPort"))
    return ""


def _unreachable(err: str, target: str) -> Response:
    return Response(f"Error: '{err}'\nTrying to reach: '{target}'", status_code=503, media_type="text/plain")


async def pod_proxy(request: Request, server: APIServer, namespace: str, spec: str, path: str) -> Response:
    scheme, name, port_text = split_scheme_name_port(spec)
    pod = await read_pod(server, namespace, name)
    if scheme == "https":
        raise errors.bad_request("kubesim cannot proxy to a Pod over https")
    port_text = port_text or _first_port(pod) or "80"
    if not port_text.isdigit():
        named = next((str(p["containerPort"]) for c in (pod.get("spec") or {}).get("containers") or ()
                      for p in c.get("ports") or () if p.get("name") == port_text), None)
        if named is None:
            raise errors.bad_request(f'no such port "{port_text}" on pod {name}')
        port_text = named
    pod_ip = (pod.get("status") or {}).get("podIP") or ""
    if not pod_ip:
        raise errors.bad_request(f'address not allowed: pod {name} has no IP')
    node = (pod.get("spec") or {}).get("nodeName")
    if not node:
        raise errors.bad_request(f"pod {name} does not have a host assigned")
    host, kubelet_port = kubelet_endpoint(server, node)
    query = request.url.query
    target = f"/{path}" + (f"?{query}" if query else "")
    trying = f"http://{pod_ip}:{port_text}{target}"
    try:
        forwarder = await SpdyPortForwarder.connect(
            server.kubelet.url(host, kubelet_port, f"/portForward/{quote(namespace)}/{quote(name)}"), timeout=5.0,
            tls=server.kubelet.tls)
    except Exception as err:  # noqa: BLE001 - any failure to reach the kubelet is the same answer
        return _unreachable(f"dial tcp {host}:{kubelet_port}: {err}", trying)
    try:
        data, error = await forwarder.open(int(port_text))
        body = await request.body()
        headers = [f"{k}: {v}" for k, v in request.headers.items() if k.lower() not in _HOP_BY_HOP]
        head = "\r\n".join([f"{request.method} {target} HTTP/1.1", f"Host: {pod_ip}:{port_text}", *headers,
                            f"Content-Length: {len(body)}", "Connection: close"]) + "\r\n\r\n"
        await data.write(head.encode() + body)
        reader = asyncio.StreamReader(limit=1 << 20)
        failure: list[bytes] = []

        async def pump() -> None:
            while chunk := await data.read():
                reader.feed_data(chunk)
            reader.feed_eof()

        async def errors_() -> None:
            if message := await error.read_all():
                failure.append(message)
                reader.feed_eof()

        tasks = [asyncio.create_task(pump(), name="pod-proxy-data"),
                 asyncio.create_task(errors_(), name="pod-proxy-error")]
        try:
            response = await read_response_head(reader, timeout=30.0)
        except (HeadError, TimeoutError):
            for task in tasks:
                task.cancel()
            await forwarder.close()
            # The kubelet's error stream says why (containerd's "connection refused", usually).
            reason = f"dial tcp {pod_ip}:{port_text}: connect: connection refused" if failure else "EOF"
            return _unreachable(reason, trying)
    except Exception:
        await forwarder.close()
        raise

    async def relay() -> AsyncIterator[bytes]:
        try:
            while chunk := await reader.read(64 * 1024):
                yield chunk
        finally:
            for task in tasks:
                task.cancel()
            with contextlib.suppress(Exception):
                await forwarder.close()

    passed = {k: v for k, v in response.headers.items if k.lower() not in _HOP_BY_HOP}
    return StreamingResponse(relay(), status_code=response.code, headers=passed)
