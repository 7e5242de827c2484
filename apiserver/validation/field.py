"""Field errors shaped and worded exactly as apimachinery's ``pkg/util/validation/field``.

Every validator in this package returns a list of :class:`FieldError`; the
APIServer turns the list into one ``422 Invalid`` Status whose message is
:func:`invalid_message` and whose ``details.causes`` are :meth:`FieldError.cause`.
kubectl prints those strings verbatim and clients match on the cause
``reason`` and ``field``, so the wording, the quoting of values and the way
several errors are joined all follow Kubernetes to the character.

Values are rendered as Kubernetes 1.34+ renders them: numbers and booleans
bare, strings Go-quoted, ``null`` for nothing, anything composite as Go's
``encoding/json`` would write it. (Kubernetes 1.32 printed composites with
Go's ``%#v``, which names Go types kubesim does not have.)

Pure values and functions; the only state is the bounded memory of paths' steps (see :class:`Path`).
"""

from __future__ import annotations

import decimal
import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from machinery.api.names import go_quote


class ErrorType(StrEnum):
    """The machine-readable ``reason`` of a Status cause."""

    NOT_FOUND = "FieldValueNotFound"
    REQUIRED = "FieldValueRequired"
    DUPLICATE = "FieldValueDuplicate"
    INVALID = "FieldValueInvalid"
    NOT_SUPPORTED = "FieldValueNotSupported"
    FORBIDDEN = "FieldValueForbidden"
    TOO_LONG = "FieldValueTooLong"
    TOO_MANY = "FieldValueTooMany"
    INTERNAL = "InternalError"
    TYPE_INVALID = "FieldValueTypeInvalid"


_TITLES: Final[dict[ErrorType, str]] = {
    ErrorType.NOT_FOUND: "Not found",
    ErrorType.REQUIRED: "Required value",
    ErrorType.DUPLICATE: "Duplicate value",
    ErrorType.INVALID: "Invalid value",
    ErrorType.NOT_SUPPORTED: "Unsupported value",
    ErrorType.FORBIDDEN: "Forbidden",
    ErrorType.TOO_LONG: "Too long",
    ErrorType.TOO_MANY: "Too many",
    ErrorType.INTERNAL: "Internal error",
    ErrorType.TYPE_INVALID: "Invalid value",
}

#: Error types whose body never shows the offending value.
_VALUELESS: Final = frozenset({ErrorType.REQUIRED, ErrorType.FORBIDDEN, ErrorType.TOO_LONG,
                               ErrorType.INTERNAL})


class Path:
    """A field path rendered as Kubernetes renders it: ``spec.containers[0].name``.

    Paths are immutable; every step returns a new one::

        Path("spec").child("containers").index(0).child("name")   # spec.containers[0].name
        Path("metadata", "labels").key("app")                     # metadata.labels[app]

    A validator builds the path of every field it looks at, errors or not (a Deployment's
    validation takes some fifty steps), and validators start from long-lived roots such as
    ``Path("spec")``: so a path remembers the steps taken from it by :meth:`child` and by
    :meth:`index` for small indices, and hands back the same immutable object the next time.
    Bounded: at most :data:`_STEPS_KEPT` steps per path and :data:`_PATHS_KEPT` in all (names
    that come from user data, such as a custom resource's fields, must not grow it without end);
    :meth:`key` (map keys, user data) is never remembered.
    """

    __slots__ = ("_steps", "_text")

    def __init__(self, name: str, *more: str) -> None:
        self._text = ".".join((name, *more)) if more else name
        self._steps: dict[str | int, Path] | None = None

    @classmethod
    def _raw(cls, text: str) -> Path:
        path = _new(cls)
        path._text = text
        path._steps = None
        return path

    def _step(self, step: str | int) -> Path:
        """The path one step (a field name, or a list index) from this one, remembered within the bounds."""
        steps = self._steps
        if steps is None:
            steps = self._steps = {}
        else:
            found = steps.get(step)
            if found is not None:
                return found
        path = Path._raw(f"{self._text}.{step}" if type(step) is str else f"{self._text}[{step}]")
        if len(steps) < _STEPS_KEPT and _kept[0] < _PATHS_KEPT:
            steps[step] = path
            _kept[0] += 1
        return path

    def child(self, name: str, *more: str) -> Path:
        path = self._step(name)
        for step in more:
            path = path._step(step)
        return path

    def index(self, i: int) -> Path:
        return self._step(i) if i < _INDICES_KEPT else Path._raw(f"{self._text}[{i}]")

    def key(self, key: str) -> Path:
        return Path._raw(f"{self._text}[{key}]")

    def __str__(self) -> str:
        return self._text

    def __repr__(self) -> str:
        return f"Path({self._text!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Path) and other._text == self._text

    def __hash__(self) -> int:
        return hash(self._text)


_new: Final = object.__new__
#: How many steps one path remembers, how many paths are remembered in all, and up to which list index.
_STEPS_KEPT: Final = 64
_PATHS_KEPT: Final = 50_000
_INDICES_KEPT: Final = 16
_kept: list[int] = [0]


@dataclass(frozen=True, slots=True)
class FieldError:
    """One problem with one field, as ``field.Error`` carries it."""

    type: ErrorType
    field: str
    bad_value: object
    detail: str

    # The constructors mirror field.Required, field.Invalid... including the
    # bad values Kubernetes stores for the kinds that never print one.

    @classmethod
    def required(cls, path: Path | str, detail: str = "") -> FieldError:
        return cls(ErrorType.REQUIRED, str(path), "", detail)

    @classmethod
    def invalid(cls, path: Path | str, value: object, detail: str) -> FieldError:
        return cls(ErrorType.INVALID, str(path), value, detail)

    @classmethod
    def type_invalid(cls, path: Path | str, value: object, detail: str) -> FieldError:
        return cls(ErrorType.TYPE_INVALID, str(path), value, detail)

    @classmethod
    def not_supported(cls, path: Path | str, value: object, supported: Iterable[str]) -> FieldError:
        quoted = [go_quote(v) for v in supported]
        return cls(ErrorType.NOT_SUPPORTED, str(path), value,
                   "supported values: " + ", ".join(quoted) if quoted else "")

    @classmethod
    def duplicate(cls, path: Path | str, value: object, detail: str = "") -> FieldError:
        return cls(ErrorType.DUPLICATE, str(path), value, detail)

    @classmethod
    def not_found(cls, path: Path | str, value: object) -> FieldError:
        return cls(ErrorType.NOT_FOUND, str(path), value, "")

    @classmethod
    def forbidden(cls, path: Path | str, detail: str) -> FieldError:
        return cls(ErrorType.FORBIDDEN, str(path), "", detail)

    @classmethod
    def too_long(cls, path: Path | str, max_length: int) -> FieldError:
        return cls(ErrorType.TOO_LONG, str(path), "<value omitted>",
                   f"may not be more than {max_length} bytes")

    @classmethod
    def internal(cls, path: Path | str, detail: str) -> FieldError:
        return cls(ErrorType.INTERNAL, str(path), None, detail)

    def error_body(self) -> str:
        """The message without the field: ``Invalid value: "Bad": <detail>``."""
        text = _TITLES[self.type]
        if self.type not in _VALUELESS:
            text = f"{text}: {render_value(self.bad_value)}"
        if self.detail:
            text = f"{text}: {self.detail}"
        return text

    def __str__(self) -> str:
        return f"{self.field}: {self.error_body()}"

    def cause(self) -> dict[str, str]:
        """This error as an entry of a Status' ``details.causes``."""
        return {"reason": self.type.value, "message": self.error_body(), "field": self.field}


def invalid_message(kind: str, name: str, errors: list[FieldError]) -> str:
    """The message of Kubernetes' ``NewInvalid``: ``Pod "bad" is invalid: spec.containers: Required value``.

    ``kind`` is the group-qualified kind as Kubernetes prints it (``Pod``,
    ``Lease.coordination.k8s.io``). Several errors are joined in brackets;
    errors that read the same are shown once, as apimachinery's aggregate does.
    """
    head = f"{kind} {go_quote(name)} is invalid"
    messages = list(dict.fromkeys(str(e) for e in errors))
    if not messages:
        return head
    if len(messages) == 1:
        return f"{head}: {messages[0]}"
    return f"{head}: [{', '.join(messages)}]"


def render_value(value: object) -> str:
    """A bad value as the error body shows it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _go_float(value)
    if isinstance(value, str):
        return go_quote(value)
    return _go_json(value)


def _go_float(value: float) -> str:
    """Go's ``%v`` for a float64: shortest digits, exponent form below 1e-4 and from 1e6 on."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "-0" if math.copysign(1.0, value) < 0 else "0"
    sign, digits, exponent = decimal.Decimal(repr(value)).normalize().as_tuple()
    assert isinstance(exponent, int)  # finite by the checks above
    text = "".join(map(str, digits))
    point = len(text) + exponent  # position of the decimal point within the digits
    exp10 = point - 1
    if exp10 < -4 or exp10 >= 6:
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        body = f"{mantissa}e{'-' if exp10 < 0 else '+'}{abs(exp10):02d}"
    elif point <= 0:
        body = "0." + "0" * -point + text
    elif point >= len(text):
        body = text + "0" * (point - len(text))
    else:
        body = f"{text[:point]}.{text[point:]}"
    return ("-" if sign else "") + body


def _go_json(value: object) -> str:
    """Go's ``json.Marshal``: compact, map keys sorted, HTML characters escaped."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    for ch, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                        ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(ch, escaped)
    return text
