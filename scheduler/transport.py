"""A lean HTTP/1.1 transport for httpx: the scheduler's writes without httpcore's per-request cost.

Measured on the project's 2-core machines while binding 2,000 Pods, httpx's
default transport (httpcore over anyio) cost the scheduler about 4 ms of CPU
per request: its connection pool scans every connection, polling each
socket, on every request, and it tries to import the missing ``sniffio`` on
every request. That was half the scheduler's CPU. This transport keeps
httpx's API (the shared :class:`~machinery.client.Client` takes any
``httpx.AsyncBaseTransport``) and does the minimum: one request per
keep-alive connection at a time, written in one ``write``, the response read
by Content-Length or chunks; streamed responses (watches) work too.

- plain ``http://`` only; other schemes go to httpx's own transport;
- a reused connection the server already closed is retried once on a new one
  (the request never reached the server, so even a POST is safe to resend);
- connect and read timeouts come from httpx's request extensions;
- socket errors surface as httpx's ``ConnectError``/``ReadError``/
  ``WriteError``, which callers already handle as ``TransportError``.

This is client infrastructure: it belongs in :mod:`machinery.client` and is
kept here only until the shared client adopts it (see the scheduler's report).

Concurrency: any number of tasks may send requests; each connection belongs
to one request at a time, and idle ones wait in a per-host list.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from typing import Final

import httpx

_MAX_IDLE_PER_HOST: Final = 64
_STREAM_LIMIT: Final = 64 * 1024 * 1024

_Key = tuple[str, int]


class _Connection:
    __slots__ = ("reader", "writer")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    def close(self) -> None:
        self.writer.close()


class _Body(httpx.AsyncByteStream):
    """A response body read off its connection; the connection goes back to the pool once it is all read."""

    def __init__(self, transport: PlainHTTPTransport, key: _Key, conn: _Connection, length: int | None,
                 chunked: bool, reusable: bool, read_timeout: float | None) -> None:
        self._transport = transport
        self._key = key
        self._conn = conn
        self._length = length
        self._chunked = chunked
        self._reusable = reusable
        self._read_timeout = read_timeout
        self._complete = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        # Never yield inside a timeout: the consumer's own awaits would count against it.
        while (data := await self._next()) is not None:
            yield data
        self._complete = True

    async def _next(self) -> bytes | None:
        """The next piece of the body, None at its end."""
        reader = self._conn.reader
        with _mapped(httpx.ReadError, httpx.ReadTimeout):
            async with asyncio.timeout(self._read_timeout):
                if self._chunked:
                    size = int((await reader.readline()).split(b";", 1)[0], 16)
                    if size == 0:
                        await reader.readline()
                        return None
                    data = await reader.readexactly(size)
                    await reader.readline()
                    return data
                if self._length is not None:
                    if not self._length:
                        return None
                    data = await reader.readexactly(self._length)
                    self._length = 0
                    return data
                # Neither length nor chunks: the body ends when the server closes the connection.
                self._reusable = False
                return await reader.read(65536) or None

    async def aclose(self) -> None:
        if self._complete and self._reusable:
            self._transport._release(self._key, self._conn)
        else:
            self._conn.close()


class PlainHTTPTransport(httpx.AsyncBaseTransport):
    """httpx transport for ``http://`` URLs over pooled keep-alive asyncio streams (see the module docstring)."""

    def __init__(self) -> None:
        self._idle: dict[_Key, list[_Connection]] = {}
        self._fallback: httpx.AsyncHTTPTransport | None = None

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.scheme != "http":
            if self._fallback is None:
                self._fallback = httpx.AsyncHTTPTransport()
            return await self._fallback.handle_async_request(request)
        key = (request.url.host, request.url.port or 80)
        timeouts = request.extensions.get("timeout") or {}
        body = await request.aread()
        head = self._head(request, body)
        while True:
            conn, reused = self._acquire(key)
            if conn is None:
                with _mapped(httpx.ConnectError, httpx.ConnectTimeout):
                    async with asyncio.timeout(timeouts.get("connect")):
                        reader, writer = await asyncio.open_connection(key[0], key[1], limit=_STREAM_LIMIT)
                conn = _Connection(reader, writer)
            try:
                with _mapped(httpx.WriteError, httpx.WriteTimeout):
                    conn.writer.write(head + body)
                with _mapped(httpx.ReadError, httpx.ReadTimeout):
                    async with asyncio.timeout(timeouts.get("read")):
                        status_line = await conn.reader.readline()
            except httpx.TransportError:
                conn.close()
                if reused:
                    # An idle connection the server had closed: the request never reached it.
                    continue
                raise
            except BaseException:
                conn.close()
                raise
            if status_line:
                break
            conn.close()
            if not reused:
                raise httpx.RemoteProtocolError("the server closed the connection without answering",
                                                request=request)
        try:
            return await self._response(request, key, conn, status_line, timeouts.get("read"))
        except BaseException:
            conn.close()
            raise

    @staticmethod
    def _head(request: httpx.Request, body: bytes) -> bytes:
        lines = [b"%s %s HTTP/1.1\r\n" % (request.method.encode(), request.url.raw_path)]
        has_length = False
        for name, value in request.headers.raw:
            has_length = has_length or name.lower() == b"content-length"
            lines.append(b"%s: %s\r\n" % (name, value))
        if body and not has_length:
            lines.append(b"Content-Length: %d\r\n" % len(body))
        lines.append(b"\r\n")
        return b"".join(lines)

    async def _response(self, request: httpx.Request, key: _Key, conn: _Connection, status_line: bytes,
                        read_timeout: float | None) -> httpx.Response:
        try:
            version, status, _ = status_line.split(b" ", 2)
            code = int(status)
        except ValueError:
            raise httpx.RemoteProtocolError(f"malformed status line {status_line[:80]!r}", request=request) from None
        headers: list[tuple[bytes, bytes]] = []
        length: int | None = None
        chunked = False
        reusable = version == b"HTTP/1.1"
        with _mapped(httpx.ReadError, httpx.ReadTimeout):
            async with asyncio.timeout(read_timeout):
                while (line := await conn.reader.readline()) not in (b"\r\n", b"\n", b""):
                    name, _, value = line.partition(b":")
                    name, value = name.strip(), value.strip()
                    headers.append((name, value))
                    lower = name.lower()
                    if lower == b"content-length":
                        length = int(value)
                    elif lower == b"transfer-encoding":
                        chunked = b"chunked" in value.lower()
                    elif lower == b"connection":
                        reusable = reusable and value.lower() != b"close"
        if request.method == "HEAD" or code in (204, 304) or 100 <= code < 200:
            length, chunked = 0, False
        stream = _Body(self, key, conn, length, chunked, reusable, read_timeout)
        return httpx.Response(code, headers=headers, stream=stream, request=request)

    def _acquire(self, key: _Key) -> tuple[_Connection | None, bool]:
        idle = self._idle.get(key)
        while idle:
            conn = idle.pop()
            if not conn.reader.at_eof():
                return conn, True
            conn.close()
        return None, False

    def _release(self, key: _Key, conn: _Connection) -> None:
        idle = self._idle.setdefault(key, [])
        if len(idle) < _MAX_IDLE_PER_HOST:
            idle.append(conn)
        else:
            conn.close()

    async def aclose(self) -> None:
        for idle in self._idle.values():
            for conn in idle:
                conn.close()
        self._idle.clear()
        if self._fallback is not None:
            await self._fallback.aclose()


@contextlib.contextmanager
def _mapped(error: type[httpx.TransportError], timeout: type[httpx.TimeoutException]) -> Iterator[None]:
    """Socket errors and timeouts as httpx's exceptions, as httpcore maps them."""
    try:
        yield
    except TimeoutError:
        raise timeout("timed out") from None
    except (OSError, asyncio.IncompleteReadError, ValueError) as err:
        raise error(f"{type(err).__name__}: {err}") from None
