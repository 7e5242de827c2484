"""Client certificates: the TLS layer verifies them, this module reads who they name.

kube-apiserver's x509 authenticator takes the user name from the
certificate's Common Name and the groups from its Organizations
(``CN=jane, O=dev, O=ops`` is user ``jane`` in groups ``dev`` and ``ops``).
The serving TLS context asks every client for a certificate
(``CERT_OPTIONAL``) and OpenSSL checks it against ``--client-ca-file``
during the handshake: a connection either carries a verified certificate or
none. (Kubernetes verifies after the handshake and answers a certificate from
another CA with 401; with Python's ssl such a handshake fails instead.)

The identity is read once per connection, when the handshake is done:
:func:`with_peer_identity` makes a uvicorn protocol class that records the
connection's user under its (server address, client address) in
:data:`PEERS`, which the authentication filter looks up for every request on
that connection, HTTP or WebSocket. A new connection from the same address
always overwrites the entry first, so a stale one is never read.
Connections handed over raw (SPDY upgrades) read it with
:func:`user_from_transport`.

Concurrency: the registry is touched only on the event loop.
"""

from __future__ import annotations

import asyncio
from typing import Any, Final, TypeVar

from apiserver.admission import UserInfo
from apiserver.authentication.authenticator import with_authenticated
from machinery.tlsserving import peer_subject

Address = tuple[Any, ...] | None
#: (server address, client address) -> the user of that connection's certificate (None: no certificate).
PEERS: Final[dict[tuple[Address, Address], UserInfo | None]] = {}
#: (server address, client address) -> the protocol that recorded it, so that a late ``connection_lost``
#: of an earlier connection from the same address never removes a newer connection's entry.
_OWNERS: Final[dict[tuple[Address, Address], object]] = {}

P = TypeVar("P", bound=type[asyncio.Protocol])


def user_from_peercert(cert: dict[str, Any] | None) -> UserInfo | None:
    """The user of a verified peer certificate (``ssl.getpeercert()``'s form); None without one or a CN."""
    subject = peer_subject(cert)
    return UserInfo(subject[0], subject[1]) if subject is not None else None


def user_from_transport(transport: Any) -> UserInfo | None:
    return user_from_peercert(transport.get_extra_info("peercert"))


def _address(value: Any) -> Address:
    """(host, port), as uvicorn puts the server and client addresses in the ASGI scope."""
    if isinstance(value, list | tuple) and len(value) >= 2:
        return (str(value[0]), int(value[1]))
    return None


def connection_user(server: Any, client: Any) -> UserInfo | None:
    """The certificate user of the connection between ``server`` and ``client`` (the ASGI scope's tuples)."""
    return PEERS.get((server, client))


def with_peer_identity(base: P) -> P:
    """A subclass of uvicorn's protocol ``base`` that records each connection's certificate user."""

    class PeerIdentityProtocol(base):  # type: ignore[valid-type,misc]
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            super().connection_made(transport)
            self._peer_key = (_address(transport.get_extra_info("sockname")),
                              _address(transport.get_extra_info("peername")))
            user = user_from_transport(transport)
            # Kept as it will be served: in system:authenticated, made once per connection.
            PEERS[self._peer_key] = with_authenticated(user) if user is not None else None
            _OWNERS[self._peer_key] = self

        def _forget(self) -> None:
            key = getattr(self, "_peer_key", None)
            if key is not None and _OWNERS.get(key) is self:
                del _OWNERS[key]
                PEERS.pop(key, None)

        def connection_lost(self, exc: Exception | None) -> None:
            self._forget()
            super().connection_lost(exc)

        def handoff_ended(self) -> None:
            # An upgraded connection (exec, port-forward) left this protocol: forget its peer once it ends.
            self._forget()
            parent = getattr(super(), "handoff_ended", None)
            if parent is not None:
                parent()

    PeerIdentityProtocol.__name__ = PeerIdentityProtocol.__qualname__ = f"PeerIdentity{base.__name__}"
    return PeerIdentityProtocol  # type: ignore[return-value]
