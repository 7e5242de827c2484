"""The watch cache keeps this APIServer's own writes only until their events come, whichever comes first.

A write's answer from etcd and its watch event race: the event may be applied
before the handler hands the written entry over. Such an entry has nothing
left to save and must not be kept (it would stay until evicted, and a full
store makes every later write pay for the eviction).
"""

from __future__ import annotations

from typing import Any

import orjson

from apiserver.storage.etcd import KV, PUT, WatchBatch, WatchEvent
from apiserver.storage.objects import stamp
from apiserver.watchcache import WatchCache
from machinery.api.kinds import CONFIG_MAPS


def _ready_cache() -> WatchCache:
    storage: Any = None  # never touched: the cache is fed by hand
    cache = WatchCache(CONFIG_MAPS, storage)
    cache.ready.set()
    return cache


def _written(name: str, rv: int) -> tuple[str, bytes, Any]:
    key = CONFIG_MAPS.etcd_key("default", name)
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"}}
    stored = orjson.dumps(obj)
    return key, stored, stamp(key, obj, stored, rv)


def _event(key: str, stored: bytes, rv: int) -> WatchBatch:
    return WatchBatch([WatchEvent(PUT, KV(key, stored, rv, rv), None)], rv)


async def test_a_write_handed_over_before_its_event_is_kept_until_the_event() -> None:
    cache = _ready_cache()
    key, stored, entry = _written("early", 5)
    cache.remember(entry)
    assert cache.own_writes_pending == 1
    cache._apply(_event(key, stored, 5))
    assert cache.own_writes_pending == 0
    applied = cache.get(key)
    assert applied is not None and applied.rv == 5 and cache.rv == 5


async def test_writes_whose_events_came_first_are_not_kept() -> None:
    cache = _ready_cache()
    for rv in range(1, 5_001):
        key, stored, entry = _written(f"late-{rv}", rv)
        cache._apply(_event(key, stored, rv))
        cache.remember(entry)
    assert cache.own_writes_pending == 0
    assert len(cache.state) == 5_000
