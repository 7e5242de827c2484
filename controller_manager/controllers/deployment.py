"""The Deployment controller: ReplicaSets per Pod template, rolled from old to new.

Kubernetes' ``pkg/controller/deployment``, with its rules (the arithmetic is
in :mod:`controller_manager.deploymentutil`):

- **ReplicaSets.** Each Pod template a Deployment has had gets a ReplicaSet
  ``<deployment>-<pod-template-hash>``, labelled and selected by
  ``pod-template-hash``; the one whose template is the Deployment's is *new*,
  the others *old*. Orphan ReplicaSets the selector matches are adopted,
  owned ones it no longer matches are released. A name taken by a
  ReplicaSet with another template bumps ``status.collisionCount``.
- **RollingUpdate.** The new ReplicaSet grows while the total stays within
  ``replicas + maxSurge``; old ones shrink (unhealthy replicas first) while at
  least ``replicas - maxUnavailable`` stay available. **Recreate** scales the
  old ones to 0, waits for their Pods to be gone, then scales up the new one.
- **Scaling** a Deployment in the middle of a rollout spreads the change over
  its active ReplicaSets in proportion (``deployment.kubernetes.io/max-replicas``).
- **Revisions.** The new ReplicaSet carries revision max(old)+1; rolling back
  (``kubectl rollout undo`` puts an old template back) bumps that old
  ReplicaSet's revision, and the Deployment carries its new ReplicaSet's.
  Old ReplicaSets scaled to 0 beyond ``revisionHistoryLimit`` are deleted.
- **Conditions.** Available ("Deployment has minimum availability.") and
  Progressing: NewReplicaSetCreated, FoundNewReplicaSet, ReplicaSetUpdated,
  NewReplicaSetAvailable, ProgressDeadlineExceeded after
  ``progressDeadlineSeconds`` without progress, DeploymentPaused and
  DeploymentResumed. A ``paused`` Deployment is scaled but not rolled.

Events (``ScalingReplicaSet``: "Scaled up replica set web-7c5ddbdf54 from 0 to
3") are reported as ``deployment-controller``.

Concurrency: ``concurrent_deployment_syncs`` workers, never two on one
Deployment. Handlers only enqueue. Every write is to a ReplicaSet or the
Deployment's status; a conflict fails the sync, which is retried on fresh
caches, so no write is lost or doubled.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Final

from kubernetes.client import V1Deployment, V1Pod, V1ReplicaSet

from controller_manager import deploymentutil as du
from controller_manager.context import ControllerContext
from controller_manager.controllerref import claim
from controller_manager.controllers.replicaset import CONTROLLER_UID_INDEX, index_by_controller_uid
from controller_manager.podcontrol import owner_reference
from controller_manager.podutil import controller_of
from machinery.api.kinds import DEPLOYMENTS, PODS, REPLICA_SETS, ObjectKey, object_key
from machinery.api.labels import Selector
from machinery.api.meta import parse_time, utcnow
from machinery.client.errors import AlreadyExists, NotFound
from machinery.client.objects import key_of, meta_of, to_wire
from machinery.controller import Controller
from machinery.events import NORMAL, WARNING
from machinery.informer.shared import DeletedFinalStateUnknown
from machinery.informer.store import NAMESPACE_INDEX, OWNER_UID_INDEX, index_by_namespace, index_by_owner_uid

log = logging.getLogger(__name__)

NAME: Final = "deployment-controller"
ALIASES: Final = ("deployment",)
EVENT_SOURCE: Final = "deployment-controller"


class DeploymentController(Controller):
    """Rolls every Deployment's ReplicaSets toward its template."""

    def __init__(self, ctx: ControllerContext) -> None:
        self._deployments = ctx.informers.informer(DEPLOYMENTS, indexers={NAMESPACE_INDEX: index_by_namespace})
        self._rss = ctx.informers.informer(REPLICA_SETS, indexers={
            NAMESPACE_INDEX: index_by_namespace, CONTROLLER_UID_INDEX: index_by_controller_uid})
        self._pods = ctx.informers.informer(PODS, indexers={OWNER_UID_INDEX: index_by_owner_uid})
        super().__init__("deployment", informers=[self._deployments, self._rss, self._pods],
                         workers=ctx.options.concurrent_deployment_syncs, clock=ctx.clock)
        self._client = ctx.client
        self._clock = ctx.clock
        self._recorder = ctx.events.recorder(EVENT_SOURCE)
        self._is_leading = ctx.is_leading
        self._deployments.add_handler(on_add=self.enqueue, on_update=lambda _o, n: self.enqueue(n),
                                      on_delete=self.enqueue)
        self._rss.add_handler(on_add=self._rs_added, on_update=self._rs_updated, on_delete=self._rs_deleted)
        self._pods.add_handler(on_delete=self._pod_deleted)

    # --- handlers ------------------------------------------------------------------------------

    def _rs_added(self, rs: V1ReplicaSet) -> None:
        ref = controller_of(meta_of(rs))
        if ref is not None:
            self._enqueue_ref(meta_of(rs).namespace or "", ref.kind, ref.name, ref.uid)
            return
        for d in self._deployments_matching(rs):
            self.enqueue(d)

    def _rs_updated(self, old: V1ReplicaSet, new: V1ReplicaSet) -> None:
        if meta_of(old).resource_version == meta_of(new).resource_version:
            return
        old_ref, new_ref = controller_of(meta_of(old)), controller_of(meta_of(new))
        namespace = meta_of(new).namespace or ""
        if old_ref is not None and old_ref != new_ref:
            self._enqueue_ref(namespace, old_ref.kind, old_ref.name, old_ref.uid)
        if new_ref is not None:
            self._enqueue_ref(namespace, new_ref.kind, new_ref.name, new_ref.uid)
        elif (meta_of(old).labels or {}) != (meta_of(new).labels or {}) or old_ref is not None:
            for d in self._deployments_matching(new):
                self.enqueue(d)

    def _rs_deleted(self, obj: V1ReplicaSet | DeletedFinalStateUnknown[V1ReplicaSet]) -> None:
        rs = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        ref = controller_of(meta_of(rs))
        if ref is not None:
            self._enqueue_ref(meta_of(rs).namespace or "", ref.kind, ref.name, ref.uid)

    def _pod_deleted(self, obj: V1Pod | DeletedFinalStateUnknown[V1Pod]) -> None:
        """A Recreate rollout waits for the old Pods to be gone: look again when one goes."""
        pod = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        ref = controller_of(meta_of(pod))
        if ref is None or ref.kind != REPLICA_SETS.kind:
            return
        rs = self._rss.store.get(object_key(meta_of(pod).namespace, ref.name))
        if rs is None or meta_of(rs).uid != ref.uid:
            return
        rs_ref = controller_of(meta_of(rs))
        if rs_ref is None:
            return
        d = self._resolve(meta_of(rs).namespace or "", rs_ref.kind, rs_ref.name, rs_ref.uid)
        if d is not None and du.strategy_type(d) == du.RECREATE:
            self.enqueue(d)

    def _enqueue_ref(self, namespace: str, kind: str, name: str, uid: str) -> None:
        d = self._resolve(namespace, kind, name, uid)
        if d is not None:
            self.enqueue(d)

    def _resolve(self, namespace: str, kind: str, name: str, uid: str) -> V1Deployment | None:
        if kind != DEPLOYMENTS.kind:
            return None
        d = self._deployments.store.get(object_key(namespace, name))
        if d is None or meta_of(d).uid != uid:
            return None
        return d

    def _deployments_matching(self, rs: V1ReplicaSet) -> list[V1Deployment]:
        labels = meta_of(rs).labels or {}
        if not labels:
            return []
        return [d for d in self._deployments.store.by_index(NAMESPACE_INDEX, meta_of(rs).namespace or "")
                if not (s := selector_of(d)).empty() and s.matches(labels)]

    # --- sync ----------------------------------------------------------------------------------

    async def sync(self, key: ObjectKey) -> None:
        d = self._deployments.store.get(key)
        if d is None or not self._is_leading():
            return
        selector = selector_of(d)
        if selector.empty():
            self._recorder.event(d, WARNING, "SelectingAll",
                                 "This deployment is selecting all pods. A non-empty selector is required.")
            if d.status is None or d.status.observed_generation != meta_of(d).generation:
                await self._write_status(d, {**du.current_status(d), "observedGeneration": meta_of(d).generation})
            return
        namespace = meta_of(d).namespace
        candidates = self._rss.store.by_index(NAMESPACE_INDEX, namespace or "")
        rss = await claim(self._client, d, DEPLOYMENTS, REPLICA_SETS, selector, candidates)
        if meta_of(d).deletion_timestamp is not None:
            new, old = self._split(d, rss)
            await self._sync_status(d, [*old, *([new] if new else [])], new)
            return
        d = await self._check_paused_conditions(d)
        if du.paused(d):
            await self._sync_scaling(d, rss)
            return
        if self._is_scaling_event(d, rss):
            await self._sync_scaling(d, rss)
            return
        if du.strategy_type(d) == du.RECREATE:
            await self._rollout_recreate(d, rss)
        else:
            await self._rollout_rolling(d, rss)

    def _split(self, d: V1Deployment, rss: Sequence[V1ReplicaSet]) -> tuple[V1ReplicaSet | None,
                                                                            list[V1ReplicaSet]]:
        new = du.find_new(d, rss)
        return new, du.find_old(d, rss, new)

    async def _check_paused_conditions(self, d: V1Deployment) -> V1Deployment:
        """``checkPausedConditions``: Progressing Unknown while paused, DeploymentResumed after."""
        if du.progress_deadline(d) is None:
            return d
        conditions = du.conditions_of(d)
        current = du.get_condition(conditions, du.PROGRESSING)
        if current is not None and current.get("reason") == du.TIMED_OUT_REASON:
            return d
        paused_now = current is not None and current.get("reason") == du.PAUSED_REASON
        if du.paused(d) and not paused_now:
            du.set_condition(conditions, du.new_condition(du.PROGRESSING, "Unknown", du.PAUSED_REASON,
                                                          "Deployment is paused", utcnow()))
        elif not du.paused(d) and paused_now:
            du.set_condition(conditions, du.new_condition(du.PROGRESSING, "Unknown", du.RESUMED_REASON,
                                                          "Deployment is resumed", utcnow()))
        else:
            return d
        return await self._write_status(d, {**du.current_status(d), "conditions": conditions})

    def _is_scaling_event(self, d: V1Deployment, rss: Sequence[V1ReplicaSet]) -> bool:
        """``isScalingEvent``: some active ReplicaSet was sized for another ``replicas``."""
        for rs in du.active(rss):
            desired = (meta_of(rs).annotations or {}).get(du.DESIRED_REPLICAS)
            if desired is not None and desired != str(du.replicas(d)):
                return True
        return False

    # --- getting the new ReplicaSet ------------------------------------------------------------

    async def _new_and_old(self, d: V1Deployment, rss: Sequence[V1ReplicaSet], *, create: bool,
                           ) -> tuple[V1Deployment, V1ReplicaSet | None, list[V1ReplicaSet]]:
        """``getAllReplicaSetsAndSyncRevision``: the new ReplicaSet (made if asked) and the old ones."""
        existing, old = self._split(d, rss)
        new_revision = du.max_revision(old) + 1
        if existing is not None:
            d, found = await self._sync_existing_new(d, existing, new_revision)
            return d, found, old
        if not create:
            return d, None, old
        d, new = await self._create_new(d, old, new_revision)
        return d, new, old

    async def _sync_existing_new(self, d: V1Deployment, rs: V1ReplicaSet, new_revision: int,
                                 ) -> tuple[V1Deployment, V1ReplicaSet]:
        annotations = du.new_rs_annotations(d, meta_of(rs).annotations or {}, new_revision, exists=True)
        min_ready_changed = du.min_ready_seconds(rs) != du.min_ready_seconds(d)
        if annotations is not None or min_ready_changed:
            body = to_wire(rs)
            if annotations is not None:
                body["metadata"]["annotations"] = annotations
            body["spec"]["minReadySeconds"] = du.min_ready_seconds(d)
            rs = await self._client.update(REPLICA_SETS, body)
        conditions = du.conditions_of(d)
        rs_revision = (meta_of(rs).annotations or {}).get(du.REVISION)
        needs_update = _set_revision(d, rs_revision)
        if du.progress_deadline(d) is not None and du.get_condition(conditions, du.PROGRESSING) is None:
            du.set_condition(conditions, du.new_condition(du.PROGRESSING, "True", du.FOUND_NEW_RS_REASON,
                                                          f'Found new replica set "{meta_of(rs).name}"', utcnow()))
            needs_update = True
        if needs_update:
            d = await self._write_status(d, {**du.current_status(d), "conditions": conditions},
                                         revision=rs_revision)
        return d, rs

    async def _create_new(self, d: V1Deployment, old: Sequence[V1ReplicaSet], new_revision: int,
                          ) -> tuple[V1Deployment, V1ReplicaSet | None]:
        meta = meta_of(d)
        collisions = d.status.collision_count if d.status is not None else None
        template = to_wire(d.spec.template) if d.spec is not None and d.spec.template is not None else {}
        pod_hash = du.compute_hash(d.spec.template if d.spec is not None else None, collisions)
        template.setdefault("metadata", {})
        template["metadata"]["labels"] = {**(template["metadata"].get("labels") or {}),
                                          du.POD_TEMPLATE_HASH: pod_hash}
        selector = to_wire(d.spec.selector) if d.spec is not None and d.spec.selector is not None else {}
        selector["matchLabels"] = {**(selector.get("matchLabels") or {}), du.POD_TEMPLATE_HASH: pod_hash}
        name = f"{meta.name}-{pod_hash}"
        replicas = du.new_rs_replicas(d, old, None)
        annotations = du.new_rs_annotations(d, {}, new_revision, exists=False) or {}
        body: dict[str, Any] = {
            "apiVersion": REPLICA_SETS.api_version, "kind": REPLICA_SETS.kind,
            "metadata": {"name": name, "namespace": meta.namespace, "labels": template["metadata"]["labels"],
                         "annotations": annotations, "ownerReferences": [owner_reference(d, DEPLOYMENTS)]},
            "spec": {"replicas": 0, "minReadySeconds": du.min_ready_seconds(d), "selector": selector,
                     "template": template}}
        # Created at 0, then scaled: so that the one Event and the annotations tell the same story.
        body["spec"]["replicas"] = replicas
        try:
            created = await self._client.create(REPLICA_SETS, body)
        except AlreadyExists:
            existing = await self._client.get(REPLICA_SETS, name, namespace=meta.namespace)
            ref = controller_of(meta_of(existing))
            if ref is not None and ref.uid == meta.uid and du.equal_ignore_hash(
                    existing.spec.template if existing.spec is not None else None, d.spec.template
                    if d.spec is not None else None):
                return d, existing
            # A hash collision: the next sync computes another name.
            status = {**du.current_status(d), "collisionCount": (collisions or 0) + 1}
            log.info("deployment %s: hash collision on %s, collisionCount %d", key_of(d), name,
                     status["collisionCount"])
            await self._write_status(d, status)
            raise
        except Exception as err:
            conditions = du.conditions_of(d)
            if du.progress_deadline(d) is not None:
                du.set_condition(conditions, du.new_condition(
                    du.PROGRESSING, "False", du.FAILED_RS_CREATE_REASON, str(err), utcnow()))
                await self._write_status(d, {**du.current_status(d), "conditions": conditions})
            self._recorder.event(d, WARNING, du.FAILED_RS_CREATE_REASON, f"Failed to create new replica set "
                                 f'"{name}": {err}')
            raise
        if replicas > 0:
            self._recorder.event(d, NORMAL, "ScalingReplicaSet",
                                 f"Scaled up replica set {name} from 0 to {replicas}")
        log.info("deployment %s: created ReplicaSet %s with %d replicas", key_of(d), name, replicas)
        conditions = du.conditions_of(d)
        if du.progress_deadline(d) is not None:
            du.set_condition(conditions, du.new_condition(du.PROGRESSING, "True", du.NEW_RS_REASON,
                                                          f'Created new replica set "{name}"', utcnow()))
        d = await self._write_status(d, {**du.current_status(d), "conditions": conditions},
                                     revision=str(new_revision))
        return d, created

    # --- rolling, recreating, scaling ---------------------------------------------------------

    async def _rollout_rolling(self, d: V1Deployment, rss: Sequence[V1ReplicaSet]) -> None:
        d, new, old = await self._new_and_old(d, rss, create=True)
        all_rss = [*old, *([new] if new is not None else [])]
        if new is not None and await self._reconcile_new(d, all_rss, new):
            await self._sync_rollout_status(d, all_rss, new)
            return
        if await self._reconcile_old(d, all_rss, du.active(old), new):
            await self._sync_rollout_status(d, all_rss, new)
            return
        if du.complete(d, du.current_status(d)):
            await self._cleanup(d, old)
        await self._sync_rollout_status(d, all_rss, new)

    async def _reconcile_new(self, d: V1Deployment, all_rss: Sequence[V1ReplicaSet], new: V1ReplicaSet) -> bool:
        want = du.replicas(d)
        if du.rs_replicas(new) == want:
            return False
        if du.rs_replicas(new) > want:
            return await self._scale_and_record(new, want, d)
        return await self._scale_and_record(new, du.new_rs_replicas(d, all_rss, new), d)

    async def _reconcile_old(self, d: V1Deployment, all_rss: list[V1ReplicaSet], old: list[V1ReplicaSet],
                             new: V1ReplicaSet | None) -> bool:
        if du.spec_total(old) == 0:
            return False
        min_available = du.replicas(d) - du.max_unavailable(d)
        new_unavailable = (du.rs_replicas(new) - du.rs_status(new, "available_replicas")) if new else 0
        max_scaled_down = du.spec_total(all_rss) - min_available - new_unavailable
        if max_scaled_down <= 0:
            return False
        old, cleaned = await self._cleanup_unhealthy(d, old, max_scaled_down)
        all_rss = [*old, *([new] if new is not None else [])]
        scaled = await self._scale_down_old_for_rolling(d, all_rss, old)
        return cleaned + scaled > 0

    async def _cleanup_unhealthy(self, d: V1Deployment, old: list[V1ReplicaSet], max_cleanup: int,
                                 ) -> tuple[list[V1ReplicaSet], int]:
        """``cleanupUnhealthyReplicas``: scale away old replicas that are not available anyway."""
        total = 0
        result: list[V1ReplicaSet] = []
        for rs in du.by_creation(old):
            if total >= max_cleanup or du.rs_replicas(rs) == 0 or \
                    du.rs_replicas(rs) == du.rs_status(rs, "available_replicas"):
                result.append(rs)
                continue
            count = min(max_cleanup - total, du.rs_replicas(rs) - du.rs_status(rs, "available_replicas"))
            new_size = du.rs_replicas(rs) - count
            if new_size > du.rs_replicas(rs):
                raise RuntimeError(f"when cleaning up unhealthy replicas, got invalid request to scale down "
                                   f"{key_of(rs)} {du.rs_replicas(rs)} -> {new_size}")
            _, rs = await self._scale(rs, new_size, d, "down")
            total += count
            result.append(rs)
        return result, total

    async def _scale_down_old_for_rolling(self, d: V1Deployment, all_rss: list[V1ReplicaSet],
                                          old: list[V1ReplicaSet]) -> int:
        min_available = du.replicas(d) - du.max_unavailable(d)
        available = du.status_total(all_rss, "available_replicas")
        if available <= min_available:
            return 0
        to_scale_down = available - min_available
        total = 0
        for rs in du.by_creation(old):
            if total >= to_scale_down:
                break
            if du.rs_replicas(rs) == 0:
                continue
            count = min(du.rs_replicas(rs), to_scale_down - total)
            await self._scale(rs, du.rs_replicas(rs) - count, d, "down")
            total += count
        return total

    async def _rollout_recreate(self, d: V1Deployment, rss: Sequence[V1ReplicaSet]) -> None:
        d, new, old = await self._new_and_old(d, rss, create=False)
        all_rss = [*old, *([new] if new is not None else [])]
        scaled = False
        for rs in du.active(old):
            changed, _ = await self._scale(rs, 0, d, "down")
            scaled = scaled or changed
        if scaled:
            await self._sync_rollout_status(d, all_rss, new)
            return
        if self._old_pods_running(new, old):
            await self._sync_rollout_status(d, all_rss, new)
            return
        if new is None:
            d, new, old = await self._new_and_old(d, rss, create=True)
            all_rss = [*old, *([new] if new is not None else [])]
        if new is not None:
            await self._scale_and_record(new, du.replicas(d), d)
        if du.complete(d, du.current_status(d)):
            await self._cleanup(d, old)
        await self._sync_rollout_status(d, all_rss, new)

    def _old_pods_running(self, new: V1ReplicaSet | None, old: Sequence[V1ReplicaSet]) -> bool:
        """``oldPodsRunning``: some old ReplicaSet still reports Pods, or one of its Pods is not finished."""
        if du.status_total(old) > 0:
            return True
        for rs in old:
            uid = meta_of(rs).uid or ""
            for pod in self._pods.store.by_index(OWNER_UID_INDEX, uid):
                phase = pod.status.phase if pod.status is not None else None
                if phase not in ("Failed", "Succeeded"):
                    return True
        return False

    async def _sync_scaling(self, d: V1Deployment, rss: Sequence[V1ReplicaSet]) -> None:
        """``sync``: scale (paused, or ``replicas`` changed), clean up if paused, and write the status."""
        d, new, old = await self._new_and_old(d, rss, create=False)
        await self._scale_proportionally(d, new, old)
        rss = [r for r in self._rss.store.by_index(CONTROLLER_UID_INDEX, meta_of(d).uid or "")]
        new, old = self._split(d, rss)
        if du.paused(d):
            await self._cleanup(d, old)
        await self._sync_status(d, [*old, *([new] if new else [])], new)

    async def _scale_proportionally(self, d: V1Deployment, new: V1ReplicaSet | None,
                                    old: list[V1ReplicaSet]) -> None:
        """``scale``: one active ReplicaSet takes the change, else it is shared in proportion to size."""
        only = du.find_active_or_latest(new, old)
        if only is not None:
            if du.rs_replicas(only) != du.replicas(d):
                await self._scale_and_record(only, du.replicas(d), d)
            return
        if du.is_saturated(d, new):
            for rs in du.active(old):
                await self._scale_and_record(rs, 0, d)
            return
        if not du.is_rolling(d):
            return
        actives = du.active([*old, new])
        allowed = du.replicas(d) + du.max_surge(d) if du.replicas(d) > 0 else 0
        to_add = allowed - du.spec_total(actives)
        if to_add > 0:
            actives = du.by_size_newer(actives)
        elif to_add < 0:
            actives = du.by_size_older(actives)
        status_replicas = d.status.replicas if d.status is not None and d.status.replicas else 0
        added = 0
        sizes: dict[str, int] = {}
        for rs in actives:
            name = meta_of(rs).name or ""
            if to_add != 0:
                proportion = du.replica_set_proportion(rs, d, status_replicas, to_add, added)
                sizes[name] = du.rs_replicas(rs) + proportion
                added += proportion
            else:
                sizes[name] = du.rs_replicas(rs)
        if to_add != 0 and actives:
            first = meta_of(actives[0]).name or ""
            sizes[first] = max(sizes[first] + to_add - added, 0)
        for rs in actives:
            await self._scale(rs, sizes[meta_of(rs).name or ""], d, "proportionally")

    async def _scale_and_record(self, rs: V1ReplicaSet, size: int, d: V1Deployment) -> bool:
        if du.rs_replicas(rs) == size:
            return False
        changed, _ = await self._scale(rs, size, d, "up" if du.rs_replicas(rs) < size else "down")
        return changed

    async def _scale(self, rs: V1ReplicaSet, size: int, d: V1Deployment, operation: str,
                     ) -> tuple[bool, V1ReplicaSet]:
        """``scaleReplicaSet``: the new size and the replicas annotations, one update, one Event."""
        size_changed = du.rs_replicas(rs) != size
        max_replicas = du.replicas(d) + du.max_surge(d)
        if not size_changed and not du.replicas_annotations_need_update(rs, du.replicas(d), max_replicas):
            return False, rs
        body = to_wire(rs)
        body["spec"]["replicas"] = size
        body["metadata"]["annotations"] = {**(body["metadata"].get("annotations") or {}),
                                           **du.replicas_annotations(du.replicas(d), max_replicas)}
        updated = await self._client.update(REPLICA_SETS, body)
        if size_changed:
            self._recorder.event(d, NORMAL, "ScalingReplicaSet",
                                 f"Scaled {operation} replica set {meta_of(rs).name} from "
                                 f"{du.rs_replicas(rs)} to {size}")
        return size_changed, updated

    async def _cleanup(self, d: V1Deployment, old: Sequence[V1ReplicaSet]) -> None:
        """``cleanupDeployment``: delete the oldest revisions scaled to 0 beyond ``revisionHistoryLimit``."""
        cleanable = [rs for rs in old if meta_of(rs).deletion_timestamp is None]
        excess = len(cleanable) - du.revision_history_limit(d)
        if excess <= 0:
            return
        for rs in sorted(cleanable, key=lambda r: (du.revision(r), meta_of(r).creation_timestamp or utcnow()))[
                :excess]:
            observed = rs.status.observed_generation if rs.status is not None else None
            if du.rs_status(rs, "replicas") != 0 or du.rs_replicas(rs) != 0 or \
                    (meta_of(rs).generation or 0) > (observed or 0):
                continue
            log.info("deployment %s: deleting old ReplicaSet %s (revision %d)", key_of(d), meta_of(rs).name,
                     du.revision(rs))
            try:
                await self._client.delete(REPLICA_SETS, meta_of(rs).name or "", namespace=meta_of(rs).namespace,
                                          uid=meta_of(rs).uid)
            except NotFound:
                pass

    # --- status ---------------------------------------------------------------------------------

    async def _sync_status(self, d: V1Deployment, all_rss: Sequence[V1ReplicaSet],
                           new: V1ReplicaSet | None) -> None:
        """``syncDeploymentStatus``: write the counts and Available when they changed."""
        status = du.calculate_status(d, all_rss, new, utcnow())
        if status != du.current_status(d):
            await self._write_status(d, status)

    async def _sync_rollout_status(self, d: V1Deployment, all_rss: Sequence[V1ReplicaSet],
                                   new: V1ReplicaSet | None) -> None:
        """``syncRolloutStatus``: the counts, Available, Progressing (and its deadline), ReplicaFailure."""
        now = utcnow()
        status = du.calculate_status(d, all_rss, new, now)
        conditions: list[dict[str, Any]] = status["conditions"]
        deadline = du.progress_deadline(d)
        if deadline is None:
            du.remove_condition(conditions, du.PROGRESSING)
        current = du.get_condition(conditions, du.PROGRESSING)
        new_name = meta_of(new).name if new is not None else None
        is_complete = (status["replicas"] == status["updatedReplicas"] and current is not None
                       and current.get("reason") == du.NEW_RS_AVAILABLE_REASON)
        if deadline is not None and not is_complete:
            if du.complete(d, status):
                message = (f'ReplicaSet "{new_name}" has successfully progressed.' if new_name
                           else f'Deployment "{meta_of(d).name}" has successfully progressed.')
                du.set_condition(conditions, du.new_condition(du.PROGRESSING, "True", du.NEW_RS_AVAILABLE_REASON,
                                                              message, now))
            elif du.progressing(d, status):
                message = (f'ReplicaSet "{new_name}" is progressing.' if new_name
                           else f'Deployment "{meta_of(d).name}" is progressing.')
                condition = du.new_condition(du.PROGRESSING, "True", du.RS_UPDATED_REASON, message, now)
                if current is not None:
                    if current.get("status") == "True":
                        condition["lastTransitionTime"] = current.get("lastTransitionTime")
                    du.remove_condition(conditions, du.PROGRESSING)
                du.set_condition(conditions, condition)
            elif du.timed_out(d, conditions, now):
                message = (f'ReplicaSet "{new_name}" has timed out progressing.' if new_name
                           else f'Deployment "{meta_of(d).name}" has timed out progressing.')
                du.set_condition(conditions, du.new_condition(du.PROGRESSING, "False", du.TIMED_OUT_REASON,
                                                              message, now))
        failure = _replica_failure(all_rss, new)
        if failure is not None:
            du.set_condition(conditions, failure)
        else:
            du.remove_condition(conditions, du.REPLICA_FAILURE)
        if status == du.current_status(d):
            self._requeue_stuck(d, status)
            return
        await self._write_status(d, status)

    def _requeue_stuck(self, d: V1Deployment, status: dict[str, Any]) -> None:
        """``requeueStuckDeployment``: look again when the progress deadline would pass."""
        deadline = du.progress_deadline(d)
        current = du.get_condition(status["conditions"], du.PROGRESSING)
        if deadline is None or current is None or du.complete(d, status) \
                or current.get("reason") == du.TIMED_OUT_REASON:
            return
        since = parse_time(current.get("lastUpdateTime"))
        if since is None:
            return
        after = (since - utcnow()).total_seconds() + deadline
        if after < 1:
            self.queue.add_rate_limited(key_of(d))
        else:
            self.queue.add_after(key_of(d), after + 1)

    async def _write_status(self, d: V1Deployment, status: dict[str, Any], *,
                            revision: str | None = None) -> V1Deployment:
        """PUT the status (and the revision annotation, which Kubernetes also writes through /status)."""
        body = to_wire(d)
        if revision is not None:
            body["metadata"]["annotations"] = {**(body["metadata"].get("annotations") or {}),
                                               du.REVISION: revision}
        wire_status = {k: v for k, v in status.items() if v is not None}
        for field in ("replicas", "updatedReplicas", "readyReplicas", "availableReplicas", "unavailableReplicas"):
            if not wire_status.get(field):
                wire_status.pop(field, None)
        if not wire_status.get("conditions"):
            wire_status.pop("conditions", None)
        body["status"] = wire_status
        return await self._client.update_status(DEPLOYMENTS, body)


def selector_of(d: V1Deployment) -> Selector:
    selector = d.spec.selector if d.spec is not None else None
    if selector is None:
        return Selector.nothing()
    return Selector.from_label_selector(selector)


def _set_revision(d: V1Deployment, revision: str | None) -> bool:
    """``SetDeploymentRevision``: whether the Deployment's revision annotation must change."""
    return revision is not None and (meta_of(d).annotations or {}).get(du.REVISION) != revision


def _replica_failure(all_rss: Sequence[V1ReplicaSet], new: V1ReplicaSet | None) -> dict[str, Any] | None:
    """``getReplicaFailures``: the new ReplicaSet's ReplicaFailure condition, else any old one's."""
    ordered = ([new] if new is not None else []) + [rs for rs in all_rss if rs is not new]
    for rs in ordered:
        for condition in (rs.status.conditions if rs.status is not None else None) or ():
            if condition.type == du.REPLICA_FAILURE:
                wire = to_wire(condition)
                stamp = wire.get("lastTransitionTime")
                return {"type": du.REPLICA_FAILURE, "status": wire.get("status"), "lastUpdateTime": stamp,
                        "lastTransitionTime": stamp, "reason": wire.get("reason"), "message": wire.get("message")}
    return None
