"""SPDY/3.1 framing and connections, as Kubernetes' streaming uses them (moby/spdystream's peer).

kubectl (``exec``, ``attach``, ``cp``, ``port-forward``) and the kubelet speak
SPDY/3.1 after an ``Upgrade: SPDY/3.1`` handshake: one TCP connection, many
streams, each opened with a SYN_STREAM whose headers say what it carries
(``streamtype: stdout``; ``port: 80``, ``requestid: 0``). No PyPI library
implements SPDY any more, so this module does, as far as Kubernetes needs it:

- **frames** (draft 3.1, section 2): SYN_STREAM, SYN_REPLY, RST_STREAM,
  SETTINGS, PING, GOAWAY, HEADERS, WINDOW_UPDATE and DATA, parsed
  incrementally from bytes (:class:`FrameReader`) and encoded by
  :func:`encode_frame`;
- **header blocks**, zlib-compressed with SPDY's dictionary, one compression
  context per direction for the whole connection (each block ends with a sync
  flush, so the peer can decode it at once), names lowercased;
- **connections** (:class:`SpdyConnection`): streams opened by either side
  (odd ids from the client, even from the server), replies, half-closes (FIN),
  resets, PING echoes and GOAWAY, over any :class:`ByteStream` (a TCP
  connection, or the WebSocket tunnel of ``SPDY/3.1+portforward.k8s.io``).

Flow control: spdystream neither sends nor honours WINDOW_UPDATE, so neither
does this (window updates are read and ignored). Instead a stream whose
reader falls behind by :data:`HIGH_WATER` bytes stops the connection's read
loop until it catches up, as spdystream's unbuffered channels do, which pushes
back on the peer through TCP.

Concurrency: one task runs :meth:`SpdyConnection.run` (the only reader of the
byte stream); any task may write. Writes of a frame are serialised by one lock,
and a header block is compressed inside it, because the compression context's
order must be the wire's order.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import struct
import zlib
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, Protocol

log = logging.getLogger("machinery.httpstream.spdy")

VERSION: Final = 3
MAX_FRAME_LENGTH: Final = (1 << 24) - 1
#: Largest DATA frame this side writes (the protocol allows 16 MiB; spdystream writes what it is given).
MAX_DATA_WRITE: Final = 256 * 1024
#: Bytes a stream may hold unread before the connection stops reading for it.
HIGH_WATER: Final = 1 << 20
#: Largest decompressed header block accepted.
MAX_HEADER_BLOCK: Final = 1 << 20
FLAG_FIN: Final = 0x01
FLAG_UNIDIRECTIONAL: Final = 0x02

# The SPDY/3 header compression dictionary (draft 3.1, section 2.6.10.1): these 65 words, each after
# its length as 4 big-endian bytes, then the text below. Its zlib id (Adler-32) is 0xe3c6a7c2.
_DICTIONARY_WORDS: Final = (
    "options", "head", "post", "put", "delete", "trace", "accept", "accept-charset", "accept-encoding",
    "accept-language", "accept-ranges", "age", "allow", "authorization", "cache-control", "connection",
    "content-base", "content-encoding", "content-language", "content-length", "content-location",
    "content-md5", "content-range", "content-type", "date", "etag", "expect", "expires", "from", "host",
    "if-match", "if-modified-since", "if-none-match", "if-range", "if-unmodified-since", "last-modified",
    "location", "max-forwards", "pragma", "proxy-authenticate", "proxy-authorization", "range", "referer",
    "retry-after", "server", "te", "trailer", "transfer-encoding", "upgrade", "user-agent", "vary", "via",
    "warning", "www-authenticate", "method", "get", "status", "200 OK", "version", "HTTP/1.1", "url",
    "public", "set-cookie", "keep-alive", "origin",
)
_DICTIONARY_TAIL: Final = (
    "100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505"
    "203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request401 Unauthorized"
    "403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented503 Service Unavailable"
    "Jan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMT"
    "chunked,text/html,image/png,image/jpg,image/gif,application/xml,application/xhtml+xml,text/plain,"
    "text/javascript,publicprivatemax-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0."
)
DICTIONARY: Final = b"".join(struct.pack(">I", len(w)) + w.encode() for w in _DICTIONARY_WORDS) + \
    _DICTIONARY_TAIL.encode()


class FrameType(enum.IntEnum):
    SYN_STREAM = 1
    SYN_REPLY = 2
    RST_STREAM = 3
    SETTINGS = 4
    PING = 6
    GOAWAY = 7
    HEADERS = 8
    WINDOW_UPDATE = 9


class RstStatus(enum.IntEnum):
    PROTOCOL_ERROR = 1
    INVALID_STREAM = 2
    REFUSED_STREAM = 3
    UNSUPPORTED_VERSION = 4
    CANCEL = 5
    INTERNAL_ERROR = 6
    FLOW_CONTROL_ERROR = 7
    STREAM_IN_USE = 8
    STREAM_ALREADY_CLOSED = 9


class SpdyError(Exception):
    """The peer broke the protocol; the connection cannot go on."""


#: Header name -> values, names lowercased (SPDY requires it).
HeaderMap = dict[str, list[str]]


@dataclass(frozen=True, slots=True)
class SynStream:
    stream_id: int
    headers: HeaderMap
    flags: int = 0
    associated_id: int = 0
    priority: int = 0


@dataclass(frozen=True, slots=True)
class SynReply:
    stream_id: int
    headers: HeaderMap
    flags: int = 0


@dataclass(frozen=True, slots=True)
class RstStream:
    stream_id: int
    status: int


@dataclass(frozen=True, slots=True)
class Settings:
    #: (flags, id, value) per entry.
    entries: tuple[tuple[int, int, int], ...] = ()
    flags: int = 0


@dataclass(frozen=True, slots=True)
class Ping:
    ping_id: int


@dataclass(frozen=True, slots=True)
class GoAway:
    last_good_stream_id: int
    status: int = 0


@dataclass(frozen=True, slots=True)
class Headers:
    stream_id: int
    headers: HeaderMap
    flags: int = 0


@dataclass(frozen=True, slots=True)
class WindowUpdate:
    stream_id: int
    delta: int


@dataclass(frozen=True, slots=True)
class Data:
    stream_id: int
    data: bytes
    flags: int = 0


Frame = SynStream | SynReply | RstStream | Settings | Ping | GoAway | Headers | WindowUpdate | Data


# --- header blocks -------------------------------------------------------------------------------------


def pack_headers(headers: Mapping[str, Sequence[str]]) -> bytes:
    """The uncompressed header block: a count, then length-prefixed names and NUL-joined values."""
    out = [struct.pack(">I", len(headers))]
    for name, values in headers.items():
        raw_name = name.lower().encode("utf-8")
        raw_value = "\x00".join(values).encode("utf-8")
        out.append(struct.pack(">I", len(raw_name)) + raw_name + struct.pack(">I", len(raw_value)) + raw_value)
    return b"".join(out)


def unpack_headers(block: bytes) -> HeaderMap:
    """The inverse of :func:`pack_headers`; malformed blocks raise :class:`SpdyError`."""
    try:
        (count,), offset = struct.unpack_from(">I", block), 4
        headers: HeaderMap = {}
        for _ in range(count):
            (n,) = struct.unpack_from(">I", block, offset)
            name = block[offset + 4:offset + 4 + n].decode("utf-8")
            offset += 4 + n
            (n,) = struct.unpack_from(">I", block, offset)
            value = block[offset + 4:offset + 4 + n].decode("utf-8")
            offset += 4 + n
            if offset > len(block) or not name:
                raise SpdyError("truncated header block")
            if name != name.lower():
                raise SpdyError("header was not lowercased")
            if name in headers:
                raise SpdyError("multiple headers with same name")
            headers[name] = value.split("\x00")
    except (struct.error, UnicodeDecodeError) as err:
        raise SpdyError(f"malformed header block: {err}") from err
    if offset != len(block):
        raise SpdyError("trailing bytes after the header block")
    return headers


class HeaderCompressor:
    """One direction's header compression context (zlib with SPDY's dictionary)."""

    def __init__(self) -> None:
        self._z = zlib.compressobj(9, zlib.DEFLATED, 15, 8, zlib.Z_DEFAULT_STRATEGY, zdict=DICTIONARY)

    def compress(self, headers: Mapping[str, Sequence[str]]) -> bytes:
        return self._z.compress(pack_headers(headers)) + self._z.flush(zlib.Z_SYNC_FLUSH)


class HeaderDecompressor:
    def __init__(self) -> None:
        self._z = zlib.decompressobj(zdict=DICTIONARY)

    def decompress(self, block: bytes) -> HeaderMap:
        try:
            raw = self._z.decompress(block, MAX_HEADER_BLOCK)
        except zlib.error as err:
            raise SpdyError(f"cannot decompress a header block: {err}") from err
        if self._z.unconsumed_tail:
            raise SpdyError("header block too large")
        return unpack_headers(raw)


# --- frames --------------------------------------------------------------------------------------------


def _control(frame_type: FrameType, flags: int, payload: bytes) -> bytes:
    if len(payload) > MAX_FRAME_LENGTH:
        raise SpdyError("frame too large")
    return struct.pack(">HHI", 0x8000 | VERSION, frame_type, (flags << 24) | len(payload)) + payload


def encode_frame(frame: Frame, compressor: HeaderCompressor) -> bytes:
    """The frame's bytes; frames with headers use (and advance) ``compressor``."""
    match frame:
        case Data(stream_id, data, flags):
            if len(data) > MAX_FRAME_LENGTH:
                raise SpdyError("frame too large")
            return struct.pack(">II", stream_id & 0x7FFFFFFF, (flags << 24) | len(data)) + data
        case SynStream(stream_id, headers, flags, associated_id, priority):
            payload = struct.pack(">IIBB", stream_id & 0x7FFFFFFF, associated_id & 0x7FFFFFFF,
                                  (priority & 0x7) << 5, 0) + compressor.compress(headers)
            return _control(FrameType.SYN_STREAM, flags, payload)
        case SynReply(stream_id, headers, flags):
            return _control(FrameType.SYN_REPLY, flags,
                            struct.pack(">I", stream_id & 0x7FFFFFFF) + compressor.compress(headers))
        case Headers(stream_id, headers, flags):
            return _control(FrameType.HEADERS, flags,
                            struct.pack(">I", stream_id & 0x7FFFFFFF) + compressor.compress(headers))
        case RstStream(stream_id, status):
            return _control(FrameType.RST_STREAM, 0, struct.pack(">II", stream_id & 0x7FFFFFFF, status))
        case Settings(entries, flags):
            body = b"".join(struct.pack(">II", (f << 24) | (i & 0xFFFFFF), v) for f, i, v in entries)
            return _control(FrameType.SETTINGS, flags, struct.pack(">I", len(entries)) + body)
        case Ping(ping_id):
            return _control(FrameType.PING, 0, struct.pack(">I", ping_id))
        case GoAway(last_good, status):
            return _control(FrameType.GOAWAY, 0, struct.pack(">II", last_good & 0x7FFFFFFF, status))
        case WindowUpdate(stream_id, delta):
            return _control(FrameType.WINDOW_UPDATE, 0, struct.pack(">II", stream_id & 0x7FFFFFFF, delta))
    raise TypeError(f"not a SPDY frame: {frame!r}")


class FrameReader:
    """Frames from a byte stream, as they complete; feed it bytes in any pieces."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._decompressor = HeaderDecompressor()

    def feed(self, data: bytes) -> list[Frame]:
        self._buffer += data
        frames: list[Frame] = []
        while len(self._buffer) >= 8:
            length = int.from_bytes(self._buffer[5:8], "big")
            if len(self._buffer) < 8 + length:
                break
            head = bytes(self._buffer[:8])
            payload = bytes(self._buffer[8:8 + length])
            del self._buffer[:8 + length]
            frame = self._parse(head, payload)
            if frame is not None:
                frames.append(frame)
        return frames

    def _parse(self, head: bytes, payload: bytes) -> Frame | None:
        flags = head[4]
        if not head[0] & 0x80:
            return Data(int.from_bytes(head[:4], "big") & 0x7FFFFFFF, payload, flags)
        version = int.from_bytes(head[:2], "big") & 0x7FFF
        frame_type = int.from_bytes(head[2:4], "big")
        if version != VERSION:
            raise SpdyError(f"unsupported SPDY version {version}")
        try:
            if frame_type == FrameType.SYN_STREAM:
                stream_id, associated, priority, _slot = struct.unpack_from(">IIBB", payload)
                return SynStream(stream_id & 0x7FFFFFFF, self._decompressor.decompress(payload[10:]), flags,
                                 associated & 0x7FFFFFFF, priority >> 5)
            if frame_type == FrameType.SYN_REPLY:
                (stream_id,) = struct.unpack_from(">I", payload)
                return SynReply(stream_id & 0x7FFFFFFF, self._decompressor.decompress(payload[4:]), flags)
            if frame_type == FrameType.HEADERS:
                (stream_id,) = struct.unpack_from(">I", payload)
                return Headers(stream_id & 0x7FFFFFFF, self._decompressor.decompress(payload[4:]), flags)
            if frame_type == FrameType.RST_STREAM:
                stream_id, status = struct.unpack_from(">II", payload)
                return RstStream(stream_id & 0x7FFFFFFF, status)
            if frame_type == FrameType.SETTINGS:
                (count,) = struct.unpack_from(">I", payload)
                entries = []
                for i in range(count):
                    word, value = struct.unpack_from(">II", payload, 4 + 8 * i)
                    entries.append((word >> 24, word & 0xFFFFFF, value))
                return Settings(tuple(entries), flags)
            if frame_type == FrameType.PING:
                return Ping(struct.unpack_from(">I", payload)[0])
            if frame_type == FrameType.GOAWAY:
                (last_good,) = struct.unpack_from(">I", payload)
                status = struct.unpack_from(">I", payload, 4)[0] if len(payload) >= 8 else 0
                return GoAway(last_good & 0x7FFFFFFF, status)
            if frame_type == FrameType.WINDOW_UPDATE:
                stream_id, delta = struct.unpack_from(">II", payload)
                return WindowUpdate(stream_id & 0x7FFFFFFF, delta & 0x7FFFFFFF)
        except struct.error as err:
            raise SpdyError(f"truncated {FrameType(frame_type).name} frame") from err
        # Unknown control frames are ignored, as the protocol requires.
        return None


# --- connections ---------------------------------------------------------------------------------------


class ByteStream(Protocol):
    """A bidirectional byte stream a SPDY connection runs over."""

    async def read(self) -> bytes:
        """The next bytes, or ``b""`` at the end."""
        ...

    async def write(self, data: bytes) -> None: ...

    async def close(self) -> None: ...


class StreamPair:
    """:class:`ByteStream` over asyncio's reader and writer (a TCP connection)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    async def read(self) -> bytes:
        try:
            return await self.reader.read(64 * 1024)
        except (ConnectionError, OSError):
            return b""

    async def write(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def close(self) -> None:
        self.writer.close()
        with contextlib.suppress(ConnectionError, OSError):
            await self.writer.wait_closed()


class StreamReset(ConnectionError):
    """The stream was reset (by the peer, or because the connection ended)."""


@dataclass(eq=False)
class SpdyStream:
    """One stream: headers, a queue of received bytes, half-close in each direction."""

    connection: SpdyConnection
    stream_id: int
    headers: HeaderMap
    _chunks: deque[bytes] = field(default_factory=deque)
    _buffered: int = 0
    _readable: asyncio.Event = field(default_factory=asyncio.Event)
    _drained: asyncio.Event = field(default_factory=asyncio.Event)
    #: The peer sent FIN (or the connection ended): reads return what is left, then b"".
    remote_closed: bool = False
    #: This side sent FIN.
    local_closed: bool = False
    reset: bool = False
    replied: asyncio.Event = field(default_factory=asyncio.Event)

    def header(self, name: str) -> str | None:
        values = self.headers.get(name.lower())
        return values[0] if values else None

    async def read(self) -> bytes:
        """The next received bytes; ``b""`` once the peer closed its side or the stream was reset."""
        while not self._chunks:
            if self.remote_closed or self.reset:
                return b""
            self._readable.clear()
            await self._readable.wait()
        chunk = self._chunks.popleft()
        self._buffered -= len(chunk)
        if self._buffered <= HIGH_WATER:
            self._drained.set()
        return chunk

    async def read_all(self, limit: int = 1 << 20) -> bytes:
        out = bytearray()
        while chunk := await self.read():
            out += chunk
            if len(out) > limit:
                break
        return bytes(out)

    async def write(self, data: bytes) -> None:
        if self.local_closed or self.reset:
            raise StreamReset(f"write on closed stream {self.stream_id}")
        view = memoryview(data)
        for start in range(0, len(view), MAX_DATA_WRITE):
            await self.connection.send(Data(self.stream_id, bytes(view[start:start + MAX_DATA_WRITE])))

    async def close(self) -> None:
        """Half-close: this side will send nothing more."""
        if self.local_closed or self.reset:
            return
        self.local_closed = True
        with contextlib.suppress(ConnectionError):
            await self.connection.send(Data(self.stream_id, b"", FLAG_FIN))
        self.connection.forget_if_done(self)

    async def abort(self, status: int = RstStatus.CANCEL) -> None:
        if self.reset:
            return
        self._mark_reset()
        with contextlib.suppress(ConnectionError):
            await self.connection.send(RstStream(self.stream_id, status))
        self.connection.forget_if_done(self)

    # --- called by the connection's read loop ----------------------------------------------------------

    def _received(self, data: bytes) -> None:
        if self.reset or self.remote_closed:
            return
        if data:
            self._chunks.append(data)
            self._buffered += len(data)
            if self._buffered > HIGH_WATER:
                self._drained.clear()
        self._readable.set()

    def _finished(self) -> None:
        self.remote_closed = True
        self._readable.set()
        self._drained.set()

    def _mark_reset(self) -> None:
        self.reset = True
        self._chunks.clear()
        self._buffered = 0
        self._readable.set()
        self._drained.set()
        self.replied.set()


#: Decides about a stream the peer opened: an error message rejects it (RST_STREAM), None accepts it.
StreamHandler = Callable[[SpdyStream], str | None]


class SpdyConnection:
    """Either end of a SPDY/3.1 connection.

    The side that accepted the upgrade is the server: its streams have even ids.
    Streams the peer opens are checked by ``on_stream``, replied to, and then
    handed out by :meth:`accept`.
    """

    def __init__(self, stream: ByteStream, *, server: bool, on_stream: StreamHandler | None = None,
                 name: str = "spdy") -> None:
        self._io = stream
        self._server = server
        self._on_stream = on_stream
        self._name = name
        self._reader = FrameReader()
        self._compressor = HeaderCompressor()
        self._write_lock = asyncio.Lock()
        self._streams: dict[int, SpdyStream] = {}
        self._accepted: asyncio.Queue[SpdyStream | None] = asyncio.Queue()
        self._next_id = 2 if server else 1
        self._next_ping = 2 if server else 1
        self._pings: dict[int, asyncio.Future[None]] = {}
        self._last_remote_id = 0
        self.closed = asyncio.Event()
        self._goaway_sent = False

    @property
    def streams(self) -> Mapping[int, SpdyStream]:
        return self._streams

    # --- writing ----------------------------------------------------------------------------------

    async def send(self, frame: Frame) -> None:
        if self.closed.is_set():
            raise ConnectionResetError("the SPDY connection is closed")
        async with self._write_lock:
            data = encode_frame(frame, self._compressor)
            try:
                await self._io.write(data)
            except (ConnectionError, OSError) as err:
                self._end()
                raise ConnectionResetError(f"the SPDY connection is closed: {err}") from err

    async def open_stream(self, headers: Mapping[str, Sequence[str] | str], *, timeout: float = 30.0,
                          fin: bool = False) -> SpdyStream:
        """Open a stream and wait for the peer's reply (client-go's ``CreateStream``)."""
        normalized = {k.lower(): [v] if isinstance(v, str) else list(v) for k, v in headers.items()}
        async with self._write_lock:
            stream_id = self._next_id
            self._next_id += 2
            stream = SpdyStream(self, stream_id, normalized)
            stream.local_closed = fin
            self._streams[stream_id] = stream
            data = encode_frame(SynStream(stream_id, normalized, FLAG_FIN if fin else 0), self._compressor)
            try:
                await self._io.write(data)
            except (ConnectionError, OSError) as err:
                self._end()
                raise ConnectionResetError(f"the SPDY connection is closed: {err}") from err
        async with asyncio.timeout(timeout):
            await stream.replied.wait()
        if stream.reset:
            raise StreamReset(f"stream {stream_id} was refused")
        return stream

    async def ping(self, timeout: float = 10.0) -> None:
        ping_id = self._next_ping
        self._next_ping += 2
        future = asyncio.get_running_loop().create_future()
        self._pings[ping_id] = future
        try:
            await self.send(Ping(ping_id))
            async with asyncio.timeout(timeout):
                await future
        finally:
            self._pings.pop(ping_id, None)

    async def accept(self) -> SpdyStream | None:
        """The next stream the peer opened (already replied to), or None once the connection ended."""
        if self.closed.is_set() and self._accepted.empty():
            return None
        stream = await self._accepted.get()
        if stream is None:
            self._accepted.put_nowait(None)
        return stream

    async def close(self) -> None:
        """GOAWAY, then close the byte stream; every stream ends."""
        if not self.closed.is_set() and not self._goaway_sent:
            self._goaway_sent = True
            with contextlib.suppress(ConnectionError):
                await self.send(GoAway(self._last_remote_id))
        self._end()
        with contextlib.suppress(ConnectionError, OSError):
            await self._io.close()

    def forget_if_done(self, stream: SpdyStream) -> None:
        if stream.reset or (stream.local_closed and stream.remote_closed):
            self._streams.pop(stream.stream_id, None)

    # --- reading ------------------------------------------------------------------------------------

    async def run(self) -> None:
        """Read frames until the peer goes away; then every stream sees its end."""
        try:
            while not self.closed.is_set():
                data = await self._io.read()
                if not data:
                    break
                for frame in self._reader.feed(data):
                    if not await self._handle(frame):
                        return
        except SpdyError as err:
            log.debug("%s: protocol error: %s", self._name, err)
            with contextlib.suppress(ConnectionError):
                await self.send(GoAway(self._last_remote_id, 1))
        finally:
            self._end()

    async def _handle(self, frame: Frame) -> bool:
        match frame:
            case Data(stream_id, data, flags):
                stream = self._streams.get(stream_id)
                if stream is None:
                    return True
                stream._received(data)
                if flags & FLAG_FIN:
                    stream._finished()
                    self.forget_if_done(stream)
                elif stream._buffered > HIGH_WATER:
                    # The reader fell behind: stop reading the connection until it catches up.
                    await stream._drained.wait()
            case SynStream():
                await self._syn_stream(frame)
            case SynReply(stream_id, _headers, flags):
                stream = self._streams.get(stream_id)
                if stream is not None:
                    stream.replied.set()
                    if flags & FLAG_FIN:
                        stream._finished()
                        self.forget_if_done(stream)
            case Headers(stream_id, _headers, flags):
                stream = self._streams.get(stream_id)
                if stream is not None and flags & FLAG_FIN:
                    stream._finished()
                    self.forget_if_done(stream)
            case RstStream(stream_id, _status):
                stream = self._streams.pop(stream_id, None)
                if stream is not None:
                    stream._mark_reset()
            case Ping(ping_id):
                if ping_id % 2 == self._next_ping % 2:
                    future = self._pings.get(ping_id)
                    if future is not None and not future.done():
                        future.set_result(None)
                else:
                    with contextlib.suppress(ConnectionError):
                        await self.send(Ping(ping_id))
            case GoAway():
                return False
            case Settings() | WindowUpdate():
                pass
        return True

    async def _syn_stream(self, frame: SynStream) -> None:
        stream_id = frame.stream_id
        # Streams the peer opens have the other parity, and their ids only grow.
        if stream_id == 0 or stream_id % 2 == self._next_id % 2 or stream_id <= self._last_remote_id:
            with contextlib.suppress(ConnectionError):
                await self.send(RstStream(stream_id, RstStatus.PROTOCOL_ERROR))
            return
        self._last_remote_id = stream_id
        stream = SpdyStream(self, stream_id, frame.headers)
        stream.local_closed = bool(frame.flags & FLAG_UNIDIRECTIONAL)
        if frame.flags & FLAG_FIN:
            stream.remote_closed = True
        problem = self._on_stream(stream) if self._on_stream is not None else None
        if problem is not None:
            log.debug("%s: refusing stream %d: %s", self._name, stream_id, problem)
            stream._mark_reset()
            with contextlib.suppress(ConnectionError):
                await self.send(RstStream(stream_id, RstStatus.REFUSED_STREAM))
            return
        self._streams[stream_id] = stream
        stream.replied.set()
        with contextlib.suppress(ConnectionError):
            await self.send(SynReply(stream_id, {}))
        self._accepted.put_nowait(stream)

    def _end(self) -> None:
        if self.closed.is_set():
            return
        self.closed.set()
        for stream in list(self._streams.values()):
            stream._finished()
            stream.replied.set()
        self._streams.clear()
        for future in self._pings.values():
            if not future.done():
                future.set_exception(ConnectionResetError("the SPDY connection is closed"))
        self._accepted.put_nowait(None)
