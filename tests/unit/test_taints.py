"""Taints and tolerations, after k8s.io/api's and the scheduler's tables."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes.client import V1Taint, V1Toleration

from machinery.api.taints import (
    NO_EXECUTE,
    NO_SCHEDULE,
    PREFER_NO_SCHEDULE,
    count_intolerable_prefer_no_schedule,
    find_untolerated_taint,
    format_taint,
    format_taint_kv,
    tolerates,
)


def taint(key: str, value: str | None = None, effect: str = NO_SCHEDULE) -> dict[str, Any]:
    t: dict[str, Any] = {"key": key, "effect": effect}
    if value is not None:
        t["value"] = value
    return t


def toleration(key: str | None = None, operator: str | None = None, value: str | None = None,
               effect: str | None = None) -> dict[str, Any]:
    fields = {"key": key, "operator": operator, "value": value, "effect": effect}
    return {k: v for k, v in fields.items() if v is not None}


@pytest.mark.parametrize(("tol", "the_taint", "expected"), [
    pytest.param(toleration("foo", "Exists", effect=NO_SCHEDULE), taint("foo"), True,
                 id="exists-same-key-no-value"),
    pytest.param(toleration("foo", "Exists", effect=NO_SCHEDULE), taint("foo", "bar"), True,
                 id="exists-same-key-any-value"),
    pytest.param(toleration("", "Exists", effect=NO_SCHEDULE), taint("foo", "bar"), True,
                 id="empty-key-exists-matches-all-keys"),
    pytest.param(toleration(operator="Exists"), taint("foo", "bar", NO_EXECUTE), True,
                 id="exists-alone-tolerates-everything"),
    pytest.param(toleration("foo", "Equal", "bar", NO_SCHEDULE), taint("foo", "bar"), True, id="equal"),
    pytest.param(toleration("foo", "Equal", "value1", NO_SCHEDULE), taint("foo", "value2"), False,
                 id="equal-different-values"),
    pytest.param(toleration("foo", "Equal", "bar", NO_SCHEDULE), taint("foo", "bar", NO_EXECUTE), False,
                 id="different-effects"),
    pytest.param(toleration("foo", value="bar"), taint("foo", "bar", PREFER_NO_SCHEDULE), True,
                 id="empty-operator-is-equal-and-empty-effect-matches-all"),
    pytest.param(toleration("foo"), taint("foo"), True, id="equal-empty-values"),
    pytest.param(toleration("foo", value="bar"), taint("foo"), False, id="equal-value-against-no-value"),
    pytest.param(toleration("other", "Exists"), taint("foo"), False, id="different-key"),
    pytest.param(toleration("", "Equal", "bar"), taint("foo", "bar"), True, id="empty-key-equal-matches-value"),
    pytest.param(toleration("foo", "Gt", "1"), taint("foo", "2"), False, id="unknown-operator-tolerates-nothing"),
])
def test_tolerates(tol: dict[str, Any], the_taint: dict[str, Any], expected: bool) -> None:
    assert tolerates(tol, the_taint) is expected
    model_tol = V1Toleration.model_validate(tol)
    model_taint = V1Taint.model_validate(the_taint)
    assert tolerates(model_tol, model_taint) is expected
    assert tolerates(tol, model_taint) is expected


TAINTS = [
    taint("dedicated", "gpu", NO_SCHEDULE),
    taint("spot", None, PREFER_NO_SCHEDULE),
    taint("node.kubernetes.io/unreachable", None, NO_EXECUTE),
]
FILTER_EFFECTS = frozenset({NO_SCHEDULE, NO_EXECUTE})


@pytest.mark.parametrize(("tolerations", "effects", "expected"), [
    pytest.param([], FILTER_EFFECTS, 0, id="first-untolerated"),
    pytest.param([toleration("dedicated", "Equal", "gpu")], FILTER_EFFECTS, 2, id="skips-tolerated"),
    pytest.param([toleration("dedicated", "Equal", "gpu"), toleration("node.kubernetes.io/unreachable", "Exists",
                                                                      effect=NO_EXECUTE)],
                 FILTER_EFFECTS, None, id="all-filtered-tolerated"),
    pytest.param([toleration("dedicated", "Equal", "gpu"), toleration("node.kubernetes.io/unreachable", "Exists")],
                 None, 1, id="no-filter-sees-prefer-no-schedule"),
    pytest.param([toleration(operator="Exists")], None, None, id="tolerate-everything"),
    pytest.param([toleration("dedicated", "Equal", "cpu")], frozenset({NO_SCHEDULE}), 0, id="wrong-value"),
    pytest.param([], frozenset({PREFER_NO_SCHEDULE}), 1, id="prefer-only"),
])
def test_find_untolerated_taint(tolerations: list[dict[str, Any]], effects: frozenset[str] | None,
                                expected: int | None) -> None:
    found = find_untolerated_taint(TAINTS, tolerations, effects)
    assert found is (None if expected is None else TAINTS[expected])
    models = [V1Taint.model_validate(t) for t in TAINTS]
    found_model = find_untolerated_taint(models, [V1Toleration.model_validate(t) for t in tolerations], effects)
    assert found_model is (None if expected is None else models[expected])


def test_find_untolerated_taint_message() -> None:
    found = find_untolerated_taint(TAINTS, [], FILTER_EFFECTS)
    assert found is not None
    assert f"node(s) had untolerated taint {format_taint_kv(found)}" == \
        "node(s) had untolerated taint {dedicated: gpu}"


@pytest.mark.parametrize(("taints", "tolerations", "expected"), [
    pytest.param([], [], 0, id="no-taints"),
    pytest.param([taint("a", effect=PREFER_NO_SCHEDULE), taint("b", effect=PREFER_NO_SCHEDULE)], [], 2,
                 id="two-untolerated"),
    pytest.param([taint("a", effect=PREFER_NO_SCHEDULE), taint("b", effect=NO_SCHEDULE)], [], 1,
                 id="only-prefer-no-schedule-counts"),
    pytest.param([taint("a", "x", PREFER_NO_SCHEDULE), taint("b", effect=PREFER_NO_SCHEDULE)],
                 [toleration("a", "Equal", "x", PREFER_NO_SCHEDULE)], 1, id="one-tolerated"),
    pytest.param([taint("a", "x", PREFER_NO_SCHEDULE)], [toleration("a", "Exists")], 0,
                 id="empty-effect-toleration-counts"),
    pytest.param([taint("a", "x", PREFER_NO_SCHEDULE)], [toleration("a", "Exists", effect=NO_SCHEDULE)], 1,
                 id="other-effect-toleration-ignored"),
])
def test_count_intolerable_prefer_no_schedule(taints: list[dict[str, Any]], tolerations: list[dict[str, Any]],
                                              expected: int) -> None:
    assert count_intolerable_prefer_no_schedule(taints, tolerations) == expected
    models = [V1Taint.model_validate(t) for t in taints]
    assert count_intolerable_prefer_no_schedule(models, [V1Toleration.model_validate(t) for t in tolerations]) \
        == expected


@pytest.mark.parametrize(("the_taint", "text", "kv"), [
    pytest.param({"key": "foo", "value": "bar", "effect": NO_SCHEDULE}, "foo=bar:NoSchedule", "{foo: bar}",
                 id="key-value-effect"),
    pytest.param({"key": "foo", "effect": NO_SCHEDULE}, "foo:NoSchedule", "{foo: }", id="key-effect"),
    pytest.param({"key": "foo"}, "foo", "{foo: }", id="key"),
    pytest.param({"key": "foo", "value": "bar"}, "foo=bar:", "{foo: bar}", id="key-value"),
])
def test_format_taint(the_taint: dict[str, Any], text: str, kv: str) -> None:
    assert format_taint(the_taint) == text
    assert format_taint_kv(the_taint) == kv
    if "effect" in the_taint:
        model = V1Taint.model_validate(the_taint)
        assert format_taint(model) == text
        assert format_taint_kv(model) == kv
