"""The garbage collector: removes what owners leave behind, and carries out Foreground and Orphan deletion.

Kubernetes' collector (``pkg/controller/garbagecollector``) in small. It
watches every resource that can own or be owned, found as Kubernetes finds
them, through discovery: every resource that supports delete, list and watch
but Events (which Kubernetes' collector ignores too), custom resources
included. Discovery is read again every ``discovery_refresh_period`` (30 s),
and a resource that appears (a CRD was created) gets its monitor then, and owners of its kind named
before it was known are looked up again;
objects of kinds without an official model are held as
:class:`~machinery.api.unstructured.Unstructured`. It keeps a graph of
ownership:

- one node per object, keyed by uid, with its ownerReferences and the set of
  its dependents; an owner named in a reference but not seen (yet) is a
  *virtual* node, checked against the APIServer;
- **Background** (and any dependent whose owner no longer exists, by uid):
  when an owner disappears, each dependent is checked; one whose owners are
  all gone is deleted, one that keeps a live owner only loses the references
  to the dead ones;
- **Foreground**: an owner deleted with the ``foregroundDeletion`` finalizer
  stays (with its deletionTimestamp) while its dependents are deleted; once no
  dependent with ``blockOwnerDeletion`` remains, the finalizer is removed and
  the APIServer deletes the owner;
- **Orphan**: an owner deleted with the ``orphan`` finalizer has its
  ownerReference removed from every dependent, then the finalizer removed.

Decisions are never taken on the cache alone: an owner not in the graph is
looked up on the APIServer (absent ones are remembered in a small cache, so a
thousand Pods of one deleted RC cost one lookup), and a dependent is deleted
with its uid and resourceVersion as preconditions, so a stale view fails with
a conflict and is retried instead of deleting something that just got a new
owner. Nothing is ever listed per event.

Concurrency: the informer handlers update the graph synchronously (the event
loop serializes them, as Kubernetes' single graph-builder goroutine does);
``concurrent_gc_syncs`` workers each drain the attempt-to-delete and
attempt-to-orphan queues, never two on the same uid. Workers change the graph
only between awaits.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

import httpx
from kubernetes.client import V1OwnerReference
from pydantic import BaseModel

from controller_manager.context import ControllerContext
from machinery import discovery
from machinery.api import kinds
from machinery.api.kinds import ResourceInfo, object_key
from machinery.api.unstructured import metadata_only
from machinery.client.backoff import ExponentialBackoff
from machinery.client.errors import ApiError, NotFound
from machinery.client.objects import meta_of
from machinery.client.rest import PatchType, PropagationPolicy
from machinery.client.retry import retry_on_conflict
from machinery.informer.shared import DeletedFinalStateUnknown, SharedInformer
from machinery.workqueue import WorkQueue, run_workers

log = logging.getLogger(__name__)

NAME: Final = "garbage-collector-controller"
ALIASES: Final = ("garbagecollector",)

FOREGROUND_FINALIZER: Final = "foregroundDeletion"
ORPHAN_FINALIZER: Final = "orphan"
#: Resources the collector never watches (``ignoredResources``): Events are many and own nothing.
IGNORED: Final = frozenset({("", "events"), ("events.k8s.io", "events")})
#: How many owners known to be absent are remembered (Kubernetes' ``absentOwnerCache``).
ABSENT_OWNER_CACHE_SIZE: Final = 500


@dataclass(frozen=True, slots=True)
class Identity:
    """An object's coordinates: what an ownerReference names, plus the namespace ("" if cluster-scoped)."""

    api_version: str
    kind: str
    name: str
    uid: str
    namespace: str

    def describe(self) -> str:
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind} {where}{self.name}"


@dataclass(slots=True, eq=False)
class GraphNode:
    identity: Identity
    owners: list[V1OwnerReference] = field(default_factory=list)
    #: uids of the objects that name this one as an owner.
    dependents: set[str] = field(default_factory=set)
    #: False for a virtual node: an owner named by a reference but not seen through a watch.
    observed: bool = True
    being_deleted: bool = False
    #: Being deleted with the foregroundDeletion finalizer: waits for its blocking dependents.
    deleting_dependents: bool = False

    def blocks(self, owner_uid: str) -> bool:
        """Whether this object's reference to ``owner_uid`` has ``blockOwnerDeletion``."""
        return any(ref.uid == owner_uid and ref.block_owner_deletion for ref in self.owners)


OwnerState = Literal["solid", "dangling", "waiting"]


class GarbageCollector:
    """The ownership graph, fed by the informers, and the workers that act on it."""

    def __init__(self, ctx: ControllerContext, *, resources: Sequence[ResourceInfo[Any]] | None = None) -> None:
        """``resources`` fixes what is monitored (tests); by default discovery decides, and is refreshed."""
        self._client = ctx.client
        self._factory = ctx.informers
        self._refresh = ctx.options.discovery_refresh_period
        self._clock = ctx.clock
        self._static = resources is not None
        #: Every served resource by (apiVersion, kind), to resolve owner references of any version.
        self._by_kind: dict[tuple[str, str], ResourceInfo[Any]] = {}
        self._is_leading = ctx.is_leading
        self._workers = ctx.options.concurrent_gc_syncs
        self.graph: dict[str, GraphNode] = {}
        self._absent: OrderedDict[Identity, None] = OrderedDict()
        self._unresolvable_reported: set[tuple[str, str]] = set()
        self.attempt_to_delete: WorkQueue[str] = WorkQueue("garbage_collector_attempt_to_delete",
                                                           clock=ctx.clock)
        self.attempt_to_orphan: WorkQueue[str] = WorkQueue("garbage_collector_attempt_to_orphan",
                                                           clock=ctx.clock)
        #: One monitor per watched resource, by (group, kind).
        self._informers: dict[tuple[str, str], SharedInformer[Any]] = {}
        self._monitored: dict[tuple[str, str], ResourceInfo[Any]] = {}
        if resources is not None:
            self._monitor(resources)

    def _monitor(self, resources: Iterable[ResourceInfo[Any]]) -> list[SharedInformer[Any]]:
        """Start monitors for resources not watched yet; returns the new informers."""
        started = []
        for resource in resources:
            if (resource.group, resource.plural) in IGNORED or (resource.group, resource.kind) in self._informers:
                continue
            # Share the process's typed informer when a controller watches the resource anyway; otherwise
            # watch metadata only, which is all the graph needs and decodes any kind.
            informer = self._factory.existing(resource) or self._factory.informer(metadata_only(resource))
            self._informers[(resource.group, resource.kind)] = informer
            self._monitored[(resource.group, resource.kind)] = resource
            informer.add_handler(on_add=functools.partial(self._observe, None, resource=resource),
                                 on_update=functools.partial(self._on_update, resource=resource),
                                 on_delete=self._on_delete)
            started.append(informer)
        return started

    async def _discover(self) -> list[ResourceInfo[Any]]:
        """The deletable, listable, watchable resources, in their preferred versions."""
        found = await discovery.discover(self._client)
        self._by_kind.update(found.by_kind())
        return discovery.with_verbs(found.preferred_resources(), "delete", "list", "watch")

    async def run(self) -> None:
        if not self._static:
            backoff = ExponentialBackoff(0.5, 30.0, factor=2.0, jitter=0.5)
            while True:
                try:
                    self._monitor(await self._discover())
                    break
                except (ApiError, httpx.TransportError) as err:
                    delay = backoff.next()
                    log.warning("garbage collector: discovery failed, retrying in %.1fs: %s", delay, err)
                    await self._clock.sleep(delay)
        for informer in list(self._informers.values()):
            await informer.wait_synced()
        log.info("garbage collector: all resource monitors have synced, proceeding to collect garbage")
        async with asyncio.TaskGroup() as group:
            if not self._static:
                group.create_task(self._resync_monitors(), name="gc-resync-monitors")
            group.create_task(run_workers(self.attempt_to_delete, self._attempt_to_delete_worker,
                                          workers=self._workers), name="gc-attempt-to-delete")
            group.create_task(run_workers(self.attempt_to_orphan, self._attempt_to_orphan_worker,
                                          workers=self._workers), name="gc-attempt-to-orphan")

    async def _resync_monitors(self) -> None:
        """Re-read discovery periodically: resources added since (custom resources) get monitors."""
        while True:
            await self._clock.sleep(self._refresh)
            try:
                added = self._monitor(await self._discover())
            except (ApiError, httpx.TransportError) as err:
                log.warning("garbage collector: failed to sync resource monitors: %s", err)
                continue
            for informer in added:
                log.info("garbage collector: monitoring %s", informer.resource.group_resource)
            if added:
                for informer in added:
                    await informer.wait_synced()
                self._recheck_virtual_nodes()

    def _recheck_virtual_nodes(self) -> None:
        """Owners never seen whose kind discovery now knows (a new CRD's objects) are looked up again."""
        for uid, node in self.graph.items():
            if not node.observed and self._for_kind(node.identity.api_version, node.identity.kind) is not None:
                self.attempt_to_delete.add(uid)

    # --- the graph builder ---------------------------------------------------------------------

    def _on_update(self, old: BaseModel, new: BaseModel, *, resource: ResourceInfo[Any]) -> None:
        if meta_of(old).uid != meta_of(new).uid:
            # The name was deleted and re-created while the watch was away: two objects, not one.
            self._on_delete(old)
            self._observe(None, new, resource=resource)
        else:
            self._observe(old, new, resource=resource)

    def _on_delete(self, obj: BaseModel | DeletedFinalStateUnknown[Any]) -> None:
        last = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        node = self.graph.get(meta_of(last).uid or "")
        if node is not None:
            self._remove(node)

    def _observe(self, old: BaseModel | None, obj: BaseModel, *, resource: ResourceInfo[Any]) -> None:
        meta = meta_of(obj)
        uid = meta.uid or ""
        owners = list(meta.owner_references or ())
        node = self.graph.get(uid)
        if node is None:
            node = GraphNode(identity_of(obj, resource), owners=owners)
            self.graph[uid] = node
            self._add_dependent_to_owners(node, owners)
        else:
            if not node.observed:
                self._mark_observed(node, identity_of(obj, resource))
            added, removed, changed = _reference_diffs(node.owners, owners)
            if added or removed or changed:
                self._enqueue_unblocked_owners(removed, changed)
                node.owners = owners
                self._add_dependent_to_owners(node, added)
                for ref in removed:
                    owner = self.graph.get(ref.uid)
                    if owner is not None:
                        owner.dependents.discard(uid)
        if meta.deletion_timestamp is not None:
            node.being_deleted = True
        if _starts_deleting_with(old, obj, ORPHAN_FINALIZER):
            self.attempt_to_orphan.add(uid)
        elif _starts_deleting_with(old, obj, FOREGROUND_FINALIZER):
            node.deleting_dependents = True
            for dependent in node.dependents:
                self.attempt_to_delete.add(dependent)
            self.attempt_to_delete.add(uid)

    def _mark_observed(self, node: GraphNode, identity: Identity) -> None:
        """A virtual node's object was seen: dependents that named it with other coordinates need a look."""
        node.observed = True
        if identity != node.identity:
            for dependent_uid in node.dependents:
                dependent = self.graph.get(dependent_uid)
                if dependent is not None and not any(_names(ref, identity) for ref in dependent.owners):
                    self.attempt_to_delete.add(dependent_uid)
            node.identity = identity

    def _add_dependent_to_owners(self, node: GraphNode, refs: Iterable[V1OwnerReference]) -> None:
        uid = node.identity.uid
        for ref in refs:
            owner = self.graph.get(ref.uid)
            if owner is None:
                # An owner not seen yet: remember it as virtual and ask the APIServer whether it exists.
                owner = GraphNode(self._owner_identity(ref, node.identity.namespace), observed=False)
                self.graph[ref.uid] = owner
                self.attempt_to_delete.add(ref.uid)
            elif owner.observed and not _names(ref, owner.identity):
                # The reference disagrees with the owner we know: check whether the dependent is orphaned.
                self.attempt_to_delete.add(uid)
            owner.dependents.add(uid)

    def _enqueue_unblocked_owners(self, removed: Sequence[V1OwnerReference],
                                  changed: Sequence[tuple[V1OwnerReference, V1OwnerReference]]) -> None:
        """Owners waiting for their dependents may proceed when a blocking reference goes away."""
        unblocked = [ref for ref in removed if ref.block_owner_deletion]
        unblocked += [old for old, new in changed
                      if old.block_owner_deletion and not new.block_owner_deletion]
        for ref in unblocked:
            owner = self.graph.get(ref.uid)
            if owner is not None and owner.deleting_dependents:
                self.attempt_to_delete.add(ref.uid)

    def _remove(self, node: GraphNode) -> None:
        """An object is gone: its dependents may now be garbage, and owners waiting on it may proceed."""
        uid = node.identity.uid
        del self.graph[uid]
        for ref in node.owners:
            owner = self.graph.get(ref.uid)
            if owner is None:
                continue
            owner.dependents.discard(uid)
            if owner.deleting_dependents:
                self.attempt_to_delete.add(ref.uid)
        if node.dependents:
            self._remember_absent(node.identity)
        for dependent in node.dependents:
            self.attempt_to_delete.add(dependent)

    def _virtual_delete(self, identity: Identity) -> None:
        """The APIServer says this object does not exist (the virtual delete event)."""
        node = self.graph.get(identity.uid)
        if node is None:
            return
        if node.observed and node.identity != identity:
            # A real object we watch disagrees with the coordinates looked up: only its dependents
            # that used those coordinates are orphans.
            self._remember_absent(identity)
            for dependent_uid in node.dependents:
                dependent = self.graph.get(dependent_uid)
                if dependent is not None and any(_names(ref, identity) for ref in dependent.owners):
                    self.attempt_to_delete.add(dependent_uid)
            return
        self._remove(node)

    def _remember_absent(self, identity: Identity) -> None:
        self._absent[identity] = None
        self._absent.move_to_end(identity)
        while len(self._absent) > ABSENT_OWNER_CACHE_SIZE:
            self._absent.popitem(last=False)

    # --- attempt to delete ---------------------------------------------------------------------

    async def _attempt_to_delete_worker(self, uid: str) -> None:
        node = self.graph.get(uid)
        resource = self._for_kind(node.identity.api_version, node.identity.kind) if node is not None else None
        if node is not None and resource is None and self._is_leading():
            # A kind discovery does not list (yet): a custom resource whose CRD is newer than the last
            # discovery, or a kind nobody serves. Retried with backoff, as Kubernetes retries its
            # restMappingError; a discovery that finds the kind looks at it at once (_resync_monitors).
            self.attempt_to_delete.add_rate_limited(uid)
            return
        if node is None or resource is None or (resource.namespaced and not node.identity.namespace) \
                or not self._is_leading():
            # Gone, or an owner that cannot be looked up (a namespaced kind named by a cluster-scoped
            # object): never found, so its dependents stay.
            self.attempt_to_delete.forget(uid)
            return
        try:
            await self._attempt_to_delete_item(node, resource)
        except (ApiError, httpx.TransportError) as err:
            log.warning("garbage collector: error syncing %s, requeuing: %s", node.identity.describe(), err)
            self.attempt_to_delete.add_rate_limited(uid)
            return
        if not node.observed and self.graph.get(uid) is node:
            # A virtual node whose object exists but has not come through the watch yet: look again.
            self.attempt_to_delete.add_rate_limited(uid)
            return
        self.attempt_to_delete.forget(uid)

    async def _attempt_to_delete_item(self, node: GraphNode, resource: ResourceInfo[Any]) -> None:
        if node.being_deleted and not node.deleting_dependents:
            # Being deleted is a one-way trip: its dependents are looked at once it is gone.
            return
        latest = await self._latest(node, resource)
        if latest is None:
            self._virtual_delete(node.identity)
            return
        if node.deleting_dependents:
            await self._process_deleting_dependents(node)
            return
        meta = meta_of(latest)
        refs = list(meta.owner_references or ())
        if not refs:
            return
        states = [await self._owner_state(node, ref) for ref in refs]
        solid = [ref for ref, state in zip(refs, states, strict=True) if state == "solid"]
        gone = [ref.uid for ref, state in zip(refs, states, strict=True) if state != "solid"]
        waiting = "waiting" in states
        if solid:
            if gone:
                # Live owners remain: keep the object, drop the references to the dead or departing ones.
                log.debug("garbage collector: removing dangling references %s from %s", gone,
                          node.identity.describe())
                await self._patch(node, _delete_owner_refs_patch(node.identity.uid, gone))
            return
        if waiting and node.dependents:
            # An owner waits for this object, which has dependents of its own: delete it in the
            # foreground too, unblocking its owners first if a dependent waits as well (a cycle).
            if any((d := self.graph.get(u)) is not None and d.deleting_dependents for u in node.dependents):
                await self._patch(node, _unblock_owner_refs_patch(node.identity.uid, refs))
            await self._delete(node, meta.resource_version, "Foreground")
            return
        finalizers = meta.finalizers or ()
        policy: PropagationPolicy = ("Orphan" if ORPHAN_FINALIZER in finalizers else
                                     "Foreground" if FOREGROUND_FINALIZER in finalizers else "Background")
        await self._delete(node, meta.resource_version, policy)

    async def _process_deleting_dependents(self, node: GraphNode) -> None:
        uid = node.identity.uid
        blocking = [d for d in (self.graph.get(u) for u in node.dependents)
                    if d is not None and d.blocks(uid)]
        if not blocking:
            log.info("garbage collector: the dependents of %s are gone, removing its %s finalizer",
                     node.identity.describe(), FOREGROUND_FINALIZER)
            await self._remove_finalizer(node, FOREGROUND_FINALIZER)
            return
        for dependent in blocking:
            if not dependent.deleting_dependents:
                self.attempt_to_delete.add(dependent.identity.uid)

    async def _owner_state(self, node: GraphNode, ref: V1OwnerReference) -> OwnerState:
        """Whether an owner exists (solid), does not (dangling), or is being deleted in the foreground."""
        identity = self._owner_identity(ref, node.identity.namespace)
        resource = self._for_kind(ref.api_version, ref.kind)
        if resource is None:
            # kubesim does not serve this kind: it can never be found, and so the object is kept.
            if (ref.api_version, ref.kind) not in self._unresolvable_reported:
                self._unresolvable_reported.add((ref.api_version, ref.kind))
                log.warning("garbage collector: %s names an owner of kind %s/%s, which kubesim does not "
                            "serve; such references are left alone", node.identity.describe(),
                            ref.api_version, ref.kind)
            return "solid"
        if resource.namespaced and not node.identity.namespace:
            log.warning("garbage collector: cluster-scoped %s names a namespaced owner %s; left alone",
                        node.identity.describe(), identity.describe())
            return "solid"
        if identity in self._absent:
            return "dangling"
        owner = self.graph.get(ref.uid)
        if owner is not None and owner.observed and owner.identity == identity:
            # Seen through a watch: the graph may lag behind, but only ever toward keeping objects.
            return "waiting" if owner.deleting_dependents else "solid"
        try:
            found = await self._client.get(resource, ref.name, namespace=identity.namespace or None)
        except NotFound:
            self._remember_absent(identity)
            return "dangling"
        meta = meta_of(found)
        if meta.uid != ref.uid:
            self._remember_absent(identity)
            return "dangling"
        deleting = meta.deletion_timestamp is not None and FOREGROUND_FINALIZER in (meta.finalizers or ())
        return "waiting" if deleting else "solid"

    async def _latest(self, node: GraphNode, resource: ResourceInfo[Any]) -> BaseModel | None:
        """The object as last seen (the watch cache, else the APIServer); None when it does not exist."""
        identity = node.identity
        informer = self._informers.get((resource.group, resource.kind))
        key = object_key(identity.namespace or None, identity.name)
        cached: BaseModel | None = informer.store.get(key) if informer is not None and node.observed else None
        if cached is not None and meta_of(cached).uid == identity.uid:
            return cached
        try:
            found: BaseModel = await self._client.get(resource, identity.name,
                                                      namespace=identity.namespace or None)
        except NotFound:
            return None
        return found if meta_of(found).uid == identity.uid else None

    async def _delete(self, node: GraphNode, resource_version: str | None, policy: PropagationPolicy) -> None:
        identity = node.identity
        resource = self._resource(identity)
        log.debug("garbage collector: deleting %s with propagation %s", identity.describe(), policy)
        try:
            await self._client.delete(resource, identity.name, namespace=identity.namespace or None,
                                      uid=identity.uid, resource_version=resource_version,
                                      propagation_policy=policy)
        except NotFound:
            pass

    async def _patch(self, node: GraphNode, patch: dict[str, Any]) -> None:
        identity = node.identity
        await self._client.patch(self._resource(identity), identity.name, patch,
                                 namespace=identity.namespace or None, patch_type=PatchType.STRATEGIC_MERGE)

    async def _remove_finalizer(self, node: GraphNode, finalizer: str) -> None:
        """Drop ``finalizer`` from the live object with a merge patch guarded by its resourceVersion."""
        identity = node.identity
        resource = self._resource(identity)
        namespace = identity.namespace or None

        async def attempt() -> None:
            try:
                obj = await self._client.get(resource, identity.name, namespace=namespace)
            except NotFound:
                return
            meta = meta_of(obj)
            if meta.uid != identity.uid or finalizer not in (meta.finalizers or ()):
                return
            remaining = [f for f in meta.finalizers or () if f != finalizer]
            patch = {"metadata": {"resourceVersion": meta.resource_version, "finalizers": remaining or None}}
            try:
                await self._client.patch(resource, identity.name, patch, namespace=namespace,
                                         patch_type=PatchType.MERGE)
            except NotFound:
                return

        await retry_on_conflict(attempt)

    # --- attempt to orphan ---------------------------------------------------------------------

    async def _attempt_to_orphan_worker(self, uid: str) -> None:
        node = self.graph.get(uid)
        if node is None or not self._is_leading():
            self.attempt_to_orphan.forget(uid)
            return
        dependents = [d for d in (self.graph.get(u) for u in list(node.dependents)) if d is not None]
        patch_results = await asyncio.gather(
            *(self._patch(d, _delete_owner_refs_patch(d.identity.uid, [uid])) for d in dependents),
            return_exceptions=True)
        try:
            for result in patch_results:
                if isinstance(result, BaseException) and not isinstance(result, NotFound):
                    raise result
            log.info("garbage collector: orphaned %d dependents of %s, removing its %s finalizer",
                     len(dependents), node.identity.describe(), ORPHAN_FINALIZER)
            await self._remove_finalizer(node, ORPHAN_FINALIZER)
        except (ApiError, httpx.TransportError) as err:
            log.warning("garbage collector: orphaning the dependents of %s failed, requeuing: %s",
                        node.identity.describe(), err)
            self.attempt_to_orphan.add_rate_limited(uid)
            return
        self.attempt_to_orphan.forget(uid)


    # --- kinds ---------------------------------------------------------------------------------

    def _for_kind(self, api_version: str, kind: str) -> ResourceInfo[Any] | None:
        """The resource of objects of this apiVersion and kind, as discovery (or the built-in table) says.

        Read as metadata only: the collector's gets, patches and deletes never need the rest, and so
        work the same for every kind.
        """
        resource = self._by_kind.get((api_version, kind)) or kinds.for_kind(api_version, kind)
        return metadata_only(resource) if resource is not None else None

    def _owner_identity(self, ref: V1OwnerReference, dependent_namespace: str) -> Identity:
        """Where an ownerReference points: in the dependent's namespace, unless the kind is cluster-scoped."""
        resource = self._for_kind(ref.api_version, ref.kind)
        namespace = dependent_namespace if resource is None or resource.namespaced else ""
        return Identity(ref.api_version, ref.kind, ref.name, ref.uid, namespace)

    def _resource(self, identity: Identity) -> ResourceInfo[Any]:
        resource = self._for_kind(identity.api_version, identity.kind)
        if resource is None:
            raise ValueError(f"no resource serves {identity.api_version} {identity.kind}")
        return resource


def identity_of(obj: BaseModel, resource: ResourceInfo[Any]) -> Identity:
    meta = meta_of(obj)
    return Identity(resource.api_version, resource.kind, meta.name or "", meta.uid or "",
                    meta.namespace or "" if resource.namespaced else "")


def _names(ref: V1OwnerReference, identity: Identity) -> bool:
    """Whether an ownerReference's coordinates are exactly this object's."""
    return (ref.uid == identity.uid and ref.name == identity.name and ref.kind == identity.kind
            and ref.api_version == identity.api_version)


def _reference_diffs(old: Sequence[V1OwnerReference], new: Sequence[V1OwnerReference],
                     ) -> tuple[list[V1OwnerReference], list[V1OwnerReference],
                                list[tuple[V1OwnerReference, V1OwnerReference]]]:
    """References added, removed, and changed (same uid, other fields), by uid."""
    old_by_uid = {ref.uid: ref for ref in old}
    new_by_uid = {ref.uid: ref for ref in new}
    added = [ref for uid, ref in new_by_uid.items() if uid not in old_by_uid]
    removed = [ref for uid, ref in old_by_uid.items() if uid not in new_by_uid]
    changed = [(old_by_uid[uid], ref) for uid, ref in new_by_uid.items()
               if uid in old_by_uid and old_by_uid[uid] != ref]
    return added, removed, changed


def _starts_deleting_with(old: BaseModel | None, new: BaseModel, finalizer: str) -> bool:
    """Whether the object now is, and before was not, being deleted with ``finalizer``."""
    if not _deleting_with(new, finalizer):
        return False
    return old is None or not _deleting_with(old, finalizer)


def _deleting_with(obj: BaseModel, finalizer: str) -> bool:
    meta = meta_of(obj)
    return meta.deletion_timestamp is not None and finalizer in (meta.finalizers or ())


def _delete_owner_refs_patch(dependent_uid: str, owner_uids: Iterable[str]) -> dict[str, Any]:
    """A strategic merge patch removing the references to these owners (client-go's
    ``GenerateDeleteOwnerRefStrategicMergeBytes``); the dependent's uid guards against a re-created name."""
    return {"metadata": {"ownerReferences": [{"$patch": "delete", "uid": uid} for uid in owner_uids],
                         "uid": dependent_uid}}


def _unblock_owner_refs_patch(dependent_uid: str, refs: Iterable[V1OwnerReference]) -> dict[str, Any]:
    """A strategic merge patch setting ``blockOwnerDeletion: false`` on every blocking reference."""
    return {"metadata": {"ownerReferences": [{"uid": ref.uid, "blockOwnerDeletion": False}
                                             for ref in refs if ref.block_owner_deletion],
                         "uid": dependent_uid}}
