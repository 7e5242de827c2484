"""The aggregation layer as an ASGI layer in front of the APIServer (where kube-aggregator sits in its chain).

For each APIService with a ``spec.service`` (its backend elsewhere), from the
availability controller's last tick (:mod:`apiserver.aggregator.availability`):

- ``/apis/<group>/<version>/...`` is proxied to its backend (method, path,
  query, body and headers, less hop-by-hop ones and the client's
  credentials), its answer streamed back as it comes; a backend that is not
  available answers ``503 service unavailable``, as kube-aggregator does;
- ``/apis/<group>`` is answered here (an APIGroup of the group's versions);
- ``/apis`` (discovery, legacy and aggregated) is the APIServer's document
  with the aggregated groups added: every such APIService's group in the
  APIGroupList, and in the aggregated document those whose backend has
  answered discovery, ``Stale`` once it stops answering. The aggregated
  document's ETag is computed over the merged bytes.

Local APIServices (no ``spec.service``) and everything else pass through.

Concurrency: requests run concurrently; they read the controller's backends,
which it replaces whole after each tick, so a reader sees one tick or the next.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

import httpx
import orjson
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from apiserver import errors
from apiserver.aggregator.apiservice import Backend
from apiserver.aggregator.availability import AvailabilityController
from apiserver.errors import APIError

if TYPE_CHECKING:
    from apiserver.server import APIServer

_HOP_BY_HOP: Final = frozenset({b"connection", b"keep-alive", b"proxy-connection", b"transfer-encoding", b"te",
                                b"trailer", b"upgrade", b"host", b"authorization", b"content-length"})


def _group_version(group: str, version: str) -> dict[str, str]:
    return {"groupVersion": f"{group}/{version}", "version": version}


class AggregationLayer:
    def __init__(self, app: ASGIApp, server: APIServer, *, controller: AvailabilityController | None = None) -> None:
        self.app = app
        self.server = server
        self.controller = controller or AvailabilityController(server)
        self._http: httpx.AsyncClient | None = None
        self._task: asyncio.Task[None] | None = None

    def _remote(self) -> list[Backend]:
        """The APIServices served elsewhere, by group priority then version priority (kube-aggregator's order)."""
        remote = [b for b in self.controller.backends.values() if not b.local]
        remote.sort(key=lambda b: (-b.group_priority, b.group, -b.version_priority, b.version))
        return remote

    # --- ASGI -------------------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, self._lifespan(receive), send)
            return
        if scope["type"] != "http" or not self.controller.backends:
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        parts = [p for p in path.split("/") if p]
        try:
            if parts == ["apis"] and scope["method"] == "GET":
                await self._merged_discovery(scope, receive, send)
                return
            if len(parts) >= 2 and parts[0] == "apis":
                remote = [b for b in self._remote() if b.group == parts[1]]
                if len(parts) == 2 and remote and not any(self.server.registry.serves(b.group, b.version)
                                                          for b in remote):
                    await self._group(scope, send, parts[1], remote)
                    return
                backend = next((b for b in remote if b.version == parts[2]), None) if len(parts) >= 3 else None
                if backend is not None:
                    await self._aggregated(scope, receive, send, backend)
                    return
        except APIError as err:
            await _send_json(send, err.code, err.status())
            return
        await self.app(scope, receive, send)

    def _lifespan(self, receive: Receive) -> Receive:
        async def wrapped() -> Message:
            message = await receive()
            if message["type"] == "lifespan.startup" and self._task is None:
                self._http = httpx.AsyncClient(timeout=httpx.Timeout(60.0, connect=5.0))
                self._task = asyncio.create_task(self.controller.run(self._http), name="aggregator-availability")
            elif message["type"] == "lifespan.shutdown":
                await self.close()
            return message
        return wrapped

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    # --- proxying ---------------------------------------------------------------------------------

    async def _group(self, scope: Scope, send: Send, group: str, remote: list[Backend]) -> None:
        if scope["method"] != "GET":
            raise errors.method_not_allowed()
        versions = [_group_version(group, b.version) for b in remote]
        await _send_json(send, 200, {"kind": "APIGroup", "apiVersion": "v1", "name": group,
                                     "versions": versions, "preferredVersion": versions[0]})

    async def _aggregated(self, scope: Scope, receive: Receive, send: Send, backend: Backend) -> None:
        if not backend.available or backend.url is None or self._http is None:
            raise errors.service_unavailable("service unavailable")
        http = self._http
        body = bytearray()
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        query = scope.get("query_string", b"").decode("latin-1")
        raw_path = (scope.get("raw_path") or scope["path"].encode()).decode("latin-1")
        url = f"{backend.url}{raw_path}" + (f"?{query}" if query else "")
        headers = [(k, v) for k, v in scope["headers"] if k.lower() not in _HOP_BY_HOP]
        request = http.build_request(scope["method"], url, headers=headers, content=bytes(body) or None)
        try:
            upstream = await http.send(request, stream=True)
        except httpx.HTTPError as err:
            raise errors.service_unavailable(f"error trying to reach service: {err}") from err
        try:
            passed = [(k.lower().encode(), v.encode()) for k, v in upstream.headers.items()
                      if k.lower().encode() not in _HOP_BY_HOP]
            await send({"type": "http.response.start", "status": upstream.status_code, "headers": passed})
            async for chunk in upstream.aiter_raw():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            await upstream.aclose()

    # --- discovery --------------------------------------------------------------------------------

    def _legacy_groups(self, present: set[str]) -> list[dict[str, Any]]:
        by_group: dict[str, list[Backend]] = {}
        for backend in self._remote():
            if backend.group not in present:
                by_group.setdefault(backend.group, []).append(backend)
        groups = []
        for group, backends in by_group.items():
            versions = [_group_version(group, b.version) for b in backends]
            groups.append({"name": group, "versions": versions, "preferredVersion": versions[0]})
        return groups

    def _aggregated_groups(self, present: set[str]) -> list[dict[str, Any]]:
        by_group: dict[str, list[dict[str, Any]]] = {}
        for backend in self._remote():
            if backend.group in present or backend.resources is None:
                continue
            by_group.setdefault(backend.group, []).append(
                {"version": backend.version,
                 "resources": _aggregated_resources(backend.resources, backend.group, backend.version),
                 "freshness": "Current" if backend.available else "Stale"})
        return [{"metadata": {"name": group, "creationTimestamp": None}, "versions": versions}
                for group, versions in by_group.items()]

    async def _merged_discovery(self, scope: Scope, receive: Receive, send: Send) -> None:
        if_none_match = next((v.decode() for k, v in scope["headers"] if k == b"if-none-match"), None)
        inner = dict(scope, headers=[(k, v) for k, v in scope["headers"] if k != b"if-none-match"])
        status, headers, body = await _capture(self.app, inner, receive)
        content_type = next((v.decode() for k, v in headers if k == b"content-type"), "")
        if status != 200 or not content_type.startswith("application/json"):
            await _send_raw(send, status, headers, body)
            return
        document = orjson.loads(body)
        aggregated = "as=APIGroupDiscoveryList" in content_type
        if aggregated:
            present = {str((g.get("metadata") or {}).get("name")) for g in document.get("items", [])}
            document["items"] = [*document.get("items", []), *self._aggregated_groups(present)]
        else:
            present = {str(g.get("name")) for g in document.get("groups", [])}
            document["groups"] = [*document.get("groups", []), *self._legacy_groups(present)]
        merged = orjson.dumps(document)
        kept = [(k, v) for k, v in headers if k not in (b"content-length", b"etag")]
        if aggregated:
            etag = f'"{hashlib.sha512(merged).hexdigest().upper()}"'
            kept.append((b"etag", etag.encode()))
            if if_none_match == etag:
                await _send_raw(send, 304, [(k, v) for k, v in kept if k != b"content-type"], b"")
                return
        await _send_raw(send, 200, kept, merged)


def _aggregated_resource(entry: Mapping[str, Any], group: str, version: str) -> dict[str, Any]:
    resource: dict[str, Any] = {"resource": entry["name"],
                                "responseKind": {"group": group, "version": version, "kind": entry["kind"]},
                                "scope": "Namespaced" if entry.get("namespaced") else "Cluster",
                                "singularResource": entry.get("singularName") or "", "verbs": entry.get("verbs", [])}
    for key in ("shortNames", "categories"):
        if entry.get(key):
            resource[key] = entry[key]
    return resource


def _aggregated_resources(document: Mapping[str, Any], group: str, version: str) -> list[dict[str, Any]]:
    """An APIResourceList as APIResourceDiscovery entries (subresources under their parents)."""
    resources: dict[str, dict[str, Any]] = {}
    for entry in document.get("resources") or ():
        parent, _, sub = str(entry.get("name", "")).partition("/")
        if sub:
            if parent in resources:
                resources[parent].setdefault("subresources", []).append(
                    {"subresource": sub, "verbs": entry.get("verbs", []),
                     "responseKind": {"group": group, "version": version, "kind": entry.get("kind", "")}})
            continue
        resources[parent] = _aggregated_resource(entry, group, version)
    return list(resources.values())


async def _capture(app: ASGIApp, scope: Scope, receive: Receive) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    status = 500
    headers: list[tuple[bytes, bytes]] = []
    body = bytearray()

    async def send(message: Message) -> None:
        nonlocal status, headers
        if message["type"] == "http.response.start":
            status = message["status"]
            headers = [(bytes(k).lower(), bytes(v)) for k, v in message.get("headers", [])]
        elif message["type"] == "http.response.body":
            body.extend(message.get("body", b""))

    await app(scope, receive, send)
    return status, headers, bytes(body)


async def _send_raw(send: Send, status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [*headers, (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


async def _send_json(send: Send, status: int, document: dict[str, Any]) -> None:
    await _send_raw(send, status, [(b"content-type", b"application/json")], orjson.dumps(document))
