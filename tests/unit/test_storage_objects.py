"""The stored form of objects and the resourceVersion splice that serves them without re-encoding."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from apiserver.storage.objects import Entry, at_revision, encode, with_revision

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**53, 2**53) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3),
    max_leaves=12)


@given(meta=st.dictionaries(st.sampled_from(["name", "labels", "uid", "resourceVersion", "x"]), json_values,
                            max_size=4),
       rest=st.dictionaries(st.sampled_from(["spec", "status", "metadata2"]), json_values, max_size=3),
       rv=st.integers(1, 2**40))
def test_splice_equals_decode_set_encode(meta: dict, rest: dict, rv: int) -> None:
    obj = {"kind": "Pod", "apiVersion": "v1", "metadata": meta, **rest}
    stored = encode(obj)
    assert "resourceVersion" not in orjson.loads(stored)["metadata"]
    expected = {**obj, "metadata": {**{k: v for k, v in meta.items() if k != "resourceVersion"},
                                    "resourceVersion": str(rv)}}
    assert orjson.loads(with_revision(stored, rv)) == expected


@pytest.mark.parametrize("stored", [
    b'{"kind":"Pod","metadata":{"name":"a"}}',
    b'{"apiVersion":"v1","spec":{"metadata":{}},"metadata":{"name":"a"}}',
    b'{"metadata":{"name":"a"},"apiVersion":"v1"}',
], ids=["no-api-version", "metadata-not-in-head", "metadata-first"])
def test_values_not_in_the_stored_form_are_re_encoded(stored: bytes) -> None:
    out = orjson.loads(with_revision(stored, 5))
    assert out["metadata"]["resourceVersion"] == "5"
    assert out["metadata"]["name"] == "a"


def test_entries_decode_lazily_and_know_their_key() -> None:
    entry = Entry("/registry/pods/ns1/web", with_revision(encode({"apiVersion": "v1", "kind": "Pod",
                                                                   "metadata": {"name": "web", "labels": {"a": "b"}}}),
                                                            3), 3)
    assert entry._obj is None
    assert entry.name == "web"
    assert entry.labels == {"a": "b"}
    moved = at_revision(entry, 9)
    assert moved.obj["metadata"]["resourceVersion"] == "9" and entry.obj["metadata"]["resourceVersion"] == "3"


def test_a_compacted_entry_keeps_labels_and_fields_and_parses_again_on_demand() -> None:
    obj = {"kind": "Pod", "metadata": {"name": "p", "labels": {"app": "web"}}, "spec": {"nodeName": "n1"}}
    entry = Entry("/registry/pods/default/p", encode(obj), 7, obj)
    fields = entry.fields(lambda o: {"spec.nodeName": o["spec"]["nodeName"]})
    entry.compact()
    assert entry._obj is None, "the parsed object is what compaction frees"
    assert entry.labels == {"app": "web"}
    assert entry.fields(lambda o: pytest.fail("fields are kept, not recomputed")) is fields
    assert entry._obj is None
    assert entry.obj == orjson.loads(entry.raw) and entry.obj["spec"] == obj["spec"]
