"""JSON merge patch (RFC 7386): the RFC's examples, Kubernetes' answers for non-object patches, a property."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from apiserver.patch import PatchError, apply_merge_patch

CASES = [
    # RFC 7386, appendix A (the cases whose target and patch are objects).
    pytest.param({"a": "b"}, {"a": "c"}, {"a": "c"}, id="rfc-replace-member"),
    pytest.param({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}, id="rfc-add-member"),
    pytest.param({"a": "b"}, {"a": None}, {}, id="rfc-null-removes-member"),
    pytest.param({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}, id="rfc-null-removes-only-that-member"),
    pytest.param({"a": ["b"]}, {"a": "c"}, {"a": "c"}, id="rfc-scalar-replaces-array"),
    pytest.param({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}, id="rfc-array-replaces-scalar"),
    pytest.param({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}, id="rfc-nested-merge"),
    pytest.param({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}, id="rfc-arrays-are-replaced-whole"),
    pytest.param({"e": None}, {"a": 1}, {"e": None, "a": 1}, id="rfc-existing-null-kept"),
    pytest.param({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}, id="rfc-nulls-dropped-in-new-objects"),
    # What kubectl patch --type=merge users write.
    pytest.param({"metadata": {"labels": {"app": "web", "tier": "fe"}}},
                 {"metadata": {"labels": {"tier": None, "env": "prod"}}},
                 {"metadata": {"labels": {"app": "web", "env": "prod"}}}, id="edit-labels"),
    pytest.param({"spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}]}},
                 {"spec": {"containers": [{"name": "b", "image": "z"}]}},
                 {"spec": {"containers": [{"name": "b", "image": "z"}]}}, id="containers-replaced-unlike-smp"),
    pytest.param({"spec": {"replicas": 1}}, {"spec": {"replicas": 3}}, {"spec": {"replicas": 3}}, id="scale"),
    pytest.param({"a": 1}, {}, {"a": 1}, id="empty-patch"),
]


@pytest.mark.parametrize(("doc", "patch", "expected"), CASES)
def test_merge_patch(doc: dict[str, Any], patch: dict[str, Any], expected: dict[str, Any]) -> None:
    doc_before, patch_before = copy.deepcopy(doc), copy.deepcopy(patch)
    assert apply_merge_patch(doc, patch) == expected
    assert (doc, patch) == (doc_before, patch_before)


@pytest.mark.parametrize(("patch", "code", "reason"), [
    pytest.param(["c"], 422, "Invalid", id="rfc-array-patch-would-replace-the-object"),
    pytest.param(None, 400, "BadRequest", id="null-patch"),
    pytest.param("bar", 400, "BadRequest", id="string-patch"),
    pytest.param(7, 400, "BadRequest", id="number-patch"),
])
def test_non_object_patches_are_refused(patch: object, code: int, reason: str) -> None:
    with pytest.raises(PatchError) as info:
        apply_merge_patch({"a": "foo"}, patch)
    assert (info.value.code, info.value.reason) == (code, reason)
    assert "must be a JSON object" in info.value.message


def test_result_shares_nothing_with_the_patch() -> None:
    patch = {"list": [{"x": 1}], "obj": {"k": "v"}}
    result = apply_merge_patch({}, patch)
    result["list"][0]["x"] = 2
    result["obj"]["k"] = "w"
    assert patch == {"list": [{"x": 1}], "obj": {"k": "v"}}


def merge_patch_between(source: Any, target: Any) -> Any:
    """The merge patch that turns ``source`` into ``target`` (what kubectl computes for --type=merge)."""
    if not isinstance(source, dict) or not isinstance(target, dict):
        return target
    patch = {k: None for k in source if k not in target}
    for key, value in target.items():
        if key not in source:
            patch[key] = value
        elif source[key] != value or type(source[key]) is not type(value):
            patch[key] = merge_patch_between(source[key], value)
    return patch


# Merge patches cannot set a member to null (null means delete), so targets have none.
scalars = st.one_of(st.booleans(), st.integers(-5, 5), st.text(max_size=3))
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(st.one_of(inner, st.none()), max_size=3), st.dictionaries(st.text(max_size=3), inner, max_size=3)),
    max_leaves=8)
objects = st.dictionaries(st.text(max_size=3), values, max_size=4)


@given(source=objects, target=objects)
def test_merge_patch_of_the_difference_reproduces_the_target(source: dict[str, Any], target: dict[str, Any]) -> None:
    assert apply_merge_patch(source, merge_patch_between(source, target)) == target
