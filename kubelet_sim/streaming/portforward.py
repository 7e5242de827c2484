"""The kubelet's port-forward server: SPDY, WebSocket channels, and SPDY tunnelled in WebSocket.

As ``pkg/kubelet/cri/streaming/portforward`` serves it:

- **SPDY** (``X-Stream-Protocol-Version: portforward.k8s.io``): one
  connection carries any number of forwarded connections. For each, the
  client opens an error stream and a data stream with the same ``requestID``
  and a ``port`` header; once both are there the kubelet connects to the port
  and copies bytes both ways. A failure is written on the error stream (``error
  forwarding port 81 to pod ..., uid ...: <why>``), both streams close, and the
  SPDY connection stays usable for the next one. Streams without a valid port
  or stream type are refused; a pair still incomplete after 30 s is reported
  on its error stream;
- **SPDY over WebSocket** (``SPDY/3.1+portforward.k8s.io``, kubectl 1.30 and
  later): the same, with the SPDY bytes in binary WebSocket messages;
- **WebSocket channels** (``v4.channel.k8s.io``, ``v4.base64.channel.k8s.io``
  or none; the Python client's ``portforward``): ``?ports=80,443`` names the
  ports; channel ``2i`` carries port ``i``'s data and ``2i+1`` its errors, each
  starting with the port as two little-endian bytes; one connection per port.

What "connect to the port" means is the runtime's :data:`Forwarder`.

Concurrency: per connection, the transport's reader task, plus one task per
forwarded connection; all end when the upgraded connection does.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import struct
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Final, Protocol

from kubelet_sim.streaming.remotecommand import BadRequest, accepted_versions_header, spdy_handshake
from kubelet_sim.streaming.session import Pipe
from machinery.httpstream import (
    HEADER_PORT,
    HEADER_REQUEST_ID,
    HEADER_STREAM_TYPE,
    PORT_FORWARD_PROTOCOL_V1,
    SPDY_TUNNELING_PREFIX,
    STREAM_TYPE_DATA,
    STREAM_TYPE_ERROR,
    UPGRADE_SPDY,
)
from machinery.httpstream.http1 import RequestHead, simple_response
from machinery.httpstream.spdy import ByteStream, SpdyConnection, SpdyStream, StreamPair
from machinery.httpstream.wsstream import (
    BASE64_CHANNEL_PROTOCOL,
    CHANNEL_PROTOCOL,
    ChannelCodec,
    HandshakeError,
    TunnelStream,
    WebSocket,
    client_protocols,
    is_base64,
    server_handshake,
)

log = logging.getLogger("kubelet_sim.streaming")

STREAM_CREATION_TIMEOUT: Final = 30.0
TUNNEL_PROTOCOL: Final = SPDY_TUNNELING_PREFIX + PORT_FORWARD_PROTOCOL_V1
WEBSOCKET_PROTOCOLS: Final = (f"v4.{CHANNEL_PROTOCOL}", f"v4.{BASE64_CHANNEL_PROTOCOL}", "")


class Channel(Protocol):
    """One forwarded connection's bytes, as the runtime sees them."""

    async def read(self) -> bytes:
        """Bytes from the client; ``b""`` once it closed its side."""
        ...

    async def write(self, data: bytes) -> None: ...

    async def close(self) -> None:
        """No more bytes to the client."""
        ...


class PortForwardError(Exception):
    """The runtime could not connect to the port; the message goes on the error stream."""


#: Connects ``port`` of the Pod to the channel and copies until either side is done.
Forwarder = Callable[[int, Channel], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Target:
    """Whom the messages name: ``error forwarding port P to pod <id>, uid <uid>: ...``."""

    pod_id: str
    uid: str

    def failure(self, port: int, err: Exception) -> bytes:
        # With a CRI runtime the "pod" is the sandbox id and the uid is empty ("uid : ..."), as kubectl shows it.
        return f"error forwarding port {port} to pod {self.pod_id}, uid {self.uid}: {err}".encode()


def parse_ports(request: RequestHead) -> list[int]:
    """The kubelet's ``NewV4Options`` for WebSocket requests: ``port`` is required and each must be > 0."""
    values = request.query_values("port")
    if not values:
        raise BadRequest(400, 'query parameter "port" is required')
    ports: list[int] = []
    for value in values:
        if not value:
            raise BadRequest(400, 'query parameter "port" cannot be empty')
        for text in value.split(","):
            try:
                port = int(text)
                if not 0 <= port < 65536:
                    raise ValueError
            except ValueError:
                raise BadRequest(400, f'unable to parse "{value}" as a port: strconv.ParseUint: parsing '
                                      f'"{text}": invalid syntax') from None
            if port < 1:
                raise BadRequest(400, f'port "{value}" must be > 0')
            ports.append(port)
    return ports


async def serve(request: RequestHead, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *,
                forwarder: Forwarder, target: Target) -> None:
    """Upgrade the connection and forward what the client asks for until it goes away."""
    upgrade = request.upgrade()
    if upgrade == "websocket":
        if TUNNEL_PROTOCOL in client_protocols(request):
            await _serve_tunnel(request, reader, writer, forwarder, target)
        else:
            await _serve_channels(request, reader, writer, forwarder, target)
    elif upgrade == UPGRADE_SPDY.lower():
        try:
            response, _ = spdy_handshake(request, (PORT_FORWARD_PROTOCOL_V1,))
        except BadRequest as err:
            extra = accepted_versions_header((PORT_FORWARD_PROTOCOL_V1,)) if err.code == 403 else None
            writer.write(simple_response(err.code, (err.message + "\n").encode(), extra=extra))
            await writer.drain()
            return
        writer.write(response.encode())
        await writer.drain()
        await serve_spdy(StreamPair(reader, writer), forwarder, target)
    else:
        raise BadRequest(400, "Upgrade request required")


async def _serve_tunnel(request: RequestHead, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                       forwarder: Forwarder, target: Target) -> None:
    try:
        response, _ = server_handshake(request, (TUNNEL_PROTOCOL,))
    except HandshakeError as err:
        writer.write(simple_response(err.code, err.message.encode(), extra=err.headers))
        await writer.drain()
        return
    writer.write(response.encode())
    await writer.drain()
    await serve_spdy(TunnelStream(WebSocket(reader, writer, server=True, subprotocol=TUNNEL_PROTOCOL)), forwarder,
                     target)


# --- SPDY ---------------------------------------------------------------------------------------------


def _check_stream(stream: SpdyStream) -> str | None:
    """The kubelet's ``httpStreamReceived``: a stream needs a port (1-65535) and a known type."""
    port = stream.header(HEADER_PORT)
    if not port:
        return f'"{HEADER_PORT}" header is required'
    try:
        number = int(port)
        if not 0 <= number < 65536:
            raise ValueError
    except ValueError:
        return f'unable to parse "{port}" as a port'
    if number < 1:
        return f'port "{port}" must be > 0'
    kind = stream.header(HEADER_STREAM_TYPE)
    if not kind:
        return f'"{HEADER_STREAM_TYPE}" header is required'
    if kind not in (STREAM_TYPE_ERROR, STREAM_TYPE_DATA):
        return f'invalid stream type "{kind}"'
    return None


@dataclass(eq=False)
class _Pair:
    request_id: str
    data: SpdyStream | None = None
    error: SpdyStream | None = None
    complete: asyncio.Event = field(default_factory=asyncio.Event)


class _SpdyChannel:
    def __init__(self, stream: SpdyStream) -> None:
        self._stream = stream

    async def read(self) -> bytes:
        return await self._stream.read()

    async def write(self, data: bytes) -> None:
        await self._stream.write(data)

    async def close(self) -> None:
        await self._stream.close()


async def serve_spdy(io: ByteStream, forwarder: Forwarder, target: Target) -> None:
    connection = SpdyConnection(io, server=True, on_stream=_check_stream, name="portforward")
    reading = asyncio.create_task(connection.run(), name="portforward-spdy-reader")
    pairs: dict[str, _Pair] = {}
    tasks: set[asyncio.Task[None]] = set()

    def spawn(coro: Awaitable[None], name: str) -> None:
        task: asyncio.Task[None] = asyncio.ensure_future(coro)
        task.set_name(name)
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    async def monitor(pair: _Pair) -> None:
        try:
            await asyncio.wait_for(pair.complete.wait(), STREAM_CREATION_TIMEOUT)
        except TimeoutError:
            if pair.error is not None:
                with contextlib.suppress(ConnectionError):
                    await pair.error.write(f"(conn={id(connection):#x}, request={pair.request_id}) timed out "
                                           "waiting for streams".encode())
        pairs.pop(pair.request_id, None)

    async def forward(pair: _Pair) -> None:
        assert pair.data is not None and pair.error is not None
        port = int(pair.data.header(HEADER_PORT) or 0)
        try:
            await forwarder(port, _SpdyChannel(pair.data))
        except PortForwardError as err:
            log.info("port-forward to %s port %d failed: %s", target.pod_id, port, err)
            with contextlib.suppress(ConnectionError):
                await pair.error.write(target.failure(port, err))
        except (ConnectionError, OSError):
            pass
        finally:
            for stream in (pair.data, pair.error):
                with contextlib.suppress(ConnectionError):
                    await stream.close()

    try:
        while (stream := await connection.accept()) is not None:
            kind = stream.header(HEADER_STREAM_TYPE)
            request_id = stream.header(HEADER_REQUEST_ID)
            if not request_id:
                # Clients older than request ids: pair the error stream n with the data stream n + 2.
                request_id = str(stream.stream_id if kind == STREAM_TYPE_ERROR else stream.stream_id - 2)
            pair = pairs.get(request_id)
            if pair is None:
                pair = pairs[request_id] = _Pair(request_id)
                spawn(monitor(pair), "portforward-pair-monitor")
            if kind == STREAM_TYPE_ERROR:
                if pair.error is not None:
                    await _refuse(stream, f"error processing stream for request {request_id}: "
                                          "error stream already assigned")
                    continue
                pair.error = stream
            else:
                if pair.data is not None:
                    await _refuse(stream, f"error processing stream for request {request_id}: "
                                          "data stream already assigned")
                    continue
                pair.data = stream
            if pair.data is not None and pair.error is not None and not pair.complete.is_set():
                pair.complete.set()
                spawn(forward(pair), f"portforward-{request_id}")
    finally:
        for task in list(tasks):
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await connection.close()
        reading.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await reading


async def _refuse(stream: SpdyStream, message: str) -> None:
    with contextlib.suppress(ConnectionError):
        await stream.write(message.encode())
        await stream.close()


# --- WebSocket channels --------------------------------------------------------------------------------


class _WsChannel:
    def __init__(self, ws: WebSocket, codec: ChannelCodec, channel: int, incoming: Pipe) -> None:
        self._ws = ws
        self._codec = codec
        self._channel = channel
        self._incoming = incoming

    async def read(self) -> bytes:
        return await self._incoming.read()

    async def write(self, data: bytes) -> None:
        await self._ws.send(self._codec.encode(self._channel, data), text=self._codec.base64)

    async def close(self) -> None:
        return


async def _serve_channels(request: RequestHead, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                          forwarder: Forwarder, target: Target) -> None:
    try:
        ports = parse_ports(request)
        response, protocol = server_handshake(request, WEBSOCKET_PROTOCOLS)
    except BadRequest as err:
        writer.write(simple_response(err.code, (err.message + "\n").encode()))
        await writer.drain()
        return
    except HandshakeError as err:
        writer.write(simple_response(err.code, err.message.encode(), extra=err.headers))
        await writer.drain()
        return
    writer.write(response.encode())
    await writer.drain()
    ws = WebSocket(reader, writer, server=True, subprotocol=protocol)
    codec = ChannelCodec(base64=is_base64(protocol))
    inputs = [Pipe() for _ in ports]

    async def read_channels() -> None:
        try:
            while (message := await ws.recv()) is not None:
                decoded = codec.decode(message[1])
                if decoded is None:
                    continue
                channel, data = decoded
                if channel % 2 == 0 and channel // 2 < len(inputs):
                    await inputs[channel // 2].feed(data)
        finally:
            for pipe in inputs:
                pipe.feed_eof()

    async def forward(index: int, port: int) -> None:
        channel = _WsChannel(ws, codec, 2 * index, inputs[index])
        try:
            await forwarder(port, channel)
        except PortForwardError as err:
            with contextlib.suppress(ConnectionError):
                await ws.send(codec.encode(2 * index + 1, target.failure(port, err)), text=codec.base64)
        except (ConnectionError, OSError):
            pass

    reading = asyncio.create_task(read_channels(), name="portforward-websocket-reader")
    try:
        for index, port in enumerate(ports):
            prefix = struct.pack("<H", port)
            await ws.send(codec.encode(2 * index, prefix), text=codec.base64)
            await ws.send(codec.encode(2 * index + 1, prefix), text=codec.base64)
        await asyncio.gather(*(forward(i, p) for i, p in enumerate(ports)))
    except ConnectionError:
        pass
    finally:
        await ws.close()
        reading.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await reading


async def pipe(channel: Channel, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy a channel to a TCP connection and back until both directions are done."""
    async def upstream() -> None:
        while data := await channel.read():
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            with contextlib.suppress(OSError):
                writer.write_eof()

    async def downstream() -> None:
        while data := await reader.read(64 * 1024):
            await channel.write(data)
        await channel.close()

    up = asyncio.create_task(upstream(), name="portforward-up")
    try:
        await downstream()
        # The target closed its side: what the client still sends has nowhere to go.
    finally:
        up.cancel()
        with contextlib.suppress(asyncio.CancelledError, ConnectionError, OSError):
            await up
        writer.close()
        with contextlib.suppress(ConnectionError, OSError):
            await writer.wait_closed()
