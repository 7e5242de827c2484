"""The APIServer's HTTP/1.1 connection handler: uvicorn's httptools protocol, answering every request.

uvicorn answers what its parser refuses with a plain-text ``Invalid HTTP
request received.`` and drops connections in ways a client sees as a reset.
kube-apiserver's clients expect a ``Status`` for every error, and a response
for every request. This subclass of uvicorn's ``HttpToolsProtocol`` changes
only that:

- a request line or header the parser refuses (malformed, or
  ``Transfer-Encoding`` with ``Content-Length``, a request-smuggling attempt)
  gets a 400 Status, a URI longer than :attr:`KubeHttpProtocol.max_uri_bytes`
  a 414, request headers larger than :attr:`KubeHttpProtocol.max_header_bytes`
  (Go's ``DefaultMaxHeaderBytes``, 1 MiB, as kube-apiserver keeps it) a 431,
  and a client that has not finished its headers within
  :attr:`KubeHttpProtocol.header_timeout` seconds a 408; each with
  ``Connection: close``;
- closing a connection whose request body is still arriving (after a 413, a
  parse error, or a response with ``Connection: close``) is a *lingering
  close*, as Go's net/http does: the server stops writing (``shutdown(SHUT_WR)``),
  reads and discards what the client still sends for up to
  :attr:`KubeHttpProtocol.linger_seconds`, then closes. Closing at once would
  make the kernel answer the unread bytes with a TCP reset, and the client
  would lose the response it was sent.

:class:`UpgradeHandoffProtocol` extends it as this paragraph foresaw: upgrades
of the streaming subresources leave uvicorn with their raw connection.

Everything else (keep-alive, pipelining, flow control, WebSocket upgrades) is
uvicorn's. To extend it (for example to take over a connection that asks for
``Upgrade: SPDY/3.1``), subclass :class:`KubeHttpProtocol` and override
uvicorn's ``_should_upgrade`` and ``handle_websocket_upgrade``, or
:meth:`KubeHttpProtocol.on_headers_complete`, and pass the subclass to
:func:`protocol_class`; keep calling ``super()`` so that the limits above
still apply.

Concurrency: one instance per connection, on the event loop, as uvicorn's.
"""

from __future__ import annotations

import asyncio
import urllib.parse
from collections.abc import Coroutine
from typing import Any, ClassVar, Final, Protocol

import httptools
import orjson
from starlette.types import Scope
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from machinery.httpstream.http1 import Headers, RequestHead

#: The longest URI the parser can take apart (httptools' URL parser keeps 16-bit offsets).
MAX_URI_BYTES: Final = 65_535
#: Go's http.DefaultMaxHeaderBytes, which kube-apiserver leaves in place.
MAX_HEADER_BYTES: Final = 1 << 20


def status_bytes(code: int, reason: str, message: str) -> bytes:
    """A whole HTTP/1.1 response carrying a Failure Status, closing the connection."""
    body = orjson.dumps({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                         "message": message, "reason": reason, "code": code})
    head = (STATUS_LINE[code] + b"content-type: application/json\r\ncontent-length: " + str(len(body)).encode()
            + b"\r\nconnection: close\r\n\r\n")
    return head + body


class _Refused(Exception):
    """Raised from a parser callback to stop parsing; the protocol answers ``response``."""

    def __init__(self, response: bytes) -> None:
        super().__init__()
        self.response = response


class _LingeringTransport:
    """The connection's transport as uvicorn sees it: ``close()`` lingers while the client is still sending."""

    def __init__(self, transport: asyncio.Transport, protocol: KubeHttpProtocol) -> None:
        self._transport = transport
        self._protocol = protocol

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)

    def is_closing(self) -> bool:
        return self._protocol.lingering or self._transport.is_closing()

    def close(self) -> None:
        self._protocol.close_lingering()


class KubeHttpProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with Status answers for refused requests and lingering closes."""

    max_uri_bytes: ClassVar[int] = MAX_URI_BYTES
    max_header_bytes: ClassVar[int] = MAX_HEADER_BYTES
    #: Seconds a client may take to send its request line and headers.
    header_timeout: ClassVar[float] = 32.0
    #: Seconds a closing connection keeps reading what the client still sends.
    linger_seconds: ClassVar[float] = 2.0
    #: Bytes a closing connection reads and discards at most before closing anyway.
    linger_bytes: ClassVar[int] = 64 << 20

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lingering = False
        self._lingered = 0
        self._header_bytes = 0
        self._in_message = False
        self._header_timer: asyncio.TimerHandle | None = None
        self._linger_timer: asyncio.TimerHandle | None = None
        self._raw: asyncio.Transport = None  # type: ignore[assignment]  # set by connection_made
        self.upgrade_rest = b""

    # --- connection -----------------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._raw = transport
        self.transport = _LingeringTransport(transport, self)  # type: ignore[assignment]
        self.flow._transport = self.transport
        self._arm_header_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        for timer in (self._header_timer, self._linger_timer):
            if timer is not None:
                timer.cancel()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self.lingering:
            self._lingered += len(data)
            if self._lingered > self.linger_bytes:
                self._close_now()
            return
        if self._header_timer is None and not self._in_message:
            self._arm_header_timer()
        self._unset_keepalive_if_required()
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserCallbackError as e:
            refused = e.__context__
            if isinstance(refused, _Refused):
                self._refuse(refused.response)
            elif isinstance(refused, httptools.HttpParserInvalidURLError):
                self._refuse(status_bytes(400, "BadRequest", f"malformed request URI: {refused}"))
            else:
                self._refuse(status_bytes(400, "BadRequest", f"malformed HTTP request: {refused}"))
        except httptools.HttpParserUpgrade as upgrade:
            # What follows the head in this chunk: the upgraded protocol's first bytes.
            self.upgrade_rest = data[upgrade.args[0]:] if upgrade.args else b""
            if self._should_upgrade():
                self.handle_websocket_upgrade()
            else:
                self._unsupported_upgrade_warning()
        except httptools.HttpParserError as e:
            self._refuse(status_bytes(400, "BadRequest", f"malformed HTTP request: {e}"))

    def handle_websocket_upgrade(self) -> None:
        # The connection is the WebSocket protocol's from now on, with the plain transport.
        self.transport = self._raw
        self.flow._transport = self._raw
        super().handle_websocket_upgrade()

    def send_400_response(self, msg: str) -> None:
        self._refuse(status_bytes(400, "BadRequest", msg))

    def _refuse(self, response: bytes) -> None:
        self._cancel_header_timer()
        if not self.transport.is_closing():
            self.transport.write(response)
        self.transport.close()

    # --- lingering close --------------------------------------------------------------------

    def close_lingering(self) -> None:
        """Close, but first let the client finish sending (see the module docstring)."""
        raw = self._raw
        if self.lingering or raw.is_closing():
            return
        if not self._in_message or not raw.can_write_eof():
            raw.close()
            return
        self.lingering = True
        self._cancel_header_timer()
        raw.write_eof()
        self.flow.resume_reading()
        self._linger_timer = self.loop.call_later(self.linger_seconds, self._close_now)

    def eof_received(self) -> None:
        if self.lingering:
            self._close_now()

    def _close_now(self) -> None:
        if not self._raw.is_closing():
            self._raw.close()

    # --- request limits ---------------------------------------------------------------------

    def _arm_header_timer(self) -> None:
        self._cancel_header_timer()
        self._header_timer = self.loop.call_later(self.header_timeout, self._header_timed_out)

    def _cancel_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _header_timed_out(self) -> None:
        self._header_timer = None
        if self.cycle is not None and not self.cycle.response_complete and not self._in_message:
            return
        self._refuse(status_bytes(408, "Timeout", f"the request headers were not received within "
                                                  f"{self.header_timeout:g}s"))

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._in_message = True
        self._header_bytes = 0

    def on_url(self, url: bytes) -> None:
        super().on_url(url)
        if len(self.url) > self.max_uri_bytes:
            raise _Refused(status_bytes(414, "RequestURITooLong", f"the request URI is longer than "
                                                                  f"{self.max_uri_bytes} bytes"))

    def on_header(self, name: bytes, value: bytes) -> None:
        self._header_bytes += len(name) + len(value) + 4
        if self._header_bytes > self.max_header_bytes:
            raise _Refused(status_bytes(431, "RequestHeaderFieldsTooLarge",
                                        f"the request headers are larger than {self.max_header_bytes} bytes"))
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._cancel_header_timer()
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._in_message = False
        super().on_message_complete()


def protocol_class(*, header_timeout: float | None = None, linger_seconds: float | None = None,
                   base: type[KubeHttpProtocol] = KubeHttpProtocol) -> type[KubeHttpProtocol]:
    """A subclass of ``base`` with these settings, to hand to ``uvicorn.Config(http=...)``."""
    attrs: dict[str, Any] = {}
    if header_timeout is not None:
        attrs["header_timeout"] = header_timeout
    if linger_seconds is not None:
        attrs["linger_seconds"] = linger_seconds
    return type(base.__name__, (base,), attrs) if attrs else base


# --- upgrades handed over raw ------------------------------------------------------------------------


class Handoff(Protocol):
    """Who takes over an upgrade request's connection (``pods/exec``, ``attach``, ``portforward``)."""

    def claims(self, path: str) -> bool:
        """Whether an upgrade request for ``path`` is served raw."""
        ...

    def serve(self, scope: Scope, head: RequestHead, reader: asyncio.StreamReader,
              writer: asyncio.StreamWriter) -> Coroutine[Any, Any, None]:
        """Serve the connection (its head is read; what follows is on ``reader``), then close it.

        ``scope`` is the ASGI HTTP scope uvicorn would have given the request (client and server
        addresses, scheme, path, query, headers), so that the request can still go through the
        ASGI handler chain.
        """
        ...


_UPGRADES: Final = (b"websocket", b"spdy/3.1")


class UpgradeHandoffProtocol(KubeHttpProtocol):
    """:class:`KubeHttpProtocol`, plus: an upgrade the :class:`Handoff` claims leaves uvicorn raw.

    ASGI knows HTTP requests and WebSockets it decodes itself; ``kubectl exec``
    and ``port-forward`` need a connection upgraded to SPDY/3.1 (or a WebSocket
    kube-apiserver does not decode but relays to the kubelet). When a request
    asks for ``Connection: Upgrade`` with ``Upgrade: SPDY/3.1`` or ``websocket``
    on a path the handoff claims, the connection is handed over once its head
    is read: the transport gets a plain stream protocol, the bytes already
    received after the head included, and the handoff's coroutine owns it (in
    uvicorn's task set, so a shutdown waits for it, then cancels it), with the
    ASGI scope of the request.
    """

    handoff: ClassVar[Handoff | None] = None

    def _claimed(self) -> bool:
        if self.handoff is None or self._get_upgrade() not in _UPGRADES:
            return False
        return self.handoff.claims(httptools.parse_url(self.url).path.decode("latin-1"))

    def _should_upgrade(self) -> bool:
        return self._claimed() or super()._should_upgrade()

    def handle_websocket_upgrade(self) -> None:
        if not self._claimed():
            super().handle_websocket_upgrade()
            return
        assert self.handoff is not None
        rest, self.upgrade_rest = self.upgrade_rest, b""
        self.connections.discard(self)
        headers = Headers([(name.decode("latin-1"), value.decode("latin-1")) for name, value in self.headers])
        head = RequestHead(self.scope["method"], self.url.decode("latin-1"), headers)
        # The scope uvicorn would have passed on (it stops short of the path when it sees an upgrade).
        parsed = httptools.parse_url(self.url)
        path = parsed.path.decode("ascii")
        scope: dict[str, Any] = dict(self.scope)
        scope.update(path=self.root_path + (urllib.parse.unquote(path) if "%" in path else path),
                     raw_path=self.root_path.encode("ascii") + parsed.path, query_string=parsed.query or b"")
        reader = asyncio.StreamReader(limit=1 << 20, loop=self.loop)
        protocol = asyncio.StreamReaderProtocol(reader, loop=self.loop)
        transport = self._raw
        transport.set_protocol(protocol)
        protocol.connection_made(transport)
        writer = asyncio.StreamWriter(transport, protocol, reader, self.loop)
        if rest:
            protocol.data_received(rest)
        task = self.loop.create_task(self.handoff.serve(scope, head, reader, writer), name="upgrade-handoff")
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        task.add_done_callback(lambda _task: self.handoff_ended())

    def handoff_ended(self) -> None:
        """The handed-over connection is done (this protocol's ``connection_lost`` is never called for it)."""


def handoff_protocol_class(handoff: Handoff, *, header_timeout: float | None = None) -> type[KubeHttpProtocol]:
    """:class:`UpgradeHandoffProtocol` bound to ``handoff``, for ``uvicorn.Config(http=...)``."""
    bound = type("UpgradeHandoffProtocol", (UpgradeHandoffProtocol,), {"handoff": handoff})
    return protocol_class(header_timeout=header_timeout, base=bound)
