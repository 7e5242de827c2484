"""WebSocket channels (machinery.httpstream.wsstream): handshake, sub-protocol choice, framing, channel codecs."""

from __future__ import annotations

import asyncio
import struct

import pytest
from websockets.frames import Frame, Opcode
from websockets.protocol import Protocol, Side

from machinery.httpstream import negotiate, split_protocols
from machinery.httpstream.http1 import Headers, RequestHead, read_request_head, read_response_head
from machinery.httpstream.wsstream import (
    ChannelCodec,
    HandshakeError,
    TunnelStream,
    WebSocket,
    accept_key,
    client_request,
    server_handshake,
)


def test_accept_key_is_rfc6455s() -> None:
    assert accept_key("dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="


def _request(protocols: str | None) -> RequestHead:
    headers = Headers([("Upgrade", "websocket"), ("Connection", "Upgrade"), ("Sec-WebSocket-Version", "13"),
                       ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")])
    if protocols is not None:
        headers.add("Sec-WebSocket-Protocol", protocols)
    return RequestHead("GET", "/exec/ns/pod/c", headers)


@pytest.mark.parametrize(("offered", "supported", "chosen"), [
    pytest.param("v5.channel.k8s.io, v4.channel.k8s.io", ("v4.channel.k8s.io", "v5.channel.k8s.io"),
                 "v5.channel.k8s.io", id="client-order-wins"),
    pytest.param("v9.channel.k8s.io,v4.channel.k8s.io", ("v4.channel.k8s.io",), "v4.channel.k8s.io",
                 id="first-supported"),
    pytest.param(None, ("v4.channel.k8s.io", ""), "", id="none-offered-and-allowed"),
])
def test_server_handshake_picks_the_clients_first_supported_protocol(offered: str | None,
                                                                     supported: tuple[str, ...],
                                                                     chosen: str) -> None:
    response, protocol = server_handshake(_request(offered), supported)
    assert protocol == chosen
    assert response.code == 101
    assert response.headers.get("sec-websocket-accept") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
    assert response.headers.get("sec-websocket-protocol") == (chosen or None)


@pytest.mark.parametrize(("request_", "code"), [
    pytest.param(_request("v9.channel.k8s.io"), 403, id="no-common-protocol"),
    pytest.param(_request(None), 403, id="none-offered-none-allowed"),
    pytest.param(RequestHead("POST", "/", _request(None).headers), 405, id="not-get"),
])
def test_server_handshake_refusals(request_: RequestHead, code: int) -> None:
    with pytest.raises(HandshakeError) as caught:
        server_handshake(request_, ("v4.channel.k8s.io",))
    assert caught.value.code == code


def test_protocols_split_across_headers_and_commas() -> None:
    assert split_protocols(["a, b", "c"]) == ["a", "b", "c"]
    assert negotiate(["x", "b", "a"], ["a", "b"]) == "b"
    assert negotiate(["x"], ["a"]) is None


@pytest.mark.parametrize(("codec", "encoded"), [
    pytest.param(ChannelCodec(), b"\x01hi\x00", id="binary"),
    pytest.param(ChannelCodec(base64=True), b"1aGkA", id="base64"),
])
def test_channel_codecs(codec: ChannelCodec, encoded: bytes) -> None:
    assert codec.encode(1, b"hi\x00") == encoded
    assert codec.decode(encoded) == (1, b"hi\x00")
    assert codec.decode(b"") is None


def test_bad_base64_is_skipped() -> None:
    assert ChannelCodec(base64=True).decode(b"0!!!") is None


async def test_messages_pings_fragments_and_close_between_a_client_and_a_server() -> None:
    served: asyncio.Queue[list[tuple[bool, bytes]]] = asyncio.Queue()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await read_request_head(reader)
        response, _ = server_handshake(head, ("v5.channel.k8s.io",))
        writer.write(response.encode())
        ws = WebSocket(reader, writer, server=True)
        got = []
        while (message := await ws.recv()) is not None:
            got.append(message)
            await ws.send(message[1].upper(), text=message[0])
        served.put_nowait(got)
        await ws.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    head, _ = client_request(f"127.0.0.1:{port}", "/", ["v5.channel.k8s.io"])
    writer.write(head.encode())
    assert (await read_response_head(reader)).code == 101
    ws = WebSocket(reader, writer, server=False)
    await ws.send(b"\x00abc")
    assert await ws.recv() == (False, b"\x00ABC")
    # A fragmented text message and a ping in between, written with the sans-I/O protocol directly.
    raw = Protocol(Side.CLIENT)
    raw.send_frame(Frame(Opcode.TEXT, b"frag", fin=False))
    raw.send_ping(b"p")
    raw.send_frame(Frame(Opcode.CONT, b"ment", fin=True))
    for data in raw.data_to_send():
        writer.write(data)
    assert await ws.recv() == (True, b"FRAGMENT")
    await ws.close()
    assert await asyncio.wait_for(served.get(), 5) == [(False, b"\x00abc"), (True, b"fragment")]
    server.close()
    await server.wait_closed()


async def test_a_tunnel_reads_binary_messages_as_bytes() -> None:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await read_request_head(reader)
        response, _ = server_handshake(head, ("SPDY/3.1+portforward.k8s.io",))
        writer.write(response.encode())
        tunnel = TunnelStream(WebSocket(reader, writer, server=True))
        data = await tunnel.read()
        await tunnel.write(struct.pack(">I", len(data)))
        assert await tunnel.read() == b""
        await tunnel.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    head, _ = client_request(f"127.0.0.1:{port}", "/", ["SPDY/3.1+portforward.k8s.io"])
    writer.write(head.encode())
    assert (await read_response_head(reader)).headers.get("sec-websocket-protocol") == "SPDY/3.1+portforward.k8s.io"
    ws = WebSocket(reader, writer, server=False)
    await ws.send(b"\x80\x03\x00\x06")
    assert await ws.recv() == (False, b"\x00\x00\x00\x04")
    await ws.close()
    server.close()
    await server.wait_closed()
