"""Field selectors (``?fieldSelector=spec.nodeName=node-1``) as Kubernetes parses and matches them.

This mirrors ``k8s.io/apimachinery/pkg/fields``. The grammar is much smaller
than the label one: comma-separated ``field=value``, ``field==value`` or
``field!=value`` terms, ANDed, where a value escapes ``\\``, ``,`` and ``=``
with a backslash. Nothing is trimmed: ``a = b`` compares field ``"a "`` with
``" b"``, as in Kubernetes. Which fields a resource supports is the
APIServer's business (``field label not supported: ...``), not this module's.

A missing field reads as the empty string, so ``status.podIP=`` matches Pods
without an IP and ``spec.nodeName!=node-1`` matches unscheduled Pods.

Selectors are immutable and free of I/O; share them freely.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from machinery.api.labels import Operator, SelectorError

# Tried in this order at each position, so "!=" and "==" win over "=".
_TERM_OPERATORS: Final = (("!=", Operator.NOT_EQUALS), ("==", Operator.DOUBLE_EQUALS), ("=", Operator.EQUALS))
_ESCAPABLE: Final = frozenset("\\,=")


@dataclass(frozen=True, slots=True)
class FieldRequirement:
    """One term: ``operator`` is :attr:`Operator.EQUALS` (for ``=`` and ``==``) or :attr:`Operator.NOT_EQUALS`."""

    field: str
    operator: Operator
    value: str

    def __str__(self) -> str:
        symbol = "!=" if self.operator is Operator.NOT_EQUALS else "="
        return f"{self.field}{symbol}{escape_value(self.value)}"


class FieldSelector:
    """A parsed field selector.

    >>> sel = FieldSelector.parse("status.phase!=Failed,spec.nodeName=node-1")
    >>> str(sel)
    'spec.nodeName=node-1,status.phase!=Failed'
    >>> sel.matches({"spec.nodeName": "node-1", "status.phase": "Running"})
    True
    """

    __slots__ = ("_requirements", "_tests")

    def __init__(self, requirements: tuple[FieldRequirement, ...] = ()) -> None:
        self._requirements = requirements
        self._tests = tuple((r.field, r.operator is Operator.EQUALS, r.value) for r in requirements)

    @classmethod
    def everything(cls) -> FieldSelector:
        """Matches every object; also what parsing ``""`` gives."""
        return _EVERYTHING

    @classmethod
    def parse(cls, text: str) -> FieldSelector:
        """``fields.ParseSelector``; raises :class:`SelectorError` with Kubernetes' message."""
        reqs: list[FieldRequirement] = []
        # Kubernetes sorts the raw terms, so the canonical order is that of the
        # terms as written (escapes included), not of the field names alone.
        for term in sorted(_split_terms(text)):
            if not term:
                continue
            split = _split_term(term)
            if split is None:
                raise SelectorError(f"invalid selector: '{text}'; can't understand '{term}'")
            field, operator, raw = split
            value = unescape_value(raw)
            if not field and not value:
                # Kubernetes drops a term with neither field nor value ("=") as selecting everything.
                continue
            reqs.append(FieldRequirement(
                field, Operator.NOT_EQUALS if operator is Operator.NOT_EQUALS else Operator.EQUALS, value))
        return cls(tuple(reqs)) if reqs else _EVERYTHING

    @property
    def requirements(self) -> tuple[FieldRequirement, ...]:
        return self._requirements

    def empty(self) -> bool:
        return not self._requirements

    def matches(self, fields: Mapping[str, str]) -> bool:
        """Whether every term holds; a field missing from ``fields`` reads as ``""``."""
        for field, equal, value in self._tests:
            if (fields.get(field, "") == value) is not equal:
                return False
        return True

    def requires_exact_match(self, field: str) -> str | None:
        """The value an ``=`` term demands of this field, if there is one (``RequiresExactMatch``).

        The APIServer uses it to serve ``spec.nodeName=<node>`` from an index.
        """
        for r in self._requirements:
            if r.field == field and r.operator is Operator.EQUALS:
                return r.value
        return None

    def __str__(self) -> str:
        return ",".join(str(r) for r in self._requirements)

    def __repr__(self) -> str:
        return f"FieldSelector.parse({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FieldSelector):
            return NotImplemented
        return self._requirements == other._requirements

    def __hash__(self) -> int:
        return hash(self._requirements)


_EVERYTHING: Final = FieldSelector()


def escape_value(value: str) -> str:
    """Escape ``\\``, ``,`` and ``=`` so that a value survives inside a field selector."""
    return value.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")


def unescape_value(value: str) -> str:
    """The inverse of :func:`escape_value`; anything else after a backslash, or a bare ``,``/``=``, is an error."""
    if not any(ch in _ESCAPABLE for ch in value):
        return value
    out: list[str] = []
    escaped = False
    for ch in value:
        if escaped:
            if ch not in _ESCAPABLE:
                raise SelectorError(f"invalid field selector: invalid escape sequence: \\{ch}")
            out.append(ch)
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch in ",=":
            # Go prints the rune with %v, which shows its code point (61 for "="), not the character.
            raise SelectorError(f"invalid field selector: unescaped character in value: {ord(ch)}")
        else:
            out.append(ch)
    if escaped:
        raise SelectorError("invalid field selector: invalid escape sequence: \\")
    return "".join(out)


def _split_terms(text: str) -> list[str]:
    """Split on commas that no backslash escapes."""
    if not text:
        return []
    terms: list[str] = []
    start = 0
    escaped = False
    for i, ch in enumerate(text):
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == ",":
            terms.append(text[start:i])
            start = i + 1
    terms.append(text[start:])
    return terms


def _split_term(term: str) -> tuple[str, Operator, str] | None:
    """Cut a term at its first operator: ``(field, operator, raw value)``, or None without one."""
    for i in range(len(term)):
        for symbol, operator in _TERM_OPERATORS:
            if term.startswith(symbol, i):
                return term[:i], operator, term[i + len(symbol):]
    return None
