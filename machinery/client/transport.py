"""A lean HTTP/1.1 transport for httpx: keep-alive connections on asyncio streams.

Why it exists: the components talk to one APIServer, hard (one kubelet_sim
renews 500 Leases a second; the scheduler binds hundreds of Pods a second).
Measured on the project's 2-core machines, httpx's default transport
(httpcore) costs the client 1 to 3 ms of CPU per request under that load: it
rescans its whole pool for every request and retries a failed
``import sniffio`` each time. This one costs a tenth of that.

- :class:`ConnectionPool`: idle connections per server, one exchange per
  connection at a time, bodies framed by Content-Length, chunks or close. A
  request on a kept-alive connection that the server closed meanwhile fails
  before any byte of the answer; it is sent again once on a fresh connection,
  as HTTP clients do. Idle connections older than :data:`MAX_IDLE` are dropped.
  ``https`` origins are reached over TLS with the pool's one ``ssl.SSLContext``
  (the cluster CA, the client certificate): the handshake is paid once per
  connection, and kept-alive connections carry every later request.
- :class:`LeanTransport`: the pool as an httpx transport (streams included:
  watches and log follows are read lazily).

Errors are httpx's (``ConnectError``, ``ReadError``, ``RemoteProtocolError``,
``ConnectTimeout``, ``ReadTimeout``...), so callers' retry rules apply unchanged.

Concurrency: any number of tasks may send at once; at most ``max_connections``
connections are open, each carrying one exchange at a time.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Final
from urllib.parse import urlsplit

import httpx

#: Seconds an idle connection may wait for reuse. client-go keeps them 90 s; our servers close them
#: after 10 s (kubelet_sim) or 60 s (APIServer). Measured on an idle ``kubesim up --nodes 5000``: at
#: 4 s the components opened 782 new TLS connections a minute (a handshake each), at 30 s 44, and the
#: APIServer's CPU fell from 80% to 71% of a core. A connection its server closed meanwhile is seen at
#: EOF and dropped; one whose close crosses a request is sent again once (see the module's docstring).
MAX_IDLE: Final = 30.0
_MAX_LINE: Final = 64 * 1024
_NO_BODY_STATUS: Final = frozenset({204, 304})

Origin = tuple[str, str, int]


@dataclass(frozen=True, slots=True)
class Timeouts:
    """Seconds allowed to connect, to send, and for each read (None: wait as long as it takes)."""

    connect: float | None = 5.0
    write: float | None = 60.0
    read: float | None = 60.0


class Reply:
    """An answer: status, headers, and the body, read whole or as a stream of chunks."""

    __slots__ = ("_release", "_released", "chunks", "code", "content", "headers")

    def __init__(self, code: int, headers: list[tuple[bytes, bytes]], content: bytes | None,
                 chunks: AsyncIterator[bytes] | None, release: Callable[[bool], None]) -> None:
        self.code = code
        self.headers = headers
        self.content = content
        self.chunks = chunks
        self._release = release
        self._released = False

    def close(self, *, complete: bool) -> None:
        """Give the connection back (to be reused only if the body was read to its end)."""
        if not self._released:
            self._released = True
            self._release(complete)

    def header(self, name: bytes) -> bytes | None:
        lowered = name.lower()
        return next((v for k, v in self.headers if k.lower() == lowered), None)


class _Connection:
    __slots__ = ("reader", "since", "writer")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.since = time.monotonic()


class _StaleConnection(Exception):
    """The connection broke before the answer began: a kept-alive connection the server closed."""


class ConnectionPool:
    """Keep-alive HTTP/1.1 connections, plain or TLS, to any number of servers."""

    def __init__(self, *, max_connections: int = 256, ssl_context: ssl.SSLContext | None = None,
                 server_hostname: str | None = None) -> None:
        self._idle: dict[Origin, deque[_Connection]] = {}
        self._slots = asyncio.Semaphore(max_connections)
        self._open: set[_Connection] = set()
        # Built once: a default context loads the system's CAs, which costs milliseconds.
        self._ssl = ssl_context
        self._server_hostname = server_hostname

    async def exchange(self, origin: Origin, head: bytes, body: bytes, timeouts: Timeouts, *,
                       stream: bool = False, request: httpx.Request | None = None) -> Reply:
        """Send one request (``head`` is its request line and headers) and read the answer.

        With ``stream`` a chunked or close-delimited body is returned as
        ``Reply.chunks`` and the caller must :meth:`Reply.close` it; otherwise the
        body is read whole and the connection is back in the pool on return.
        """
        await self._slots.acquire()
        try:
            reply = await self._send(origin, head + body, timeouts, request)
        except BaseException:
            self._slots.release()
            raise
        # From here on the reply holds the connection (and its slot) until it is closed.
        if reply.chunks is not None and not stream:
            try:
                content = b"".join([chunk async for chunk in reply.chunks])
            except BaseException:
                reply.close(complete=False)
                raise
            reply.content, reply.chunks = content, None
            reply.close(complete=True)
        return reply

    async def _send(self, origin: Origin, data: bytes, timeouts: Timeouts,
                    request: httpx.Request | None) -> Reply:
        for attempt in range(2):
            connection, reused = await self._connection(origin, timeouts.connect, request)
            try:
                return await self._exchange(origin, connection, data, timeouts, request)
            except _StaleConnection:
                self._discard(connection)
                if not reused or attempt:
                    raise httpx.RemoteProtocolError("server disconnected without sending a response",
                                                    request=request) from None
            except BaseException:
                self._discard(connection)
                raise
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    async def aclose(self) -> None:
        writers = [connection.writer for connection in self._open]
        self._open.clear()
        self._idle.clear()
        for writer in writers:
            writer.close()
        # A TLS connection closes after its close_notify exchange: wait for it (briefly), so that no
        # transport outlives the pool, then cut whatever is still open.
        if writers:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(1.0):
                    await asyncio.gather(*(w.wait_closed() for w in writers), return_exceptions=True)
            for writer in writers:
                writer.transport.abort()

    async def _connection(self, origin: Origin, timeout: float | None,
                          request: httpx.Request | None) -> tuple[_Connection, bool]:
        idle = self._idle.get(origin)
        now = time.monotonic()
        while idle:
            connection = idle.pop()
            if now - connection.since <= MAX_IDLE and not connection.reader.at_eof():
                return connection, True
            self._discard(connection)
        scheme, host, port = origin
        tls: ssl.SSLContext | None = None
        if scheme == "https":
            if self._ssl is None:
                self._ssl = ssl.create_default_context()
            tls = self._ssl
        try:
            async with asyncio.timeout(timeout):
                reader, writer = await asyncio.open_connection(
                    host, port, ssl=tls, limit=_MAX_LINE,
                    server_hostname=(self._server_hostname or host) if tls is not None else None)
        except TimeoutError:
            raise httpx.ConnectTimeout(f"timed out connecting to {host}:{port}", request=request) from None
        except (OSError, ssl.SSLError) as err:
            # ssl.SSLError is an OSError; a refused certificate says why (CERTIFICATE_VERIFY_FAILED ...).
            raise httpx.ConnectError(str(err) or type(err).__name__, request=request) from None
        connection = _Connection(reader, writer)
        self._open.add(connection)
        return connection, False

    def _release(self, origin: Origin, connection: _Connection, reusable: bool) -> None:
        self._slots.release()
        if not reusable:
            self._discard(connection)
            return
        connection.since = time.monotonic()
        self._idle.setdefault(origin, deque()).append(connection)

    def _discard(self, connection: _Connection) -> None:
        self._open.discard(connection)
        connection.writer.close()

    async def _exchange(self, origin: Origin, connection: _Connection, data: bytes, timeouts: Timeouts,
                        request: httpx.Request | None) -> Reply:
        writer = connection.writer
        try:
            writer.write(data)
            # Requests are small: the socket usually takes them whole, and then there is nothing to wait for.
            if writer.transport.get_write_buffer_size():
                async with asyncio.timeout(timeouts.write):
                    await writer.drain()
        except TimeoutError:
            raise httpx.WriteTimeout("timed out sending the request", request=request) from None
        except OSError as err:
            raise _StaleConnection from err
        reader = connection.reader
        try:
            async with asyncio.timeout(timeouts.read):
                code, version, headers = await _read_head(reader, request)
        except TimeoutError:
            raise httpx.ReadTimeout("timed out waiting for the response", request=request) from None
        fields = {name.lower(): value for name, value in headers}
        keep_alive = version == b"HTTP/1.1" and fields.get(b"connection", b"").lower() != b"close"

        def release(complete: bool) -> None:
            self._release(origin, connection, keep_alive and complete)

        method = data.split(b" ", 1)[0]
        if method == b"HEAD" or code in _NO_BODY_STATUS or 100 <= code < 200:
            release(True)
            return Reply(code, headers, b"", None, release)
        if fields.get(b"transfer-encoding", b"").lower() == b"chunked":
            return Reply(code, headers, None, _chunks(reader, timeouts.read, request), release)
        length = fields.get(b"content-length")
        if length is None:
            keep_alive = False
            return Reply(code, headers, None, _until_close(reader, timeouts.read, request), release)
        if not length.isdigit():
            raise httpx.RemoteProtocolError(f"invalid Content-Length {length!r}", request=request)
        content = await _read_exactly(reader, int(length), timeouts.read, request)
        release(True)
        return Reply(code, headers, content, None, release)


def origin_of(url: str | httpx.URL) -> Origin:
    parts = urlsplit(str(url))
    scheme = parts.scheme or "http"
    return scheme, parts.hostname or "", parts.port or (443 if scheme == "https" else 80)


# --- httpx --------------------------------------------------------------------------------------------


class LeanTransport(httpx.AsyncBaseTransport):
    """``httpx.AsyncClient(transport=LeanTransport(pool))``: httpx requests on a :class:`ConnectionPool`."""

    def __init__(self, pool: ConnectionPool | None = None) -> None:
        self.pool = pool or ConnectionPool()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        timeout = request.extensions.get("timeout", {})
        body = await request.aread()
        head = [request.method.encode(), b" ", request.url.raw_path, b" HTTP/1.1\r\n"]
        for name, value in request.headers.raw:
            head += (name, b": ", value, b"\r\n")
        head.append(b"\r\n")
        reply = await self.pool.exchange(
            origin_of(request.url), b"".join(head), body,
            Timeouts(timeout.get("connect"), timeout.get("write"), timeout.get("read")), stream=True,
            request=request)
        if reply.chunks is None:
            return httpx.Response(reply.code, headers=reply.headers, content=reply.content or b"",
                                  request=request)
        return httpx.Response(reply.code, headers=reply.headers, stream=_Stream(reply), request=request)

    async def aclose(self) -> None:
        await self.pool.aclose()


class _Stream(httpx.AsyncByteStream):
    def __init__(self, reply: Reply) -> None:
        self._reply = reply
        self._complete = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        assert self._reply.chunks is not None
        async for chunk in self._reply.chunks:
            yield chunk
        self._complete = True

    async def aclose(self) -> None:
        self._reply.close(complete=self._complete)


# --- reading answers ----------------------------------------------------------------------------------


async def _read_head(reader: asyncio.StreamReader, request: httpx.Request | None
                     ) -> tuple[int, bytes, list[tuple[bytes, bytes]]]:
    """The status code, HTTP version and headers of an answer."""
    status_line = await _read_line(reader, request, first=True)
    parts = status_line.split(b" ", 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
        raise httpx.RemoteProtocolError(f"malformed status line {status_line[:100]!r}", request=request)
    headers: list[tuple[bytes, bytes]] = []
    while True:
        line = await _read_line(reader, request)
        if not line:
            return int(parts[1]), parts[0], headers
        name, sep, value = line.partition(b":")
        if not sep:
            raise httpx.RemoteProtocolError(f"malformed header {line[:100]!r}", request=request)
        headers.append((name.strip(), value.strip()))


async def _read_line(reader: asyncio.StreamReader, request: httpx.Request | None, *,
                     first: bool = False) -> bytes:
    try:
        line = await reader.readuntil(b"\r\n")
    except asyncio.IncompleteReadError as err:
        if first and not err.partial:
            raise _StaleConnection from err
        raise httpx.RemoteProtocolError("server disconnected in the middle of a response",
                                        request=request) from None
    except asyncio.LimitOverrunError:
        raise httpx.RemoteProtocolError("response line too long", request=request) from None
    except OSError as err:
        if first:
            raise _StaleConnection from err
        raise httpx.ReadError(str(err) or type(err).__name__, request=request) from None
    return line[:-2]


async def _read_exactly(reader: asyncio.StreamReader, size: int, timeout: float | None,
                        request: httpx.Request | None) -> bytes:
    try:
        async with asyncio.timeout(timeout):
            return await reader.readexactly(size)
    except TimeoutError:
        raise httpx.ReadTimeout("timed out reading the response body", request=request) from None
    except asyncio.IncompleteReadError:
        raise httpx.RemoteProtocolError("server disconnected in the middle of a body",
                                        request=request) from None
    except OSError as err:
        raise httpx.ReadError(str(err) or type(err).__name__, request=request) from None


async def _chunks(reader: asyncio.StreamReader, timeout: float | None,
                  request: httpx.Request | None) -> AsyncIterator[bytes]:
    """The chunks of a ``Transfer-Encoding: chunked`` body, as they arrive."""
    while True:
        try:
            async with asyncio.timeout(timeout):
                size_line = await _read_line(reader, request)
        except TimeoutError:
            raise httpx.ReadTimeout("timed out reading the response body", request=request) from None
        size_text = size_line.split(b";", 1)[0].strip()
        try:
            size = int(size_text, 16)
        except ValueError:
            raise httpx.RemoteProtocolError(f"invalid chunk size {size_text[:20]!r}",
                                            request=request) from None
        if size == 0:
            # Trailers, if any, end with an empty line.
            while await _read_line(reader, request):
                pass
            return
        data = await _read_exactly(reader, size + 2, timeout, request)
        yield data[:-2]


async def _until_close(reader: asyncio.StreamReader, timeout: float | None,
                       request: httpx.Request | None) -> AsyncIterator[bytes]:
    while True:
        try:
            async with asyncio.timeout(timeout):
                data = await reader.read(65536)
        except TimeoutError:
            raise httpx.ReadTimeout("timed out reading the response body", request=request) from None
        except OSError as err:
            raise httpx.ReadError(str(err) or type(err).__name__, request=request) from None
        if not data:
            return
        yield data
