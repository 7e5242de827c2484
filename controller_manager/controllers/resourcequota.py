"""The ResourceQuota controller: each quota's ``status.hard`` and ``status.used``, counted from the objects.

Kubernetes' ``pkg/controller/resourcequota``: a quota's usage is recounted
from the live objects of its namespace (with :mod:`machinery.quota`, the
evaluator the admission plugin uses) whenever the quota changes, when a Pod,
Service or PersistentVolumeClaim of its namespace changes (the
"replenishment" of usage freed by deletions), and every
``--resource-quota-sync-period`` (5 minutes) for everything else; the status
is written only when it changed. ``count/<resource>.<group>`` works for any
kind discovery lists, custom resources too (listed metadata-only).

Concurrency: ``concurrent_resource_quota_syncs`` workers keyed by quota.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import Any, Final

from kubernetes.client import V1ResourceQuota
from pydantic import BaseModel

from controller_manager.context import ControllerContext
from machinery import discovery, quota
from machinery.api import kinds
from machinery.api.kinds import (
    PERSISTENT_VOLUME_CLAIMS,
    PODS,
    RESOURCE_QUOTAS,
    SERVICES,
    ObjectKey,
    ResourceInfo,
)
from machinery.api.unstructured import metadata_only
from machinery.client.errors import ApiError
from machinery.client.objects import key_of, meta_of, to_wire
from machinery.controller import Controller
from machinery.informer.shared import DeletedFinalStateUnknown
from machinery.informer.store import NAMESPACE_INDEX, index_by_namespace

log = logging.getLogger(__name__)

NAME: Final = "resourcequota-controller"
ALIASES: Final = ("resourcequota",)
#: The kinds whose usage the controller keeps from informers, as Kubernetes' replenishment does.
_WATCHED: Final = (PODS, SERVICES, PERSISTENT_VOLUME_CLAIMS)


class ResourceQuotaController(Controller):
    def __init__(self, ctx: ControllerContext) -> None:
        self._quotas = ctx.informers.informer(RESOURCE_QUOTAS, indexers={NAMESPACE_INDEX: index_by_namespace})
        self._watched = {(r.group, r.plural): ctx.informers.informer(r, indexers={
            NAMESPACE_INDEX: index_by_namespace}) for r in _WATCHED}
        super().__init__("resourcequota_primary", informers=[self._quotas, *self._watched.values()],
                         workers=ctx.options.concurrent_resource_quota_syncs, clock=ctx.clock)
        self._client = ctx.client
        self._clock = ctx.clock
        self._is_leading = ctx.is_leading
        self._period = ctx.options.resource_quota_sync_period
        self._quotas.add_handler(on_add=self.enqueue, on_update=lambda _o, n: self.enqueue(n))
        for informer in self._watched.values():
            informer.add_handler(on_add=self._replenish, on_update=lambda _o, n: self._replenish(n),
                                 on_delete=self._replenish)

    async def run(self) -> None:
        async with asyncio.TaskGroup() as group:
            group.create_task(super().run(), name="resourcequota-workers")
            group.create_task(self._resync(), name="resourcequota-resync")

    async def _resync(self) -> None:
        while True:
            await self._clock.sleep(self._period)
            for q in self._quotas.store.list():
                self.enqueue(q)

    def _replenish(self, obj: BaseModel | DeletedFinalStateUnknown[Any]) -> None:
        target = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        for q in self._quotas.store.by_index(NAMESPACE_INDEX, meta_of(target).namespace or ""):
            self.enqueue(q)

    async def sync(self, key: ObjectKey) -> None:
        q = self._quotas.store.get(key)
        if q is None or not self._is_leading() or meta_of(q).deletion_timestamp is not None:
            return
        wire = to_wire(q)
        namespace = meta_of(q).namespace or ""
        used = quota.total(wire, await self._objects(namespace, quota.tracked(wire)))
        status = {"hard": dict((wire.get("spec") or {}).get("hard") or {}), "used": quota.wire(used)}
        if (wire.get("status") or {}) == status:
            return
        wire["status"] = status
        await self._client.update_status(RESOURCE_QUOTAS, wire)
        log.debug("resource quota %s: used %s", key_of(q), status["used"])

    async def _objects(self, namespace: str, tracked: Iterable[str]) -> list[tuple[str, str, dict[str, Any]]]:
        """Every object of the namespace that a tracked resource may count, as (group, plural, wire)."""
        wanted: dict[tuple[str, str], ResourceInfo[Any]] = {}
        for name in tracked:
            found = _resources_for(name)
            if found is None:
                found = await self._custom(name)
            for info in found:
                wanted[(info.group, info.plural)] = info
        objects: list[tuple[str, str, dict[str, Any]]] = []
        for (group, plural), resource in wanted.items():
            informer = self._watched.get((group, plural))
            if informer is not None:
                objects.extend((group, plural, to_wire(o)) for o in informer.store.by_index(NAMESPACE_INDEX,
                                                                                             namespace))
                continue
            try:
                listed = await self._client.list(metadata_only(resource), namespace=namespace)
            except ApiError as err:
                log.warning("resource quota: cannot list %s in %s: %s", resource.group_resource, namespace, err)
                continue
            objects.extend((group, plural, to_wire(o)) for o in listed.items)
        return objects


    async def _custom(self, name: str) -> list[ResourceInfo[Any]]:
        """A ``count/`` of a kind no built-in table knows (a custom resource), found through discovery."""
        plural, _, group = name.removeprefix("count/").partition(".")
        try:
            found = await discovery.discover(self._client)
        except ApiError:
            return []
        return [r for r in found.preferred_resources() if r.group == group and r.plural == plural]


def _resources_for(name: str) -> list[ResourceInfo[Any]] | None:
    """The resources a quota resource name counts (``count/deployments.apps`` -> deployments); None when
    only discovery can tell (a custom resource)."""
    if name.startswith("count/"):
        plural, _, group = name.removeprefix("count/").partition(".")
        found = [r for r in kinds.RESOURCES if r.plural == plural and r.group == group and r.namespaced]
        if not found:
            return None
        preferred = kinds.PREFERRED_VERSIONS.get(group, "v1")
        return [next((r for r in found if r.version == preferred), found[0])]
    legacy: dict[str, ResourceInfo[Any]] = {"services": SERVICES, "services.nodeports": SERVICES, "services.loadbalancers": SERVICES,
              "persistentvolumeclaims": PERSISTENT_VOLUME_CLAIMS, "requests.storage": PERSISTENT_VOLUME_CLAIMS,
              "configmaps": kinds.CONFIG_MAPS, "secrets": kinds.SECRETS,
              "replicationcontrollers": kinds.REPLICATION_CONTROLLERS, "resourcequotas": RESOURCE_QUOTAS}
    if name in legacy:
        return [legacy[name]]
    if quota.STORAGE_CLASS_SUFFIX in name:
        return [PERSISTENT_VOLUME_CLAIMS]
    return [PODS]


__all__ = ["ALIASES", "NAME", "ResourceQuotaController", "V1ResourceQuota"]
