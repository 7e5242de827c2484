"""The stricter rules of Events written through events.k8s.io/v1 (``ValidateEventCreate``/``Update``).

Kubernetes keeps one Event type and validates it by the API version of the
request: core/v1 writes get only the legacy rules (``validation/core.py``),
events.k8s.io/v1 writes must also carry an ``eventTime``, a Normal or Warning
type, no deprecated core fields (``firstTimestamp``, ``lastTimestamp``,
``count``, ``source``), a DNS-subdomain name and a valid series; an update may
not change what the event reports. The checks run on the stored (core/v1)
form, so the paths are the core field names Kubernetes' internal type has
(``message``, not ``note``), as Kubernetes reports them.

Pure functions over plain dicts; no state.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from apiserver.validation import core
from apiserver.validation.field import FieldError, Path
from apiserver.validation.meta import validate_object_meta, validate_object_meta_update
from apiserver.validation.values import obj

Obj = Mapping[str, Any]

#: Fields an events.k8s.io/v1 update may not change, by their core/v1 names (Kubernetes' internal ones).
_IMMUTABLE: Final = (("involvedObject", "involvedObject"), ("reason", "reason"), ("message", "message"),
                     ("source", "source"), ("firstTimestamp", "firstTimestamp"), ("lastTimestamp", "lastTimestamp"),
                     ("count", "count"), ("type", "type"), ("eventTime", "eventTime"), ("action", "action"),
                     ("related", "related"), ("reportingComponent", "reportingController"),
                     ("reportingInstance", "reportingInstance"))


def _validate_series(event: Obj) -> list[FieldError]:
    series = event.get("series")
    if series is None:
        return []
    errs: list[FieldError] = []
    if int(obj(series).get("count") or 0) < 2:
        errs.append(FieldError.invalid(Path("series.count"), "", "should be at least 2"))
    if not obj(series).get("lastObservedTime"):
        errs.append(FieldError.required(Path("series.lastObservedTime")))
    return errs


def _source_set(event: Obj) -> bool:
    source = obj(event.get("source"))
    return bool(source.get("component") or source.get("host"))


def validate_event_v1(event: Obj) -> list[FieldError]:
    """An Event created through events.k8s.io/v1."""
    errs = core.validate_event(event)
    errs += validate_object_meta(obj(event.get("metadata")), namespaced=True)
    errs += _validate_series(event)
    if not event.get("eventTime"):
        errs.append(FieldError.required(Path("eventTime")))
    if event.get("type") not in ("Normal", "Warning"):
        errs.append(FieldError.invalid(Path("type"), "", f"has invalid value: {event.get('type') or ''}"))
    for key in ("firstTimestamp", "lastTimestamp"):
        if event.get(key):
            errs.append(FieldError.invalid(Path(key), "", "needs to be unset"))
    if event.get("count"):
        errs.append(FieldError.invalid(Path("count"), "", "needs to be unset"))
    if _source_set(event):
        errs.append(FieldError.invalid(Path("source"), "", "needs to be unset"))
    return errs


def validate_event_v1_update(new: Obj, old: Obj) -> list[FieldError]:
    """An Event updated through events.k8s.io/v1: what it reports never changes."""
    errs = core.validate_event_update(new, old)
    errs += validate_object_meta_update(obj(new.get("metadata")), obj(old.get("metadata")))
    if new.get("series") != old.get("series"):
        errs += _validate_series(new)
    for key, shown in _IMMUTABLE:
        if new.get(key) != old.get(key):
            errs.append(FieldError.invalid(Path(shown), new.get(key), "field is immutable"))
    return errs
