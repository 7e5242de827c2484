"""discovery.k8s.io/v1 EndpointSlices: defaults, validation, a generation bumped by any change, the printer.

As ``pkg/registry/discovery/endpointslice/strategy.go``: anything but the
metadata changing (or the labels) bumps ``metadata.generation``, which the
EndpointSlice controller and kube-proxy use to spot stale caches.
"""

from __future__ import annotations

from datetime import datetime
from typing import Final

from apiserver import printers
from apiserver.printers import Column, Printer, Row, since
from apiserver.registry.resource import Resource
from apiserver.registry.strategy import Obj, Strategy
from apiserver.validation import discovery as validation
from apiserver.validation.field import FieldError
from machinery.api import kinds


class EndpointSliceStrategy(Strategy):
    has_generation = True

    def default(self, obj: Obj) -> None:
        validation.default_endpoint_slice(obj)

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        self.default(new)
        super().prepare_for_update(new, old)

    def spec_changed(self, new: Obj, old: Obj) -> bool:
        new_meta, old_meta = new.get("metadata") or {}, old.get("metadata") or {}
        body_changed = ({k: v for k, v in new.items() if k != "metadata"}
                        != {k: v for k, v in old.items() if k != "metadata"})
        return body_changed or new_meta.get("labels") != old_meta.get("labels")

    def validate(self, obj: Obj) -> list[FieldError]:
        return validation.validate_endpoint_slice(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_endpoint_slice_update(new, old)


COLUMNS: Final = (
    printers.NAME,
    Column("AddressType", "string", ("io.k8s.api.discovery.v1.EndpointSlice", "addressType")),
    Column("Ports", "string", ("io.k8s.api.discovery.v1.EndpointSlice", "ports")),
    Column("Endpoints", "string", ("io.k8s.api.discovery.v1.EndpointSlice", "endpoints")),
    printers.AGE,
)


def _list_with_more(shown: list[str], count: int) -> str:
    """``listWithMoreString``: three values, then ``+ N more...``; ``<unset>`` for none."""
    text = ",".join(shown[:3])
    if count > 3:
        return f"{text} + {count - 3} more..."
    return text or "<unset>"


def _ports(slice_: Obj) -> str:
    shown = []
    ports = slice_.get("ports") or []
    for port in ports:
        if port.get("port") is not None:
            shown.append(str(port["port"]))
        elif port.get("name"):
            shown.append(str(port["name"]))
        else:
            shown.append("*")
    return _list_with_more(shown, len(ports))


def _endpoints(slice_: Obj) -> str:
    addresses = [str(a) for e in slice_.get("endpoints") or [] for a in e.get("addresses") or []]
    return _list_with_more(addresses, len(addresses))


def _row(slice_: Obj, now: datetime) -> Row:
    metadata: Obj = slice_.get("metadata") or {}
    return Row([metadata.get("name", ""), slice_.get("addressType", ""), _ports(slice_), _endpoints(slice_),
                since(metadata.get("creationTimestamp"), now)])


PRINTER: Final = Printer(COLUMNS, _row)

RESOURCE: Final = Resource(info=kinds.ENDPOINT_SLICES, strategy=EndpointSliceStrategy(), printer=PRINTER)
