"""The authorization filter: a request the authorizer does not allow is a 403 before any handler runs.

kube-apiserver's ``WithAuthorization``. The request's attributes come from
its :class:`~apiserver.endpoints.requestinfo.RequestInfo` and its user; the
decision and reason are left in the scope (:data:`DECISION_SCOPE_KEY`) and
in audit's ``authorization.k8s.io/decision`` and ``reason`` annotations. A
refusal is Kubernetes' Status, word for word::

    pods is forbidden: User "jane" cannot create resource "pods" in API group "" in the namespace "default"
    pods "web" is forbidden: User "jane" cannot create resource "pods/exec" in API group "" in the namespace "default"
    nodes is forbidden: User "jane" cannot list resource "nodes" in API group "" at the cluster scope
    forbidden: User "system:anonymous" cannot get path "/api"

with the authorizer's reason after a colon when it gave one. A ``GET`` of
``pods/exec``, ``attach`` or ``portforward`` (a WebSocket's handshake: SPDY
upgrades are ``POST``) must also be allowed to ``create`` it, as Kubernetes'
``AuthorizePodWebsocketUpgradeCreatePermission`` has it, so that WebSockets
need the same right as SPDY. Every path is
authorized, discovery and health endpoints included (anonymous users reach
``/healthz``, ``/livez``, ``/readyz`` and ``/version`` through the
``system:public-info-viewer`` binding).

Concurrency: stateless; the authorizer is synchronous.
"""

from __future__ import annotations

import dataclasses
from typing import Final

from starlette.types import ASGIApp, Receive, Scope, Send

from apiserver.admission import ANONYMOUS
from apiserver.audit import context as audit
from apiserver.authorization.authorizer import ALLOW, Attributes, Authorizer
from apiserver.endpoints.request import USER_SCOPE_KEY
from apiserver.endpoints.requestinfo import from_scope
from apiserver.errors import APIError, status_response

#: Pod subresources a connection is upgraded for: a GET of one also needs ``create``.
_UPGRADED_SUBRESOURCES: Final = frozenset({"exec", "attach", "portforward"})

#: (decision, reason) of the request, as audit annotates it.
DECISION_SCOPE_KEY: Final = "kubesim.authorization"


def forbidden_message(attrs: Attributes) -> str:
    user = attrs.user.name
    if not attrs.resource_request:
        return f'User "{user}" cannot {attrs.verb} path "{attrs.path}"'
    resource = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    if attrs.namespace:
        return (f'User "{user}" cannot {attrs.verb} resource "{resource}" in API group "{attrs.api_group}" in the '
                f'namespace "{attrs.namespace}"')
    return f'User "{user}" cannot {attrs.verb} resource "{resource}" in API group "{attrs.api_group}" at the ' \
           "cluster scope"


def forbidden(attrs: Attributes, reason: str = "") -> APIError:
    """``responsewriters.Forbidden``: the 403 Status for a refused request."""
    why = forbidden_message(attrs) + (f": {reason}" if reason else "")
    resource = attrs.resource if attrs.resource_request else ""
    if not resource:
        return APIError(403, "Forbidden", f"forbidden: {why}", {})
    qualified = f"{resource}.{attrs.api_group}" if attrs.api_group else resource
    details: dict[str, str] = {}
    if attrs.name:
        details["name"] = attrs.name
    if attrs.api_group:
        details["group"] = attrs.api_group
    details["kind"] = resource
    subject = f'{qualified} "{attrs.name}"' if attrs.name else qualified
    return APIError(403, "Forbidden", f"{subject} is forbidden: {why}", details)


class WithAuthorization:
    def __init__(self, app: ASGIApp, authorizer: Authorizer) -> None:
        self.app = app
        self.authorizer = authorizer

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        attrs = Attributes.of(from_scope(scope), scope.get(USER_SCOPE_KEY) or ANONYMOUS)
        decision, reason = self.authorizer.authorize(attrs)
        if (decision is ALLOW and attrs.verb == "get" and attrs.resource == "pods" and not attrs.api_group
                and attrs.subresource in _UPGRADED_SUBRESOURCES):
            attrs = dataclasses.replace(attrs, verb="create")
            decision, reason = self.authorizer.authorize(attrs)
        scope[DECISION_SCOPE_KEY] = (decision, reason)
        ctx = audit.of(scope)
        if ctx is not None:
            ctx.annotations.setdefault(audit.DECISION_ANNOTATION, "allow" if decision is ALLOW else "forbid")
            ctx.annotations.setdefault(audit.REASON_ANNOTATION, reason)
        if decision is ALLOW:
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        await status_response(forbidden(attrs, reason))(scope, receive, send)
