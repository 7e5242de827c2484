"""A raw HTTP/1.1 client for hostile requests: bytes out, one parsed response (or what went wrong) back.

httpx refuses to send most of what these tests need (malformed request lines,
conflicting framing headers, bodies that disagree with Content-Length), so the
hostile suites write bytes to a socket and parse the answer themselves. A
response is read to its end (Content-Length or chunked); a reset, an early
close or a deadline is reported as such, never raised, so a table of cases
can assert on each.

The APIServer serves HTTPS: ``tls`` (an ``ssl.SSLContext``, e.g.
``harness.admin_tls()``) wraps the socket before the bytes go out; without it
the bytes go in plain text (to an ``--insecure-port``).
"""

from __future__ import annotations

import socket
import ssl
import time
from dataclasses import dataclass, field
from typing import Any

import orjson


@dataclass
class RawResponse:
    status: int = 0
    headers: dict[str, list[str]] = field(default_factory=dict)
    body: bytes = b""
    #: "" when a whole response arrived, else "reset", "closed" or "timeout".
    failure: str = ""

    def header(self, name: str) -> str | None:
        values = self.headers.get(name.lower())
        return values[0] if values else None

    def json(self) -> Any:
        return orjson.loads(self.body)

    def is_status(self) -> bool:
        try:
            body = self.json()
        except orjson.JSONDecodeError:
            return False
        return isinstance(body, dict) and body.get("kind") == "Status" and body.get("code") == self.status


def _read_response(sock: socket.socket, deadline: float, head_only: bool) -> RawResponse:
    buf = b""
    resp = RawResponse()

    def fill() -> bool:
        nonlocal buf
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            resp.failure = "timeout"
            return False
        sock.settimeout(remaining)
        try:
            chunk = sock.recv(1 << 16)
        except (ConnectionResetError, ssl.SSLEOFError):
            resp.failure = "reset"
            return False
        except ssl.SSLZeroReturnError:
            resp.failure = "closed"
            return False
        except TimeoutError:
            resp.failure = "timeout"
            return False
        if not chunk:
            resp.failure = "closed"
            return False
        buf += chunk
        return True

    while b"\r\n\r\n" not in buf:
        if not fill():
            return resp
    head, _, buf = buf.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    resp.status = int(lines[0].split(" ")[1])
    for line in lines[1:]:
        name, _, value = line.partition(":")
        resp.headers.setdefault(name.strip().lower(), []).append(value.strip())
    if head_only or resp.status in (204, 304):
        return resp
    length = resp.header("content-length")
    if length is not None:
        while len(buf) < int(length):
            if not fill():
                return resp
        resp.body = buf[: int(length)]
        return resp
    if (resp.header("transfer-encoding") or "").lower() == "chunked":
        body = b""
        while True:
            while b"\r\n" not in buf:
                if not fill():
                    resp.body = body
                    return resp
            size_line, _, buf = buf.partition(b"\r\n")
            size = int(size_line.split(b";")[0], 16)
            while len(buf) < size + 2:
                if not fill():
                    resp.body = body
                    return resp
            body += buf[:size]
            buf = buf[size + 2:]
            if size == 0:
                resp.body = body
                return resp
    while fill():
        pass
    resp.failure = ""
    resp.body = buf
    return resp


def connect(port: int, tls: ssl.SSLContext | None, timeout: float | None = None) -> socket.socket:
    """A connection to 127.0.0.1:port, through TLS (handshake done) when ``tls`` is given."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    if tls is None:
        return sock
    try:
        return tls.wrap_socket(sock, server_hostname="127.0.0.1")
    except BaseException:
        sock.close()
        raise


def exchange(port: int, data: bytes | list[tuple[bytes, float]], *, timeout: float = 10.0,
             head_only: bool = False, read_while_sending: bool = True,
             tls: ssl.SSLContext | None = None) -> RawResponse:
    """Send ``data`` (or chunks with a pause after each) to 127.0.0.1:port and read one response."""
    deadline = time.monotonic() + timeout
    with connect(port, tls, timeout) as sock:
        parts = data if isinstance(data, list) else [(data, 0.0)]
        try:
            for chunk, pause in parts:
                sock.sendall(chunk)
                if pause:
                    time.sleep(pause)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLEOFError):
            # The server may answer before reading everything (a 413): the answer still counts.
            pass
        return _read_response(sock, deadline, head_only)


def request(method: str, target: str, *, headers: dict[str, str] | None = None, body: bytes = b"",
            content_length: int | None = None) -> bytes:
    """The bytes of one HTTP/1.1 request (Host and Content-Length added unless given)."""
    lines = [f"{method} {target} HTTP/1.1", "Host: 127.0.0.1"]
    given = {k.lower() for k in (headers or {})}
    for k, v in (headers or {}).items():
        lines.append(f"{k}: {v}")
    if "content-length" not in given and (body or content_length is not None):
        lines.append(f"Content-Length: {len(body) if content_length is None else content_length}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body
