"""Kubernetes' own OpenAPI definitions, as the source of truth for what the models do not carry.

The official models know field names and types, but not how a list merges
(``x-kubernetes-patch-merge-key``, ``x-kubernetes-patch-strategy``,
``x-kubernetes-list-type``, ``x-kubernetes-list-map-keys``) nor which
group/version/kind a definition belongs to. Those come from the definitions
that the ``kubernetes-validate`` package ships (a JSON Schema 2020-12 file with
``$defs`` and ``#/$defs/...`` references). Strategic merge patch, server-side
apply and the OpenAPI documents the APIServer serves all read them through
this module, so there is one loader and one cache.

Everything here is read-only after the first load; the cache is per process.
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Any, Final

#: The Kubernetes minor whose definitions kubesim follows (and reports in /version).
KUBERNETES_VERSION: Final = "v1.32.0"

_REF_PREFIX: Final = "#/$defs/"

Schema = dict[str, Any]


@functools.cache
def definitions() -> dict[str, Schema]:
    """Every definition, keyed by its name (``io.k8s.api.core.v1.Pod``)."""
    root = resources.files("kubernetes_validate") / "kubernetes-json-schema"
    path = root / f"{KUBERNETES_VERSION}-local" / "_definitions.json"
    with path.open("rb") as f:
        data: dict[str, Any] = json.load(f)
    defs: dict[str, Schema] = data["$defs"]
    return defs


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
