"""Query parameters parsed as kube-apiserver's parameter codec parses them.

Kubernetes converts query parameters into ``ListOptions``, ``DeleteOptions``
and friends with Go's ``strconv``: an integer parameter is a base-10 int64,
with an optional sign and nothing else (no spaces, no underscores, no
exponent), and a value that does not fit is refused rather than clamped.
The refusal is a 400 carrying strconv's own message, for example
``strconv.ParseInt: parsing "99999999999999999999": value out of range``,
which is what kubectl prints after ``Error from server (BadRequest):``.

Python's ``int()`` is more lenient (``" 1_0 "`` is 10) and refuses strings
of more than 4,300 digits with an exception of its own; everything here
checks the text first, so neither leniency nor that exception reaches a
handler.

Pure functions, no state.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping
from typing import Final

from apiserver import errors

INT64_MIN: Final = -(2**63)
INT64_MAX: Final = 2**63 - 1
UINT64_MAX: Final = 2**64 - 1

_SIGNED: Final = re.compile(r"[+-]?[0-9]+")
_UNSIGNED: Final = re.compile(r"\+?[0-9]+")


class SyntaxOrRange(ValueError):
    """A number Go's strconv would refuse; the message is strconv's."""


def _digits_fit(digits: str, limit: int) -> bool:
    """Whether the decimal ``digits`` (no sign) are at most ``limit``, without converting huge strings."""
    digits = digits.lstrip("0") or "0"
    width = len(str(limit))
    return len(digits) < width or (len(digits) == width and int(digits) <= limit)


def parse_int64(text: str) -> int:
    """``strconv.ParseInt(text, 10, 64)``: raises :class:`SyntaxOrRange` with Go's message."""
    if not _SIGNED.fullmatch(text):
        raise SyntaxOrRange(f'strconv.ParseInt: parsing "{_quote(text)}": invalid syntax')
    negative = text.startswith("-")
    digits = text.lstrip("+-")
    if not _digits_fit(digits, -INT64_MIN if negative else INT64_MAX):
        raise SyntaxOrRange(f'strconv.ParseInt: parsing "{_quote(text)}": value out of range')
    return int(text)


def parse_uint64(text: str) -> int:
    """``strconv.ParseUint(text, 10, 64)``: raises :class:`SyntaxOrRange` with Go's message."""
    if not _UNSIGNED.fullmatch(text) or text.startswith("+"):
        raise SyntaxOrRange(f'strconv.ParseUint: parsing "{_quote(text)}": invalid syntax')
    if not _digits_fit(text, UINT64_MAX):
        raise SyntaxOrRange(f'strconv.ParseUint: parsing "{_quote(text)}": value out of range')
    return int(text)


def int64_param(query: Mapping[str, str], name: str, default: int | None = None) -> int | None:
    """The int64 query parameter ``name``, ``default`` when absent or empty; a 400 when not an int64."""
    value = query.get(name)
    if value is None or value == "":
        return default
    try:
        return parse_int64(value)
    except SyntaxOrRange as e:
        raise errors.bad_request(str(e)) from None


def resource_version(value: str | None) -> int | None:
    """A ``resourceVersion`` parameter as an etcd revision (None when absent, empty or "0"); 400 when not one."""
    if value is None or value in ("", "0"):
        return None
    try:
        return parse_uint64(value)
    except SyntaxOrRange:
        raise errors.bad_request(f'invalid resourceVersion "{_quote(value)}"') from None


def watch_timeout(requested: int | None, min_request_timeout: int, *, rand: random.Random | None = None) -> float:
    """How long a watch may last, in seconds.

    Without ``timeoutSeconds`` a watch lasts between ``--min-request-timeout``
    and twice that, at random, so that watchers reconnect spread out over time
    (kube-apiserver's rule). A client may ask for less; it may not ask for more
    than that window: ``timeoutSeconds=99999999999`` gets the window too, so no
    watch holds a connection forever. (kube-apiserver multiplies the requested
    seconds into a Go Duration, which overflows for such values; the window is
    what it means.) A negative value ends the watch at once, as there.
    """
    if requested is not None and requested < 0:
        return 0.0
    window = min_request_timeout * (1 + (rand or random).random())
    if requested is None or requested == 0 or requested > window:
        return window
    return float(requested)


def _quote(text: str) -> str:
    """The value as it appears inside Go's quotes in strconv's message (long values cut, as Go's %q would not)."""
    shown = text if len(text) <= 256 else text[:256] + "..."
    return shown.replace("\\", "\\\\").replace('"', '\\"')
