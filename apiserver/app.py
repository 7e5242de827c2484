"""The APIServer's ASGI application: resources through the one request path, the rest through FastAPI.

:func:`asgi_app` is what uvicorn serves: the aggregation layer
(:mod:`apiserver.aggregator`, APIServices served by other processes) and the
:class:`~apiserver.endpoints.dispatch.ResourceFront` in front of the FastAPI
app that :func:`create_app` builds for discovery, OpenAPI, ``/version`` and the
health endpoints. Every response that is not a success is a Kubernetes Status:
APIErrors carry their own; FastAPI's and Starlette's own errors (unknown path,
wrong method, request validation) are translated; anything unexpected becomes
a 500 InternalError Status and is logged, never a traceback on the wire.

In front of both sit the hostile-input limits (:mod:`apiserver.filters`:
request timeout, max-in-flight), then the security filters in kube-apiserver's
order (``DefaultBuildHandlerChain``), outermost first: authentication (401,
audited as a failed authentication), audit, impersonation, authorization (403).
(kube-apiserver has its max-in-flight limit between impersonation and
authorization; here it is outside authentication, so that a flood of requests
with bad credentials is limited too.) The
``--insecure-port`` app skips all but audit: its requests are
``system:unsecured`` in ``system:masters``, as kube-apiserver's old insecure
port had them.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp

from apiserver import errors, filters
from apiserver.aggregator.handler import AggregationLayer
from apiserver.audit.filter import WithAudit, failed_authentication
from apiserver.authentication.filter import WithAuthentication, WithUser, unauthorized
from apiserver.authentication.impersonation import WithImpersonation
from apiserver.authorization.filter import WithAuthorization
from apiserver.endpoints.dispatch import ResourceFront
from apiserver.errors import APIError, status_response
from apiserver.routers import discovery, health, openapi
from apiserver.server import APIServer
from apiserver.settings import Settings

log = logging.getLogger("apiserver")


def create_app(settings: Settings) -> FastAPI:
    server = APIServer(settings)

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        await server.start()
        try:
            yield
        finally:
            await server.stop()

    app = FastAPI(title="kubesim apiserver", lifespan=lifespan, openapi_url=None, docs_url=None,
                  redoc_url=None)
    app.state.server = server

    @app.exception_handler(APIError)
    async def api_error(_request: Request, exc: APIError) -> Response:
        return status_response(exc)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_request: Request, exc: StarletteHTTPException) -> Response:
        if exc.status_code == 404:
            return status_response(errors.path_not_found())
        if exc.status_code == 405:
            return status_response(errors.method_not_allowed())
        return status_response(APIError(exc.status_code, "BadRequest" if exc.status_code < 500 else
                                        "InternalError", str(exc.detail)))

    @app.exception_handler(RequestValidationError)
    async def validation_error(_request: Request, exc: RequestValidationError) -> Response:
        return status_response(errors.bad_request(str(exc)))

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> Response:
        log.exception("internal error serving %s %s", request.method, request.url.path)
        return status_response(errors.internal_error(f"{type(exc).__name__}: {exc}"))

    app.include_router(health.router)
    app.include_router(discovery.router)
    app.include_router(openapi.router)
    return app


def secure_handler(front: ASGIApp, server: APIServer) -> ASGIApp:
    """``front`` behind authentication, audit, impersonation, the in-flight limits and authorization."""
    handler: ASGIApp = WithAuthorization(front, server.authorizer)
    handler = filters.max_in_flight(handler, server.settings)
    handler = WithImpersonation(handler, server.authorizer)
    failed: ASGIApp = unauthorized
    if server.auditor is not None:
        handler = WithAudit(handler, server.auditor)
        failed = failed_authentication(unauthorized, server.auditor)
    return WithAuthentication(handler, server.authenticator, failed=failed)


def insecure_handler(front: ASGIApp, server: APIServer) -> ASGIApp:
    """``front`` as ``--insecure-port`` serves it: every request a ``system:masters`` one, audited (counted
    against the in-flight limits, never refused by them)."""
    handler = filters.max_in_flight(front, server.settings)
    handler = WithAudit(handler, server.auditor) if server.auditor is not None else handler
    return WithUser(handler)


def asgi_app(settings: Settings) -> tuple[ASGIApp, APIServer]:
    """The APIServer as uvicorn serves it on its secure port: the security filters before the resource front.

    ``server.insecure_app`` is what ``--insecure-port`` serves.
    """
    app = create_app(settings)
    server: APIServer = app.state.server
    # kube-aggregator sits behind the filters (authentication, impersonation, audit, authorization),
    # in front of the APIServer's own handlers.
    front = AggregationLayer(ResourceFront(app, server), server)
    # The request timeout comes first, then the security filters (the in-flight limits among them).
    server.insecure_app = filters.handler_chain(insecure_handler(front, server), settings)
    return filters.handler_chain(secure_handler(front, server), settings), server
