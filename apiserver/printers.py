"""Server-side printing: the ``meta.k8s.io/v1`` Tables that ``kubectl get`` asks for.

kubectl does not know how to print a Pod; it sends
``Accept: application/json;as=Table;v=v1;g=meta.k8s.io`` and prints the
columns the server computed. Each resource's registration carries its
:class:`Printer` (its columns and a row function, as kube-apiserver's printers
in ``pkg/printers/internalversion`` have them); this module holds what they
share: the column type, the ages (``duration.HumanDuration``), the Table body,
and the default printer kube-apiserver uses for resources without one (Name,
Created At). The server always fills the wide (priority 1) columns; kubectl
hides them unless ``-o wide``.

Pure functions over plain dicts; no I/O, no shared mutable state (column
descriptions are computed once and then only read), so any task may call them
concurrently. A table never copies the objects it embeds.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final, NamedTuple

from apiserver import errors
from apiserver.negotiation import META_GROUP
from machinery.api import labels, meta, schema
from machinery.api import quantity as quantity_module

Obj = dict[str, Any]
Cell = str | int | float | bool | None

OBJECT_META: Final = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"


class Column(NamedTuple):
    """One column of a Table, with where Kubernetes takes its description from."""

    name: str
    type: str
    #: (definition, property) whose description Kubernetes shows, or literal text.
    doc: tuple[str, str] | str
    priority: int = 0
    format: str = ""


class Row(NamedTuple):
    cells: list[Cell]
    conditions: list[dict[str, str]] | None = None


RowFunc = Callable[[Obj, datetime], Row]


@dataclass(frozen=True, slots=True)
class Printer:
    """A kind's Table: its columns and how one object fills a row."""

    columns: tuple[Column, ...]
    row: RowFunc


#: The columns nearly every printer starts or ends with.
NAME: Final = Column("Name", "string", (OBJECT_META, "name"), format="name")
AGE: Final = Column("Age", "string", (OBJECT_META, "creationTimestamp"))
CONTAINERS: Final = Column("Containers", "string", "Names of each container in the template.", 1)
IMAGES: Final = Column("Images", "string", "Images referenced by each container in the template.", 1)
SELECTOR: Final = Column("Selector", "string", "The label selector of the resource.", 1)


# --- Ages ---------------------------------------------------------------------------------------


def human_duration(d: timedelta) -> str:
    """apimachinery's ``duration.HumanDuration``: about two significant units (``3m12s``, ``2d3h``)."""
    seconds = int(d.total_seconds())
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    if seconds < 120:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 10:
        s = seconds % 60
        return f"{minutes}m" if s == 0 else f"{minutes}m{s}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = seconds // 3600
    if hours < 8:
        m = minutes % 60
        return f"{hours}h" if m == 0 else f"{hours}h{m}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        h = hours % 24
        return f"{hours // 24}d" if h == 0 else f"{hours // 24}d{h}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        dy = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if dy == 0 else f"{hours // 24 // 365}y{dy}d"
    return f"{hours // 24 // 365}y"


def since(value: str | None, now: datetime) -> str:
    """``translateTimestampSince``: the age of a timestamp, ``<unknown>`` when unset."""
    when = meta.parse_time(value)
    return "<unknown>" if when is None else human_duration(now - when)


def age(obj: Obj, now: datetime) -> str:
    return since((obj.get("metadata") or {}).get("creationTimestamp"), now)


def name(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))


def condition_true(conditions: list[Obj] | None, ctype: str) -> bool:
    cond = meta.get_condition(conditions, ctype)
    return cond is not None and cond.get("status") == "True"


def container_names(containers: Iterable[Obj]) -> str:
    return ",".join(str(c.get("name", "")) for c in containers)


def container_images(containers: Iterable[Obj]) -> str:
    return ",".join(str(c.get("image", "")) for c in containers)


def template_containers(obj: Obj) -> list[Obj]:
    """The containers of a workload's ``spec.template``."""
    spec = obj.get("spec") or {}
    return list(((spec.get("template") or {}).get("spec") or {}).get("containers") or [])


def label_selector_string(selector: Mapping[str, Any] | None) -> str:
    """``metav1.FormatLabelSelector``: ``app=web,tier in (a,b)``, ``<none>`` for none, ``<invalid>``."""
    if not selector:
        return "<none>"
    parts = [f"{k}={v}" for k, v in (selector.get("matchLabels") or {}).items()]
    for req in selector.get("matchExpressions") or ():
        key, op = req.get("key", ""), req.get("operator", "")
        values = ",".join(sorted(req.get("values") or []))
        if op == "In":
            parts.append(f"{key} in ({values})")
        elif op == "NotIn":
            parts.append(f"{key} notin ({values})")
        elif op == "Exists":
            parts.append(key)
        elif op == "DoesNotExist":
            parts.append(f"!{key}")
        else:
            return "<invalid>"
    return ",".join(parts) if parts else "<none>"


def quantity(raw: object) -> str:
    """``Quantity.String()``: the canonical form, binary (``1536Mi``) when the text used a binary suffix."""
    text = str(raw)
    try:
        binary = text.rstrip("0123456789").endswith(("Ki", "Mi", "Gi", "Ti", "Pi", "Ei"))
        return quantity_module.format_quantity(quantity_module.milli_value(text), "memory" if binary else "cpu")
    except ValueError:
        return text


def selector_string(selector: Mapping[str, Any] | None) -> str:
    """``LabelSelectorAsSelector(s).String()``: requirements sorted by key; ``""`` for none or everything."""
    try:
        return str(labels.Selector.from_label_selector(selector))
    except labels.SelectorError:
        return "<error>"


def format_label_selector(selector: Mapping[str, Any] | None) -> str:
    """``metav1.FormatLabelSelector``: :func:`selector_string`, ``<none>`` when that is empty."""
    return selector_string(selector) or "<none>"


def join_or_none(values: Sequence[str]) -> str:
    return ",".join(values) if values else "<none>"


# --- The default printer ------------------------------------------------------------------------


def _default_row(obj: Obj, now: datetime) -> Row:
    metadata: Obj = obj.get("metadata") or {}
    created = meta.parse_time(metadata.get("creationTimestamp"))
    # Go formats a zero time; kubectl then prints that date, as it does against Kubernetes.
    return Row([metadata.get("name", ""), meta.format_time(created) if created else "0001-01-01T00:00:00Z"])


#: The generic convertor kube-apiserver uses for resources without a printer.
DEFAULT: Final = Printer((NAME, Column("Created At", "date", (OBJECT_META, "creationTimestamp"))), _default_row)


# --- Tables -------------------------------------------------------------------------------------


@functools.cache
def column_definitions(columns: tuple[Column, ...]) -> tuple[dict[str, Any], ...]:
    defs = []
    for col in columns:
        if isinstance(col.doc, str):
            description = col.doc
        else:
            definition, prop = col.doc
            # The field's own description, not that of the type it refers to (Time, ObjectReference...).
            field = (schema.definition(definition).get("properties") or {}).get(prop) or {}
            description = field.get("description", "")
        defs.append({"name": col.name, "type": col.type, "format": col.format,
                     "description": description, "priority": col.priority})
    return tuple(defs)


def table_for(printer: Printer | None, objects: list[Obj], *, include_object: str = "Metadata",
              resource_version: str = "", continue_token: str | None = None,
              remaining_item_count: int | None = None, now: datetime | None = None,
              embedded: list[Obj] | None = None) -> dict[str, Any]:
    """A ``meta.k8s.io/v1`` Table of ``objects`` (one object for a GET, the items for a LIST).

    ``include_object`` is the request's ``includeObject``: ``None`` leaves
    each row's object out (``null``), ``Metadata`` (or empty) embeds a
    PartialObjectMetadata, ``Object`` the object itself (not copied); any
    other value is a 400 BadRequest, as in Kubernetes. ``now`` fixes the
    clock for ages (tests); it defaults to the current time. ``embedded``, when
    given, are the objects rows embed in place of ``objects`` (the served form of
    objects printed from their stored form).
    """
    if include_object not in ("None", "Metadata", "Object", ""):
        raise errors.bad_request(f'includeObject: Invalid value: "{include_object}": '
                                 "must be 'Metadata', 'Object', 'None', or empty")
    printer = printer or DEFAULT
    now = now or meta.utcnow()
    rows: list[dict[str, Any]] = []
    for i, obj in enumerate(objects):
        row = printer.row(obj, now)
        shown = embedded[i] if embedded is not None else obj
        out: dict[str, Any] = {"cells": row.cells}
        if row.conditions:
            out["conditions"] = row.conditions
        if include_object == "Object":
            out["object"] = shown
        elif include_object != "None":
            out["object"] = {"kind": "PartialObjectMetadata", "apiVersion": f"{META_GROUP}/v1",
                             "metadata": shown.get("metadata") or {}}
        else:
            out["object"] = None
        rows.append(out)

    list_meta: dict[str, Any] = {}
    if resource_version:
        list_meta["resourceVersion"] = resource_version
    if continue_token:
        list_meta["continue"] = continue_token
    if remaining_item_count is not None:
        list_meta["remainingItemCount"] = remaining_item_count
    return {
        "kind": "Table",
        "apiVersion": f"{META_GROUP}/v1",
        "metadata": list_meta,
        # Copies, so that a caller editing its table cannot change the next one.
        "columnDefinitions": [dict(c) for c in column_definitions(printer.columns)],
        "rows": rows,
    }
