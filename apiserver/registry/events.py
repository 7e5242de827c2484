"""core/v1 Events: they expire (an etcd lease, ``--event-ttl``) and may be created by an update."""

from __future__ import annotations

from typing import ClassVar

from apiserver.registry.strategy import Obj, Strategy
from apiserver.validation import core as validation
from apiserver.validation.field import FieldError
from machinery.api import kinds


class EventStrategy(Strategy):
    ri = kinds.EVENTS
    allow_create_on_update = True
    selectable_fields: ClassVar[tuple[str, ...]] = (
        "involvedObject.kind", "involvedObject.namespace", "involvedObject.name", "involvedObject.uid",
        "involvedObject.apiVersion", "involvedObject.resourceVersion", "involvedObject.fieldPath",
        "reason", "reportingComponent", "source", "type",
    )

    def fields(self, obj: Obj) -> dict[str, str]:
        out = super().fields(obj)
        out["source"] = ((obj.get("source") or {}).get("component")) or ""
        return out

    def validate(self, obj: Obj) -> list[FieldError]:
        return validation.validate_event(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_event_update(new, old)
