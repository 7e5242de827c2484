"""The shared informer: store upkeep and handler calls from a scripted stream; the factory."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator

import httpx
import pytest
from kubernetes.client import V1ObjectMeta, V1Pod, V1PodSpec

from machinery.api.kinds import NODES, PODS
from machinery.client import Bookmark, Client, ClientConfig, WatchEvent
from machinery.informer import (
    NODE_NAME_INDEX,
    DeletedFinalStateUnknown,
    InformerFactory,
    Listed,
    SharedInformer,
    index_pod_by_node_name,
)


def pod(name: str, rv: str, node: str | None = None) -> V1Pod:
    return V1Pod(metadata=V1ObjectMeta(name=name, namespace="ns", resource_version=rv),
                 spec=V1PodSpec(containers=[{"name": "c", "image": "i"}], node_name=node))


class ScriptedReflector:
    """Stands in for the reflector: yields what the test puts in."""

    name = "pods"

    def __init__(self) -> None:
        self.items: asyncio.Queue[object] = asyncio.Queue()
        self.last_sync_resource_version = ""

    async def stream(self) -> AsyncGenerator[object, None]:
        while True:
            yield await self.items.get()


class Calls:
    def __init__(self) -> None:
        self.log: list[tuple[str, ...]] = []

    def on_add(self, obj: V1Pod) -> None:
        self.log.append(("add", obj.metadata.name, obj.metadata.resource_version))

    def on_update(self, old: V1Pod, new: V1Pod) -> None:
        self.log.append(("update", new.metadata.name, old.metadata.resource_version, new.metadata.resource_version))

    def on_delete(self, obj: V1Pod | DeletedFinalStateUnknown[V1Pod]) -> None:
        if isinstance(obj, DeletedFinalStateUnknown):
            self.log.append(("tombstone", obj.key, obj.obj.metadata.resource_version))
        else:
            self.log.append(("delete", obj.metadata.name, obj.metadata.resource_version))


class Harness:
    def __init__(self) -> None:
        self.reflector = ScriptedReflector()
        client = Client(ClientConfig("http://unused"), transport=httpx.MockTransport(lambda r: httpx.Response(500)))
        self.informer: SharedInformer[V1Pod] = SharedInformer(
            client, PODS, indexers={NODE_NAME_INDEX: index_pod_by_node_name},
            reflector=self.reflector)  # type: ignore[arg-type]
        self.calls = Calls()
        self.informer.add_handler(on_add=self.calls.on_add, on_update=self.calls.on_update,
                                  on_delete=self.calls.on_delete)
        self.task = asyncio.create_task(self.informer.run())

    async def feed(self, *items: object) -> None:
        for item in items:
            self.reflector.items.put_nowait(item)
        while not self.reflector.items.empty():
            await asyncio.sleep(0)
        await asyncio.sleep(0)

    async def close(self) -> None:
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)


@pytest.fixture
async def h() -> AsyncGenerator[Harness, None]:
    harness = Harness()
    yield harness
    await harness.close()


def ev(etype: str, p: V1Pod) -> WatchEvent[V1Pod]:
    return WatchEvent(etype, p, p.metadata.resource_version)  # type: ignore[arg-type]


async def test_initial_list_fills_the_store_and_marks_synced(h: Harness) -> None:
    assert not h.informer.has_synced
    await h.feed(Listed([pod("a", "1"), pod("b", "2", node="n1")], "2"))
    assert h.informer.has_synced
    await asyncio.wait_for(h.informer.wait_synced(), 1)
    assert sorted(p.metadata.name for p in h.informer.store.list()) == ["a", "b"]
    assert [p.metadata.name for p in h.informer.store.by_index(NODE_NAME_INDEX, "n1")] == ["b"]
    assert h.calls.log == [("add", "a", "1"), ("add", "b", "2")]


async def test_watch_events_map_to_add_update_delete(h: Harness) -> None:
    await h.feed(Listed([], "1"),
                 ev("ADDED", pod("a", "2")), ev("MODIFIED", pod("a", "3", node="n1")),
                 ev("MODIFIED", pod("b", "4")),  # a MODIFIED for an unseen key is an add
                 ev("ADDED", pod("b", "5")),  # an ADDED for a known key is an update
                 Bookmark("6"),
                 ev("DELETED", pod("a", "7")),
                 ev("DELETED", pod("zzz", "8")))  # unknown key: nothing to tell anyone
    assert h.calls.log == [("add", "a", "2"), ("update", "a", "2", "3"), ("add", "b", "4"),
                           ("update", "b", "4", "5"), ("delete", "a", "7")]
    assert [p.metadata.name for p in h.informer.store.list()] == ["b"]
    assert h.informer.store.by_index(NODE_NAME_INDEX, "n1") == []


async def test_relist_reports_only_differences_with_tombstones(h: Harness) -> None:
    await h.feed(Listed([pod("same", "1"), pod("changed", "2"), pod("gone", "3")], "3"))
    h.calls.log.clear()
    await h.feed(Listed([pod("same", "1"), pod("changed", "9"), pod("new", "10")], "10"))
    assert h.calls.log == [("update", "changed", "2", "9"), ("add", "new", "10"), ("tombstone", "ns/gone", "3")]
    assert sorted(p.metadata.name for p in h.informer.store.list()) == ["changed", "new", "same"]


async def test_a_raising_handler_does_not_stop_the_informer_or_other_handlers(
        h: Harness, caplog: pytest.LogCaptureFixture) -> None:
    def broken(obj: V1Pod) -> None:
        raise RuntimeError("handler bug")

    h.informer.add_handler(on_add=broken)
    with caplog.at_level(logging.ERROR):
        await h.feed(Listed([pod("a", "1")], "1"), ev("ADDED", pod("b", "2")))
    assert ("add", "b", "2") in h.calls.log
    assert h.informer.store.get("ns/b") is not None
    assert not h.task.done()
    assert "handler bug" in caplog.text


async def test_late_handler_gets_the_current_state_first(h: Harness) -> None:
    await h.feed(Listed([pod("a", "1"), pod("b", "2")], "2"))
    late = Calls()
    h.informer.add_handler(on_add=late.on_add, on_update=late.on_update)
    assert sorted(late.log) == [("add", "a", "1"), ("add", "b", "2")]
    await h.feed(ev("MODIFIED", pod("a", "3")))
    assert late.log[-1] == ("update", "a", "1", "3")


async def test_factory_shares_one_informer_per_resource_and_starts_late_ones() -> None:
    lists: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.params.get("watch"):
            return httpx.Response(200, content=_forever())
        lists.append(request.url.path)
        return httpx.Response(200, json={"metadata": {"resourceVersion": "1"}, "items": []})

    async with Client(ClientConfig("http://api"), transport=httpx.MockTransport(handler)) as client:
        factory = InformerFactory(client)
        pods = factory.informer(PODS)
        assert factory.informer(PODS, indexers={NODE_NAME_INDEX: index_pod_by_node_name}) is pods
        assert pods.store.has_index(NODE_NAME_INDEX)
        assert factory.informer(PODS, namespace="x") is not pods
        runner = asyncio.create_task(factory.run())
        await asyncio.wait_for(factory.wait_for_cache_sync(), 2)
        nodes = factory.informer(NODES)
        await asyncio.wait_for(nodes.wait_synced(), 2)
        assert factory.has_synced
        runner.cancel()
        await asyncio.gather(runner, return_exceptions=True)
    assert sorted(lists) == ["/api/v1/namespaces/x/pods", "/api/v1/nodes", "/api/v1/pods"]


async def _forever() -> AsyncGenerator[bytes, None]:
    await asyncio.Event().wait()
    yield b""
