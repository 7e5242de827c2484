"""JSON Patch (RFC 6902) as kube-apiserver applies it: the RFC's own examples, then Kubernetes' errors."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from apiserver.patch import MAX_JSON_PATCH_OPERATIONS, PatchError, apply_json_patch

CASES = [
    # RFC 6902, appendix A.
    pytest.param({"foo": "bar"}, [{"op": "add", "path": "/baz", "value": "qux"}], {"baz": "qux", "foo": "bar"},
                 id="rfc-a1-add-object-member"),
    pytest.param({"foo": ["bar", "baz"]}, [{"op": "add", "path": "/foo/1", "value": "qux"}],
                 {"foo": ["bar", "qux", "baz"]}, id="rfc-a2-add-array-element"),
    pytest.param({"baz": "qux", "foo": "bar"}, [{"op": "remove", "path": "/baz"}], {"foo": "bar"},
                 id="rfc-a3-remove-object-member"),
    pytest.param({"foo": ["bar", "qux", "baz"]}, [{"op": "remove", "path": "/foo/1"}], {"foo": ["bar", "baz"]},
                 id="rfc-a4-remove-array-element"),
    pytest.param({"baz": "qux", "foo": "bar"}, [{"op": "replace", "path": "/baz", "value": "boo"}],
                 {"baz": "boo", "foo": "bar"}, id="rfc-a5-replace-value"),
    pytest.param({"foo": {"bar": "baz", "waldo": "fred"}, "qux": {"corge": "grault"}},
                 [{"op": "move", "from": "/foo/waldo", "path": "/qux/thud"}],
                 {"foo": {"bar": "baz"}, "qux": {"corge": "grault", "thud": "fred"}}, id="rfc-a6-move-value"),
    pytest.param({"foo": ["all", "grass", "cows", "eat"]}, [{"op": "move", "from": "/foo/1", "path": "/foo/3"}],
                 {"foo": ["all", "cows", "eat", "grass"]}, id="rfc-a7-move-array-element"),
    pytest.param({"baz": "qux", "foo": ["a", 2, "c"]},
                 [{"op": "test", "path": "/baz", "value": "qux"}, {"op": "test", "path": "/foo/1", "value": 2}],
                 {"baz": "qux", "foo": ["a", 2, "c"]}, id="rfc-a8-test-success"),
    pytest.param({"foo": "bar"}, [{"op": "add", "path": "/child", "value": {"grandchild": {}}}],
                 {"foo": "bar", "child": {"grandchild": {}}}, id="rfc-a10-add-nested-member-object"),
    pytest.param({"foo": "bar"}, [{"op": "add", "path": "/baz", "value": "qux", "xyz": 123}],
                 {"foo": "bar", "baz": "qux"}, id="rfc-a11-ignore-unrecognized-elements"),
    pytest.param({"foo": ["bar"]}, [{"op": "add", "path": "/foo/-", "value": ["abc", "def"]}],
                 {"foo": ["bar", ["abc", "def"]]}, id="rfc-a16-add-array-value"),
    pytest.param({"/": 9, "~1": 10}, [{"op": "test", "path": "/~01", "value": 10}], {"/": 9, "~1": 10},
                 id="rfc-a14-escape-ordering"),
    pytest.param({"foo": ["bar"]}, [{"op": "add", "path": "/foo/1", "value": "end"}], {"foo": ["bar", "end"]},
                 id="add-at-array-length-appends"),
    pytest.param({"a": 1}, [{"op": "add", "path": "", "value": {"b": 2}}], {"b": 2}, id="add-root-replaces-doc"),
    pytest.param({"a": 1}, [{"op": "add", "path": "/a", "value": 2}], {"a": 2}, id="add-existing-member-replaces"),
    pytest.param({"a": {"b": [1]}}, [{"op": "copy", "from": "/a", "path": "/c"}], {"a": {"b": [1]}, "c": {"b": [1]}},
                 id="copy-object"),
    pytest.param({"a": 1}, [{"op": "move", "from": "/a", "path": "/a"}], {"a": 1}, id="move-to-itself-is-a-no-op"),
    pytest.param({"a": 1}, [{"op": "test", "path": "/a", "value": 1.0}], {"a": 1}, id="test-number-by-value"),
    pytest.param({"a": {"x": [1, {"y": None}]}}, [{"op": "test", "path": "/a", "value": {"x": [1, {"y": None}]}}],
                 {"a": {"x": [1, {"y": None}]}}, id="test-deep-equality"),
    # What kubectl patch --type=json users write.
    pytest.param({"metadata": {"annotations": {"example.com/owner": "a"}}},
                 [{"op": "replace", "path": "/metadata/annotations/example.com~1owner", "value": "b"}],
                 {"metadata": {"annotations": {"example.com/owner": "b"}}}, id="slash-in-key-escaped-as-tilde-1"),
    pytest.param({"spec": {"containers": [{"name": "a", "image": "x"}]}},
                 [{"op": "replace", "path": "/spec/containers/0/image", "value": "y"},
                  {"op": "add", "path": "/spec/containers/-", "value": {"name": "b", "image": "z"}}],
                 {"spec": {"containers": [{"name": "a", "image": "y"}, {"name": "b", "image": "z"}]}},
                 id="edit-and-append-container"),
    pytest.param({"metadata": {"labels": {"a": "1"}}}, [], {"metadata": {"labels": {"a": "1"}}},
                 id="empty-patch"),
]


@pytest.mark.parametrize(("doc", "patch", "expected"), CASES)
def test_json_patch(doc: dict[str, Any], patch: list[Any], expected: dict[str, Any]) -> None:
    before = copy.deepcopy(doc)
    assert apply_json_patch(doc, patch) == expected
    assert doc == before


ERRORS = [
    pytest.param({"op": "add", "path": "/a", "value": 1}, 400, "must be a JSON array", id="patch-is-an-object"),
    pytest.param(["add"], 400, "must be a JSON array of operations", id="operation-is-not-an-object"),
    pytest.param([{"op": "frob", "path": "/a"}], 422, "Unexpected kind: 'frob'", id="unknown-op"),
    pytest.param([{"path": "/a"}], 422, "Unexpected kind: None", id="missing-op"),
    pytest.param([{"op": "add", "value": 1}], 422, "add operation is missing its path field", id="missing-path"),
    pytest.param([{"op": "add", "path": "/x"}], 422, "add operation is missing its value field", id="missing-value"),
    pytest.param([{"op": "move", "path": "/x"}], 422, "move operation is missing its from field", id="missing-from"),
    pytest.param([{"op": "remove", "path": "/nope"}], 422, 'remove operation does not apply: doc is missing path: "/nope"',
                 id="remove-missing-member"),
    pytest.param([{"op": "replace", "path": "/nope", "value": 1}], 422,
                 'replace operation does not apply: doc is missing path: "/nope"', id="replace-missing-member"),
    pytest.param([{"op": "add", "path": "/nope/deeper", "value": 1}], 422,
                 'add operation does not apply: doc is missing path: "/nope/deeper"', id="add-under-missing-parent"),
    pytest.param([{"op": "add", "path": "/list/5", "value": 1}], 422, "invalid array index '5'",
                 id="add-past-array-end"),
    pytest.param([{"op": "replace", "path": "/list/01", "value": 1}], 422, "invalid array index '01'",
                 id="leading-zero-index"),
    pytest.param([{"op": "remove", "path": "/list/-"}], 422, "invalid array index '-'", id="remove-dash-index"),
    pytest.param([{"op": "add", "path": "/a/b", "value": 1}], 422, "doc is missing path", id="add-under-scalar"),
    pytest.param([{"op": "test", "path": "/a", "value": "2"}], 422, "testing value /a failed", id="test-fails"),
    pytest.param([{"op": "test", "path": "/flag", "value": 1}], 422, "testing value /flag failed",
                 id="test-true-is-not-1"),
    pytest.param([{"op": "test", "path": "/nope", "value": None}], 422, "test operation does not apply",
                 id="test-missing-path"),
    pytest.param([{"op": "move", "from": "/obj", "path": "/obj/inner"}], 422, "is inside", id="move-into-own-child"),
    pytest.param([{"op": "add", "path": "a", "value": 1}], 422, 'invalid JSON pointer "a"', id="pointer-without-slash"),
    pytest.param([{"op": "add", "path": "/a~2b", "value": 1}], 422, "must be escaped", id="bad-pointer-escape"),
    pytest.param([{"op": "remove", "path": ""}], 422, "whole document cannot be removed", id="remove-root"),
    pytest.param([{"op": "replace", "path": "", "value": [1]}], 422, "must be a JSON object, not array",
                 id="result-not-an-object"),
    pytest.param([{"op": "add", "path": "/ok", "value": 1}, {"op": "test", "path": "/a", "value": 9}], 422,
                 "testing value /a failed", id="later-operation-fails"),
]


@pytest.mark.parametrize(("patch", "code", "message"), ERRORS)
def test_json_patch_errors(patch: object, code: int, message: str) -> None:
    doc = {"a": 1, "flag": True, "list": [1, 2], "obj": {"inner": {}}}
    before = copy.deepcopy(doc)
    with pytest.raises(PatchError) as info:
        apply_json_patch(doc, patch)
    assert (info.value.code, info.value.reason) == (code, {400: "BadRequest", 422: "Invalid"}[code])
    assert message in info.value.message
    assert doc == before


def test_too_many_operations_is_request_entity_too_large() -> None:
    patch = [{"op": "test", "path": "/a", "value": 1}] * (MAX_JSON_PATCH_OPERATIONS + 1)
    with pytest.raises(PatchError) as info:
        apply_json_patch({"a": 1}, patch)
    assert (info.value.code, info.value.reason) == (413, "RequestEntityTooLarge")
    assert info.value.message == "The allowed maximum operations in a JSON patch is 10000, got 10001"


def test_result_shares_nothing_with_the_patch() -> None:
    value = {"k": ["v"]}
    result = apply_json_patch({}, [{"op": "add", "path": "/x", "value": value}, {"op": "copy", "from": "/x",
                                                                                 "path": "/y"}])
    result["x"]["k"].append("w")
    assert value == {"k": ["v"]} and result["y"] == {"k": ["v"]}


json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-1000, 1000), st.text(max_size=5))
json_values = st.recursive(json_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=4), inner, max_size=3)), max_leaves=10)
documents = st.dictionaries(st.text(max_size=6), json_values, max_size=5)


@given(doc=documents, key=st.text(max_size=6), value=json_values)
def test_add_then_remove_is_identity(doc: dict[str, Any], key: str, value: Any) -> None:
    doc.pop(key, None)
    pointer = "/" + key.replace("~", "~0").replace("/", "~1")
    patch = [{"op": "add", "path": pointer, "value": value}, {"op": "test", "path": pointer, "value": value},
             {"op": "remove", "path": pointer}]
    assert apply_json_patch(doc, patch) == doc
