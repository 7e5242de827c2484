"""The kubelet's remote-command server: exec and attach over SPDY/3.1 or WebSocket channels.

As ``pkg/kubelet/cri/streaming/remotecommand`` does it:

- options come from the query: ``input``, ``output``, ``error``, ``tty``
  (``1`` means yes); stderr is dropped with a TTY; asking for no stream at
  all is a 400 (``you must specify at least 1 of stdin, stdout, stderr``);
- **SPDY**: the sub-protocol is negotiated from ``X-Stream-Protocol-Version``
  (v4, v3, v2, v1), the answer is ``101`` with ``Upgrade: SPDY/3.1``; the
  client then opens one stream per channel (``streamtype`` error, stdin,
  stdout, stderr, resize) and the command starts once all the expected ones
  have arrived (within 30 s);
- **WebSocket**: ``v5.channel.k8s.io``, ``v4.channel.k8s.io``,
  ``v4.base64.channel.k8s.io``, ``channel.k8s.io``, ``base64.channel.k8s.io``
  or none; channels 0 to 4 are stdin, stdout, stderr, error and resize; the
  server first sends an empty message on the lowest writable channel; v5's
  ``[255, 0]`` ends stdin;
- the end: stdout and stderr are closed, the error stream carries the
  ``metav1.Status`` (v4 and v5: JSON, with the exit code as an ``ExitCode``
  cause; older protocols: the message of a failure only), then the connection
  closes. A runtime that fails other than with an exit code (an error of
  its own, an API error) is an ``InternalError`` Status there too, never a
  connection that closes without one. A client that goes away sets
  ``session.gone`` so the runtime stops the command.

Concurrency: per connection, one task reads the transport (and feeds stdin
and resizes), the runner runs in the connection's task, and both end together.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import orjson

from kubelet_sim.streaming.session import (
    ExecError,
    Pipe,
    Runner,
    Session,
    decode_sizes,
    error_status,
    exit_status,
)
from machinery.httpstream import (
    CHANNEL_CLOSE,
    CHANNEL_ERROR,
    CHANNEL_RESIZE,
    CHANNEL_STDERR,
    CHANNEL_STDIN,
    CHANNEL_STDOUT,
    HEADER_ACCEPTED_PROTOCOL_VERSIONS,
    HEADER_PROTOCOL_VERSION,
    SPDY_REMOTE_COMMAND_PROTOCOLS,
    STREAM_PROTOCOL_V4,
    STREAM_PROTOCOL_V5,
    STREAM_TYPE_ERROR,
    STREAM_TYPE_RESIZE,
    STREAM_TYPE_STDERR,
    STREAM_TYPE_STDIN,
    STREAM_TYPE_STDOUT,
    UPGRADE_SPDY,
    negotiate,
    split_protocols,
)
from machinery.httpstream.http1 import Headers, RequestHead, ResponseHead, simple_response
from machinery.httpstream.spdy import SpdyConnection, SpdyStream, StreamPair
from machinery.httpstream.wsstream import (
    BASE64_CHANNEL_PROTOCOL,
    CHANNEL_PROTOCOL,
    ChannelCodec,
    HandshakeError,
    WebSocket,
    is_base64,
    server_handshake,
)

log = logging.getLogger("kubelet_sim.streaming")

#: The kubelet's streamCreationTimeout.
STREAM_CREATION_TIMEOUT: Final = 30.0
WEBSOCKET_PROTOCOLS: Final = (
    STREAM_PROTOCOL_V5, f"v4.{CHANNEL_PROTOCOL}", f"v4.{BASE64_CHANNEL_PROTOCOL}", CHANNEL_PROTOCOL,
    BASE64_CHANNEL_PROTOCOL, "",
)
_JSON_STATUS_PROTOCOLS: Final = (STREAM_PROTOCOL_V4, STREAM_PROTOCOL_V5, f"v4.{BASE64_CHANNEL_PROTOCOL}")


class BadRequest(Exception):
    """Answered before any upgrade: status code and plain-text message (the kubelet's wording)."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True, slots=True)
class Options:
    stdin: bool
    stdout: bool
    stderr: bool
    tty: bool

    @classmethod
    def parse(cls, request: RequestHead) -> Options:
        """The kubelet's ``NewOptions``: ``1`` turns a stream on; a TTY has no stderr."""
        def flag(name: str) -> bool:
            return request.query_value(name) == "1"
        tty = flag("tty")
        options = cls(stdin=flag("input"), stdout=flag("output"), stderr=flag("error") and not tty, tty=tty)
        if not (options.stdin or options.stdout or options.stderr):
            raise BadRequest(400, "you must specify at least 1 of stdin, stdout, stderr")
        return options


def status_payload(protocol: str, status: dict[str, Any]) -> bytes | None:
    """What the error stream carries: JSON for v4 and v5, the message of a failure before that."""
    if protocol in _JSON_STATUS_PROTOCOLS:
        return orjson.dumps(status)
    if status.get("status") == "Success":
        return None
    return str(status.get("message", "")).encode()


async def serve(request: RequestHead, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *,
                options: Options, runner: Runner, command: Sequence[str] = ()) -> None:
    """Upgrade the connection (WebSocket or SPDY) and run ``runner`` on the session."""
    upgrade = request.upgrade()
    if upgrade == "websocket":
        await _serve_websocket(request, reader, writer, options, runner, command)
    elif upgrade == UPGRADE_SPDY.lower():
        await _serve_spdy(request, reader, writer, options, runner, command)
    else:
        raise BadRequest(400, "Upgrade request required")


async def _run(session: Session, runner: Runner, command: Sequence[str], closed: asyncio.Event) -> dict[str, Any]:
    """Run until the command ends or the client leaves (then the runner is cancelled)."""
    run = asyncio.create_task(runner(session), name="exec")
    gone = asyncio.create_task(closed.wait(), name="exec-client-gone")
    try:
        await asyncio.wait({run, gone}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        gone.cancel()
    if not run.done():
        session.gone.set()
        # The runtime gets a moment to stop what it started (a process, say), then is cancelled.
        done, _ = await asyncio.wait({run}, timeout=5.0)
        if not done:
            run.cancel()
        with contextlib.suppress(BaseException):
            await run
        return exit_status(command, 137)
    try:
        return exit_status(command, run.result())
    except ExecError as err:
        return error_status(str(err))
    except Exception as err:
        # As the kubelet: logged, then an InternalError on the error stream. A connection that just
        # closed would end the client's error stream with no Status, which client-go takes for success.
        log.exception("error executing %s", list(command))
        return error_status(str(err))


# --- WebSocket ---------------------------------------------------------------------------------------


class _ChannelOutput:
    def __init__(self, ws: WebSocket, codec: ChannelCodec, channel: int) -> None:
        self._ws = ws
        self._codec = codec
        self._channel = channel

    async def write(self, data: bytes) -> None:
        await self._ws.send(self._codec.encode(self._channel, data), text=self._codec.base64)

    async def close(self) -> None:
        # client-go discards server-side close signals as unknown streams (and logs them): none are sent.
        return


async def _serve_websocket(request: RequestHead, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                           options: Options, runner: Runner, command: Sequence[str]) -> None:
    try:
        response, protocol = server_handshake(request, WEBSOCKET_PROTOCOLS)
    except HandshakeError as err:
        writer.write(simple_response(err.code, err.message.encode(), extra=err.headers))
        await writer.drain()
        return
    writer.write(response.encode())
    await writer.drain()
    ws = WebSocket(reader, writer, server=True, subprotocol=protocol)
    codec = ChannelCodec(base64=is_base64(protocol))
    stdin = Pipe() if options.stdin else None
    session = Session(stdin=stdin,
                      stdout=_ChannelOutput(ws, codec, CHANNEL_STDOUT) if options.stdout else None,
                      stderr=_ChannelOutput(ws, codec, CHANNEL_STDERR) if options.stderr else None,
                      tty=options.tty)
    closed = asyncio.Event()

    async def read_channels() -> None:
        sizes = bytearray()
        try:
            while (message := await ws.recv()) is not None:
                decoded = codec.decode(message[1])
                if decoded is None:
                    continue
                channel, data = decoded
                if protocol == STREAM_PROTOCOL_V5 and channel == CHANNEL_CLOSE:
                    if data[:1] == bytes((CHANNEL_STDIN,)) and stdin is not None:
                        stdin.feed_eof()
                elif channel == CHANNEL_STDIN and stdin is not None:
                    await stdin.feed(data)
                elif channel == CHANNEL_RESIZE and options.tty:
                    sizes += data
                    for size in decode_sizes(sizes):
                        session.resizes.put_nowait(size)
        finally:
            if stdin is not None:
                stdin.feed_eof()
            closed.set()

    reading = asyncio.create_task(read_channels(), name="exec-websocket-reader")
    try:
        first = CHANNEL_STDOUT if options.stdout else CHANNEL_STDERR if options.stderr else CHANNEL_ERROR
        with contextlib.suppress(ConnectionError):
            await ws.send(codec.encode(first, b""), text=codec.base64)
        status = await _run(session, runner, command, closed)
        payload = status_payload(protocol, status)
        if payload is not None and not closed.is_set():
            with contextlib.suppress(ConnectionError):
                await ws.send(codec.encode(CHANNEL_ERROR, payload), text=codec.base64)
    finally:
        await ws.close()
        reading.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await reading


# --- SPDY ---------------------------------------------------------------------------------------------


def spdy_handshake(request: RequestHead, supported: Sequence[str]) -> tuple[ResponseHead, str]:
    """apimachinery's ``httpstream.Handshake`` and ``UpgradeResponse``: the 101 and the chosen protocol."""
    if "upgrade" not in request.headers.tokens("connection") or \
            UPGRADE_SPDY.lower() not in (request.headers.get("upgrade") or "").lower():
        raise BadRequest(400, "unable to upgrade: missing upgrade headers in request")
    offered = split_protocols(request.headers.get_all(HEADER_PROTOCOL_VERSION))
    if not offered:
        raise BadRequest(400, "unable to upgrade: X-Stream-Protocol-Version is required")
    chosen = negotiate(offered, supported)
    if chosen is None:
        raise BadRequest(403, f"unable to upgrade: unable to negotiate protocol: client supports "
                              f"[{' '.join(offered)}], server accepts [{' '.join(supported)}]")
    headers = Headers([("Connection", "Upgrade"), ("Upgrade", UPGRADE_SPDY), ("X-Stream-Protocol-Version", chosen)])
    return ResponseHead(101, "Switching Protocols", headers), chosen


def accepted_versions_header(supported: Sequence[str]) -> list[tuple[str, str]]:
    return [(HEADER_ACCEPTED_PROTOCOL_VERSIONS, p) for p in supported]


class _SpdyOutput:
    def __init__(self, stream: SpdyStream) -> None:
        self._stream = stream

    async def write(self, data: bytes) -> None:
        await self._stream.write(data)

    async def close(self) -> None:
        await self._stream.close()


async def _serve_spdy(request: RequestHead, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                      options: Options, runner: Runner, command: Sequence[str]) -> None:
    try:
        response, protocol = spdy_handshake(request, SPDY_REMOTE_COMMAND_PROTOCOLS)
    except BadRequest as err:
        extra = accepted_versions_header(SPDY_REMOTE_COMMAND_PROTOCOLS) if err.code == 403 else None
        writer.write(simple_response(err.code, (err.message + "\n").encode(), extra=extra))
        await writer.drain()
        return
    writer.write(response.encode())
    await writer.drain()
    connection = SpdyConnection(StreamPair(reader, writer), server=True, name="exec")
    reading = asyncio.create_task(connection.run(), name="exec-spdy-reader")
    try:
        # The v2+ protocols open a resize stream with a TTY; the error stream always comes.
        expected = 1 + options.stdin + options.stdout + options.stderr + \
            (options.tty and protocol != SPDY_REMOTE_COMMAND_PROTOCOLS[-1] and protocol != "v2.channel.k8s.io")
        streams: dict[str, SpdyStream] = {}
        try:
            async with asyncio.timeout(STREAM_CREATION_TIMEOUT):
                received = 0
                while received < expected:
                    stream = await connection.accept()
                    if stream is None:
                        return
                    received += 1
                    kind = stream.header("streamtype") or ""
                    if kind in (STREAM_TYPE_ERROR, STREAM_TYPE_STDIN, STREAM_TYPE_STDOUT, STREAM_TYPE_STDERR,
                                STREAM_TYPE_RESIZE):
                        streams[kind] = stream
                    else:
                        log.debug("unexpected stream type %r", kind)
        except TimeoutError:
            log.info("timed out waiting for the client to create streams")
            return
        if protocol == SPDY_REMOTE_COMMAND_PROTOCOLS[-1] and STREAM_TYPE_STDIN in streams:
            # v1's known quirk, kept by the kubelet: stdin is closed once the streams exist.
            await streams[STREAM_TYPE_STDIN].close()
        session = Session(
            stdin=streams.get(STREAM_TYPE_STDIN) if options.stdin else None,
            stdout=_SpdyOutput(streams[STREAM_TYPE_STDOUT]) if STREAM_TYPE_STDOUT in streams else None,
            stderr=_SpdyOutput(streams[STREAM_TYPE_STDERR]) if STREAM_TYPE_STDERR in streams else None,
            tty=options.tty)
        resize = streams.get(STREAM_TYPE_RESIZE)
        resizing = asyncio.create_task(_read_resizes(resize, session), name="exec-resize") \
            if resize is not None else None
        status = await _run(session, runner, command, connection.closed)
        if resizing is not None:
            resizing.cancel()
        for kind in (STREAM_TYPE_STDOUT, STREAM_TYPE_STDERR):
            if kind in streams:
                with contextlib.suppress(ConnectionError):
                    await streams[kind].close()
        error = streams.get(STREAM_TYPE_ERROR)
        payload = status_payload(protocol, status)
        if error is not None and not connection.closed.is_set():
            with contextlib.suppress(ConnectionError):
                if payload is not None:
                    await error.write(payload)
                await error.close()
    finally:
        await connection.close()
        reading.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await reading


async def _read_resizes(stream: SpdyStream, session: Session) -> None:
    buffer = bytearray()
    while chunk := await stream.read():
        buffer += chunk
        for size in decode_sizes(buffer):
            session.resizes.put_nowait(size)
