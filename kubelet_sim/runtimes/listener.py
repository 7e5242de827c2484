"""The simulated runtime's built-in listener: what a forwarded connection to a declared port reaches.

A simulated container runs no server, but ``kubectl port-forward pod/web
8080:80`` followed by ``curl localhost:8080`` should answer something, as a
demo expects. Every TCP port a container declares answers HTTP/1.1:

- any request: ``200 OK`` with the Pod's name and a newline as the body;
- ``GET /bytes/N``: N bytes (at most 1 GiB), so that throughput through the
  APIServer can be measured (``kubesim bench``).

Keep-alive as HTTP/1.1 has it; a malformed request gets ``400`` and the
connection closes. Runs on the forwarding task; no state.
"""

from __future__ import annotations

import re
from typing import Final

from kubelet_sim.streaming.portforward import Channel

MAX_HEAD: Final = 64 * 1024
MAX_BYTES: Final = 1 << 30
_CHUNK: Final = b"kubesim " * 8192


async def serve_http(channel: Channel, pod_name: str) -> None:
    """Answer requests on the channel until the client closes it."""
    buffer = bytearray()
    while True:
        while b"\r\n\r\n" not in buffer:
            data = await channel.read()
            if not data:
                await channel.close()
                return
            buffer += data
            if len(buffer) > MAX_HEAD:
                await _answer(channel, 400, b"request head too large\n", close=True)
                return
        head, _, rest = bytes(buffer).partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            await _answer(channel, 400, b"malformed request line\n", close=True)
            return
        method, target, version = parts
        headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
        try:
            length = int(headers.get("content-length") or 0)
            if length < 0:
                raise ValueError
        except ValueError:
            await _answer(channel, 400, b"invalid Content-Length\n", close=True)
            return
        # Discard the request body.
        while len(rest) < length:
            data = await channel.read()
            if not data:
                break
            rest += data
        buffer = bytearray(rest[length:])
        close = headers.get("connection", "").lower() == "close" or version == "HTTP/1.0"
        match = re.fullmatch(r"/bytes/(\d+)", target.split("?")[0])
        if method == "GET" and match is not None:
            await _stream(channel, min(int(match.group(1)), MAX_BYTES), close)
        else:
            await _answer(channel, 200, f"{pod_name}\n".encode(), close=close, head_only=method == "HEAD")
        if close:
            await channel.close()
            return


async def _answer(channel: Channel, code: int, body: bytes, *, close: bool, head_only: bool = False) -> None:
    reason = {200: "OK", 400: "Bad Request"}[code]
    head = (f"HTTP/1.1 {code} {reason}\r\nServer: kubesim\r\nContent-Type: text/plain; charset=utf-8\r\n"
            f"Content-Length: {len(body)}\r\n" + ("Connection: close\r\n" if close else "") + "\r\n").encode()
    await channel.write(head + (b"" if head_only else body))
    if close and code == 400:
        await channel.close()


async def _stream(channel: Channel, size: int, close: bool) -> None:
    head = (f"HTTP/1.1 200 OK\r\nServer: kubesim\r\nContent-Type: application/octet-stream\r\n"
            f"Content-Length: {size}\r\n" + ("Connection: close\r\n" if close else "") + "\r\n").encode()
    await channel.write(head)
    sent = 0
    while sent < size:
        piece = _CHUNK[:min(len(_CHUNK), size - sent)]
        await channel.write(piece)
        sent += len(piece)
