"""The ReplicaSet controller, written once for ReplicaSets and ReplicationControllers.

Kubernetes' ``pkg/controller/replicaset`` keeps every ReplicaSet's active Pods
equal to ``spec.replicas``; its replication manager is the same controller
given an adapter for the older kind. kubesim does the same: a
:class:`ReplicaSetKind` says how to read one kind (its resource, its selector
form, its event source) and :class:`ReplicaSetController` is the one reconcile
loop for both (``controllers/replication.py`` is the adapter for RCs):

- **Ownership.** Pods carry a controller reference to their owner
  (``blockOwnerDeletion`` true). An orphan whose labels match the selector is
  adopted; an owned Pod whose labels no longer match is released, and a
  replica is made to replace it. An owner being deleted adopts and releases
  nothing and creates nothing.
- **Expectations.** Creations and deletions are recorded before they are
  sent; a sync changes nothing until the informer has seen them all come back
  (or 5 minutes passed), so a slow watch never makes the controller act twice
  for the same gap, and a restarted controller starts from what it lists.
  See :mod:`controller_manager.expectations`.
- **Slow start.** At most 500 creations or deletions per sync (``burstReplicas``);
  creations go out in batches of 1, 2, 4... and stop at the first batch with
  a failure, so a doomed template costs one request, not five hundred.
- **Which Pods go.** Unscheduled before scheduled, Pending before Unknown
  before Running, not ready before ready, lower ``pod-deletion-cost`` first,
  Pods doubled up on a node with Pods of sibling ReplicaSets (the other
  ReplicaSets of the same Deployment) before lonely ones, more recently ready
  first, more restarts first, newer first; times compare on a logarithmic
  scale with ties broken by uid (``LogarithmicScaleDown``), as
  ``ActivePodsWithRanks`` sorts them.
- **Status** (replicas, fullyLabeledReplicas, readyReplicas, availableReplicas,
  observedGeneration, the ``ReplicaFailure`` condition) is written through
  ``/status`` only when it changed, retried on a fresh read after a conflict.

Reads come from the informers' indexes (owned Pods by owner uid, orphans by
namespace, ReplicaSets by their controller's uid), so a sync costs O(the
owner's Pods), not O(all Pods).

Concurrency: ``workers`` syncs at once, never two on the same owner; the
informer handlers run on the event loop between awaits and only update
expectations and enqueue keys.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import functools
import logging
import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Generic, TypeVar

import httpx
import orjson
from kubernetes.client import V1Pod, V1ReplicaSet
from pydantic import BaseModel

from controller_manager.context import ControllerContext
from controller_manager.expectations import Expectations
from controller_manager.podcontrol import (
    NAMESPACE_TERMINATING_CAUSE,
    SLOW_START_INITIAL_BATCH_SIZE,
    Outcome,
    outcomes,
    owner_reference,
    pod_from_template,
    slow_start_batch,
)
from controller_manager.podutil import (
    controller_of,
    is_pod_active,
    is_pod_available,
    is_pod_ready,
    max_container_restarts,
    ready_since,
)
from machinery.api.kinds import PODS, REPLICA_SETS, ObjectKey, ResourceInfo, object_key
from machinery.api.labels import Selector, selector_from_set
from machinery.api.meta import format_time, utcnow
from machinery.client.errors import ApiError, Invalid, NotFound
from machinery.client.objects import key_of, meta_of, to_wire
from machinery.client.rest import PatchType
from machinery.controller import Controller
from machinery.events import NORMAL, WARNING
from machinery.informer.shared import DeletedFinalStateUnknown
from machinery.informer.store import NAMESPACE_INDEX, OWNER_UID_INDEX, index_by_namespace, index_by_owner_uid

log = logging.getLogger(__name__)

#: Most creations or deletions one sync sends (``BurstReplicas``).
BURST_REPLICAS: Final = 500
REPLICA_FAILURE: Final = "ReplicaFailure"
POD_DELETION_COST: Final = "controller.kubernetes.io/pod-deletion-cost"
#: Pods without a controller, by namespace: the candidates for adoption.
ORPHAN_INDEX: Final = "orphansByNamespace"
#: Owners by the uid of their own controller (a Deployment's ReplicaSets), for the doubled-up rank.
CONTROLLER_UID_INDEX: Final = "controllerUID"
#: Pod writes in flight at once, over all owners. A batch of 256 sent at once costs the client more than it
#: gains: httpx's connection pool does work per pending request on every event, and the APIServer is
#: saturated long before (client-go bounds the rate instead, with its QPS limit).
MAX_IN_FLIGHT_WRITES: Final = 32

_PHASE_ORDINAL: Final = {"Pending": 0, "Unknown": 1, "Running": 2}

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True, slots=True)
class ReplicaSetKind(Generic[M]):
    """How the one ReplicaSet controller reads one kind (ReplicaSet or ReplicationController)."""

    resource: ResourceInfo[M]
    #: The queue's name and the component its Events are reported from.
    queue_name: str
    event_source: str
    #: ``spec.selector`` compiled; an empty selector matches nothing for ReplicaSets (their
    #: validation forbids it), everything for RCs (theirs defaults it from the template).
    selector: Callable[[M], Selector]


def index_orphans_by_namespace(pod: V1Pod) -> Sequence[str]:
    """Pods without a controller, under their namespace (the adoption candidates of a sync)."""
    meta = pod.metadata
    if meta is None or controller_of(meta) is not None:
        return ()
    return (meta.namespace,) if meta.namespace else ()


def index_by_controller_uid(obj: BaseModel) -> Sequence[str]:
    ref = controller_of(meta_of(obj))
    return (ref.uid,) if ref is not None else ()


class ReplicaSetController(Controller, Generic[M]):
    """Keeps every owner's active Pods at ``spec.replicas``."""

    def __init__(self, ctx: ControllerContext, kind: ReplicaSetKind[M], *, workers: int,
                 burst_replicas: int = BURST_REPLICAS) -> None:
        self.kind = kind
        self._owners = ctx.informers.informer(kind.resource, indexers={
            NAMESPACE_INDEX: index_by_namespace, CONTROLLER_UID_INDEX: index_by_controller_uid})
        self._pods = ctx.informers.informer(PODS, indexers={OWNER_UID_INDEX: index_by_owner_uid,
                                                            ORPHAN_INDEX: index_orphans_by_namespace})
        super().__init__(kind.queue_name, informers=[self._owners, self._pods], workers=workers,
                         clock=ctx.clock)
        self._client = ctx.client
        self._recorder = ctx.events.recorder(kind.event_source)
        self._is_leading = ctx.is_leading
        self._burst = burst_replicas
        self.expectations = Expectations(clock=ctx.clock)
        self._writes = asyncio.Semaphore(MAX_IN_FLIGHT_WRITES)
        self._owners.add_handler(on_add=self._owner_added, on_update=self._owner_updated,
                                 on_delete=self._owner_deleted)
        self._pods.add_handler(on_add=self._pod_added, on_update=self._pod_updated,
                               on_delete=self._pod_deleted)

    @property
    def _kind_name(self) -> str:
        return self.kind.resource.kind

    # --- handlers: expectations and keys only ------------------------------------------------

    def _owner_added(self, owner: M) -> None:
        log.info("saw %s %s (replicas %s)", self._kind_name, key_of(owner), desired_replicas(owner),
                 extra={"step": 5})
        self.enqueue(owner)

    def _owner_updated(self, old: M, new: M) -> None:
        if meta_of(old).uid != meta_of(new).uid:
            # Deleted and re-created between two watch events: the old one's expectations are void.
            self.expectations.delete(key_of(old))
        if desired_replicas(old) != desired_replicas(new):
            log.info("saw %s %s scaled from %d to %d replicas", self._kind_name, key_of(new),
                     desired_replicas(old), desired_replicas(new), extra={"step": 5})
        self.enqueue(new)

    def _owner_deleted(self, obj: M | DeletedFinalStateUnknown[M]) -> None:
        owner = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        self.expectations.delete(key_of(owner))
        self.enqueue(obj)

    def _pod_added(self, pod: V1Pod) -> None:
        if pod.metadata is not None and pod.metadata.deletion_timestamp is not None:
            # After a restart a Pod may first show up already terminating: that is no creation.
            self._pod_deleted(pod)
            return
        ref = controller_of(pod.metadata)
        if ref is not None:
            owner = self._resolve(_namespace(pod), ref.kind, ref.name, ref.uid)
            if owner is not None:
                self.expectations.creation_observed(key_of(owner))
                self.enqueue(owner)
            return
        for owner in self._owners_matching_orphan(pod):
            self.enqueue(owner)

    def _pod_updated(self, old: V1Pod, new: V1Pod) -> None:
        old_meta, new_meta = old.metadata, new.metadata
        if old_meta is None or new_meta is None or old_meta.resource_version == new_meta.resource_version:
            return
        labels_changed = (old_meta.labels or {}) != (new_meta.labels or {})
        if new_meta.deletion_timestamp is not None:
            # A graceful deletion starts: the replacement need not wait for the kubelet's final delete.
            self._pod_deleted(new)
            if labels_changed:
                self._pod_deleted(old)
            return
        new_ref, old_ref = controller_of(new_meta), controller_of(old_meta)
        ref_changed = new_ref != old_ref
        if ref_changed and old_ref is not None:
            previous = self._resolve(_namespace(old), old_ref.kind, old_ref.name, old_ref.uid)
            if previous is not None:
                self.enqueue(previous)
        if new_ref is not None:
            owner = self._resolve(_namespace(new), new_ref.kind, new_ref.name, new_ref.uid)
            if owner is None:
                return
            self.enqueue(owner)
            min_ready = min_ready_seconds(owner)
            if min_ready > 0 and not is_pod_ready(old) and is_pod_ready(new):
                # Sync again once the Pod has been ready long enough to count as available; the extra
                # second absorbs the skew between our timer and the Pod's transition time.
                self.queue.add_after(key_of(owner), min_ready + 1.0)
            return
        if labels_changed or ref_changed:
            for owner in self._owners_matching_orphan(new):
                self.enqueue(owner)

    def _pod_deleted(self, obj: V1Pod | DeletedFinalStateUnknown[V1Pod]) -> None:
        pod = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        ref = controller_of(pod.metadata)
        if ref is None:
            return
        owner = self._resolve(_namespace(pod), ref.kind, ref.name, ref.uid)
        if owner is None:
            return
        key = key_of(owner)
        self.expectations.deletion_observed(key, _pod_key(pod))
        self.queue.add(key)

    def _resolve(self, namespace: str, kind: str, name: str, uid: str) -> M | None:
        """The owner a controller reference points at, if it is of our kind and still the same object."""
        if kind != self._kind_name:
            return None
        owner = self._owners.store.get(object_key(namespace, name))
        if owner is None or meta_of(owner).uid != uid:
            return None
        return owner

    def _owners_matching_orphan(self, pod: V1Pod) -> list[M]:
        labels = _labels(pod)
        if not labels:
            return []
        matching = []
        for owner in self._owners.store.by_index(NAMESPACE_INDEX, _namespace(pod)):
            selector = self.kind.selector(owner)
            if not selector.empty() and selector.matches(labels):
                matching.append(owner)
        return matching

    # --- sync ----------------------------------------------------------------------------

    async def sync(self, key: ObjectKey) -> None:
        owner = self._owners.store.get(key)
        if owner is None:
            self.expectations.delete(key)
            return
        if not self._is_leading():
            return
        needs_sync = self.expectations.satisfied(key)
        selector = self.kind.selector(owner)
        pods = await self._claim_pods(owner, selector)
        manage_error: ApiError | httpx.TransportError | None = None
        if needs_sync and meta_of(owner).deletion_timestamp is None:
            try:
                await self._manage_replicas(owner, key, pods)
            except (ApiError, httpx.TransportError) as err:
                manage_error = err
        status = calculate_status(owner, pods, manage_error, utcnow())
        await self._update_status(owner, status)
        min_ready = min_ready_seconds(owner)
        if manage_error is None and min_ready > 0 and status["readyReplicas"] == desired_replicas(owner) \
                and status["availableReplicas"] != desired_replicas(owner):
            # Pods that are ready but not yet available become available on their own; look again then.
            self.queue.add_after(key, float(min_ready))
        if manage_error is not None:
            raise manage_error

    async def _claim_pods(self, owner: M, selector: Selector) -> list[V1Pod]:
        """The owner's active Pods, after adopting matching orphans and releasing non-matching ones."""
        meta = meta_of(owner)
        deleting = meta.deletion_timestamp is not None
        claimed: list[V1Pod] = []
        to_release: list[V1Pod] = []
        for pod in self._pods.store.by_index(OWNER_UID_INDEX, meta.uid or ""):
            ref = controller_of(pod.metadata)
            if ref is None or ref.uid != meta.uid or not is_pod_active(pod):
                continue
            if selector.matches(_labels(pod)):
                claimed.append(pod)
            elif not deleting:
                to_release.append(pod)
        to_adopt: list[V1Pod] = []
        if not deleting:
            to_adopt = [pod for pod in self._pods.store.by_index(ORPHAN_INDEX, meta.namespace or "")
                        if is_pod_active(pod) and selector.matches(_labels(pod))]
        if not (to_adopt or to_release):
            return claimed
        if to_adopt and not await self._can_adopt(owner):
            to_adopt = []
        owner_ref = owner_reference(owner, self.kind.resource)
        adopted = await outcomes(self._patch_owner(p, _adopt_patch(owner_ref, p)) for p in to_adopt)
        released = await outcomes(self._patch_owner(p, _release_patch(meta.uid or "", p)) for p in to_release)
        errors: list[BaseException] = []
        for pod, outcome in zip(to_adopt, adopted, strict=True):
            if outcome is None:
                claimed.append(pod)
            elif not isinstance(outcome, NotFound):
                errors.append(outcome)
        # A release that finds the Pod gone or no longer ours (Invalid) has nothing left to do.
        errors.extend(e for e in released if e is not None and not isinstance(e, NotFound | Invalid))
        if errors:
            raise errors[0]
        return claimed

    async def _can_adopt(self, owner: M) -> bool:
        """Re-read the owner from the APIServer before adopting: the cache may not show it deleted yet."""
        meta = meta_of(owner)
        try:
            fresh = await self._client.get(self.kind.resource, meta.name or "", namespace=meta.namespace)
        except NotFound:
            return False
        fresh_meta = meta_of(fresh)
        if fresh_meta.uid != meta.uid or fresh_meta.deletion_timestamp is not None:
            log.debug("not adopting Pods for %s: it is gone or being deleted", key_of(owner))
            return False
        return True

    async def _patch_owner(self, pod: V1Pod, patch: Mapping[str, Any]) -> None:
        meta = meta_of(pod)
        async with self._writes:
            await self._client.patch(PODS, meta.name or "", patch, namespace=meta.namespace,
                                     patch_type=PatchType.STRATEGIC_MERGE)

    async def _manage_replicas(self, owner: M, key: ObjectKey, pods: list[V1Pod]) -> None:
        desired = desired_replicas(owner)
        diff = len(pods) - desired
        if diff < 0:
            count = min(-diff, self._burst)
            # Expect every creation before sending any: their ADDED events may beat the responses.
            self.expectations.expect_creations(key, count)
            log.debug("too few replicas for %s: need %d, creating %d", key, desired, count)
            body = pod_from_template(_template(owner), owner, self.kind.resource)
            created, error = await slow_start_batch(count, SLOW_START_INITIAL_BATCH_SIZE,
                                                    lambda: self._create_pod(owner, body), self._is_leading)
            # Creations never attempted (a batch failed first) will never be observed.
            for _ in range(count - created):
                self.expectations.creation_observed(key)
            if error is not None:
                raise error
        elif diff > 0:
            count = min(diff, self._burst)
            log.debug("too many replicas for %s: need %d, deleting %d", key, desired, count)
            victims = pods_to_delete(pods, count, utcnow(), self._related_pods(owner))
            # Recorded by Pod key, so that the deletionTimestamp update and the DELETED event count once.
            self.expectations.expect_deletions(key, [_pod_key(p) for p in victims])
            results = await outcomes(self._delete_pod(owner, pod) for pod in victims)
            first_error: ApiError | httpx.TransportError | None = None
            for pod, outcome in zip(victims, results, strict=True):
                if outcome is None:
                    continue
                self.expectations.deletion_observed(key, _pod_key(pod))
                if not isinstance(outcome, NotFound) and first_error is None:
                    first_error = outcome
            if first_error is not None:
                raise first_error

    def _related_pods(self, owner: M) -> list[V1Pod]:
        """The active Pods of every owner with the same controller (``getIndirectlyRelatedPods``)."""
        ref = controller_of(meta_of(owner))
        siblings = self._owners.store.by_index(CONTROLLER_UID_INDEX, ref.uid) if ref is not None else [owner]
        related: list[V1Pod] = []
        for sibling in siblings:
            uid = meta_of(sibling).uid or ""
            related.extend(p for p in self._pods.store.by_index(OWNER_UID_INDEX, uid)
                           if is_pod_active(p) and (c := controller_of(p.metadata)) is not None and c.uid == uid)
        return related

    async def _create_pod(self, owner: M, body: Mapping[str, Any]) -> None:
        meta = meta_of(owner)
        try:
            async with self._writes:
                pod = await self._client.create(PODS, body, namespace=meta.namespace)
        except (ApiError, httpx.TransportError) as err:
            if isinstance(err, ApiError) and err.has_cause(NAMESPACE_TERMINATING_CAUSE):
                # Every creation in a terminating namespace fails; Kubernetes neither reports nor retries it.
                return
            self._recorder.event(owner, WARNING, "FailedCreate", f"Error creating: {err}")
            raise
        name = meta_of(pod).name
        log.info("created Pod %s/%s for %s %s", meta.namespace, name, self._kind_name, key_of(owner),
                 extra={"step": 6})
        self._recorder.event(owner, NORMAL, "SuccessfulCreate", f"Created pod: {name}")

    async def _delete_pod(self, owner: M, pod: V1Pod) -> None:
        pod_meta = meta_of(pod)
        try:
            async with self._writes:
                await self._client.delete(PODS, pod_meta.name or "", namespace=pod_meta.namespace)
        except (ApiError, httpx.TransportError) as err:
            if not isinstance(err, NotFound):
                self._recorder.event(owner, WARNING, "FailedDelete", f"Error deleting: {err}")
            raise
        log.info("deleted Pod %s/%s of %s %s (scaling down)", pod_meta.namespace, pod_meta.name,
                 self._kind_name, key_of(owner), extra={"step": 6})
        self._recorder.event(owner, NORMAL, "SuccessfulDelete", f"Deleted pod: {pod_meta.name}")

    async def _update_status(self, owner: M, status: dict[str, Any]) -> None:
        """Write the status if it changed, retrying once on a fresh read (``updateReplicaSetStatus``)."""
        meta = meta_of(owner)
        current: Any = getattr(owner, "status", None)
        if current is not None and current.observed_generation == meta.generation and \
                current_status(owner) == status:
            return
        for attempt in range(2):
            body = to_wire(owner)
            body["status"] = {**status, "observedGeneration": meta.generation}
            _drop_zero_counts(body["status"])
            try:
                await self._client.update_status(self.kind.resource, body)
                return
            except (ApiError, httpx.TransportError):
                if attempt == 1:
                    raise
            owner = await self._client.get(self.kind.resource, meta.name or "", namespace=meta.namespace)
            meta = meta_of(owner)


# --- pure parts ------------------------------------------------------------------------------


def desired_replicas(owner: BaseModel) -> int:
    spec: Any = getattr(owner, "spec", None)
    replicas = spec.replicas if spec is not None else None
    return 1 if replicas is None else int(replicas)


def min_ready_seconds(owner: BaseModel) -> int:
    spec: Any = getattr(owner, "spec", None)
    return (spec.min_ready_seconds if spec is not None else None) or 0


def _template(owner: BaseModel) -> BaseModel | None:
    spec: Any = getattr(owner, "spec", None)
    template: BaseModel | None = spec.template if spec is not None else None
    return template


@functools.lru_cache(maxsize=1024)
def _template_selector(pairs: frozenset[tuple[str, str]]) -> Selector:
    return selector_from_set(dict(pairs))


@dataclass(frozen=True, slots=True)
class _Candidate:
    """What ``ActivePodsWithRanks.Less`` compares, read once per Pod."""

    pod: V1Pod
    assigned: bool
    phase: int
    ready: bool
    cost: int
    rank: int
    ready_time: dt.datetime | None
    restarts: int
    created: dt.datetime | None
    uid: str


def pods_to_delete(pods: Sequence[V1Pod], count: int, now: dt.datetime,
                   related: Sequence[V1Pod] = ()) -> list[V1Pod]:
    """The ``count`` Pods to delete first, in Kubernetes' order (``getPodsToDelete``).

    ``related`` are the active Pods of sibling owners (the other ReplicaSets
    of the same Deployment, the owner's own included): a Pod sharing its node
    with more of them ranks to go first (``getPodsRankedByRelatedPodsOnSameNode``).
    """
    if count >= len(pods):
        return list(pods)
    on_node = Counter(p.spec.node_name for p in related if p.spec is not None and p.spec.node_name)
    candidates = [_candidate(p, on_node) for p in pods]

    def compare(a: _Candidate, b: _Candidate) -> int:
        if _less(a, b, now):
            return -1
        return 1 if _less(b, a, now) else 0

    candidates.sort(key=functools.cmp_to_key(compare))
    return [c.pod for c in candidates[:count]]


def _candidate(pod: V1Pod, on_node: Mapping[str, int]) -> _Candidate:
    meta = meta_of(pod)
    node = pod.spec.node_name if pod.spec is not None else None
    return _Candidate(
        pod=pod, assigned=bool(node),
        phase=_PHASE_ORDINAL.get((pod.status.phase if pod.status is not None else None) or "", 0),
        ready=is_pod_ready(pod), cost=_deletion_cost(meta.annotations), rank=on_node.get(node, 0) if node else 0,
        ready_time=ready_since(pod), restarts=max_container_restarts(pod), created=meta.creation_timestamp,
        uid=meta.uid or "")


def _less(a: _Candidate, b: _Candidate, now: dt.datetime) -> bool:
    """Whether ``a`` should be deleted before ``b``."""
    if a.assigned != b.assigned:
        return not a.assigned
    if a.phase != b.phase:
        return a.phase < b.phase
    if a.ready != b.ready:
        return not a.ready
    if a.cost != b.cost:
        return a.cost < b.cost
    if a.rank != b.rank:
        return a.rank > b.rank
    if a.ready and b.ready and a.ready_time != b.ready_time:
        return _newer_first(a.ready_time, b.ready_time, a.uid, b.uid, now)
    if a.restarts != b.restarts:
        return a.restarts > b.restarts
    if a.created != b.created:
        return _newer_first(a.created, b.created, a.uid, b.uid, now)
    return False


def _newer_first(t1: dt.datetime | None, t2: dt.datetime | None, uid1: str, uid2: str,
                 now: dt.datetime) -> bool:
    """Empty times first, then newer before older on a log2 scale of age, ties broken by uid."""
    if t1 is None or t2 is None:
        return t1 is None
    rank_diff = _log_rank(t1, now) - _log_rank(t2, now)
    if rank_diff == 0:
        return uid1 < uid2
    return rank_diff < 0


def _log_rank(t: dt.datetime, now: dt.datetime) -> int:
    nanoseconds = (now - t) // dt.timedelta(microseconds=1) * 1000
    return int(math.log2(nanoseconds)) if nanoseconds > 0 else -1


def _deletion_cost(annotations: Mapping[str, str] | None) -> int:
    """The ``controller.kubernetes.io/pod-deletion-cost`` annotation; 0 when absent or not an int32."""
    text = (annotations or {}).get(POD_DELETION_COST)
    if text is None:
        return 0
    try:
        cost = int(text.strip())
    except ValueError:
        return 0
    return cost if -(2**31) <= cost < 2**31 else 0


def calculate_status(owner: BaseModel, pods: Sequence[V1Pod], manage_error: BaseException | None,
                     now: dt.datetime) -> dict[str, Any]:
    """The owner's new status in wire form (without observedGeneration), as ``calculateStatus`` computes it."""
    template: Any = _template(owner)
    template_labels = (template.metadata.labels if template is not None and template.metadata else None) or {}
    template_selector = _template_selector(frozenset(template_labels.items()))
    min_ready = min_ready_seconds(owner)
    fully_labeled = ready = available = 0
    for pod in pods:
        if template_selector.matches(_labels(pod)):
            fully_labeled += 1
        if is_pod_ready(pod):
            ready += 1
            if is_pod_available(pod, min_ready, now):
                available += 1
    current: Any = getattr(owner, "status", None)
    conditions = [to_wire(c) for c in (current.conditions if current is not None else None) or ()]
    failure = next((c for c in conditions if c.get("type") == REPLICA_FAILURE), None)
    if manage_error is not None and failure is None:
        diff = len(pods) - desired_replicas(owner)
        reason = "FailedCreate" if diff < 0 else "FailedDelete" if diff > 0 else ""
        conditions.append({"type": REPLICA_FAILURE, "status": "True", "lastTransitionTime": format_time(now),
                           "reason": reason, "message": str(manage_error)})
    elif manage_error is None and failure is not None:
        conditions.remove(failure)
    status: dict[str, Any] = {"replicas": len(pods), "fullyLabeledReplicas": fully_labeled,
                              "readyReplicas": ready, "availableReplicas": available}
    if conditions:
        status["conditions"] = conditions
    return status


def current_status(owner: BaseModel) -> dict[str, Any]:
    """The owner's status as :func:`calculate_status` would write it (every count present), to compare with."""
    current: Any = getattr(owner, "status", None)
    if current is None:
        return {}
    status: dict[str, Any] = {"replicas": current.replicas or 0,
                              "fullyLabeledReplicas": current.fully_labeled_replicas or 0,
                              "readyReplicas": current.ready_replicas or 0,
                              "availableReplicas": current.available_replicas or 0}
    if current.conditions:
        status["conditions"] = [to_wire(c) for c in current.conditions]
    return status


def _drop_zero_counts(status: dict[str, Any]) -> None:
    """Go omits zero optional counts from the status it writes; so do we, so that kubectl shows the same."""
    for field in ("fullyLabeledReplicas", "readyReplicas", "availableReplicas", "observedGeneration"):
        if not status.get(field):
            status.pop(field, None)


def _adopt_patch(ref: Mapping[str, Any], pod: V1Pod) -> dict[str, Any]:
    return {"metadata": {"ownerReferences": [dict(ref)], "uid": meta_of(pod).uid}}


def _release_patch(owner_uid: str, pod: V1Pod) -> dict[str, Any]:
    return {"metadata": {"ownerReferences": [{"$patch": "delete", "uid": owner_uid}],
                         "uid": meta_of(pod).uid}}


def _namespace(pod: V1Pod) -> str:
    return meta_of(pod).namespace or ""


def _labels(pod: V1Pod) -> Mapping[str, str]:
    return meta_of(pod).labels or {}


def _pod_key(pod: V1Pod) -> str:
    meta = meta_of(pod)
    return f"{meta.namespace}/{meta.name}"


NAME: Final = "replicaset-controller"
ALIASES: Final = ("replicaset",)
EVENT_SOURCE: Final = "replicaset-controller"


@functools.lru_cache(maxsize=4096)
def _compiled_label_selector(uid: str, generation: int, text: bytes) -> Selector:
    return Selector.from_label_selector(orjson.loads(text))


def replica_set_selector(rs: V1ReplicaSet) -> Selector:
    """``spec.selector`` compiled once per generation (it is immutable in apps/v1 anyway)."""
    meta = meta_of(rs)
    selector = rs.spec.selector if rs.spec is not None else None
    if selector is None:
        return Selector.nothing()
    return _compiled_label_selector(meta.uid or "", meta.generation or 0, orjson.dumps(to_wire(selector)))


REPLICA_SET_KIND: Final = ReplicaSetKind(REPLICA_SETS, "replicaset", EVENT_SOURCE, replica_set_selector)


class ReplicaSetManager(ReplicaSetController[V1ReplicaSet]):
    """The ReplicaSet controller (``--concurrent-replicaset-syncs`` workers)."""

    def __init__(self, ctx: ControllerContext, *, burst_replicas: int = BURST_REPLICAS) -> None:
        super().__init__(ctx, REPLICA_SET_KIND, workers=ctx.options.concurrent_replicaset_syncs,
                         burst_replicas=burst_replicas)


__all__ = ["BURST_REPLICAS", "Outcome", "ReplicaSetController", "ReplicaSetKind", "calculate_status",
           "desired_replicas", "pods_to_delete"]
