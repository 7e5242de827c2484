"""The raw connection of an upgrade request, as the handler chain passes it to the connect handler.

:class:`~apiserver.proxy.connect.UpgradeHandoff` puts an
:class:`UpgradedConnection` in the ASGI scope's ``extensions`` (under
:data:`UPGRADE_EXTENSION`) of the upgrade requests it takes off uvicorn; the
connect handler, once its checks pass, relays it to the kubelet and answers
:data:`HIJACKED`, as a Go handler hijacks its ``http.ResponseWriter``. A
request without one (not an upgrade, or not from the HTTP server) gets
kube-apiserver's ``400 Upgrade request required`` from the handler.

Values only; the relay's I/O is :mod:`apiserver.proxy.upgradeaware`'s.
"""

from __future__ import annotations

import asyncio
import ssl
from dataclasses import dataclass
from typing import Final

from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from apiserver.errors import APIError
from apiserver.proxy.location import Location
from apiserver.proxy.upgradeaware import proxy_upgrade
from machinery.httpstream.http1 import RequestHead

#: The key of :class:`UpgradedConnection` in an upgrade request's ASGI ``extensions``.
UPGRADE_EXTENSION: Final = "kubesim.upgrade"


@dataclass(slots=True)
class UpgradedConnection:
    """The raw connection of an upgrade request, for the handler that relays it."""

    head: RequestHead
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    relayed: bool = False

    async def relay(self, location: Location, tls: ssl.SSLContext) -> None:
        """Relay the connection to ``location`` until both sides end.

        An APIError means nothing was answered yet (the kubelet could not be reached): the handler
        chain answers it as usual. Once anything else happened, the connection is the relay's.
        """
        try:
            await proxy_upgrade(self.head, location, self.reader, self.writer, tls)
        except APIError:
            raise
        except BaseException:
            self.relayed = True
            raise
        self.relayed = True


def upgraded_connection(scope: Scope) -> UpgradedConnection | None:
    """The raw connection of an upgrade request taken off uvicorn (:class:`~apiserver.proxy.connect.UpgradeHandoff`), else None."""
    connection = (scope.get("extensions") or {}).get(UPGRADE_EXTENSION)
    return connection if isinstance(connection, UpgradedConnection) else None


class _Hijacked(Response):
    """The answer of a handler that relayed the connection itself: nothing more is sent."""

    def __init__(self) -> None:
        super().__init__(status_code=101)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        return None


#: What a connect handler answers once it has relayed the connection.
HIJACKED: Final = _Hijacked()
