"""The lean HTTP/1.1 client: keep-alive, framing, streams, stale connections, errors, typed answers."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import types
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Self

import httpx
import orjson
import pytest

from machinery.api.kinds import LEASES
from machinery.client import Client, ClientConfig, Conflict, InternalError, NotFound, UnexpectedResponse
from machinery.client.transport import ConnectionPool, LeanTransport, Timeouts


class Request:
    def __init__(self, line: str, headers: dict[str, str], body: bytes) -> None:
        self.method, self.target, _ = line.split(" ", 2)
        self.headers = headers
        self.body = body


Answer = Callable[[Request, asyncio.StreamWriter], Awaitable[bool]]


class ScriptedServer:
    """An HTTP/1.1 server whose answers a test scripts; it counts connections and requests."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.requests: list[Request] = []
        self.connections = 0
        self.open = 0
        self.most_open = 0
        self._server: asyncio.Server | None = None
        self.port = 0

    async def __aenter__(self) -> Self:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self.open += 1
        self.most_open = max(self.most_open, self.open)
        try:
            while True:
                line = (await reader.readline()).decode().strip()
                if not line:
                    return
                headers = {}
                while (header := (await reader.readline()).decode().strip()):
                    name, _, value = header.partition(":")
                    headers[name.lower()] = value.strip()
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                request = Request(line, headers, body)
                self.requests.append(request)
                if not await self.answer(request, writer):
                    return
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self.open -= 1
            writer.close()


def json_answer(code: int, body: Any, *, close: bool = False) -> Answer:
    async def answer(request: Request, writer: asyncio.StreamWriter) -> bool:
        data = orjson.dumps(body) if not isinstance(body, bytes) else body
        extra = "Connection: close\r\n" if close else ""
        writer.write(f"HTTP/1.1 {code} X\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n"
                     f"{extra}\r\n".encode() + data)
        await writer.drain()
        return not close

    return answer


LEASE = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
         "metadata": {"name": "node-1", "namespace": "kube-node-lease", "resourceVersion": "7"}}


@pytest.fixture
async def lean() -> AsyncIterator[Callable[[ScriptedServer], Client]]:
    clients: list[Client] = []

    def make(server: ScriptedServer, **options: Any) -> Client:
        client = Client(ClientConfig(server.url, token="t0ken"), user_agent="kubesim-test", **options)
        clients.append(client)
        return client

    yield make
    for client in clients:
        await client.aclose()


async def test_plain_requests_reuse_one_connection(lean: Callable[..., Client]) -> None:
    async with ScriptedServer(json_answer(200, LEASE)) as server:
        client = lean(server)
        lease = await client.get(LEASES, "node-1", namespace="kube-node-lease")
        assert lease.metadata.resource_version == "7"
        await client.update(LEASES, LEASE, field_manager="kubelet")
        assert server.connections == 1
        get, put = server.requests
        assert (get.method, get.target) == ("GET", ("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/"
                                                   "leases/node-1"))
        assert (get.headers["accept"], get.headers["user-agent"], get.headers["authorization"]) == (
            "application/json", "kubesim-test", "Bearer t0ken")
        assert put.target.endswith("/leases/node-1?fieldManager=kubelet")
        assert put.headers["content-type"] == "application/json"
        assert orjson.loads(put.body)["metadata"]["name"] == "node-1"


@pytest.mark.parametrize(("code", "body", "error", "message"), [
    pytest.param(404, {"kind": "Status", "code": 404, "reason": "NotFound",
                       "message": 'leases "x" not found'}, NotFound, 'leases "x" not found', id="status"),
    pytest.param(409, b"", Conflict, "the server reported a conflict", id="no-status"),
    pytest.param(500, b"boom", InternalError, 'an error on the server ("boom")', id="not-json"),
    pytest.param(200, b"[1]", UnexpectedResponse, "JSON that is not an object", id="unexpected"),
])
async def test_error_answers_raise_the_machinery_clients_errors(lean: Callable[..., Client], code: int,
                                                                body: Any, error: type[Exception],
                                                                message: str) -> None:
    async with ScriptedServer(json_answer(code, body)) as server:
        with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")):
            await lean(server).get(LEASES, "x", namespace="default")


async def test_a_connection_the_server_closed_is_replaced_once(lean: Callable[..., Client]) -> None:
    calls = 0

    async def answer_then_hang_up(request: Request, writer: asyncio.StreamWriter) -> bool:
        nonlocal calls
        calls += 1
        await json_answer(200, LEASE)(request, writer)
        return False  # closes the connection without saying so: the client finds out on its next request

    async with ScriptedServer(answer_then_hang_up) as server:
        client = lean(server)
        await client.get(LEASES, "node-1", namespace="kube-node-lease")
        await client.get(LEASES, "node-1", namespace="kube-node-lease")
        assert (calls, server.connections) == (2, 2)


async def test_connection_close_is_honoured(lean: Callable[..., Client]) -> None:
    async with ScriptedServer(json_answer(200, LEASE, close=True)) as server:
        client = lean(server)
        for _ in range(3):
            await client.get(LEASES, "node-1", namespace="kube-node-lease")
        assert server.connections == 3


async def test_at_most_max_connections_are_open(lean: Callable[..., Client]) -> None:
    gate = asyncio.Event()

    async def slow(request: Request, writer: asyncio.StreamWriter) -> bool:
        await gate.wait()
        return await json_answer(200, LEASE)(request, writer)

    async with ScriptedServer(slow) as server:
        client = lean(server, max_connections=2)
        calls = [asyncio.create_task(client.get(LEASES, "node-1", namespace="kube-node-lease"))
                 for _ in range(5)]
        async with asyncio.timeout(5):
            while len(server.requests) < 2:
                await asyncio.sleep(0)
        gate.set()
        await asyncio.gather(*calls)
        assert server.most_open == 2 and len(server.requests) == 5


async def test_chunked_streams_arrive_as_they_are_sent() -> None:
    more = asyncio.Event()

    async def stream(request: Request, writer: asyncio.StreamWriter) -> bool:
        writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nfirst\n\r\n")
        await writer.drain()
        await more.wait()
        writer.write(b"7\r\nsecond\n\r\n0\r\n\r\n")
        await writer.drain()
        return True

    async with ScriptedServer(stream) as server, \
            httpx.AsyncClient(base_url=server.url, transport=LeanTransport()) as client:
        async with client.stream("GET", "/watch") as response:
            lines = response.aiter_lines()
            assert await anext(lines) == "first"
            more.set()
            assert [line async for line in lines] == ["second"]
        # The stream was read to its end: its connection is reused.
        async with client.stream("GET", "/watch") as response:
            await response.aread()
        assert server.connections == 1


@pytest.mark.parametrize(("reply", "error"), [
    pytest.param(b"NOT HTTP\r\n\r\n", httpx.RemoteProtocolError, id="bad-status-line"),
    pytest.param(b"HTTP/1.1 200 OK\r\nContent-Length: ten\r\n\r\n", httpx.RemoteProtocolError,
                 id="bad-length"),
    pytest.param(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", httpx.RemoteProtocolError,
                 id="cut-body"),
    pytest.param(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", httpx.RemoteProtocolError,
                 id="bad-chunk"),
])
async def test_broken_answers_are_protocol_errors(reply: bytes, error: type[Exception]) -> None:
    async def broken(request: Request, writer: asyncio.StreamWriter) -> bool:
        writer.write(reply)
        await writer.drain()
        return False

    async with ScriptedServer(broken) as server:
        pool = ConnectionPool()
        with pytest.raises(error):
            await pool.exchange(("http", "127.0.0.1", server.port), b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", b"",
                                Timeouts())
        await pool.aclose()


async def test_unreachable_and_silent_servers() -> None:
    pool = ConnectionPool()
    with contextlib.closing(socket.socket()) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(httpx.ConnectError):
        await pool.exchange(("http", "127.0.0.1", port), b"GET / HTTP/1.1\r\n\r\n", b"", Timeouts())

    async def silent(request: Request, writer: asyncio.StreamWriter) -> bool:
        await asyncio.Event().wait()
        return False

    async with ScriptedServer(silent) as server:
        with pytest.raises(httpx.ReadTimeout):
            await pool.exchange(("http", "127.0.0.1", server.port), b"GET / HTTP/1.1\r\n\r\n", b"",
                                Timeouts(read=0.1))
    await pool.aclose()


async def test_idle_connections_are_kept_for_max_idle_seconds(lean: Callable[..., Client],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A connection idle for 10 s is reused (a TLS handshake saved); one idle past MAX_IDLE is replaced."""
    from machinery.client import transport

    now = [1000.0]
    monkeypatch.setattr(transport, "time", types.SimpleNamespace(monotonic=lambda: now[0]))
    async with ScriptedServer(json_answer(200, LEASE)) as server:
        client = lean(server)
        await client.get(LEASES, "node-1", namespace="kube-node-lease")
        now[0] += 10.0
        await client.get(LEASES, "node-1", namespace="kube-node-lease")
        assert server.connections == 1
        now[0] += transport.MAX_IDLE + 1.0
        await client.get(LEASES, "node-1", namespace="kube-node-lease")
        assert server.connections == 2
