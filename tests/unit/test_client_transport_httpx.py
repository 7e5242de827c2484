"""The scheduler's lean HTTP transport against a small loopback server: keep-alive, chunks, closed
connections, errors."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import httpx
import pytest

from machinery.client import Client, ClientConfig, Conflict
from machinery.client.transport import LeanTransport

Reply = Callable[[str, bytes, asyncio.StreamWriter], Awaitable[bool]]


class Server:
    """HTTP/1.1 on 127.0.0.1; ``reply(path, body, writer)`` answers and says whether to keep the connection."""

    def __init__(self, reply: Reply) -> None:
        self.reply = reply
        self.connections = 0
        self.server: asyncio.Server | None = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while line := await reader.readline():
                path = line.split()[1].decode()
                length = 0
                while (header := await reader.readline()) not in (b"\r\n", b""):
                    name, _, value = header.partition(b":")
                    if name.lower() == b"content-length":
                        length = int(value)
                body = await reader.readexactly(length) if length else b""
                if not await self.reply(path, body, writer):
                    break
                await writer.drain()
        finally:
            writer.close()

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"


@pytest.fixture
async def serve() -> AsyncIterator[Callable[[Reply], Awaitable[Server]]]:
    servers: list[Server] = []

    async def start(reply: Reply) -> Server:
        server = Server(reply)
        server.server = await asyncio.start_server(server._serve, "127.0.0.1", 0)
        servers.append(server)
        return server

    yield start
    for s in servers:
        assert s.server is not None
        s.server.close()


def json_reply(text: bytes, *, close: bool = False) -> Reply:
    async def reply(path: str, body: bytes, writer: asyncio.StreamWriter) -> bool:
        headers = b"Connection: close\r\n" if close else b""
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + headers +
                     b"Content-Length: %d\r\n\r\n" % len(text) + text)
        return not close
    return reply


async def test_keep_alive_reuses_one_connection(serve: Callable[[Reply], Awaitable[Server]]) -> None:
    server = await serve(json_reply(b'{"kind": "Status", "status": "Success"}'))
    async with httpx.AsyncClient(transport=LeanTransport(), base_url=server.url) as client:
        for _ in range(3):
            response = await client.post("/x", json={"a": 1})
            assert response.status_code == 200 and response.json()["status"] == "Success"
    assert server.connections == 1


async def test_connection_close_is_honoured(serve: Callable[[Reply], Awaitable[Server]]) -> None:
    server = await serve(json_reply(b"{}", close=True))
    async with httpx.AsyncClient(transport=LeanTransport(), base_url=server.url) as client:
        for _ in range(2):
            assert (await client.get("/x")).status_code == 200
    assert server.connections == 2


async def test_an_idle_connection_the_server_closed_is_replaced(serve: Callable[[Reply], Awaitable[Server]]) -> None:
    answered = 0

    async def once_per_connection(path: str, body: bytes, writer: asyncio.StreamWriter) -> bool:
        nonlocal answered
        answered += 1
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
        await writer.drain()
        # Keep-alive advertised, but the server drops the connection right after answering.
        return False

    server = await serve(once_per_connection)
    async with httpx.AsyncClient(transport=LeanTransport(), base_url=server.url) as client:
        assert (await client.post("/x", content=b"1")).status_code == 200
        await asyncio.sleep(0)
        assert (await client.post("/x", content=b"2")).status_code == 200
    assert answered == 2 and server.connections == 2


async def test_chunked_streams_arrive_piece_by_piece(serve: Callable[[Reply], Awaitable[Server]]) -> None:
    gate = asyncio.Event()

    async def chunks(path: str, body: bytes, writer: asyncio.StreamWriter) -> bool:
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
        for line in (b'{"type":"ADDED"}\n', b'{"type":"MODIFIED"}\n'):
            writer.write(b"%x\r\n%s\r\n" % (len(line), line))
            await writer.drain()
            await gate.wait()
        writer.write(b"0\r\n\r\n")
        return True

    server = await serve(chunks)
    async with httpx.AsyncClient(transport=LeanTransport(), base_url=server.url) as client:
        async with client.stream("GET", "/watch") as response:
            pieces = response.aiter_bytes()
            assert await anext(pieces) == b'{"type":"ADDED"}\n'
            gate.set()
            rest = [piece async for piece in pieces]
        assert b"".join(rest) == b'{"type":"MODIFIED"}\n'
        # The stream was read to its end, so its connection serves the next request.
        assert (await client.get("/watch")).status_code == 200
    assert server.connections == 1


async def test_a_refused_connection_is_a_connect_error() -> None:
    async with httpx.AsyncClient(transport=LeanTransport(), base_url="http://127.0.0.1:9") as client:
        with pytest.raises(httpx.ConnectError):
            await client.get("/x")


async def test_a_silent_server_times_out(serve: Callable[[Reply], Awaitable[Server]]) -> None:
    async def never(path: str, body: bytes, writer: asyncio.StreamWriter) -> bool:
        await asyncio.Event().wait()
        return False

    server = await serve(never)
    async with httpx.AsyncClient(transport=LeanTransport(), base_url=server.url,
                                 timeout=httpx.Timeout(5.0, read=0.2)) as client:
        with pytest.raises(httpx.ReadTimeout):
            await client.get("/x")


async def test_the_shared_client_works_over_it(serve: Callable[[Reply], Awaitable[Server]]) -> None:
    async def conflict(path: str, body: bytes, writer: asyncio.StreamWriter) -> bool:
        text = b'{"kind":"Status","apiVersion":"v1","status":"Failure","code":409,"reason":"Conflict","message":"x"}'
        writer.write(b"HTTP/1.1 409 Conflict\r\nContent-Length: %d\r\n\r\n" % len(text) + text)
        return True

    server = await serve(conflict)
    async with Client(ClientConfig(server.url), transport=LeanTransport()) as client:
        with pytest.raises(Conflict):
            await client.bind("default", "web", "n1")
