"""Which requests are long-running: kube-apiserver's ``LongRunningRequestCheck``.

Watches (``/watch/`` paths or ``?watch=true``), followed logs and the
streaming subresources (exec, attach, portforward, proxy) hold their
connection for as long as they stream. The request timeout and the in-flight
limits leave them alone: they are bounded by their own rules (a watch by
``--min-request-timeout``).

Functions over ASGI scopes; the answer is kept in the scope, as several filters ask.
"""

from __future__ import annotations

from typing import Final
from urllib.parse import parse_qs

from starlette.types import Scope

_STREAMING_SUBRESOURCES: Final = frozenset({"exec", "attach", "portforward", "proxy"})
#: Paths that answer probes; never refused for load, as a supervisor must see them.
HEALTH_PATHS: Final = frozenset({"/healthz", "/livez", "/readyz"})


def _truthy(value: str) -> bool:
    # The parameter codec's rule: any value but "false" and "0" is true.
    return value.lower() not in ("false", "0")


_SCOPE_KEY: Final = "kubesim.long_running"


def is_long_running(scope: Scope) -> bool:
    """Whether the request is a watch, a streaming subresource or a followed log (decided once per request:
    the timeout and max-in-flight filters both ask)."""
    known: bool | None = scope.get(_SCOPE_KEY)
    if known is None:
        known = scope[_SCOPE_KEY] = _long_running(scope)
    return known


def _long_running(scope: Scope) -> bool:
    path: str = scope.get("path", "")
    if not path.startswith(("/api/", "/apis/")):
        return False
    parts = [p for p in path.split("/") if p]
    # The verb segment follows the version: /api/v1/watch/..., /apis/<group>/<version>/watch/...
    verb_at = 2 if parts[0] == "api" else 3
    if len(parts) > verb_at and parts[verb_at] == "watch":
        return True
    raw: bytes = scope.get("query_string", b"")
    query = parse_qs(raw.decode("latin-1"), keep_blank_values=True) if raw else {}
    if any(_truthy(v) for v in query.get("watch", ())):
        return True
    if parts and parts[-1] in _STREAMING_SUBRESOURCES:
        return True
    if len(parts) >= 2 and parts[-2] in _STREAMING_SUBRESOURCES:
        return True
    return bool(parts and parts[-1] == "log" and any(_truthy(v) for v in query.get("follow", ())))


def is_mutating(scope: Scope) -> bool:
    return scope.get("method", "GET") in ("POST", "PUT", "PATCH", "DELETE")
