"""The controller base: handlers enqueue keys, workers sync after the caches synced, failures back off."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

import httpx
import pytest
from kubernetes.client import V1ObjectMeta, V1Pod

from machinery.api.kinds import PODS, ObjectKey
from machinery.client import Client, ClientConfig
from machinery.client.clock import FakeClock
from machinery.controller import Controller
from machinery.informer import DeletedFinalStateUnknown, SharedInformer


class Recording(Controller):
    def __init__(self, informer: SharedInformer[V1Pod], clock: FakeClock, fail: dict[str, int]) -> None:
        super().__init__("recording", informers=[informer], workers=2, clock=clock)
        self.synced: list[ObjectKey] = []
        self.fail = fail
        informer.add_handler(on_add=self.enqueue, on_update=lambda old, new: self.enqueue(new),
                             on_delete=self.enqueue)

    async def sync(self, key: ObjectKey) -> None:
        self.synced.append(key)
        if self.fail.get(key, 0) > 0:
            self.fail[key] -= 1
            raise RuntimeError(f"cannot sync {key}")


def pod(name: str) -> V1Pod:
    return V1Pod(metadata=V1ObjectMeta(name=name, namespace="ns", resource_version="1"))


@pytest.fixture
async def informer() -> AsyncGenerator[SharedInformer[V1Pod], None]:
    client = Client(ClientConfig("http://unused"), transport=httpx.MockTransport(lambda r: httpx.Response(500)))
    yield SharedInformer(client, PODS)
    await client.aclose()


async def settle() -> None:
    for _ in range(40):
        await asyncio.sleep(0)


async def test_workers_start_only_after_the_informers_synced(informer: SharedInformer[V1Pod]) -> None:
    controller = Recording(informer, FakeClock(), {})
    controller.enqueue(pod("early"))
    task = asyncio.create_task(controller.run())
    await settle()
    assert controller.synced == []
    informer._synced.set()
    await settle()
    assert controller.synced == ["ns/early"]
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_failed_sync_is_retried_with_backoff_then_forgotten(informer: SharedInformer[V1Pod]) -> None:
    clock = FakeClock()
    controller = Recording(informer, clock, {"ns/flaky": 2})
    informer._synced.set()
    task = asyncio.create_task(controller.run())
    controller.enqueue(pod("flaky"))
    await settle()
    assert controller.synced == ["ns/flaky"]
    clock.advance(0.005)
    await settle()
    assert controller.synced == ["ns/flaky"] * 2
    clock.advance(0.009)
    await settle()
    assert controller.synced == ["ns/flaky"] * 2, "the second retry waits 10 ms"
    clock.advance(0.001)
    await settle()
    assert controller.synced == ["ns/flaky"] * 3
    assert controller.queue.num_requeues(ObjectKey("ns/flaky")) == 0, "success forgets the backoff"
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_enqueue_takes_objects_and_tombstones(informer: SharedInformer[V1Pod]) -> None:
    controller = Recording(informer, FakeClock(), {})
    controller.enqueue(pod("a"))
    controller.enqueue(DeletedFinalStateUnknown(ObjectKey("ns/b"), pod("b")))
    controller.enqueue(pod("a"))
    assert len(controller.queue) == 2
