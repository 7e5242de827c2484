"""The audit filter: ``audit.k8s.io/v1`` Events for each request, at the level the policy gives it.

kube-apiserver's ``WithAudit``, after authentication (so the user is known)
and before impersonation and authorization (which add to the event through
:mod:`.context`). For a request the policy logs, the backend receives one
Event per stage not omitted:

- ``RequestReceived`` as soon as the request arrives;
- ``ResponseStarted`` when a long-running request (watch, exec, attach,
  port-forward, proxy, log) starts answering;
- ``ResponseComplete`` when the answer is sent, with ``responseStatus``
  (the Status' message and reason for a failure);
- ``Panic`` when the handler raised.

``Metadata`` records who, what, where and the outcome; ``Request`` adds the
request body (``requestObject``); ``RequestResponse`` the response body too
(``responseObject``, not for long-running requests). The response carries
the ``Audit-Id`` header, taken from the request's when it sent one.
:func:`failed_authentication` records requests refused with 401, as
kube-apiserver's ``WithFailedAuthenticationAudit`` does.

Concurrency: one request's state lives in its own call; the backend's writes
do not await.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any, Final, Protocol

import orjson
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from apiserver.admission import UserInfo
from apiserver.audit import context
from apiserver.audit.context import AuditContext
from apiserver.audit.policy import Decision, Level, Policy
from apiserver.endpoints.request import USER_SCOPE_KEY
from apiserver.endpoints.requestinfo import RequestInfo, from_scope

_LONG_RUNNING_VERBS: Final = frozenset({"watch", "proxy"})
_LONG_RUNNING_SUBRESOURCES: Final = frozenset({"attach", "exec", "proxy", "log", "portforward"})
#: Bodies larger than this are not logged (kube-apiserver's limit on logged objects is the request limit).
_MAX_LOGGED_BODY: Final = 3 * 1024 * 1024


class Backend(Protocol):
    def write(self, line: bytes) -> None: ...


def is_long_running(info: RequestInfo) -> bool:
    return info.verb in _LONG_RUNNING_VERBS or info.subresource in _LONG_RUNNING_SUBRESOURCES


#: (second, its text) of the last timestamp made: the date and time change once a second.
_second: tuple[int, str] = (-1, "")


def _now() -> str:
    """The time as audit stamps it, RFC 3339 in UTC with microseconds (``2026-12-06T22:55:01.123456Z``).

    Made twice per request, so the text of the second is kept (strftime cost ~2 µs, this ~0.4)."""
    global _second
    t = time.time()
    whole = int(t)
    micros = round((t - whole) * 1_000_000)  # rounded as datetime rounds a timestamp
    if micros == 1_000_000:
        whole, micros = whole + 1, 0
    if whole != _second[0]:
        _second = (whole, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)))
    return f"{_second[1]}.{micros:06d}Z"


def _audit_id() -> str:
    """A random (version 4) UUID's text, as ``str(uuid.uuid4())`` makes it, without building a UUID object."""
    b = bytearray(os.urandom(16))
    b[6] = (b[6] & 0x0F) | 0x40
    b[8] = (b[8] & 0x3F) | 0x80
    h = b.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def user_dict(user: UserInfo | None) -> dict[str, Any]:
    if user is None:
        return {}
    out: dict[str, Any] = {"username": user.name}
    if user.uid:
        out["uid"] = user.uid
    if user.groups:
        out["groups"] = list(user.groups)
    if user.extra:
        out["extra"] = {k: list(v) for k, v in user.extra}
    return out


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers") or ():
        if key == name:
            return str(value.decode("latin-1"))
    return None


def _source_ips(scope: Scope) -> list[str]:
    ips: list[str] = []
    forwarded = _header(scope, b"x-forwarded-for")
    if forwarded:
        ips += [ip.strip() for ip in forwarded.split(",") if ip.strip()]
    real = _header(scope, b"x-real-ip")
    if real:
        ips.append(real.strip())
    client = scope.get("client")
    if client and client[0] not in ips:
        ips.append(str(client[0]))
    return ips


def _object_ref(info: RequestInfo) -> dict[str, str] | None:
    if not info.is_resource_request:
        return None
    ref = {"resource": info.resource, "namespace": info.namespace, "name": info.name,
           "apiGroup": info.api_group, "apiVersion": info.api_version, "subresource": info.subresource}
    return {k: v for k, v in ref.items() if v}


def _strip_managed_fields(obj: Any) -> Any:
    if isinstance(obj, dict):
        meta = obj.get("metadata")
        if isinstance(meta, dict) and "managedFields" in meta:
            obj["metadata"] = {k: v for k, v in meta.items() if k != "managedFields"}
        items = obj.get("items")
        if isinstance(items, list):
            obj["items"] = [_strip_managed_fields(i) for i in items]
    return obj


def _json(body: bytes) -> Any:
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        return None


class Auditor:
    """The policy and the backend, shared by the audit filters of one APIServer."""

    def __init__(self, policy: Policy, backend: Backend, *, clock: Callable[[], str] = _now) -> None:
        self.policy = policy
        self.backend = backend
        self.clock = clock

    def emit(self, event: dict[str, Any]) -> None:
        self.backend.write(orjson.dumps(event) + b"\n")


class _Request:
    """One audited request: its event, filled in as the request goes."""

    def __init__(self, auditor: Auditor, scope: Scope, info: RequestInfo, decision: Decision,
                 user: UserInfo | None) -> None:
        self.auditor = auditor
        self.decision = decision
        self.ctx = AuditContext()
        query = scope.get("query_string") or b""
        uri = scope.get("path", "") + ("?" + query.decode("latin-1") if query else "")
        self.event: dict[str, Any] = {
            "kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": decision.level.text,
            "auditID": _header(scope, b"audit-id") or _audit_id(), "stage": "RequestReceived",
            "requestURI": uri, "verb": info.verb, "user": user_dict(user), "sourceIPs": _source_ips(scope),
        }
        agent = _header(scope, b"user-agent")
        if agent:
            self.event["userAgent"] = agent
        ref = _object_ref(info)
        if ref is not None:
            self.event["objectRef"] = ref
        self.event["requestReceivedTimestamp"] = auditor.clock()
        self.long_running = is_long_running(info)
        self.code = 0
        self.request_body: list[bytes] = []
        self.request_size = 0
        self.response_body: list[bytes] = []
        self.response_size = 0
        # A create's objectRef takes the new object's name from the body, as kube-apiserver fills it in.
        self.want_request = decision.level >= Level.REQUEST or (info.verb == "create" and ref is not None
                                                                 and "name" not in ref)

    def stage(self, stage: str, **extra: Any) -> None:
        if stage in self.decision.omit_stages:
            return
        event = dict(self.event)
        event["stage"] = stage
        event["stageTimestamp"] = self.auditor.clock()
        if self.ctx.impersonated is not None:
            event["impersonatedUser"] = user_dict(self.ctx.impersonated)
        if self.ctx.annotations:
            event["annotations"] = dict(self.ctx.annotations)
        event.update(extra)
        self.auditor.emit(event)

    def response_status(self) -> dict[str, Any]:
        status: dict[str, Any] = {"metadata": {}, "code": self.code}
        if self.code >= 300 and self.response_body:
            body = _json(b"".join(self.response_body))
            if isinstance(body, dict) and body.get("kind") == "Status":
                for key in ("status", "message", "reason", "details"):
                    if body.get(key):
                        status[key] = body[key]
        return status

    def complete(self) -> None:
        extra: dict[str, Any] = {"responseStatus": self.response_status()}
        if self.request_body:
            obj = _json(b"".join(self.request_body))
            if isinstance(obj, dict):
                ref = self.event.get("objectRef")
                name = (obj.get("metadata") or {}).get("name") if isinstance(obj.get("metadata"), dict) else None
                if ref is not None and "name" not in ref and isinstance(name, str) and name and 200 <= self.code < 300:
                    self.event["objectRef"] = {**ref, "name": name}
                if self.decision.level >= Level.REQUEST:
                    extra["requestObject"] = _strip_managed_fields(obj) if self.decision.omit_managed_fields else obj
        if self.decision.level >= Level.REQUEST_RESPONSE and not self.long_running and self.response_body:
            obj = _json(b"".join(self.response_body))
            if obj is not None:
                extra["responseObject"] = _strip_managed_fields(obj) if self.decision.omit_managed_fields else obj
        self.stage("ResponseComplete", **extra)


class WithAudit:
    def __init__(self, app: ASGIApp, auditor: Auditor) -> None:
        self.app = app
        self.auditor = auditor

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        info = from_scope(scope)
        user: UserInfo | None = scope.get(USER_SCOPE_KEY)
        decision = self.auditor.policy.evaluate(user, info)
        if decision.level is Level.NONE:
            await self.app(scope, receive, send)
            return
        req = _Request(self.auditor, scope, info, decision, user)
        scope[context.AUDIT_SCOPE_KEY] = req.ctx
        req.stage("RequestReceived")
        audit_id = str(req.event["auditID"]).encode()

        async def receive_logged() -> Message:
            message = await receive()
            if message.get("type") == "http.request" and req.request_size <= _MAX_LOGGED_BODY:
                chunk = message.get("body") or b""
                req.request_size += len(chunk)
                req.request_body.append(chunk) if req.request_size <= _MAX_LOGGED_BODY else req.request_body.clear()
            return message

        async def send_logged(message: Message) -> None:
            kind = message["type"]
            if kind in ("http.response.start", "websocket.http.response.start"):
                req.code = int(message.get("status") or 0)
                message = dict(message)
                message["headers"] = [*message.get("headers", ()), (b"audit-id", audit_id)]
                if req.long_running:
                    req.stage("ResponseStarted", responseStatus={"metadata": {}, "code": req.code})
            elif kind == "websocket.accept":
                req.code = 101
                req.stage("ResponseStarted", responseStatus={"metadata": {}, "code": 101})
            elif kind == "websocket.close" and not req.code:
                req.code = 403
            elif kind in ("http.response.body", "websocket.http.response.body") and \
                    (req.code >= 300 or decision.level >= Level.REQUEST_RESPONSE) and not req.long_running \
                    and req.response_size <= _MAX_LOGGED_BODY:
                chunk = message.get("body") or b""
                req.response_size += len(chunk)
                req.response_body.append(chunk)
            await send(message)

        try:
            await self.app(scope, receive_logged if req.want_request else receive, send_logged)
        except BaseException:
            req.code = req.code or 500
            req.stage("Panic", responseStatus={"metadata": {}, "code": 500, "status": "Failure",
                                               "message": "APIServer panic'd"})
            raise
        req.complete()


def failed_authentication(app: ASGIApp, auditor: Auditor) -> ASGIApp:
    """``WithFailedAuthenticationAudit``: a request refused with 401 is logged too, without a user."""

    async def audited(scope: Scope, receive: Receive, send: Send) -> None:
        info = from_scope(scope)
        decision = auditor.policy.evaluate(None, info)
        if decision.level is Level.NONE or scope["type"] not in ("http", "websocket"):
            await app(scope, receive, send)
            return
        req = _Request(auditor, scope, info, decision, None)
        methods = (["bearer"] if _header(scope, b"authorization") else []) or ["anonymous"]
        req.stage("ResponseStarted", responseStatus={"metadata": {}, "code": 401,
                                                     "message": f"Authentication failed, attempted: "
                                                                f"{', '.join(methods)}"})
        await app(scope, receive, send)

    return audited
