"""Upgrade requests taken off uvicorn go through the ASGI application (apiserver.proxy.connect, .hijack).

The application stands in for the APIServer's handler chain: a filter that
refuses, a handler that relays to a backend standing in for the kubelet. The
connections are real loopback sockets.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import orjson
import pytest
from starlette.types import Receive, Scope, Send

from apiserver import errors
from apiserver.errors import status_response
from apiserver.proxy.connect import UpgradeHandoff
from apiserver.proxy.hijack import HIJACKED, upgraded_connection
from apiserver.proxy.kubelet import client_context
from apiserver.proxy.location import Location
from apiserver.settings import SecuritySettings
from machinery import tlsserving
from machinery.httpstream.http1 import read_request_head, read_response_head

App = Callable[[Scope, Receive, Send], Awaitable[None]]
REQUEST = (b"POST /api/v1/namespaces/ns/pods/p/exec?command=ls HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\n"
           b"Upgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: v4.channel.k8s.io\r\n\r\n")


async def kubelet(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Switches protocols, says which path it was asked for, then echoes upper-cased."""
    head = await read_request_head(reader)
    writer.write(b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Target: "
                 + head.target.encode() + b"\r\n\r\n")
    while data := await reader.read(1024):
        writer.write(data.upper())
    writer.close()


#: How the APIServer dials kubelets: TLS, their self-signed certificates unchecked (no --kubelet-certificate-authority).
KUBELET_TLS = client_context(SecuritySettings())


@pytest.fixture
async def backend() -> AsyncIterator[int]:
    """A kubelet serving TLS with a self-signed certificate, as kubelet_sim does by default."""
    tls = tlsserving.server_context(*tlsserving.serving_pair(None, None, None, ["127.0.0.1"], stem="kubelet"), None)
    server = await asyncio.start_server(kubelet, "127.0.0.1", 0, ssl=tls)
    yield int(server.sockets[0].getsockname()[1])
    server.close()


@contextlib.asynccontextmanager
async def serving(app: App) -> AsyncIterator[tuple[asyncio.StreamReader, asyncio.StreamWriter]]:
    """A loopback server handing its connection's request to UpgradeHandoff(app), and a client of it."""
    handoff = UpgradeHandoff(None, app)  # type: ignore[arg-type]  # serve() never reads the server
    served = asyncio.Event()

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await read_request_head(reader)
        scope: dict[str, Any] = {"type": "http", "method": head.method, "path": head.path,
                                 "query_string": head.query_string.encode(), "headers": [], "client": None}
        try:
            await handoff.serve(scope, head, reader, writer)
        finally:
            served.set()

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    reader, writer = await asyncio.open_connection("127.0.0.1", server.sockets[0].getsockname()[1])
    try:
        yield reader, writer
        # serve() closes the connection once the application is done.
        await asyncio.wait_for(served.wait(), 10)
        assert await asyncio.wait_for(reader.read(), 10) == b""
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()
        server.close()
        await server.wait_closed()


async def test_what_the_handler_chain_answers_is_written_before_any_upgrade() -> None:
    async def refusing_filter(scope: Scope, receive: Receive, send: Send) -> None:
        assert upgraded_connection(scope) is not None
        err = errors.APIError(403, "Forbidden", 'pods "p" is forbidden: User "jane" cannot create resource '
                                                '"pods/exec" in API group "" in the namespace "ns"', {})
        await status_response(err)(scope, receive, send)

    async with serving(refusing_filter) as (reader, writer):
        writer.write(REQUEST)
        response = await read_response_head(reader)
        assert response.code == 403 and response.headers.get("connection") == "close"
        body = orjson.loads(await reader.readexactly(int(response.headers.get("content-length") or 0)))
        assert (body["kind"], body["reason"], body["code"]) == ("Status", "Forbidden", 403)


async def test_a_handler_relays_the_raw_connection_and_answers_nothing_more(backend: int) -> None:
    async def handler(scope: Scope, receive: Receive, send: Send) -> None:
        assert (await receive())["type"] == "http.request"
        connection = upgraded_connection(scope)
        assert connection is not None
        await connection.relay(Location("127.0.0.1", backend, "/exec/ns/p/c?command=ls", "node-1"), KUBELET_TLS)
        await HIJACKED(scope, receive, send)

    async with serving(handler) as (reader, writer):
        # The first bytes of the upgraded protocol come with the head: they reach the kubelet.
        writer.write(REQUEST + b"early")
        response = await read_response_head(reader)
        assert (response.code, response.headers.get("x-target")) == (101, "/exec/ns/p/c?command=ls")
        assert await reader.readexactly(5) == b"EARLY"
        writer.write(b"later")
        assert await reader.readexactly(5) == b"LATER"
        writer.write_eof()


async def test_an_unreachable_kubelet_is_answered_by_the_handler_chain() -> None:
    async def handler(scope: Scope, receive: Receive, send: Send) -> None:
        connection = upgraded_connection(scope)
        assert connection is not None
        try:
            # discard: nobody listens
            await connection.relay(Location("127.0.0.1", 9, "/exec/ns/p/c", "node-1"), KUBELET_TLS)
        except errors.APIError as err:
            assert not connection.relayed
            await status_response(err)(scope, receive, send)

    async with serving(handler) as (reader, writer):
        writer.write(REQUEST)
        response = await read_response_head(reader)
        body = orjson.loads(await reader.readexactly(int(response.headers.get("content-length") or 0)))
        assert response.code == 500 and "error dialing backend: dial tcp 127.0.0.1:9" in body["message"]


async def test_a_bug_in_the_application_is_a_status_not_a_hang() -> None:
    async def broken(scope: Scope, receive: Receive, send: Send) -> None:
        raise RuntimeError("boom")

    async with serving(broken) as (reader, writer):
        writer.write(REQUEST)
        response = await read_response_head(reader)
        body = orjson.loads(await reader.readexactly(int(response.headers.get("content-length") or 0)))
        assert (response.code, body["reason"]) == (500, "InternalError")
