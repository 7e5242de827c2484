"""Audit: who did what, when and with what outcome, as ``audit.k8s.io/v1`` Event JSON lines.

- :mod:`.policy`: ``--audit-policy-file`` (Kubernetes' Policy) and a request's level;
- :mod:`.log`: ``--audit-log-path`` with rotation;
- :mod:`.filter`: the ASGI filter that writes the events;
- :mod:`.context`: what later filters add to a request's event.

Audit is on when both a policy and a log path are given, as in kube-apiserver.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from apiserver.audit.filter import Auditor
from apiserver.audit.log import LogBackend
from apiserver.audit.policy import load_policy

if TYPE_CHECKING:
    from apiserver.settings import SecuritySettings

__all__ = ["Auditor", "build"]


def build(settings: SecuritySettings) -> Auditor | None:
    if not settings.audit_policy_file or not settings.audit_log_path:
        return None
    policy = load_policy(settings.audit_policy_file)
    backend = LogBackend(settings.audit_log_path, max_size_mb=settings.audit_log_maxsize,
                         max_backups=settings.audit_log_maxbackup, max_age_days=settings.audit_log_maxage)
    return Auditor(policy, backend)
