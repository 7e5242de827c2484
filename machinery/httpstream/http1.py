"""HTTP/1.1 heads for connections that are about to be upgraded, or relayed byte for byte.

The streaming endpoints (the kubelet's ``/exec``, ``/attach``, ``/portForward``,
and the APIServer's proxy of them) read one request head, answer it or switch
protocols, and then own the raw connection; no HTTP framework fits that, and
none is needed: a head is a request line, header lines and an empty line.

- :func:`read_request_head` / :func:`read_response_head` read a head from an
  :class:`asyncio.StreamReader` with bounds (line length, header count, a
  deadline), raising :class:`HeadError` on anything malformed;
- :class:`RequestHead` / :class:`ResponseHead` keep the header lines in order,
  with case-insensitive lookups, and serialise back to bytes (a proxy forwards
  heads it has rewritten);
- :func:`simple_response` builds a complete small answer (an error, say).

Pure functions and values besides the two readers.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Final
from urllib.parse import parse_qsl, unquote, urlsplit

MAX_LINE: Final = 64 * 1024
MAX_HEADERS: Final = 200

REASONS: Final = {
    101: "Switching Protocols", 200: "OK", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden",
    404: "Not Found", 405: "Method Not Allowed", 409: "Conflict", 429: "Too Many Requests",
    500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable", 504: "Gateway Timeout",
}


class HeadError(Exception):
    """A malformed or oversized head (or the peer left before sending one)."""


@dataclass(slots=True)
class Headers:
    """Header lines in order; names compare case-insensitively."""

    items: list[tuple[str, str]] = field(default_factory=list)

    def get(self, name: str, default: str | None = None) -> str | None:
        lowered = name.lower()
        return next((v for k, v in self.items if k.lower() == lowered), default)

    def get_all(self, name: str) -> list[str]:
        lowered = name.lower()
        return [v for k, v in self.items if k.lower() == lowered]

    def tokens(self, name: str) -> list[str]:
        """A comma-separated header's tokens, lowercased (``Connection: keep-alive, Upgrade``)."""
        return [t.strip().lower() for v in self.get_all(name) for t in v.split(",") if t.strip()]

    def set(self, name: str, value: str) -> None:
        self.remove(name)
        self.items.append((name, value))

    def add(self, name: str, value: str) -> None:
        self.items.append((name, value))

    def remove(self, name: str) -> None:
        lowered = name.lower()
        self.items = [(k, v) for k, v in self.items if k.lower() != lowered]

    def encode(self) -> bytes:
        return b"".join(f"{k}: {v}\r\n".encode("latin-1") for k, v in self.items)


@dataclass(slots=True)
class RequestHead:
    method: str
    target: str
    headers: Headers
    version: str = "HTTP/1.1"

    @property
    def path(self) -> str:
        """The decoded path, without the query."""
        return unquote(urlsplit(self.target).path)

    @property
    def raw_path(self) -> str:
        return urlsplit(self.target).path

    @property
    def query_string(self) -> str:
        return urlsplit(self.target).query

    def query(self) -> list[tuple[str, str]]:
        """Every query parameter in order (``command`` repeats)."""
        return parse_qsl(self.query_string, keep_blank_values=True)

    def query_values(self, name: str) -> list[str]:
        return [v for k, v in self.query() if k == name]

    def query_value(self, name: str) -> str | None:
        values = self.query_values(name)
        return values[-1] if values else None

    def upgrade(self) -> str | None:
        """The protocol asked for with ``Connection: Upgrade``, lowercased (``websocket``, ``spdy/3.1``)."""
        if "upgrade" not in self.headers.tokens("connection"):
            return None
        value = self.headers.get("upgrade")
        return value.strip().lower() if value else None

    def encode(self) -> bytes:
        return f"{self.method} {self.target} {self.version}\r\n".encode("latin-1") + self.headers.encode() + b"\r\n"


@dataclass(slots=True)
class ResponseHead:
    code: int
    reason: str
    headers: Headers
    version: str = "HTTP/1.1"

    def encode(self) -> bytes:
        return f"{self.version} {self.code} {self.reason}\r\n".encode("latin-1") + self.headers.encode() + b"\r\n"


async def _read_line(reader: asyncio.StreamReader) -> str:
    try:
        line = await reader.readuntil(b"\n")
    except asyncio.IncompleteReadError as err:
        raise HeadError("connection closed before the end of the head") from err
    except asyncio.LimitOverrunError as err:
        raise HeadError("header line too long") from err
    if len(line) > MAX_LINE:
        raise HeadError("header line too long")
    return line.decode("latin-1").rstrip("\r\n")


async def _read_headers(reader: asyncio.StreamReader) -> Headers:
    headers = Headers()
    for _ in range(MAX_HEADERS + 1):
        line = await _read_line(reader)
        if not line:
            return headers
        name, sep, value = line.partition(":")
        if not sep or not name or name != name.strip():
            raise HeadError(f"malformed header line {line[:80]!r}")
        headers.add(name, value.strip())
    raise HeadError("too many header lines")


async def read_request_head(reader: asyncio.StreamReader, *, timeout: float | None = 10.0) -> RequestHead:
    async with asyncio.timeout(timeout):
        line = await _read_line(reader)
        parts = line.split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            raise HeadError(f"malformed request line {line[:80]!r}")
        headers = await _read_headers(reader)
    return RequestHead(parts[0], parts[1], headers, parts[2])


async def read_response_head(reader: asyncio.StreamReader, *, timeout: float | None = 10.0) -> ResponseHead:
    async with asyncio.timeout(timeout):
        line = await _read_line(reader)
        version, _, rest = line.partition(" ")
        code_text, _, reason = rest.partition(" ")
        if not version.startswith("HTTP/1.") or not code_text.isdigit():
            raise HeadError(f"malformed status line {line[:80]!r}")
        headers = await _read_headers(reader)
    return ResponseHead(int(code_text), reason, headers, version)


def simple_response(code: int, body: bytes, *, content_type: str = "text/plain; charset=utf-8",
                    extra: list[tuple[str, str]] | None = None, close: bool = True) -> bytes:
    """A whole answer, closing the connection unless ``close`` is false (errors before an upgrade, small replies)."""
    headers = Headers([("Content-Type", content_type), ("Content-Length", str(len(body))),
                       *([("Connection", "close")] if close else []), *(extra or ())])
    return ResponseHead(code, REASONS.get(code, ""), headers).encode() + body
