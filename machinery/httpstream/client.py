"""The client side of the streaming protocols, for kubesim's own tools (the bench, tests, the APIServer).

kubectl and the official clients are what users run; kubesim still needs a
client of its own to measure the servers (``kubesim bench``), to test
protocol corners no user client reaches (v1 error streams, a port-forward
connection reused after an error), and for the APIServer to reach a Pod's
port through its kubelet:

- :func:`upgrade` sends an upgrade request and returns the connection after
  the ``101`` (else :class:`UpgradeFailed` with the status and body, as
  kubectl's ``unable to upgrade connection: ...``);
- :func:`exec_websocket` and :func:`exec_spdy` run a remote command to its end
  and return what it printed and its Status (:class:`ExecResult`);
- :class:`SpdyPortForwarder` opens forwarded connections on one SPDY
  connection, each a data and an error stream, as client-go does.

Concurrency: one task per call; a forwarder's connection reader is its own task.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import ssl
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from machinery.httpstream import (
    CHANNEL_CLOSE,
    CHANNEL_ERROR,
    CHANNEL_RESIZE,
    CHANNEL_STDERR,
    CHANNEL_STDIN,
    CHANNEL_STDOUT,
    EXIT_CODE_CAUSE_TYPE,
    HEADER_PORT,
    HEADER_REQUEST_ID,
    HEADER_STREAM_TYPE,
    PORT_FORWARD_PROTOCOL_V1,
    STREAM_PROTOCOL_V4,
    STREAM_PROTOCOL_V5,
    STREAM_TYPE_DATA,
    STREAM_TYPE_ERROR,
    STREAM_TYPE_RESIZE,
    STREAM_TYPE_STDERR,
    STREAM_TYPE_STDIN,
    STREAM_TYPE_STDOUT,
    UPGRADE_SPDY,
)
from machinery.httpstream.http1 import Headers, RequestHead, ResponseHead, read_response_head
from machinery.httpstream.spdy import SpdyConnection, SpdyStream, StreamPair
from machinery.httpstream.wsstream import ChannelCodec, WebSocket, client_request, is_base64


class UpgradeFailed(Exception):
    """The server did not switch protocols: its status code and body."""

    def __init__(self, code: int, body: bytes, headers: Headers) -> None:
        super().__init__(f"unable to upgrade connection: {body.decode('utf-8', 'replace').strip()} ({code})")
        self.code = code
        self.body = body
        self.headers = headers

    def status(self) -> dict[str, Any] | None:
        """The body as a Kubernetes Status, when it is one."""
        with contextlib.suppress(ValueError):
            value = json.loads(self.body)
            if isinstance(value, dict) and value.get("kind") == "Status":
                return value
        return None


@dataclass
class Upgraded:
    response: ResponseHead
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter


async def upgrade(url: str, *, kind: str, protocols: Sequence[str], method: str = "GET",
                  headers: Sequence[tuple[str, str]] = (), timeout: float = 10.0,
                  tls: ssl.SSLContext | None = None) -> Upgraded:
    """Connect to ``url`` (``http(s)://host:port/path?query``) and upgrade to ``websocket`` or ``spdy``.

    An ``https`` URL is reached over TLS with ``tls`` (which trusts the server and may present a client
    certificate; default: the system's trust), and stays TLS after the upgrade.
    """
    parts = urlsplit(url)
    secure = parts.scheme == "https"
    host, port = parts.hostname or "127.0.0.1", parts.port or (443 if secure else 80)
    target = parts.path + (f"?{parts.query}" if parts.query else "")
    async with asyncio.timeout(timeout):
        if secure:
            reader, writer = await asyncio.open_connection(host, port, limit=1 << 20,
                                                           ssl=tls or ssl.create_default_context(),
                                                           server_hostname=host)
        else:
            reader, writer = await asyncio.open_connection(host, port, limit=1 << 20)
    if kind == "websocket":
        head, _key = client_request(f"{host}:{port}", target, protocols, headers)
        head.method = method
    else:
        head = RequestHead(method, target, Headers([
            ("Host", f"{host}:{port}"), ("Connection", "Upgrade"), ("Upgrade", UPGRADE_SPDY),
            *(("X-Stream-Protocol-Version", p) for p in protocols), *headers, ("Content-Length", "0")]))
    writer.write(head.encode())
    await writer.drain()
    response = await read_response_head(reader, timeout=timeout)
    if response.code != 101:
        body = b""
        with contextlib.suppress(Exception):
            async with asyncio.timeout(timeout):
                body = await reader.read(1 << 20)
        writer.close()
        # Over TLS the close is a shutdown exchange: let it finish, so the socket is closed too.
        with contextlib.suppress(Exception):
            async with asyncio.timeout(timeout):
                await writer.wait_closed()
        raise UpgradeFailed(response.code, body, response.headers)
    return Upgraded(response, reader, writer)


@dataclass
class ExecResult:
    stdout: bytes = b""
    stderr: bytes = b""
    #: The error stream's content: a Status (v4 and v5) or an error message (older protocols).
    error: bytes = b""
    protocol: str = ""

    @property
    def status(self) -> dict[str, Any] | None:
        if not self.error:
            return None
        with contextlib.suppress(ValueError):
            value = json.loads(self.error)
            return value if isinstance(value, dict) else None
        return None

    @property
    def exit_code(self) -> int:
        """kubectl's reading: no Status or Success is 0, an ExitCode cause its number, other failures 1."""
        status = self.status
        if status is None:
            return 1 if self.error else 0
        if status.get("status") == "Success":
            return 0
        for cause in (status.get("details") or {}).get("causes") or ():
            if cause.get("reason") == EXIT_CODE_CAUSE_TYPE:
                return int(cause.get("message", "1"))
        return 1


@dataclass
class _Collected:
    out: bytearray = field(default_factory=bytearray)
    err: bytearray = field(default_factory=bytearray)
    error: bytearray = field(default_factory=bytearray)


async def exec_websocket(url: str, *, stdin: bytes | None = None, protocols: Sequence[str] = (
        STREAM_PROTOCOL_V5, STREAM_PROTOCOL_V4), resize: tuple[int, int] | None = None,
        timeout: float = 30.0, tls: ssl.SSLContext | None = None) -> ExecResult:
    """Run the remote command at ``url`` over WebSocket channels, sending ``stdin`` then closing it (v5)."""
    up = await upgrade(url, kind="websocket", protocols=protocols, tls=tls)
    protocol = up.response.headers.get("sec-websocket-protocol") or ""
    ws = WebSocket(up.reader, up.writer, server=False, subprotocol=protocol)
    codec = ChannelCodec(base64=is_base64(protocol))
    collected = _Collected()
    try:
        async with asyncio.timeout(timeout):
            if resize is not None:
                size = json.dumps({"Width": resize[0], "Height": resize[1]}).encode()
                await ws.send(codec.encode(CHANNEL_RESIZE, size), text=codec.base64)
            if stdin is not None:
                if stdin:
                    await ws.send(codec.encode(CHANNEL_STDIN, stdin), text=codec.base64)
                if protocol == STREAM_PROTOCOL_V5:
                    await ws.send(bytes((CHANNEL_CLOSE, CHANNEL_STDIN)))
            while (message := await ws.recv()) is not None:
                decoded = codec.decode(message[1])
                if decoded is None:
                    continue
                channel, data = decoded
                target = {CHANNEL_STDOUT: collected.out, CHANNEL_STDERR: collected.err,
                          CHANNEL_ERROR: collected.error}.get(channel)
                if target is not None:
                    target += data
    finally:
        await ws.close()
    return ExecResult(bytes(collected.out), bytes(collected.err), bytes(collected.error), protocol)


async def exec_spdy(url: str, *, stdin: bytes | None = None, stdout: bool = True, stderr: bool = True,
                    tty: bool = False, resize: tuple[int, int] | None = None,
                    protocols: Sequence[str] = (STREAM_PROTOCOL_V4,), timeout: float = 30.0,
                    tls: ssl.SSLContext | None = None) -> ExecResult:
    """Run the remote command at ``url`` over SPDY, as client-go's v2+ protocols open their streams."""
    up = await upgrade(url, kind="spdy", protocols=protocols, method="POST", tls=tls)
    protocol = up.response.headers.get("x-stream-protocol-version") or ""
    connection = SpdyConnection(StreamPair(up.reader, up.writer), server=False, name="exec-client")
    reading = asyncio.create_task(connection.run(), name="exec-client-reader")
    try:
        async with asyncio.timeout(timeout):
            error = await connection.open_stream({HEADER_STREAM_TYPE: STREAM_TYPE_ERROR})
            await error.close()
            streams: dict[str, SpdyStream] = {}
            if stdin is not None:
                streams["in"] = await connection.open_stream({HEADER_STREAM_TYPE: STREAM_TYPE_STDIN})
            if stdout:
                streams["out"] = await connection.open_stream({HEADER_STREAM_TYPE: STREAM_TYPE_STDOUT})
                await streams["out"].close()
            if stderr and not tty:
                streams["err"] = await connection.open_stream({HEADER_STREAM_TYPE: STREAM_TYPE_STDERR})
                await streams["err"].close()
            if tty:
                streams["resize"] = await connection.open_stream({HEADER_STREAM_TYPE: STREAM_TYPE_RESIZE})
                if resize is not None:
                    await streams["resize"].write(json.dumps({"Width": resize[0], "Height": resize[1]}).encode())
            if stdin is not None:
                if stdin:
                    await streams["in"].write(stdin)
                await streams["in"].close()
            out_task = asyncio.create_task(streams["out"].read_all(1 << 30)) if "out" in streams else None
            err_task = asyncio.create_task(streams["err"].read_all(1 << 30)) if "err" in streams else None
            error_bytes = await error.read_all()
            out = await out_task if out_task is not None else b""
            err = await err_task if err_task is not None else b""
    finally:
        await connection.close()
        reading.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await reading
    return ExecResult(out, err, error_bytes, protocol)


class SpdyPortForwarder:
    """Forwarded connections over one SPDY connection (client-go's ``PortForwarder``, without listeners)."""

    def __init__(self, connection: SpdyConnection, reading: asyncio.Task[None]) -> None:
        self.connection = connection
        self._reading = reading
        self._next_request = 0

    @classmethod
    async def connect(cls, url: str, *, timeout: float = 10.0, tls: ssl.SSLContext | None = None) -> SpdyPortForwarder:
        up = await upgrade(url, kind="spdy", protocols=(PORT_FORWARD_PROTOCOL_V1,), method="POST",
                           timeout=timeout, tls=tls)
        connection = SpdyConnection(StreamPair(up.reader, up.writer), server=False, name="portforward-client")
        return cls(connection, asyncio.create_task(connection.run(), name="portforward-client-reader"))

    async def open(self, port: int) -> tuple[SpdyStream, SpdyStream]:
        """A new forwarded connection to ``port``: (data stream, error stream)."""
        request_id = str(self._next_request)
        self._next_request += 1
        headers = {HEADER_PORT: str(port), HEADER_REQUEST_ID: request_id}
        error = await self.connection.open_stream({**headers, HEADER_STREAM_TYPE: STREAM_TYPE_ERROR})
        await error.close()
        data = await self.connection.open_stream({**headers, HEADER_STREAM_TYPE: STREAM_TYPE_DATA})
        return data, error

    async def close(self) -> None:
        await self.connection.close()
        self._reading.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reading
