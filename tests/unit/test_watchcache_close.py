"""A watch cache closed for good (its CustomResourceDefinition went) ends every wait and every watch at once.

Only the paths that never reach etcd are exercised here (a cache that has not
listed yet); the integration tests delete CRDs under lists and watches.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from apiserver.watchcache import CacheClosed, Filter, WatchCache
from machinery.api.kinds import CONFIG_MAPS


def _cache() -> WatchCache:
    storage: Any = None  # never touched: the cache has not listed, so nothing asks etcd
    return WatchCache(CONFIG_MAPS, storage)


async def test_waiting_requests_end_when_the_cache_closes() -> None:
    cache = _cache()
    waiter = asyncio.create_task(cache.wait_for(10, timeout=30))
    ready = asyncio.create_task(cache.wait_ready())
    await asyncio.sleep(0.05)
    assert not waiter.done() and not ready.done()
    started = time.monotonic()
    cache.close()
    with pytest.raises(CacheClosed):
        await waiter
    with pytest.raises(CacheClosed):
        await ready
    assert time.monotonic() - started < 1


async def test_a_watch_on_a_closed_cache_ends_at_once() -> None:
    cache = _cache()
    cache.close()
    watcher = cache.watch(Filter(namespace=None), since=None, bookmarks=True, send_initial=False)
    assert await asyncio.wait_for(watcher.queue.get(), 1) is None
    assert watcher not in cache.watchers
    with pytest.raises(CacheClosed):
        await cache.wait_for(1)
