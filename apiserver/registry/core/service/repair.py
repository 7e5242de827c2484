"""The periodic repair of the ClusterIP and NodePort bitmaps (kube-apiserver's ``ipallocator`` and
``portallocator`` repair controllers).

A reservation and the Service write that uses it are two etcd writes; an
APIServer that dies between them leaves an address marked that no Service
holds. Every pass (at start, then every three minutes) compares the bitmaps
with the Services in etcd:

- anything a Service holds is marked (so it can never be handed out twice,
  whatever happened before);
- anything marked that no Service holds is a leak; it is freed once it has
  been seen leaked on three passes in a row, which leaves in-flight
  creations (reserved, not yet written) the time to finish.

Each bitmap is changed by one guarded write, so passes of several APIServers
and concurrent allocations never undo each other.

Concurrency: one repair task per APIServer (``services.repair``); its leak counts are its own.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Final

from apiserver.registry.core.service.allocator import Bitmap, EtcdRange

log = logging.getLogger("apiserver.services.repair")

INTERVAL: Final = 180.0
#: How many passes in a row an offset must be leaked before it is freed (``numRepairsBeforeLeakCleanup``).
PASSES_BEFORE_RELEASE: Final = 3


class Repair:
    """Keeps one bitmap in step with what the Services hold."""

    def __init__(self, store: EtcdRange, name: str) -> None:
        self.store = store
        self.name = name
        self.leaks: dict[int, int] = {}

    async def run_once(self, held: Iterable[int]) -> tuple[int, int]:
        """One pass; returns (offsets marked that were missing, offsets freed)."""
        in_use = {i for i in held if 0 <= i < self.store.size}
        counts: dict[int, int] = {}

        def repair(bitmap: Bitmap) -> tuple[tuple[int, int], bool]:
            marked = sum(1 for i in in_use if bitmap.allocate(i))
            freed = 0
            counts.clear()
            for i in [i for i in bitmap if i not in in_use]:
                seen = self.leaks.get(i, 0) + 1
                if seen >= PASSES_BEFORE_RELEASE:
                    bitmap.release(i)
                    freed += 1
                else:
                    counts[i] = seen
            return (marked, freed), bool(marked or freed)

        result = await self.store.update(repair)
        self.leaks = counts
        if result[0]:
            log.warning("%s: %d allocations held by Services were missing and are marked again", self.name, result[0])
        if result[1]:
            log.info("%s: released %d leaked allocations", self.name, result[1])
        return result
