"""The JSONPath that CustomResourceDefinitions use: printer columns, selectable fields, scale paths.

``additionalPrinterColumns[].jsonPath`` is evaluated by Kubernetes' JSONPath
(``k8s.io/client-go/util/jsonpath``) on each object; ``selectableFields`` and
the scale subresource's ``specReplicasPath`` are simple field paths
(``.spec.replicas``). This module parses the subset CRDs use in practice:
fields (``.a.b``, ``['a-b']``), indices (``[0]``, ``[-1]``), the wildcard
``[*]`` and filters on a field (``[?(@.type=="Ready")]``). Anything else is a
:class:`JSONPathError`, which the CRD's validation reports.

Pure functions; parsed paths are cached.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from typing import Any, Final

_FIELD: Final = re.compile(r"\.([A-Za-z0-9_$\-]+)")
_QUOTED: Final = re.compile(r"\[\s*'([^']*)'\s*\]|\[\s*\"([^\"]*)\"\s*\]")
_INDEX: Final = re.compile(r"\[\s*(-?\d+)\s*\]")
_WILDCARD: Final = re.compile(r"\[\s*\*\s*\]|\.\*")
_FILTER: Final = re.compile(
    r"\[\s*\?\(\s*@((?:\.[A-Za-z0-9_\-]+)+)\s*(==|!=)\s*(?:\"([^\"]*)\"|'([^']*)'|(-?\d+(?:\.\d+)?)|(true|false))\s*\)\s*\]")

Step = tuple[str, Any]


class JSONPathError(ValueError):
    pass


@functools.lru_cache(maxsize=1024)
def parse(path: str) -> tuple[Step, ...]:
    """The steps of ``path`` (``.spec.replicas``, ``{.spec.replicas}``); raises :class:`JSONPathError`."""
    text = path.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1].strip()
    if not text.startswith(".") and not text.startswith("["):
        raise JSONPathError(f"unrecognized character in action: {text[:1]!r}" if text else "empty path")
    steps: list[Step] = []
    i = 0
    while i < len(text):
        for kind, pattern in (("wildcard", _WILDCARD), ("field", _FIELD), ("field", _QUOTED),
                              ("index", _INDEX), ("filter", _FILTER)):
            m = pattern.match(text, i)
            if m is None:
                continue
            if kind == "field":
                steps.append(("field", next(g for g in m.groups() if g is not None)))
            elif kind == "index":
                steps.append(("index", int(m.group(1))))
            elif kind == "wildcard":
                steps.append(("wildcard", None))
            else:
                fields = tuple(m.group(1).split(".")[1:])
                if m.group(3) is not None or m.group(4) is not None:
                    value: Any = m.group(3) if m.group(3) is not None else m.group(4)
                elif m.group(5) is not None:
                    value = float(m.group(5)) if "." in m.group(5) else int(m.group(5))
                else:
                    value = m.group(6) == "true"
                steps.append(("filter", (fields, m.group(2), value)))
            i = m.end()
            break
        else:
            raise JSONPathError(f"unrecognized character in action: {text[i:i + 10]!r}")
    return tuple(steps)


def _apply(values: Iterator[Any], step: Step) -> Iterator[Any]:
    kind, arg = step
    for value in values:
        if kind == "field":
            if isinstance(value, dict) and arg in value:
                yield value[arg]
        elif kind == "index":
            if isinstance(value, list) and -len(value) <= arg < len(value):
                yield value[arg]
        elif kind == "wildcard":
            if isinstance(value, list):
                yield from value
            elif isinstance(value, dict):
                yield from value.values()
        elif isinstance(value, list):
            fields, op, want = arg
            for item in value:
                cur: Any = item
                for f in fields:
                    cur = cur.get(f) if isinstance(cur, dict) else None
                if (cur == want) == (op == "=="):
                    yield item


def find(obj: Any, path: str) -> list[Any]:
    """Every value ``path`` selects in ``obj`` (empty when none)."""
    values: Iterator[Any] = iter([obj])
    for step in parse(path):
        values = _apply(values, step)
    return list(values)


def simple_fields(path: str) -> tuple[str, ...]:
    """The field names of a path made only of fields (``.spec.replicas``); raises otherwise."""
    steps = parse(path)
    if not steps or any(kind != "field" for kind, _ in steps):
        raise JSONPathError("must be a simple json path of fields")
    return tuple(arg for _, arg in steps)
