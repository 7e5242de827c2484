"""Compaction of etcd's history, shared by every APIServer of a cluster, as kube-apiserver does it.

etcd keeps every revision until it is compacted. kube-apiserver compacts every
``--etcd-compaction-interval`` to the revision it saw one interval before, so that
watches and lists at a recent resourceVersion keep working. With several
APIServers over one etcd, only one of them compacts each round: every interval
each tries to bump the version of the key ``compact_rev_key`` from the version it
last saw, in one etcd transaction; the one whose transaction succeeds compacts,
and the others learn the version it wrote and try again next round.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Protocol

from apiserver.storage.etcd import StorageError

log = logging.getLogger("apiserver.compactor")

#: The key the APIServers elect each round's compactor with (kube-apiserver's own name for it).
COMPACT_REV_KEY = "compact_rev_key"


class _Storage(Protocol):
    async def claim_compaction(self, key: str, expected_version: int, revision: int) -> tuple[bool, int, int]: ...

    async def compact(self, revision: int) -> None: ...


class Compactor:
    """One APIServer's part in compacting etcd: :meth:`run` forever, or :meth:`round` once."""

    def __init__(self, storage: _Storage, interval: float) -> None:
        self.storage = storage
        self.interval = interval
        #: The version of ``compact_rev_key`` this APIServer last saw.
        self.version = 0
        #: etcd's revision at the last round: the next winner compacts up to it.
        self.revision = 0
        self.compactions = 0

    async def round(self) -> bool:
        """Try to be this round's compactor; True when this APIServer compacted."""
        won, self.version, current = await self.storage.claim_compaction(COMPACT_REV_KEY, self.version,
                                                                         self.revision)
        target, self.revision = self.revision, current
        if not won or target == 0:
            return False
        await self.storage.compact(target)
        self.compactions += 1
        log.info("compacted etcd history up to revision %d", target)
        return True

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            try:
                await self.round()
            except StorageError as e:
                if "compacted" not in str(e):
                    log.warning("compaction failed: %s", e)
