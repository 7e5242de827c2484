"""An upgrade-aware proxy: relay an upgrade request to a backend, then its bytes both ways.

apimachinery's ``UpgradeAwareHandler`` as kube-apiserver uses it for
``pods/exec``, ``attach`` and ``portforward``:

1. dial the backend (the node's kubelet, over TLS: :mod:`apiserver.proxy.kubelet`)
   within :data:`DIAL_TIMEOUT`; a
   failure is ``error dialing backend: ...`` (a 500 Status);
2. send the client's request head with the kubelet's path and query and the
   backend's ``Host``, keeping the upgrade headers (``Connection``,
   ``Upgrade``, ``Sec-WebSocket-*``, ``X-Stream-Protocol-Version``) and
   dropping the client's credentials;
3. read the backend's answer: a ``101`` is passed on and the connection
   becomes a pipe; anything else is passed on as it is (kubectl then prints
   ``unable to upgrade connection: container not found ("c")``) and the
   connection closes;
4. copy both directions until both have ended; one side's end is passed on
   as a half-close, so the other direction can finish (over TLS, which has no
   half-close, as the connection's close).

Concurrency: one task per direction; :func:`relay` returns when both are
done, or when it is cancelled (the APIServer stopping), closing both sockets.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from typing import Final

from apiserver import errors
from apiserver.errors import APIError
from apiserver.proxy.location import Location
from machinery.httpstream.http1 import HeadError, Headers, RequestHead, read_response_head

log = logging.getLogger("apiserver.proxy")

DIAL_TIMEOUT: Final = 5.0
#: How long the backend may take to answer the upgrade request.
RESPONSE_TIMEOUT: Final = 30.0
#: Seconds a client may keep its side open after the backend closed.
LINGER: Final = 5.0
_DROPPED_HEADERS: Final = ("authorization", "cookie", "proxy-authorization", "host")


def backend_request(head: RequestHead, location: Location) -> bytes:
    headers = [(k, v) for k, v in head.headers.items if k.lower() not in _DROPPED_HEADERS]
    rewritten = RequestHead(head.method, location.target,
                            Headers([("Host", f"{location.host}:{location.port}"), *headers]))
    return rewritten.encode()


async def dial(location: Location, tls: ssl.SSLContext) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A TLS connection to the kubelet (the handshake included in the dial's time)."""
    try:
        async with asyncio.timeout(DIAL_TIMEOUT):
            return await asyncio.open_connection(location.host, location.port, limit=1 << 20, ssl=tls,
                                                 server_hostname=location.host)
    except TimeoutError:
        raise errors.internal_error(f"error dialing backend: dial tcp {location.host}:{location.port}: "
                                    "i/o timeout") from None
    except ssl.SSLError as err:
        raise errors.internal_error(f"error dialing backend: tls: {err.reason or err}") from None
    except OSError as err:
        raise errors.internal_error(f"error dialing backend: dial tcp {location.host}:{location.port}: "
                                    f"connect: {err.strerror or err}") from None


async def proxy_upgrade(head: RequestHead, location: Location, client_reader: asyncio.StreamReader,
                        client_writer: asyncio.StreamWriter, tls: ssl.SSLContext) -> None:
    """Relay the upgrade to the backend and the connection after it; APIError before any byte is sent back."""
    reader, writer = await dial(location, tls)
    try:
        writer.write(backend_request(head, location))
        await writer.drain()
        try:
            response = await read_response_head(reader, timeout=RESPONSE_TIMEOUT)
        except (HeadError, TimeoutError, ConnectionError, OSError):
            # The kubelet of a stopped node resets the connection, as an unreachable host would refuse it.
            raise errors.internal_error(f"error dialing backend: dial tcp {location.host}:{location.port}: "
                                        "connect: connection refused") from None
        if response.code != 101:
            response.headers.set("Connection", "close")
            client_writer.write(response.encode())
            await client_writer.drain()
            await _copy(reader, client_writer, half_close=False)
            return
        client_writer.write(response.encode())
        await client_writer.drain()
        await relay(client_reader, client_writer, reader, writer)
    except APIError:
        raise
    except (ConnectionError, OSError):
        pass
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError, OSError):
            await writer.wait_closed()


async def _copy(source: asyncio.StreamReader, sink: asyncio.StreamWriter, *, half_close: bool = True) -> None:
    try:
        while data := await source.read(256 * 1024):
            sink.write(data)
            await sink.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        if half_close and not sink.is_closing():
            with contextlib.suppress(OSError, RuntimeError):
                if sink.can_write_eof():
                    sink.write_eof()
                else:
                    # TLS has no half-close: the other side learns of the end when the connection closes
                    # (what is buffered is sent first), as Go's proxy closes both once one copy ends.
                    sink.close()


async def relay(a_reader: asyncio.StreamReader, a_writer: asyncio.StreamWriter, b_reader: asyncio.StreamReader,
                b_writer: asyncio.StreamWriter) -> None:
    """Copy a->b and b->a until both directions have ended.

    Once the backend (b) has finished, the client gets :data:`LINGER` seconds to finish too
    (it normally closes at once); a client that finished first waits for all the backend sends.
    """
    up = asyncio.create_task(_copy(a_reader, b_writer), name="proxy-client-to-backend")
    down = asyncio.create_task(_copy(b_reader, a_writer), name="proxy-backend-to-client")
    try:
        await asyncio.wait({up, down}, return_when=asyncio.FIRST_COMPLETED)
        if down.done():
            await asyncio.wait({up}, timeout=LINGER)
        else:
            await down
    finally:
        for task in (up, down):
            task.cancel()
        await asyncio.gather(up, down, return_exceptions=True)
