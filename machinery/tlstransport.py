"""Server-side TLS for asyncio protocols, with as little Python between the socket and the protocol as it takes.

The standard library's ``asyncio.sslproto.SSLProtocol`` is general: a state
machine for both sides, write backlogs, renegotiation, shutdown with
timeouts, and every read ends with an ``SSLWantReadError`` raised and caught.
On the APIServer's small requests that machinery cost about 40 µs of CPU per
request (py-spy, a GET of a ConfigMap: 13% of the APIServer's time), while
OpenSSL's own work (decrypt the request, encrypt the answer) is about 3 µs.
:class:`TLSServerProtocol` does only what a TLS 1.2/1.3 server needs:

- the handshake (with the context's client-certificate verification), ended
  by ``handshake_timeout`` seconds as asyncio's 60 s default does;
- decrypting what arrives and handing it to the application protocol in one
  ``data_received`` per batch, reading again only while OpenSSL or its input
  buffer still holds bytes (no exception on the common path);
- encrypting each write and passing it to the socket's transport at once (the
  transport buffers; its ``pause_writing``/``resume_writing`` reach the
  application protocol unchanged);
- closing with a ``close_notify`` alert, then the socket (as Go's
  ``tls.Conn.Close``), without waiting for the peer's;
- the application transport's ``get_extra_info`` answers ``peercert``,
  ``sslcontext``, ``ssl_object`` and ``cipher`` itself and the rest from the
  socket's transport; ``set_protocol`` hands the connection to another
  protocol (upgrades), TLS kept.

Renegotiation (TLS 1.2) is refused by the server context's defaults, and TLS
1.3 has none. Half-closes are not supported (``can_write_eof`` is False), as
with ``SSLProtocol``.

Concurrency: one instance per connection, on the event loop.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import threading
from typing import Any, Final, cast

log = logging.getLogger(__name__)

#: Bytes read from the socket at a time, and decrypted at a time.
READ_SIZE: Final = 256 * 1024

_buffers = threading.local()


def _read_buffer() -> memoryview:
    """The socket read buffer of this thread's connections: one for all of them.

    ``buffer_updated`` copies what arrived into the connection's MemoryBIO before
    returning, and the loop fills one buffer at a time, so connections can share
    it. One each cost 256 KiB per connection (2,762 connections held 346 MiB in
    an APIServer serving 5,000 nodes).
    """
    buffer: memoryview | None = getattr(_buffers, "buffer", None)
    if buffer is None:
        buffer = _buffers.buffer = memoryview(bytearray(READ_SIZE))
    return buffer
#: asyncio's default ``ssl_handshake_timeout``.
HANDSHAKE_TIMEOUT: Final = 60.0


class TLSServerProtocol(asyncio.BufferedProtocol):
    """The socket's protocol: TLS over it, ``app_protocol`` above it (see the module's text)."""

    def __init__(self, app_protocol: asyncio.Protocol, context: ssl.SSLContext, *,
                 handshake_timeout: float = HANDSHAKE_TIMEOUT) -> None:
        self._app: asyncio.Protocol = app_protocol
        self._context = context
        self._incoming = ssl.MemoryBIO()
        self._outgoing = ssl.MemoryBIO()
        self._ssl = context.wrap_bio(self._incoming, self._outgoing, server_side=True)
        self._buffer = _read_buffer()
        self._handshake_timeout = handshake_timeout
        self._timer: asyncio.TimerHandle | None = None
        self._transport: asyncio.Transport | None = None
        self._app_transport: _AppTransport | None = None
        self._reading_paused = False
        self._closing = False

    # --- the socket's side ----------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)  # uvloop's transports do not subclass asyncio's
        self._timer = asyncio.get_running_loop().call_later(self._handshake_timeout, self._handshake_timed_out)

    def get_buffer(self, sizehint: int) -> memoryview:
        return self._buffer

    def buffer_updated(self, nbytes: int) -> None:
        self._incoming.write(self._buffer[:nbytes])
        if self._app_transport is None:
            self._handshake()
        elif not self._reading_paused:
            self._read()

    def eof_received(self) -> bool | None:
        # The peer closed its side without a close_notify (or after one we have not read yet).
        if self._app_transport is not None and not self._closing:
            if self._incoming.pending and not self._reading_paused:
                self._read()
            self._app.eof_received()
        return False  # the transport closes

    def connection_lost(self, exc: Exception | None) -> None:
        self._closing = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._app_transport is not None:
            self._app.connection_lost(exc)
        self._transport = None

    def pause_writing(self) -> None:
        if self._app_transport is not None:
            self._app.pause_writing()

    def resume_writing(self) -> None:
        if self._app_transport is not None:
            self._app.resume_writing()

    # --- TLS ------------------------------------------------------------------------------------

    def _handshake(self) -> None:
        try:
            self._ssl.do_handshake()
        except ssl.SSLWantReadError:
            self._flush()
            return
        except (ssl.SSLError, OSError) as err:
            log.debug("TLS handshake failed: %s", err)
            self._flush()  # the alert that says why
            self._abort_after_flush()
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._flush()
        self._app_transport = _AppTransport(self)
        self._app.connection_made(self._app_transport)
        if not self._closing and not self._reading_paused:
            self._read()  # the request may have come with the handshake's last flight

    def _handshake_timed_out(self) -> None:
        self._timer = None
        if self._app_transport is None and self._transport is not None:
            log.debug("TLS handshake did not finish in %.0f s", self._handshake_timeout)
            self._transport.abort()

    def _read(self) -> None:
        chunks: list[bytes] = []
        ended = False
        try:
            while True:
                chunk = self._ssl.read(READ_SIZE)
                if not chunk:  # the peer's close_notify
                    ended = True
                    break
                chunks.append(chunk)
                if not self._incoming.pending and not self._ssl.pending():
                    break
        except ssl.SSLWantReadError:
            pass
        except (ssl.SSLError, OSError) as err:
            log.debug("TLS read failed: %s", err)
            if chunks:
                self._app.data_received(b"".join(chunks))
            self._flush()
            self._abort_after_flush()
            return
        if chunks:
            self._app.data_received(chunks[0] if len(chunks) == 1 else b"".join(chunks))
        self._flush()  # what reading made OpenSSL say (a TLS 1.3 KeyUpdate's answer)
        if ended and not self._closing:
            self._app.eof_received()
            if self._app_transport is not None:
                self._app_transport.close()

    def _flush(self) -> None:
        if self._outgoing.pending and self._transport is not None and not self._transport.is_closing():
            self._transport.write(self._outgoing.read())

    def _abort_after_flush(self) -> None:
        """Close the socket once what is buffered has gone (a TLS alert), without telling the app twice."""
        self._closing = True
        if self._transport is not None:
            self._transport.close()

    # --- the application's side -----------------------------------------------------------------

    def _write_all(self, pieces: Any) -> None:
        """Each piece encrypted as it is (a large body is not copied to be joined first), sent at once."""
        if self._closing or self._transport is None:
            return
        try:
            for data in pieces:
                self._ssl.write(data)
        except (ssl.SSLError, OSError) as err:
            log.debug("TLS write failed: %s", err)
            self._abort_after_flush()
            return
        self._flush()

    def _close(self) -> None:
        if self._closing:
            return
        self._closing = True
        try:
            self._ssl.unwrap()  # queues our close_notify; the peer's is not waited for
        except (ssl.SSLError, OSError):
            pass
        self._flush()
        if self._transport is not None:
            self._transport.close()

    def _pause_reading(self) -> None:
        self._reading_paused = True
        if self._transport is not None:
            self._transport.pause_reading()

    def _resume_reading(self) -> None:
        if not self._reading_paused:
            return
        self._reading_paused = False
        if self._transport is not None:
            self._transport.resume_reading()
        if self._incoming.pending or self._ssl.pending():
            asyncio.get_running_loop().call_soon(self._read_if_open)

    def _read_if_open(self) -> None:
        if not self._closing and not self._reading_paused and self._transport is not None:
            self._read()


class _AppTransport(asyncio.Transport):
    """What the application protocol writes to: plaintext in, TLS records out."""

    def __init__(self, tls: TLSServerProtocol) -> None:
        super().__init__()
        self._tls = tls

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        tls = self._tls
        if name == "peercert":
            return tls._ssl.getpeercert()
        if name == "sslcontext":
            return tls._context
        if name == "ssl_object":
            return tls._ssl
        if name == "cipher":
            return tls._ssl.cipher()
        if name == "compression":
            return tls._ssl.compression()
        transport = tls._transport
        return transport.get_extra_info(name, default) if transport is not None else default

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self._tls._write_all((data,))

    def writelines(self, list_of_data: Any) -> None:
        self._tls._write_all(list_of_data)

    def can_write_eof(self) -> bool:
        return False

    def write_eof(self) -> None:
        raise NotImplementedError("TLS does not support half-closes")

    def close(self) -> None:
        self._tls._close()

    def abort(self) -> None:
        self._tls._closing = True
        if self._tls._transport is not None:
            self._tls._transport.abort()

    def is_closing(self) -> bool:
        transport = self._tls._transport
        return self._tls._closing or transport is None or transport.is_closing()

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        assert isinstance(protocol, asyncio.Protocol), "a plain (not buffered) protocol"
        self._tls._app = protocol

    def get_protocol(self) -> asyncio.BaseProtocol:
        return self._tls._app

    def pause_reading(self) -> None:
        self._tls._pause_reading()

    def resume_reading(self) -> None:
        self._tls._resume_reading()

    def is_reading(self) -> bool:
        return not self._tls._reading_paused and not self.is_closing()

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        if self._tls._transport is not None:
            self._tls._transport.set_write_buffer_limits(high, low)

    def get_write_buffer_limits(self) -> tuple[int, int]:
        transport = self._tls._transport
        return transport.get_write_buffer_limits() if transport is not None else (0, 0)

    def get_write_buffer_size(self) -> int:
        transport = self._tls._transport
        return transport.get_write_buffer_size() if transport is not None else 0
