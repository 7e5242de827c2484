"""The one request path of resources: from an HTTP request under ``/api`` or ``/apis`` to a verb.

:class:`ResourceFront` is the ASGI application uvicorn serves. A path under
``/api/v1/`` or ``/apis/<group>/<version>/`` of a group-version the registry
serves goes straight to :func:`dispatch` (FastAPI's per-request layers cost
about as much as the work itself on the hot paths every component uses);
everything else (discovery, OpenAPI, health, ``/version``) goes to the FastAPI
app. Errors become Status bodies here exactly as the app's handlers do.

:func:`dispatch` maps (method, what the path names) to a verb, Kubernetes'
way: a subresource's handler object takes its verbs (a connecter takes every
method), a virtual resource's code takes its own, and stored resources go to
the generic handlers. A verb the resource's discovery entry does not list is
405. There is no per-kind code here.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from apiserver import errors, metrics
from apiserver.endpoints import handlers
from apiserver.endpoints.body import truthy
from apiserver.endpoints.request import Call, resolve
from apiserver.errors import APIError, status_response

if TYPE_CHECKING:
    from apiserver.server import APIServer

log = logging.getLogger("apiserver")

Handler = Callable[[Call], Awaitable[Response]]

_SUBRESOURCE_VERBS = {"GET": "get", "POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


def verb_of(call: Call, method: str) -> str:
    """The Kubernetes verb of a request, as authorization and metrics name it."""
    if call.subresource is not None:
        sub = call.resource.subresources.get(call.subresource)
        if sub is not None and sub.connects:
            return {"GET": "get", "POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}.get(
                method, method.lower())
        return _SUBRESOURCE_VERBS.get(method, method.lower())
    return _verb(call, method) or method.lower()


def _verb(call: Call, method: str) -> str:
    """The Kubernetes verb of a request on a resource (not a subresource)."""
    if call.name is None:
        if method == "GET":
            return "watch" if call.watch_path or truthy(call.query.get("watch")) else "list"
        return {"POST": "create", "DELETE": "deletecollection"}.get(method, "")
    if method == "GET":
        return "watch" if call.watch_path else "get"
    return {"PUT": "update", "PATCH": "patch", "DELETE": "delete"}.get(method, "")


_GENERIC: dict[str, Handler] = {
    "get": handlers.get,
    "list": handlers.list_objects,
    "watch": handlers.watch,
    "create": handlers.create,
    "update": handlers.update,
    "patch": handlers.patch_object,
    "delete": handlers.delete,
    "deletecollection": handlers.delete_collection,
}


async def dispatch(call: Call, method: str) -> Response:
    resource = call.resource
    if call.subresource is not None:
        if call.watch_path or call.name is None:
            raise errors.method_not_allowed()
        sub = resource.subresources[call.subresource]
        if sub.connects:
            return await sub.connect(call)
        sub_verb = _SUBRESOURCE_VERBS.get(method)
        if sub_verb is None:
            raise errors.method_not_allowed()
        handler: Handler = getattr(sub, sub_verb)
        return await handler(call)
    verb = _verb(call, method)
    if not verb or verb not in resource.info.verbs:
        raise errors.method_not_allowed()
    if resource.rest is not None:
        rest_handler: Handler | None = getattr(resource.rest, verb, None)
        if rest_handler is None:
            raise errors.method_not_allowed()
        return await rest_handler(call)
    return await _GENERIC[verb](call)


class ResourceFront:
    """Serve the resource paths from :func:`dispatch`, everything else from the FastAPI app."""

    def __init__(self, app: ASGIApp, server: APIServer) -> None:
        self.app = app
        self.server = server

    def _split(self, path: str) -> tuple[str, str, str] | None:
        """(group, version, rest of the path) for a resource path of a served group-version."""
        if path.startswith("/api/"):
            version, sep, rest = path[5:].partition("/")
            group = ""
        elif path.startswith("/apis/"):
            group, sep1, tail = path[6:].partition("/")
            if not sep1:
                return None
            version, sep, rest = tail.partition("/")
        else:
            return None
        if not sep or not rest or not self.server.registry.serves(group, version):
            return None
        return group, version, rest

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            split = self._split(scope["path"])
            if split is not None:
                # Every resource request's CPU is counted by kind (apiserver/metrics.py).
                timer = metrics.CPUTimer()
                labels = ["", split[0], "", ""]
                code = await timer.run(self._serve(scope, receive, send, split, labels, timer))
                metrics.record(timer, labels[0], labels[1], labels[2], labels[3], code)
                return
        await self.app(scope, receive, send)

    async def _serve(self, scope: Scope, receive: Receive, send: Send, split: tuple[str, str, str],
                     labels: list[str], timer: metrics.CPUTimer) -> int:
        scope["app"] = self.app
        request = Request(scope, receive)
        labels[0] = request.method.lower()
        try:
            target = resolve(self.server.registry, *split)
            call = Call(request, self.server, target.resource, target.namespace, target.name,
                        target.subresource, target.watch_path)
            labels[0] = verb_of(call, request.method)
            labels[2], labels[3] = target.resource.info.plural, target.subresource or ""
            timer.counter = metrics.REQUEST_CPU.labels(*labels)
            response = await dispatch(call, request.method)
        except APIError as e:
            response = status_response(e)
        except Exception as e:  # a bug: answer a Status, log the traceback
            log.exception("internal error serving %s %s", request.method, scope["path"])
            response = status_response(errors.internal_error(f"{type(e).__name__}: {e}"))
        await response(scope, receive, send)
        return response.status_code
