"""Who may use the kubelet API: the kubelet's authentication and authorization of its HTTPS port.

A kubelet runs Pods' commands for whoever reaches its port (exec, attach,
port-forward, logs), so it authenticates and authorizes every request before
serving it, as ``pkg/kubelet/server`` does (``InstallAuthFilter``):

- **authentication** (kubelet flags ``--client-ca-file``,
  ``--authentication-token-webhook``, ``--anonymous-auth``): a client
  certificate signed by the client CA names the user (CN) and groups (O), as
  the APIServer's own ``--kubelet-client-certificate`` does; else a bearer
  token is sent to the APIServer as a TokenReview (answers cached for
  ``--authentication-token-webhook-cache-ttl``); else the request is
  ``system:anonymous`` when anonymous requests are allowed. Otherwise
  ``401 Unauthorized``;
- **authorization** (``--authorization-mode``): ``AlwaysAllow``, or
  ``Webhook``: a SubjectAccessReview asks the APIServer whether the user may
  ``<verb>`` the ``nodes/<subresource>`` of this node, the verb from the HTTP
  method (POST create, GET get, PUT update, PATCH patch, DELETE delete) and the
  subresource from the path (``/stats/*`` stats, ``/metrics/*`` metrics,
  ``/logs/*`` log, ``/checkpoint/*`` checkpoint, everything else, exec and logs
  of containers included, proxy). Allowed and denied answers are cached for
  ``--authorization-webhook-cache-authorized-ttl`` and ``-unauthorized-ttl``.
  A refusal is ``403`` with the kubelet's text, ``Forbidden (user=jane,
  verb=create, resource=nodes, subresource=proxy)``.

kubelet_sim serves many nodes on one port: the node a request is about (the
Pod's node, or ``/nodes/{name}/...``) is the name authorized, and a
node-scoped path is authorized as the kubelet's own path
(``/nodes/n1/metrics/resource`` as ``/metrics/resource``).

Concurrency: on the event loop; the caches are plain dicts, read and written
between awaits.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

import httpx

from machinery.api import kinds
from machinery.client import ApiError, UnexpectedResponse
from machinery.tlsserving import peer_subject

log = logging.getLogger("kubelet_sim.auth")

ANONYMOUS: Final = "system:anonymous"
UNAUTHENTICATED: Final = "system:unauthenticated"
AUTHENTICATED: Final = "system:authenticated"
TOKEN_REVIEWS: Final = kinds.builtin("authentication.k8s.io", "v1", "tokenreviews")
SUBJECT_ACCESS_REVIEWS: Final = kinds.builtin("authorization.k8s.io", "v1", "subjectaccessreviews")
#: The kubelet's verbs by HTTP method (any other method has none, and is refused by RBAC).
VERBS: Final = {"POST": "create", "GET": "get", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
#: Path prefixes with their own subresource of ``nodes``; every other path is ``nodes/proxy``.
SUBRESOURCES: Final = (("/stats", "stats"), ("/metrics", "metrics"), ("/logs", "log"), ("/checkpoint", "checkpoint"))
#: Entries a cache holds at most; beyond it, the oldest half goes.
CACHE_SIZE: Final = 10_000


class Reviewer(Protocol):
    """What asks the APIServer: :meth:`machinery.client.Client.review`."""

    async def review(self, resource: Any, spec: Mapping[str, Any]) -> dict[str, Any]: ...


@dataclass(frozen=True, slots=True)
class UserInfo:
    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Attributes:
    """What a request asks of the node: ``verb`` on ``nodes/<subresource>`` named ``name``."""

    verb: str
    subresource: str
    name: str


class Refused(Exception):
    """The request may not be served: the kubelet's code and plain-text answer."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def attributes(method: str, path: str, node: str) -> Attributes:
    """The kubelet's ``GetRequestAttributes``: verb from the method, subresource from the path."""
    subresource = next((sub for prefix, sub in SUBRESOURCES if path == prefix or path.startswith(prefix + "/")),
                       "proxy")
    return Attributes(VERBS.get(method, ""), subresource, node)


def user_from_certificate(peercert: Mapping[str, Any] | None) -> UserInfo | None:
    """The user a verified client certificate names: CN the user, each O a group (as Kubernetes reads them)."""
    subject = peer_subject(peercert)
    return UserInfo(subject[0], groups=(*subject[1], AUTHENTICATED)) if subject is not None else None


class _TTLCache:
    """Answers kept for a while: ``ttl(answer)`` seconds each (0: not kept)."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._entries: dict[Any, tuple[float, Any]] = {}

    def get(self, key: Any) -> Any | None:
        entry = self._entries.get(key)
        if entry is None:
            return None
        if entry[0] <= self._clock():
            del self._entries[key]
            return None
        return entry[1]

    def put(self, key: Any, value: Any, ttl: float) -> None:
        if ttl <= 0:
            return
        if len(self._entries) >= CACHE_SIZE:
            for old in list(self._entries)[:CACHE_SIZE // 2]:
                del self._entries[old]
        self._entries[key] = (self._clock() + ttl, value)


class KubeletAuth:
    """Authenticates and authorizes kubelet API requests (see the module docstring).

    ``reviewer`` is needed with ``token_webhook`` or ``mode="Webhook"``.
    """

    def __init__(self, *, anonymous: bool = True, token_webhook: bool = False, mode: str = "AlwaysAllow",
                 reviewer: Reviewer | None = None, token_ttl: float = 120.0, authorized_ttl: float = 300.0,
                 unauthorized_ttl: float = 30.0, clock: Callable[[], float] = time.monotonic) -> None:
        if mode not in ("AlwaysAllow", "Webhook"):
            raise ValueError(f"unknown authorization mode {mode!r}: AlwaysAllow or Webhook")
        if (token_webhook or mode == "Webhook") and reviewer is None:
            raise ValueError("the token webhook and the Webhook authorization mode need the APIServer")
        self.anonymous = anonymous
        self.token_webhook = token_webhook
        self.mode = mode
        self._reviewer = reviewer
        self._token_ttl = token_ttl
        self._authorized_ttl = authorized_ttl
        self._unauthorized_ttl = unauthorized_ttl
        self._tokens = _TTLCache(clock)
        self._decisions = _TTLCache(clock)

    async def check(self, method: str, path: str, node: str, authorization: str | None,
                    peercert: Mapping[str, Any] | None) -> UserInfo:
        """The request's user, once authorized; :class:`Refused` (401, 403 or 500) otherwise."""
        user = await self.authenticate(authorization, peercert)
        if user is None:
            raise Refused(401, "Unauthorized")
        attrs = attributes(method, path, node)
        if not await self.authorize(user, attrs):
            raise Refused(403, f"Forbidden (user={user.name}, verb={attrs.verb}, resource=nodes, "
                               f"subresource={attrs.subresource})")
        return user

    async def authenticate(self, authorization: str | None, peercert: Mapping[str, Any] | None) -> UserInfo | None:
        """The client certificate's user, else the bearer token's, else anonymous (when allowed), else None."""
        user = user_from_certificate(peercert)
        if user is not None:
            return user
        scheme, _, token = (authorization or "").partition(" ")
        token = token.strip()
        if scheme.lower() == "bearer" and token and self.token_webhook:
            return await self._review_token(token)
        if self.anonymous:
            return UserInfo(ANONYMOUS, groups=(UNAUTHENTICATED,))
        return None

    async def _review_token(self, token: str) -> UserInfo | None:
        cached = self._tokens.get(token)
        if cached is not None:
            return cached if isinstance(cached, UserInfo) else None
        assert self._reviewer is not None
        try:
            answer = await self._reviewer.review(TOKEN_REVIEWS, {"token": token})
        except (ApiError, UnexpectedResponse, httpx.HTTPError, OSError) as err:
            # The kubelet's answer to a webhook it cannot reach: unauthenticated, not cached.
            log.warning("token review failed: %s", err)
            return None
        status = answer.get("status") or {}
        user: UserInfo | bool = False
        if status.get("authenticated"):
            info = status.get("user") or {}
            extra = {k: tuple(v) for k, v in (info.get("extra") or {}).items()}
            user = UserInfo(str(info.get("username") or ""), str(info.get("uid") or ""),
                            tuple(info.get("groups") or ()), extra)
        self._tokens.put(token, user, self._token_ttl)
        return user if isinstance(user, UserInfo) else None

    async def authorize(self, user: UserInfo, attrs: Attributes) -> bool:
        if self.mode == "AlwaysAllow":
            return True
        key = (user.name, user.uid, user.groups, tuple(sorted(user.extra.items())), attrs)
        cached = self._decisions.get(key)
        if cached is not None:
            return bool(cached)
        spec: dict[str, Any] = {"user": user.name, "groups": list(user.groups),
                                "resourceAttributes": {"verb": attrs.verb, "group": "", "version": "v1",
                                                       "resource": "nodes", "subresource": attrs.subresource,
                                                       "name": attrs.name}}
        if user.uid:
            spec["uid"] = user.uid
        if user.extra:
            spec["extra"] = {k: list(v) for k, v in user.extra.items()}
        assert self._reviewer is not None
        try:
            answer = await self._reviewer.review(SUBJECT_ACCESS_REVIEWS, spec)
        except (ApiError, UnexpectedResponse, httpx.HTTPError, OSError) as err:
            log.warning("subject access review failed: %s", err)
            raise Refused(500, f"Authorization error (user={user.name}, verb={attrs.verb}, resource=nodes, "
                               f"subresource={attrs.subresource})") from None
        allowed = bool((answer.get("status") or {}).get("allowed"))
        self._decisions.put(key, allowed, self._authorized_ttl if allowed else self._unauthorized_ttl)
        return allowed
