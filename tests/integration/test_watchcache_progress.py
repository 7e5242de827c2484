"""Watch caches and etcd 3.5's progress notifications: a cache is never told it is current before it is.

etcd before 3.5.13 answers a watch's progress request at once with its current revision, even while
the watch is still catching up from an older revision or events wait in the stream's buffer
(etcd-io/etcd#15220, #17507). A watch cache that believed it would serve a "consistent" list without
writes it had not yet seen: a CRD's cache, started just before its first objects were created, listed
none of them. Here etcd is the wheel's 3.5.1, so those answers must be ignored; the caches advance on
etcd's periodic notifications (queued behind events) and consistent lists read etcd, as
kube-apiserver falls back to when etcd cannot order progress requests.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from apiserver.registry.core.configmaps import ConfigMapStrategy
from apiserver.registry.store import Store
from apiserver.storage.etcd import EtcdStorage
from apiserver.watchcache import Filter, WatchCache
from machinery.api import kinds
from tests import harness

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def etcd_url() -> Iterator[str]:
    with harness.etcd_alone("kubesim-progress-") as url:
        yield url


async def connected(url: str) -> EtcdStorage:
    storage = EtcdStorage([url])
    await storage.connect()
    await storage.check_features()
    return storage


def test_the_wheels_etcd_is_known_not_to_order_progress_requests(etcd_url: str) -> None:
    async def scenario() -> None:
        storage = await connected(etcd_url)
        try:
            assert storage.version is not None and storage.version[:2] == (3, 5)
            assert storage.progress_requests_reliable is (storage.version >= (3, 5, 13))
        finally:
            await storage.close()
    asyncio.run(scenario())


def test_a_watch_catching_up_never_reports_progress_ahead_of_its_events(etcd_url: str) -> None:
    """etcd 3.5.1 answers this progress request before the 20 events: the answer must not come through."""
    async def scenario() -> None:
        storage = await connected(etcd_url)
        try:
            for attempt in range(20):
                prefix = f"/catching-up-{attempt}/"
                base = await storage.status_revision()
                for i in range(20):
                    await storage.create(f"{prefix}{i}", b"x")
                watch = storage.watch(prefix, base + 1)
                watch.request_progress()
                seen = base
                async for batch in watch:
                    if batch.events:
                        seen = batch.events[-1].kv.mod_revision
                    else:
                        assert batch.revision <= seen, f"progress to {batch.revision} with events only to {seen}"
                    if seen >= base + 20:
                        break
                watch.close()
        finally:
            await storage.close()
    asyncio.run(scenario())


def test_an_idle_cache_catches_up_on_periodic_notifications_without_asking(etcd_url: str) -> None:
    async def scenario() -> None:
        storage = await connected(etcd_url)
        cache = WatchCache(kinds.CONFIG_MAPS, storage)
        running = asyncio.create_task(cache.run())
        try:
            await cache.ready.wait()
            # etcd's revision moves; this resource's does not, so only a progress notification says so.
            written = await storage.create("/somewhere/else", b"x")
            assert cache.rv < written
            await asyncio.wait_for(cache.wait_fresh(), 3)
            assert cache.rv >= written
            assert cache.progress_requests == 0
        finally:
            running.cancel()
            await asyncio.gather(running, return_exceptions=True)
            await storage.close()
    asyncio.run(scenario())


def configmap(name: str) -> bytes:
    return (b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"%s","namespace":"default",'
            b'"uid":"u-%s","creationTimestamp":"2026-12-06T00:00:00Z"}}' % (name.encode(), name.encode()))


def test_a_consistent_list_sees_writes_its_cache_has_not(etcd_url: str) -> None:
    """The cache stops watching, then a ConfigMap is written: "" reads etcd, "0" the cache."""
    async def scenario() -> None:
        storage = await connected(etcd_url)
        info = kinds.CONFIG_MAPS
        cache = WatchCache(info, storage)
        running = asyncio.create_task(cache.run())
        try:
            await cache.ready.wait()
            running.cancel()
            await asyncio.gather(running, return_exceptions=True)
            await storage.create(info.etcd_key("default", "unseen"), configmap("unseen"))
            store = Store(info, ConfigMapStrategy(), storage, cache)
            names = [e.obj["metadata"]["name"] for e in (await store.list(Filter(namespace="default", key_prefix=info.etcd_prefix("default")))).entries]
            assert "unseen" in names
            cached = await store.list(Filter(namespace="default", key_prefix=info.etcd_prefix("default")), resource_version="0")
            assert "unseen" not in [e.obj["metadata"]["name"] for e in cached.entries]
        finally:
            await storage.close()
    asyncio.run(scenario())
