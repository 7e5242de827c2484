"""The StatefulSet controller: Pods with stable names and storage, created, updated and removed in order.

Kubernetes' ``pkg/controller/statefulset``:

- **Identity.** Pod ``<set>-<ordinal>`` for ordinals 0..replicas-1, with
  hostname = its name, subdomain = ``spec.serviceName``, and the labels
  ``statefulset.kubernetes.io/pod-name``, ``apps.kubernetes.io/pod-index`` and
  ``controller-revision-hash``.
- **Storage.** Each ``volumeClaimTemplates`` entry gives each Pod a PVC
  ``<claim>-<set>-<ordinal>``, created before the Pod and kept when the Pod
  goes, so a re-created Pod gets its data back.
  ``persistentVolumeClaimRetentionPolicy`` decides what removes them: with
  ``whenDeleted: Delete`` they are owned by the StatefulSet, with
  ``whenScaled: Delete`` the claims of Pods removed by a scale-down are owned
  by those Pods; the garbage collector does the rest.
- **Ordering.** ``OrderedReady`` (the default) creates one Pod at a time in
  order, each Running and Ready (and available after ``minReadySeconds``)
  before the next, and removes them highest ordinal first, one at a time;
  ``Parallel`` does all at once. Failed Pods are deleted and made again.
- **Revisions.** The template's history is kept as ControllerRevisions
  (``status.currentRevision`` / ``updateRevision``); ``RollingUpdate``
  replaces Pods from the highest ordinal down to ``partition``, one at a time,
  each healthy before the next; ``OnDelete`` uses the new revision only for
  Pods deleted by someone else. Beyond ``revisionHistoryLimit`` (10) unused
  revisions are deleted.

Names are unique, so a restarted controller cannot make a Pod twice: a create
answered 409 AlreadyExists means the Pod is there (Kubernetes' controller has
no expectations either).

Concurrency: ``concurrent_statefulset_syncs`` workers keyed by StatefulSet.
"""

from __future__ import annotations

import logging
import re
from typing import Any, Final

from kubernetes.client import V1ControllerRevision, V1PersistentVolumeClaim, V1Pod, V1StatefulSet

from controller_manager import history
from controller_manager.context import ControllerContext
from controller_manager.controllerref import claim
from controller_manager.podcontrol import owner_reference, pod_from_template
from controller_manager.podutil import controller_of, is_pod_available, is_pod_ready
from machinery.api.kinds import (
    CONTROLLER_REVISIONS,
    PERSISTENT_VOLUME_CLAIMS,
    PODS,
    STATEFUL_SETS,
    ObjectKey,
    object_key,
)
from machinery.api.labels import Selector
from machinery.api.meta import utcnow
from machinery.client.errors import AlreadyExists, ApiError, NotFound
from machinery.client.objects import key_of, meta_of, to_wire
from machinery.client.rest import PatchType
from machinery.controller import Controller
from machinery.events import NORMAL, WARNING
from machinery.informer.shared import DeletedFinalStateUnknown
from machinery.informer.store import NAMESPACE_INDEX, index_by_namespace

log = logging.getLogger(__name__)

NAME: Final = "statefulset-controller"
ALIASES: Final = ("statefulset",)
EVENT_SOURCE: Final = "statefulset-controller"
POD_NAME_LABEL: Final = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL: Final = "apps.kubernetes.io/pod-index"
DEFAULT_REVISION_HISTORY_LIMIT: Final = 10


class StatefulSetController(Controller):
    def __init__(self, ctx: ControllerContext) -> None:
        self._sets = ctx.informers.informer(STATEFUL_SETS, indexers={NAMESPACE_INDEX: index_by_namespace})
        self._pods = ctx.informers.informer(PODS, indexers={NAMESPACE_INDEX: index_by_namespace})
        self._claims = ctx.informers.informer(PERSISTENT_VOLUME_CLAIMS)
        self._revisions = ctx.informers.informer(CONTROLLER_REVISIONS,
                                                 indexers={NAMESPACE_INDEX: index_by_namespace})
        super().__init__("statefulset", informers=[self._sets, self._pods, self._claims, self._revisions],
                         workers=ctx.options.concurrent_statefulset_syncs, clock=ctx.clock)
        self._client = ctx.client
        self._recorder = ctx.events.recorder(EVENT_SOURCE)
        self._is_leading = ctx.is_leading
        self._sets.add_handler(on_add=self.enqueue, on_update=lambda _o, n: self.enqueue(n), on_delete=self.enqueue)
        self._pods.add_handler(on_add=self._pod_changed, on_update=self._pod_updated, on_delete=self._pod_deleted)

    def _pod_changed(self, pod: V1Pod) -> None:
        ref = controller_of(meta_of(pod))
        if ref is not None:
            if ref.kind == STATEFUL_SETS.kind:
                self.queue.add(object_key(meta_of(pod).namespace, ref.name))
            return
        for s in self._sets.store.by_index(NAMESPACE_INDEX, meta_of(pod).namespace or ""):
            if not (sel := selector_of(s)).empty() and sel.matches(meta_of(pod).labels or {}):
                self.enqueue(s)

    def _pod_updated(self, old: V1Pod, new: V1Pod) -> None:
        if meta_of(old).resource_version == meta_of(new).resource_version:
            return
        self._pod_changed(new)
        if controller_of(meta_of(old)) != controller_of(meta_of(new)):
            self._pod_changed(old)
        min_ready = _min_ready(self._set_of(new))
        if min_ready and not is_pod_ready(old) and is_pod_ready(new):
            owner = self._set_of(new)
            if owner is not None:
                self.queue.add_after(key_of(owner), min_ready + 1.0)

    def _pod_deleted(self, obj: V1Pod | DeletedFinalStateUnknown[V1Pod]) -> None:
        self._pod_changed(obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj)

    def _set_of(self, pod: V1Pod) -> V1StatefulSet | None:
        ref = controller_of(meta_of(pod))
        if ref is None or ref.kind != STATEFUL_SETS.kind:
            return None
        s = self._sets.store.get(object_key(meta_of(pod).namespace, ref.name))
        return s if s is not None and meta_of(s).uid == ref.uid else None

    async def sync(self, key: ObjectKey) -> None:
        s = self._sets.store.get(key)
        if s is None or not self._is_leading():
            return
        selector = selector_of(s)
        if selector.empty():
            return
        namespace = meta_of(s).namespace or ""
        name = meta_of(s).name or ""
        pods = await claim(self._client, s, STATEFUL_SETS, PODS, selector,
                           self._pods.store.by_index(NAMESPACE_INDEX, namespace),
                           filter=lambda p: parent_ordinal(name, p) is not None)
        revisions = await claim(self._client, s, STATEFUL_SETS, CONTROLLER_REVISIONS, selector,
                                self._revisions.store.by_index(NAMESPACE_INDEX, namespace))
        if meta_of(s).deletion_timestamp is not None:
            return
        await _Sync(self, s, [p for p in pods if parent_ordinal(name, p) is not None], revisions).run()


class _Sync:
    def __init__(self, c: StatefulSetController, s: V1StatefulSet, pods: list[V1Pod],
                 revisions: list[V1ControllerRevision]) -> None:
        self.c = c
        self.set = s
        self.name = meta_of(s).name or ""
        self.namespace = meta_of(s).namespace or ""
        self.pods = pods
        self.revisions = history.sorted_revisions(revisions)
        self.spec: Any = s.spec
        self.replicas = 1 if self.spec.replicas is None else self.spec.replicas
        self.monotonic = (self.spec.pod_management_policy or "OrderedReady") == "OrderedReady"
        self.collisions = s.status.collision_count if s.status is not None else None

    async def run(self) -> None:
        current, update = await self._revisions()
        await self._update(current, update)
        await self._write_status(current, update)
        await self._truncate_history(current, update)

    # --- revisions ---------------------------------------------------------------------------------

    async def _revisions(self) -> tuple[V1ControllerRevision, V1ControllerRevision]:
        data = history.template_patch(self.spec.template)
        equal = [r for r in self.revisions if history.same_data(r, data)]
        number = history.next_number(self.revisions)
        if equal:
            update = equal[-1]
            if update is not self.revisions[-1]:
                body = to_wire(update)
                body["revision"] = number
                update = await self.c._client.update(CONTROLLER_REVISIONS, body)
        else:
            labels = dict((self.spec.selector.match_labels if self.spec.selector else None) or {})
            body = history.new_revision(self.set, STATEFUL_SETS, self.spec.template, number, self.collisions,
                                        labels)
            try:
                update = await self.c._client.create(CONTROLLER_REVISIONS, body)
            except AlreadyExists:
                existing = await self.c._client.get(CONTROLLER_REVISIONS, body["metadata"]["name"],
                                                    namespace=self.namespace)
                if history.same_data(existing, data) and (ref := controller_of(meta_of(existing))) is not None \
                        and ref.uid == meta_of(self.set).uid:
                    update = existing
                else:
                    self.collisions = (self.collisions or 0) + 1
                    await self._write_status_fields({"collisionCount": self.collisions})
                    raise
            self.revisions.append(update)
        current_name = self.set.status.current_revision if self.set.status is not None else None
        current = next((r for r in self.revisions if meta_of(r).name == current_name), update)
        return current, update

    # --- Pods ------------------------------------------------------------------------------------

    def _revision_for(self, ordinal: int, current: V1ControllerRevision,
                      update: V1ControllerRevision) -> V1ControllerRevision:
        """``newVersionedStatefulSetPod``: below the partition, the current revision.

        An unset ``rollingUpdate`` is read as the APIServer defaults it (``partition: 0``).
        """
        strategy = self.spec.update_strategy
        kind = (strategy.type if strategy is not None else None) or "RollingUpdate"
        if kind == "RollingUpdate":
            rolling = strategy.rolling_update if strategy is not None else None
            partition = (rolling.partition if rolling is not None else None) or 0
            if ordinal < partition:
                return current
        return update

    async def _update(self, current: V1ControllerRevision, update: V1ControllerRevision) -> None:
        by_ordinal: dict[int, V1Pod] = {}
        condemned: list[V1Pod] = []
        for pod in self.pods:
            ordinal = parent_ordinal(self.name, pod)
            assert ordinal is not None
            if ordinal < self.replicas:
                by_ordinal[ordinal] = pod
            else:
                condemned.append(pod)
        condemned.sort(key=lambda p: -(parent_ordinal(self.name, p) or 0))
        for ordinal in range(self.replicas):
            slot = by_ordinal.get(ordinal)
            if slot is None:
                revision = self._revision_for(ordinal, current, update)
                await self._create_pod(ordinal, revision)
                if self.monotonic:
                    return
                continue
            pod = slot
            if pod.status is not None and pod.status.phase in ("Failed", "Succeeded") \
                    and meta_of(pod).deletion_timestamp is None:
                await self._delete_pod(pod, f"Pod {meta_of(pod).name} has failed")
                if self.monotonic:
                    return
                continue
            if meta_of(pod).deletion_timestamp is not None:
                if self.monotonic:
                    return
                continue
            if self.monotonic and not self._healthy(pod):
                return
            await self._ensure_claims(pod, ordinal)
        for pod in condemned:
            if meta_of(pod).deletion_timestamp is not None:
                if self.monotonic:
                    return
                continue
            if self.monotonic and any(not self._healthy(p) for p in by_ordinal.values()):
                return
            await self._retain_on_scale_down(pod)
            await self._delete_pod(pod, "scale down")
            if self.monotonic:
                return
        strategy = self.spec.update_strategy
        if strategy is not None and strategy.type == "OnDelete":
            return
        rolling = strategy.rolling_update if strategy is not None else None
        partition = (rolling.partition if rolling is not None else None) or 0
        for ordinal in range(self.replicas - 1, partition - 1, -1):
            target = by_ordinal.get(ordinal)
            if target is None:
                return
            pod = target
            if _revision_label(pod) != meta_of(update).name and meta_of(pod).deletion_timestamp is None:
                await self._delete_pod(pod, f"update to revision {meta_of(update).name}")
                return
            if not self._healthy(pod):
                return

    def _healthy(self, pod: V1Pod) -> bool:
        running = pod.status is not None and pod.status.phase == "Running"
        return running and is_pod_available(pod, _min_ready(self.set), utcnow()) and \
            meta_of(pod).deletion_timestamp is None

    async def _create_pod(self, ordinal: int, revision: V1ControllerRevision) -> None:
        pod_name = f"{self.name}-{ordinal}"
        await self._ensure_claims(None, ordinal)
        template = history.template_of(revision)
        body = pod_from_template(template, self.set, STATEFUL_SETS, name=pod_name)
        labels = body["metadata"].setdefault("labels", {})
        labels.update({POD_NAME_LABEL: pod_name, POD_INDEX_LABEL: str(ordinal),
                       history.POD_REVISION_LABEL: meta_of(revision).name})
        spec = body["spec"]
        spec["hostname"] = pod_name
        if self.spec.service_name:
            spec["subdomain"] = self.spec.service_name
        claims = {t.metadata.name: claim_name(t.metadata.name, self.name, ordinal)
                  for t in self.spec.volume_claim_templates or () if t.metadata is not None}
        if claims:
            volumes = [v for v in spec.get("volumes") or () if v.get("name") not in claims]
            volumes += [{"name": n, "persistentVolumeClaim": {"claimName": c}} for n, c in claims.items()]
            spec["volumes"] = volumes
        try:
            await self.c._client.create(PODS, body, namespace=self.namespace)
        except AlreadyExists:
            return
        except ApiError as err:
            if err.has_cause("NamespaceTerminating"):
                return
            self.c._recorder.event(self.set, WARNING, "FailedCreate",
                                   f"create Pod {pod_name} in StatefulSet {self.name} failed error: {err}")
            raise
        self.c._recorder.event(self.set, NORMAL, "SuccessfulCreate",
                               f"create Pod {pod_name} in StatefulSet {self.name} successful")
        log.info("statefulset %s: created Pod %s", key_of(self.set), pod_name)

    async def _ensure_claims(self, pod: V1Pod | None, ordinal: int) -> None:
        """Create the Pod's missing PVCs (``createPersistentVolumeClaims``) and set their owners by policy."""
        policy = self.spec.persistent_volume_claim_retention_policy
        when_deleted = (policy.when_deleted if policy is not None else None) or "Retain"
        pod_name = f"{self.name}-{ordinal}"
        labels = dict((self.spec.selector.match_labels if self.spec.selector else None) or {})
        for template in self.spec.volume_claim_templates or ():
            if template.metadata is None:
                continue
            name = claim_name(template.metadata.name, self.name, ordinal)
            existing = self.c._claims.store.get(object_key(self.namespace, name))
            if existing is not None:
                await self._set_claim_owner(existing, when_deleted == "Delete")
                continue
            body = to_wire(template)
            meta = body.setdefault("metadata", {})
            meta.update(name=name, namespace=self.namespace,
                        labels={**(meta.get("labels") or {}), **labels})
            if when_deleted == "Delete":
                meta["ownerReferences"] = [_owner(self.set, STATEFUL_SETS)]
            body.update(apiVersion="v1", kind="PersistentVolumeClaim")
            body.pop("status", None)
            try:
                await self.c._client.create(PERSISTENT_VOLUME_CLAIMS, body, namespace=self.namespace)
            except AlreadyExists:
                continue
            self.c._recorder.event(self.set, NORMAL, "SuccessfulCreate",
                                   f"create Claim {name} Pod {pod_name} in StatefulSet {self.name} success")

    async def _set_claim_owner(self, pvc: V1PersistentVolumeClaim, owned: bool) -> None:
        uid = meta_of(self.set).uid
        refs = [r for r in meta_of(pvc).owner_references or ()]
        has = any(r.uid == uid for r in refs)
        if owned and not has:
            patch = {"metadata": {"ownerReferences": [_owner(self.set, STATEFUL_SETS)], "uid": meta_of(pvc).uid}}
        elif not owned and has:
            patch = {"metadata": {"ownerReferences": [{"$patch": "delete", "uid": uid}], "uid": meta_of(pvc).uid}}
        else:
            return
        try:
            await self.c._client.patch(PERSISTENT_VOLUME_CLAIMS, meta_of(pvc).name or "", patch,
                                       namespace=self.namespace, patch_type=PatchType.STRATEGIC_MERGE)
        except NotFound:
            pass

    async def _retain_on_scale_down(self, pod: V1Pod) -> None:
        """``whenScaled: Delete``: the condemned Pod owns its claims, so they go with it."""
        policy = self.spec.persistent_volume_claim_retention_policy
        if policy is None or policy.when_scaled != "Delete":
            return
        ordinal = parent_ordinal(self.name, pod)
        for template in self.spec.volume_claim_templates or ():
            if template.metadata is None or ordinal is None:
                continue
            pvc = self.c._claims.store.get(object_key(self.namespace, claim_name(template.metadata.name,
                                                                                 self.name, ordinal)))
            if pvc is None or any(r.uid == meta_of(pod).uid for r in meta_of(pvc).owner_references or ()):
                continue
            try:
                await self.c._client.patch(PERSISTENT_VOLUME_CLAIMS, meta_of(pvc).name or "", {"metadata": {
                    "ownerReferences": [_owner(pod, PODS)], "uid": meta_of(pvc).uid}}, namespace=self.namespace,
                    patch_type=PatchType.STRATEGIC_MERGE)
            except NotFound:
                pass

    async def _delete_pod(self, pod: V1Pod, why: str) -> None:
        name = meta_of(pod).name
        try:
            await self.c._client.delete(PODS, name or "", namespace=self.namespace, uid=meta_of(pod).uid)
        except NotFound:
            return
        self.c._recorder.event(self.set, NORMAL, "SuccessfulDelete",
                               f"delete Pod {name} in StatefulSet {self.name} successful")
        log.info("statefulset %s: deleted Pod %s (%s)", key_of(self.set), name, why)

    # --- status and history ----------------------------------------------------------------------

    async def _write_status(self, current: V1ControllerRevision, update: V1ControllerRevision) -> None:
        pods = [p for p in self.c._pods.store.by_index(NAMESPACE_INDEX, self.namespace)
                if (ref := controller_of(meta_of(p))) is not None and ref.uid == meta_of(self.set).uid
                and parent_ordinal(self.name, p) is not None]
        current_name, update_name = meta_of(current).name, meta_of(update).name
        now = utcnow()
        created = [p for p in pods if meta_of(p).deletion_timestamp is None]
        status: dict[str, Any] = {
            "observedGeneration": meta_of(self.set).generation,
            "replicas": len(created),
            "readyReplicas": sum(1 for p in created if is_pod_ready(p)),
            "availableReplicas": sum(1 for p in created if is_pod_available(p, _min_ready(self.set), now)),
            "currentReplicas": sum(1 for p in created if _revision_label(p) == current_name),
            "updatedReplicas": sum(1 for p in created if _revision_label(p) == update_name),
            "currentRevision": current_name, "updateRevision": update_name,
            "collisionCount": self.collisions or 0,
        }
        if status["updatedReplicas"] == self.replicas and status["readyReplicas"] == self.replicas \
                and len(created) == self.replicas:
            status["currentRevision"] = update_name
            status["currentReplicas"] = status["updatedReplicas"]
        await self._write_status_fields(status)

    async def _write_status_fields(self, fields: dict[str, Any]) -> None:
        current = to_wire(self.set.status) if self.set.status is not None else {}
        status = {**current, **fields}
        for key in ("readyReplicas", "availableReplicas", "currentReplicas", "updatedReplicas"):
            if not status.get(key):
                status.pop(key, None)
        if status == current:
            return
        body = to_wire(self.set)
        body["status"] = status
        self.set = await self.c._client.update_status(STATEFUL_SETS, body)

    async def _truncate_history(self, current: V1ControllerRevision, update: V1ControllerRevision) -> None:
        limit = self.spec.revision_history_limit
        limit = DEFAULT_REVISION_HISTORY_LIMIT if limit is None else limit
        live = {_revision_label(p) for p in self.pods} | {meta_of(current).name, meta_of(update).name}
        old = [r for r in self.revisions if meta_of(r).name not in live]
        for revision in old[:max(len(old) - limit, 0)]:
            try:
                await self.c._client.delete(CONTROLLER_REVISIONS, meta_of(revision).name or "",
                                            namespace=self.namespace)
            except NotFound:
                pass


def selector_of(s: V1StatefulSet) -> Selector:
    selector = s.spec.selector if s.spec is not None else None
    return Selector.from_label_selector(selector) if selector is not None else Selector.nothing()


def claim_name(claim: str | None, set_name: str, ordinal: int) -> str:
    """``getPersistentVolumeClaimName``: ``<claim>-<set>-<ordinal>``."""
    return f"{claim}-{set_name}-{ordinal}"


_ORDINAL = re.compile(r"^(.*)-([0-9]+)$")


def parent_ordinal(set_name: str, pod: V1Pod) -> int | None:
    """``getParentNameAndOrdinal``: the ordinal of a Pod named ``<set>-<n>``, None for any other name."""
    match = _ORDINAL.match(meta_of(pod).name or "")
    if match is None or match.group(1) != set_name:
        return None
    return int(match.group(2))


def _revision_label(pod: V1Pod) -> str | None:
    return (meta_of(pod).labels or {}).get(history.POD_REVISION_LABEL)


def _min_ready(s: V1StatefulSet | None) -> int:
    return (s.spec.min_ready_seconds if s is not None and s.spec is not None else None) or 0


def _owner(owner: Any, resource: Any) -> dict[str, Any]:
    """A non-controlling reference that blocks nothing: the claim only goes with its owner."""
    ref = owner_reference(owner, resource)
    ref.pop("controller", None)
    ref["blockOwnerDeletion"] = True
    return ref


__all__ = ["ALIASES", "NAME", "StatefulSetController", "claim_name", "parent_ordinal"]
