"""Field ownership (``metadata.managedFields``) and server-side apply.

Every write records, per field manager, which fields it set, so that
``kubectl apply --server-side`` can merge a configuration into an object that
other writers also change, remove what the applier stopped applying, and
refuse (``409 Conflict``) to silently overwrite another manager's value. This
is Kubernetes' structured-merge-diff (sigs.k8s.io/structured-merge-diff, wired
into the apiserver by apimachinery's ``managedfields`` package), written again
compactly for the built-in types kubesim serves.

Field sets are kept in the wire format, the ``FieldsV1`` trie: keys are path
elements (``f:<field>``, ``k:<list-map key as JSON>``, ``v:<set value as
JSON>``), values are sub-tries, ``{}`` is a field owned as a whole and ``"."``
marks a node that is owned itself as well as having owned children::

    {"f:spec": {"f:containers": {'k:{"name":"web"}': {".": {}, "f:image": {}}}}}

Working on that format directly means a write decodes and re-encodes nothing:
:func:`update_managed_fields`, which runs on every write, touches only the
parts of the tries the write changed, and entries it leaves alone stay the very
dicts of the old object. Field sets are therefore never mutated in place: every
operation here builds new dicts where it changes something (copy on write).

Pure and synchronous. The only state is memo tables (the schema view of
:mod:`apiserver.patch`, the path elements of list-map keys), which hold values
computed from constants, so concurrent callers can only fill them twice.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

import orjson

from apiserver.patch import JSON, JSONObject, MergeType, bad_request, copy_json, invalid, merge_type

#: A FieldsV1 trie (a set of field paths), or one node of it.
FieldSet = dict[str, Any]

_MEMBER: Final = "."
_MISSING: Final = object()
_GONE: Final = object()
_DUPLICATE: Final = object()

#: What Kubernetes never records as owned (its stripMetaManager): type and system metadata.
_STRIPPED: Final[FieldSet] = {
    "f:apiVersion": {},
    "f:kind": {},
    "f:metadata": {
        ".": {}, "f:clusterName": {}, "f:creationTimestamp": {}, "f:generation": {}, "f:managedFields": {},
        "f:name": {}, "f:namespace": {}, "f:resourceVersion": {}, "f:selfLink": {}, "f:uid": {},
    },
}
# The same fields, as the comparison of two objects skips them (it never looks at them at all).
_ROOT_SKIP: Final = frozenset({"apiVersion", "kind"})
_META_SKIP: Final = frozenset(k[2:] for k in _STRIPPED["f:metadata"] if k != _MEMBER)
_NO_SKIP: Final[frozenset[str]] = frozenset()
#: Top-level fields that Kubernetes' Go types hold as structs, never pointers: an empty object
#: always has them, so a write never "adds" the field itself, only what is inside.
_ALWAYS_PRESENT: Final = frozenset({"metadata", "spec", "status"})

#: List-map key fields that Kubernetes' published OpenAPI gives a default (``+default="TCP"``),
#: which the definitions kubesim loads leave out. structured-merge-diff keys an element that
#: omits such a field by the default, so ``{containerPort: 80}`` is the element the server
#: defaulted to ``{containerPort: 80, protocol: TCP}``.
_KEY_DEFAULTS: Final[dict[str, dict[str, str]]] = {
    "io.k8s.api.core.v1.ContainerPort": {"protocol": "TCP"},
    "io.k8s.api.core.v1.ServicePort": {"protocol": "TCP"},
}

#: Kubernetes merges the oldest Update entries into "ancient-changes" beyond this many.
_MAX_UPDATE_MANAGERS: Final = 10
_BEFORE_FIRST_APPLY: Final = "before-first-apply"


# --------------------------------------------------------------------------- public API


class ApplyConflict(Exception):
    """An apply would change fields that other managers own (answer ``409 Conflict``).

    ``conflicts`` lists ``(manager, path)`` pairs, the path as Kubernetes
    prints it (``.spec.containers[name="web"].image``).
    """

    def __init__(self, found: list[tuple[_Entry, tuple[str, ...]]]) -> None:
        self._found = [(e, _path_string(p)) for e, p in found]
        self.conflicts: list[tuple[str, str]] = [(e.manager, p) for e, p in self._found]
        super().__init__(self.message())

    def message(self) -> str:
        """Kubernetes' text: ``Apply failed with 1 conflict: conflict with "x" using v1: .spec.replicas``."""
        if len(self._found) == 1:
            entry, path = self._found[0]
            return f"Apply failed with 1 conflict: conflict with {entry.describe()}: {path}"
        lines: list[str] = []
        last: _Entry | None = None
        for entry, path in self._found:
            if entry is not last:
                lines.append(f"conflicts with {entry.describe()}:")
                last = entry
            lines.append(f"- {path}")
        return f"Apply failed with {len(self._found)} conflicts: " + "\n".join(lines)

    def causes(self) -> list[dict[str, str]]:
        """The ``Status.details.causes`` of the conflict, one per field."""
        return [
            {"reason": "FieldManagerConflict", "message": f"conflict with {entry.describe()}", "field": path}
            for entry, path in self._found
        ]


def update_managed_fields(
    old: JSONObject | None, new: JSONObject, *, definition: str, manager: str, api_version: str, now: str,
    subresource: str | None = None,
) -> None:
    """Record a non-apply write (create, update, patch) in ``new["metadata"]["managedFields"]``.

    The fields this write changed (all of them, on create) become owned by
    ``manager``'s Update entry for ``api_version`` and ``subresource`` (merged
    into that entry if it exists, its ``time`` set to ``now``) and are taken
    from every other manager; fields it removed are removed from every set.
    Empty entries disappear; beyond ten Update entries the oldest merge into
    ``ancient-changes``, as in Kubernetes.

    Which entries the write starts from follows Kubernetes: a subresource write
    starts from ``old``'s; a main-resource write starts from the entries the
    client sent in ``new`` when it sent valid ones (so clients may edit them),
    from none when it sent ``[]`` (and then, on an update, the object stops
    being tracked), and from ``old``'s otherwise.

    Mutates ``new["metadata"]`` only. Entries this write leaves alone are the
    same dicts as in ``old``: treat managed fields as immutable.
    """
    meta = new.get("metadata")
    if not isinstance(meta, dict):
        return
    old_meta = old.get("metadata") if old is not None else None
    live = (_decode(old_meta.get("managedFields")) if isinstance(old_meta, dict) else None) or {}
    entries = live
    if not subresource:
        sent = meta.get("managedFields")
        if sent == [] or sent == [{}]:
            entries = {}
        else:
            entries = _decode(sent) or live
    if old is not None and not entries:
        # Kubernetes does not start tracking an existing object on an update (only apply does).
        meta.pop("managedFields", None)
        return
    changed, removed = _compare_object(old or {}, new, merge_type(definition))
    for entry in entries.values():
        entry.fields = _difference(_difference(entry.fields, changed), removed)
    owned = _difference(changed, _STRIPPED)
    if owned:
        writer = _Entry(manager or "unknown", "Update", api_version, subresource or "", now, owned)
        previous = entries.get(writer.identity)
        if previous is not None:
            # The previous set first: the union returns it untouched when this write owns
            # nothing new, as a status writer repeating itself does.
            writer.fields = _union(previous.fields, owned)
        entries[writer.identity] = writer
    _cap_update_managers(entries)
    _store(meta, entries)


def server_side_apply(
    live: JSONObject | None, applied: JSONObject, *, definition: str, manager: str, api_version: str,
    force: bool, now: str, subresource: str | None = None,
) -> JSONObject:
    """``application/apply-patch+yaml``: merge ``applied`` into ``live`` (``None`` to create) and return the result.

    Lists merge by ``x-kubernetes-list-type`` (``map`` by
    ``x-kubernetes-list-map-keys``, ``set`` by value, ``atomic`` whole), maps
    key by key unless ``x-kubernetes-map-type: atomic``. Fields ``manager``
    applied before and no longer applies are removed when no other manager owns
    them. Changing a field another manager owns raises :class:`ApplyConflict`,
    unless ``force``, which moves the ownership. ``manager``'s Apply entry in
    ``managedFields`` becomes the set it applied. An applied ``null`` owns the
    field and leaves it unset.

    Fields the write may not change (``status`` on the main resource, Kubernetes'
    "reset fields") should be dropped from ``applied`` by the caller.
    A malformed configuration (a list-map element without its key, a
    duplicate key, ``metadata.managedFields`` set) raises
    :class:`~apiserver.patch.PatchError`.
    The inputs are not mutated; the result shares nothing with them.
    """
    if not isinstance(applied, dict):
        raise bad_request("an apply patch must be a YAML or JSON object")
    meta = applied.get("metadata")
    if not isinstance(meta, dict):
        raise bad_request("an apply patch must have metadata, an object with the name of the object")
    if meta.get("managedFields") is not None:
        raise bad_request("metadata.managedFields must be nil")
    t = merge_type(definition)
    current: JSONObject = copy_json(live) if live is not None else {}
    config: JSONObject = copy_json(applied)
    current_meta = current.get("metadata")
    entries = (_decode(current_meta.get("managedFields")) if isinstance(current_meta, dict) else None) or {}
    if live is not None and not entries:
        # An object nobody tracked yet: whatever it holds belongs to "before-first-apply", so
        # applying over it conflicts, as on a real cluster.
        existing = _difference(_compare_object({}, current, t)[0], _STRIPPED)
        if existing:
            first = _Entry(_BEFORE_FIRST_APPLY, "Update", api_version, "", now, existing)
            entries[first.identity] = first

    applier = _Entry(manager or "unknown", "Apply", api_version, subresource or "", None,
                     _map_fields(config, t, path=""))
    last = entries.get(applier.identity)
    if last is not None:
        applier.time = last.time
    entries[applier.identity] = applier
    merged: JSONObject = _merge_value(current, config, t, "")
    if last is not None and last.fields:
        merged = _prune(merged, entries, last.fields, t)

    changed, removed = _compare_object(current, merged, t)
    conflicts: list[tuple[_Entry, tuple[str, ...]]] = []
    for entry in sorted(entries.values(), key=_Entry.sort_identity):
        if entry is not applier:
            conflicts += [(entry, p) for p in _paths(_intersection(entry.fields, changed))]
    if conflicts and not force:
        raise ApplyConflict(conflicts)
    for entry in entries.values():
        if entry is not applier:
            entry.fields = _difference(_difference(entry.fields, changed), removed)
    applier.fields = _difference(applier.fields, _STRIPPED)
    if merged != current:
        applier.time = now
    _store(merged.setdefault("metadata", {}), entries)
    return merged


# --------------------------------------------------------------------------- managedFields entries


@dataclass(slots=True)
class _Entry:
    """One ``managedFields`` entry, decoded only as far as its identity."""

    manager: str
    operation: str
    api_version: str
    subresource: str
    time: str | None
    fields: FieldSet
    #: The wire dict this entry was read from, returned as it is while nothing changes.
    raw: JSONObject | None = None

    @property
    def identity(self) -> tuple[str, str, str, str]:
        # Kubernetes keys an applier without its apiVersion: applying again at another
        # version replaces the entry rather than adding one.
        version = self.api_version if self.operation == "Update" else ""
        return (self.manager, self.operation, version, self.subresource)

    def sort_identity(self) -> str:
        """The manager identifier Kubernetes builds (JSON of the identity), which it sorts conflicts by."""
        manager, operation, version, subresource = self.identity
        ident: dict[str, str] = {"manager": manager, "operation": operation}
        if version:
            ident["apiVersion"] = version
        if subresource:
            ident["subresource"] = subresource
        return json.dumps(ident, separators=(",", ":"))

    def describe(self) -> str:
        """The manager as conflict messages print it: ``"kubectl" with subresource "status" using v1``."""
        text = json.dumps(self.manager, ensure_ascii=False)
        if self.subresource:
            text += f" with subresource {json.dumps(self.subresource, ensure_ascii=False)}"
        if self.operation == "Update":
            text += f" using {self.api_version}"
        return text

    def wire(self) -> JSONObject:
        raw = self.raw
        if raw is not None and raw.get("fieldsV1") is self.fields and raw.get("time") == self.time:
            return raw
        out: JSONObject = {"manager": self.manager, "operation": self.operation, "apiVersion": self.api_version}
        if self.time is not None:
            out["time"] = self.time
        out["fieldsType"] = "FieldsV1"
        out["fieldsV1"] = self.fields
        if self.subresource:
            out["subresource"] = self.subresource
        return out


def _decode(value: JSON) -> dict[tuple[str, str, str, str], _Entry] | None:
    """The entries of a ``managedFields`` list by identity; ``None`` if it is malformed."""
    if value is None:
        return {}
    if not isinstance(value, list):
        return None
    entries: dict[tuple[str, str, str, str], _Entry] = {}
    for raw in value:
        if not isinstance(raw, dict):
            return None
        manager, operation, version = raw.get("manager", ""), raw.get("operation"), raw.get("apiVersion")
        fields, time, subresource = raw.get("fieldsV1"), raw.get("time"), raw.get("subresource", "")
        if fields is None:  # Kubernetes reads an absent set as the empty one
            fields = {}
        if (operation not in ("Apply", "Update") or not isinstance(version, str) or not version
                or raw.get("fieldsType") != "FieldsV1" or not isinstance(fields, dict)
                or not isinstance(manager, str) or not isinstance(subresource, str)
                or not (time is None or isinstance(time, str))):
            return None
        entry = _Entry(manager, operation, version, subresource, time, fields, raw)
        entries[entry.identity] = entry
    return entries


def _store(meta: JSONObject, entries: dict[tuple[str, str, str, str], _Entry]) -> None:
    """Write the non-empty entries, in Kubernetes' order (operation, time, manager, version, subresource)."""
    kept = [e for e in entries.values() if e.fields]
    if not kept:
        meta.pop("managedFields", None)
        return
    kept.sort(key=lambda e: (e.operation, e.time or "", e.manager, e.api_version, e.subresource))
    meta["managedFields"] = [e.wire() for e in kept]


def _cap_update_managers(entries: dict[tuple[str, str, str, str], _Entry]) -> None:
    """Merge the oldest Update entries, per apiVersion, into an "ancient-changes" entry."""
    excess = sum(e.operation == "Update" for e in entries.values()) - _MAX_UPDATE_MANAGERS
    if excess <= 0:
        return
    updaters = sorted((e for e in entries.values() if e.operation == "Update"),
                      key=lambda e: (e.time or "", e.sort_identity()))
    first_of_version: dict[str, _Entry] = {}
    for entry in updaters:
        if excess <= 0:
            break
        bucket_id = ("ancient-changes", "Update", entry.api_version, "")
        first = first_of_version.setdefault(entry.api_version, entry)
        if first is entry or entry.identity == bucket_id:
            continue
        bucket = entries.get(bucket_id)
        if bucket is None:
            del entries[first.identity]
            bucket = _Entry("ancient-changes", "Update", first.api_version, "", first.time, first.fields)
            entries[bucket_id] = bucket
        bucket.fields = _union(bucket.fields, entry.fields)
        bucket.time = entry.time
        del entries[entry.identity]
        excess -= 1


# --------------------------------------------------------------------------- path elements


def _item_key(item: JSON, t: MergeType) -> str | None:
    """The path element of an element of associative list ``t`` (``k:...`` or ``v:...``), if it has one."""
    if t.list_type == "set":
        if item is None or isinstance(item, (dict, list)):
            return None
        return "v:" + _json(item)
    if not isinstance(item, dict):
        return None
    names, defaults = _list_keys(t)
    key = {name: item[name] if name in item else defaults[name]
           for name in names if name in item or name in defaults}
    if not key:
        return None
    values = tuple(key.values())
    # Only strings and integers are memoized: the cache would take true for 1 and 1.0 for 1.
    if all(type(v) is str or type(v) is int for v in values):
        return _key_element(tuple(key), values)
    return "k:" + _json(key)


@functools.cache
def _list_keys(t: MergeType) -> tuple[tuple[str, ...], dict[str, str]]:
    """A list-map's key fields and the defaults of those (:data:`_KEY_DEFAULTS`)."""
    return t.map_keys, _KEY_DEFAULTS.get(t.item.definition or "", {})


@functools.lru_cache(maxsize=4096)
def _key_element(names: tuple[str, ...], values: tuple[str | int, ...]) -> str:
    # Elements repeat (conditions by type, containers by name): building their JSON once
    # matters on the write path.
    return "k:" + _json(dict(zip(names, values)))


def _unkeyed(item: JSON, t: MergeType) -> str:
    """Why :func:`_item_key` found no key, in structured-merge-diff's words."""
    if t.list_type == "set":
        if item is None:
            return "associative list without keys has an element that's an explicit null"
        return "associative list without keys has an element that's a map or a list"
    if item is None:
        return "associative list with keys may not have a null element"
    if not isinstance(item, dict):
        return "associative list with keys may not have non-map elements"
    return f"associative list with keys has an element that omits all key fields {list(t.map_keys)}"


def _groups(items: list[Any], t: MergeType, path: str | None) -> dict[str, list[Any]] | None:
    """The elements of an associative list by path element.

    With ``path`` (an applied configuration) an element without a key or a
    duplicate is a :class:`PatchError`; without (a stored object, where
    Kubernetes tolerates duplicates) it gives ``None`` and the caller treats
    the list as atomic.
    """
    groups: dict[str, list[Any]] = {}
    for i, item in enumerate(items):
        key = _item_key(item, t)
        if key is None:
            if path is None:
                return None
            raise invalid(f"{path or '.'}: element {i}: {_unkeyed(item, t)}")
        group = groups.setdefault(key, [])
        if group and path is not None:
            raise invalid(f"{path or '.'}: duplicate entries for key {_path_string((key,))}")
        group.append(item)
    return groups


_GO_ESCAPES: Final = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026",
                                    "\u2028": "\\u2028", "\u2029": "\\u2029"})


def _json(value: JSON) -> str:
    """JSON as Go's encoding/json writes it (compact, HTML characters escaped), for path elements."""
    return orjson.dumps(value).decode().translate(_GO_ESCAPES)


def _value_order(value: JSON) -> tuple[Any, ...]:
    """structured-merge-diff's total order of values: numbers, strings, booleans, lists, maps, null."""
    if isinstance(value, bool):
        return (2, value)
    if isinstance(value, (int, float)):
        return (0, value)
    if isinstance(value, str):
        return (1, value)
    if isinstance(value, list):
        return (3, tuple(map(_value_order, value)))
    if isinstance(value, dict):
        return (4, tuple((k, _value_order(v)) for k, v in sorted(value.items())))
    return (5,)


def _element_order(element: str) -> tuple[Any, ...]:
    """The order of path elements in a FieldsV1 object: ``.``, fields, keys, values, indexes."""
    kind = element[:2]
    try:
        if kind == "f:":
            return (1, element)
        if kind == "k:":
            return (2, tuple((k, _value_order(v)) for k, v in orjson.loads(element[2:]).items()))
        if kind == "v:":
            return (3, _value_order(orjson.loads(element[2:])))
        if kind == "i:":
            return (4, int(element[2:]))
    except (ValueError, AttributeError):  # a malformed element a client wrote: keep it, last
        pass
    return (0,) if element == _MEMBER else (5, element)


def _sorted(node: FieldSet) -> FieldSet:
    if len(node) < 2:
        return node
    keys = list(node)
    ordered = sorted(keys, key=_element_order)
    return node if ordered == keys else {k: node[k] for k in ordered}


def _path_string(path: tuple[str, ...]) -> str:
    """A path as Kubernetes prints it: ``.spec.containers[name="web"].ports[containerPort=80,protocol="TCP"]``."""
    parts: list[str] = []
    for element in path:
        kind, text = element[:2], element[2:]
        try:
            if kind == "f:":
                parts.append("." + text)
            elif kind == "k:":
                fields = orjson.loads(text)
                parts.append("[" + ",".join(f"{k}={_go_string(v)}" for k, v in fields.items()) + "]")
            elif kind == "v:":
                parts.append(f"[={_go_string(orjson.loads(text))}]")
            else:
                parts.append(f"[{text}]")
        except (ValueError, AttributeError):
            parts.append(f"[{text}]")
    return "".join(parts)


def _go_string(value: JSON) -> str:
    """A value as structured-merge-diff's ``value.ToString`` prints it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ",".join(map(_go_string, value)) + "]"
    if isinstance(value, dict):
        return "".join(f"{k}={_go_string(v)}" for k, v in value.items())
    return str(value)


# --------------------------------------------------------------------------- set operations


def _is_member(node: FieldSet) -> bool:
    return not node or _MEMBER in node


def _has_children(node: FieldSet) -> bool:
    return len(node) > 1 or (len(node) == 1 and _MEMBER not in node)


def _union(a: FieldSet, b: FieldSet) -> FieldSet:
    """The union of two sets (or of the children of two nodes); ``a`` itself when ``b`` adds nothing."""
    out: FieldSet | None = None
    for element, b_node in b.items():
        if element == _MEMBER:
            continue
        a_node = a.get(element)
        node = b_node if a_node is None else _union_node(a_node, b_node)
        if node is not a_node:
            if out is None:
                out = dict(a)
            out[element] = node
    if out is None:
        return a
    return out if len(out) == len(a) else _sorted(out)


def _union_node(a: FieldSet, b: FieldSet) -> FieldSet:
    if a is b or (not a and not b):
        return a
    if not a:
        return b if _MEMBER in b else {_MEMBER: {}, **b}
    if not b:
        return a if _MEMBER in a else {_MEMBER: {}, **a}
    merged = _union(a, b)
    return {_MEMBER: {}, **merged} if _MEMBER in b and _MEMBER not in merged else merged


def _difference(a: FieldSet, b: FieldSet) -> FieldSet:
    """The paths of ``a`` that are not in ``b``; ``a`` itself when none go."""
    out: FieldSet | None = None
    for element, b_node in b.items():
        a_node = a.get(element) if element != _MEMBER else None
        if a_node is None:
            continue
        node = _difference_node(a_node, b_node)
        if node is not a_node:
            if out is None:
                out = dict(a)
            if node is None:
                del out[element]
            else:
                out[element] = node
    return a if out is None else out


def _difference_node(a: FieldSet, b: FieldSet) -> FieldSet | None:
    if not a:
        return None if _is_member(b) else a
    rest = _difference(a, b) if b else a
    if _is_member(b) and _MEMBER in rest:
        rest = {k: v for k, v in rest.items() if k != _MEMBER}
    if not rest:
        return None
    return {} if len(rest) == 1 and _MEMBER in rest else rest


def _intersection(a: FieldSet, b: FieldSet) -> FieldSet:
    out: FieldSet = {}
    for element, a_node in a.items():
        b_node = b.get(element) if element != _MEMBER else None
        if b_node is None:
            continue
        member = _is_member(a_node) and _is_member(b_node)
        children = _intersection(a_node, b_node) if a_node and b_node else {}
        if children:
            out[element] = {_MEMBER: {}, **children} if member else children
        elif member:
            out[element] = {}
    return out


def _paths(s: FieldSet, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """The paths of a set, in structured-merge-diff's order (a level's members, then its children)."""
    for element, node in s.items():
        if element != _MEMBER and _is_member(node):
            yield (*prefix, element)
    for element, node in s.items():
        if element != _MEMBER and _has_children(node):
            yield from _paths(node, (*prefix, element))


def _ensure_named(s: FieldSet, t: MergeType) -> FieldSet:
    """``s`` where every declared struct field with owned children is also owned itself.

    structured-merge-diff does this before pruning, so that owning
    ``.spec.replicas`` protects ``.spec`` from being removed.
    """
    out: FieldSet = {}
    for element, node in s.items():
        if element != _MEMBER and node:
            declared = element.startswith("f:") and t.declares(element[2:])
            node = _ensure_named(node, t.field(element[2:]) if element.startswith("f:") else t.item)
            if declared and _MEMBER not in node:
                node = {_MEMBER: {}, **node}
        out[element] = node
    return out


# --------------------------------------------------------------------------- field sets of values


def _map_fields(m: JSONObject, t: MergeType, path: str | None) -> FieldSet:
    """The fields a map or struct value sets (structured-merge-diff's ``ToFieldSet``).

    ``path`` is given for an applied configuration, which must be well formed.
    """
    out: FieldSet = {}
    for key, value in m.items():
        node = _value_fields(value, t.field(key), t.declares(key), None if path is None else f"{path}.{key}")
        if node is not None:
            out["f:" + key] = node
    return _sorted(out)


def _value_fields(value: JSON, t: MergeType, declared: bool, path: str | None) -> FieldSet | None:
    children: FieldSet
    if isinstance(value, dict) and value and not t.atomic:
        children = _map_fields(value, t, path)
    elif isinstance(value, list) and t.list_type:
        groups = _groups(value, t, path)
        if groups is None:
            return {}
        children = _sorted({
            key: _item_fields(group[0], t.item, None if path is None else path + _path_string((key,)))
            if len(group) == 1 else {}
            for key, group in groups.items()
        })
    else:
        return {}
    # A declared field is owned through what it contains; a map key is owned itself too.
    if declared:
        return children or None
    return {_MEMBER: {}, **children} if children else {}


def _item_fields(item: JSON, t: MergeType, path: str | None) -> FieldSet:
    if isinstance(item, dict) and item and not t.atomic:
        children = _map_fields(item, t, path)
        return {_MEMBER: {}, **children} if children else {}
    return {}


def _all_fields(value: JSON, t: MergeType) -> FieldSet:
    """Every path of a value that appears or disappears as a whole, the value itself included."""
    if isinstance(value, dict) and value and not t.atomic:
        children = {"f:" + k: _all_fields(v, t.field(k)) for k, v in value.items()}
        return {_MEMBER: {}, **_sorted(children)}
    if isinstance(value, list) and value and t.list_type:
        groups = _groups(value, t, None)
        if groups is not None:
            items = {k: _all_fields(g[0], t.item) if len(g) == 1 else {} for k, g in groups.items()}
            return {_MEMBER: {}, **_sorted(items)}
    return {}


# --------------------------------------------------------------------------- compare


def _compare_object(old: JSONObject, new: JSONObject, t: MergeType) -> tuple[FieldSet, FieldSet]:
    """The paths a write changed (added or modified) and removed, without type and system metadata."""
    changed, removed = _compare_map(old, new, t, _ROOT_SKIP, root=True)
    return changed or {}, removed or {}


def _compare_value(
    before: JSON, after: JSON, t: MergeType, skip: frozenset[str] = _NO_SKIP,
) -> tuple[FieldSet | None, FieldSet | None]:
    if before is _MISSING:
        return _all_fields(after, t), None
    if after is _MISSING:
        return None, _all_fields(before, t)
    if type(before) is type(after) and before == after:
        return None, None
    # A null map or list (a field Go always holds) compares as an empty one: what it gains or
    # loses is its content, not the field itself.
    if before is None and isinstance(after, (dict, list)):
        before = type(after)()
    elif after is None and isinstance(before, (dict, list)):
        after = type(before)()
    if isinstance(before, dict) and isinstance(after, dict) and not t.atomic:
        return _compare_map(before, after, t, skip)
    if isinstance(before, list) and isinstance(after, list) and t.list_type:
        found = _compare_list(before, after, t)
        if found is not None:
            return found
    return {}, None


def _compare_map(
    before: JSONObject, after: JSONObject, t: MergeType, skip: frozenset[str], *, root: bool = False,
) -> tuple[FieldSet | None, FieldSet | None]:
    # Fields an object always has (as Kubernetes' Go types hold it) are never added or removed
    # themselves, only changed: a missing one compares as null.
    present = t.required | _ALWAYS_PRESENT if root else t.required
    changed: FieldSet = {}
    removed: FieldSet = {}
    for key, new_value in after.items():
        old_value = before.get(key, _MISSING)
        if old_value is new_value or key in skip:
            continue
        if old_value is _MISSING and key in present:
            old_value = None
        c, r = _compare_value(old_value, new_value, t.field(key),
                              _META_SKIP if root and key == "metadata" else _NO_SKIP)
        if c is not None:
            changed["f:" + key] = c
        if r is not None:
            removed["f:" + key] = r
    for key, old_value in before.items():
        if key in after or key in skip:
            continue
        if key in present:
            c, r = _compare_value(old_value, None, t.field(key))
            if c is not None:
                changed["f:" + key] = c
        else:
            r = _all_fields(old_value, t.field(key))
        if r is not None:
            removed["f:" + key] = r
    return _sorted(changed) or None, _sorted(removed) or None


def _compare_list(
    before: list[Any], after: list[Any], t: MergeType,
) -> tuple[FieldSet | None, FieldSet | None] | None:
    old_groups, new_groups = _groups(before, t, None), _groups(after, t, None)
    if old_groups is None or new_groups is None:
        return None
    changed: FieldSet = {}
    removed: FieldSet = {}
    for key, group in new_groups.items():
        old_group = old_groups.get(key)
        if old_group is None:
            changed[key] = _all_fields(group[0], t.item) if len(group) == 1 else {}
        elif len(group) == 1 and len(old_group) == 1:
            c, r = _compare_value(old_group[0], group[0], t.item)
            if c is not None:
                changed[key] = c
            if r is not None:
                removed[key] = r
        elif old_group != group:
            # Duplicated elements are compared as one atomic value, as structured-merge-diff does.
            changed[key] = {}
    for key, old_group in old_groups.items():
        if key not in new_groups:
            removed[key] = _all_fields(old_group[0], t.item) if len(old_group) == 1 else {}
    return _sorted(changed) or None, _sorted(removed) or None


# --------------------------------------------------------------------------- merge and prune


def _merge_value(live: JSON, applied: JSON, t: MergeType, path: str) -> JSON:
    """structured-merge-diff's merge: the applied value wins, maps and associative lists merge."""
    if applied is None:
        return _GONE
    if isinstance(applied, dict) and not t.atomic:
        base = live if isinstance(live, dict) else {}
        if not base and not applied:
            return applied
        out = dict(base)
        for key, value in applied.items():
            merged = _merge_value(base.get(key, _MISSING), value, t.field(key), f"{path}.{key}")
            if merged is _GONE:
                out.pop(key, None)
            else:
                out[key] = merged
        return out
    if isinstance(applied, list) and t.list_type and (applied or live):
        return _merge_list(live if isinstance(live, list) else [], applied, t, path)
    return applied


def _merge_list(live: list[Any], applied: list[Any], t: MergeType, path: str) -> list[Any]:
    """Merge associative lists, ordering elements as structured-merge-diff does.

    Applied elements come in applied order; live-only elements stay where they
    were relative to the shared elements they preceded.
    """
    applied_groups = _groups(applied, t, path)
    assert applied_groups is not None
    wanted = [(key, group[0]) for key, group in applied_groups.items()]
    live_keys = [_item_key(item, t) for item in live]
    if None in live_keys:  # a stored list Kubernetes would not accept today: the applier replaces it
        live, live_keys = [], []
    by_key: dict[str | None, Any] = {}
    for key, item in zip(live_keys, live):
        by_key[key] = _DUPLICATE if key in by_key else item
    shared = iter([key for key, _ in wanted if key in by_key])
    next_shared = next(shared, None)
    merged_keys: set[str] = set()
    out: list[Any] = []

    def take(key: str, item: JSON) -> None:
        merged_keys.add(key)
        previous = by_key.get(key, _MISSING)
        value = _merge_value(_MISSING if previous is _DUPLICATE else previous, item, t.item,
                             path + _path_string((key,)))
        if value is not _GONE:
            out.append(value)

    li = ai = 0
    while li < len(live) or ai < len(wanted):
        if li < len(live) and ai < len(wanted):
            key = live_keys[li]
            if key == wanted[ai][0]:
                take(*wanted[ai])
                li, ai = li + 1, ai + 1
                next_shared = next(shared, None)
                continue
            if key in applied_groups and next_shared is not None and next_shared != key:
                li += 1  # a shared element that comes later in applied order
                continue
        if li < len(live):
            key = live_keys[li]
            if key not in applied_groups:
                out.append(live[li])
                li += 1
                continue
            if key in merged_keys:
                li += 1
        if ai < len(wanted):
            key, item = wanted[ai]
            take(key, item)
            ai += 1
            if next_shared == key:
                next_shared = next(shared, None)
    return out


def _remove(value: JSONObject, s: FieldSet, t: MergeType) -> JSONObject:
    """``value`` without the paths of ``s`` (a path owned as a whole goes with everything below it)."""
    out: JSONObject = {}
    for key, item in value.items():
        node = s.get("f:" + key)
        if node is None:
            out[key] = item
        elif not _is_member(node):
            kept = _remove_inside(item, node, t.field(key))
            if kept is not _GONE:
                out[key] = kept
    return out


def _remove_inside(value: JSON, s: FieldSet, t: MergeType) -> JSON:
    if isinstance(value, dict) and value and not t.atomic:
        kept = _remove(value, s, t)
        return kept if kept else _GONE
    if isinstance(value, list) and value and t.list_type:
        items = []
        for item in value:
            key = _item_key(item, t)
            node = s.get(key) if key is not None else None
            if node is None:
                items.append(item)
            elif not _is_member(node):
                kept = _remove_inside(item, node, t.item)
                if kept is not _GONE:
                    items.append(kept)
        return items if items else _GONE
    return value


def _prune(
    merged: JSONObject, entries: dict[tuple[str, str, str, str], _Entry], last: FieldSet, t: MergeType,
) -> JSONObject:
    """Remove what the applier applied last time and no longer applies, unless someone else owns it.

    The three steps of structured-merge-diff's ``prune``: remove everything
    the last applied set names; add back what anyone (the new applied set
    included) owns; and of what is still gone, remove only what the last
    applied set named.
    """
    last = _ensure_named(last, t)
    managed: FieldSet = {}
    for entry in entries.values():
        managed = _union(managed, entry.fields)
    managed = _ensure_named(managed, t)
    merged_set = _ensure_named(_map_fields(merged, t, None), t)
    pruned = _remove(merged, last, t)
    pruned_set = _ensure_named(_map_fields(pruned, t, None), t)
    pruned = _remove(merged, _difference(merged_set, _union(pruned_set, managed)), t)
    pruned_set = _ensure_named(_map_fields(pruned, t, None), t)
    return _remove(merged, _intersection(_difference(merged_set, pruned_set), last), t)
