"""A minimal HTTP/1.1 client for the benchmarks, so that the client is never what is measured.

httpx spends about 4 ms of CPU per request, more than the APIServer spends
serving one; on a 2-core machine that would measure the load generator. This
client keeps one connection per worker, writes a request, reads the status
line, headers and a Content-Length or chunked body, and nothing else.

One :class:`Connection` belongs to one task at a time. :func:`open_watch` and
:func:`watch_lines` are the watch streams every scenario reads.

An :class:`Endpoint` is a URL string that also carries the TLS settings to
reach it (the cluster CA and the client's certificate): every scenario passes
URLs around, and an ``https`` one needs both to connect.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Final, Self
from urllib.parse import urlsplit

#: How many times a watch answered 504 is retried, a second apart.
_WATCH_ATTEMPTS: Final = 30


class Endpoint(str):
    """A URL, with the ``ssl.SSLContext`` that reaches it (None for plain HTTP)."""

    tls: ssl.SSLContext | None

    def __new__(cls, url: str, tls: ssl.SSLContext | None = None) -> Self:
        endpoint = super().__new__(cls, url)
        endpoint.tls = tls
        return endpoint


@dataclass(slots=True)
class Reply:
    status: int
    body: bytes


class Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, host: str) -> None:
        self.reader = reader
        self.writer = writer
        self.host = host

    @classmethod
    async def open(cls, url: str) -> Connection:
        parts = urlsplit(url)
        tls = getattr(url, "tls", None) if parts.scheme == "https" else None
        if parts.scheme == "https" and tls is None:
            tls = ssl.create_default_context()
        host, port = parts.hostname or "127.0.0.1", parts.port or (443 if tls else 80)
        reader, writer = await asyncio.open_connection(host, port, limit=64 * 1024 * 1024, ssl=tls)
        return cls(reader, writer, f"{host}:{port}")

    async def request(self, method: str, path: str, body: bytes | None = None,
                      content_type: str = "application/json") -> Reply:
        head = f"{method} {path} HTTP/1.1\r\nHost: {self.host}\r\n"
        if body is not None:
            head += f"Content-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
        self.writer.write(head.encode() + b"\r\n" + (body or b""))
        status, headers = await self.read_head()
        if headers.get("transfer-encoding") == "chunked":
            chunks = []
            while True:
                chunk = await self.read_chunk()
                if chunk is None:
                    break
                chunks.append(chunk)
            return Reply(status, b"".join(chunks))
        length = int(headers.get("content-length", "0"))
        return Reply(status, await self.reader.readexactly(length) if length else b"")

    async def read_head(self) -> tuple[int, dict[str, str]]:
        line = await self.reader.readline()
        if not line:
            raise ConnectionError("the server closed the connection")
        status = int(line.split(b" ", 2)[1])
        headers: dict[str, str] = {}
        while True:
            h = await self.reader.readline()
            if h in (b"\r\n", b""):
                return status, headers
            k, _, v = h.decode("latin-1").partition(":")
            headers[k.strip().lower()] = v.strip()

    async def read_chunk(self) -> bytes | None:
        """The next chunk of a chunked body (None at its end)."""
        size_line = await self.reader.readline()
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            await self.reader.readline()
            return None
        data = await self.reader.readexactly(size)
        await self.reader.readline()
        return data

    def close(self) -> None:
        """Close at once. A TLS close waits for the server's close_notify, on the event loop: a loop that
        ends first (``asyncio.run`` returning) leaves the socket open until the garbage collector finds it,
        with a ResourceWarning wherever that happens to be. Aborting hands the socket back on the loop's
        next turn; the server sees the connection end without a close_notify, as after a client's crash."""
        self.writer.transport.abort()


async def open_watch(url: str, path: str) -> Connection:
    """A watch stream of ``path`` (with ``watch=true``), its head read.

    A busy APIServer whose watch cache lags the list answers 504 for a while:
    retried every second. A whole answer rather than a stream (an ERROR event
    such as 410 Expired) or any other status raises, with the answer.
    """
    for _ in range(_WATCH_ATTEMPTS):
        conn = await Connection.open(url)
        conn.writer.write(f"GET {path} HTTP/1.1\r\nHost: {conn.host}\r\n\r\n".encode())
        status, headers = await conn.read_head()
        if status == 200 and headers.get("transfer-encoding") == "chunked":
            return conn
        if status != 504:
            body = await conn.reader.read(int(headers.get("content-length", "0")) or 4096)
            conn.close()
            raise RuntimeError(f"watch of {path} answered {status}: {body[:300]!r}")
        conn.close()
        await asyncio.sleep(1.0)
    raise RuntimeError(f"watch of {path} still answered 504 after {_WATCH_ATTEMPTS} attempts")


async def watch_lines(conn: Connection) -> AsyncIterator[tuple[float, bytes]]:
    """(arrival time, line) of each event of a watch stream, until the server ends it; closes ``conn``."""
    pending = b""
    try:
        while (chunk := await conn.read_chunk()) is not None:
            now = time.perf_counter()
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                if line:
                    yield now, line
    finally:
        conn.close()
