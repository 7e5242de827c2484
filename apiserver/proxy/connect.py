"""Upgraded connect requests: taken off uvicorn raw, sent through the handler chain, relayed to the kubelet.

kube-apiserver serves ``pods/exec``, ``attach`` and ``portforward`` like any
other request (authentication, audit, authorization, the REST handler's
checks) and only then hijacks the connection and relays it to the kubelet
(``UpgradeAwareHandler``). kubesim does the same in two pieces:

- :class:`UpgradeHandoff` is the :class:`~apiserver.httpserver.Handoff` the
  APIServer's HTTP server consults for every upgrade request (SPDY/3.1 or
  WebSocket): ASGI cannot carry SPDY, so it claims the paths whose
  subresource handler is an
  :class:`~apiserver.registry.core.connect.UpgradeREST` (pods' exec, attach,
  portforward, and any resource registering one) and takes their raw
  connection. It then runs the request through the whole ASGI application
  (the same filters every request passes) with the connection in the scope's
  extensions (:mod:`apiserver.proxy.hijack`). Whatever the application
  answers (a 401, a 403, a 404, kube-apiserver's 400s) is written to the raw
  connection as an ordinary HTTP response, before any upgrade;
- the handler (:meth:`UpgradeREST.connect
  <apiserver.registry.core.connect.UpgradeREST.connect>`) finds the kubelet
  and relays the connection there
  (:meth:`~apiserver.proxy.hijack.UpgradedConnection.relay`, that is
  :func:`~apiserver.proxy.upgradeaware.proxy_upgrade`), then answers
  :data:`~apiserver.proxy.hijack.HIJACKED`, which sends nothing.

Concurrency: one task per upgraded connection (the one the HTTP server
started), for as long as the relayed connection lasts.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING, Any

import orjson
from starlette.types import ASGIApp, Message, Scope

from apiserver import errors
from apiserver.endpoints.request import Target, resolve
from apiserver.errors import APIError
from apiserver.proxy.hijack import UPGRADE_EXTENSION, UpgradedConnection
from apiserver.registry.core.connect import UpgradeREST
from machinery.httpstream.http1 import REASONS, Headers, RequestHead, ResponseHead, simple_response

if TYPE_CHECKING:
    from apiserver.server import APIServer

log = logging.getLogger("apiserver.proxy")


class _RawResponder:
    """An ASGI ``send`` that writes an HTTP/1.1 response on the raw connection, then lets it close."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self.writer = writer
        self.started = False
        self._status = 500
        self._headers: list[tuple[str, str]] = []
        self._body: list[bytes] = []

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.started = True
            self._status = int(message["status"])
            self._headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in message.get("headers") or ()]
        elif message["type"] == "http.response.body":
            self._body.append(bytes(message.get("body", b"")))
            if not message.get("more_body", False):
                await self._flush()

    async def _flush(self) -> None:
        body = b"".join(self._body)
        headers = Headers([(k, v) for k, v in self._headers if k.lower() not in ("content-length", "connection")])
        headers.add("Content-Length", str(len(body)))
        headers.add("Connection", "close")
        with contextlib.suppress(ConnectionError, OSError):
            self.writer.write(ResponseHead(self._status, REASONS.get(self._status, ""), headers).encode() + body)
            await self.writer.drain()


def _status_bytes(err: APIError) -> bytes:
    return simple_response(err.code, orjson.dumps(err.status()), content_type="application/json")


class UpgradeHandoff:
    """Take the upgrade requests of connect subresources raw and serve them through ``app``.

    ``app`` is the APIServer's whole ASGI application (set once it is built, before serving).
    """

    def __init__(self, server: APIServer, app: ASGIApp | None = None) -> None:
        self.server = server
        self.app = app

    def _target(self, path: str) -> Target | None:
        """What ``path`` names, when it is an upgrade subresource of a served resource."""
        if path.startswith("/api/"):
            version, _, rest = path[5:].partition("/")
            group = ""
        elif path.startswith("/apis/"):
            group, _, tail = path[6:].partition("/")
            version, _, rest = tail.partition("/")
        else:
            return None
        if not rest or not self.server.registry.serves(group, version):
            return None
        try:
            target = resolve(self.server.registry, group, version, rest)
        except APIError:
            return None
        if target.subresource is None or target.name is None or target.watch_path:
            return None
        if not isinstance(target.resource.subresources.get(target.subresource), UpgradeREST):
            return None
        return target

    def claims(self, path: str) -> bool:
        return self._target(path) is not None

    async def serve(self, scope: Scope, head: RequestHead, reader: asyncio.StreamReader,
                    writer: asyncio.StreamWriter) -> None:
        """Serve one upgrade request on its raw connection through the application, then close it."""
        connection = UpgradedConnection(head, reader, writer)
        scope = {**scope, "extensions": {**(scope.get("extensions") or {}), UPGRADE_EXTENSION: connection}}
        responder = _RawResponder(writer)
        requested = False
        never = asyncio.Event()

        async def receive() -> dict[str, Any]:
            nonlocal requested
            if not requested:
                requested = True
                return {"type": "http.request", "body": b"", "more_body": False}
            await never.wait()  # what follows the head belongs to the relay, not to the application
            return {"type": "http.disconnect"}

        try:
            if self.app is None:
                raise errors.internal_error("the APIServer is not serving yet")
            await self.app(scope, receive, responder.send)
            if not responder.started and not connection.relayed:
                log.error("no answer to the upgrade %s %s", head.method, head.path)
        except APIError as err:
            if not responder.started and not connection.relayed:
                with contextlib.suppress(ConnectionError, OSError):
                    writer.write(_status_bytes(err))
                    await writer.drain()
        except Exception:  # a bug: answer a Status, log the traceback, never leave the client hanging
            log.exception("internal error serving the upgrade %s %s", head.method, head.path)
            if not responder.started and not connection.relayed:
                with contextlib.suppress(ConnectionError, OSError):
                    writer.write(_status_bytes(errors.internal_error("an error on the server prevented "
                                                                     "the upgrade")))
                    await writer.drain()
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError, OSError):
                await writer.wait_closed()
