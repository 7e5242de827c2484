"""Max in-flight requests: kube-apiserver's ``WithMaxInFlightLimit``.

Two counters, one for reads and one for writes (POST, PUT, PATCH, DELETE).
A request that would exceed its limit is answered at once with ``429
TooManyRequests`` (``Too many requests, please try again later.``,
``Retry-After: 1``); it is not queued, so an overloaded server sheds load
instead of piling up work it will answer too late. Long-running requests and
health probes are not counted. A member of ``system:masters`` is never refused:
when the limit is reached its request is served all the same, uncounted ("a
system:master is so powerful that they should always get an answer"), as
kube-apiserver's filter does and as its Priority and Fairness does with its
``exempt`` level. So the filter sits where kube-apiserver puts it: after
authentication and impersonation (it judges the user the request acts as),
before authorization (:func:`apiserver.app.secure_handler`).

kube-apiserver 1.32 uses API Priority and Fairness by default, whose total
concurrency is the sum of these two flags; kubesim keeps the simpler filter
that the flags name (``--enable-priority-and-fairness=false``).

Concurrency: the counters are touched only on the event loop, between awaits.
"""

from __future__ import annotations

from typing import Final

import orjson
from starlette.types import ASGIApp, Receive, Scope, Send

from apiserver.admission.chain import UserInfo
from apiserver.authorization.authorizer import SYSTEM_MASTERS
from apiserver.endpoints.request import USER_SCOPE_KEY
from apiserver.filters.longrunning import HEALTH_PATHS, is_long_running, is_mutating

RETRY_AFTER_SECONDS: Final = 1


def too_many_requests_body() -> bytes:
    return orjson.dumps({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                         "message": "Too many requests, please try again later.", "reason": "TooManyRequests",
                         "details": {"retryAfterSeconds": RETRY_AFTER_SECONDS}, "code": 429})


class MaxInFlight:
    """Refuse requests beyond ``max_requests`` reads or ``max_mutating`` writes in flight (0: no limit)."""

    def __init__(self, app: ASGIApp, *, max_requests: int, max_mutating: int) -> None:
        self.app = app
        self.max_requests = max_requests
        self.max_mutating = max_mutating
        self.reads = 0
        self.writes = 0
        #: Requests refused so far, reads and writes.
        self.refused = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") in HEALTH_PATHS or is_long_running(scope):
            await self.app(scope, receive, send)
            return
        mutating = is_mutating(scope)
        limit = self.max_mutating if mutating else self.max_requests
        current = self.writes if mutating else self.reads
        if limit > 0 and current >= limit:
            user: UserInfo | None = scope.get(USER_SCOPE_KEY)
            if user is not None and SYSTEM_MASTERS in user.groups:
                await self.app(scope, receive, send)
                return
            self.refused += 1
            await _refuse(send)
            return
        if mutating:
            self.writes += 1
        else:
            self.reads += 1
        try:
            await self.app(scope, receive, send)
        finally:
            if mutating:
                self.writes -= 1
            else:
                self.reads -= 1


async def _refuse(send: Send) -> None:
    body = too_many_requests_body()
    await send({"type": "http.response.start", "status": 429,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"retry-after", str(RETRY_AFTER_SECONDS).encode())]})
    await send({"type": "http.response.body", "body": body})
