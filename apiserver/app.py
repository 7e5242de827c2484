"""The APIServer's FastAPI application: ``create_app()`` wires routers, state and error handling.

Every response that is not a success is a Kubernetes Status: APIErrors carry
their own; FastAPI's and Starlette's own errors (unknown path, wrong method,
request validation) are translated; anything unexpected becomes a 500
InternalError Status and is logged, never a traceback on the wire.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator

import orjson
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Receive, Scope, Send

from apiserver import errors, rest
from apiserver.errors import APIError
from apiserver.routers import coordination_v1, core_v1, discovery, health, openapi
from apiserver.server import APIServer, Settings
from machinery.api import kinds

log = logging.getLogger("apiserver")


def status_response(err: APIError) -> Response:
    resp = Response(orjson.dumps(err.status()), status_code=err.code, media_type="application/json")
    for k, v in (err.headers or {}).items():
        resp.headers[k] = v
    return resp


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
    app.include_router(core_v1.router)
    app.include_router(coordination_v1.router)
    return app


class RestFastPath:
    """Serve the resource paths straight from the REST dispatcher, around FastAPI's stack.

    The FastAPI app built by ``create_app`` is complete on its own (its routers
    serve the same paths through the same dispatcher). This wrapper exists for
    speed only: every write of every component goes through these paths, and
    FastAPI's per-request layers (telemetry, body-limit and exception
    middlewares, dependency solving) cost about as much as the work itself.
    Errors are turned into Status bodies here exactly as the app's handlers do.
    """

    def __init__(self, app: FastAPI) -> None:
        self.app = app
        self.prefixes: list[tuple[str, str, str]] = []
        for group, version in kinds.group_versions():
            prefix = f"/apis/{group}/{version}/" if group else f"/api/{version}/"
            self.prefixes.append((prefix, group, version))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            path: str = scope["path"]
            for prefix, group, version in self.prefixes:
                if path.startswith(prefix) and len(path) > len(prefix):
                    scope["app"] = self.app
                    request = Request(scope, receive)
                    try:
                        response = await rest.dispatch(request, group, version, path[len(prefix):])
                    except APIError as e:
                        response = status_response(e)
                    except Exception as e:  # a bug: answer a Status, log the traceback
                        log.exception("internal error serving %s %s", request.method, path)
                        response = status_response(errors.internal_error(f"{type(e).__name__}: {e}"))
                    await response(scope, receive, send)
                    return
        await self.app(scope, receive, send)


def asgi_app(settings: Settings) -> tuple[ASGIApp, APIServer]:
    """The APIServer as uvicorn serves it: the FastAPI app behind the REST fast path."""
    app = create_app(settings)
    return RestFastPath(app), app.state.server
