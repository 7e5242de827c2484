"""A minimal HTTP/1.1 client for the benchmarks, so that the client is never what is measured.

httpx spends about 4 ms of CPU per request, more than the APIServer spends
serving one; on a 2-core machine that would measure the load generator. This
client keeps one connection per worker, writes a request, reads the status
line, headers and a Content-Length or chunked body, and nothing else.

One :class:`Connection` belongs to one task at a time.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from urllib.parse import urlsplit


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
        host, port = parts.hostname or "127.0.0.1", parts.port or 80
        reader, writer = await asyncio.open_connection(host, port, limit=64 * 1024 * 1024)
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
        self.writer.close()
