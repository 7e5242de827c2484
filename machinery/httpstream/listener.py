"""A TCP listener that runs each connection as its own task, so that closing it ends them all.

kubelet_sim's kubelet API and metrics-server's ``metrics.k8s.io`` API are small
HTTP/1.1 servers on asyncio streams (:mod:`machinery.httpstream.http1` reads and
answers their requests). Around both sits the same bookkeeping, kept here:

- with a TLS context, connections are TLS (the handshake done before the
  handler runs; a verified client certificate is the writer's ``peercert``);
- every accepted connection is served by the handler on a task of its own,
  which may live as long as the connection (a followed log, an exec session, a
  keep-alive connection of the aggregator);
- :meth:`Listener.close` stops accepting, cancels the connections still open
  and waits for them, so a process shuts down without stray tasks;
- the connection's writer is closed however the handler ends (returning,
  raising or being cancelled; a cancelled connection's task ends normally,
  so that asyncio logs no error for it); what a handler does about its own
  errors, answering or resetting the connection, is its own business.

Concurrency: everything on the event loop; the set of connection tasks is
changed only by those tasks themselves, on entry and exit.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import Awaitable, Callable

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


class Listener:
    """Accepts connections on one address and serves each with ``handle`` on a task of its own."""

    def __init__(self, handle: Handler, tls: ssl.SSLContext | None = None) -> None:
        self._handle = handle
        self._tls = tls
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()

    async def start(self, host: str, port: int) -> int:
        """Listen on ``host``:``port`` (0: a free one); returns the port."""
        self._server = await asyncio.start_server(self._accept, host, port, backlog=1024, ssl=self._tls,
                                                  ssl_handshake_timeout=10.0 if self._tls else None)
        bound: int = self._server.sockets[0].getsockname()[1]
        return bound

    @property
    def open_connections(self) -> int:
        """Connections being served now."""
        return len(self._connections)

    async def close(self) -> None:
        """Stop accepting, cancel every connection still open and wait until they have ended."""
        if self._server is not None:
            self._server.close()
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            await self._handle(reader, writer)
        except asyncio.CancelledError:
            # close() (or the process's shutdown) ended the connection: the task ends normally, because
            # Python 3.11's StreamReaderProtocol asks a finished connection task for its exception, which
            # raises for a cancelled one and is logged as "Exception in callback" with a traceback.
            pass
        finally:
            self._connections.discard(task)
            writer.close()
            with contextlib.suppress(ConnectionError, OSError):
                await writer.wait_closed()
