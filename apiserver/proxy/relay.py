"""Plain HTTP relaying to a backend: the HTTP ``proxy`` subresources' last step.

:func:`relay_http` sends the client's request on (method, headers less
hop-by-hop ones and the client's credentials, body) and streams the answer
back as it comes. A backend that cannot be reached is kube-apiserver's
``503 error trying to reach service: ...``.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Final

import httpx
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from apiserver import errors

#: Hop-by-hop headers a proxy does not pass on (RFC 9110), plus what identifies the client to us.
HOP_BY_HOP: Final = frozenset({"connection", "keep-alive", "proxy-connection", "transfer-encoding", "te",
                               "trailer", "upgrade", "host", "authorization", "content-length"})


async def relay_http(request: Request, http: httpx.AsyncClient, url: str) -> Response:
    """Send ``request`` on to ``url`` with ``http`` (its method, headers less hop-by-hop ones, body); stream the answer."""
    headers = [(k, v) for k, v in request.headers.items() if k.lower() not in HOP_BY_HOP]
    body = await request.body()
    upstream_request = http.build_request(request.method, url, headers=headers, content=body or None)
    try:
        upstream = await http.send(upstream_request, stream=True)
    except httpx.HTTPError as err:
        raise errors.service_unavailable(f"error trying to reach service: {err}") from err

    async def relay() -> AsyncIterator[bytes]:
        try:
            async for chunk in upstream.aiter_raw():
                yield chunk
        finally:
            with contextlib.suppress(Exception):
                await upstream.aclose()

    passed = {k: v for k, v in upstream.headers.items() if k.lower() not in HOP_BY_HOP}
    return StreamingResponse(relay(), status_code=upstream.status_code, headers=passed)
