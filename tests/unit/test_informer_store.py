"""The informer's store: a dict and named indexes that follow every write."""

from __future__ import annotations

import pytest
from kubernetes.client import V1ObjectMeta, V1OwnerReference, V1Pod, V1PodSpec

from machinery.api.kinds import ObjectKey
from machinery.informer import (
    NAMESPACE_INDEX,
    NODE_NAME_INDEX,
    OWNER_UID_INDEX,
    Store,
    index_by_namespace,
    index_by_owner_uid,
    index_pod_by_node_name,
)


def pod(name: str, ns: str = "default", node: str | None = None, owners: tuple[str, ...] = ()) -> V1Pod:
    refs = [V1OwnerReference(api_version="v1", kind="ReplicationController", name=o, uid=o) for o in owners]
    return V1Pod(metadata=V1ObjectMeta(name=name, namespace=ns, owner_references=refs or None),
                 spec=V1PodSpec(containers=[{"name": "c", "image": "i"}], node_name=node))


def key(p: V1Pod) -> ObjectKey:
    return ObjectKey(f"{p.metadata.namespace}/{p.metadata.name}")


@pytest.fixture
def store() -> Store[V1Pod]:
    return Store({NODE_NAME_INDEX: index_pod_by_node_name, NAMESPACE_INDEX: index_by_namespace,
                  OWNER_UID_INDEX: index_by_owner_uid})


def names(pods: list[V1Pod]) -> list[str]:
    return sorted(p.metadata.name for p in pods)


def test_upsert_get_delete(store: Store[V1Pod]) -> None:
    a = pod("a")
    assert store.upsert(key(a), a) is None
    assert store.get("default/a") is a
    assert "default/a" in store and len(store) == 1
    a2 = pod("a", node="n1")
    assert store.upsert(key(a2), a2) is a
    assert store.delete(key(a2)) is a2
    assert store.delete(key(a2)) is None
    assert store.get("default/a") is None and len(store) == 0


def test_indexes_follow_moves_between_values(store: Store[V1Pod]) -> None:
    for p in [pod("a", node="n1"), pod("b", node="n1"), pod("c"), pod("d", ns="other", node="n2")]:
        store.upsert(key(p), p)
    assert names(store.by_index(NODE_NAME_INDEX, "n1")) == ["a", "b"]
    assert store.by_index(NODE_NAME_INDEX, "n3") == []
    assert names(store.by_index(NAMESPACE_INDEX, "other")) == ["d"]
    moved = pod("a", node="n2")
    store.upsert(key(moved), moved)
    assert names(store.by_index(NODE_NAME_INDEX, "n1")) == ["b"]
    assert names(store.by_index(NODE_NAME_INDEX, "n2")) == ["a", "d"]
    store.delete(ObjectKey("default/b"))
    assert sorted(store.index_values(NODE_NAME_INDEX)) == ["n2"], "empty buckets are removed"


def test_unscheduled_pods_are_in_no_node_bucket(store: Store[V1Pod]) -> None:
    p = pod("a")
    store.upsert(key(p), p)
    assert store.index_values(NODE_NAME_INDEX) == []


def test_owner_index_holds_every_owner(store: Store[V1Pod]) -> None:
    p = pod("a", owners=("rc-1", "rc-2"))
    store.upsert(key(p), p)
    assert store.index_keys(OWNER_UID_INDEX, "rc-1") == ["default/a"]
    assert store.index_keys(OWNER_UID_INDEX, "rc-2") == ["default/a"]


def test_indexers_added_later_index_existing_objects() -> None:
    store: Store[V1Pod] = Store()
    p = pod("a", node="n1")
    store.upsert(key(p), p)
    store.add_indexers({NODE_NAME_INDEX: index_pod_by_node_name})
    assert store.has_index(NODE_NAME_INDEX)
    assert names(store.by_index(NODE_NAME_INDEX, "n1")) == ["a"]
    with pytest.raises(ValueError, match="already exists"):
        store.add_indexers({NODE_NAME_INDEX: index_pod_by_node_name})


def test_unknown_index_is_a_clear_error(store: Store[V1Pod]) -> None:
    with pytest.raises(KeyError, match="no index named 'nope'"):
        store.by_index("nope", "x")


def test_list_and_keys(store: Store[V1Pod]) -> None:
    for name in ["a", "b"]:
        p = pod(name)
        store.upsert(key(p), p)
    assert names(store.list()) == ["a", "b"]
    assert sorted(store.list_keys()) == ["default/a", "default/b"]
