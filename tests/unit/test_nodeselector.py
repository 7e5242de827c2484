"""Node selector terms, preferred terms and a Pod's required node affinity, after component-helpers' tables."""

from __future__ import annotations

import doctest
from typing import Any

import pytest
from kubernetes.client import (
    V1Affinity,
    V1NodeAffinity,
    V1NodeSelector,
    V1NodeSelectorRequirement,
    V1NodeSelectorTerm,
    V1Pod,
    V1PodSpec,
    V1PreferredSchedulingTerm,
)

from machinery.api import nodeselector
from machinery.api.labels import SelectorError
from machinery.api.nodeselector import (
    NodeSelector,
    PreferredTerms,
    RequiredNodeAffinity,
    pod_matches_node_selector_and_affinity,
)

KEY_NAME_ERROR = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)


def expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    req: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        req["values"] = list(values)
    return req


def terms(*term_list: dict[str, Any]) -> dict[str, Any]:
    return {"nodeSelectorTerms": list(term_list)}


@pytest.mark.parametrize(("requirement", "labels", "expected"), [
    pytest.param(expr("zone", "In", "a", "b"), {"zone": "b"}, True, id="in"),
    pytest.param(expr("zone", "In", "a", "b"), {"zone": "c"}, False, id="in-other"),
    pytest.param(expr("zone", "In", "a"), {}, False, id="in-missing"),
    pytest.param(expr("zone", "NotIn", "a"), {"zone": "b"}, True, id="notin"),
    pytest.param(expr("zone", "NotIn", "a"), {"zone": "a"}, False, id="notin-hit"),
    pytest.param(expr("zone", "NotIn", "a"), {}, True, id="notin-missing"),
    pytest.param(expr("gpu", "Exists"), {"gpu": ""}, True, id="exists"),
    pytest.param(expr("gpu", "Exists"), {}, False, id="exists-missing"),
    pytest.param(expr("spot", "DoesNotExist"), {}, True, id="does-not-exist"),
    pytest.param(expr("spot", "DoesNotExist"), {"spot": "true"}, False, id="does-not-exist-present"),
    pytest.param(expr("gen", "Gt", "3"), {"gen": "4"}, True, id="gt"),
    pytest.param(expr("gen", "Gt", "3"), {"gen": "3"}, False, id="gt-equal"),
    pytest.param(expr("gen", "Gt", "3"), {"gen": "four"}, False, id="gt-not-integer-label"),
    pytest.param(expr("gen", "Gt", "3"), {}, False, id="gt-missing"),
    pytest.param(expr("gen", "Lt", "3"), {"gen": "-7"}, True, id="lt-negative-label"),
    pytest.param(expr("gen", "Lt", "3"), {"gen": "3"}, False, id="lt-equal"),
    pytest.param(expr("gen", "Lt", "3"), {"gen": "2.5"}, False, id="lt-not-integer-label"),
])
def test_operators(requirement: dict[str, Any], labels: dict[str, str], expected: bool) -> None:
    selector = NodeSelector.from_spec(terms({"matchExpressions": [requirement]}))
    assert selector.matches("node-1", labels) is expected


@pytest.mark.parametrize(("spec", "node_name", "labels", "expected"), [
    pytest.param(terms(), "node-1", {"a": "b"}, False, id="no-terms"),
    pytest.param({"nodeSelectorTerms": None}, "node-1", {}, False, id="null-terms"),
    pytest.param(terms({}), "node-1", {"a": "b"}, False, id="empty-term-matches-nothing"),
    pytest.param(terms({"matchExpressions": []}), "node-1", {"a": "b"}, False, id="empty-expressions"),
    pytest.param(terms({"matchExpressions": [expr("a", "In", "b"), expr("c", "Exists")]}), "n", {"a": "b"}, False,
                 id="expressions-anded"),
    pytest.param(terms({"matchExpressions": [expr("a", "In", "x")]}, {"matchExpressions": [expr("c", "Exists")]}),
                 "n", {"c": ""}, True, id="terms-ored"),
    pytest.param(terms({}, {"matchExpressions": [expr("c", "Exists")]}), "n", {"c": ""}, True,
                 id="empty-term-does-not-spoil-others"),
    pytest.param(terms({"matchFields": [expr("metadata.name", "In", "host_1")]}), "host_1", {}, True,
                 id="field-in"),
    pytest.param(terms({"matchFields": [expr("metadata.name", "In", "host_1")]}), "host_2", {}, False,
                 id="field-in-other"),
    pytest.param(terms({"matchFields": [expr("metadata.name", "NotIn", "host_1")]}), "host_2", {}, True,
                 id="field-notin"),
    pytest.param(terms({"matchFields": [expr("metadata.name", "NotIn", "host_1")]}), "host_1", {}, False,
                 id="field-notin-hit"),
    pytest.param(terms({"matchFields": [expr("metadata.name", "In", "host_1")]}), "", {}, True,
                 id="node-without-name-skips-fields"),
    pytest.param(terms({"matchExpressions": [expr("label_1", "In", "label_1_val")],
                        "matchFields": [expr("metadata.name", "In", "host_1")]}), "host_1", {}, False,
                 id="fields-match-labels-do-not"),
    pytest.param(terms({"matchExpressions": [expr("label_1", "In", "label_1_val")],
                        "matchFields": [expr("metadata.name", "In", "host_1")]}), "host_1",
                 {"label_1": "label_1_val"}, True, id="fields-and-labels-match"),
    pytest.param(terms({"matchExpressions": [expr("label_1", "In", "label_1_val")]},
                       {"matchFields": [expr("metadata.name", "In", "host_1")]}), "host_1", {}, True,
                 id="second-term-matches"),
])
def test_terms(spec: dict[str, Any], node_name: str, labels: dict[str, str], expected: bool) -> None:
    assert NodeSelector.from_spec(spec).matches(node_name, labels) is expected


def test_model_spec() -> None:
    spec = V1NodeSelector(node_selector_terms=[V1NodeSelectorTerm(
        match_expressions=[V1NodeSelectorRequirement(key="zone", operator="In", values=["a"])],
        match_fields=[V1NodeSelectorRequirement(key="metadata.name", operator="NotIn", values=["node-2"])],
    )])
    selector = NodeSelector.from_spec(spec)
    assert selector.matches("node-1", {"zone": "a"})
    assert not selector.matches("node-2", {"zone": "a"})


@pytest.mark.parametrize(("spec", "message"), [
    pytest.param(terms({"matchFields": [expr("metadata.name", "In", "host_1", "host_2")]},
                       {"matchExpressions": [expr("label_1", "In", "v")],
                        "matchFields": [expr("metadata.name", "In", "host_1")]},
                       {"matchExpressions": [expr("invalid key", "In", "label_value")]}),
                 '[nodeSelectorTerms[0].matchFields[0].values: Invalid value: []string{"host_1", "host_2"}: must '
                 'have one element, nodeSelectorTerms[2].matchExpressions[0].key: Invalid value: "invalid key": '
                 f"{KEY_NAME_ERROR}]", id="component-helpers-table"),
    pytest.param(terms({"matchExpressions": [expr("a", "Foo", "b")]}),
                 'nodeSelectorTerms[0].matchExpressions[0].operator: Unsupported value: "Foo": supported values: '
                 '"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"', id="unknown-operator"),
    pytest.param(terms({"matchExpressions": [expr("a", "Gt", "x")]}),
                 "nodeSelectorTerms[0].matchExpressions[0].values[0]: Invalid value: \"x\": for 'Gt', 'Lt' "
                 "operators, the value must be an integer", id="gt-not-integer"),
    pytest.param(terms({"matchExpressions": [expr("a", "Lt")]}),
                 "nodeSelectorTerms[0].matchExpressions[0].values: Invalid value: []string(nil): for 'Gt', 'Lt' "
                 "operators, exactly one value is required", id="lt-without-value"),
    pytest.param(terms({"matchExpressions": [expr("a", "In")]}),
                 "nodeSelectorTerms[0].matchExpressions[0].values: Invalid value: []string(nil): for 'in', "
                 "'notin' operators, values set can't be empty", id="in-without-values"),
    pytest.param(terms({"matchExpressions": [expr("a", "Exists", "x")]}),
                 'nodeSelectorTerms[0].matchExpressions[0].values: Invalid value: []string{"x"}: values set must '
                 "be empty for exists and does not exist", id="exists-with-values"),
    pytest.param(terms({"matchFields": [expr("metadata.name", "Exists")]}),
                 'nodeSelectorTerms[0].matchFields[0].operator: Unsupported value: "Exists": supported values: '
                 '"In", "NotIn"', id="field-operator"),
    pytest.param(terms({"matchFields": [expr("metadata.labels", "In", "x")]}),
                 'nodeSelectorTerms[0].matchFields[0].key: Invalid value: "metadata.labels": not a valid field '
                 "selector key", id="field-key"),
    pytest.param(terms({}, {"matchExpressions": [expr("a", "Gt", "x"), expr("b", "Foo")]}),
                 "[nodeSelectorTerms[1].matchExpressions[0].values[0]: Invalid value: \"x\": for 'Gt', 'Lt' "
                 'operators, the value must be an integer, nodeSelectorTerms[1].matchExpressions[1].operator: '
                 'Unsupported value: "Foo": supported values: "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]',
                 id="errors-flattened"),
    pytest.param({"nodeSelectorTerms": {"a": 1}}, "nodeSelectorTerms must be a list", id="terms-not-a-list"),
    pytest.param(terms("x"), "a node selector term must be an object, not 'x'", id="term-not-an-object"),  # type: ignore[arg-type]
    pytest.param(terms({"matchExpressions": {"key": "a"}}), "matchExpressions must be a list of node selector "
                 "requirements", id="expressions-not-a-list"),
])
def test_errors(spec: dict[str, Any], message: str) -> None:
    with pytest.raises(SelectorError) as err:
        NodeSelector.from_spec(spec)
    assert str(err.value) == message


def test_preferred_terms_score() -> None:
    preferred = PreferredTerms.from_spec([
        {"weight": 2, "preference": {"matchExpressions": [expr("foo", "In", "bar")]}},
        {"weight": 4, "preference": {"matchExpressions": [expr("foo", "Exists")]}},
        {"weight": 8, "preference": {"matchFields": [expr("metadata.name", "In", "node-1")]}},
        {"weight": 16, "preference": {}},
        {"weight": 0, "preference": {"matchExpressions": [expr("foo", "Exists")]}},
    ])
    assert preferred.score("node-1", {"foo": "bar"}) == 14
    assert preferred.score("node-2", {"foo": "baz"}) == 4
    assert preferred.score("node-2", {}) == 0
    assert PreferredTerms.from_spec(None).score("node-1", {"foo": "bar"}) == 0


def test_preferred_terms_models() -> None:
    preferred = PreferredTerms.from_spec([V1PreferredSchedulingTerm(
        weight=5, preference=V1NodeSelectorTerm(
            match_expressions=[V1NodeSelectorRequirement(key="zone", operator="NotIn", values=["a"])]))])
    assert preferred.score("n", {"zone": "b"}) == 5
    assert preferred.score("n", {"zone": "a"}) == 0


def test_preferred_terms_errors() -> None:
    # A bad term of weight 0 is never parsed, so it reports nothing, as in Kubernetes.
    PreferredTerms.from_spec([{"weight": 0, "preference": {"matchFields": [expr("metadata.name", "In", "a", "b")]}}])
    with pytest.raises(SelectorError) as err:
        PreferredTerms.from_spec([
            {"weight": 1, "preference": {"matchFields": [expr("metadata.name", "In", "a", "b")]}},
            {"weight": 1, "preference": {"matchExpressions": [expr("bad key", "Exists")]}},
        ])
    assert str(err.value) == (
        '[[0].matchFields[0].values: Invalid value: []string{"a", "b"}: must have one element, '
        f'[1].matchExpressions[0].key: Invalid value: "bad key": {KEY_NAME_ERROR}]')
    with pytest.raises(SelectorError, match=r"^\[0\]\.weight must be an integer, not '2'$"):
        PreferredTerms.from_spec([{"weight": "2", "preference": {}}])
    with pytest.raises(SelectorError, match=r"^a preferred scheduling term must be an object, not 'x'$"):
        PreferredTerms.from_spec(["x"])  # type: ignore[list-item]


def required(*term_list: dict[str, Any]) -> dict[str, Any]:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": terms(*term_list)}}


def pod(node_selector: dict[str, str] | None = None, affinity: dict[str, Any] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "nginx"}]}
    if node_selector is not None:
        spec["nodeSelector"] = node_selector
    if affinity is not None:
        spec["affinity"] = affinity
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec}


@pytest.mark.parametrize(("the_pod", "labels", "expected"), [
    pytest.param(pod(), {}, True, id="no-selector"),
    pytest.param(pod({"foo": "bar"}), {}, False, id="missing-labels"),
    pytest.param(pod({"foo": "bar"}), {"foo": "bar"}, True, id="same-labels"),
    pytest.param(pod({"foo": "bar"}), {"foo": "bar", "baz": "blah"}, True, id="node-labels-superset"),
    pytest.param(pod({"foo": "bar", "baz": "blah"}), {"foo": "bar"}, False, id="node-labels-subset"),
    pytest.param(pod(affinity=required({"matchExpressions": [expr("foo", "In", "bar", "value2")]})),
                 {"foo": "bar"}, True, id="affinity-in"),
    pytest.param(pod(affinity=required({"matchExpressions": [expr("kernel-version", "Gt", "0204")]})),
                 {"kernel-version": "0206"}, True, id="affinity-gt-leading-zeros"),
    pytest.param(pod(affinity=required({"matchExpressions": [expr("mem-type", "NotIn", "DDR", "DDR2")]})),
                 {"mem-type": "DDR3"}, True, id="affinity-notin"),
    pytest.param(pod(affinity=required({"matchExpressions": [expr("GPU", "Exists")]})),
                 {"GPU": "NVIDIA-GRID-K1"}, True, id="affinity-exists"),
    pytest.param(pod(affinity=required({"matchExpressions": [expr("foo", "In", "value1", "value2")]})),
                 {"foo": "bar"}, False, id="affinity-no-match"),
    pytest.param(pod(affinity=required()), {"foo": "bar"}, False, id="affinity-empty-terms"),
    pytest.param(pod(affinity=required({"matchExpressions": []})), {"foo": "bar"}, False,
                 id="affinity-empty-expressions"),
    pytest.param(pod(affinity={"nodeAffinity": {}}), {"foo": "bar"}, True, id="affinity-without-required"),
    pytest.param(pod(affinity=required({"matchExpressions": [expr("GPU", "Exists"), expr("GPU", "NotIn", "AMD")]})),
                 {"GPU": "NVIDIA-GRID-K1"}, True, id="expressions-anded-match"),
    pytest.param(pod(affinity=required({"matchExpressions": [expr("GPU", "Exists"), expr("GPU", "In", "AMD")]})),
                 {"GPU": "NVIDIA-GRID-K1"}, False, id="expressions-anded-miss"),
    pytest.param(pod(affinity=required({"matchExpressions": [expr("foo", "In", "bar")]},
                                       {"matchExpressions": [expr("diffkey", "In", "wrong")]})),
                 {"foo": "bar"}, True, id="terms-ored"),
    pytest.param(pod({"foo": "bar"}, required({"matchExpressions": [expr("foo", "Exists")]})),
                 {"foo": "bar"}, True, id="selector-and-affinity-match"),
    pytest.param(pod({"foo": "bar"}, required({"matchExpressions": [expr("foo", "Exists")]})),
                 {"foo": "barrrrrr"}, False, id="affinity-matches-selector-does-not"),
    pytest.param(pod(affinity=required({"matchExpressions": [expr("foo", "NotIn", "invalid value: ___@#$%^")]})),
                 {"foo": "bar"}, False, id="invalid-term-never-matches"),
    pytest.param(pod(affinity=required({"matchExpressions": [expr("foo", "Gt", "x")]},
                                       {"matchExpressions": [expr("foo", "Exists")]})),
                 {"foo": "bar"}, True, id="invalid-term-does-not-spoil-others"),
])
def test_pod_matches_node_selector_and_affinity(the_pod: dict[str, Any], labels: dict[str, str],
                                                expected: bool) -> None:
    assert pod_matches_node_selector_and_affinity(the_pod, "node-1", labels) is expected
    model = V1Pod.model_validate(the_pod)
    assert pod_matches_node_selector_and_affinity(model, "node-1", labels) is expected


@pytest.mark.parametrize(("field_op", "node_name", "labels", "expected"), [
    pytest.param("In", "node-1", {}, True, id="fields-in-match"),
    pytest.param("In", "node-2", {}, False, id="fields-in-miss"),
    pytest.param("In", "node-2", {"foo": "bar"}, True, id="second-term-labels-match"),
    pytest.param("NotIn", "node-1", {"foo": "bar"}, True, id="notin-hit-but-labels-match"),
    pytest.param("NotIn", "node-1", {}, False, id="neither-term"),
])
def test_required_affinity_with_fields(field_op: str, node_name: str, labels: dict[str, str],
                                       expected: bool) -> None:
    affinity = RequiredNodeAffinity.from_pod(pod(affinity=required(
        {"matchFields": [expr("metadata.name", field_op, "node-1")]},
        {"matchExpressions": [expr("foo", "In", "bar")]})))
    assert affinity.matches(node_name, labels) is expected


def test_required_affinity_model_without_spec() -> None:
    assert RequiredNodeAffinity.from_pod(V1Pod()).matches("n", {})
    model = V1Pod(spec=V1PodSpec(containers=[], node_selector={"a": "b"}, affinity=V1Affinity(
        node_affinity=V1NodeAffinity())))
    affinity = RequiredNodeAffinity.from_pod(model)
    assert affinity.matches("n", {"a": "b"}) and not affinity.matches("n", {})


@pytest.mark.parametrize(("the_pod", "message"), [
    pytest.param({"spec": {"nodeSelector": ["a"]}}, "spec.nodeSelector must be a map, not ['a']",
                 id="node-selector-list"),
    pytest.param({"spec": {"nodeSelector": {"a": 1}}}, "selector keys and values must be strings, not 1",
                 id="node-selector-number"),
    pytest.param({"spec": "x"}, "spec, spec.affinity and spec.affinity.nodeAffinity must be objects",
                 id="spec-not-an-object"),
])
def test_required_affinity_bad_pods(the_pod: dict[str, Any], message: str) -> None:
    with pytest.raises(SelectorError) as err:
        RequiredNodeAffinity.from_pod(the_pod)
    assert str(err.value) == message


def test_docstring_examples() -> None:
    assert doctest.testmod(nodeselector).failed == 0
