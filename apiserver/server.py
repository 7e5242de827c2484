"""The APIServer's process-wide state: etcd, one watch cache and one store per resource, background tasks.

Built once by ``create_app()`` and reached by handlers through
``request.app.state.server``. Its background tasks are named and supervised:
one per watch cache (list then watch etcd, forever), the compactor, the
bookmark ticker and the etcd health probe. ``stop()`` cancels them all and
ends every watch stream, so the process exits promptly on SIGTERM.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass, field
from typing import Any

import httpx

from apiserver import errors, managedfields
from apiserver.registry import events, leases, namespaces, nodes, pods, replicationcontrollers
from apiserver.registry.store import FieldTracker, Store, WriteOptions
from apiserver.registry.strategy import Strategy
from apiserver.storage.etcd import EtcdStorage, StorageError
from apiserver.watchcache import WatchCache
from machinery.api import kinds
from machinery.api.kinds import ResourceInfo
from machinery.api.meta import now_time

log = logging.getLogger("apiserver")

#: Namespaces every cluster has from its first start.
SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


@dataclass
class Settings:
    etcd_servers: list[str]
    etcd_request_timeout: float = 5.0
    compaction_interval: float = 300.0
    watch_cache_size: int = 10_000
    watcher_queue_size: int = 10_000
    bookmark_interval: float = 30.0
    event_ttl: int = 3600
    max_body_bytes: int = 3 * 1024 * 1024
    min_request_timeout: int = 1800
    track_managed_fields: bool = True
    default_not_ready_toleration_seconds: int = 300
    default_unreachable_toleration_seconds: int = 300
    extra: dict[str, Any] = field(default_factory=dict)


STRATEGIES: dict[str, type[Strategy]] = {
    kinds.NODES.plural: nodes.NodeStrategy,
    kinds.NAMESPACES.plural: namespaces.NamespaceStrategy,
    kinds.REPLICATION_CONTROLLERS.plural: replicationcontrollers.ReplicationControllerStrategy,
    kinds.EVENTS.plural: events.EventStrategy,
    kinds.LEASES.plural: leases.LeaseStrategy,
}


class APIServer:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.storage = EtcdStorage(settings.etcd_servers, timeout=settings.etcd_request_timeout)
        self.caches: dict[ResourceInfo[Any], WatchCache] = {}
        self.stores: dict[ResourceInfo[Any], Store] = {}
        for ri in kinds.RESOURCES:
            strategy = (pods.PodStrategy(
                not_ready_toleration_seconds=settings.default_not_ready_toleration_seconds,
                unreachable_toleration_seconds=settings.default_unreachable_toleration_seconds)
                if ri is kinds.PODS else STRATEGIES[ri.plural]())
            cache = WatchCache(ri, self.storage, capacity=settings.watch_cache_size,
                               max_watcher_queue=settings.watcher_queue_size,
                               field_extractor=strategy.fields)
            self.caches[ri] = cache
            self.stores[ri] = Store(strategy, self.storage, cache, namespace_exists=self.check_namespace,
                                    field_tracker=_field_tracker(ri) if settings.track_managed_fields else None,
                                    ttl_seconds=settings.event_ttl if ri is kinds.EVENTS else 0)
        self.http = httpx.AsyncClient(timeout=httpx.Timeout(10.0, read=None))
        self.etcd_ok = False
        self.etcd_checked = 0.0
        self._tasks: list[asyncio.Task[None]] = []
        self.stopping = asyncio.Event()

    def store(self, ri: ResourceInfo[Any]) -> Store:
        return self.stores[ri]

    # --- lifecycle -----------------------------------------------------------------------------

    async def start(self) -> None:
        await self.storage.connect()
        for ri, cache in self.caches.items():
            self._spawn(f"watchcache-{ri.plural}", cache.run())
        self._spawn("etcd-health", self._health_loop())
        self._spawn("bootstrap-namespaces", self._bootstrap())
        self._spawn("bookmarks", self._bookmark_loop())
        if self.settings.compaction_interval > 0:
            self._spawn("compactor", self._compact_loop())

    def _spawn(self, name: str, coro: Any) -> None:
        task = asyncio.create_task(self._supervise(name, coro), name=name)
        self._tasks.append(task)

    async def _supervise(self, name: str, coro: Any) -> None:
        try:
            await coro
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("background task %s failed", name)

    async def stop(self) -> None:
        self.stopping.set()
        for cache in self.caches.values():
            cache.close_all()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        await self.http.aclose()
        with contextlib.suppress(Exception):
            await self.storage.close()

    def ready(self) -> bool:
        return self.etcd_ok and all(c.ready.is_set() for c in self.caches.values())

    # --- background loops ----------------------------------------------------------------------

    async def _health_loop(self) -> None:
        while True:
            try:
                await self.storage.status_revision(timeout=1.0)
                if not self.etcd_ok:
                    log.info("etcd is reachable")
                self.etcd_ok = True
            except StorageError as e:
                if self.etcd_ok:
                    log.warning("etcd is unreachable: %s", e)
                self.etcd_ok = False
            self.etcd_checked = time.monotonic()
            await asyncio.sleep(1.0)

    async def _bootstrap(self) -> None:
        """Create the system namespaces if missing, retrying until etcd answers."""
        ns_store = self.stores[kinds.NAMESPACES]
        pending = list(SYSTEM_NAMESPACES)
        while pending:
            name = pending[0]
            try:
                await ns_store.create(None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
                                      WriteOptions(field_manager="kube-apiserver"))
                pending.pop(0)
            except errors.APIError as e:
                if e.reason == "AlreadyExists":
                    pending.pop(0)
                else:
                    await asyncio.sleep(0.5)

    async def _bookmark_loop(self) -> None:
        while True:
            await asyncio.sleep(self.settings.bookmark_interval)
            for cache in self.caches.values():
                cache.send_bookmarks()

    async def _compact_loop(self) -> None:
        """Compact etcd history to the revision seen one interval ago, as kube-apiserver does."""
        previous = 0
        while True:
            await asyncio.sleep(self.settings.compaction_interval)
            try:
                current = await self.storage.status_revision()
                if previous:
                    await self.storage.compact(previous)
                    log.info("compacted etcd history up to revision %d", previous)
                previous = current
            except StorageError as e:
                if "compacted" not in str(e):
                    log.warning("compaction failed: %s", e)

    # --- admission -----------------------------------------------------------------------------

    async def check_namespace(self, ri: ResourceInfo[Any], namespace: str, name: str) -> None:
        """NamespaceLifecycle admission: the namespace exists and is not terminating."""
        ns_store = self.stores[kinds.NAMESPACES]
        entry = ns_store.cache.get(kinds.NAMESPACES.etcd_key(None, namespace))
        if entry is None:
            # The cache may not have seen a namespace created a moment ago: ask etcd.
            try:
                entry = await ns_store.get(None, namespace)
            except errors.APIError as e:
                if e.code == 404:
                    raise errors.namespace_not_found(namespace) from None
                raise
        phase = (entry.obj.get("status") or {}).get("phase")
        if phase == "Terminating" or (entry.obj.get("metadata") or {}).get("deletionTimestamp"):
            raise errors.namespace_terminating(ri, name, namespace)


def _field_tracker(ri: ResourceInfo[Any]) -> FieldTracker:
    """Record field ownership (metadata.managedFields) on every write of ``ri``."""

    def track(old: dict[str, Any] | None, new: dict[str, Any], manager: str, subresource: str | None) -> None:
        managedfields.update_managed_fields(old, new, definition=ri.definition, manager=manager or "unknown",
                                            api_version=ri.api_version, now=now_time(),
                                            subresource=subresource)
    return track
