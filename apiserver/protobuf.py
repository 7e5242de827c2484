"""Decoding the few Kubernetes protobuf request bodies kubectl sends.

kubectl's typed clients send built-in objects as ``application/vnd.kubernetes.protobuf``
and do not fall back to JSON: ``kubectl create namespace`` sends a Namespace
and ``kubectl drain`` an Eviction that way. kubesim answers in JSON (kubectl's
Accept header allows it) but must read those bodies.

The encoding is Kubernetes' envelope: the magic bytes ``k8s\\0``, then a
``runtime.Unknown`` message (``typeMeta`` with apiVersion and kind, ``raw`` with
the object's own protobuf). The tables below give the field numbers of the
messages kubectl sends to kubesim, as Kubernetes' ``generated.proto`` files
declare them. A field this table does not know makes the body unreadable
(415), never silently dropped.

Pure functions; no state.
"""

from __future__ import annotations

import datetime
from typing import Any, Final

import orjson

MAGIC: Final = b"k8s\x00"
CONTENT_TYPE: Final = "application/vnd.kubernetes.protobuf"


class ProtobufError(ValueError):
    """The body is not Kubernetes protobuf that kubesim can read."""


# A field is (json name, how to decode it): "string", "int", "bool", "bytes", "time",
# "strings" (repeated string), "map" (map<string,string>), or the name of another
# message; a trailing "[]" makes a message field repeated.
Field = tuple[str, str]
MESSAGES: Final[dict[str, dict[int, Field]]] = {
    "Unknown": {1: ("typeMeta", "TypeMeta"), 2: ("raw", "bytes"), 3: ("contentEncoding", "string"),
                4: ("contentType", "string")},
    "TypeMeta": {1: ("apiVersion", "string"), 2: ("kind", "string")},
    "ObjectMeta": {
        1: ("name", "string"), 2: ("generateName", "string"), 3: ("namespace", "string"),
        4: ("selfLink", "string"), 5: ("uid", "string"), 6: ("resourceVersion", "string"),
        7: ("generation", "int"), 8: ("creationTimestamp", "time"), 9: ("deletionTimestamp", "time"),
        10: ("deletionGracePeriodSeconds", "int"), 11: ("labels", "map"), 12: ("annotations", "map"),
        13: ("ownerReferences", "OwnerReference[]"), 14: ("finalizers", "strings"),
        17: ("managedFields", "ManagedFieldsEntry[]"),
    },
    "OwnerReference": {5: ("apiVersion", "string"), 1: ("kind", "string"), 3: ("name", "string"),
                       4: ("uid", "string"), 6: ("controller", "bool"), 7: ("blockOwnerDeletion", "bool")},
    "ManagedFieldsEntry": {1: ("manager", "string"), 2: ("operation", "string"), 3: ("apiVersion", "string"),
                           4: ("time", "time"), 6: ("fieldsType", "string"), 7: ("fieldsV1", "FieldsV1"),
                           8: ("subresource", "string")},
    "FieldsV1": {1: ("Raw", "bytes")},
    "Namespace": {1: ("metadata", "ObjectMeta"), 2: ("spec", "NamespaceSpec"), 3: ("status", "NamespaceStatus")},
    "NamespaceSpec": {1: ("finalizers", "strings")},
    "NamespaceStatus": {1: ("phase", "string"), 2: ("conditions", "NamespaceCondition[]")},
    "NamespaceCondition": {1: ("type", "string"), 2: ("status", "string"), 4: ("lastTransitionTime", "time"),
                           5: ("reason", "string"), 6: ("message", "string")},
    "Eviction": {1: ("metadata", "ObjectMeta"), 2: ("deleteOptions", "DeleteOptions")},
    "DeleteOptions": {1: ("gracePeriodSeconds", "int"), 2: ("preconditions", "Preconditions"),
                      3: ("orphanDependents", "bool"), 4: ("propagationPolicy", "string"),
                      5: ("dryRun", "strings"), 6: ("ignoreStoreReadErrorWithClusterBreakingPotential", "bool")},
    "Preconditions": {1: ("uid", "string"), 2: ("resourceVersion", "string")},
    "Time": {1: ("seconds", "int"), 2: ("nanos", "int")},
    "MapEntry": {1: ("key", "string"), 2: ("value", "string")},
}

#: The kinds whose bodies kubesim reads in protobuf, by (apiVersion, kind).
KINDS: Final = {("v1", "Namespace"): "Namespace", ("policy/v1", "Eviction"): "Eviction",
                ("v1", "DeleteOptions"): "DeleteOptions", ("meta.k8s.io/v1", "DeleteOptions"): "DeleteOptions"}


def _varint(data: bytes, pos: int) -> tuple[int, int]:
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


def _fields(data: bytes) -> list[tuple[int, int, Any]]:
    """(field number, wire type, value) triples; length-delimited values as bytes."""
    out: list[tuple[int, int, Any]] = []
    pos = 0
    value: int | bytes
    while pos < len(data):
        tag, pos = _varint(data, pos)
        number, wire = tag >> 3, tag & 7
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire == 2:
            length, pos = _varint(data, pos)
            if pos + length > len(data):
                raise ProtobufError("truncated field")
            value, pos = data[pos:pos + length], pos + length
        elif wire == 1:
            value, pos = data[pos:pos + 8], pos + 8
        elif wire == 5:
            value, pos = data[pos:pos + 4], pos + 4
        else:
            raise ProtobufError(f"unsupported wire type {wire}")
        out.append((number, wire, value))
    return out


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def decode_message(name: str, data: bytes) -> Any:
    schema = MESSAGES[name]
    if name == "Time":
        raw = {schema[n][0]: v for n, _, v in _fields(data) if n in schema}
        t = datetime.datetime.fromtimestamp(_signed(raw.get("seconds", 0)), datetime.UTC)
        return t.strftime("%Y-%m-%dT%H:%M:%SZ")
    if name == "FieldsV1":
        # Its one field holds the JSON form of the field set.
        field_set = next((bytes(v) for n, _, v in _fields(data) if n == 1), b"")
        return orjson.loads(field_set) if field_set else {}
    obj: dict[str, Any] = {}
    for number, wire, value in _fields(data):
        if number not in schema:
            raise ProtobufError(f"field {number} of {name} is not supported in protobuf; send JSON")
        key, how = schema[number]
        # Go's generated code writes non-pointer fields even when empty; their JSON form
        # omits them (omitempty), so empty strings, a zero generation and the zero Time go.
        if how == "string":
            if value:
                obj[key] = bytes(value).decode()
        elif how == "int":
            number_value = _signed(value) if wire == 0 else int.from_bytes(value, "little", signed=True)
            if number_value or key != "generation":
                obj[key] = number_value
        elif how == "bool":
            obj[key] = bool(value)
        elif how == "bytes":
            obj[key] = bytes(value)
        elif how == "time":
            if value:
                obj[key] = decode_message("Time", value)
        elif how == "strings":
            obj.setdefault(key, []).append(bytes(value).decode())
        elif how == "map":
            entry = decode_message("MapEntry", value)
            obj.setdefault(key, {})[entry.get("key", "")] = entry.get("value", "")
        elif how.endswith("[]"):
            obj.setdefault(key, []).append(decode_message(how[:-2], value))
        else:
            obj[key] = decode_message(how, value)
    return obj


def decode(body: bytes) -> dict[str, Any]:
    """A Kubernetes protobuf body (``k8s\\0`` + runtime.Unknown) as a JSON-shaped dict."""
    if not body.startswith(MAGIC):
        raise ProtobufError("the body does not start with Kubernetes' protobuf magic bytes")
    envelope = decode_message("Unknown", body[len(MAGIC):])
    type_meta = envelope.get("typeMeta") or {}
    api_version, kind = type_meta.get("apiVersion", ""), type_meta.get("kind", "")
    message = KINDS.get((api_version, kind))
    if message is None:
        raise ProtobufError(f"{api_version}/{kind} is not accepted in protobuf by kubesim; send JSON")
    obj: dict[str, Any] = decode_message(message, envelope.get("raw", b""))
    obj["apiVersion"], obj["kind"] = api_version, kind
    return obj
