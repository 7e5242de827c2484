"""Limits on a decoded request body: how deep, how large its numbers, how much YAML aliasing.

kube-apiserver decodes bodies with Go decoders that refuse what cannot be
represented: nesting past a fixed depth (``exceeded max depth``), numbers
that do not fit the int64 of the field (``json: cannot unmarshal number ...
of type int64``), YAML whose aliases expand without bound (``yaml: document
contains excessive aliasing``). Python's decoders fail in their own ways on
the same input, as exceptions that would otherwise become 500s:
``RecursionError`` from deep JSON or YAML, ``ValueError`` from integers of
more than 4,300 digits, and orjson's encoder refusing integers beyond 64 bits
or nesting past 254 levels when the object is stored or answered.

:func:`checked` walks a decoded document once (iteratively, so depth costs
no stack), refuses what Kubernetes refuses with a 400 Status, and turns what
YAML yields beyond JSON (non-string keys, ``!!binary``, ``!!set``,
timestamps) into JSON values as ``sigs.k8s.io/yaml`` does, so that nothing
later fails to encode. A JSON body that orjson parsed skips the walk when a
scan of its bytes shows it cannot break a limit (few brackets, no long
digit runs or exponents), which is the case for every ordinary object.

Pure functions, no state.
"""

from __future__ import annotations

import base64
import datetime
import math
import re
from typing import Any, Final

from apiserver import errors

#: Deepest nesting accepted. orjson encodes at most 254 levels, and a stored object is
#: answered inside lists, watch events and Tables, which add a few more.
MAX_DEPTH: Final = 200
INT64_MIN: Final = -(2**63)
INT64_MAX: Final = 2**63 - 1

#: Bytes of a JSON body that may hide a number beyond int64: a number (it follows a colon, a bracket or a
#: comma) whose integer part has 19 digits or more, or that has an exponent. Digits and "e" inside
#: strings (uids, image digests) are not numbers: matching them would walk every object for nothing.
_RISKY_NUMBER: Final = re.compile(rb"[:\[,][ \t\r\n]*-?(?:[0-9]{19}|[0-9]+(?:\.[0-9]+)?[eE])")


def exceeded_depth() -> errors.APIError:
    return errors.bad_request(f"the request body nests objects or arrays more than {MAX_DEPTH} levels deep: "
                              "exceeded max depth")


def number_out_of_range(number: object, path: str) -> errors.APIError:
    where = f"Go struct field {path}" if path else "Go value"
    return errors.bad_request(f"json: cannot unmarshal number {number} into {where} of type int64")


def excessive_aliasing() -> errors.APIError:
    return errors.bad_request("yaml: document contains excessive aliasing")


def needs_walk(body: bytes) -> bool:
    """Whether a JSON body parsed by orjson could break a limit (orjson itself stops at 1,024 levels)."""
    return body.count(b"[") + body.count(b"{") > MAX_DEPTH or _RISKY_NUMBER.search(body) is not None


def checked(doc: Any, *, budget: int) -> Any:
    """``doc`` with YAML-only values made JSON, or a 400 APIError when it breaks a limit.

    ``budget`` bounds the values visited: a document can hold no more values
    than its body has bytes, unless YAML aliases repeat parts of it.
    """
    root: list[Any] = [doc]
    # (container, key or index, depth, path) of every value still to visit.
    stack: list[tuple[Any, Any, int, str]] = [(root, 0, 0, "")]
    visited = 0
    while stack:
        parent, key, depth, path = stack.pop()
        value = parent[key]
        visited += 1
        if visited > budget:
            raise excessive_aliasing()
        if isinstance(value, dict):
            if depth >= MAX_DEPTH:
                raise exceeded_depth()
            if not all(type(k) is str for k in value):
                value = parent[key] = {_json_key(k): v for k, v in value.items()}
            for k in value:
                stack.append((value, k, depth + 1, f"{path}.{k}" if path else k))
        elif isinstance(value, list):
            if depth >= MAX_DEPTH:
                raise exceeded_depth()
            for i in range(len(value)):
                stack.append((value, i, depth + 1, path))
        elif isinstance(value, bool) or value is None or isinstance(value, str):
            continue
        elif isinstance(value, int):
            if not INT64_MIN <= value <= INT64_MAX:
                raise number_out_of_range(_number_text(value), path)
        elif isinstance(value, float):
            # No field of the kinds served is a float: a float this large can only be an
            # integer that did not fit (orjson reads 99999999999999999999 as 1e20).
            if not math.isnan(value) and abs(value) >= 2.0**63:
                raise number_out_of_range(repr(value), path)
        else:
            parent[key] = _json_scalar(value)
    return root[0]


def _number_text(value: int) -> str:
    text = str(value) if value.bit_length() < 1000 else f"{str(value)[:40]}..."
    return text


def _json_key(key: object) -> str:
    """A YAML mapping key as sigs.k8s.io/yaml writes it in JSON."""
    if isinstance(key, bool):
        return "true" if key else "false"
    if key is None:
        return "null"
    if isinstance(key, int | float | str):
        return str(key)
    if isinstance(key, datetime.date):
        return key.isoformat()
    raise errors.bad_request(f"yaml: invalid map key: {type(key).__name__}")


def _json_scalar(value: object) -> Any:
    """A YAML-only scalar as JSON: timestamps as RFC 3339 text, ``!!binary`` as base64, ``!!set`` as a map."""
    if isinstance(value, datetime.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(datetime.UTC).replace(tzinfo=None)
        return value.isoformat(timespec="seconds" if not value.microsecond else "microseconds") + "Z"
    if isinstance(value, datetime.date):
        return value.isoformat()
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if isinstance(value, set | frozenset):
        return {_json_key(k): None for k in value}
    raise errors.bad_request(f"the request body holds a value JSON cannot carry: {type(value).__name__}")
