"""The ``[]byte`` maps of Secrets and ConfigMaps: base64 on the wire, checked as Go decodes them.

A Secret's ``data`` and a ConfigMap's ``binaryData`` are byte strings, which
JSON carries in standard base64. kube-apiserver decodes them while reading
the body, so a value that is not base64 is a ``400 BadRequest`` that names the
offending byte (``Secret in version "v1" cannot be handled as a Secret:
illegal base64 data at input byte 4``), and the object is never seen by
validation. :func:`decode_error` finds the same byte as Go's
``base64.StdEncoding`` does (padding required, ``\\r`` and ``\\n`` skipped);
:func:`canonical_byte_map` re-encodes every value as Go writes it back.

Pure functions; no state.
"""

from __future__ import annotations

import base64
from typing import Any, Final

from apiserver import errors

Obj = dict[str, Any]

_ALPHABET: Final = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
_NEWLINES: Final = frozenset(b"\r\n")
_PAD: Final = ord("=")


def decode_error(text: str) -> int | None:
    """The input byte Go's ``base64.StdEncoding.Decode`` reports as illegal, or None when ``text`` decodes."""
    src = text.encode()
    si = 0
    while si < len(src):
        j = 0
        while j < 4:
            if si == len(src):
                if j == 0:
                    return None
                return si - j
            ch = src[si]
            si += 1
            if ch in _ALPHABET:
                j += 1
                continue
            if ch in _NEWLINES:
                continue
            if ch != _PAD or j < 2:
                return si - 1
            if j == 2:
                # "==" is expected; the first "=" is read.
                while si < len(src) and src[si] in _NEWLINES:
                    si += 1
                if si == len(src):
                    return len(src)
                if src[si] != _PAD:
                    return si - 1
                si += 1
            while si < len(src) and src[si] in _NEWLINES:
                si += 1
            return si if si < len(src) else None
    return None


def canonical_byte_map(kind: str, obj: Obj, field: str) -> None:
    """Check ``obj[field]`` (a map of base64 values) as Kubernetes decodes it, and re-encode it canonically.

    Raises the ``400 BadRequest`` kube-apiserver answers for a value that is
    not base64; values come back in standard base64 with padding and no line
    breaks, as Kubernetes writes them.
    """
    data = obj.get(field)
    if not isinstance(data, dict):
        return
    for key, value in data.items():
        if value is None:
            continue
        if not isinstance(value, str):
            raise errors.bad_request(f'{kind} in version "v1" cannot be handled as a {kind}: json: cannot unmarshal '
                                     f"{_json_kind(value)} into Go struct field {kind}.{field} of type []uint8")
        bad = decode_error(value)
        if bad is not None:
            raise errors.bad_request(f'{kind} in version "v1" cannot be handled as a {kind}: illegal base64 data at '
                                     f"input byte {bad}")
        raw = base64.b64decode(value.replace("\r", "").replace("\n", ""))
        data[key] = base64.b64encode(raw).decode()


def encode(text: str) -> str:
    """A string as a ``[]byte`` value on the wire: its UTF-8 bytes in standard base64."""
    return base64.b64encode(text.encode()).decode()


def _json_kind(value: object) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, list):
        return "array"
    return "object"
