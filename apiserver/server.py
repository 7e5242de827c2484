"""The APIServer's process-wide state: the registry, etcd, one store and watch cache per stored resource.

Built once by ``create_app()`` and reached by handlers through the request's
:class:`~apiserver.endpoints.request.Call`. It is also the
:class:`~apiserver.registry.store.StoreContext` that strategies' hooks and
admission plugins reach the cluster through. Its background tasks are named and supervised:
one per watch cache (list then watch etcd, forever), the compactor, the
bookmark ticker, the etcd health probe and the repair of Service allocations.
``stop()`` cancels them all and ends every watch stream, so the process exits
promptly on SIGTERM.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

import httpx

from apiserver import audit, authentication, authorization, errors, managedfields
from apiserver.admission import Chain, default_chain
from apiserver.apiextensions.controller import CRDController
from apiserver.authorization.rbac import RBAC
from apiserver.controller import systemnamespaces
from apiserver.proxy.kubelet import KubeletClient
from apiserver.registry.core import kubernetesservice, services
from apiserver.registry.groups import builtin_resources
from apiserver.registry.rbac import bootstrap as rbac_bootstrap
from apiserver.registry.registry import Registry
from apiserver.registry.resource import Resource
from apiserver.registry.storage import storageclasses
from apiserver.registry.store import FieldTracker, Store, WriteOptions
from apiserver.settings import Settings
from apiserver.storage.compactor import Compactor
from apiserver.storage.etcd import EtcdStorage, StorageError
from apiserver.watchcache import WatchCache
from machinery.api import kinds
from machinery.api.kinds import ResourceInfo
from machinery.api.meta import now_time

log = logging.getLogger("apiserver")

#: Namespaces every cluster has from its first start.
SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
#: The PriorityClasses kube-apiserver creates at its first start.
SYSTEM_PRIORITY_CLASSES = (
    ("system-node-critical", 2000001000, ("Used for system critical pods that must not be moved from their "
                                         "current node.")),
    ("system-cluster-critical", 2000000000, ("Used for system critical pods that must run in the cluster, but "
                                            "can be moved to another node if necessary.")),
)

__all__ = ["APIServer", "Settings"]


class APIServer:
    def __init__(self, settings: Settings, *, registry: Registry | None = None) -> None:
        self.settings = settings
        self.storage = EtcdStorage(settings.etcd_servers, timeout=settings.etcd_request_timeout)
        self.registry = registry or Registry(builtin_resources())
        self.admission: Chain = default_chain(settings)
        self.caches: dict[ResourceInfo[Any], WatchCache] = {}
        self.stores: dict[ResourceInfo[Any], Store] = {}
        # Every set of keys gets its store, whether or not its resource is served.
        for info in self.registry.stored():
            self._add_store(self.registry.get(info))
        # Who sent a request, what they may do, what is recorded (they read the watch caches above).
        self.authenticator, self.token_generator = authentication.build(settings.security, self.caches.get)
        self.rule_resolver = RBAC(self.caches.get)
        self.authorizer = authorization.build(settings.security.authorization_modes, self.caches.get,
                                              rbac=self.rule_resolver)
        self.auditor = audit.build(settings.security)
        #: What ``--insecure-port`` serves (set by ``apiserver.app.asgi_app``).
        self.insecure_app: Any = None
        #: kube-apiserver's ``poststarthook/rbac/bootstrap-roles``: the default roles exist.
        self.rbac_bootstrapped = asyncio.Event()
        self.http = httpx.AsyncClient(timeout=httpx.Timeout(10.0, read=None))
        #: How kubelets are reached (HTTPS, with ``--kubelet-client-certificate``).
        self.kubelet = KubeletClient(settings.security)
        self.etcd_ok = False
        self.etcd_checked = 0.0
        self._tasks: list[asyncio.Task[None]] = []
        self.stopping = asyncio.Event()
        self.started = False

    def _add_store(self, resource: Resource) -> Store:
        info = resource.info
        strategy = resource.strategy
        assert strategy is not None
        cache = WatchCache(info, self.storage, capacity=self.settings.watch_cache_size,
                           max_watcher_queue=self.settings.watcher_queue_size, field_extractor=strategy.fields)
        self.caches[info] = cache
        store = Store(info, strategy, self.storage, cache, context=self,
                      field_tracker=_field_tracker(info) if self.settings.track_managed_fields else None,
                      ttl_seconds=resource.ttl(self.settings) if resource.ttl is not None else 0)
        self.stores[info] = store
        return store

    def serve(self, resource: Resource, *, version_priority: int = 15) -> None:
        """Serve a resource from now on (a custom resource): its store, its watch cache, its routes.

        Serving a resource again (its CustomResourceDefinition changed) keeps its store and watch
        cache and takes the new strategy. A resource registered unserved (``served=False``) gets
        its store and watch cache but no routes.
        """
        info = resource.info
        if resource.stored and resource.storage_of is None:
            store = self.stores.get(info)
            if store is None:
                self._add_store(resource)
                if self.started:
                    self._spawn(f"watchcache-{info.group_resource}", self.caches[info].run())
            elif resource.strategy is not None:
                store.strategy = resource.strategy
                self.caches[info].field_extractor = resource.strategy.fields
        self.registry.add(resource, version_priority=version_priority)

    def unserve(self, info: ResourceInfo[Any]) -> None:
        """Stop serving a resource: its routes go, its watchers are ended, its watch cache stops."""
        self.registry.remove(info)
        cache = self.caches.pop(info, None)
        self.stores.pop(info, None)
        if cache is not None:
            cache.close()
            for task in [t for t in self._tasks if t.get_name() == f"watchcache-{info.group_resource}"]:
                task.cancel()
                self._tasks.remove(task)

    def store(self, ri: ResourceInfo[Any]) -> Store:
        """The generic store of a stored resource (of the resource it is stored in, for another version)."""
        store = self.stores.get(ri)
        if store is None:
            storage_of = self.registry.get(ri).storage_of
            if storage_of is None:
                raise LookupError(f"{ri.group_resource} is not stored")
            store = self.stores[storage_of]
        return store

    # --- lifecycle -----------------------------------------------------------------------------

    async def start(self) -> None:
        await self.storage.connect()
        for ri, cache in self.caches.items():
            self._spawn(f"watchcache-{ri.group_resource}", cache.run())
        self.started = True
        self._spawn("etcd-health", self._health_loop())
        self._spawn("bootstrap", self._bootstrap())
        self._spawn("system-namespaces", systemnamespaces.run(self.store(kinds.NAMESPACES),
                                                              interval=self.settings.system_namespaces_interval))
        self._spawn("service-allocations-repair", services.repair(self))
        self._spawn("apiextensions", CRDController(self).run())
        self._spawn("rbac-bootstrap-roles", rbac_bootstrap.ensure(self))
        self._spawn("bookmarks", self._bookmark_loop())
        if self.settings.compaction_interval > 0:
            self._spawn("compactor", Compactor(self.storage, self.settings.compaction_interval).run())

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
        await self.kubelet.aclose()
        with contextlib.suppress(Exception):
            await self.storage.close()

    def ready(self) -> bool:
        return self.etcd_ok and all(c.ready.is_set() for c in self.caches.values())

    # --- background loops ----------------------------------------------------------------------

    async def _health_loop(self) -> None:
        while True:
            try:
                await self.storage.status_revision(timeout=1.0)
                if self.storage.version is None:
                    await self.storage.check_features()
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
        """Create what every cluster has from its first start, retrying until etcd answers.

        As kube-apiserver's bootstrap controllers do: the system namespaces, the
        system PriorityClasses (objects that exist already are left as they are),
        and the ``kubernetes`` Service with endpoints pointing at this APIServer;
        and at the very first start (when the system PriorityClasses are new), as
        the local clusters people try kubectl on have, a default StorageClass
        (``standard``).
        """
        pending: list[tuple[ResourceInfo[Any], dict[str, Any]]] = [
            (kinds.NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
            for name in SYSTEM_NAMESPACES
        ]
        pending += [(kinds.PRIORITY_CLASSES, {
            "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
            "value": value, "description": description, "preemptionPolicy": "PreemptLowerPriority"})
            for name, value, description in SYSTEM_PRIORITY_CLASSES]
        while pending:
            info, obj = pending[0]
            try:
                await self.store(info).create(None, obj, WriteOptions(field_manager="kube-apiserver"))
                pending.pop(0)
                if info is kinds.PRIORITY_CLASSES and obj["metadata"]["name"] == SYSTEM_PRIORITY_CLASSES[0][0]:
                    # A cluster's first start (only this bootstrap creates the system classes): it gets
                    # its default StorageClass once, not again after someone deleted it.
                    pending.append((kinds.STORAGE_CLASSES, storageclasses.default_storage_class()))
            except errors.APIError as e:
                if e.reason == "AlreadyExists":
                    pending.pop(0)
                else:
                    await asyncio.sleep(0.5)
        # The kubernetes Service and its endpoints, pointing at this APIServer.
        while True:
            try:
                await kubernetesservice.ensure(self)
                return
            except errors.APIError as e:
                log.info("bootstrapping the kubernetes Service: %s", e.message)
                await asyncio.sleep(0.5)

    async def _bookmark_loop(self) -> None:
        while True:
            await asyncio.sleep(self.settings.bookmark_interval)
            for cache in self.caches.values():
                cache.send_bookmarks()



def _field_tracker(ri: ResourceInfo[Any]) -> FieldTracker:
    """Record field ownership (metadata.managedFields) on every write of ``ri``."""

    def track(old: dict[str, Any] | None, new: dict[str, Any], manager: str, subresource: str | None) -> None:
        managedfields.update_managed_fields(old, new, definition=ri.definition, manager=manager or "unknown",
                                            api_version=ri.api_version, now=now_time(),
                                            subresource=subresource)
    return track
