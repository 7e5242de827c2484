"""core/v1 Events: they expire (an etcd lease, ``--event-ttl``) and may be created by an update."""

from __future__ import annotations

from datetime import datetime
from typing import ClassVar, Final

from apiserver.printers import Column, Printer, Row, since
from apiserver.registry.resource import Resource
from apiserver.registry.strategy import Obj, Strategy
from apiserver.validation import core as validation
from apiserver.validation.field import FieldError
from machinery.api import kinds


class EventStrategy(Strategy):
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


_CORE = "io.k8s.api.core.v1."
COLUMNS: Final = (
    Column("Last Seen", "string", (_CORE + "Event", "lastTimestamp")),
    Column("Type", "string", (_CORE + "Event", "type")),
    Column("Reason", "string", (_CORE + "Event", "reason")),
    Column("Object", "string", (_CORE + "Event", "involvedObject")),
    Column("Subobject", "string", (_CORE + "ObjectReference", "fieldPath"), 1),
    Column("Source", "string", (_CORE + "Event", "source"), 1),
    Column("Message", "string", (_CORE + "Event", "message")),
    Column("First Seen", "string", (_CORE + "Event", "firstTimestamp"), 1),
    Column("Count", "string", (_CORE + "Event", "count"), 1),
    Column("Name", "string", ("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "name"), 1, "name"),
)


def _row(event: Obj, now: datetime) -> Row:
    metadata: Obj = event.get("metadata") or {}
    involved: Obj = event.get("involvedObject") or {}
    source: Obj = event.get("source") or {}
    series: Obj | None = event.get("series")

    if event.get("firstTimestamp"):
        first_seen = since(event["firstTimestamp"], now)
    else:
        first_seen = since(event.get("eventTime"), now)
    last_seen = since(event["lastTimestamp"], now) if event.get("lastTimestamp") else first_seen
    count = event.get("count") or 0
    if series is not None:
        last_seen = since(series.get("lastObservedTime"), now)
        count = series.get("count", 0)
    elif count == 0:
        # Events written through events.k8s.io carry no count: each is seen once.
        count = 1

    kind = str(involved.get("kind", "")).lower()
    target = f"{kind}/{involved['name']}" if involved.get("name") else kind
    component = source.get("component") or event.get("reportingComponent") or ""
    instance = source.get("host") or event.get("reportingInstance") or ""
    return Row([
        last_seen, event.get("type", ""), event.get("reason", ""), target, involved.get("fieldPath", ""),
        f"{component}, {instance}" if instance else component, str(event.get("message", "")).strip(),
        first_seen, count, metadata.get("name", ""),
    ])


PRINTER: Final = Printer(COLUMNS, _row)

RESOURCE: Final = Resource(info=kinds.EVENTS, strategy=EventStrategy(), printer=PRINTER,
                           ttl=lambda settings: settings.event_ttl)
