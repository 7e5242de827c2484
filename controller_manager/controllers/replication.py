"""The ReplicationController controller: steps 5 and 6 of the flow, "the one in charge of scaling".

It sees each ReplicationController through its watch (step 5) and keeps the
number of its active Pods equal to ``spec.replicas``, creating the missing
ones from ``spec.template`` (step 6) or deleting the surplus, as Kubernetes'
replication manager (``pkg/controller/replicaset``, which also runs RCs) does:

- **Ownership.** Pods carry an ownerReference to their RC (``controller`` and
  ``blockOwnerDeletion`` true). An orphan whose labels match the selector is
  adopted; an owned Pod whose labels no longer match is released, and a
  replica is made to replace it. An RC being deleted adopts and releases
  nothing and creates nothing.
- **Expectations.** Creations and deletions are recorded before they are
  sent; a sync changes nothing until the informer has seen them all come back
  (or 5 minutes passed), so a slow watch never makes the controller act twice
  for the same gap. See :mod:`controller_manager.expectations`.
- **Slow start.** At most 500 creations or deletions per sync (``burstReplicas``);
  creations go out in batches of 1, 2, 4... and stop at the first batch with
  a failure, so a doomed template costs one request, not five hundred.
- **Which Pods go.** Unscheduled before scheduled, Pending before Unknown
  before Running, not ready before ready, lower ``pod-deletion-cost`` first,
  more recently ready first, more restarts first, newer first; readiness and
  creation times compare on a logarithmic scale with ties broken by uid
  (``LogarithmicScaleDown``), as ``ActivePodsWithRanks`` sorts them.
- **Status** (replicas, fullyLabeledReplicas, readyReplicas, availableReplicas,
  observedGeneration, the ``ReplicaFailure`` condition) is written through
  ``/status`` only when it changed.

Reads come from the informers' indexes (owned Pods by owner uid, orphans by
namespace), so a sync costs O(the RC's Pods), not O(all Pods).

Concurrency: ``concurrent_rc_syncs`` workers, never two on the same RC; the
informer handlers run on the event loop between awaits and only update
expectations and enqueue keys.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import functools
import logging
import math
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import httpx
from kubernetes.client import V1Pod, V1ReplicationController

from controller_manager.context import ControllerContext
from controller_manager.expectations import Expectations
from controller_manager.podutil import (
    controller_of,
    is_pod_active,
    is_pod_available,
    is_pod_ready,
    max_container_restarts,
    ready_since,
)
from machinery.api.kinds import PODS, REPLICATION_CONTROLLERS, ObjectKey, object_key
from machinery.api.labels import Selector, selector_from_set
from machinery.api.meta import format_time, utcnow
from machinery.api.names import is_dns1123_subdomain
from machinery.client.errors import ApiError, Invalid, NotFound
from machinery.client.objects import meta_of, to_wire
from machinery.client.rest import PatchType
from machinery.controller import Controller
from machinery.events import NORMAL, WARNING
from machinery.informer.shared import DeletedFinalStateUnknown
from machinery.informer.store import NAMESPACE_INDEX, OWNER_UID_INDEX, index_by_namespace, index_by_owner_uid

log = logging.getLogger(__name__)

NAME: Final = "replicationcontroller-controller"
ALIASES: Final = ("replicationcontroller",)

#: Most creations or deletions one sync sends (``BurstReplicas``).
BURST_REPLICAS: Final = 500
SLOW_START_INITIAL_BATCH_SIZE: Final = 1
#: The event source Kubernetes' replication manager reports as.
EVENT_SOURCE: Final = "replication-controller"
REPLICA_FAILURE: Final = "ReplicaFailure"
POD_DELETION_COST: Final = "controller.kubernetes.io/pod-deletion-cost"
#: The Status cause the APIServer gives for a create in a namespace that is being deleted.
NAMESPACE_TERMINATING_CAUSE: Final = "NamespaceTerminating"
#: Pods without a controller, by namespace: the candidates for adoption.
ORPHAN_INDEX: Final = "orphansByNamespace"
#: Pod writes in flight at once, over all RCs. A batch of 256 sent at once costs the client more than it
#: gains: httpx's connection pool does work per pending request on every event, and the APIServer is
#: saturated long before (client-go bounds the rate instead, with its QPS limit).
MAX_IN_FLIGHT_WRITES: Final = 32

_PHASE_ORDINAL: Final = {"Pending": 0, "Unknown": 1, "Running": 2}
_RC_KIND: Final = REPLICATION_CONTROLLERS.kind


class ReplicationManager(Controller):
    """Keeps every ReplicationController's active Pods at ``spec.replicas``."""

    def __init__(self, ctx: ControllerContext, *, burst_replicas: int = BURST_REPLICAS) -> None:
        self._rcs = ctx.informers.informer(REPLICATION_CONTROLLERS,
                                           indexers={NAMESPACE_INDEX: index_by_namespace})
        self._pods = ctx.informers.informer(PODS, indexers={OWNER_UID_INDEX: index_by_owner_uid,
                                                            ORPHAN_INDEX: index_orphans_by_namespace})
        super().__init__("replicationmanager", informers=[self._rcs, self._pods],
                         workers=ctx.options.concurrent_rc_syncs, clock=ctx.clock)
        self._client = ctx.client
        self._recorder = ctx.events.recorder(EVENT_SOURCE)
        self._is_leading = ctx.is_leading
        self._burst = burst_replicas
        self.expectations = Expectations(clock=ctx.clock)
        self._writes = asyncio.Semaphore(MAX_IN_FLIGHT_WRITES)
        self._rcs.add_handler(on_add=self._rc_added, on_update=self._rc_updated, on_delete=self._rc_deleted)
        self._pods.add_handler(on_add=self._pod_added, on_update=self._pod_updated,
                               on_delete=self._pod_deleted)

    # --- handlers: expectations and keys only ------------------------------------------------

    def _rc_added(self, rc: V1ReplicationController) -> None:
        log.info("saw ReplicationController %s (replicas %s)", key_of_rc(rc), _desired(rc), extra={"step": 5})
        self.enqueue(rc)

    def _rc_updated(self, old: V1ReplicationController, new: V1ReplicationController) -> None:
        if old.metadata is not None and new.metadata is not None and old.metadata.uid != new.metadata.uid:
            # Deleted and re-created between two watch events: the old one's expectations are void.
            self.expectations.delete(key_of_rc(old))
        if _desired(old) != _desired(new):
            log.info("saw ReplicationController %s scaled from %d to %d replicas", key_of_rc(new),
                     _desired(old), _desired(new), extra={"step": 5})
        self.enqueue(new)

    def _rc_deleted(self, obj: V1ReplicationController | DeletedFinalStateUnknown[V1ReplicationController],
                    ) -> None:
        rc = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        self.expectations.delete(key_of_rc(rc))
        self.enqueue(obj)

    def _pod_added(self, pod: V1Pod) -> None:
        if pod.metadata is not None and pod.metadata.deletion_timestamp is not None:
            # After a restart a Pod may first show up already terminating: that is no creation.
            self._pod_deleted(pod)
            return
        ref = controller_of(pod.metadata)
        if ref is not None:
            rc = self._resolve(_namespace(pod), ref.kind, ref.name, ref.uid)
            if rc is not None:
                self.expectations.creation_observed(key_of_rc(rc))
                self.enqueue(rc)
            return
        for rc in self._rcs_matching_orphan(pod):
            self.enqueue(rc)

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
            rc = self._resolve(_namespace(new), new_ref.kind, new_ref.name, new_ref.uid)
            if rc is None:
                return
            self.enqueue(rc)
            min_ready = _min_ready_seconds(rc)
            if min_ready > 0 and not is_pod_ready(old) and is_pod_ready(new):
                # Sync again once the Pod has been ready long enough to count as available; the extra
                # second absorbs the skew between our timer and the Pod's transition time.
                self.queue.add_after(key_of_rc(rc), min_ready + 1.0)
            return
        if labels_changed or ref_changed:
            for rc in self._rcs_matching_orphan(new):
                self.enqueue(rc)

    def _pod_deleted(self, obj: V1Pod | DeletedFinalStateUnknown[V1Pod]) -> None:
        pod = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        ref = controller_of(pod.metadata)
        if ref is None:
            return
        rc = self._resolve(_namespace(pod), ref.kind, ref.name, ref.uid)
        if rc is None:
            return
        key = key_of_rc(rc)
        self.expectations.deletion_observed(key, _pod_key(pod))
        self.queue.add(key)

    def _resolve(self, namespace: str, kind: str, name: str, uid: str) -> V1ReplicationController | None:
        """The RC a controller reference points at, if it is ours and still the same object."""
        if kind != _RC_KIND:
            return None
        rc = self._rcs.store.get(object_key(namespace, name))
        if rc is None or rc.metadata is None or rc.metadata.uid != uid:
            return None
        return rc

    def _rcs_matching_orphan(self, pod: V1Pod) -> list[V1ReplicationController]:
        labels = (pod.metadata.labels if pod.metadata is not None else None) or {}
        if not labels:
            return []
        matching = []
        for rc in self._rcs.store.by_index(NAMESPACE_INDEX, _namespace(pod)):
            selector = rc_selector(rc)
            if not selector.empty() and selector.matches(labels):
                matching.append(rc)
        return matching

    # --- sync ----------------------------------------------------------------------------

    async def sync(self, key: ObjectKey) -> None:
        rc = self._rcs.store.get(key)
        if rc is None:
            self.expectations.delete(key)
            return
        if not self._is_leading():
            return
        needs_sync = self.expectations.satisfied(key)
        pods = await self._claim_pods(rc, rc_selector(rc))
        manage_error: ApiError | httpx.TransportError | None = None
        if needs_sync and meta_of(rc).deletion_timestamp is None:
            try:
                await self._manage_replicas(rc, key, pods)
            except (ApiError, httpx.TransportError) as err:
                manage_error = err
        status = calculate_status(rc, pods, manage_error, utcnow())
        await self._update_status(rc, status)
        min_ready = _min_ready_seconds(rc)
        if manage_error is None and min_ready > 0 and status["readyReplicas"] == _desired(rc) \
                and status["availableReplicas"] != _desired(rc):
            # Pods that are ready but not yet available become available on their own; look again then.
            self.queue.add_after(key, float(min_ready))
        if manage_error is not None:
            raise manage_error

    async def _claim_pods(self, rc: V1ReplicationController, selector: Selector) -> list[V1Pod]:
        """The RC's active Pods, after adopting matching orphans and releasing non-matching ones."""
        meta = meta_of(rc)
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
        if to_adopt and not await self._can_adopt(rc):
            to_adopt = []
        adopted = await _gather(to_adopt, lambda pod: self._patch_owner(pod, _adopt_patch(rc, pod)))
        released = await _gather(to_release, lambda pod: self._patch_owner(pod, _release_patch(rc, pod)))
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

    async def _can_adopt(self, rc: V1ReplicationController) -> bool:
        """Re-read the RC from the APIServer before adopting: the cache may not show it deleted yet."""
        meta = meta_of(rc)
        try:
            fresh = await self._client.get(REPLICATION_CONTROLLERS, meta.name or "", namespace=meta.namespace)
        except NotFound:
            return False
        fresh_meta = meta_of(fresh)
        if fresh_meta.uid != meta.uid or fresh_meta.deletion_timestamp is not None:
            log.debug("not adopting Pods for %s: it is gone or being deleted", key_of_rc(rc))
            return False
        return True

    async def _patch_owner(self, pod: V1Pod, patch: Mapping[str, Any]) -> None:
        meta = meta_of(pod)
        async with self._writes:
            await self._client.patch(PODS, meta.name or "", patch, namespace=meta.namespace,
                                     patch_type=PatchType.STRATEGIC_MERGE)

    async def _manage_replicas(self, rc: V1ReplicationController, key: ObjectKey, pods: list[V1Pod]) -> None:
        diff = len(pods) - _desired(rc)
        if diff < 0:
            count = min(-diff, self._burst)
            # Expect every creation before sending any: their ADDED events may beat the responses.
            self.expectations.expect_creations(key, count)
            log.debug("too few replicas for %s: need %d, creating %d", key, _desired(rc), count)
            body = pod_from_template(rc)
            created, error = await slow_start_batch(count, SLOW_START_INITIAL_BATCH_SIZE,
                                                    lambda: self._create_pod(rc, body), self._is_leading)
            # Creations never attempted (a batch failed first) will never be observed.
            for _ in range(count - created):
                self.expectations.creation_observed(key)
            if error is not None:
                raise error
        elif diff > 0:
            count = min(diff, self._burst)
            log.debug("too many replicas for %s: need %d, deleting %d", key, _desired(rc), count)
            victims = pods_to_delete(pods, count, utcnow())
            # Recorded by Pod key, so that the deletionTimestamp update and the DELETED event count once.
            self.expectations.expect_deletions(key, [_pod_key(p) for p in victims])
            outcomes = await _gather(victims, lambda pod: self._delete_pod(rc, pod))
            first_error: ApiError | httpx.TransportError | None = None
            for pod, outcome in zip(victims, outcomes, strict=True):
                if outcome is None:
                    continue
                self.expectations.deletion_observed(key, _pod_key(pod))
                if not isinstance(outcome, NotFound) and first_error is None:
                    first_error = outcome
            if first_error is not None:
                raise first_error

    async def _create_pod(self, rc: V1ReplicationController, body: Mapping[str, Any]) -> None:
        meta = meta_of(rc)
        try:
            async with self._writes:
                pod = await self._client.create(PODS, body, namespace=meta.namespace)
        except (ApiError, httpx.TransportError) as err:
            if isinstance(err, ApiError) and err.has_cause(NAMESPACE_TERMINATING_CAUSE):
                # Every creation in a terminating namespace fails; Kubernetes neither reports nor retries it.
                return
            self._recorder.event(rc, WARNING, "FailedCreate", f"Error creating: {err}")
            raise
        name = meta_of(pod).name
        log.info("created Pod %s/%s for ReplicationController %s", meta.namespace, name, key_of_rc(rc),
                 extra={"step": 6})
        self._recorder.event(rc, NORMAL, "SuccessfulCreate", f"Created pod: {name}")

    async def _delete_pod(self, rc: V1ReplicationController, pod: V1Pod) -> None:
        pod_meta = meta_of(pod)
        try:
            async with self._writes:
                await self._client.delete(PODS, pod_meta.name or "", namespace=pod_meta.namespace)
        except (ApiError, httpx.TransportError) as err:
            if not isinstance(err, NotFound):
                self._recorder.event(rc, WARNING, "FailedDelete", f"Error deleting: {err}")
            raise
        log.info("deleted Pod %s/%s of ReplicationController %s (scaling down)", pod_meta.namespace,
                 pod_meta.name, key_of_rc(rc), extra={"step": 6})
        self._recorder.event(rc, NORMAL, "SuccessfulDelete", f"Deleted pod: {pod_meta.name}")

    async def _update_status(self, rc: V1ReplicationController, status: dict[str, Any]) -> None:
        """Write the status if it changed, retrying once on a fresh read (``updateReplicaSetStatus``)."""
        meta = meta_of(rc)
        if rc.status is not None and rc.status.observed_generation == meta.generation and \
                _current_status(rc) == status:
            return
        for attempt in range(2):
            body = to_wire(rc)
            body["status"] = {**status, "observedGeneration": meta.generation}
            _drop_zero_counts(body["status"])
            try:
                await self._client.update_status(REPLICATION_CONTROLLERS, body)
                return
            except (ApiError, httpx.TransportError):
                if attempt == 1:
                    raise
            rc = await self._client.get(REPLICATION_CONTROLLERS, meta.name or "", namespace=meta.namespace)
            meta = meta_of(rc)


# --- pure parts ------------------------------------------------------------------------------


def index_orphans_by_namespace(pod: V1Pod) -> Sequence[str]:
    """Pods without a controller, under their namespace (the adoption candidates of an RC sync)."""
    meta = pod.metadata
    if meta is None or controller_of(meta) is not None:
        return ()
    return (meta.namespace,) if meta.namespace else ()


def key_of_rc(rc: V1ReplicationController) -> ObjectKey:
    meta = meta_of(rc)
    return object_key(meta.namespace, meta.name or "")


def rc_selector(rc: V1ReplicationController) -> Selector:
    """The RC's ``spec.selector`` as a compiled selector (an empty one matches everything, as Kubernetes')."""
    selector = rc.spec.selector if rc.spec is not None else None
    return _compiled_selector(frozenset((selector or {}).items()))


@functools.lru_cache(maxsize=1024)
def _compiled_selector(pairs: frozenset[tuple[str, str]]) -> Selector:
    return selector_from_set(dict(pairs))


def pod_prefix(controller_name: str) -> str:
    """``getPodsPrefix``: ``<name>-``, or the bare name when the dash would make an invalid name."""
    prefix = f"{controller_name}-"
    # A generateName prefix may end in a dash; validate it as Kubernetes does, with the dash masked.
    if is_dns1123_subdomain(prefix[:-1] + "a"):
        return controller_name
    return prefix


def pod_from_template(rc: V1ReplicationController) -> dict[str, Any]:
    """``GetPodFromTemplate``: the Pod to create, in wire form, owned by the RC."""
    meta = meta_of(rc)
    spec = rc.spec
    template = spec.template if spec is not None else None
    template_meta = template.metadata if template is not None else None
    pod_meta: dict[str, Any] = {
        "generateName": pod_prefix(meta.name or ""),
        "namespace": meta.namespace,
        "ownerReferences": [{"apiVersion": REPLICATION_CONTROLLERS.api_version, "kind": _RC_KIND,
                             "name": meta.name, "uid": meta.uid, "controller": True,
                             "blockOwnerDeletion": True}],
    }
    if template_meta is not None:
        for field, value in (("labels", template_meta.labels), ("annotations", template_meta.annotations),
                             ("finalizers", template_meta.finalizers)):
            if value:
                pod_meta[field] = value
    pod_spec = template.spec if template is not None else None
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta,
            "spec": to_wire(pod_spec) if pod_spec is not None else {}}


async def slow_start_batch(count: int, initial_batch_size: int, fn: Callable[[], Awaitable[None]],
                           may_continue: Callable[[], bool] = lambda: True,
                           ) -> tuple[int, ApiError | httpx.TransportError | None]:
    """Call ``fn`` ``count`` times in batches of 1, 2, 4..., stopping after the first batch with a failure.

    Returns how many calls succeeded and the first error. ``may_continue`` is
    asked before each batch (a controller that stopped leading sends no more).
    """
    remaining, successes = count, 0
    batch = min(remaining, initial_batch_size)
    while batch > 0 and may_continue():
        errors = [e for e in await _outcomes(fn() for _ in range(batch)) if e is not None]
        successes += batch - len(errors)
        if errors:
            return successes, errors[0]
        remaining -= batch
        batch = min(2 * batch, remaining)
    return successes, None


@dataclass(frozen=True, slots=True)
class _Candidate:
    """What ``ActivePodsWithRanks.Less`` compares, read once per Pod."""

    pod: V1Pod
    assigned: bool
    phase: int
    ready: bool
    cost: int
    ready_time: dt.datetime | None
    restarts: int
    created: dt.datetime | None
    uid: str


def pods_to_delete(pods: Sequence[V1Pod], count: int, now: dt.datetime) -> list[V1Pod]:
    """The ``count`` Pods to delete first, in Kubernetes' order (``getPodsToDelete``).

    The rank of "Pods doubled up on one node" counts the Pods of other
    ReplicaSets with the same owner (a Deployment's); an RC has no such
    siblings, so every rank is equal and that rule never decides.
    """
    if count >= len(pods):
        return list(pods)
    candidates = [_candidate(p) for p in pods]

    def compare(a: _Candidate, b: _Candidate) -> int:
        if _less(a, b, now):
            return -1
        return 1 if _less(b, a, now) else 0

    candidates.sort(key=functools.cmp_to_key(compare))
    return [c.pod for c in candidates[:count]]


def _candidate(pod: V1Pod) -> _Candidate:
    meta = meta_of(pod)
    return _Candidate(
        pod=pod, assigned=bool(pod.spec is not None and pod.spec.node_name),
        phase=_PHASE_ORDINAL.get((pod.status.phase if pod.status is not None else None) or "", 0),
        ready=is_pod_ready(pod), cost=_deletion_cost(meta.annotations), ready_time=ready_since(pod),
        restarts=max_container_restarts(pod), created=meta.creation_timestamp, uid=meta.uid or "")


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


def calculate_status(rc: V1ReplicationController, pods: Sequence[V1Pod],
                     manage_error: BaseException | None, now: dt.datetime) -> dict[str, Any]:
    """The RC's new status in wire form (without observedGeneration), as ``calculateStatus`` computes it."""
    template = rc.spec.template if rc.spec is not None else None
    template_labels = (template.metadata.labels if template is not None and template.metadata else None) or {}
    template_selector = _compiled_selector(frozenset(template_labels.items()))
    min_ready = _min_ready_seconds(rc)
    fully_labeled = ready = available = 0
    for pod in pods:
        if template_selector.matches(_labels(pod)):
            fully_labeled += 1
        if is_pod_ready(pod):
            ready += 1
            if is_pod_available(pod, min_ready, now):
                available += 1
    conditions = [to_wire(c) for c in (rc.status.conditions if rc.status is not None else None) or ()]
    failure = next((c for c in conditions if c.get("type") == REPLICA_FAILURE), None)
    if manage_error is not None and failure is None:
        diff = len(pods) - _desired(rc)
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


def _current_status(rc: V1ReplicationController) -> dict[str, Any]:
    """The RC's status as :func:`calculate_status` would write it (every count present), to compare with."""
    current = rc.status
    if current is None:
        return {}
    status: dict[str, Any] = {"replicas": current.replicas,
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


def _adopt_patch(rc: V1ReplicationController, pod: V1Pod) -> dict[str, Any]:
    meta = meta_of(rc)
    return {"metadata": {
        "ownerReferences": [{"apiVersion": REPLICATION_CONTROLLERS.api_version, "kind": _RC_KIND,
                             "name": meta.name, "uid": meta.uid, "controller": True,
                             "blockOwnerDeletion": True}],
        "uid": meta_of(pod).uid}}


def _release_patch(rc: V1ReplicationController, pod: V1Pod) -> dict[str, Any]:
    return {"metadata": {"ownerReferences": [{"$patch": "delete", "uid": meta_of(rc).uid}],
                         "uid": meta_of(pod).uid}}


async def _gather(pods: Sequence[V1Pod], fn: Callable[[V1Pod], Awaitable[None]],
                  ) -> list[ApiError | httpx.TransportError | None]:
    """Run ``fn`` on every Pod at once; each Pod's API error (or None), in order."""
    return await _outcomes(fn(p) for p in pods)


async def _outcomes(calls: Iterable[Awaitable[None]]) -> list[ApiError | httpx.TransportError | None]:
    """Await the calls concurrently; each one's API or transport error, or None. Bugs propagate."""
    outcomes: list[ApiError | httpx.TransportError | None] = []
    for result in await asyncio.gather(*calls, return_exceptions=True):
        if isinstance(result, ApiError | httpx.TransportError) or result is None:
            outcomes.append(result)
        else:
            raise result
    return outcomes


def _namespace(pod: V1Pod) -> str:
    return meta_of(pod).namespace or ""


def _labels(pod: V1Pod) -> Mapping[str, str]:
    return meta_of(pod).labels or {}


def _pod_key(pod: V1Pod) -> str:
    meta = meta_of(pod)
    return f"{meta.namespace}/{meta.name}"


def _desired(rc: V1ReplicationController) -> int:
    replicas = rc.spec.replicas if rc.spec is not None else None
    return 1 if replicas is None else replicas


def _min_ready_seconds(rc: V1ReplicationController) -> int:
    return (rc.spec.min_ready_seconds if rc.spec is not None else None) or 0
