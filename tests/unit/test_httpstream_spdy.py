"""SPDY/3.1 framing, header compression and connections (machinery.httpstream.spdy), over real sockets."""

from __future__ import annotations

import asyncio
import struct
import zlib
from collections.abc import AsyncIterator

import pytest

from machinery.httpstream import spdy
from machinery.httpstream.spdy import (
    Data,
    FrameReader,
    GoAway,
    HeaderCompressor,
    Headers,
    Ping,
    RstStream,
    Settings,
    SpdyConnection,
    SpdyError,
    StreamPair,
    StreamReset,
    SynReply,
    SynStream,
    WindowUpdate,
    encode_frame,
    pack_headers,
    unpack_headers,
)


def test_the_dictionary_is_spdy3s() -> None:
    # zlib names a preset dictionary by its Adler-32: SPDY/3 streams carry 0xe3c6a7c2.
    assert zlib.adler32(spdy.DICTIONARY) == 0xE3C6A7C2
    assert len(spdy.DICTIONARY) == 1423


def test_header_blocks_round_trip_with_multiple_values() -> None:
    headers = {"streamtype": ["stdout"], "x-multi": ["a", "b"], "empty": [""]}
    assert unpack_headers(pack_headers(headers)) == headers


@pytest.mark.parametrize("block", [
    pytest.param(struct.pack(">I", 1) + struct.pack(">I", 4) + b"Name" + struct.pack(">I", 0), id="uppercase"),
    pytest.param(struct.pack(">I", 2) + (struct.pack(">I", 1) + b"a" + struct.pack(">I", 0)) * 2, id="duplicate"),
    pytest.param(struct.pack(">I", 1) + struct.pack(">I", 9) + b"ab", id="truncated"),
    pytest.param(struct.pack(">I", 0) + b"x", id="trailing-bytes"),
])
def test_malformed_header_blocks_are_protocol_errors(block: bytes) -> None:
    with pytest.raises(SpdyError):
        unpack_headers(block)


@pytest.mark.parametrize("frame", [
    pytest.param(SynStream(1, {"streamtype": ["error"]}, spdy.FLAG_FIN, 0, 3), id="syn-stream"),
    pytest.param(SynReply(3, {}), id="syn-reply"),
    pytest.param(Headers(5, {"a": ["b"]}, spdy.FLAG_FIN), id="headers"),
    pytest.param(RstStream(7, spdy.RstStatus.CANCEL), id="rst"),
    pytest.param(Settings(((0, 4, 100), (1, 7, 65536))), id="settings"),
    pytest.param(Ping(9), id="ping"),
    pytest.param(GoAway(11, 0), id="goaway"),
    pytest.param(WindowUpdate(13, 4096), id="window-update"),
    pytest.param(Data(15, b"payload", spdy.FLAG_FIN), id="data"),
])
def test_frames_round_trip_fed_one_byte_at_a_time(frame: spdy.Frame) -> None:
    compressor = HeaderCompressor()
    # Two frames in a row: the second header block continues the same compression context.
    wire = encode_frame(frame, compressor) + encode_frame(frame, compressor)
    reader = FrameReader()
    parsed: list[spdy.Frame] = []
    for i in range(len(wire)):
        parsed.extend(reader.feed(wire[i:i + 1]))
    assert parsed == [frame, frame]


def test_unknown_control_frames_are_skipped() -> None:
    unknown = struct.pack(">HHI", 0x8000 | 3, 0x00FF, 2) + b"xx"
    assert FrameReader().feed(unknown + encode_frame(Ping(1), HeaderCompressor())) == [Ping(1)]


def test_another_version_is_refused() -> None:
    with pytest.raises(SpdyError, match="version 2"):
        FrameReader().feed(struct.pack(">HHI", 0x8000 | 2, 6, 4) + b"\0\0\0\1")


Pair = tuple[SpdyConnection, SpdyConnection]


@pytest.fixture
async def connected() -> AsyncIterator[Pair]:
    accepted: asyncio.Queue[SpdyConnection] = asyncio.Queue()
    tasks: list[asyncio.Task[None]] = []

    def check(stream: spdy.SpdyStream) -> str | None:
        return None if stream.header("streamtype") else "streamtype required"

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connection = SpdyConnection(StreamPair(reader, writer), server=True, on_stream=check)
        accepted.put_nowait(connection)
        await connection.run()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    client = SpdyConnection(StreamPair(reader, writer), server=False)
    tasks.append(asyncio.create_task(client.run()))
    server_side = await asyncio.wait_for(accepted.get(), 5)
    yield client, server_side
    await client.close()
    await server_side.close()
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    server.close()
    await server.wait_closed()


async def test_a_stream_carries_data_both_ways_with_half_closes(connected: Pair) -> None:
    client, server = connected
    stream = await client.open_stream({"streamType": "stdin"})
    assert stream.stream_id == 1
    incoming = await asyncio.wait_for(server.accept(), 5)
    assert incoming is not None and incoming.header("streamtype") == "stdin"
    payload = bytes(range(256)) * 4096  # 1 MiB, several DATA frames
    await stream.write(payload)
    await stream.close()
    assert await incoming.read_all(1 << 21) == payload
    await incoming.write(b"done")
    await incoming.close()
    assert await stream.read_all() == b"done"


async def test_a_stream_the_handler_rejects_is_reset(connected: Pair) -> None:
    client, _ = connected
    with pytest.raises(StreamReset, match="refused"):
        await client.open_stream({"port": "80"})
    # The connection stays usable.
    assert (await client.open_stream({"streamtype": "data"})).stream_id == 3


async def test_pings_are_echoed(connected: Pair) -> None:
    client, server = connected
    await asyncio.wait_for(client.ping(), 5)
    await asyncio.wait_for(server.ping(), 5)


async def test_a_reset_ends_the_peers_reads(connected: Pair) -> None:
    client, server = connected
    stream = await client.open_stream({"streamtype": "stdout"})
    incoming = await asyncio.wait_for(server.accept(), 5)
    assert incoming is not None
    await incoming.abort()
    assert await asyncio.wait_for(stream.read(), 5) == b""
    assert stream.reset
    with pytest.raises(StreamReset):
        await stream.write(b"x")


async def test_goaway_ends_every_stream(connected: Pair) -> None:
    client, server = connected
    stream = await client.open_stream({"streamtype": "stdout"})
    await asyncio.wait_for(server.accept(), 5)
    await server.close()
    assert await asyncio.wait_for(stream.read(), 5) == b""
    await asyncio.wait_for(client.closed.wait(), 5)
    assert await client.accept() is None


async def test_a_stream_id_with_the_wrong_parity_is_a_protocol_error(connected: Pair) -> None:
    client, server = connected
    # The client sends a SYN_STREAM with an even (server-side) id: the server resets it.
    await client.send(SynStream(2, {"streamtype": ["stdin"]}))
    await client.send(SynStream(1, {"streamtype": ["stdin"]}))
    incoming = await asyncio.wait_for(server.accept(), 5)
    assert incoming is not None and incoming.stream_id == 1
