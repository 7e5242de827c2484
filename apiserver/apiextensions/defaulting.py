"""Defaulting custom objects from their structural schema's ``default`` values.

As kube-apiextensions-apiserver does on create, update and read: a property
absent from an object gets a copy of its schema's ``default`` (in objects,
map values and list items, deepest first so that a defaulted object gets its
own fields' defaults), and a ``null`` where the schema is not ``nullable``
becomes the default, or disappears when there is none (a structural schema
never stores such a null).

A schema is compiled once into a walker that only visits the parts of the
schema that have defaults or declared properties; a schema with neither
compiles to ``None`` and costs nothing.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

Defaulter = Callable[[Any], None]


def compile_defaulter(node: dict[str, Any]) -> Defaulter | None:
    """A function defaulting values of ``node`` in place, or None when nothing would ever change."""
    props = node.get("properties")
    fields: list[tuple[str, Any, bool, bool, Defaulter | None]] = []
    if isinstance(props, dict):
        for name, sub in props.items():
            if not isinstance(sub, dict):
                continue
            inner = compile_defaulter(sub)
            fields.append((name, sub.get("default"), "default" in sub, bool(sub.get("nullable")), inner))
    extra = node.get("additionalProperties")
    values = compile_defaulter(extra) if isinstance(extra, dict) else None
    items_node = node.get("items")
    items = compile_defaulter(items_node) if isinstance(items_node, dict) else None
    if not fields and values is None and items is None:
        return None

    def apply(value: Any) -> None:
        if isinstance(value, dict):
            for name, default, has_default, nullable, inner in fields:
                if name in value:
                    current = value[name]
                    if current is None and not nullable:
                        if has_default:
                            value[name] = copy.deepcopy(default)
                            if inner is not None:
                                inner(value[name])
                        else:
                            del value[name]
                    elif inner is not None and current is not None:
                        inner(current)
                elif has_default:
                    value[name] = copy.deepcopy(default)
                    if inner is not None:
                        inner(value[name])
            if values is not None:
                for sub in value.values():
                    if sub is not None:
                        values(sub)
        elif isinstance(value, list) and items is not None:
            for sub in value:
                if sub is not None:
                    items(sub)
    return apply


def has_defaults(node: Any) -> bool:
    """Whether any ``default`` appears anywhere in a schema."""
    if not isinstance(node, dict):
        return False
    if "default" in node:
        return True
    props = node.get("properties")
    if isinstance(props, dict) and any(has_defaults(p) for p in props.values()):
        return True
    return has_defaults(node.get("items")) or has_defaults(node.get("additionalProperties"))
