"""Kubernetes' own OpenAPI definitions, as the source of truth for what the models do not carry.

The official models know field names and types, but not how a list merges
(``x-kubernetes-patch-merge-key``, ``x-kubernetes-patch-strategy``,
``x-kubernetes-list-type``, ``x-kubernetes-list-map-keys``) nor which
group/version/kind a definition belongs to. Those come from the definitions
that the ``kubernetes-validate`` package ships (a JSON Schema 2020-12 file with
``$defs`` and ``#/$defs/...`` references). Strategic merge patch, server-side
apply and the OpenAPI documents the APIServer serves all read them through
this module, so there is one loader and one cache.

CustomResourceDefinitions add their structural schemas at run time
(:func:`set_custom_definitions`), under the names Kubernetes publishes them
(``com.example.v1.Widget``), so that the same readers serve custom resources.
Caches built from definitions register with :func:`on_change` and are dropped
when that set changes.

Everything here is read-only between changes; the caches are per process, and
changes happen on the APIServer's event loop in one synchronous step.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping
from importlib import resources
from typing import Any, Final

#: The Kubernetes minor whose definitions kubesim follows (and reports in /version).
KUBERNETES_VERSION: Final = "v1.32.0"

_REF_PREFIX: Final = "#/$defs/"

Schema = dict[str, Any]


@functools.cache
def builtin_definitions() -> dict[str, Schema]:
    """Kubernetes' own definitions, keyed by name (``io.k8s.api.core.v1.Pod``)."""
    root = resources.files("kubernetes_validate") / "kubernetes-json-schema"
    path = root / f"{KUBERNETES_VERSION}-local" / "_definitions.json"
    with path.open("rb") as f:
        data: dict[str, Any] = json.load(f)
    defs: dict[str, Schema] = data["$defs"]
    return defs


_custom: dict[str, Schema] = {}
_merged: dict[str, Schema] | None = None
_listeners: list[Callable[[], None]] = []


def definitions() -> dict[str, Schema]:
    """Every definition, keyed by its name: Kubernetes' own, then the custom resources' (read only)."""
    global _merged
    if _merged is None:
        _merged = {**builtin_definitions(), **_custom} if _custom else builtin_definitions()
    return _merged


def set_custom_definitions(owner: str, defs: Mapping[str, Schema]) -> None:
    """Replace the definitions ``owner`` (a CustomResourceDefinition's name) contributes; ``{}`` removes them.

    Every cache registered with :func:`on_change` is dropped, so nothing keeps
    reading a schema that changed.
    """
    global _merged
    for name in [n for n, o in _owners.items() if o == owner]:
        del _owners[name]
        _custom.pop(name, None)
    for name, value in defs.items():
        if name in builtin_definitions():
            raise ValueError(f"{name} is a built-in definition")
        _custom[name] = value
        _owners[name] = owner
    _merged = None
    for listener in _listeners:
        listener()


_owners: dict[str, str] = {}


def is_custom(name: str) -> bool:
    """Whether ``name`` is a custom resource's structural schema (not one of Kubernetes' definitions)."""
    return name in _custom


def on_change(listener: Callable[[], None]) -> None:
    """Call ``listener`` whenever the custom definitions change (to drop a cache built from them)."""
    _listeners.append(listener)


def ref_name(schema: Schema) -> str | None:
    """The definition name a ``{"$ref": "#/$defs/X"}`` schema points at, if it is one."""
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith(_REF_PREFIX):
        return ref[len(_REF_PREFIX):]
    return None


def resolve(schema: Schema | None) -> Schema:
    """Follow ``$ref`` (also inside a one-element ``allOf``) to the schema it names.

    Returns ``{}`` for ``None`` or an unknown reference: callers treat an empty
    schema as "no merge information", which makes patches fall back to
    replacing, as Kubernetes does for unknown fields.
    """
    seen = 0
    while schema:
        name = ref_name(schema)
        if name is None:
            all_of = schema.get("allOf")
            if isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], dict):
                schema = all_of[0]
                continue
            return schema
        seen += 1
        if seen > 32:  # a reference cycle would be a bug in the definitions
            raise ValueError(f"reference loop at {name}")
        schema = definitions().get(name)
    return {}


def definition(name: str) -> Schema:
    """One definition by name; ``{}`` when unknown."""
    return definitions().get(name, {})


def property_schema(schema: Schema | None, prop: str) -> Schema:
    """The resolved schema of one property of an object schema (``{}`` when not declared)."""
    props = resolve(schema).get("properties") or {}
    sub = props.get(prop)
    if sub is None:
        return {}
    # Keep the extensions written beside a $ref (patch strategy, list type): they
    # describe the field, not the referenced type, so they win over it.
    resolved = dict(resolve(sub))
    for k, v in sub.items():
        if k.startswith("x-kubernetes-"):
            resolved[k] = v
    return resolved


def items_schema(schema: Schema | None) -> Schema:
    """The resolved schema of the elements of an array schema."""
    return resolve(resolve(schema).get("items"))


def additional_schema(schema: Schema | None) -> Schema:
    """The resolved schema of the values of a map (``additionalProperties``)."""
    extra = resolve(schema).get("additionalProperties")
    return resolve(extra) if isinstance(extra, dict) else {}


def schema_types(schema: Schema | None) -> set[str]:
    """The JSON types a schema allows, without ``null`` (``{"object"}``, ``{"array"}``...)."""
    t = resolve(schema).get("type")
    if isinstance(t, str):
        return {t} - {"null"}
    if isinstance(t, list):
        return {x for x in t if x != "null"}
    return set()


@functools.cache
def definition_for_gvk(group: str, version: str, kind: str) -> str | None:
    """The definition name that carries this group/version/kind, if any."""
    for name, schema in definitions().items():
        for gvk in schema.get("x-kubernetes-group-version-kind", ()):
            if gvk.get("group", "") == group and gvk.get("version") == version and gvk.get("kind") == kind:
                return name
    return None


on_change(definition_for_gvk.cache_clear)
