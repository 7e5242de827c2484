"""Impersonation: ``Impersonate-User``, ``-Group``, ``-Uid`` and ``-Extra-<key>`` (``kubectl --as``, ``--as-group``).

kube-apiserver's ``WithImpersonation``, after authentication and audit. The
requester must be allowed the ``impersonate`` verb on what they ask to be:

- ``users`` (core group) named the user, or ``serviceaccounts`` in its
  namespace when the user is ``system:serviceaccount:<ns>:<name>``;
- ``groups`` (core group) named each group;
- ``uids`` and ``userextras/<key>`` (``authentication.k8s.io``) for the uid
  and each extra value.

The first refusal is a 403 with Kubernetes' message
(``users "jane" is forbidden: User "bob" cannot impersonate resource "users"
in API group "" at the cluster scope``); asking for groups, a uid or extras
without a user is a 500, as there. Otherwise the request goes on as the
impersonated user: in ``system:authenticated`` (``system:unauthenticated`` for
anonymous) unless one of those is asked for, with a
ServiceAccount's own groups when none are given. The requester stays in the
scope (:data:`REQUESTER_SCOPE_KEY`) for audit's ``impersonatedUser``, and the
``Impersonate-*`` headers are removed.

Concurrency: stateless; the authorizer it asks is synchronous.
"""

from __future__ import annotations

from typing import Final
from urllib.parse import unquote

from starlette.types import ASGIApp, Receive, Scope, Send

from apiserver import errors
from apiserver.admission import ANONYMOUS, UserInfo
from apiserver.audit import context as audit
from apiserver.authentication.authenticator import ANONYMOUS_USER, AUTHENTICATED, UNAUTHENTICATED
from apiserver.authentication.serviceaccount import service_account_groups, split_username
from apiserver.authorization.authorizer import ALLOW, Attributes, Authorizer
from apiserver.authorization.filter import forbidden
from apiserver.endpoints.request import USER_SCOPE_KEY
from apiserver.errors import status_response

#: Where the authenticated requester is kept when the request runs as someone else.
REQUESTER_SCOPE_KEY: Final = "kubesim.requester"

_USER: Final = b"impersonate-user"
_GROUP: Final = b"impersonate-group"
_UID: Final = b"impersonate-uid"
_EXTRA: Final = b"impersonate-extra-"


class WithImpersonation:
    def __init__(self, app: ASGIApp, authorizer: Authorizer) -> None:
        self.app = app
        self.authorizer = authorizer

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        for name, _value in scope.get("headers") or ():
            if name.startswith(b"impersonate-"):
                break
        else:
            # No Impersonate-* header: the common case costs one pass over the header names.
            await self.app(scope, receive, send)
            return
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        user_name: str | None = None
        groups: list[str] = []
        uid: str | None = None
        extra: dict[str, list[str]] = {}
        kept = []
        for name, value in scope["headers"]:
            text = value.decode("latin-1")
            if name == _USER:
                user_name = text
            elif name == _GROUP:
                groups.append(text)
            elif name == _UID:
                uid = text
            elif name.startswith(_EXTRA):
                extra.setdefault(unquote(name[len(_EXTRA):].decode("latin-1")).lower(), []).append(text)
            else:
                kept.append((name, value))
        requester: UserInfo = scope.get(USER_SCOPE_KEY) or ANONYMOUS
        if user_name is None:
            asked = [f"{{Group  {g}}}" for g in groups] + ([f"{{UID  {uid}}}"] if uid else []) + \
                [f"{{UserExtra  {k}={v}}}" for k, vs in extra.items() for v in vs]
            await _answer(scope, receive, send, errors.internal_error(
                f"requested [{' '.join(asked)}] without impersonating a user"))
            return
        checks: list[Attributes] = []
        sa = split_username(user_name)
        if sa is not None:
            checks.append(Attributes(requester, "impersonate", namespace=sa[0], resource="serviceaccounts",
                                     name=sa[1]))
        else:
            checks.append(Attributes(requester, "impersonate", resource="users", name=user_name))
        checks += [Attributes(requester, "impersonate", resource="groups", name=g) for g in groups]
        if uid is not None:
            checks.append(Attributes(requester, "impersonate", api_group="authentication.k8s.io",
                                     resource="uids", name=uid))
        checks += [Attributes(requester, "impersonate", api_group="authentication.k8s.io", resource="userextras",
                              subresource=key, name=value) for key, values in extra.items() for value in values]
        for attrs in checks:
            decision, reason = self.authorizer.authorize(attrs)
            if decision is not ALLOW:
                await _answer(scope, receive, send, forbidden(attrs, reason))
                return
        if not groups and sa is not None:
            groups = list(service_account_groups(sa[0]))
        if AUTHENTICATED not in groups and UNAUTHENTICATED not in groups:
            groups.append(UNAUTHENTICATED if user_name == ANONYMOUS_USER else AUTHENTICATED)
        impersonated = UserInfo(user_name, tuple(groups), uid or "",
                                tuple(sorted((k, tuple(v)) for k, v in extra.items())))
        audit.log_impersonated(scope, impersonated)
        scope = dict(scope)
        scope["headers"] = kept
        scope[REQUESTER_SCOPE_KEY] = requester
        scope[USER_SCOPE_KEY] = impersonated
        await self.app(scope, receive, send)


async def _answer(scope: Scope, receive: Receive, send: Send, err: errors.APIError) -> None:
    if scope["type"] == "websocket":
        await send({"type": "websocket.close", "code": 1008})
        return
    await status_response(err)(scope, receive, send)
