"""The request timeout: kube-apiserver's ``WithTimeoutForNonLongRunningRequests`` and ``WithRequestDeadline``.

A request that is not long-running must be answered within
``--request-timeout`` (60 s by default), or within the shorter duration it
asked for with ``?timeout=`` (``30s``, ``1m``; an invalid one is a 400). Past
the deadline the handler is cancelled and the client gets ``504 Timeout``
(``Timeout: request did not complete within requested timeout - context
deadline exceeded``). The clock runs from the request's arrival, so a body
trickled in slowly counts against it too. If the response had already
started, the connection is closed instead (the status line is gone).

Concurrency: one task per request, as uvicorn runs them; the handler runs in
it under ``asyncio.timeout``.
"""

from __future__ import annotations

import asyncio
from urllib.parse import parse_qs

import orjson
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from apiserver.filters.longrunning import is_long_running
from machinery.api.duration import parse_duration

TIMEOUT_MESSAGE = "Timeout: request did not complete within requested timeout - context deadline exceeded"


def _status(code: int, reason: str, message: str, details: dict[str, object] | None = None) -> bytes:
    body: dict[str, object] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                               "message": message, "reason": reason, "code": code}
    if details is not None:
        body["details"] = details
    return orjson.dumps(body)


def requested_timeout(scope: Scope) -> float | None:
    """The ``?timeout=`` duration in seconds, None when absent; ValueError when it is not a duration."""
    raw: bytes = scope.get("query_string", b"")
    if b"timeout=" not in raw:
        return None
    query = parse_qs(raw.decode("latin-1"), keep_blank_values=True)
    values = query.get("timeout")
    if not values or values[0] == "":
        return None
    seconds = parse_duration(values[0])
    if seconds < 0:
        raise ValueError("negative")
    return seconds


class RequestTimeout:
    """Answer 504 when a non-long-running request takes longer than ``timeout`` seconds."""

    def __init__(self, app: ASGIApp, *, timeout: float) -> None:
        self.app = app
        self.timeout = timeout
        #: Requests answered 504 by this filter so far.
        self.timed_out = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or is_long_running(scope):
            await self.app(scope, receive, send)
            return
        try:
            asked = requested_timeout(scope)
        except ValueError:
            await _answer(send, 400, _status(400, "BadRequest", "invalid timeout specified in the request URL"))
            return
        timeout = self.timeout if asked is None or asked == 0 else min(asked, self.timeout)
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        deadline = asyncio.timeout(timeout)
        try:
            async with deadline:
                await self.app(scope, receive, tracking_send)
        except TimeoutError:
            if not deadline.expired():
                raise
            self.timed_out += 1
            if not started:
                await _answer(send, 504, _status(504, "Timeout", TIMEOUT_MESSAGE, {}))
            # Otherwise the status line is gone: returning unfinished makes uvicorn close the connection.


async def _answer(send: Send, code: int, body: bytes) -> None:
    await send({"type": "http.response.start", "status": code,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
