"""The typed client on its lean transport: requests go to the pool as bytes, with no httpx objects.

A loopback server records each request as it arrived on the wire; the client
must send what an ``httpx.Request`` would have (request line, Host, token,
Content-Type and Content-Length) and read answers and errors the same way.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx
import orjson
import pytest

from machinery.api.kinds import LEASES, PODS
from machinery.client import Client, ClientConfig, Conflict
from machinery.client import rest as rest_module
from machinery.client.errors import InternalError, TooManyRequests

LEASE = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
         "metadata": {"name": "n1", "namespace": "kube-node-lease", "resourceVersion": "11"},
         "spec": {"holderIdentity": "n1", "leaseDurationSeconds": 40}}


class Wire:
    """Answers each request with the next scripted (status line, extra headers, body) and keeps what came."""

    def __init__(self) -> None:
        self.requests: list[tuple[bytes, dict[bytes, bytes], bytes]] = []
        self.answers: list[tuple[bytes, bytes, bytes]] = []
        self.server: asyncio.Server | None = None

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while line := await reader.readline():
                headers: dict[bytes, bytes] = {}
                while (header := await reader.readline()) not in (b"\r\n", b""):
                    name, _, value = header.partition(b":")
                    headers[name.strip().lower()] = value.strip()
                length = int(headers.get(b"content-length", b"0"))
                body = await reader.readexactly(length) if length else b""
                self.requests.append((line.rstrip(), headers, body))
                status, extra, text = self.answers.pop(0)
                writer.write(b"HTTP/1.1 %s\r\nContent-Type: application/json\r\n%sContent-Length: %d\r\n\r\n%s"
                             % (status, extra, len(text), text))
                await writer.drain()
        finally:
            writer.close()

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"


@pytest.fixture
async def wire(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Wire]:
    def no_httpx_request(*args: object, **kwargs: object) -> None:
        raise AssertionError("the lean path built an httpx.Request")

    # The point of the lean path: none of httpx's per-request objects.
    monkeypatch.setattr(rest_module.httpx, "Request", no_httpx_request)
    w = Wire()
    w.server = await asyncio.start_server(w.serve, "127.0.0.1", 0)
    yield w
    w.server.close()


async def test_an_update_goes_out_as_httpx_would_send_it(wire: Wire) -> None:
    answer = orjson.dumps({**LEASE, "metadata": {**LEASE["metadata"], "resourceVersion": "12"}})  # type: ignore[dict-item]
    wire.answers.append((b"200 OK", b"", answer))
    async with Client(ClientConfig(wire.url, "t0k"), user_agent="kubelet/test") as client:
        lease = await client.update(LEASES, LEASE, field_manager="kubelet")
    assert lease.metadata.resource_version == "12"
    line, headers, body = wire.requests[0]
    assert line == b"PUT /apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1?fieldManager=kubelet HTTP/1.1"
    assert headers[b"host"] == wire.url.removeprefix("http://").encode()
    assert headers[b"authorization"] == b"Bearer t0k"
    assert headers[b"user-agent"] == b"kubelet/test"
    assert headers[b"accept"] == b"application/json"
    assert headers[b"content-type"] == b"application/json"
    assert orjson.loads(body) == LEASE


async def test_a_get_has_no_body_and_a_token_view_sends_its_own_token(wire: Wire) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "default"}}
    wire.answers += [(b"200 OK", b"", orjson.dumps(pod))] * 2
    async with Client(ClientConfig(wire.url)) as client:
        assert (await client.get(PODS, "web", namespace="default")).metadata.name == "web"
        await client.with_token("node-1").get(PODS, "web", namespace="default")
    (first, plain, body), (_, token, _) = wire.requests
    assert first == b"GET /api/v1/namespaces/default/pods/web HTTP/1.1"
    assert b"authorization" not in plain and b"content-length" not in plain and body == b""
    assert token[b"authorization"] == b"Bearer node-1"


def failure(code: int, reason: str) -> bytes:
    return orjson.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code,
                         "reason": reason, "message": reason})


async def test_a_refusal_with_retry_after_is_sent_again_after_that_long(wire: Wire) -> None:
    lease = orjson.dumps(LEASE)
    wire.answers += [(b"429 Too Many Requests", b"Retry-After: 1\r\n", failure(429, "TooManyRequests")),
                     (b"503 Service Unavailable", b"Retry-After: 0\r\n", failure(503, "ServiceUnavailable")),
                     (b"200 OK", b"", lease)]
    async with Client(ClientConfig(wire.url)) as client:
        started = asyncio.get_running_loop().time()
        await client.update(LEASES, LEASE)
        waited = asyncio.get_running_loop().time() - started
    assert [line for line, _, _ in wire.requests] == [wire.requests[0][0]] * 3
    assert 1.0 <= waited < 3.0


async def test_errors_are_typed_once_the_retries_are_spent(wire: Wire) -> None:
    wire.answers += [(b"409 Conflict", b"", failure(409, "Conflict")),
                     (b"500 Internal Server Error", b"", failure(500, "InternalError")),
                     *[(b"429 Too Many Requests", b"Retry-After: 0\r\n", b"slow down")] * 3]
    async with Client(ClientConfig(wire.url), max_retries=2) as client:
        # Neither a conflict nor a failure that does not say when to come back is sent again.
        with pytest.raises(Conflict):
            await client.update(LEASES, LEASE)
        with pytest.raises(InternalError):
            await client.update(LEASES, LEASE)
        # Not a Status: the error is client-go's generic one, its Retry-After from the header.
        with pytest.raises(TooManyRequests) as err:
            await client.update(LEASES, LEASE)
    assert len(wire.requests) == 5
    assert err.value.retry_after_seconds == 0


async def test_a_refused_connection_is_httpx_connect_error() -> None:
    server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    server.close()
    await server.wait_closed()
    async with Client(ClientConfig(f"http://127.0.0.1:{port}")) as client:
        with pytest.raises(httpx.ConnectError):
            await client.get(PODS, "web", namespace="default")
