"""What a request asks for, read from its method and path alone: kube-apiserver's ``RequestInfo``.

The authorization, audit and impersonation filters run before the request
reaches a handler, so they cannot use the registry's view of the path
(:func:`apiserver.endpoints.request.resolve`). Kubernetes' answer is
``RequestInfoFactory``: a pure reading of the URL that names the verb
(``get``, ``list``, ``watch``, ``create``, ``update``, ``patch``, ``delete``,
``deletecollection``, or for paths outside ``/api`` and ``/apis`` the
lower-cased HTTP method), the API group and version, the namespace, the
resource, the subresource and the name. This module is that reading, rule for
rule:

- ``/api/v1/...`` is the core group; ``/apis/<group>/<version>/...`` any other;
  anything shorter (``/api``, ``/apis/apps/v1``) or elsewhere is a non-resource request;
- ``/watch/`` and ``/proxy/`` prefixes are verbs of their own;
- ``/namespaces/<ns>/<resource>...`` moves past the namespace, except for a
  Namespace's own ``status`` and ``finalize``; ``/namespaces/<ns>`` is the
  resource ``namespaces`` named ``<ns>`` in the namespace ``<ns>``;
- a GET without a name is ``list``, or ``watch`` with ``?watch=true``; either
  takes its name from a ``metadata.name=<n>`` field selector; a DELETE without
  a name is ``deletecollection``.

Pure functions over immutable data; any task may call them.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import unquote_plus

from machinery.api.fields import FieldSelector
from machinery.api.labels import SelectorError

#: The ASGI scope key under which the request-info filter leaves a :class:`RequestInfo`.
REQUEST_INFO_SCOPE_KEY: Final = "kubesim.request_info"

_API_PREFIXES: Final = frozenset({"api", "apis"})
_GROUPLESS_PREFIXES: Final = frozenset({"api"})
_SPECIAL_VERBS: Final = frozenset({"proxy", "watch"})
_SPECIAL_VERBS_NO_SUBRESOURCES: Final = frozenset({"proxy"})
_NAMESPACE_SUBRESOURCES: Final = frozenset({"status", "finalize"})
_METHOD_VERBS: Final = {"POST": "create", "GET": "get", "HEAD": "get", "PUT": "update", "PATCH": "patch",
                        "DELETE": "delete"}
#: What a path segment may not be (``path.IsValidPathSegmentName``).
_BAD_SEGMENTS: Final = frozenset({".", ".."})


@dataclass(frozen=True, slots=True)
class RequestInfo:
    """One request as the authorizer sees it."""

    is_resource_request: bool
    path: str
    verb: str
    api_prefix: str = ""
    api_group: str = ""
    api_version: str = ""
    namespace: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""
    parts: tuple[str, ...] = ()


def _truthy(value: str | None) -> bool:
    return value is not None and value.lower() in ("true", "1", "t")


def _name_from_field_selector(text: str | None) -> str:
    if not text:
        return ""
    try:
        name = FieldSelector.parse(text).requires_exact_match("metadata.name")
    except SelectorError:
        return ""
    if not name or name in _BAD_SEGMENTS or "/" in name or "%" in name:
        return ""
    return name


def request_info(method: str, path: str, query: dict[str, str] | None = None) -> RequestInfo:
    """``RequestInfoFactory.NewRequestInfo`` for a method, a path and its query parameters."""
    # Every request comes here: plain string operations, no regular expressions.
    if path.startswith("/api/"):
        prefix, rest = "api", [p for p in path[5:].split("/") if p]
        if len(rest) < 2:
            return RequestInfo(False, path, method.lower())
        group = ""
    elif path.startswith("/apis/"):
        prefix, rest = "apis", [p for p in path[6:].split("/") if p]
        if len(rest) < 3:
            return RequestInfo(False, path, method.lower())
        group, rest = rest[0], rest[1:]
    else:
        return RequestInfo(False, path, method.lower())
    version, rest = rest[0], rest[1:]
    first = rest[0]
    if first in _SPECIAL_VERBS:
        if len(rest) < 2:
            # "unable to determine kind and namespace from url": Kubernetes refuses the request; a
            # non-resource request named by its method is refused the same way by every authorizer.
            return RequestInfo(False, path, method.lower())
        verb, rest = first, rest[1:]
    else:
        verb = _METHOD_VERBS.get(method, "") or _METHOD_VERBS.get(method.upper(), "")
    namespace = ""
    if rest[0] == "namespaces" and len(rest) > 1:
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in _NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
    count = len(rest)
    resource = rest[0]
    name = rest[1] if count >= 2 else ""
    subresource = rest[2] if count >= 3 and verb not in _SPECIAL_VERBS_NO_SUBRESOURCES else ""
    if not name:
        if verb == "get":
            query = query or {}
            verb = "watch" if _truthy(query.get("watch")) else "list"
            name = _name_from_field_selector(query.get("fieldSelector"))
        if not name and verb == "delete":
            verb = "deletecollection"
    return RequestInfo(True, path, verb, prefix, group, version, namespace, resource, subresource, name,
                       tuple(rest))


def from_scope(scope: MutableMapping[str, Any]) -> RequestInfo:
    """The RequestInfo of an ASGI request, computed once and kept in its scope."""
    info: RequestInfo | None = scope.get(REQUEST_INFO_SCOPE_KEY)
    if info is None:
        query: dict[str, str] = {}
        raw = scope.get("query_string") or b""
        if raw:
            for part in raw.decode("latin-1").split("&"):
                key, _, value = part.partition("=")
                if key in ("watch", "fieldSelector") and key not in query:
                    query[key] = unquote_plus(value)
        method = scope.get("method", "GET") if scope.get("type") == "http" else "GET"
        info = request_info(method, scope.get("path", ""), query)
        scope[REQUEST_INFO_SCOPE_KEY] = info
    return info
