"""ObjectMeta, labels and label selectors are judged and worded as apimachinery does."""

from __future__ import annotations

from typing import Any

import pytest

from apiserver.validation.field import Path
from apiserver.validation.meta import (
    name_is_dns1123_label,
    name_is_path_segment,
    validate_label_selector,
    validate_object_meta,
    validate_object_meta_update,
)

SUBDOMAIN = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
             "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
             "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
LABEL = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
         "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
         "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
QUALIFIED = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
             "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
             "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
LABEL_VALUE = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and "
               "must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', "
               "regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")


def meta(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"name": "web", "namespace": "default"}
    base.update(fields)
    return {k: v for k, v in base.items() if v is not None}


def owner(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"apiVersion": "v1", "kind": "ReplicationController", "name": "rc", "uid": "u1"}
    base.update(fields)
    return base


@pytest.mark.parametrize(("metadata", "expected"), [
    pytest.param(meta(), [], id="valid"),
    pytest.param(meta(name=None), ["metadata.name: Required value: name or generateName is required"],
                 id="name-required"),
    pytest.param(meta(name=None, generateName="web-"),
                 ["metadata.name: Required value: name or generateName is required"],
                 id="generate-name-trailing-dash-allowed"),
    pytest.param(meta(name="Web"), [f'metadata.name: Invalid value: "Web": {SUBDOMAIN}'],
                 id="name-not-subdomain"),
    pytest.param(meta(generateName="Web-"), [f'metadata.generateName: Invalid value: "Web-": {SUBDOMAIN}'],
                 id="generate-name-invalid"),
    pytest.param(meta(name="a" * 254),
                 [f'metadata.name: Invalid value: "{"a" * 254}": must be no more than 253 characters'],
                 id="name-too-long"),
    pytest.param(meta(namespace=None), ["metadata.namespace: Required value"], id="namespace-required"),
    pytest.param(meta(namespace="a.b"), [f'metadata.namespace: Invalid value: "a.b": {LABEL}'],
                 id="namespace-label"),
    pytest.param(meta(generation=-1),
                 ["metadata.generation: Invalid value: -1: must be greater than or equal to 0"],
                 id="negative-generation"),
    pytest.param(meta(labels={"a/b/c": "x"}),
                 [("metadata.labels: Invalid value: \"a/b/c\": a qualified name must consist of alphanumeric "
                  "characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. "
                  "'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
                  "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. "
                  "'example.com/MyName')")], id="label-key-two-slashes"),
    pytest.param(meta(labels={"app": "-x-"}), [f'metadata.labels: Invalid value: "-x-": {LABEL_VALUE}'],
                 id="label-value"),
    pytest.param(meta(annotations={"bad key": "x"}),
                 [f'metadata.annotations: Invalid value: "bad key": {QUALIFIED}'],
                 id="annotation-key"),
    pytest.param(meta(annotations={"Upper.Case/Key": "x"}), [], id="annotation-key-case-insensitive"),
    pytest.param(meta(annotations={"a": "x" * (256 * 1024)}),
                 ["metadata.annotations: Too long: may not be more than 262144 bytes"], id="annotations-too-big"),
    pytest.param(meta(ownerReferences=[owner(apiVersion="", kind="", name="", uid="")]),
                 ['metadata.ownerReferences.apiVersion: Invalid value: "": version must not be empty',
                  'metadata.ownerReferences.kind: Invalid value: "": kind must not be empty',
                  'metadata.ownerReferences.name: Invalid value: "": name must not be empty',
                  'metadata.ownerReferences.uid: Invalid value: "": uid must not be empty'],
                 id="owner-reference-fields-required"),
    pytest.param(meta(ownerReferences=[owner(apiVersion="apps/")]),
                 ['metadata.ownerReferences.apiVersion: Invalid value: "apps/": version must not be empty'],
                 id="owner-reference-group-without-version"),
    pytest.param(meta(ownerReferences=[owner(kind="Event", name="e", uid="u")]),
                 [('metadata.ownerReferences: Invalid value: {"apiVersion":"v1","kind":"Event","name":"e","uid":"u"}: '
                  "/v1, Kind=Event is disallowed from being an owner")], id="event-owner-banned"),
    pytest.param(meta(ownerReferences=[owner(controller=True), owner(name="rc2", uid="u2", controller=True)]),
                 [('metadata.ownerReferences: Invalid value: [{"apiVersion":"v1","controller":true,'
                  '"kind":"ReplicationController","name":"rc","uid":"u1"},{"apiVersion":"v1","controller":true,'
                  '"kind":"ReplicationController","name":"rc2","uid":"u2"}]: Only one reference can have Controller '
                  'set to true. Found "true" in references for ReplicationController/rc and '
                  "ReplicationController/rc2")],
                 id="two-controllers"),
    pytest.param(meta(finalizers=["bad finalizer"]),
                 [f'metadata.finalizers: Invalid value: "bad finalizer": {QUALIFIED}'], id="finalizer-name"),
    pytest.param(meta(finalizers=["orphan", "foregroundDeletion"]),
                 [('metadata.finalizers: Invalid value: ["orphan","foregroundDeletion"]: finalizer orphan and '
                  "foregroundDeletion cannot be both set")], id="orphan-and-foreground"),
    pytest.param(meta(managedFields=[{"manager": "kubectl", "operation": "Patch", "fieldsType": "FieldsV2"}]),
                 ['metadata.managedFields[0].operation: Invalid value: "Patch": must be `Apply` or `Update`',
                  'metadata.managedFields[0].fieldsType: Invalid value: "FieldsV2": must be `FieldsV1`'],
                 id="managed-fields"),
    pytest.param(meta(managedFields=[{"manager": "m" * 129, "operation": "Update"}]),
                 ["metadata.managedFields[0].manager: Too long: may not be more than 128 bytes"],
                 id="managed-fields-manager-too-long"),
])
def test_validate_object_meta(metadata: dict[str, Any], expected: list[str]) -> None:
    assert [str(e) for e in validate_object_meta(metadata, namespaced=True)] == expected


def test_cluster_scoped_objects_may_not_have_a_namespace() -> None:
    errs = validate_object_meta(meta(), namespaced=False)
    assert [str(e) for e in errs] == ["metadata.namespace: Forbidden: not allowed on this type"]


@pytest.mark.parametrize(("name_rule", "name", "expected"), [
    pytest.param(name_is_dns1123_label, "a.b", [f'metadata.name: Invalid value: "a.b": {LABEL}'],
                 id="label-no-dots"),
    pytest.param(name_is_path_segment, "..", ["metadata.name: Invalid value: \"..\": may not be '..'"],
                 id="path-segment-dots"),
    pytest.param(name_is_path_segment, "a/b%c",
                 ["metadata.name: Invalid value: \"a/b%c\": may not contain '/'",
                  "metadata.name: Invalid value: \"a/b%c\": may not contain '%'"], id="path-segment-slash-percent"),
    pytest.param(name_is_path_segment, "Any_Name.1", [], id="path-segment-lenient"),
])
def test_name_rules(name_rule: Any, name: str, expected: list[str]) -> None:
    errs = validate_object_meta(meta(name=name), namespaced=True, name_rule=name_rule)
    assert [str(e) for e in errs] == expected


def test_meta_errors_use_the_given_root() -> None:
    errs = validate_object_meta({"name": "Bad"}, namespaced=False, path=Path("spec", "template", "metadata"))
    assert [e.field for e in errs] == ["spec.template.metadata.name"]


OLD = {"name": "web", "namespace": "default", "uid": "u1", "creationTimestamp": "2024-05-01T10:00:00Z",
       "generation": 2, "resourceVersion": "5"}


@pytest.mark.parametrize(("changes", "expected"), [
    pytest.param({}, [], id="unchanged"),
    pytest.param({"name": "other"}, ['metadata.name: Invalid value: "other": field is immutable'], id="name"),
    pytest.param({"namespace": "kube-system"},
                 ['metadata.namespace: Invalid value: "kube-system": field is immutable'],
                 id="namespace"),
    pytest.param({"uid": "u2"}, ['metadata.uid: Invalid value: "u2": field is immutable'], id="uid"),
    pytest.param({"creationTimestamp": "2024-05-01T11:00:00Z"},
                 ['metadata.creationTimestamp: Invalid value: "2024-05-01T11:00:00Z": field is immutable'],
                 id="creation-timestamp"),
    pytest.param({"creationTimestamp": "2024-05-01T12:00:00+02:00"}, [], id="same-instant-other-spelling"),
    pytest.param({"deletionTimestamp": "2024-05-02T10:00:00Z"},
                 ['metadata.deletionTimestamp: Invalid value: "2024-05-02T10:00:00Z": field is immutable'],
                 id="deletion-timestamp"),
    pytest.param({"deletionGracePeriodSeconds": 30},
                 ["metadata.deletionGracePeriodSeconds: Invalid value: 30: field is immutable"], id="grace"),
    pytest.param({"generation": 1}, ["metadata.generation: Invalid value: 1: must not be decremented"],
                 id="generation-decremented"),
    pytest.param({"labels": {"app": "-"}}, [f'metadata.labels: Invalid value: "-": {LABEL_VALUE}'],
                 id="labels"),
])
def test_validate_object_meta_update(changes: dict[str, Any], expected: list[str]) -> None:
    new = {**OLD, **changes}
    assert [str(e) for e in validate_object_meta_update(new, OLD)] == expected


def test_no_new_finalizers_while_deleting() -> None:
    old = {**OLD, "deletionTimestamp": "2024-05-02T10:00:00Z", "finalizers": ["a.io/x"]}
    new = {**old, "finalizers": ["a.io/x", "b.io/z", "b.io/y"]}
    assert [str(e) for e in validate_object_meta_update(new, old)] == [
        ("metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, "
        'found new finalizers []string{"b.io/y", "b.io/z"}')]
    assert validate_object_meta_update({**old, "finalizers": []}, old) == []


SELECTOR = Path("spec", "selector")


@pytest.mark.parametrize(("selector", "expected"), [
    pytest.param({"matchLabels": {"app": "web"}}, [], id="valid"),
    pytest.param({"matchExpressions": [{"key": "app", "operator": "In"}]},
                 [("spec.selector.matchExpressions[0].values: Required value: must be specified when `operator` is "
                  "'In' or 'NotIn'")], id="in-without-values"),
    pytest.param({"matchExpressions": [{"key": "app", "operator": "Exists", "values": ["x"]}]},
                 [("spec.selector.matchExpressions[0].values: Forbidden: may not be specified when `operator` is "
                  "'Exists' or 'DoesNotExist'")], id="exists-with-values"),
    pytest.param({"matchExpressions": [{"key": "app", "operator": "Gt", "values": ["1"]}]},
                 ['spec.selector.matchExpressions[0].operator: Invalid value: "Gt": not a valid selector operator'],
                 id="bad-operator"),
    pytest.param({"matchExpressions": [{"key": "-app", "operator": "Exists"}]},
                 [f'spec.selector.matchExpressions[0].key: Invalid value: "-app": {QUALIFIED}'], id="bad-key"),
    pytest.param({"matchExpressions": [{"key": "app", "operator": "In", "values": ["a b"]}]},
                 [f'spec.selector.matchExpressions[0].values[0]: Invalid value: "a b": {LABEL_VALUE}'],
                 id="bad-value"),
    pytest.param({"matchLabels": {"app": "a b"}},
                 [f'spec.selector.matchLabels: Invalid value: "a b": {LABEL_VALUE}'],
                 id="bad-match-label"),
])
def test_validate_label_selector(selector: dict[str, Any], expected: list[str]) -> None:
    assert [str(e) for e in validate_label_selector(selector, SELECTOR)] == expected
