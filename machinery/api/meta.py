"""Object metadata helpers every component shares: timestamps, owner references, conditions.

Kubernetes has two wire formats for time: ``Time`` (RFC 3339, whole seconds,
``2024-05-01T10:00:00Z``) for most fields and ``MicroTime`` (six fractional
digits) for Lease renewals and ``Event.eventTime``. Writing the wrong one is
accepted by Go's parser but looks wrong in kubectl, so the two are kept apart
here.

Pure functions over plain dicts (the APIServer's representation) or the
official models (the clients'); no state.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping
from typing import Any

UTC = _dt.UTC


def utcnow() -> _dt.datetime:
    return _dt.datetime.now(UTC)


def format_time(t: _dt.datetime) -> str:
    """``Time``: RFC 3339 in UTC, whole seconds."""
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def format_micro_time(t: _dt.datetime) -> str:
    """``MicroTime``: RFC 3339 in UTC with microseconds."""
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def now_time() -> str:
    return format_time(utcnow())


def now_micro_time() -> str:
    return format_micro_time(utcnow())


def parse_time(value: str | _dt.datetime | None) -> _dt.datetime | None:
    """Parse ``Time`` or ``MicroTime`` (also accepts a datetime, returned in UTC)."""
    if value is None or value == "":
        return None
    if isinstance(value, _dt.datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    text = value.replace("Z", "+00:00") if value.endswith("Z") else value
    parsed = _dt.datetime.fromisoformat(text)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def controller_ref(meta: Mapping[str, Any]) -> dict[str, Any] | None:
    """The ownerReference with ``controller: true`` of a metadata dict, if any."""
    for ref in meta.get("ownerReferences") or ():
        if ref.get("controller"):
            return dict(ref)
    return None


def get_condition(conditions: list[dict[str, Any]] | None, ctype: str) -> dict[str, Any] | None:
    for cond in conditions or ():
        if cond.get("type") == ctype:
            return cond
    return None
