"""The typed client against the real APIServer: every verb, typed errors, paging, watch."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest
from kubernetes.client import V1Pod

from machinery.api.kinds import NODES, PODS
from machinery.client import (
    AlreadyExists,
    Bookmark,
    Client,
    Conflict,
    Invalid,
    NotFound,
    PatchType,
    WatchEvent,
    retry_on_conflict,
)
from tests import harness
from tests.kube import node, pod

pytestmark = pytest.mark.integration


@pytest.fixture
async def client(cluster: harness.Cluster) -> AsyncIterator[Client]:
    async with Client(cluster.config()) as c:
        yield c


async def test_create_get_update_status_and_conflict(client: Client, namespace: str) -> None:
    created = await client.create(PODS, pod("web"), namespace=namespace)
    assert isinstance(created, V1Pod) and created.metadata.uid
    with pytest.raises(AlreadyExists, match='pods "web" already exists'):
        await client.create(PODS, pod("web"), namespace=namespace)
    got = await client.get(PODS, "web", namespace=namespace)
    assert got.metadata.resource_version == created.metadata.resource_version

    labelled = got.model_copy(update={"metadata": got.metadata.model_copy(update={"labels": {"tier": "front"}})})
    updated = await client.update(PODS, labelled)
    assert updated.metadata.labels == {"tier": "front"}
    with pytest.raises(Conflict):
        await client.update(PODS, labelled)  # still carries the old resourceVersion

    status = updated.model_copy(update={"status": updated.status.model_copy(update={"phase": "Running"})})
    running = await client.update_status(PODS, status)
    assert running.status.phase == "Running"
    assert running.metadata.labels == {"tier": "front"}


async def test_each_patch_type(client: Client, namespace: str) -> None:
    await client.create(PODS, pod("p", labels={"a": "1"}), namespace=namespace)
    merged = await client.patch(PODS, "p", {"metadata": {"labels": {"b": "2"}}}, namespace=namespace,
                                patch_type=PatchType.MERGE)
    assert merged.metadata.labels == {"a": "1", "b": "2"}
    strategic = await client.patch(PODS, "p", {"metadata": {"labels": {"a": None}}}, namespace=namespace)
    assert strategic.metadata.labels == {"b": "2"}
    json_patched = await client.patch(PODS, "p", [{"op": "add", "path": "/metadata/labels/c", "value": "3"}],
                                      namespace=namespace, patch_type=PatchType.JSON)
    assert json_patched.metadata.labels == {"b": "2", "c": "3"}
    applied = await client.patch(PODS, "p", {"apiVersion": "v1", "kind": "Pod",
                                             "metadata": {"name": "p", "annotations": {"owner": "me"}}},
                                 namespace=namespace, patch_type=PatchType.APPLY, field_manager="tester",
                                 force=True)
    assert applied.metadata.annotations == {"owner": "me"}


async def test_typed_errors(client: Client, namespace: str) -> None:
    with pytest.raises(NotFound, match='pods "absent" not found'):
        await client.get(PODS, "absent", namespace=namespace)
    with pytest.raises(Invalid):
        await client.create(PODS, {"metadata": {"name": "Bad_Name"}, "spec": {"containers": []}},
                            namespace=namespace)


async def test_delete_with_preconditions(client: Client, namespace: str) -> None:
    created = await client.create(PODS, pod("d"), namespace=namespace)
    with pytest.raises(Conflict):
        await client.delete(PODS, "d", namespace=namespace, uid="not-the-uid")
    await client.delete(PODS, "d", namespace=namespace, uid=created.metadata.uid, grace_period_seconds=0)
    with pytest.raises(NotFound):
        await client.get(PODS, "d", namespace=namespace)


async def test_bind_sets_the_node(client: Client, namespace: str) -> None:
    created = await client.create(PODS, pod("b"), namespace=namespace)
    await client.bind(namespace, "b", "node-7", uid=created.metadata.uid)
    assert (await client.get(PODS, "b", namespace=namespace)).spec.node_name == "node-7"


async def test_list_pages_through_continue_tokens(client: Client, namespace: str) -> None:
    await asyncio.gather(*(client.create(PODS, pod(f"p{i:02}"), namespace=namespace) for i in range(12)))
    paged = await client.list(PODS, namespace=namespace, limit=5)
    whole = await client.list(PODS, namespace=namespace, limit=None)
    assert sorted(p.metadata.name for p in paged.items) == [f"p{i:02}" for i in range(12)]
    assert [p.metadata.name for p in paged.items] == [p.metadata.name for p in whole.items]
    assert int(paged.resource_version) > 0


async def test_cluster_scoped_resource(client: Client) -> None:
    created = await client.create(NODES, node("itest-node-1"))
    try:
        assert created.metadata.namespace is None
        assert any(n.metadata.name == "itest-node-1" for n in (await client.list(NODES)).items)
    finally:
        await client.delete(NODES, "itest-node-1")


async def test_watch_from_a_list_version_sees_later_changes_in_order(client: Client, namespace: str) -> None:
    listed = await client.list(PODS, namespace=namespace)
    await client.create(PODS, pod("w"), namespace=namespace)
    await client.patch(PODS, "w", {"metadata": {"labels": {"x": "y"}}}, namespace=namespace)
    await client.delete(PODS, "w", namespace=namespace, grace_period_seconds=0)
    seen: list[tuple[str, str]] = []
    async with contextlib.aclosing(client.watch(PODS, namespace=namespace, resource_version=listed.resource_version,
                                                timeout_seconds=30)) as events:
        async with asyncio.timeout(20):
            async for event in events:
                if isinstance(event, Bookmark):
                    continue
                assert isinstance(event, WatchEvent)
                seen.append((event.type, event.object.metadata.name))
                if event.type == "DELETED":
                    break
    assert seen == [("ADDED", "w"), ("MODIFIED", "w"), ("DELETED", "w")]


async def test_retry_on_conflict_against_a_concurrent_writer(client: Client, namespace: str) -> None:
    await client.create(PODS, pod("shared"), namespace=namespace)

    async def add_label(key: str) -> None:
        async def attempt() -> None:
            current = await client.get(PODS, "shared", namespace=namespace)
            labels = dict(current.metadata.labels or {}, **{key: "yes"})
            await client.update(PODS, current.model_copy(
                update={"metadata": current.metadata.model_copy(update={"labels": labels})}))
        await retry_on_conflict(attempt, steps=20)

    await asyncio.gather(*(add_label(f"k{i}") for i in range(5)))
    final = await client.get(PODS, "shared", namespace=namespace)
    assert set(final.metadata.labels) == {f"k{i}" for i in range(5)}
