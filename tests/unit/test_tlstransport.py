"""TLSServerProtocol: a TLS server connection as an application protocol sees it, over real sockets."""

from __future__ import annotations

import asyncio
import ssl
import tracemalloc
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from machinery import pki, tlsserving, tlstransport
from machinery.tlstransport import TLSServerProtocol


class Recorder(asyncio.Protocol):
    """Records what reaches it; echoes with a prefix unless told otherwise."""

    def __init__(self, *, echo: bool = True) -> None:
        self.transport: asyncio.Transport | None = None
        self.received = bytearray()
        self.echo = echo
        self.eof = False
        self.lost = asyncio.get_running_loop().create_future()
        self.peer: Any = None
        self.on_data: Callable[[Recorder, bytes], None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.peer = transport.get_extra_info("peercert")
        assert transport.get_extra_info("sslcontext") is not None
        assert transport.get_extra_info("peername")[0] == "127.0.0.1"

    def data_received(self, data: bytes) -> None:
        self.received += data
        if self.on_data is not None:
            self.on_data(self, data)
        elif self.echo:
            assert self.transport is not None
            self.transport.write(b"echo:" + data)

    def eof_received(self) -> bool | None:
        self.eof = True
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.lost.done():
            self.lost.set_result(exc)


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, bytes, Path, bytes, bytes]:
    """A serving pair for 127.0.0.1, a client CA and a client certificate it signed (jane, in dev)."""
    cert, key = tlsserving.serving_pair(None, None, None, ["127.0.0.1"], stem="test")
    ca_cert, ca_key = pki.new_ca("test-ca")
    client_cert, client_key = pki.sign(ca_cert, ca_key, common_name="jane", organizations=["dev"], client=True)
    ca_file = tmp_path_factory.mktemp("ca") / "ca.crt"
    ca_file.write_bytes(pki.cert_pem(ca_cert))
    return cert, key, ca_file, pki.cert_pem(client_cert), pki.key_pem(client_key)


@pytest.fixture
async def server(tls_files: tuple[bytes, bytes, Path, bytes, bytes]) -> AsyncIterator[tuple[int, list[Recorder]]]:
    cert, key, ca_file, _, _ = tls_files
    context = tlsserving.server_context(cert, key, str(ca_file))
    apps: list[Recorder] = []

    def factory() -> TLSServerProtocol:
        app = Recorder()
        apps.append(app)
        return TLSServerProtocol(app, context, handshake_timeout=0.5)

    srv = await asyncio.get_running_loop().create_server(factory, "127.0.0.1", 0)
    yield srv.sockets[0].getsockname()[1], apps
    srv.close()
    await srv.wait_closed()


def client_context(tls_files: tuple[bytes, bytes, Path, bytes, bytes], tmp_path: Path, *,
                   with_cert: bool) -> ssl.SSLContext:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    if with_cert:
        pem = tmp_path / "client.pem"
        pem.write_bytes(tls_files[3] + tls_files[4])
        ctx.load_cert_chain(str(pem))
    return ctx


async def test_requests_and_answers_both_ways_with_the_clients_certificate(
        server: tuple[int, list[Recorder]], tls_files: Any, tmp_path: Path) -> None:
    port, apps = server
    reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=client_context(tls_files, tmp_path,
                                                                                         with_cert=True))
    writer.write(b"hello")
    assert await reader.readexactly(10) == b"echo:hello"
    subject = dict(item[0] for item in apps[0].peer["subject"])
    assert subject["commonName"] == "jane" and subject["organizationName"] == "dev"
    apps[0].echo = False
    big = bytes(range(256)) * 8192  # 2 MiB: many TLS records, several reads
    writer.write(big)
    await writer.drain()
    assert apps[0].transport is not None
    apps[0].transport.write(big)  # and as many back, through the socket's flow control
    assert await reader.readexactly(len(big)) == big
    writer.close()
    assert await asyncio.wait_for(apps[0].lost, 5) is None
    assert bytes(apps[0].received) == b"hello" + big


async def test_closing_sends_close_notify_and_the_client_reads_a_clean_end(
        server: tuple[int, list[Recorder]], tls_files: Any, tmp_path: Path) -> None:
    port, apps = server
    reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=client_context(tls_files, tmp_path,
                                                                                         with_cert=False))
    writer.write(b"x")
    assert await reader.readexactly(6) == b"echo:x"
    assert apps[0].peer is None  # no client certificate, none asked for by force
    assert apps[0].transport is not None
    apps[0].transport.write(b"last words")
    apps[0].transport.close()
    assert await asyncio.wait_for(reader.read(), 5) == b"last words"  # EOF, not a TLS error
    assert reader.at_eof()
    writer.close()


async def test_a_client_that_never_finishes_its_handshake_is_cut_off(server: tuple[int, list[Recorder]]) -> None:
    port, apps = server
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    assert await asyncio.wait_for(reader.read(), 5) == b""  # closed after the 0.5 s handshake timeout
    assert apps[0].transport is None  # the application never saw it
    writer.close()


async def test_plain_http_to_the_tls_port_is_refused(server: tuple[int, list[Recorder]]) -> None:
    port, apps = server
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    await asyncio.wait_for(reader.read(), 5)  # an alert, then the end
    assert reader.at_eof() and apps[0].transport is None
    writer.close()


async def test_paused_reading_holds_data_until_resumed(server: tuple[int, list[Recorder]], tls_files: Any,
                                                       tmp_path: Path) -> None:
    port, apps = server
    reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=client_context(tls_files, tmp_path,
                                                                                         with_cert=False))
    writer.write(b"first")
    assert await reader.readexactly(10) == b"echo:first"
    app = apps[0]
    assert app.transport is not None
    app.transport.pause_reading()
    assert not app.transport.is_reading()
    writer.write(b"second")
    await writer.drain()
    await asyncio.sleep(0.2)
    assert bytes(app.received) == b"first"
    app.transport.resume_reading()
    assert await reader.readexactly(11) == b"echo:second"
    writer.close()


async def test_set_protocol_hands_the_connection_over_with_tls_kept(server: tuple[int, list[Recorder]],
                                                                   tls_files: Any, tmp_path: Path) -> None:
    port, apps = server
    reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=client_context(tls_files, tmp_path,
                                                                                         with_cert=False))
    successor = Recorder(echo=False)

    def hand_over(app: Recorder, data: bytes) -> None:
        assert app.transport is not None
        app.transport.set_protocol(successor)
        assert app.transport.get_protocol() is successor
        successor.connection_made(app.transport)
        app.transport.write(b"upgraded")
    apps[0].on_data = hand_over  # the connection's app exists once the handshake is done
    writer.write(b"upgrade please")
    assert await reader.readexactly(8) == b"upgraded"
    writer.write(b"after")
    for _ in range(100):
        if successor.received == b"after":
            break
        await asyncio.sleep(0.01)
    assert successor.received == b"after"
    writer.close()
    assert await asyncio.wait_for(successor.lost, 5) is None


async def test_many_connections_share_one_read_buffer_and_each_gets_its_own_bytes(
        server: tuple[int, list[Recorder]], tls_files: Any, tmp_path: Path) -> None:
    port, apps = server
    ctx = client_context(tls_files, tmp_path, with_cert=False)
    streams: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        for _ in range(40):
            streams.append(await asyncio.open_connection("127.0.0.1", port, ssl=ctx))
        for reader, writer in streams:
            writer.write(b"ping")
            assert await reader.readexactly(9) == b"echo:ping"
        server_side = [tracemalloc.Filter(True, tlstransport.__file__)]
        grown = tracemalloc.take_snapshot().filter_traces(server_side).compare_to(
            before.filter_traces(server_side), "filename")
        per_connection = sum(stat.size_diff for stat in grown) / len(streams)
        # The server's side: a read buffer of 256 KiB per connection would be far above.
        assert per_connection < 16 * 1024, per_connection
        for app in apps:
            app.echo = False
        # Interleaved: every connection sends in pieces while the others do; nothing crosses over.
        for piece in range(20):
            for i, (_, writer) in enumerate(streams):
                writer.write(f"[{i}:{piece}]".encode() * 50)
        for _, writer in streams:
            await writer.drain()
        expected = [b"ping" + b"".join(f"[{i}:{p}]".encode() * 50 for p in range(20)) for i in range(len(streams))]
        async with asyncio.timeout(10):
            while [bytes(app.received) for app in apps] != expected:
                await asyncio.sleep(0.01)
    finally:
        tracemalloc.stop()
        for _, writer in streams:
            writer.close()
        await asyncio.gather(*(writer.wait_closed() for _, writer in streams), return_exceptions=True)
