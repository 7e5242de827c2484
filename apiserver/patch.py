"""The three patch formats of the PATCH verb: JSON Patch, JSON merge patch and strategic merge patch.

Kubernetes accepts ``application/json-patch+json`` (RFC 6902),
``application/merge-patch+json`` (RFC 7386) and
``application/strategic-merge-patch+json``. The last one is Kubernetes' own: it
knows, from the API definitions, that ``spec.containers`` is a list merged by
``name`` while ``spec.tolerations`` is replaced whole, and it understands the
directives (``$patch``, ``$setElementOrder/<field>``, ``$retainKeys``,
``$deleteFromPrimitiveList/<field>``) that ``kubectl apply`` and ``kubectl
patch`` send. This module follows apimachinery's ``strategicpatch`` package
(and evanphx/json-patch for the other two), so a patch gives here the object it
gives on a real cluster.

:class:`MergeType` is the merge information of one position in a type (patch
strategy and merge key for strategic merge patch; list type, list-map keys and
map type for server-side apply, see :mod:`apiserver.managedfields`), compiled
lazily from Kubernetes' OpenAPI definitions and memoized, so walking an object
costs dictionary lookups rather than schema resolution.

A patch that cannot apply raises :class:`PatchError` with the status
kube-apiserver answers: ``400 BadRequest`` for a patch of the wrong shape and
for the strategic-merge formats apimachinery names (primitive list,
``$retainKeys``, ``$setElementOrder``); ``422 Invalid`` for a JSON Patch
operation that does not apply, a merge patch that would make the object an
array, and lists of lists; ``413`` beyond 10000 JSON Patch operations. Where
kube-apiserver lets a raw error through as a ``500`` (an unknown ``$patch``, a
missing merge key, an out-of-order ``$setElementOrder``), the fault is the
client's and kubesim answers ``400 BadRequest``. Messages name the field and
say what is wrong, where Kubernetes' are sometimes generic.

Everything here is pure and synchronous. The functions never mutate their
arguments: they work on a private copy and return an object that shares nothing
with the document or the patch, so callers may mutate the result. The memo
tables of :class:`MergeType` are filled on first use; two threads racing on one
entry only compute the same value twice.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable, Iterable
from typing import Any, Final

import orjson

from machinery.api import schema

#: A JSON value as orjson parses it.
JSON = Any
JSONObject = dict[str, Any]

#: kube-apiserver refuses JSON patches longer than this (``maxJSONPatchOperations``).
MAX_JSON_PATCH_OPERATIONS: Final = 10000

_DIRECTIVE: Final = "$patch"
_RETAIN_KEYS: Final = "$retainKeys"
_SET_ELEMENT_ORDER: Final = "$setElementOrder"
_DELETE_FROM_PRIMITIVE_LIST: Final = "$deleteFromPrimitiveList"
_DIRECTIVE_PREFIXES: Final = (_SET_ELEMENT_ORDER, _DELETE_FROM_PRIMITIVE_LIST)
#: What :func:`_clean` returns for a value that a directive removes.
_GONE: Final = object()
#: A list element without the merge key (it matches no other element).
_NO_KEY: Final = object()


class PatchError(Exception):
    """A patch (or apply request) the APIServer must refuse.

    ``code`` is the HTTP status to answer with, ``reason`` the ``Status.reason``
    (``BadRequest``, ``Invalid``, ``RequestEntityTooLarge``...) and ``message``
    the ``Status.message``.
    """

    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message


def bad_request(message: str) -> PatchError:
    return PatchError(400, "BadRequest", message)


def invalid(message: str) -> PatchError:
    return PatchError(422, "Invalid", message)


def copy_json(value: JSON) -> JSON:
    """A deep copy of JSON data (through orjson, several times faster than ``copy.deepcopy``)."""
    try:
        return orjson.loads(orjson.dumps(value))
    except TypeError as e:  # an integer beyond 64 bits, or a value that is not JSON
        raise bad_request(f"the document is not valid JSON: {e}") from None


def _json_kind(value: JSON) -> str:
    """The JSON type name of a value, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


# --------------------------------------------------------------------------- merge information


class MergeType:
    """How values at one position of a Kubernetes type merge, read from the OpenAPI definitions.

    A position without schema (an unknown field, an untyped object) is
    :data:`_DEDUCED`: its maps merge key by key and its lists are atomic, as
    structured-merge-diff's "deduced" type and a JSON merge patch do.
    """

    __slots__ = (
        "_fields", "_item", "_properties", "_schema", "_values",
        "atomic", "definition", "list_type", "map_keys", "merge_key", "required", "strategies",
    )

    def __init__(self, resolved: schema.Schema, definition: str | None = None) -> None:
        #: The definition name this position refers to (``io.k8s.api.core.v1.ContainerPort``), if any.
        self.definition = definition
        strategy = resolved.get("x-kubernetes-patch-strategy")
        #: ``x-kubernetes-patch-strategy`` split on commas: ``merge``, ``replace``, ``retainKeys``.
        self.strategies: frozenset[str] = (
            frozenset(strategy.split(",")) if isinstance(strategy, str) else frozenset()
        )
        merge_key = resolved.get("x-kubernetes-patch-merge-key")
        self.merge_key: str | None = merge_key if isinstance(merge_key, str) else None
        list_type = resolved.get("x-kubernetes-list-type")
        #: ``set`` or ``map`` for associative lists; ``None`` for atomic (the default).
        self.list_type: str | None = list_type if list_type in ("set", "map") else None
        keys = resolved.get("x-kubernetes-list-map-keys")
        #: The list-map keys, sorted by name as structured-merge-diff orders them.
        self.map_keys: tuple[str, ...] = tuple(sorted(k for k in keys if isinstance(k, str))) if (
            isinstance(keys, list)) else ()
        self.atomic: bool = resolved.get("x-kubernetes-map-type") == "atomic"
        required = resolved.get("required")
        #: Required properties: Kubernetes' Go types hold them without ``omitempty``, so an object
        #: always has them, if only as ``null``.
        self.required: frozenset[str] = frozenset(
            r for r in required if isinstance(r, str)) if isinstance(required, list) else frozenset()
        self._schema = resolved
        props = resolved.get("properties")
        self._properties: dict[str, Any] = props if isinstance(props, dict) else {}
        self._fields: dict[str, MergeType] = {}
        self._values: MergeType | None = None
        self._item: MergeType | None = None

    @property
    def is_struct(self) -> bool:
        """Whether this is a struct (declared properties) rather than a map or a scalar."""
        return bool(self._properties)

    def declares(self, name: str) -> bool:
        """Whether ``name`` is a declared property (as opposed to a key of a map)."""
        return name in self._properties

    def field(self, name: str) -> MergeType:
        """The type of property ``name``, of the values of a map, or :data:`_DEDUCED`."""
        if name in self._properties:
            found = self._fields.get(name)
            if found is None:
                found = _compile(self._properties[name], schema.property_schema(self._schema, name))
                self._fields[name] = found
            return found
        if self._values is None:
            extra = self._schema.get("additionalProperties")
            self._values = (
                _compile(extra, schema.additional_schema(self._schema)) if isinstance(extra, dict)
                else _DEDUCED
            )
        return self._values

    @property
    def item(self) -> MergeType:
        """The type of the elements of a list."""
        if self._item is None:
            raw = self._schema.get("items")
            self._item = _compile(raw, schema.items_schema(self._schema)) if isinstance(raw, dict) else _DEDUCED
        return self._item


def _compile(raw: schema.Schema, resolved: schema.Schema) -> MergeType:
    if not resolved:
        return _DEDUCED
    return MergeType(resolved, schema.ref_name(raw))


#: The type of values without schema.
_DEDUCED: Final = MergeType({})


@functools.cache
def merge_type(definition: str) -> MergeType:
    """The merge information of a whole object (``io.k8s.api.core.v1.Pod``); :data:`_DEDUCED` when unknown."""
    return _compile({"$ref": f"#/$defs/{definition}"}, schema.definition(definition))


# A CustomResourceDefinition's schema can change under the same definition name.
schema.on_change(merge_type.cache_clear)


# --------------------------------------------------------------------------- JSON Patch (RFC 6902)


def apply_json_patch(doc: JSONObject, patch: object) -> JSONObject:
    """Apply an RFC 6902 JSON Patch (``add``, ``remove``, ``replace``, ``move``, ``copy``, ``test``).

    Paths are JSON pointers (RFC 6901, ``~1`` for ``/`` and ``~0`` for ``~``);
    ``-`` appends to an array. A patch that is not an array of operation
    objects is ``400 BadRequest``; an operation that does not apply (a missing
    path, a failed ``test``) is ``422 Invalid``, as kube-apiserver answers.

    >>> apply_json_patch({"a": [1]}, [{"op": "add", "path": "/a/-", "value": 2}])
    {'a': [1, 2]}
    """
    if not isinstance(patch, list) or not all(isinstance(op, dict) for op in patch):
        raise bad_request(
            "a JSON patch must be a JSON array of operations, such as "
            '[{"op": "replace", "path": "/spec/replicas", "value": 3}]'
        )
    if len(patch) > MAX_JSON_PATCH_OPERATIONS:
        raise PatchError(
            413, "RequestEntityTooLarge",
            f"The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, got {len(patch)}",
        )
    result: JSON = copy_json(doc)
    for op in patch:
        result = _apply_operation(result, op)
    if not isinstance(result, dict):
        raise invalid(f"the patched document must be a JSON object, not {_json_kind(result)}")
    return result


def _apply_operation(doc: JSON, op: dict[str, Any]) -> JSON:
    kind = op.get("op")
    if kind == "add":
        return _add(doc, _pointer(op, "path"), copy_json(_value(op)), op["path"], "add")
    if kind == "remove":
        tokens = _pointer(op, "path")
        if not tokens:
            raise invalid("remove operation does not apply: the whole document cannot be removed")
        _remove(doc, tokens, op["path"])
        return doc
    if kind == "replace":
        tokens = _pointer(op, "path")
        value = copy_json(_value(op))
        if not tokens:
            return value
        parent, last = _parent(doc, tokens, op["path"], "replace")
        _child(parent, last, op["path"], "replace")
        parent[_index(parent, last, op["path"], "replace") if isinstance(parent, list) else last] = value
        return doc
    if kind == "move":
        source, tokens = _pointer(op, "from"), _pointer(op, "path")
        if tokens[:len(source)] == source and len(tokens) > len(source):
            raise invalid(f'move operation does not apply: "{op["path"]}" is inside "{op["from"]}"')
        if tokens == source:
            return doc
        return _add(doc, tokens, _remove(doc, source, op["from"]), op["path"], "move")
    if kind == "copy":
        value = copy_json(_get(doc, _pointer(op, "from"), op["from"], "copy"))
        return _add(doc, _pointer(op, "path"), value, op["path"], "copy")
    if kind == "test":
        actual = _get(doc, _pointer(op, "path"), op["path"], "test")
        if not _json_equal(actual, _value(op)):
            raise invalid(f"testing value {op['path']} failed")
        return doc
    raise invalid(f"Unexpected kind: {kind!r}: op must be add, remove, replace, move, copy or test")


def _value(op: dict[str, Any]) -> JSON:
    if "value" not in op:
        raise invalid(f"{op.get('op')} operation is missing its value field")
    return op["value"]


def _pointer(op: dict[str, Any], field: str) -> list[str]:
    raw = op.get(field)
    if not isinstance(raw, str):
        raise invalid(f"{op.get('op')} operation is missing its {field} field (a JSON pointer string)")
    if raw == "":
        return []
    if not raw.startswith("/"):
        raise invalid(f'invalid JSON pointer "{raw}": it must be empty or start with "/"')
    tokens = raw[1:].split("/")
    for token in tokens:
        rest = token.replace("~0", "").replace("~1", "")
        if "~" in rest:
            raise invalid(f'invalid JSON pointer "{raw}": "~" must be escaped as "~0"')
    return [t.replace("~1", "/").replace("~0", "~") for t in tokens]


def _index(array: list[Any], token: str, path: str, verb: str, *, end_ok: bool = False) -> int:
    if token.isdigit() and (token == "0" or not token.startswith("0")) and token.isascii():
        index = int(token)
        if index < len(array) or (end_ok and index == len(array)):
            return index
    raise invalid(f'{verb} operation does not apply: "{path}": invalid array index {token!r}')


def _child(node: JSON, token: str, path: str, verb: str) -> JSON:
    if isinstance(node, dict):
        if token in node:
            return node[token]
    elif isinstance(node, list):
        return node[_index(node, token, path, verb)]
    raise invalid(f'{verb} operation does not apply: doc is missing path: "{path}"')


def _get(doc: JSON, tokens: list[str], path: str, verb: str) -> JSON:
    node = doc
    for token in tokens:
        node = _child(node, token, path, verb)
    return node


def _parent(doc: JSON, tokens: list[str], path: str, verb: str) -> tuple[JSON, str]:
    parent = _get(doc, tokens[:-1], path, verb)
    if not isinstance(parent, (dict, list)):
        raise invalid(f'{verb} operation does not apply: doc is missing path: "{path}"')
    return parent, tokens[-1]


def _add(doc: JSON, tokens: list[str], value: JSON, path: str, verb: str) -> JSON:
    if not tokens:
        return value
    parent, last = _parent(doc, tokens, path, verb)
    if isinstance(parent, dict):
        parent[last] = value
    elif last == "-":
        parent.append(value)
    else:
        parent.insert(_index(parent, last, path, verb, end_ok=True), value)
    return doc


def _remove(doc: JSON, tokens: list[str], path: str) -> JSON:
    parent, last = _parent(doc, tokens, path, "remove")
    _child(parent, last, path, "remove")
    return parent.pop(_index(parent, last, path, "remove") if isinstance(parent, list) else last)


def _json_equal(a: JSON, b: JSON) -> bool:
    """JSON equality: unlike ``==``, ``true`` is not ``1``; numbers compare by value (``1`` is ``1.0``)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_json_equal(v, b[k]) for k, v in a.items())
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(_json_equal, a, b))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    return type(a) is type(b) and bool(a == b)


# --------------------------------------------------------------------------- JSON merge patch (RFC 7386)


def apply_merge_patch(doc: JSONObject, patch: object) -> JSONObject:
    """Apply an RFC 7386 JSON merge patch: objects merge key by key, ``null`` deletes, anything else replaces.

    >>> apply_merge_patch({"a": {"b": 1, "c": 2}}, {"a": {"b": None, "d": [3]}})
    {'a': {'c': 2, 'd': [3]}}
    """
    if isinstance(patch, list):
        # kube-apiserver merges the array in (RFC 7386 replaces the document) and then fails to
        # decode an array into an object: 422.
        raise invalid("a JSON merge patch must be a JSON object; an array would replace the whole object")
    if not isinstance(patch, dict):
        raise bad_request(f"a JSON merge patch must be a JSON object, not {_json_kind(patch)}")
    merged: JSONObject = _merge_patch(copy_json(doc), patch)
    return merged


def _merge_patch(target: JSON, patch: JSON) -> JSON:
    if not isinstance(patch, dict):
        return copy_json(patch) if isinstance(patch, list) else patch
    result = target if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = _merge_patch(result.get(key), value)
    return result


# --------------------------------------------------------------------------- strategic merge patch


def apply_strategic_merge_patch(doc: JSONObject, patch: object, definition: str) -> JSONObject:
    """Apply a Kubernetes strategic merge patch to an object of OpenAPI definition ``definition``.

    Lists whose field has ``x-kubernetes-patch-strategy: merge`` merge their
    elements by ``x-kubernetes-patch-merge-key`` (containers by ``name``, ports
    by ``containerPort``), or as sets for lists of scalars (finalizers); other
    lists are replaced; ``null`` deletes a key; fields without schema merge as
    in a JSON merge patch. Directives: ``$patch: replace|delete`` (in a map, or
    as a list element with ``merge`` refused as Kubernetes does),
    ``$setElementOrder/<list>``, ``$retainKeys`` and
    ``$deleteFromPrimitiveList/<list>``.

    >>> pod = {"spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}]}}
    >>> apply_strategic_merge_patch(pod, {"spec": {"containers": [{"name": "b", "image": "z"}]}},
    ...                             "io.k8s.api.core.v1.Pod")["spec"]["containers"]
    [{'name': 'a', 'image': 'x'}, {'name': 'b', 'image': 'z'}]
    """
    if not isinstance(patch, dict):
        raise bad_request(f"a strategic merge patch must be a JSON object, not {_json_kind(patch)}")
    return _smp_map(copy_json(doc), copy_json(patch), merge_type(definition), "")


def _smp_map(original: JSONObject, patch: JSONObject, t: MergeType, path: str) -> JSONObject:
    """Merge ``patch`` into ``original`` (both private copies, mutated freely)."""
    if _DIRECTIVE in patch:
        directive = patch.pop(_DIRECTIVE)
        if directive == "replace":
            return _clean_map(patch)
        if directive == "delete":
            return {}
        raise bad_request(
            f"unknown patch type {directive!r} in map at {path or '.'}: a map accepts "
            '"$patch": "replace" or "$patch": "delete"'
        )
    if _RETAIN_KEYS in patch:
        _retain_keys(original, patch, path)
    for key in [k for k in patch if k.startswith(_SET_ELEMENT_ORDER)]:
        _set_element_order(original, patch, key, t, path)
    for key, value in patch.items():
        if key.startswith(_DELETE_FROM_PRIMITIVE_LIST):
            name = _directive_target(key, _DELETE_FROM_PRIMITIVE_LIST, path)
            current = original.get(name)
            # Kubernetes ignores the deletion list when the field is absent or not a list.
            if isinstance(current, list) and isinstance(value, list):
                original[name] = _delete_from_list(current, value, f"{path}.{name}")
            continue
        if value is None:
            original.pop(key, None)
            continue
        current = original.get(key)
        sub = t.field(key)
        where = f"{path}.{key}"
        if isinstance(current, dict) and isinstance(value, dict) and "replace" not in sub.strategies:
            original[key] = _smp_map(current, value, sub, where)
        elif isinstance(current, list) and isinstance(value, list) and "merge" in sub.strategies:
            original[key] = _smp_list(current, value, sub, where)
        else:
            cleaned = _clean(value)
            if cleaned is _GONE:
                original.pop(key, None)
            else:
                original[key] = cleaned
    return original


def _directive_target(key: str, prefix: str, path: str) -> str:
    head, sep, name = key.partition("/")
    if head == prefix and sep:
        return name
    what = "primitive list" if prefix == _DELETE_FROM_PRIMITIVE_LIST else "setElementOrder list"
    raise bad_request(f'invalid patch format of {what}: "{key}" at {path or "."} must be "{prefix}/<field>"')


def _retain_keys(original: JSONObject, patch: JSONObject, path: str) -> None:
    keys = patch.pop(_RETAIN_KEYS)
    if not isinstance(keys, list):
        raise bad_request(f"invalid patch format of retainKeys at {path or '.'}: $retainKeys must be a list")
    retained = {k for k in keys if isinstance(k, str)}
    for key, value in patch.items():
        if value is None or key.startswith(_DIRECTIVE_PREFIXES):
            continue
        if key not in retained:
            raise bad_request(
                f'invalid patch format of retainKeys at {path or "."}: "{key}" is in the patch '
                "but not in $retainKeys"
            )
    for key in [k for k in original if k not in retained]:
        del original[key]


def _set_element_order(original: JSONObject, patch: JSONObject, key: str, t: MergeType, path: str) -> None:
    """``$setElementOrder/<field>``: merge that list now and order it as the directive says."""
    order = patch.pop(key)
    name = _directive_target(key, _SET_ELEMENT_ORDER, path)
    where = f"{path}.{name}"
    if not isinstance(order, list):
        raise bad_request(f"invalid patch format of setElementOrder list at {where}: it must be a list")
    sub = t.field(name)
    current, change = original.get(name), patch.pop(name, None)
    for value in (current, change):
        if value is not None and not isinstance(value, list):
            raise bad_request(f"{where}: expected a list, got {_json_kind(value)}")
    _check_order(change or [], order, sub.merge_key, where)
    if current is not None and change is not None and "merge" in sub.strategies:
        merged, _, _, merge_key = _merge_elements(current, change, sub, where)
        # Kubernetes orders against the live list as its Go slice reads once the merge has
        # edited it in place: deleted elements gone, the first new elements in their slots.
        server = merged[:len(current)] if merge_key else current
    elif change is not None:
        merged, server = _clean(change), current or []
    elif current is not None:
        merged, server = current, current
    else:
        return
    original[name] = _ordered(merged, order, server, _element_key(sub.merge_key))


def _check_order(change: list[Any], order: list[Any], merge_key: str | None, path: str) -> None:
    """The elements of the patch list must appear in the ``$setElementOrder`` list, in the same order."""
    if merge_key:
        change = [el for el in change if not (isinstance(el, dict) and _DIRECTIVE in el)]
        for el in [*change, *order]:
            if not (isinstance(el, dict) and merge_key in el):
                raise bad_request(f"{path}: {_show(el)} does not contain declared merge key: {merge_key}")
    if not change or not order:
        return
    key = _element_key(merge_key)
    position = 0
    for el in change:
        wanted = key(el)
        while position < len(order) and key(order[position]) != wanted:
            position += 1
        if position == len(order):
            raise bad_request(
                f"{path}: the order in the patch list {_show(change)} doesn't match "
                f"$setElementOrder list {_show(order)}"
            )
        position += 1


def _smp_list(original: list[Any], patch: list[Any], t: MergeType, path: str) -> list[Any]:
    """Merge a patch list into a list whose field has patch strategy ``merge``."""
    merged, change, base, merge_key = _merge_elements(original, patch, t, path)
    return _ordered(merged, change, base, _element_key(merge_key))


def _merge_elements(
    original: list[Any], patch: list[Any], t: MergeType, path: str,
) -> tuple[list[Any], list[Any], list[Any], str | None]:
    """Merge the elements of a patch list, before ordering.

    Returns the merged elements (the live ones in place, new ones at the end),
    the patch elements that order them, the live elements that remain, and the
    merge key (``None`` for a list of scalars).
    """
    if not original and not patch:
        return original, [], original, None
    if _element_type(original, patch, path) is not dict:
        return _dedupe([*original, *patch]), patch, original, None
    merge_key = t.merge_key
    if not merge_key:
        raise bad_request(f"{path}: cannot merge lists without merge key")
    base, change = _special_elements(original, patch, merge_key, path)
    return _merge_by_key(base, change, merge_key, t.item, path), change, base, merge_key


def _element_type(original: list[Any], patch: list[Any], path: str) -> type:
    types = {type(v) for v in original} | {type(v) for v in patch}
    if list in types:
        raise invalid(f"{path}: lists of lists are not supported")
    if len(types) != 1:
        raise bad_request(f"{path}: list element types are not identical: {_show(original)} and {_show(patch)}")
    return types.pop()


def _special_elements(
    original: list[Any], patch: list[Any], merge_key: str, path: str,
) -> tuple[list[Any], list[Any]]:
    """Apply ``$patch: delete`` and ``$patch: replace`` elements; return (base list, remaining patch)."""
    plain: list[Any] = []
    replace = False
    for el in patch:
        if _DIRECTIVE not in el:
            plain.append(el)
            continue
        directive = el[_DIRECTIVE]
        if directive == "delete":
            if merge_key not in el:
                raise bad_request(f"{path}: {_show(el)} does not contain declared merge key: {merge_key}")
            doomed = _hashable(el[merge_key])
            original = [o for o in original if not (isinstance(o, dict) and merge_key in o
                                                    and _hashable(o[merge_key]) == doomed)]
        elif directive == "replace":
            replace = True
        elif directive == "merge":
            raise bad_request(f"{path}: merging lists cannot yet be specified in the patch")
        else:
            raise bad_request(
                f'{path}: unknown patch type {directive!r} in list element {_show(el)}: a list element accepts '
                '"$patch": "delete" or "$patch": "replace"'
            )
    if replace:
        return [_clean_map(el) for el in plain], []
    return original, plain


def _merge_by_key(
    original: list[Any], patch: list[Any], merge_key: str, item: MergeType, path: str,
) -> list[Any]:
    # A new list: the caller still needs ``original`` as it was, to order server-only elements.
    merged = list(original)
    positions: dict[Hashable, int] = {}
    for i, el in enumerate(merged):
        if isinstance(el, dict) and merge_key in el:
            positions.setdefault(_hashable(el[merge_key]), i)
    for el in patch:
        if merge_key not in el:
            raise bad_request(f"{path}: {_show(el)} does not contain declared merge key: {merge_key}")
        key = _hashable(el[merge_key])
        found = positions.get(key)
        if found is None:
            positions[key] = len(merged)
            merged.append(_clean_map(el))
        else:
            merged[found] = _smp_map(merged[found], el, item, f"{path}[{merge_key}={_show(el[merge_key])}]")
    return merged


def _delete_from_list(current: list[Any], doomed: list[Any], path: str) -> list[Any]:
    if any(isinstance(v, (dict, list)) for v in doomed):
        raise bad_request(f"invalid patch format of primitive list at {path}: {_show(doomed)}")
    gone = {_hashable(v) for v in doomed}
    return [v for v in current if _hashable(v) not in gone]


def _ordered(
    merged: list[Any], patch_order: list[Any], server_order: list[Any], key: Callable[[Any], Hashable],
) -> list[Any]:
    """Order a merged list as Kubernetes does: patch elements in patch order, the others where they were.

    Elements named in ``patch_order`` come in that order; the server-only
    elements keep their relative order and are interleaved so that each sits
    before the first patch element it preceded in ``server_order``.
    """
    in_patch = _first_positions(patch_order, key)
    on_server = _first_positions(server_order, key)
    ours = sorted((el for el in merged if key(el) in in_patch), key=lambda el: in_patch[key(el)])
    theirs = sorted((el for el in merged if key(el) not in in_patch),
                    key=lambda el: on_server.get(key(el), len(on_server)))
    out: list[Any] = []
    i = j = 0
    while i < len(theirs) and j < len(ours):
        left, right = on_server.get(key(theirs[i])), on_server.get(key(ours[j]))
        if left is not None and right is not None and left < right:
            out.append(theirs[i])
            i += 1
        else:
            out.append(ours[j])
            j += 1
    out += theirs[i:]
    out += ours[j:]
    return out


def _first_positions(items: Iterable[Any], key: Callable[[Any], Hashable]) -> dict[Hashable, int]:
    positions: dict[Hashable, int] = {}
    for i, el in enumerate(items):
        positions.setdefault(key(el), i)
    return positions


def _element_key(merge_key: str | None) -> Callable[[Any], Hashable]:
    """What identifies a list element: its merge key's value, or the element itself for scalars."""
    if merge_key is None:
        return _hashable
    return lambda el: _hashable(el[merge_key]) if isinstance(el, dict) and merge_key in el else _NO_KEY


def _hashable(value: JSON) -> Hashable:
    # Tag booleans so that true and 1 stay different elements, as they are in Go.
    if isinstance(value, (dict, list)):
        return ("json", orjson.dumps(value, option=orjson.OPT_SORT_KEYS))
    return (value.__class__ is bool, value)


def _dedupe(values: list[Any]) -> list[Any]:
    seen: set[Hashable] = set()
    out = []
    for v in values:
        k = _hashable(v)
        if k not in seen:
            seen.add(k)
            out.append(v)
    return out


def _clean(value: JSON) -> JSON:
    """A patch value taken as it is, without ``null`` keys and directives; :data:`_GONE` if a directive drops it.

    Kubernetes stores such values raw and lets decoding into Go structs drop
    the ``null``s and unknown ``$`` keys; cleaning here gives the same object.
    A ``$patch: replace`` map keeps its content (Kubernetes drops the whole
    map when the field was absent, which no client means).
    """
    if isinstance(value, dict):
        if _DIRECTIVE in value and value[_DIRECTIVE] != "replace":
            return _GONE
        return _clean_map(value)
    if isinstance(value, list):
        # A list element carrying $patch is a marker (replace, delete), never an element.
        return [_clean(v) for v in value if not (isinstance(v, dict) and _DIRECTIVE in v)]
    return value


def _clean_map(value: JSONObject) -> JSONObject:
    out: JSONObject = {}
    for k, v in value.items():
        if v is None or k in (_DIRECTIVE, _RETAIN_KEYS) or k.startswith(_DIRECTIVE_PREFIXES):
            continue
        c = _clean(v)
        if c is not _GONE:
            out[k] = c
    return out


def _show(value: JSON) -> str:
    return orjson.dumps(value).decode()
