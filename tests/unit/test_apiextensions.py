"""The pure parts of apiextensions: CEL with Kubernetes' libraries, structural checks, defaulting, JSONPath."""

from __future__ import annotations

from typing import Any

import hypothesis
import pytest
from hypothesis import strategies as st

from apiserver.apiextensions import cel, crdvalidation, jsonpath, structural
from apiserver.apiextensions.defaulting import compile_defaulter
from apiserver.apiextensions.validation import SchemaValidator


def _run(rule: str, self_value: Any, old: Any = None) -> Any:
    compiled = cel.compile_rule({"rule": rule})
    return cel.evaluate(compiled.program, self_value, old, has_old=old is not None)


@pytest.mark.parametrize(("rule", "value"), [
    pytest.param("self.l.isSorted() && self.l.sum() == 6 && self.l.max() == 3 && self.l.indexOf(2) == 1",
                 {"l": [1, 2, 3]}, id="lists"),
    pytest.param("self.s.find('[0-9]+') == '42' && self.s.findAll('[a-z]').size() == 3", {"s": "abc42"},
                 id="regex"),
    pytest.param("isURL(self.u) && url(self.u).getHostname() == 'example.com' && url(self.u).getPort() == '8080'",
                 {"u": "https://example.com:8080/x"}, id="url"),
    pytest.param("quantity(self.q).isGreaterThan(quantity('1')) && quantity('1') == quantity('1000m')",
                 {"q": "1500m"}, id="quantity"),
    pytest.param("isQuantity(self.q) && !isQuantity('1.2.3')", {"q": "2Gi"}, id="is-quantity"),
    pytest.param("quantity(self.q).add(quantity('500m')).compareTo(quantity('2')) == 0", {"q": "1500m"},
                 id="quantity-add"),
    pytest.param("ip(self.ip).family() == 4 && cidr('10.0.0.0/8').containsIP(self.ip) && isCIDR('::/0')",
                 {"ip": "10.1.2.3"}, id="ip-cidr"),
    pytest.param("sets.contains(self.l, [1]) && sets.intersects(self.l, [3, 9])", {"l": [1, 2, 3]}, id="sets"),
    pytest.param("self.s.lowerAscii() == 'ab' && self.s.split('').size() == 2", {"s": "AB"}, id="strings"),
    pytest.param("self.?missing.orValue(7) == 7", {}, id="optional"),
    pytest.param("self.x == oldSelf.x", {"x": 1}, id="transition"),
])
def test_kubernetes_cel_libraries(rule: str, value: Any) -> None:
    assert _run(rule, value, value if "oldSelf" in rule else None) is True


def test_cel_errors_are_worded_as_kubernetes() -> None:
    with pytest.raises(cel.EvaluationError, match="^no such key: nope$"):
        _run("self.nope > 1", {})
    with pytest.raises(cel.EvaluationError, match="actual cost limit exceeded"):
        _run("self.l.all(a, self.l.all(b, self.l.all(c, self.l.all(d, true))))", {"l": list(range(300))})
    with pytest.raises(cel.CELError, match=r"^compilation failed: ERROR: <input>:1:4: Syntax error"):
        cel.compile_rule({"rule": "1 +"})
    with pytest.raises(cel.CELError, match="kubesim does not implement"):
        cel.compile_rule({"rule": "isSemver(self)"})
    with pytest.raises(cel.CELError, match="^compilation failed: format is a Kubernetes CEL function kubesim"):
        cel.compile_rule({"rule": "!format.dns1123Label().validate(self).hasValue()"})
    assert _run("cel.bind(n, self.size(), n > 1)", "ab") is True  # Kubernetes' bindings library
    assert cel.compile_rule({"rule": "self.x == oldSelf.x"}).transition
    assert not cel.compile_rule({"rule": "self.x == 'oldSelf'"}).transition


def test_property_names_are_escaped_for_cel() -> None:
    schema = {"type": "object", "properties": {"a-b": {"type": "integer"}, "in": {"type": "integer"}}}
    validator = SchemaValidator({**schema, "x-kubernetes-validations": [{"rule": "self.a__dash__b == self.__in__"}]})
    assert validator.validate({"a-b": 1, "in": 1}) == []
    assert validator.validate({"a-b": 1, "in": 2})[0].detail == "failed rule: self.a__dash__b == self.__in__"


@pytest.mark.parametrize(("schema", "field", "detail"), [
    pytest.param({"type": "object", "properties": {"a": {}}}, "s.properties[a].type",
                 "must not be empty for specified object fields", id="untyped"),
    pytest.param({"type": "object", "properties": {"a": {"type": "array"}}}, "s.properties[a].items",
                 "must be specified", id="array-without-items"),
    pytest.param({"type": "object", "properties": {"a": {"$ref": "#/x"}}}, "s.properties[a].$ref",
                 "$ref is not supported", id="ref"),
    pytest.param({"type": "string"}, "s.type", "must be object at the root", id="root"),
    pytest.param({"type": "object", "properties": {"a": {"type": "array", "items": {"type": "string"},
                                                         "uniqueItems": True}}},
                 "s.properties[a].uniqueItems", "uniqueItems cannot be set to true since the runtime complexity "
                 "becomes quadratic", id="unique-items"),
    pytest.param({"type": "object", "properties": {"a": {"type": "object", "additionalProperties": {
        "type": "string"}, "properties": {"b": {"type": "string"}}}}}, "s.properties[a].additionalProperties",
                 "additionalProperties and properties are mutual exclusive", id="both"),
    pytest.param({"type": "object", "properties": {"a": {"type": "array", "x-kubernetes-list-type": "map",
                                                         "items": {"type": "object"}}}},
                 "s.properties[a].x-kubernetes-list-map-keys", "must not be empty if x-kubernetes-list-type is map",
                 id="list-map-keys"),
    pytest.param({"type": "object", "properties": {"a": {"anyOf": [{"type": "string"}]}}},
                 "s.properties[a].anyOf[0].type", "must be empty to be structural", id="junctor-type"),
    pytest.param({"type": "object", "properties": {"metadata": {"type": "object", "properties": {
        "labels": {"type": "object"}}}}}, "s.properties[metadata]",
                 "must not specify anything other than name and generateName", id="metadata"),
])
def test_structural_violations(schema: dict[str, Any], field: str, detail: str) -> None:
    errs = structural.check(schema, "s")
    assert any(e.field == field and detail in e.detail for e in errs), [str(e) for e in errs]


def test_a_structural_schema_passes_and_depth_is_bounded() -> None:
    ok = {"type": "object", "properties": {"a": {"x-kubernetes-int-or-string": True},
                                           "b": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}
    assert structural.check(ok, "s") == []
    deep: dict[str, Any] = {"type": "string"}
    for _ in range(structural.MAX_DEPTH + 5):
        deep = {"type": "object", "properties": {"n": deep}}
    assert any("nested more than" in e.detail for e in structural.check(deep, "s"))


def test_defaulting() -> None:
    schema = {"type": "object", "properties": {
        "a": {"type": "integer", "default": 1},
        "o": {"type": "object", "default": {}, "properties": {"x": {"type": "string", "default": "y"}}},
        "n": {"type": "string"}, "k": {"type": "string", "nullable": True},
        "l": {"type": "array", "items": {"type": "object", "properties": {"p": {"type": "integer", "default": 80}}}},
    }}
    defaulter = compile_defaulter(schema)
    assert defaulter is not None
    obj: dict[str, Any] = {"n": None, "k": None, "l": [{}, {"p": 1}]}
    defaulter(obj)
    assert obj == {"a": 1, "o": {"x": "y"}, "k": None, "l": [{"p": 80}, {"p": 1}]}
    assert compile_defaulter({"type": "string"}) is None


@pytest.mark.parametrize(("path", "expected"), [
    (".spec.replicas", [3]),
    ("{.spec.replicas}", [3]),
    (".status.conditions[?(@.type==\"Ready\")].status", ["True"]),
    (".status.conditions[*].type", ["Ready", "Synced"]),
    (".status.conditions[-1].type", ["Synced"]),
    (".metadata.labels['app.kubernetes.io/name']", ["web"]),
    (".spec.missing", []),
])
def test_jsonpath(path: str, expected: list[Any]) -> None:
    obj = {"metadata": {"labels": {"app.kubernetes.io/name": "web"}}, "spec": {"replicas": 3},
           "status": {"conditions": [{"type": "Ready", "status": "True"}, {"type": "Synced", "status": "False"}]}}
    assert jsonpath.find(obj, path) == expected
    with pytest.raises(jsonpath.JSONPathError):
        jsonpath.parse("spec.replicas")


_json = st.recursive(st.none() | st.booleans() | st.integers(-5, 5) | st.floats(allow_nan=False) |
                     st.sampled_from(["", "a", "object", "array", "string", "integer", "map", "[", "v1"]),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
                         st.sampled_from(["type", "properties", "items", "additionalProperties", "required",
                                          "enum", "default", "pattern", "x-kubernetes-list-type",
                                          "x-kubernetes-list-map-keys", "x-kubernetes-validations", "rule",
                                          "anyOf", "metadata", "spec", "a", "x-kubernetes-int-or-string",
                                          "x-kubernetes-embedded-resource", "minimum", "maxLength", "$ref"]),
                         inner, max_size=4),
                     max_leaves=20)


@hypothesis.settings(max_examples=150, deadline=None, derandomize=True)
@hypothesis.given(schema=_json, value=_json)
def test_any_schema_and_value_give_field_errors_never_an_exception(schema: Any, value: Any) -> None:
    crd = {"metadata": {"name": "ws.example.com"},
           "spec": {"group": "example.com", "scope": "Namespaced", "names": {"plural": "ws", "kind": "W"},
                    "versions": [{"name": "v1", "served": True, "storage": True,
                                  "schema": {"openAPIV3Schema": schema}}]}}
    errs = crdvalidation.validate_crd(crd)
    if not errs:
        SchemaValidator(schema).validate(value, value)
        defaulter = compile_defaulter(schema)
        if defaulter is not None:
            defaulter(value)


def test_rule_reasons_field_paths_and_optional_old_self() -> None:
    """fieldPath and reason shape the error as Kubernetes' fieldErrorForReason; optionalOldSelf runs on create."""
    validator = SchemaValidator({"type": "object", "properties": {"spec": {
        "type": "object",
        "properties": {"name": {"type": "string"}, "mode": {"type": "string"}, "once": {"type": "string"}},
        "x-kubernetes-validations": [
            {"rule": "self.name != 'bad'", "fieldPath": ".name", "reason": "FieldValueForbidden",
             "message": "name may not be bad"},
            {"rule": "has(self.mode)", "fieldPath": ".mode", "reason": "FieldValueRequired",
             "message": "mode is required"},
            {"rule": "self.name != 'dup'", "reason": "FieldValueDuplicate"},
            {"rule": "!oldSelf.hasValue() || oldSelf.value().once == self.once", "optionalOldSelf": True,
             "messageExpression": "'once was ' + (oldSelf.hasValue() ? oldSelf.value().once : 'unset')"},
        ]}}})
    assert validator.rule_errors == []
    created = [str(e) for e in validator.validate({"spec": {"name": "bad", "once": "a"}})]
    assert created == ["spec.name: Forbidden: name may not be bad", "spec.mode: Required value: mode is required"]
    updated = [str(e) for e in validator.validate({"spec": {"name": "dup", "mode": "m", "once": "b"}},
                                                  {"spec": {"name": "x", "mode": "m", "once": "a"}})]
    assert updated == ['spec: Duplicate value: "object"', 'spec: Invalid value: "object": once was a']


def test_what_a_crd_update_may_not_change() -> None:
    """Group and plural never; scope and kind once the CRD is established, as Kubernetes."""
    def crd(scope: str = "Namespaced", kind: str = "Widget", established: bool = False) -> dict[str, Any]:
        return {"metadata": {"name": "widgets.example.com"}, "spec": {
            "group": "example.com", "scope": scope, "names": {"plural": "widgets", "kind": kind},
            "versions": [{"name": "v1", "served": True, "storage": True,
                          "schema": {"openAPIV3Schema": {"type": "object"}}}]},
            "status": {"storedVersions": ["v1"], "conditions": [
                {"type": "Established", "status": "True" if established else "False"}]}}

    def errors(new: dict[str, Any], old: dict[str, Any]) -> list[str]:
        return [str(e) for e in crdvalidation.validate_crd_update(new, old)]
    assert errors(crd(scope="Cluster", kind="Gadget"), crd()) == []
    assert errors(crd(scope="Cluster", kind="Gadget"), crd(established=True)) == [
        'spec.scope: Invalid value: "Cluster": field is immutable',
        'spec.names.kind: Invalid value: "Gadget": field is immutable']
    renamed = crd()
    renamed["spec"]["names"]["plural"] = "gadgets"
    assert 'spec.names.plural: Invalid value: "gadgets": field is immutable' in errors(renamed, crd())
