"""The authentication filter: every HTTP and WebSocket request gets its user, or a 401.

kube-apiserver's ``WithAuthentication``. The user goes into the ASGI scope
under :data:`~apiserver.endpoints.request.USER_SCOPE_KEY`, where
:attr:`Call.user <apiserver.endpoints.request.Call.user>`, admission, audit
and authorization read it. A bearer token that authenticated the request is
removed from the headers handed on (nothing after this filter can leak it).
A request whose credentials fail gets kube-apiserver's 401 Status
(``Unauthorized``) from the ``failed`` app, which audit wraps to record it.

Concurrency: stateless; runs on the event loop.
"""

from __future__ import annotations

from typing import Final

import orjson
from starlette.types import ASGIApp, Receive, Scope, Send

from apiserver.admission import UserInfo
from apiserver.authentication import x509
from apiserver.authentication.authenticator import Authenticator
from apiserver.endpoints.request import USER_SCOPE_KEY

UNAUTHORIZED_BODY: Final = orjson.dumps({"kind": "Status", "apiVersion": "v1", "metadata": {},
                                         "status": "Failure", "message": "Unauthorized",
                                         "reason": "Unauthorized", "code": 401})


async def unauthorized(scope: Scope, receive: Receive, send: Send) -> None:
    """The 401 answer (for a WebSocket: the handshake is refused with 401)."""
    if scope["type"] == "websocket":
        await send({"type": "websocket.http.response.start", "status": 401,
                    "headers": [(b"content-type", b"application/json")]})
        await send({"type": "websocket.http.response.body", "body": UNAUTHORIZED_BODY})
        return
    await send({"type": "http.response.start", "status": 401,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(UNAUTHORIZED_BODY)).encode())]})
    await send({"type": "http.response.body", "body": UNAUTHORIZED_BODY})


class WithAuthentication:
    def __init__(self, app: ASGIApp, authenticator: Authenticator, *, failed: ASGIApp = unauthorized) -> None:
        self.app = app
        self.authenticator = authenticator
        self.failed = failed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        authorization: str | None = None
        for name, value in scope["headers"]:
            if name == b"authorization":
                authorization = value.decode("latin-1")
                break
        peer = x509.connection_user(scope.get("server"), scope.get("client")) \
            if scope.get("scheme") in ("https", "wss") else None
        user, by_token = await self.authenticator.authenticate(peer=peer, authorization=authorization)
        if user is None:
            await self.failed(scope, receive, send)
            return
        if by_token:
            scope = dict(scope)
            scope["headers"] = [(k, v) for k, v in scope["headers"] if k != b"authorization"]
        scope[USER_SCOPE_KEY] = user
        await self.app(scope, receive, send)


#: Who requests on ``--insecure-port`` are: kube-apiserver's old insecure port gave them every right.
INSECURE_USER: Final = UserInfo("system:unsecured", ("system:masters", "system:authenticated"))


class WithUser:
    """Every request is ``user``, unauthenticated and unchecked (``--insecure-port``)."""

    def __init__(self, app: ASGIApp, user: UserInfo = INSECURE_USER) -> None:
        self.app = app
        self.user = user

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            scope[USER_SCOPE_KEY] = self.user
        await self.app(scope, receive, send)
