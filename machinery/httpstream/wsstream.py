"""WebSocket channels, as Kubernetes multiplexes streams over one WebSocket (apimachinery's ``wsstream``).

The ``channel.k8s.io`` sub-protocols put the channel number in front of every
message: one byte in the binary ones (``channel.k8s.io``, ``v4.channel.k8s.io``,
``v5.channel.k8s.io``), one ASCII digit followed by base64 in the text ones
(``base64.channel.k8s.io``, ``v4.base64.channel.k8s.io``). ``v5`` adds the
close signal: the message ``[255, n]`` says its sender will write no more on
channel ``n``, which is how a client ends stdin without closing the socket.

Pieces:

- :func:`server_handshake` checks an upgrade request and picks the
  sub-protocol (the first the client offers that the server supports, as
  Kubernetes does; ``""`` stands for "no sub-protocol"), answering 403 without
  a match, as golang.org/x/net/websocket does;
- :class:`WebSocket` frames messages over an asyncio connection with the
  `websockets <https://websockets.readthedocs.io>`_ library's sans-I/O
  protocol (masking, fragments, ping/pong and the close handshake are its
  job), for either side;
- :class:`ChannelCodec` adds and strips the channel prefix;
- :class:`TunnelStream` turns a WebSocket into a byte stream, for SPDY
  tunnelled in binary messages (``SPDY/3.1+portforward.k8s.io``).

Concurrency: one task reads (:meth:`WebSocket.recv`); any task may send.
Every send hands its bytes to the transport before yielding, so frames never
interleave.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from websockets.frames import Frame, Opcode
from websockets.protocol import Protocol, Side

from machinery.httpstream import split_protocols
from machinery.httpstream.http1 import Headers, RequestHead, ResponseHead

_GUID: Final = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
#: Largest message accepted (the Python client sends up to 1 MiB of port-forward data at once).
MAX_MESSAGE: Final = 16 * 1024 * 1024

CHANNEL_PROTOCOL: Final = "channel.k8s.io"
BASE64_CHANNEL_PROTOCOL: Final = "base64.channel.k8s.io"


def is_base64(protocol: str) -> bool:
    return protocol.endswith(BASE64_CHANNEL_PROTOCOL)


class HandshakeError(Exception):
    """The upgrade cannot be accepted: the status code and plain-text body to answer with."""

    def __init__(self, code: int, message: str, headers: list[tuple[str, str]] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.headers = headers or []


def accept_key(key: str) -> str:
    return base64.b64encode(hashlib.sha1((key + _GUID).encode(), usedforsecurity=False).digest()).decode()


def client_protocols(request: RequestHead) -> list[str]:
    return split_protocols(request.headers.get_all("sec-websocket-protocol"))


def server_handshake(request: RequestHead, supported: Sequence[str]) -> tuple[ResponseHead, str]:
    """The 101 answer to a WebSocket upgrade and the chosen sub-protocol (``""`` when none).

    ``supported`` may include ``""``: then a client that offers no sub-protocol is accepted.
    """
    if request.method != "GET":
        raise HandshakeError(405, "websocket upgrades must use GET\n")
    if request.headers.get("sec-websocket-version") != "13":
        raise HandshakeError(426, "unsupported websocket version\n", [("Sec-WebSocket-Version", "13")])
    key = request.headers.get("sec-websocket-key")
    if not key:
        raise HandshakeError(400, "missing Sec-WebSocket-Key\n")
    offered = client_protocols(request) or [""]
    chosen = next((p for p in offered if p in supported), None)
    if chosen is None:
        raise HandshakeError(403, "")
    headers = Headers([("Upgrade", "websocket"), ("Connection", "Upgrade"),
                       ("Sec-WebSocket-Accept", accept_key(key))])
    if chosen:
        headers.add("Sec-WebSocket-Protocol", chosen)
    return ResponseHead(101, "Switching Protocols", headers), chosen


def client_request(host: str, target: str, protocols: Sequence[str],
                   extra: Sequence[tuple[str, str]] = ()) -> tuple[RequestHead, str]:
    """A WebSocket upgrade request and its key (for tests, the bench and kubesim's own clients)."""
    key = base64.b64encode(os.urandom(16)).decode()
    headers = Headers([("Host", host), ("Upgrade", "websocket"), ("Connection", "Upgrade"),
                       ("Sec-WebSocket-Key", key), ("Sec-WebSocket-Version", "13"), *extra])
    if protocols:
        headers.add("Sec-WebSocket-Protocol", ", ".join(protocols))
    return RequestHead("GET", target, headers), key


class WebSocket:
    """Messages over an asyncio connection whose opening handshake is already done."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, server: bool,
                 subprotocol: str = "", max_size: int = MAX_MESSAGE) -> None:
        self._reader = reader
        self._writer = writer
        self._protocol = Protocol(Side.SERVER if server else Side.CLIENT, max_size=max_size)
        self.subprotocol = subprotocol
        self._pending: list[tuple[Opcode, bytes]] = []
        self._fragments: list[bytes] = []
        self._fragment_opcode: Opcode | None = None
        self.closed = False

    def _flush(self) -> None:
        for data in self._protocol.data_to_send():
            if data:
                self._writer.write(data)
            elif self._writer.can_write_eof():
                with contextlib.suppress(OSError):
                    self._writer.write_eof()

    async def recv(self) -> tuple[bool, bytes] | None:
        """The next message as (is_text, data), or None once the connection is closed."""
        while not self._pending:
            if self.closed:
                return None
            try:
                data = await self._reader.read(64 * 1024)
            except (ConnectionError, OSError):
                data = b""
            if data:
                self._protocol.receive_data(data)
            else:
                self._protocol.receive_eof()
            self._collect()
            self._flush()
            with contextlib.suppress(ConnectionError, OSError):
                await self._writer.drain()
            if not data:
                self.closed = True
        opcode, payload = self._pending.pop(0)
        return opcode is Opcode.TEXT, payload

    def _collect(self) -> None:
        for frame in self._protocol.events_received():
            if not isinstance(frame, Frame):
                continue
            if frame.opcode in (Opcode.TEXT, Opcode.BINARY):
                if frame.fin:
                    self._pending.append((frame.opcode, bytes(frame.data)))
                else:
                    self._fragment_opcode, self._fragments = frame.opcode, [bytes(frame.data)]
            elif frame.opcode is Opcode.CONT and self._fragment_opcode is not None:
                self._fragments.append(bytes(frame.data))
                if frame.fin:
                    self._pending.append((self._fragment_opcode, b"".join(self._fragments)))
                    self._fragment_opcode, self._fragments = None, []
            elif frame.opcode is Opcode.CLOSE:
                self.closed = True

    async def send(self, data: bytes, *, text: bool = False) -> None:
        if self.closed and self._protocol.close_sent is not None:
            raise ConnectionResetError("the websocket is closed")
        try:
            if text:
                self._protocol.send_text(data)
            else:
                self._protocol.send_binary(data)
        except Exception as err:  # websockets raises InvalidState once closing
            raise ConnectionResetError(f"the websocket is closed: {err}") from err
        self._flush()
        try:
            await self._writer.drain()
        except (ConnectionError, OSError) as err:
            raise ConnectionResetError(f"the websocket is closed: {err}") from err

    async def ping(self, data: bytes = b"") -> None:
        with contextlib.suppress(Exception):
            self._protocol.send_ping(data)
            self._flush()
            await self._writer.drain()

    async def close(self, code: int = 1000, reason: str = "") -> None:
        """Send a close frame (a normal closure by default) and close the TCP connection."""
        with contextlib.suppress(Exception):
            if self._protocol.close_sent is None:
                self._protocol.send_close(code, reason)
            self._flush()
            await self._writer.drain()
        self.closed = True
        self._writer.close()
        with contextlib.suppress(ConnectionError, OSError):
            await self._writer.wait_closed()


@dataclass(frozen=True, slots=True)
class ChannelCodec:
    """The channel prefix of a ``channel.k8s.io`` protocol; base64 ones carry text."""

    base64: bool = False

    def encode(self, channel: int, data: bytes) -> bytes:
        if self.base64:
            return bytes((ord("0") + channel,)) + base64.b64encode(data)
        return bytes((channel,)) + data

    def decode(self, message: bytes) -> tuple[int, bytes] | None:
        """(channel, data), or None for an empty or undecodable message (which Kubernetes skips)."""
        if not message:
            return None
        if self.base64:
            try:
                return message[0] - ord("0"), base64.b64decode(message[1:], validate=True)
            except (binascii.Error, ValueError):
                return None
        return message[0], message[1:]


class TunnelStream:
    """A WebSocket as a byte stream: each binary message is the next bytes (SPDY tunnelling)."""

    def __init__(self, ws: WebSocket) -> None:
        self.ws = ws

    async def read(self) -> bytes:
        while True:
            message = await self.ws.recv()
            if message is None:
                return b""
            is_text, data = message
            if data and not is_text:
                return data

    async def write(self, data: bytes) -> None:
        await self.ws.send(data)

    async def close(self) -> None:
        await self.ws.close()
