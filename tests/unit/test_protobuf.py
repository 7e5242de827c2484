"""Reading the protobuf bodies kubectl's typed clients send (Namespace, Eviction, DeleteOptions)."""

from __future__ import annotations

import pytest

from apiserver import protobuf


def varint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(number: int, value: bytes | int | str) -> bytes:
    if isinstance(value, int):
        return varint(number << 3) + varint(value)
    data = value.encode() if isinstance(value, str) else value
    return varint(number << 3 | 2) + varint(len(data)) + data


def envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    type_meta = field(1, api_version) + field(2, kind)
    return protobuf.MAGIC + field(1, type_meta) + field(2, raw) + field(3, "") + field(4, "")


def test_namespace_as_kubectl_create_namespace_sends_it() -> None:
    meta = (field(1, "demo") + field(2, "") + field(3, "") + field(7, 0) + field(8, b"")
            + field(11, field(1, "team") + field(2, "a")) + field(14, "example.com/hold"))
    body = envelope("v1", "Namespace", field(1, meta) + field(2, b"") + field(3, b""))
    assert protobuf.decode(body) == {
        "apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "demo", "labels": {"team": "a"}, "finalizers": ["example.com/hold"]},
        "spec": {}, "status": {},
    }


def test_eviction_with_delete_options_as_kubectl_drain_sends_it() -> None:
    options = field(1, 30) + field(2, field(1, "uid-1")) + field(4, "Foreground") + field(5, "All")
    body = envelope("policy/v1", "Eviction", field(1, field(1, "web-1") + field(3, "default")) + field(2, options))
    assert protobuf.decode(body) == {
        "apiVersion": "policy/v1", "kind": "Eviction",
        "metadata": {"name": "web-1", "namespace": "default"},
        "deleteOptions": {"gracePeriodSeconds": 30, "preconditions": {"uid": "uid-1"},
                          "propagationPolicy": "Foreground", "dryRun": ["All"]},
    }


def test_negative_and_zero_integers_keep_their_meaning() -> None:
    body = envelope("v1", "DeleteOptions", field(1, 0))
    assert protobuf.decode(body)["gracePeriodSeconds"] == 0
    body = envelope("v1", "DeleteOptions", field(1, -1))
    assert protobuf.decode(body)["gracePeriodSeconds"] == -1


def test_time_fields() -> None:
    meta = field(1, "t") + field(8, field(1, 1_700_000_000))
    body = envelope("v1", "Namespace", field(1, meta))
    assert protobuf.decode(body)["metadata"]["creationTimestamp"] == "2023-11-14T22:13:20Z"


@pytest.mark.parametrize("body,message", [
    (b'{"kind":"Namespace"}', "magic bytes"),
    (envelope("v1", "Pod", b""), "v1/Pod is not accepted in protobuf"),
    (envelope("v1", "Namespace", field(1, field(99, "x"))), "field 99 of ObjectMeta is not supported"),
    (protobuf.MAGIC + b"\x0a\xff", "truncated"),
], ids=["not-protobuf", "unsupported-kind", "unknown-field", "truncated"])
def test_unreadable_bodies_are_errors(body: bytes, message: str) -> None:
    with pytest.raises(protobuf.ProtobufError, match=message):
        protobuf.decode(body)
