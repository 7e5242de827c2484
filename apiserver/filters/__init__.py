"""The handler chain: the filters every request passes before the REST layer, as kube-apiserver's.

kube-apiserver wraps its handlers in filters (``DefaultBuildHandlerChain``);
kubesim keeps the ones that protect the server from its clients, where
kube-apiserver has them:

1. :mod:`.timeout`, outermost: a request that is not long-running gets ``504
   Timeout`` after ``--request-timeout`` (60 s), or the shorter ``?timeout=`` it
   asked for (:func:`handler_chain`);
2. :mod:`.maxinflight`, after authentication and impersonation, before
   authorization (:func:`max_in_flight`, placed by :mod:`apiserver.app`): at most
   ``--max-requests-inflight`` (400) reads and ``--max-mutating-requests-inflight``
   (200) writes at once; beyond that, ``429 TooManyRequests`` with
   ``Retry-After``, except for ``system:masters``.

Long-running requests (watches, followed logs, exec, attach, port-forward,
proxy) are exempt from both, as there (:mod:`.longrunning`); a watch's own
duration is capped by ``--min-request-timeout`` in the REST layer.

Each filter is a plain ASGI middleware.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.types import ASGIApp

from apiserver.filters.maxinflight import MaxInFlight
from apiserver.filters.timeout import RequestTimeout

if TYPE_CHECKING:
    from apiserver.server import Settings


def max_in_flight(app: ASGIApp, settings: Settings) -> ASGIApp:
    """``app`` behind the in-flight limits of ``settings`` (both 0: no filter)."""
    if settings.max_requests_inflight > 0 or settings.max_mutating_requests_inflight > 0:
        return MaxInFlight(app, max_requests=settings.max_requests_inflight,
                           max_mutating=settings.max_mutating_requests_inflight)
    return app


def handler_chain(app: ASGIApp, settings: Settings) -> ASGIApp:
    """``app`` (the security filters and what they guard) behind the outermost filters of ``settings``."""
    handler: ASGIApp = app
    if settings.request_timeout > 0:
        handler = RequestTimeout(handler, timeout=settings.request_timeout)
    return handler
