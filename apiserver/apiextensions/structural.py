"""Whether an ``openAPIV3Schema`` is structural, and its extensions are where Kubernetes allows them.

apiextensions.k8s.io/v1 only takes structural schemas: every field typed (or
``x-kubernetes-int-or-string``, or ``x-kubernetes-preserve-unknown-fields``),
arrays with ``items``, no ``$ref``, no ``additionalProperties`` beside
``properties``, logical junctors (``allOf``, ``anyOf``, ``oneOf``, ``not``)
holding value validations only, ``metadata`` at the root restricted to
``name`` and ``generateName``, and the ``x-kubernetes-*`` extensions used
where they mean something. :func:`check` walks a schema once and returns every
violation as a field error under the schema's path
(``spec.versions[0].schema.openAPIV3Schema.properties[spec].type``), worded
as Kubernetes words them.

The walk is iterative over the schema's nesting (an explicit stack), so a
deeply nested schema cannot exhaust Python's recursion, and linear in its
size. Pure.
"""

from __future__ import annotations

import re
from typing import Any, Final

from apiserver.validation.field import FieldError

_TYPES: Final = ("array", "boolean", "integer", "number", "object", "string")
_JUNCTORS: Final = ("allOf", "anyOf", "oneOf")
#: What a node inside a logical junctor may not say (it would not be structural).
_NOT_IN_JUNCTORS: Final = ("type", "additionalProperties", "default", "nullable", "description", "title",
                           "x-kubernetes-preserve-unknown-fields", "x-kubernetes-embedded-resource",
                           "x-kubernetes-list-type", "x-kubernetes-list-map-keys", "x-kubernetes-map-type")
#: The deepest nesting kubesim takes (Kubernetes sets none; its request size bounds it).
MAX_DEPTH: Final = 512


def check(schema: Any, path: str) -> list[FieldError]:
    """Every reason ``schema`` (an ``openAPIV3Schema``) is not a structural schema kubesim can serve."""
    errs: list[FieldError] = []
    if not isinstance(schema, dict):
        return [FieldError.required(path, "schemas are required")]
    root_type = schema.get("type")
    if not root_type:
        errs.append(FieldError.required(f"{path}.type", "must not be empty at the root"))
    elif root_type != "object":
        errs.append(FieldError.invalid(f"{path}.type", root_type, "must be object at the root"))
    meta = (schema.get("properties") or {}).get("metadata") if isinstance(schema.get("properties"), dict) else None
    if isinstance(meta, dict):
        meta_path = f"{path}.properties[metadata]"
        if meta.get("type") not in (None, "object"):
            errs.append(FieldError.invalid(f"{meta_path}.type", meta.get("type"), "must be object"))
        extra_keys = set(meta) - {"type", "properties", "description"}
        props = meta.get("properties") or {}
        if extra_keys or (isinstance(props, dict) and set(props) - {"name", "generateName"}):
            errs.append(FieldError.forbidden(meta_path, "must not specify anything other than name and "
                                             "generateName, but metadata is implicitly specified"))
    # (node, path, why it must be typed: "" for the root, depth, inside a junctor)
    stack: list[tuple[Any, str, str, int, bool]] = [(schema, path, "", 0, False)]
    while stack:
        node, where, role, depth, in_junctor = stack.pop()
        if not isinstance(node, dict):
            errs.append(FieldError.invalid(where, node, "must be a schema object"))
            continue
        if depth > MAX_DEPTH:
            errs.append(FieldError.forbidden(where, f"must not be nested more than {MAX_DEPTH} levels deep"))
            continue
        _check_node(node, where, role, in_junctor, errs)
        props = node.get("properties")
        if isinstance(props, dict):
            for name, sub in props.items():
                stack.append((sub, f"{where}.properties[{name}]", "object fields", depth + 1, in_junctor))
        items = node.get("items")
        if isinstance(items, dict):
            stack.append((items, f"{where}.items", "array items", depth + 1, in_junctor))
        elif isinstance(items, list):
            errs.append(FieldError.forbidden(f"{where}.items", "items must be a schema object and not an array"))
        extra = node.get("additionalProperties")
        if isinstance(extra, dict):
            stack.append((extra, f"{where}.additionalProperties", "object fields", depth + 1, in_junctor))
        for key in _JUNCTORS:
            branches = node.get(key)
            if isinstance(branches, list):
                for i, sub in enumerate(branches):
                    stack.append((sub, f"{where}.{key}[{i}]", "", depth + 1, True))
        if isinstance(node.get("not"), dict):
            stack.append((node["not"], f"{where}.not", "", depth + 1, True))
    return errs


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _check_node(node: dict[str, Any], where: str, role: str, in_junctor: bool, errs: list[FieldError]) -> None:
    t = node.get("type")
    int_or_string = node.get("x-kubernetes-int-or-string") is True
    preserve = node.get("x-kubernetes-preserve-unknown-fields")
    pattern = node.get("pattern")
    if isinstance(pattern, str):
        try:
            re.compile(pattern)
        except re.error as e:
            errs.append(FieldError.invalid(f"{where}.pattern", pattern,
                                           f"must be a valid regular expression, but isn't: {e}"))
    if "$ref" in node:
        errs.append(FieldError.forbidden(f"{where}.$ref", "$ref is not supported"))
    if in_junctor:
        for key in _NOT_IN_JUNCTORS:
            if key in node and not (key == "type" and int_or_string):
                errs.append(FieldError.forbidden(f"{where}.{key}", "must be empty to be structural"))
        return
    if t is not None and t not in _TYPES:
        errs.append(FieldError.not_supported(f"{where}.type", t, _TYPES))
    if role and not t and not int_or_string and preserve is not True:
        errs.append(FieldError.required(f"{where}.type", f"must not be empty for specified {role}"))
    if int_or_string and t:
        errs.append(FieldError.invalid(f"{where}.type", t, "must be empty to be structural"))
    if t == "array" and not isinstance(node.get("items"), dict):
        errs.append(FieldError.required(f"{where}.items", "must be specified"))
    if "additionalProperties" in node:
        extra = node["additionalProperties"]
        if extra is False:
            errs.append(FieldError.forbidden(f"{where}.additionalProperties",
                                             "additionalProperties cannot be set to false"))
        elif node.get("properties"):
            errs.append(FieldError.forbidden(f"{where}.additionalProperties",
                                             "additionalProperties and properties are mutual exclusive"))
    if node.get("uniqueItems") is True:
        errs.append(FieldError.forbidden(f"{where}.uniqueItems", "uniqueItems cannot be set to true since the "
                                         "runtime complexity becomes quadratic"))
    if preserve is not None and preserve is not True:
        errs.append(FieldError.invalid(f"{where}.x-kubernetes-preserve-unknown-fields", preserve,
                                       "must be true or undefined"))
    if node.get("x-kubernetes-embedded-resource") is True:
        if t != "object":
            errs.append(FieldError.invalid(f"{where}.type", t or "",
                                           "must be object if x-kubernetes-embedded-resource is true"))
        if not node.get("properties") and preserve is not True:
            errs.append(FieldError.required(f"{where}.properties", "must not be empty if "
                                            "x-kubernetes-embedded-resource is true without "
                                            "x-kubernetes-preserve-unknown-fields"))
    list_type = node.get("x-kubernetes-list-type")
    keys = node.get("x-kubernetes-list-map-keys")
    if list_type is not None:
        if t != "array":
            errs.append(FieldError.invalid(f"{where}.x-kubernetes-list-type", list_type,
                                           "must only be used if type is array"))
        elif list_type not in ("atomic", "set", "map"):
            errs.append(FieldError.not_supported(f"{where}.x-kubernetes-list-type", list_type,
                                                 ("atomic", "set", "map")))
    if list_type == "map":
        items = _obj(node.get("items"))
        if not keys:
            errs.append(FieldError.required(f"{where}.x-kubernetes-list-map-keys",
                                            "must not be empty if x-kubernetes-list-type is map"))
        elif items.get("type") != "object":
            errs.append(FieldError.invalid(f"{where}.items.type", items.get("type") or "",
                                           "must be object if parent array's x-kubernetes-list-type is map"))
        else:
            item_props = items.get("properties") or {}
            required = items.get("required") or []
            for i, key in enumerate(keys):
                prop = item_props.get(key) if isinstance(item_props, dict) else None
                if not isinstance(prop, dict):
                    errs.append(FieldError.invalid(f"{where}.x-kubernetes-list-map-keys[{i}]", key,
                                                   "entries must all be names of item properties"))
                elif key not in required and "default" not in prop:
                    errs.append(FieldError.required(f"{where}.items.properties[{key}]",
                                                    "must be required or have a default value"))
                elif prop.get("type") not in ("string", "integer", "number", "boolean"):
                    errs.append(FieldError.invalid(f"{where}.items.properties[{key}].type", prop.get("type"),
                                                   "must be a scalar type if parent array's "
                                                   "x-kubernetes-list-type is map"))
    elif keys:
        errs.append(FieldError.forbidden(f"{where}.x-kubernetes-list-map-keys",
                                         "must be empty if x-kubernetes-list-type is not map"))
    if list_type == "set":
        items = _obj(node.get("items"))
        if items.get("type") not in ("string", "integer", "number", "boolean") and \
                not items.get("x-kubernetes-int-or-string"):
            errs.append(FieldError.invalid(f"{where}.items.type", items.get("type") or "",
                                           "must be a scalar type if parent array's x-kubernetes-list-type "
                                           "is set"))
    map_type = node.get("x-kubernetes-map-type")
    if map_type is not None and map_type not in ("granular", "atomic"):
        errs.append(FieldError.not_supported(f"{where}.x-kubernetes-map-type", map_type, ("granular", "atomic")))
