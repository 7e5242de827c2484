"""The benchmarks' HTTP client: its connections end with their event loop, leaving nothing open behind."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import socket
import ssl
import threading
import warnings
from collections.abc import Iterator

import pytest

from kubesim.bench.rawhttp import Connection, Endpoint
from machinery import tlsserving

ANSWER = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"


@pytest.fixture
def tls_server() -> Iterator[int]:
    """A TLS server in threads of its own (it outlives the clients' event loop): one answer per request."""
    cert, key = tlsserving.serving_pair(None, None, None, ["127.0.0.1"], stem="rawhttp")
    context = tlsserving.server_context(cert, key, None)
    listener = socket.create_server(("127.0.0.1", 0))
    handlers: list[threading.Thread] = []

    def handle(conn: socket.socket) -> None:
        with contextlib.suppress(OSError), context.wrap_socket(conn, server_side=True) as tls:
            while tls.recv(65536):
                tls.sendall(ANSWER)

    def accept() -> None:
        with contextlib.suppress(OSError):
            while True:
                conn, _ = listener.accept()
                handler = threading.Thread(target=handle, args=(conn,), daemon=True)
                handlers.append(handler)
                handler.start()

    acceptor = threading.Thread(target=accept, daemon=True)
    acceptor.start()
    try:
        yield listener.getsockname()[1]
    finally:
        with contextlib.suppress(OSError):
            listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept(), which close() does not
        listener.close()
        acceptor.join(5)
        for handler in handlers:
            handler.join(5)


def test_closed_tls_connections_leave_no_socket_for_the_garbage_collector(tls_server: int) -> None:
    client = ssl.create_default_context()
    client.check_hostname = False
    client.verify_mode = ssl.CERT_NONE
    url = Endpoint(f"https://127.0.0.1:{tls_server}", client)

    async def requests() -> None:
        conns = [await Connection.open(url) for _ in range(32)]
        for conn in conns:
            assert (await conn.request("GET", "/")).body == b"ok"
        for conn in conns:
            conn.close()
        # The loop ends here, as a benchmark's asyncio.run does right after closing its pool.

    asyncio.run(requests())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gc.collect()
    leaked = [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)
              and ("unclosed transport" in str(w.message) or f"{tls_server})" in str(w.message))]
    assert leaked == []
