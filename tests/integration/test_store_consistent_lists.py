"""Large consistent lists come from the watch cache once it has caught up with etcd.

A list without resourceVersion must show everything written before it. Small
ones read etcd; one of a scope holding at least
``CONSISTENT_LIST_FROM_CACHE_MIN_OBJECTS`` objects waits until the cache has
reached etcd's current revision and answers from it (what kube-apiserver's
ConsistentListFromCache does), and reads etcd after all if the cache does not
catch up in time. kube-apiserver's own counter,
``apiserver_watch_cache_consistent_read_total``, says which way each went.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from prometheus_client import REGISTRY

from apiserver.registry.core.configmaps import ConfigMapStrategy
from apiserver.registry.store import (
    CONSISTENT_LIST_FROM_CACHE_MIN_OBJECTS,
    DeleteOptions,
    Store,
    WriteOptions,
)
from apiserver.storage.etcd import EtcdStorage
from apiserver.watchcache import Filter, WatchCache
from machinery.api import kinds
from tests import harness

pytestmark = pytest.mark.integration

INFO = kinds.CONFIG_MAPS
MANY = CONSISTENT_LIST_FROM_CACHE_MIN_OBJECTS


@pytest.fixture
def etcd_url() -> Iterator[str]:
    with harness.etcd_alone("kubesim-lists-") as url:
        yield url


def config_map(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v"}}


def from_cache(fallback: bool = False) -> float:
    return REGISTRY.get_sample_value("apiserver_watch_cache_consistent_read_total", {
        "resource": "/configmaps", "success": "true", "fallback": "true" if fallback else "false"}) or 0.0


def scope(namespace: str) -> Filter:
    return Filter(namespace=namespace, key_prefix=INFO.etcd_prefix(namespace))


def names(result: Any) -> set[str]:
    return {e.name for e in result.entries}


async def started(url: str) -> tuple[Store, WatchCache, EtcdStorage, asyncio.Task[None]]:
    storage = EtcdStorage([url])
    await storage.connect()
    cache = WatchCache(INFO, storage)
    watching = asyncio.create_task(cache.run())
    await cache.ready.wait()
    return Store(INFO, ConfigMapStrategy(), storage, cache), cache, storage, watching


async def fill(store: Store, namespace: str, count: int) -> None:
    todo = list(range(count))

    async def writer() -> None:
        while todo:
            await store.create(namespace, config_map(f"cm-{todo.pop()}"), WriteOptions())
    await asyncio.gather(*(writer() for _ in range(16)))


async def caught_up(cache: WatchCache, namespace: str, count: int) -> None:
    while cache.count(namespace) != count:
        await asyncio.sleep(0.01)


def test_a_large_consistent_list_waits_for_the_cache_and_small_ones_read_etcd(etcd_url: str) -> None:
    async def scenario() -> None:
        store, cache, storage, watching = await started(etcd_url)
        try:
            await fill(store, "big", MANY)
            await fill(store, "small", 3)
            await caught_up(cache, "big", MANY)
            before = from_cache()
            # Written a moment before the list: the list must show it, whether its event has arrived or not.
            newest = await store.create("big", config_map("newest"), WriteOptions())
            listed = await store.list(scope("big"))
            assert "newest" in names(listed) and len(listed.entries) == MANY + 1
            assert listed.resource_version >= newest.rv
            assert from_cache() == before + 1
            # A small namespace, or a page, reads etcd.
            assert len((await store.list(scope("small"))).entries) == 3
            page = await store.list(scope("big"), limit=10)
            assert len(page.entries) == 10 and page.continue_token
            assert from_cache() == before + 1
            # The cache counts what leaves too: below the threshold again, the list reads etcd.
            for name in ("newest", "cm-0"):
                await store.delete("big", name, DeleteOptions())
            await caught_up(cache, "big", MANY - 1)
            listed = await store.list(scope("big"))
            assert len(listed.entries) == MANY - 1 and "cm-0" not in names(listed)
            assert from_cache() == before + 1
            # Across namespaces the whole resource counts.
            assert len((await store.list(Filter(namespace=None))).entries) == MANY + 2
            assert from_cache() == before + 2
        finally:
            watching.cancel()
            await asyncio.gather(watching, return_exceptions=True)
            await storage.close()

    asyncio.run(scenario())


def test_a_cache_that_does_not_catch_up_leaves_the_list_to_etcd(etcd_url: str) -> None:
    async def scenario() -> None:
        store, cache, storage, watching = await started(etcd_url)
        try:
            await fill(store, "stuck", MANY)
            await caught_up(cache, "stuck", MANY)
            # The cache stops following etcd: what is written now it never sees.
            watching.cancel()
            await asyncio.gather(watching, return_exceptions=True)
            await store.create("stuck", config_map("unseen"), WriteOptions())
            before = from_cache(fallback=True)
            listed = await store.list(scope("stuck"))
            assert "unseen" in names(listed) and len(listed.entries) == MANY + 1
            assert from_cache(fallback=True) == before + 1
        finally:
            await storage.close()

    asyncio.run(scenario())
