"""events.k8s.io/v1 Events: the same objects as core/v1 Events, in the newer shape.

kube-apiserver stores one Event resource and serves it in both groups. kubesim
keeps the objects in the core Events' keys and converts field by field, as
Kubernetes' conversion does: ``regarding`` is ``involvedObject``, ``note`` is
``message``, ``reportingController`` is ``reportingComponent``, and the
``deprecated*`` fields are the core ones they name.

Writes through events.k8s.io/v1 are validated more strictly than core/v1
ones, as Kubernetes validates by the request's version
(``validation/events.py``): the strategy here is the core one with those rules.
"""

from __future__ import annotations

from typing import Any, Final

from apiserver.registry.core import events as core_events
from apiserver.registry.resource import Resource
from apiserver.validation import events as validation
from apiserver.validation.field import FieldError
from machinery.api import kinds

Obj = dict[str, Any]

#: (events.k8s.io/v1 field, core/v1 field) that hold the same value.
_RENAMED: Final = (
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("reportingController", "reportingComponent"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
)
#: Fields both versions name alike.
_SHARED: Final = ("metadata", "eventTime", "series", "related", "action", "reason", "type", "reportingInstance")


class EventsV1Converter:
    def to_storage(self, obj: Obj) -> Obj:
        out: Obj = {"apiVersion": "v1", "kind": "Event"}
        for key in _SHARED:
            if key in obj:
                out[key] = obj[key]
        for new, old in _RENAMED:
            if key_present(obj, new):
                out[old] = obj[new]
        return out

    def from_storage(self, obj: Obj) -> Obj:
        # Go writes the zero MicroTime of an event that has none as null, and clients expect the key.
        out: Obj = {"apiVersion": "events.k8s.io/v1", "kind": "Event", "eventTime": None}
        for key in _SHARED:
            if key in obj:
                out[key] = obj[key]
        for new, old in _RENAMED:
            if key_present(obj, old):
                out[new] = obj[old]
        return out


def key_present(obj: Obj, key: str) -> bool:
    return obj.get(key) is not None


class EventsV1Strategy(core_events.EventStrategy):
    """The core Event rules, with what Kubernetes adds for events.k8s.io/v1 writes."""

    def validate(self, obj: Obj) -> list[FieldError]:
        return validation.validate_event_v1(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_event_v1_update(new, old)


RESOURCE: Final = Resource(
    info=kinds.builtin("events.k8s.io", "v1", "events"),
    # Bound to the core Events' facts: the objects are theirs.
    strategy=EventsV1Strategy(kinds.EVENTS),
    printer=core_events.PRINTER,
    storage_of=kinds.EVENTS,
    converter=EventsV1Converter(),
)
