"""What filters after audit tell it about a request: the impersonated user, annotations.

kube-apiserver keeps the request's audit event in the request context, and
later filters add to it (impersonation records ``impersonatedUser``,
authorization its decision). kubesim's filters are ASGI middlewares that may
hand on a copy of the scope, so the audit filter puts one mutable
:class:`AuditContext` in the scope and later filters write into that object.

One object per request, touched only by that request's task.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from dataclasses import dataclass, field
from typing import Any, Final

from apiserver.admission import UserInfo

AUDIT_SCOPE_KEY: Final = "kubesim.audit"
DECISION_ANNOTATION: Final = "authorization.k8s.io/decision"
REASON_ANNOTATION: Final = "authorization.k8s.io/reason"


@dataclass(slots=True)
class AuditContext:
    impersonated: UserInfo | None = None
    annotations: dict[str, str] = field(default_factory=dict)


def of(scope: MutableMapping[str, Any]) -> AuditContext | None:
    ctx = scope.get(AUDIT_SCOPE_KEY)
    return ctx if isinstance(ctx, AuditContext) else None


def annotate(scope: MutableMapping[str, Any], key: str, value: str) -> None:
    ctx = of(scope)
    if ctx is not None and key not in ctx.annotations:
        ctx.annotations[key] = value


def log_impersonated(scope: MutableMapping[str, Any], user: UserInfo) -> None:
    ctx = of(scope)
    if ctx is not None:
        ctx.impersonated = user
