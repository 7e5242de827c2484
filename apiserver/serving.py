"""Serving: HTTPS on ``--secure-port``, and a plain-HTTP ``--insecure-port`` only when asked for.

As kube-apiserver's ``SecureServingOptions``:

- the secure port serves TLS 1.2 or later with ``--tls-cert-file`` and
  ``--tls-private-key-file``; without them a self-signed certificate for the
  bind address, ``localhost`` and the ``kubernetes`` Service's names is made
  (and kept in ``--cert-dir`` when one is given, so it survives restarts);
- with ``--client-ca-file`` every client is asked for a certificate
  (optional), verified against that CA during the handshake; the x509
  authenticator then reads who it names (:mod:`apiserver.authentication.x509`);
- ``--insecure-port`` (off by default) serves plain HTTP on 127.0.0.1 only,
  with no authentication or authorization (every request is
  ``system:unsecured`` in ``system:masters``), as kube-apiserver's old insecure
  port did; a warning says so at start.

Both ports are served by uvicorn in one process and one event loop: the
second server starts and stops with the first (:class:`Server`).

Speed: with TLS every ``transport.write`` is a TLS record, encrypted and sent
on its own, and uvicorn writes a response's head and body separately (and a
watch each event). :func:`coalescing_writes` makes the secure port's protocol
gather the writes of one event-loop iteration into one: measured on the
project's machines, it takes a fifth off what TLS adds to a small response.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
from collections.abc import Callable
from typing import Any, TypeVar

import uvicorn

from machinery import tlsserving, tlstransport

log = logging.getLogger("apiserver")

#: The names every self-signed serving certificate carries, besides the bind address.
SELF_SIGNED_HOSTS = ("localhost", "127.0.0.1", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
                     "kubernetes.default.svc.cluster.local", "10.96.0.1")


def serving_files(cert_file: str | None, key_file: str | None, cert_dir: str | None,
                  bind_address: str) -> tuple[bytes, bytes]:
    """The serving certificate and key (PEM): the given files, those kept in ``cert_dir``, or new self-signed ones."""
    hosts = [*(h for h in (bind_address,) if h not in ("0.0.0.0", "::")), *SELF_SIGNED_HOSTS]
    return tlsserving.serving_pair(cert_file, key_file, cert_dir, hosts, stem="apiserver")


#: The secure port's TLS context (client certificates verified against ``--client-ca-file``).
tls_context = tlsserving.server_context


#: Bytes beyond which the writes of one iteration are passed on as they are rather than joined.
LARGE_WRITE = 64 * 1024


class CoalescingTransport:
    """A transport whose writes within one event-loop iteration go out as one write (one TLS record)."""

    __slots__ = ("_loop", "_pending", "_scheduled", "_transport")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._pending: list[bytes] = []
        self._scheduled = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self._pending.append(bytes(data))
        if not self._scheduled:
            self._scheduled = True
            self._loop.call_soon(self.flush)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        self._scheduled = False
        if not self._pending:
            return
        pending, self._pending = self._pending, []
        if self._transport.is_closing():
            return
        if len(pending) == 1:
            self._transport.write(pending[0])
        elif sum(len(d) for d in pending) > LARGE_WRITE:
            # A large body (a list of 500 Pods is a megabyte or more): copying it once more to join it to its
            # head costs more than the head's TLS record of its own.
            self._transport.writelines(pending)
        else:
            self._transport.write(b"".join(pending))

    def get_write_buffer_size(self) -> int:
        return self._transport.get_write_buffer_size() + sum(len(d) for d in self._pending)

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def write_eof(self) -> None:
        self.flush()
        self._transport.write_eof()

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        self.flush()
        self._transport.set_protocol(protocol)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


P = TypeVar("P", bound=type[asyncio.Protocol])


def coalescing_writes(base: P) -> P:
    """A subclass of uvicorn's protocol ``base`` that writes through a :class:`CoalescingTransport`."""

    class CoalescingProtocol(base):  # type: ignore[valid-type,misc]
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            super().connection_made(CoalescingTransport(transport, asyncio.get_running_loop()))  # type: ignore[arg-type]

    CoalescingProtocol.__name__ = CoalescingProtocol.__qualname__ = f"Coalescing{base.__name__}"
    return CoalescingProtocol  # type: ignore[return-value]


def tls_protocol(base: type[asyncio.Protocol], ssl_context: ssl.SSLContext) -> Callable[..., asyncio.BaseProtocol]:
    """A protocol factory for ``uvicorn.Config(http=...)`` that serves ``base`` over TLS.

    uvicorn would hand the context to the event loop (uvloop's own TLS). Here the
    server listens in plain TCP and each connection's protocol is
    :class:`machinery.tlstransport.TLSServerProtocol` around ``base``. Measured on
    the project's machines: uvloop's TLS added 30 µs to a small response, the
    standard library's ``asyncio.sslproto.SSLProtocol`` 10 µs to the response
    plus about 40 µs of CPU per request in its read and write machinery, and
    TLSServerProtocol (OpenSSL's work and little else) a few. The app protocol
    sees the TLS transport once the handshake is done, with its ``peercert``
    and ``sslcontext``.
    """

    def create(**kwargs: Any) -> asyncio.BaseProtocol:
        return tlstransport.TLSServerProtocol(base(**kwargs), ssl_context)

    return create


class Server(uvicorn.Server):
    """uvicorn's server, starting and stopping ``extra`` servers (the insecure port) with it, each on its
    own sockets when given (``--reuse-port``)."""

    def __init__(self, config: uvicorn.Config,
                 extra: list[tuple[uvicorn.Server, list[socket.socket] | None]] | None = None) -> None:
        super().__init__(config)
        self.extra = extra or []

    async def startup(self, sockets: list[Any] | None = None) -> None:
        await super().startup(sockets)
        for server, own in self.extra:
            if not server.config.loaded:
                server.config.load()
            server.lifespan = server.config.lifespan_class(server.config)
            await server.startup(own)

    async def shutdown(self, sockets: list[Any] | None = None) -> None:
        for server, own in self.extra:
            await server.shutdown(own)
        await super().shutdown(sockets)
