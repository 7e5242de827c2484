"""A stand-in for the APIServer's watch caches, for authorizers and admission plugins under unit test.

Only what those read: ``state`` (key -> Entry), ``get``, ``sorted_entries``, the
window revisions that say when the content changed, the field extractor, and
``wait_fresh`` (which brings in the objects a test made ``lag``); and a store
over it whose live reads find the lagging objects.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import Any

import orjson

from apiserver.storage.objects import Entry
from machinery.api.kinds import ResourceInfo


class FakeCache:
    def __init__(self, info: ResourceInfo[Any], objects: Iterable[dict[str, Any]] = (), *,
                 extractor: Any = None) -> None:
        self.info = info
        self.state: dict[str, Entry] = {}
        self.window_rvs: deque[int] = deque()
        self.oldest_rv = 0
        self.field_extractor = extractor
        self.rv = 0
        self.lagging: list[dict[str, Any]] = []
        self.fresh_waits = 0
        for obj in objects:
            self.put(obj)

    def put(self, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        key = self.info.etcd_key(meta.get("namespace") if self.info.namespaced else None, meta["name"])
        self.rv += 1
        self.state[key] = Entry(key, orjson.dumps(obj), self.rv)
        self.window_rvs.append(self.rv)

    def delete(self, namespace: str | None, name: str) -> None:
        self.state.pop(self.info.etcd_key(namespace, name), None)
        self.rv += 1
        self.window_rvs.append(self.rv)

    def get(self, key: str) -> Entry | None:
        return self.state.get(key)

    def lag(self, obj: dict[str, Any]) -> None:
        """``obj`` is in etcd but not yet in this cache: :meth:`wait_fresh` brings it in."""
        self.lagging.append(obj)

    async def wait_fresh(self, timeout: float = 3.0) -> None:
        self.fresh_waits += 1
        while self.lagging:
            self.put(self.lagging.pop(0))

    def sorted_entries(self, namespace: str | None = None) -> Iterable[Entry]:
        prefix = self.info.etcd_prefix(namespace) if namespace else ""
        return [self.state[k] for k in sorted(self.state) if k.startswith(prefix)]


class FakeStore:
    """A registry store over a FakeCache: ``lookup`` finds lagging objects as a live read finds them in etcd."""

    def __init__(self, cache: FakeCache) -> None:
        self.cache = cache
        self.live_reads = 0

    async def read(self, namespace: str | None, name: str) -> Entry | None:
        self.live_reads += 1
        key = self.cache.info.etcd_key(namespace, name)
        for obj in self.cache.lagging:
            meta = obj.get("metadata") or {}
            if self.cache.info.etcd_key(meta.get("namespace") if self.cache.info.namespaced else None,
                                        meta["name"]) == key:
                return Entry(key, orjson.dumps(obj), self.cache.rv + 1)
        return self.cache.get(key)

    async def lookup(self, namespace: str | None, name: str) -> Entry | None:
        entry = self.cache.get(self.cache.info.etcd_key(namespace, name))
        return entry if entry is not None else await self.read(namespace, name)


class FakeCaches(dict):  # type: ignore[type-arg]
    """ResourceInfo -> FakeCache, with ``cache_of`` as the authorizers take it."""

    def of(self, info: ResourceInfo[Any]) -> FakeCache:
        if info not in self:
            self[info] = FakeCache(info)
        return self[info]  # type: ignore[no-any-return]
