"""The handler chain: the filters every request passes before the REST layer, as kube-apiserver's.

kube-apiserver wraps its handlers in filters (``DefaultBuildHandlerChain``);
kubesim keeps the ones that protect the server from its clients, in the same
order, outermost first:

1. :mod:`.timeout`: a request that is not long-running gets ``504 Timeout``
   after ``--request-timeout`` (60 s), or the shorter ``?timeout=`` it asked for;
2. :mod:`.maxinflight`: at most ``--max-requests-inflight`` (400) reads and
   ``--max-mutating-requests-inflight`` (200) writes at once; beyond that,
   ``429 TooManyRequests`` with ``Retry-After``.

Long-running requests (watches, followed logs, exec, attach, port-forward,
proxy) are exempt from both, as there (:mod:`.longrunning`); a watch's own
duration is capped by ``--min-request-timeout`` in the REST layer.

Each filter is a plain ASGI middleware; :func:`handler_chain` stacks them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.types import ASGIApp

from apiserver.filters.maxinflight import MaxInFlight
from apiserver.filters.timeout import RequestTimeout

if TYPE_CHECKING:
    from apiserver.server import Settings


def handler_chain(app: ASGIApp, settings: Settings) -> ASGIApp:
    """``app`` behind the filters, configured from ``settings`` (a limit of 0 disables its filter)."""
    handler: ASGIApp = app
    if settings.max_requests_inflight > 0 or settings.max_mutating_requests_inflight > 0:
        handler = MaxInFlight(handler, max_requests=settings.max_requests_inflight,
                              max_mutating=settings.max_mutating_requests_inflight)
    if settings.request_timeout > 0:
        handler = RequestTimeout(handler, timeout=settings.request_timeout)
    return handler
