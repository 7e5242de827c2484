"""Who sent a request: kube-apiserver's union of authenticators, in its order.

1. a verified client certificate (:mod:`.x509`) names the user;
2. else a bearer token (``Authorization: Bearer <token>``) is tried with each
   token authenticator (the ``--token-auth-file``, then ServiceAccount JWTs);
   a token none accepts makes the request fail with 401, even when anonymous
   requests are allowed (a wrong credential is never mistaken for none);
3. else the request is anonymous (``system:anonymous`` in
   ``system:unauthenticated``), unless ``--anonymous-auth=false`` (then 401).

Every authenticated user is also put in ``system:authenticated``, as
kube-apiserver's group adder does. The same code answers TokenReviews.

Token authenticators are synchronous and read the watch caches. A ServiceAccount
token whose ServiceAccount (or bound Secret or Pod) the cache does not hold is
looked at once more after the cache has caught up with etcd, as kube-apiserver's
token getter falls back from its informer to a live read: a token made for a
ServiceAccount created a moment ago is valid at once on every APIServer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, Final, Protocol

from apiserver.admission import ANONYMOUS, UserInfo

AUTHENTICATED: Final = "system:authenticated"
UNAUTHENTICATED: Final = "system:unauthenticated"
ANONYMOUS_USER: Final = ANONYMOUS.name
INVALID_BEARER_TOKEN: Final = "invalid bearer token"


class InvalidCredentials(Exception):
    """Credentials were presented and are not valid; the message says why (TokenReview's ``status.error``)."""


class MaybeStale(InvalidCredentials):
    """Refused for an object missing from watch caches that may lag behind etcd (``caches``)."""

    def __init__(self, message: str, caches: Sequence[Any]) -> None:
        super().__init__(message)
        self.caches = tuple(caches)

    async def catch_up(self, timeout: float = 1.0) -> None:
        """Wait, at most ``timeout`` seconds, until the caches hold everything etcd holds now."""
        await asyncio.gather(*(cache.wait_fresh(timeout) for cache in self.caches), return_exceptions=True)


class TokenAuthenticator(Protocol):
    def authenticate_token(self, token: str, audiences: Sequence[str]) -> UserInfo | None:
        """The token's user; None when the token is not this authenticator's; raise when it is but is invalid."""
        ...


def with_authenticated(user: UserInfo) -> UserInfo:
    """``user`` in ``system:authenticated`` (kube-apiserver's AuthenticatedGroupAdder)."""
    if user.name == ANONYMOUS_USER or AUTHENTICATED in user.groups or UNAUTHENTICATED in user.groups:
        return user
    return UserInfo(user.name, (*user.groups, AUTHENTICATED), user.uid, user.extra)


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header; None for none or another scheme."""
    if not authorization:
        return None
    parts = authorization.strip().split(" ")
    if len(parts) < 2 or parts[0].lower() != "bearer" or not parts[1]:
        return None
    return parts[1]


class Authenticator:
    """The request authenticator: certificates, then tokens, then anonymous."""

    def __init__(self, *, tokens: Sequence[TokenAuthenticator] = (), anonymous: bool = True,
                 api_audiences: Sequence[str] = ()) -> None:
        self.tokens = tuple(tokens)
        self.anonymous = anonymous
        self.api_audiences = tuple(api_audiences)
        #: Users as authenticated (system:authenticated added), made once per user rather than per request.
        self._authenticated: dict[UserInfo, UserInfo] = {}

    def authenticate_token(self, token: str, audiences: Sequence[str] = ()) -> UserInfo:
        """The user a bearer token stands for, or :class:`InvalidCredentials`."""
        errors: list[str] = []
        stale: list[Any] = []
        for authenticator in self.tokens:
            try:
                user = authenticator.authenticate_token(token, audiences or self.api_audiences)
            except Exception as err:  # noqa: BLE001 - each authenticator's refusal is a reason, not a crash
                errors.append(str(err))
                stale.extend(getattr(err, "caches", ()))
                continue
            if user is not None:
                known = self._authenticated.get(user)
                if known is None:
                    if len(self._authenticated) > 65_536:
                        self._authenticated.clear()
                    known = self._authenticated[user] = with_authenticated(user)
                return known
        if not errors:
            raise InvalidCredentials(INVALID_BEARER_TOKEN)
        message = errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
        if stale:
            raise MaybeStale(message, stale)
        raise InvalidCredentials(message)

    async def authenticate_token_fresh(self, token: str, audiences: Sequence[str] = ()) -> UserInfo:
        """:meth:`authenticate_token`, tried again once the caches caught up if it failed on what they lacked."""
        try:
            return self.authenticate_token(token, audiences)
        except MaybeStale as err:
            await err.catch_up()
        return self.authenticate_token(token, audiences)

    async def authenticate(self, *, peer: UserInfo | None,
                           authorization: str | None) -> tuple[UserInfo | None, bool]:
        """(the user, whether a bearer token authenticated it); (None, False) means 401."""
        if peer is not None:
            # A connection's certificate user is stored in system:authenticated already (x509.PEERS).
            return peer if AUTHENTICATED in peer.groups else with_authenticated(peer), False
        token = bearer_token(authorization)
        if token is not None:
            try:
                return await self.authenticate_token_fresh(token), True
            except InvalidCredentials:
                return None, False
        if self.anonymous:
            return ANONYMOUS, False
        return None, False
