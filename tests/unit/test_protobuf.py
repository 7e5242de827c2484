"""The generic protobuf decoder: field numbers from Kubernetes' descriptors, JSON forms, zero values.

Bodies are built here field by field as gogo-protobuf writes them (every
non-pointer field, even at its zero value); ``tests/integration/
test_kubectl_protobuf.py`` decodes what the real kubectl binaries send.
"""

from __future__ import annotations

import json
import struct
from importlib import resources

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


def field(number: int, value: bytes | int | str | bool) -> bytes:
    if isinstance(value, (int, bool)):
        return varint(number << 3) + varint(int(value))
    data = value.encode() if isinstance(value, str) else value
    return varint(number << 3 | 2) + varint(len(data)) + data


def entry(key: str, value: bytes | str | int) -> bytes:
    return field(1, key) + field(2, value)


def envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    type_meta = field(1, api_version) + field(2, kind)
    return protobuf.MAGIC + field(1, type_meta) + field(2, raw) + field(3, "") + field(4, "")


def meta(name: str, **more: bytes) -> bytes:
    """ObjectMeta as Go writes it: name, then every non-pointer field at its zero value."""
    body = (field(1, name) + field(2, "") + field(3, "") + field(4, "") + field(5, "") + field(6, "")
            + field(7, 0) + field(8, b""))
    for number, value in more.items():
        body += field(int(number.lstrip("f")), value)
    return body


ZERO_TIME = b""


def pod_template(container: bytes, *extra_spec: bytes) -> bytes:
    # PodSpec: containers = 2, restartPolicy = 3 (""), dnsPolicy = 6 (""), hostNetwork = 11 (false),
    # serviceAccountName = 8 (""), enableServiceLinks = 30 (a pointer).
    spec = field(2, container) + field(3, "") + field(6, "") + field(8, "") + field(11, 0) + b"".join(extra_spec)
    return field(1, meta("")) + field(2, spec)


def container(name: str, image: str) -> bytes:
    # name = 1, image = 2, resources = 8 (an empty struct), terminationMessagePath = 13, imagePullPolicy = 14,
    # stdin = 16 (false).
    return field(1, name) + field(2, image) + field(8, b"") + field(13, "") + field(14, "") + field(16, 0)


def test_deployment_as_kubectl_create_deployment_sends_it() -> None:
    template = pod_template(container("nginx", "nginx:1.25"), field(30, 0))
    # DeploymentSpec: replicas = 1 (pointer), selector = 2, template = 3, strategy = 4, minReadySeconds = 5,
    # paused = 7.
    spec = (field(1, 0) + field(2, field(1, entry("app", "web"))) + field(3, template) + field(4, b"")
            + field(5, 0) + field(7, 0))
    body = envelope("apps/v1", "Deployment", field(1, meta("web", f11=entry("app", "web"))) + field(2, spec)
                    + field(3, b""))
    assert protobuf.decode(body) == {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {
            "replicas": 0,  # a pointer: the client set it
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {}, "spec": {
                "containers": [{"name": "nginx", "image": "nginx:1.25", "resources": {}}],
                "enableServiceLinks": False,  # a pointer too
            }},
            "strategy": {},
        },
        "status": {},
    }


def test_secret_bytes_are_base64_and_map_values_stay_even_when_empty() -> None:
    body = envelope("v1", "Secret", field(1, meta("s")) + field(2, entry("key", b"\x00\xffsecret"))
                    + field(2, entry("empty", b"")) + field(4, entry("plain", "")) + field(3, "Opaque"))
    assert protobuf.decode(body) == {
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"},
        "data": {"key": "AP9zZWNyZXQ=", "empty": ""}, "stringData": {"plain": ""}, "type": "Opaque",
    }


def test_configmap_binary_data_and_immutable_pointer() -> None:
    body = envelope("v1", "ConfigMap", field(1, meta("c")) + field(2, entry("a", "1")) + field(3, entry("b", b"\x01"))
                    + field(4, 0))
    assert protobuf.decode(body) == {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
                                     "data": {"a": "1"}, "binaryData": {"b": "AQ=="}, "immutable": False}


def test_service_ports_int_or_string_and_zero_values() -> None:
    # ServicePort: name = 1, protocol = 2, port = 3 (required), targetPort = 4, nodePort = 5.
    # IntOrString: type = 1 (0 int, 1 string), intVal = 2, strVal = 3.
    by_number = field(1, "") + field(2, "TCP") + field(3, 80) + field(4, field(1, 0) + field(2, 8080) + field(3, ""))
    by_name = field(1, "b") + field(2, "TCP") + field(3, 0) + field(4, field(1, 1) + field(2, 0) + field(3, "http"))
    by_name += field(5, 0)
    # ServiceSpec: ports = 1, selector = 2, clusterIP = 3, type = 4, sessionAffinity = 7.
    spec = field(1, by_number) + field(1, by_name) + field(2, entry("app", "web")) + field(3, "") + field(4, "ClusterIP")
    out = protobuf.decode(envelope("v1", "Service", field(1, meta("web")) + field(2, spec) + field(3, b"")))
    assert out["spec"] == {
        "ports": [{"protocol": "TCP", "port": 80, "targetPort": 8080},
                  {"name": "b", "protocol": "TCP", "port": 0, "targetPort": "http"}],
        "selector": {"app": "web"}, "type": "ClusterIP",
    }


def test_resource_lists_hold_quantities() -> None:
    quantity = field(1, "250m")
    resources_ = field(2, entry("cpu", quantity) + b"") + field(2, field(1, "memory") + field(2, field(1, "64Mi")))
    body = envelope("v1", "Pod", field(1, meta("p")) + field(2, field(2, field(1, "c") + field(8, resources_))))
    out = protobuf.decode(body)
    assert out["spec"]["containers"][0]["resources"] == {"requests": {"cpu": "250m", "memory": "64Mi"}}


@pytest.mark.parametrize("message,value,expected", [
    ("Time", field(1, 1_700_000_000) + field(2, 0), "2023-11-14T22:13:20Z"),
    ("Time", field(1, 0) + field(2, 0), "1970-01-01T00:00:00Z"),
    ("MicroTime", field(1, 1_700_000_000) + field(2, 123_456_789), "2023-11-14T22:13:20.123456Z"),
], ids=["time", "epoch-is-not-zero", "microtime"])
def test_times(message: str, value: bytes, expected: str) -> None:
    assert protobuf.decode_message(f"k8s.io.apimachinery.pkg.apis.meta.v1.{message}", value) == expected


def test_the_zero_time_is_left_out_like_json_null() -> None:
    out = protobuf.decode(envelope("v1", "Namespace", field(1, meta("n", f9=ZERO_TIME))))
    assert out["metadata"] == {"name": "n"}


def test_event_times_and_durations() -> None:
    # events.k8s.io/v1 Event: eventTime = 2 (MicroTime), reportingController = 4.
    body = envelope("events.k8s.io/v1", "Event", field(1, meta("e")) + field(2, field(1, 1) + field(2, 5000))
                    + field(4, "me"))
    out = protobuf.decode(body)
    assert out["eventTime"] == "1970-01-01T00:00:01.000005Z" and out["reportingController"] == "me"


@pytest.mark.parametrize("nanos,text", [
    (0, "0s"), (1, "1ns"), (1_500, "1.5µs"), (1_500_000, "1.5ms"), (1_000_000_000, "1s"),
    (90_000_000_000, "1m30s"), (3_600_000_000_000, "1h0m0s"), (3_723_500_000_000, "1h2m3.5s"),
    (-2_000_000_000, "-2s"),
])
def test_go_durations(nanos: int, text: str) -> None:
    assert protobuf.go_duration(nanos) == text
    duration = field(1, nanos)
    assert protobuf.decode_message("k8s.io.apimachinery.pkg.apis.meta.v1.Duration", duration) == text


def test_named_slices_are_plain_arrays() -> None:
    # authentication/v1 SelfSubjectReview: status = 2 -> userInfo = 1 -> username = 1, groups = 3,
    # extra = 4 (map<string, ExtraValue>, ExtraValue is {repeated string items = 1}).
    extra = field(1, "scopes") + field(2, field(1, "a") + field(1, "b"))
    user = field(1, "alice") + field(2, "") + field(3, "dev") + field(3, "ops") + field(4, extra)
    out = protobuf.decode(envelope("authentication.k8s.io/v1", "SelfSubjectReview",
                                   field(1, meta("")) + field(2, field(1, user))))
    assert out["status"] == {"userInfo": {"username": "alice", "groups": ["dev", "ops"],
                                          "extra": {"scopes": ["a", "b"]}}}


def test_raw_extensions_hold_json_or_nested_protobuf() -> None:
    # apps/v1 ControllerRevision: data = 2 (RawExtension: raw = 1), revision = 3.
    body = envelope("apps/v1", "ControllerRevision", field(1, meta("r")) + field(2, field(1, b'{"spec":{"a":1}}'))
                    + field(3, 2))
    assert protobuf.decode(body)["data"] == {"spec": {"a": 1}}
    nested = envelope("v1", "ConfigMap", field(1, meta("inner")))
    body = envelope("apps/v1", "ControllerRevision", field(1, meta("r")) + field(2, field(1, nested)) + field(3, 2))
    assert protobuf.decode(body)["data"] == {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "inner"}}
    empty = envelope("apps/v1", "ControllerRevision", field(1, meta("r")) + field(2, b"") + field(3, 1))
    assert "data" not in protobuf.decode(empty)


def test_managed_fields_keep_their_field_sets() -> None:
    # ManagedFieldsEntry: manager = 1, operation = 2, apiVersion = 3, time = 4, fieldsType = 6, fieldsV1 = 7.
    managed = (field(1, "kubectl") + field(2, "Update") + field(3, "v1") + field(4, field(1, 1_700_000_000))
               + field(6, "FieldsV1") + field(7, field(1, b'{"f:data":{".":{}}}')) + field(8, ""))
    out = protobuf.decode(envelope("v1", "ConfigMap", field(1, meta("c", f17=managed))))
    assert out["metadata"]["managedFields"] == [{
        "manager": "kubectl", "operation": "Update", "apiVersion": "v1", "time": "2023-11-14T22:13:20Z",
        "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {".": {}}}}]


def test_custom_resource_definition_schemas() -> None:
    ext = "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1."
    if protobuf.message_for("apiextensions.k8s.io/v1", "CustomResourceDefinition") is None:
        pytest.skip("the descriptors were generated without apiextensions")
    # JSONSchemaProps: type = 5, default = 8 (JSON), items = 24 (OrArray), properties = 29,
    # additionalProperties = 30 (OrBool), x-kubernetes-preserve-unknown-fields = 38 (a pointer).
    string = field(5, "string") + field(8, field(1, b'"x"'))
    schema = (field(5, "object") + field(29, entry("name", string))
              + field(29, field(1, "tags") + field(2, field(5, "array") + field(24, field(1, field(5, "string")))))
              + field(30, field(1, 0)) + field(38, 1))
    assert protobuf.decode_message(ext + "JSONSchemaProps", schema) == {
        "type": "object",
        "properties": {"name": {"type": "string", "default": "x"},
                       "tags": {"type": "array", "items": {"type": "string"}}},
        "additionalProperties": False,
        "x-kubernetes-preserve-unknown-fields": True,
    }
    with_schema = field(1, 1) + field(2, field(5, "integer"))
    assert protobuf.decode_message(ext + "JSONSchemaPropsOrBool", with_schema) == {"type": "integer"}


def test_fields_unknown_to_the_definitions_are_skipped_as_kubernetes_does() -> None:
    body = envelope("v1", "Namespace", field(1, meta("n") + field(999, "from a newer client")) + field(77, 1))
    assert protobuf.decode(body) == {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n"}}


def test_repeated_numbers_packed_or_not() -> None:
    # core/v1 NodeSelectorRequirement has none; Capabilities is strings. A packed int32 list: PodSecurityContext
    # supplementalGroups = 4 (repeated int64).
    packed = field(4, varint(1) + varint(2) + varint((1 << 64) - 3))
    unpacked = field(4, 7) + field(4, 8)
    for raw, expected in ((packed, [1, 2, -3]), (unpacked, [7, 8])):
        spec = field(14, raw)
        out = protobuf.decode(envelope("v1", "Pod", field(1, meta("p")) + field(2, spec)))
        assert out["spec"]["securityContext"]["supplementalGroups"] == expected


def test_negative_and_zero_integers_keep_their_meaning() -> None:
    # DeleteOptions.gracePeriodSeconds is a pointer: 0 and -1 are both meaningful.
    assert protobuf.decode(envelope("v1", "DeleteOptions", field(1, 0)))["gracePeriodSeconds"] == 0
    assert protobuf.decode(envelope("v1", "DeleteOptions", field(1, -1)))["gracePeriodSeconds"] == -1


def test_eviction_with_delete_options_as_kubectl_drain_sends_it() -> None:
    options = field(1, 30) + field(2, field(1, "uid-1")) + field(4, "Foreground") + field(5, "All")
    body = envelope("policy/v1", "Eviction", field(1, field(1, "web-1") + field(3, "default")) + field(2, options))
    assert protobuf.decode(body) == {
        "apiVersion": "policy/v1", "kind": "Eviction",
        "metadata": {"name": "web-1", "namespace": "default"},
        "deleteOptions": {"gracePeriodSeconds": 30, "preconditions": {"uid": "uid-1"},
                          "propagationPolicy": "Foreground", "dryRun": ["All"]},
    }


def test_delete_options_in_meta_group() -> None:
    body = envelope("meta.k8s.io/v1", "DeleteOptions", field(4, "Orphan"))
    assert protobuf.decode(body) == {"apiVersion": "meta.k8s.io/v1", "kind": "DeleteOptions",
                                     "propagationPolicy": "Orphan"}


def test_floats() -> None:
    # autoscaling/v2 HPA has no floats; apiextensions' maximum is a double, when the descriptors have it.
    ext = "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps"
    if protobuf.message_for("apiextensions.k8s.io/v1", "CustomResourceDefinition") is None:
        pytest.skip("the descriptors were generated without apiextensions")
    raw = varint(9 << 3 | 1) + struct.pack("<d", 2.5)
    assert protobuf.decode_message(ext, raw) == {"maximum": 2.5}


def test_every_served_kind_has_a_protobuf_message() -> None:
    """Every built-in resource kubesim serves can be sent as protobuf, but APIService (kube-aggregator's types
    are in no kubectl binary; clients of the aggregator send JSON)."""
    data = json.loads((resources.files("machinery.api") / "builtin_resources.json").read_bytes())
    missing = []
    for r in data["resources"]:
        api_version = f"{r['group']}/{r['version']}" if r["group"] else r["version"]
        if protobuf.message_for(api_version, r["kind"]) is None:
            missing.append(f"{api_version}/{r['kind']}")
    assert missing == ["apiregistration.k8s.io/v1/APIService"]


def deep(levels: int) -> bytes:
    """JSONSchemaProps nested through ``not`` (field 28) ``levels`` times."""
    inner = b""
    for _ in range(levels):
        inner = field(28, inner)
    return inner


@pytest.mark.parametrize("body,message", [
    (b'{"kind":"Namespace"}', "magic bytes"),
    (envelope("example.com/v1", "Widget", b""), "example.com/v1/Widget has no protobuf definition"),
    (envelope("apiregistration.k8s.io/v1", "APIService", b""), "has no protobuf definition"),
    (protobuf.MAGIC + b"\x0a\xff", "truncated"),
    (envelope("v1", "Namespace", field(1, 7)), "is varint, not length-delimited"),
    (envelope("v1", "Namespace", varint(1 << 3 | 6)), "unsupported wire type 6"),
    (envelope("apps/v1", "ControllerRevision", field(2, field(1, b"{not json"))), "does not hold JSON"),
    (protobuf.MAGIC + field(1, field(1, "v1") + field(2, "Namespace")) + field(3, "gzip"), "content encoding"),
], ids=["not-protobuf", "unknown-kind", "no-definition", "truncated", "wrong-wire-type", "bad-wire-type",
        "raw-extension-not-json", "content-encoding"])
def test_unreadable_bodies_are_errors(body: bytes, message: str) -> None:
    with pytest.raises(protobuf.ProtobufError, match=message):
        protobuf.decode(body)


def test_nesting_is_bounded() -> None:
    ext = "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps"
    if protobuf.message_for("apiextensions.k8s.io/v1", "CustomResourceDefinition") is None:
        pytest.skip("the descriptors were generated without apiextensions")
    assert protobuf.decode_message(ext, deep(20))
    with pytest.raises(protobuf.ProtobufError, match="nests deeper"):
        protobuf.decode_message(ext, deep(protobuf.MAX_DEPTH + 5))
