"""Reading Kubernetes protobuf request bodies, for every built-in kind, from Kubernetes' own field numbers.

kubectl's typed clients send built-in objects as
``application/vnd.kubernetes.protobuf`` and do not fall back to JSON:
``kubectl create deployment``, ``create secret``, ``create token``,
``auth can-i``, ``drain`` (an Eviction) and more send their object that way.
kubesim answers in JSON (kubectl's Accept header allows it) but must read those
bodies. The encoding is Kubernetes' envelope: the magic bytes ``k8s\\0``, then a
``runtime.Unknown`` message (``typeMeta`` with apiVersion and kind, ``raw`` with
the object's own protobuf message).

The decoder is generic: the messages, their field numbers, JSON names and
types are data (``machinery/api/protobuf_messages.json``, written by
``hack/gen_protobuf_descriptors.py`` from the ``generated.proto`` descriptors
embedded in kubectl 1.32). The output is the object's JSON form, as Go would
write it after decoding, so the rest of the request path cannot tell a
protobuf body from a JSON one. Messages whose JSON form is not their fields
are handled here by name: meta/v1 ``Time`` (RFC 3339 seconds), ``MicroTime``
(microseconds), ``Duration`` (Go's ``1h2m3s``), ``resource.Quantity`` (its
string), ``intstr.IntOrString`` (a number or a string), ``runtime.RawExtension``
(the embedded JSON, or a nested protobuf object), ``runtime.Unknown``,
``FieldsV1`` and apiextensions' ``JSON`` (JSON text), apiextensions'
``JSONSchemaPropsOr*`` unions, and go-to-protobuf's wrappers of named slices
(``ExtraValue``, ``Verbs``), whose JSON form is the plain array. ``bytes``
fields are base64 strings (Secret ``data``, ConfigMap ``binaryData``); maps
are JSON objects; a struct embedded with ``json:",inline"`` (a Volume's
VolumeSource, an IngressRule's IngressRuleValue) is a field in protobuf and
its fields are the parent's in JSON.

Zero values. gogo-protobuf's marshaller writes every non-pointer field, even
when it holds its zero value, whereas Go's JSON encoder omits those
(``omitempty``). A pointer field is written only when set, so a zero there was
the client's choice. The descriptors tell the two apart (``gogoproto.nullable
= false`` marks a non-pointer field, the ``n`` flag in the data), so:

- a non-pointer string, number, bool or bytes field holding its zero value is
  dropped (``generateName: ""``, ``minReadySeconds: 0``, ``paused: false``,
  ``nodePort: 0``), unless the OpenAPI definition lists it as required (``q``):
  Kubernetes marks required the fields without ``omitempty``, whose zero JSON
  does write (``containerPort: 0`` reaches validation as in JSON);
- a pointer field keeps its zero (``replicas: 0``, ``enableServiceLinks:
  false``, ``terminationGracePeriodSeconds: 0``, ``storageClassName: ""``);
- messages are kept even when empty (``strategy: {}``, ``resources: {}``), as
  Go's JSON writes a struct field whatever its tag; except the zero ``Time``
  (written as an empty message, ``null`` in JSON) and an empty RawExtension or
  apiextensions JSON, which are ``null`` in JSON and dropped;
- map entries and list items are always kept (a label's empty value is a value).

Like Kubernetes' decoder, a field number the definitions do not know (a newer
client's field) is skipped, not an error; protobuf bodies are never checked by
``fieldValidation``, as in Kubernetes. A body that is not well-formed protobuf,
names a kind without a protobuf definition, or nests deeper than
:data:`MAX_DEPTH` is a :class:`ProtobufError` (the request path answers 415).

Pure functions over data loaded once per process (read-only after loading).
"""

from __future__ import annotations

import base64
import datetime
import functools
import json
import struct
from collections.abc import Callable
from importlib import resources
from typing import Any, Final

import orjson

MAGIC: Final = b"k8s\x00"
CONTENT_TYPE: Final = "application/vnd.kubernetes.protobuf"
#: How deeply messages may nest before a body is refused (Kubernetes objects nest about 15 deep).
MAX_DEPTH: Final = 100

_META: Final = "k8s.io.apimachinery.pkg.apis.meta.v1."
_RUNTIME: Final = "k8s.io.apimachinery.pkg.runtime."
_EXT: Final = "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1."
#: Go's zero time.Time in Unix seconds (January 1, year 1, UTC).
_GO_ZERO_SECONDS: Final = -62135596800


class ProtobufError(ValueError):
    """The body is not Kubernetes protobuf that kubesim can read."""


class _Omit:
    """A decoded value whose JSON form is ``null``: the field is left out."""


_OMIT: Final = _Omit()

# A field: (JSON name, type, repeated, keep zero, inline, map key type, map value type).
# ``type`` is a scalar name ("string", "int32" ...), "map", or a message's full name.
Field = tuple[str, str, bool, bool, bool, str, str]


class _Message:
    __slots__ = ("fields", "name", "wraps")

    def __init__(self, name: str, fields: dict[int, Field], wraps: bool) -> None:
        self.name = name
        self.fields = fields
        self.wraps = wraps


class _Tables:
    def __init__(self, messages: dict[str, _Message], kinds: dict[str, str]) -> None:
        self.messages = messages
        self.kinds = kinds


@functools.cache
def _tables() -> _Tables:
    raw = json.loads((resources.files("machinery.api") / "protobuf_messages.json").read_bytes())
    messages: dict[str, _Message] = {}
    for name, entry in raw["messages"].items():
        fields: dict[int, Field] = {}
        for number, spec in entry["fields"].items():
            json_name, kind, flags = spec[0], spec[1], spec[2]
            keep_zero = "n" not in flags or "q" in flags
            key, value = (spec[3], spec[4]) if kind == "map" else ("", "")
            fields[int(number)] = (json_name, kind, "r" in flags, keep_zero, "i" in flags, key, value)
        messages[name] = _Message(name, fields, bool(entry.get("wraps")))
    return _Tables(messages, raw["kinds"])


def message_for(api_version: str, kind: str) -> str | None:
    """The protobuf message of a kind (``apps/v1``, ``Deployment`` -> ``k8s.io.api.apps.v1.Deployment``)."""
    return _tables().kinds.get(f"{api_version}/{kind}")


# --- the wire format ----------------------------------------------------------------------------

# Bodies are read through memoryviews: a nested message is a slice of its parent, never a copy, so
# that a deeply nested body costs its size once, not once per level.
Buffer = bytes | memoryview


def _varint(data: Buffer, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data):
            raise ProtobufError("truncated varint")
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ProtobufError("varint too long")


_WIRE_NAMES: Final = {0: "varint", 1: "64-bit", 2: "length-delimited", 5: "32-bit"}


def _fields(buffer: Buffer) -> list[tuple[int, int, Any]]:
    """(field number, wire type, value) triples; varints as ints, the others as memoryviews."""
    data = memoryview(buffer)
    out: list[tuple[int, int, Any]] = []
    pos, end = 0, len(data)
    value: int | memoryview
    while pos < end:
        tag, pos = _varint(data, pos)
        number, wire = tag >> 3, tag & 7
        if number == 0:
            raise ProtobufError("field number 0 is not valid")
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire == 2:
            length, pos = _varint(data, pos)
            if pos + length > end:
                raise ProtobufError("truncated field")
            value, pos = data[pos:pos + length], pos + length
        elif wire == 1 or wire == 5:
            size = 8 if wire == 1 else 4
            if pos + size > end:
                raise ProtobufError("truncated field")
            value, pos = data[pos:pos + size], pos + size
        else:
            raise ProtobufError(f"unsupported wire type {wire}")
        out.append((number, wire, value))
    return out


def _signed(value: int, bits: int = 64) -> int:
    value &= (1 << 64) - 1
    if bits == 32:
        value &= 0xFFFFFFFF
        return value - (1 << 32) if value >= 1 << 31 else value
    return value - (1 << 64) if value >= 1 << 63 else value


def _scalar(kind: str, wire: int, value: Any, where: str) -> Any:
    """One scalar value of ``kind`` from its wire form."""
    if kind == "string":
        _want(wire, 2, where)
        # Go keeps invalid UTF-8 as it is and its JSON encoder writes U+FFFD for it.
        return bytes(value).decode("utf-8", errors="replace")
    if kind == "bytes":
        _want(wire, 2, where)
        return base64.b64encode(bytes(value)).decode()
    if kind in ("int32", "int64", "uint32", "uint64", "bool", "sint32", "sint64"):
        _want(wire, 0, where)
        if kind == "bool":
            return bool(value)
        if kind == "int32":
            return _signed(value, 32)
        if kind == "int64":
            return _signed(value)
        if kind == "sint32" or kind == "sint64":
            return (value >> 1) ^ -(value & 1)
        return value & (0xFFFFFFFF if kind == "uint32" else (1 << 64) - 1)
    if kind in ("double", "fixed64", "sfixed64"):
        _want(wire, 1, where)
        return struct.unpack("<" + {"double": "d", "fixed64": "Q", "sfixed64": "q"}[kind], value)[0]
    if kind in ("float", "fixed32", "sfixed32"):
        _want(wire, 5, where)
        return struct.unpack("<" + {"float": "f", "fixed32": "I", "sfixed32": "i"}[kind], value)[0]
    raise ProtobufError(f"{where} has the unknown type {kind}")


def _want(wire: int, expected: int, where: str) -> None:
    if wire != expected:
        raise ProtobufError(f"{where} is {_WIRE_NAMES.get(wire, wire)}, not {_WIRE_NAMES[expected]}")


def _packed(kind: str, data: Buffer, where: str) -> list[Any]:
    """A packed repeated scalar field's values."""
    out: list[Any] = []
    pos = 0
    if kind in ("double", "fixed64", "sfixed64", "float", "fixed32", "sfixed32"):
        size = 8 if kind in ("double", "fixed64", "sfixed64") else 4
        if len(data) % size:
            raise ProtobufError(f"{where}: truncated packed field")
        for i in range(0, len(data), size):
            out.append(_scalar(kind, 1 if size == 8 else 5, data[i:i + size], where))
        return out
    while pos < len(data):
        value, pos = _varint(data, pos)
        out.append(_scalar(kind, 0, value, where))
    return out


# --- messages ------------------------------------------------------------------------------------

def decode_message(name: str, data: Buffer, depth: int = 0) -> Any:
    """The JSON form of one message (``_OMIT`` for a value that JSON writes as null)."""
    if depth > MAX_DEPTH:
        raise ProtobufError(f"the object nests deeper than {MAX_DEPTH} messages")
    special = _SPECIAL.get(name)
    if special is not None:
        return special(data, depth)
    message = _tables().messages.get(name)
    if message is None:
        raise ProtobufError(f"no protobuf definition for {name}")
    obj: dict[str, Any] = {}
    for number, wire, value in _fields(data):
        spec = message.fields.get(number)
        if spec is None:
            continue
        key, kind, repeated, keep_zero, inline, key_kind, value_kind = spec
        where = f"field {number} ({key}) of {name.rsplit('.', 1)[-1]}"
        if kind == "map":
            _want(wire, 2, where)
            k, v = _map_entry(key_kind, value_kind, value, where, depth)
            obj.setdefault(key, {})[k] = v
        elif kind in _SCALAR_KINDS:
            if repeated:
                items = obj.setdefault(key, [])
                if wire == 2 and kind not in ("string", "bytes"):
                    items.extend(_packed(kind, value, where))
                else:
                    items.append(_scalar(kind, wire, value, where))
                continue
            decoded = _scalar(kind, wire, value, where)
            if not keep_zero and not decoded:
                obj.pop(key, None)
                continue
            obj[key] = decoded
        else:
            _want(wire, 2, where)
            decoded = decode_message(kind, value, depth + 1)
            if inline and isinstance(decoded, dict):
                obj.update(decoded)
            elif repeated:
                obj.setdefault(key, []).append(None if decoded is _OMIT else decoded)
            elif decoded is _OMIT:
                obj.pop(key, None)
            else:
                obj[key] = decoded
    if message.wraps:
        return obj.get("items", [])
    return obj


_SCALAR_KINDS: Final = frozenset(("string", "bytes", "bool", "int32", "int64", "uint32", "uint64", "sint32",
                                  "sint64", "double", "float", "fixed32", "fixed64", "sfixed32", "sfixed64"))


def _map_entry(key_kind: str, value_kind: str, data: Buffer, where: str, depth: int) -> tuple[Any, Any]:
    key: Any = None
    value: Any = None
    for number, wire, raw in _fields(data):
        if number == 1:
            key = _scalar(key_kind, wire, raw, where + " key")
        elif number == 2:
            if value_kind in _SCALAR_KINDS:
                value = _scalar(value_kind, wire, raw, where + " value")
            else:
                _want(wire, 2, where + " value")
                value = decode_message(value_kind, raw, depth + 1)
    if key is None:
        key = "" if key_kind in ("string", "bytes") else 0
    if value is None or value is _OMIT:
        # An entry without its value holds the value type's zero, as in Go.
        value = _zero(value_kind, depth)
    return (key if isinstance(key, str) else str(key)), value


def _zero(kind: str, depth: int) -> Any:
    if kind in ("string", "bytes"):
        return ""
    if kind == "bool":
        return False
    if kind in _SCALAR_KINDS:
        return 0
    decoded = decode_message(kind, b"", depth + 1)
    return None if decoded is _OMIT else decoded


def _only(data: Buffer, number: int, kind: str, where: str) -> Any:
    """The last value of one scalar field (protobuf's last-one-wins), or None."""
    found = None
    for n, wire, value in _fields(data):
        if n == number:
            found = _scalar(kind, wire, value, where)
    return found


def _time(data: Buffer, depth: int, *, micro: bool = False) -> Any:
    if not data:
        return _OMIT
    seconds = _only(data, 1, "int64", "Time.seconds") or 0
    nanos = _only(data, 2, "int32", "Time.nanos") or 0
    if seconds == _GO_ZERO_SECONDS and nanos == 0:
        return _OMIT
    try:
        t = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC) + datetime.timedelta(seconds=seconds)
    except OverflowError as e:
        raise ProtobufError(f"time out of range: {seconds} seconds") from e
    text = t.strftime("%Y-%m-%dT%H:%M:%S")
    if micro:
        return f"{text}.{max(0, nanos) // 1000:06d}Z"
    return text + "Z"


def _micro_time(data: Buffer, depth: int) -> Any:
    return _time(data, depth, micro=True)


def _duration(data: Buffer, depth: int) -> Any:
    return go_duration(_only(data, 1, "int64", "Duration.duration") or 0)


def go_duration(nanos: int) -> str:
    """Go's ``time.Duration.String()``: ``1h2m3.5s``, ``1.5ms``, ``0s``."""
    if nanos == 0:
        return "0s"
    sign = "-" if nanos < 0 else ""
    n = abs(nanos)
    if n < 1_000_000_000:
        for unit, size in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
            if n >= size:
                return sign + _fraction(n, size) + unit
    hours, n = divmod(n, 3_600_000_000_000)
    minutes, n = divmod(n, 60_000_000_000)
    text = _fraction(n, 1_000_000_000) + "s"
    if hours:
        return f"{sign}{hours}h{minutes}m{text}"
    if minutes:
        return f"{sign}{minutes}m{text}"
    return sign + text


def _fraction(n: int, size: int) -> str:
    whole, rest = divmod(n, size)
    if not rest:
        return str(whole)
    digits = len(str(size)) - 1
    return f"{whole}.{rest:0{digits}d}".rstrip("0")


def _quantity(data: Buffer, depth: int) -> Any:
    return _only(data, 1, "string", "Quantity.string") or "0"


def _int_or_string(data: Buffer, depth: int) -> Any:
    kind = intval = strval = None
    for n, wire, value in _fields(data):
        if n == 1:
            kind = _scalar("int64", wire, value, "IntOrString.type")
        elif n == 2:
            intval = _scalar("int32", wire, value, "IntOrString.intVal")
        elif n == 3:
            strval = _scalar("string", wire, value, "IntOrString.strVal")
    return (strval or "") if kind == 1 else (intval or 0)


def _json_text(raw: bytes, what: str) -> Any:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as e:
        raise ProtobufError(f"{what} does not hold JSON: {e}") from e


def _raw_extension(data: Buffer, depth: int) -> Any:
    raw = next((bytes(v) for n, w, v in _fields(data) if n == 1 and w == 2), b"")
    if not raw:
        return _OMIT
    if raw.startswith(MAGIC):
        return _envelope(raw[len(MAGIC):], depth + 1)
    return _json_text(raw, "a RawExtension")


def _unknown(data: Buffer, depth: int) -> Any:
    return _envelope(data, depth + 1)


def _fields_v1(data: Buffer, depth: int) -> Any:
    # Its one field holds the JSON form of the field set.
    raw = next((bytes(v) for n, w, v in _fields(data) if n == 1 and w == 2), b"")
    return _json_text(raw, "FieldsV1") if raw else {}


def _ext_json(data: Buffer, depth: int) -> Any:
    raw = next((bytes(v) for n, w, v in _fields(data) if n == 1 and w == 2), b"")
    return _json_text(raw, "a JSON value") if raw else _OMIT


def _schema_or_list(data: Buffer, depth: int, list_kind: str) -> Any:
    """An apiextensions ``JSONSchemaPropsOrArray`` or ``OrStringArray``: schema = 1, the list = 2.

    As their MarshalJSON: a non-empty list wins, then the schema; neither is null.
    """
    schema: Any = _OMIT
    items: list[Any] = []
    for n, wire, value in _fields(data):
        if n == 1:
            _want(wire, 2, "schema")
            schema = decode_message(_EXT + "JSONSchemaProps", value, depth + 1)
        elif n == 2 and list_kind == "string":
            items.append(_scalar("string", wire, value, "property"))
        elif n == 2:
            _want(wire, 2, "JSONSchemas")
            items.append(decode_message(_EXT + "JSONSchemaProps", value, depth + 1))
    return items or schema


def _or_array(data: Buffer, depth: int) -> Any:
    return _schema_or_list(data, depth, "schema")


def _or_bool(data: Buffer, depth: int) -> Any:
    # allows = 1, schema = 2: a schema wins, as in apiextensions' MarshalJSON.
    schema: Any = None
    allows = False
    for n, wire, value in _fields(data):
        if n == 1:
            allows = bool(_scalar("bool", wire, value, "allows"))
        elif n == 2:
            _want(wire, 2, "schema")
            schema = decode_message(_EXT + "JSONSchemaProps", value, depth + 1)
    return schema if schema is not None else allows


def _or_string_array(data: Buffer, depth: int) -> Any:
    return _schema_or_list(data, depth, "string")


_SPECIAL: Final[dict[str, Callable[[Buffer, int], Any]]] = {
    _META + "Time": _time,
    _META + "MicroTime": _micro_time,
    _META + "Duration": _duration,
    _META + "FieldsV1": _fields_v1,
    "k8s.io.apimachinery.pkg.api.resource.Quantity": _quantity,
    "k8s.io.apimachinery.pkg.api.resource.QuantityValue": _quantity,
    "k8s.io.apimachinery.pkg.util.intstr.IntOrString": _int_or_string,
    _RUNTIME + "RawExtension": _raw_extension,
    _RUNTIME + "Unknown": _unknown,
    _EXT + "JSON": _ext_json,
    _EXT + "JSONSchemaPropsOrArray": _or_array,
    _EXT + "JSONSchemaPropsOrBool": _or_bool,
    _EXT + "JSONSchemaPropsOrStringArray": _or_string_array,
}


# --- the envelope --------------------------------------------------------------------------------

def _envelope(data: Buffer, depth: int) -> dict[str, Any]:
    """A ``runtime.Unknown`` holding an object: the object's JSON form with its apiVersion and kind."""
    api_version = kind = ""
    raw: Buffer = b""
    content_type = ""
    for n, wire, value in _fields(data):
        if n == 1:
            _want(wire, 2, "Unknown.typeMeta")
            for tn, tw, tv in _fields(value):
                if tn == 1:
                    api_version = _scalar("string", tw, tv, "TypeMeta.apiVersion")
                elif tn == 2:
                    kind = _scalar("string", tw, tv, "TypeMeta.kind")
        elif n == 2:
            _want(wire, 2, "Unknown.raw")
            raw = value
        elif n == 3 and wire == 2 and value:
            raise ProtobufError(f"content encoding {bytes(value).decode(errors='replace')!r} is not supported")
        elif n == 4 and wire == 2:
            content_type = bytes(value).decode(errors="replace")
    if content_type not in ("", CONTENT_TYPE):
        raise ProtobufError(f"the envelope holds {content_type}, not protobuf")
    message = message_for(api_version, kind)
    if message is None:
        raise ProtobufError(f"{api_version}/{kind} has no protobuf definition in kubesim; send it as JSON")
    obj = decode_message(message, raw, depth + 1)
    if not isinstance(obj, dict):
        raise ProtobufError(f"{api_version}/{kind} is not an object")
    return {"apiVersion": api_version, "kind": kind, **obj}


def decode(body: bytes) -> dict[str, Any]:
    """A Kubernetes protobuf body (``k8s\\0`` + runtime.Unknown) as the object's JSON form."""
    if not body.startswith(MAGIC):
        raise ProtobufError("the body does not start with Kubernetes' protobuf magic bytes")
    return _envelope(body[len(MAGIC):], 0)
