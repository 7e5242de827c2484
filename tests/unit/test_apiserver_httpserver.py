"""uvicorn's HTTP protocol with raw handoff of claimed upgrades (apiserver.httpserver), on a real uvicorn.

Each test runs on plain HTTP and on the secure port's stack as ``python -m
apiserver`` builds it: the standard library's TLS around the peer-identity
and write-coalescing protocol (:mod:`apiserver.serving`), whose handed-over
connection is the TLS transport.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator, Coroutine
from typing import Any

import pytest
import uvicorn
from starlette.types import Receive, Scope, Send

from apiserver import serving
from apiserver.authentication.x509 import with_peer_identity
from apiserver.httpserver import handoff_protocol_class
from machinery.httpstream.http1 import RequestHead, read_response_head


async def app(scope: Scope, receive: Receive, send: Send) -> None:
    if scope["type"] == "lifespan":
        while (await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})
        return
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"3")]})
    await send({"type": "http.response.body", "body": b"app"})


async def echo(scope: Scope, head: RequestHead, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Switch protocols (saying what the request's ASGI scope was), then send back what the client sends, upper-cased."""
    writer.write(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: SPDY/3.1\r\nConnection: Upgrade\r\n"
                 b"X-Path: " + head.path.encode() + b"\r\n"
                 b"X-Scope: " + f"{scope['type']} {scope['method']} {scope['path']} {scope['query_string'].decode()} "
                                f"{scope['client'][0]}".encode() + b"\r\n\r\n")
    while data := await reader.read(1024):
        writer.write(data.upper())
    writer.close()


#: More than a TLS record and a socket buffer hold.
LAST_WORDS = b"x" * (3 << 20) + b"bye"


async def last_words(scope: Scope, head: RequestHead, reader: asyncio.StreamReader,
                     writer: asyncio.StreamWriter) -> None:
    """Switch protocols, write a lot and close at once, as a relay whose kubelet is done does."""
    writer.write(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: SPDY/3.1\r\nConnection: Upgrade\r\n\r\n")
    writer.write(LAST_WORDS)
    writer.close()


class RawPaths:
    """Claims the upgrades of paths under /raw/ (echoed) and /bye/ (:func:`last_words`)."""

    def claims(self, path: str) -> bool:
        return path.startswith(("/raw/", "/bye/"))

    def serve(self, scope: Scope, head: RequestHead, reader: asyncio.StreamReader,
              writer: asyncio.StreamWriter) -> Coroutine[Any, Any, None]:
        if head.path.startswith("/bye/"):
            return last_words(scope, head, reader, writer)
        return echo(scope, head, reader, writer)


Connect = tuple[int, ssl.SSLContext | None]


@pytest.fixture(params=["http", "https"])
async def server(request: pytest.FixtureRequest) -> AsyncIterator[Connect]:
    protocol: Any = handoff_protocol_class(RawPaths())
    client_tls = None
    if request.param == "https":
        cert, key = serving.serving_files(None, None, None, "127.0.0.1")
        protocol = serving.tls_protocol(with_peer_identity(serving.coalescing_writes(protocol)),
                                        serving.tls_context(cert, key, None))
        # What is tested is the transport, not who signed the self-signed certificate.
        client_tls = ssl.create_default_context()
        client_tls.check_hostname = False
        client_tls.verify_mode = ssl.CERT_NONE
    config = uvicorn.Config(app, host="127.0.0.1", port=0, http=protocol, log_level="warning", lifespan="on")
    served = uvicorn.Server(config)
    served.install_signal_handlers = lambda: None  # type: ignore[method-assign]
    task = asyncio.create_task(served.serve())
    async with asyncio.timeout(10):
        while not served.started:
            await asyncio.sleep(0.01)
    port: int = served.servers[0].sockets[0].getsockname()[1]
    yield port, client_tls
    served.should_exit = True
    await task


async def connect(server: Connect) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    port, tls = server
    return await asyncio.open_connection("127.0.0.1", port, ssl=tls)


async def test_a_claimed_upgrade_gets_the_raw_connection_with_the_bytes_after_its_head(server: Connect) -> None:
    reader, writer = await connect(server)
    # The first frame comes in the same write as the head: it must not be lost.
    writer.write(b"POST /raw/x%20y?command=ls HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n"
                 b"Content-Length: 0\r\n\r\nearly")
    response = await read_response_head(reader)
    assert (response.code, response.headers.get("x-path")) == (101, "/raw/x y")
    # The handoff gets the scope uvicorn would have given the application.
    assert response.headers.get("x-scope") == "http POST /raw/x y command=ls 127.0.0.1"
    assert await reader.readexactly(5) == b"EARLY"
    writer.write(b"later")
    assert await reader.readexactly(5) == b"LATER"
    writer.close()


async def test_what_is_written_before_the_handoff_closes_arrives_whole(server: Connect) -> None:
    reader, writer = await connect(server)
    writer.write(b"POST /bye/now HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n\r\n")
    assert (await read_response_head(reader)).code == 101
    assert await asyncio.wait_for(reader.read(), 10) == LAST_WORDS
    writer.close()


async def test_other_requests_are_uvicorns(server: Connect) -> None:
    reader, writer = await connect(server)
    writer.write(b"GET /api HTTP/1.1\r\nHost: x\r\n\r\n")
    response = await read_response_head(reader)
    assert response.code == 200 and await reader.readexactly(3) == b"app"
    # An upgrade on a path nobody claims is an ordinary request (uvicorn knows no SPDY).
    writer.write(b"GET /other HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n\r\n")
    response = await read_response_head(reader)
    assert response.code == 200 and await reader.readexactly(3) == b"app"
    writer.close()


class RecordingTransport:
    """What a TLS transport is asked to send: each write and writelines call."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, list[bytes]]] = []
        self.closing = False

    def write(self, data: bytes) -> None:
        self.calls.append(("write", [data]))

    def writelines(self, lines: list[bytes]) -> None:
        self.calls.append(("writelines", list(lines)))

    def is_closing(self) -> bool:
        return self.closing

    def get_write_buffer_size(self) -> int:
        return 0


async def test_the_writes_of_one_iteration_go_out_together_and_large_bodies_are_not_copied() -> None:
    loop = asyncio.get_running_loop()
    sent = RecordingTransport()
    transport = serving.CoalescingTransport(sent, loop)  # type: ignore[arg-type]
    transport.write(b"HTTP/1.1 200 OK\r\n\r\n")
    transport.write(bytearray(b"small"))
    await asyncio.sleep(0)
    assert sent.calls == [("write", [b"HTTP/1.1 200 OK\r\n\r\nsmall"])]
    body = b"x" * (serving.LARGE_WRITE + 1)
    transport.write(b"head")
    transport.write(body)
    await asyncio.sleep(0)
    assert sent.calls[1][0] == "writelines" and sent.calls[1][1][1] is body
    transport.write(body)
    await asyncio.sleep(0)
    assert sent.calls[2] == ("write", [body])
    sent.closing = True
    transport.write(b"late")
    await asyncio.sleep(0)
    assert len(sent.calls) == 3 and transport.get_write_buffer_size() == 0
