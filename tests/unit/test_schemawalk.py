"""The compiled schema walk: Go's decoding of built-in kinds and the pruning of custom resources."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from apiserver import codec, errors, schemawalk
from machinery.api import kinds
from machinery.api import schema as defs

POD: dict[str, Any] = {
    "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"a": "b"}},
    "spec": {"containers": [{"name": "c", "image": "nginx", "ports": [{"containerPort": 80}],
                             "resources": {"requests": {"cpu": 1, "memory": 0.5}}}],
             "nodeSelector": {"disk": "ssd"}},
}


def _decode(change: Any, mode: str = "Warn") -> tuple[dict[str, Any], list[str]]:
    pod = copy.deepcopy(POD)
    change(pod)
    warnings: list[str] = []
    codec.check_fields(pod, kinds.PODS, mode, warnings)
    return pod, warnings


@pytest.mark.parametrize(("change", "message"), [
    pytest.param(lambda p: p["spec"]["containers"][0]["ports"][0].update(containerPort="80"),
                 "cannot unmarshal string into Go struct field ContainerPort.spec.containers.ports.containerPort "
                 "of type int32", id="string-for-int32"),
    pytest.param(lambda p: p["spec"]["containers"][0]["ports"][0].update(containerPort=1.5),
                 "cannot unmarshal number 1.5 into Go struct field ContainerPort.spec.containers.ports."
                 "containerPort of type int32", id="fraction-for-int32"),
    pytest.param(lambda p: p["spec"]["containers"][0]["ports"][0].update(containerPort=2**31),
                 "cannot unmarshal number 2147483648 into Go struct field ContainerPort.spec.containers.ports."
                 "containerPort of type int32", id="int32-overflow"),
    pytest.param(lambda p: p.update(spec="x"),
                 "cannot unmarshal string into Go struct field Pod.spec of type v1.PodSpec", id="string-for-struct"),
    pytest.param(lambda p: p["spec"].update(containers={"a": 1}),
                 "cannot unmarshal object into Go struct field PodSpec.spec.containers of type []v1.Container",
                 id="object-for-list"),
    pytest.param(lambda p: p["spec"]["nodeSelector"].update(disk=True),
                 "cannot unmarshal bool into Go struct field PodSpec.spec.nodeSelector of type string",
                 id="map-value"),
    pytest.param(lambda p: p["metadata"].update(labels=["a"]),
                 "cannot unmarshal array into Go struct field ObjectMeta.metadata.labels of type map[string]string",
                 id="metadata"),
])
def test_wrong_types_are_worded_as_go(change: Any, message: str) -> None:
    with pytest.raises(errors.APIError) as e:
        _decode(change)
    assert e.value.code == 400
    assert e.value.message == f'Pod in version "v1" cannot be handled as a Pod: json: {message}'


def test_quantities_numbers_and_nulls() -> None:
    pod, warnings = _decode(lambda p: p["spec"].update(hostname=None, priority=3.0))
    assert pod["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "1", "memory": "0.5"}
    assert pod["spec"]["priority"] == 3 and type(pod["spec"]["priority"]) is int
    assert pod["spec"]["hostname"] is None and warnings == []


def test_unknown_fields_per_mode() -> None:
    def add(p: dict[str, Any]) -> None:
        p["spec"]["containers"][0]["imagee"] = "x"
        p["spec"]["nodeSelector"]["any-key"] = "ok"  # a map takes any key
        p["bogus"] = 1
    pod, warnings = _decode(add)
    assert warnings == ['unknown field "spec.containers[0].imagee"', 'unknown field "bogus"']
    assert "imagee" not in pod["spec"]["containers"][0] and "bogus" not in pod
    assert pod["spec"]["nodeSelector"]["any-key"] == "ok"
    assert _decode(add, "Ignore")[1] == []
    with pytest.raises(errors.APIError) as e:
        _decode(add, "Strict")
    assert e.value.message == ('strict decoding error: unknown field "spec.containers[0].imagee", '
                               'unknown field "bogus"')


def test_a_type_error_wins_over_unknown_fields() -> None:
    def both(p: dict[str, Any]) -> None:
        p["bogus"] = 1
        p["spec"]["hostNetwork"] = "yes"
    with pytest.raises(errors.APIError) as e:
        _decode(both, "Strict")
    assert "cannot unmarshal string" in e.value.message


@pytest.fixture
def widget() -> Any:
    structural = {
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"}, "kind": {"type": "string"},
            "metadata": {"$ref": "#/$defs/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"},
            "spec": {"type": "object", "properties": {
                "size": {"type": "integer"},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                         "properties": {"n": {"type": "integer"}}},
                "empty": {"type": "object"},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "items": {"type": "array", "items": {"type": "object", "properties": {"a": {"type": "string"}}}},
                "template": {"type": "object", "x-kubernetes-embedded-resource": True,
                             "properties": {"spec": {"type": "object", "properties": {"x": {"type": "string"}}}}},
            }},
        },
    }
    defs.set_custom_definitions("widgets.example.com", {"com.example.v1.Widget": structural})
    yield "com.example.v1.Widget"
    defs.set_custom_definitions("widgets.example.com", {})


def test_custom_resources_are_pruned_not_type_checked(widget: str) -> None:
    obj = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "bogus": 1},
           "top": 1,
           "spec": {"size": "big", "extra": 1, "free": {"n": 1, "anything": {"x": 1}}, "empty": {"gone": 1},
                    "labels": {"k": "v"}, "items": [{"a": "x", "b": 2}],
                    "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "t", "zz": 1},
                                 "spec": {"x": "y", "z": 1}}}}
    out = schemawalk.walk(obj, widget, root="Widget")
    assert out.type_error is None and obj["spec"]["size"] == "big"
    assert sorted(schemawalk.render_path(p) for p in out.unknown) == sorted([
        "metadata.bogus", "spec.empty.gone", "spec.items[0].b", "spec.template.metadata.zz",
        "spec.template.spec.z", "spec.extra", "top"])
    assert obj["spec"]["free"] == {"n": 1, "anything": {"x": 1}}
    assert obj["spec"]["empty"] == {} and obj["spec"]["items"] == [{"a": "x"}]
    assert obj["spec"]["template"] == {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "t"},
                                       "spec": {"x": "y"}}


def test_a_changed_schema_is_compiled_again(widget: str) -> None:
    obj = {"spec": {"size": 1, "color": "red"}}
    assert schemawalk.walk(obj, widget, root="Widget").unknown == [("spec", "color")]
    defs.set_custom_definitions("widgets.example.com", {widget: {
        "type": "object", "properties": {"spec": {"type": "object", "properties": {"color": {"type": "string"}}}}}})
    obj = {"spec": {"size": 1, "color": "red"}}
    assert schemawalk.walk(obj, widget, root="Widget").unknown == [("spec", "size")]
