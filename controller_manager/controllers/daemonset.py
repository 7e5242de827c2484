"""The DaemonSet controller: one Pod on every node that should run it, placed by the scheduler.

Kubernetes' ``pkg/controller/daemon``:

- **Which nodes.** A node should run the daemon Pod when the template's
  ``nodeSelector`` and required node affinity match it and it has no
  NoSchedule or NoExecute taint the Pod does not tolerate, counting the
  tolerations Kubernetes adds to every daemon Pod: ``not-ready`` and
  ``unreachable`` (NoExecute), ``disk-pressure``, ``memory-pressure``,
  ``pid-pressure`` and ``unschedulable`` (NoSchedule), and
  ``network-unavailable`` for host-network Pods. A node with an untolerated
  NoExecute taint must not keep one either; a NoSchedule one only stops new
  Pods.
- **Placement.** As since 1.12, the daemon Pod is created unscheduled with a
  required node affinity on ``metadata.name`` (``matchFields``), and the
  default scheduler binds it. New nodes get a Pod, removed ones lose it;
  duplicates on a node are deleted (the oldest stays); failed Pods are
  deleted and made again.
- **Revisions and updates.** The template's history is kept as
  ControllerRevisions; Pods carry ``controller-revision-hash`` and
  ``pod-template-generation``. ``RollingUpdate`` replaces old Pods within
  ``maxUnavailable`` (default 1) or, with ``maxSurge``, starts the new Pod
  first and removes the old one once the new is available; ``OnDelete``
  waits for Pods to be deleted.
- **Status:** desiredNumberScheduled, currentNumberScheduled,
  numberMisscheduled, numberReady, updatedNumberScheduled, numberAvailable,
  numberUnavailable, observedGeneration.

Concurrency: ``concurrent_daemonset_syncs`` workers keyed by DaemonSet;
handlers update expectations and enqueue.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, Final

from kubernetes.client import V1ControllerRevision, V1DaemonSet, V1Node, V1Pod

from controller_manager import history
from controller_manager.context import ControllerContext
from controller_manager.controllerref import claim
from controller_manager.deploymentutil import scaled_value
from controller_manager.expectations import Expectations
from controller_manager.podcontrol import outcomes, pod_from_template
from controller_manager.podutil import controller_of, is_pod_available, is_pod_ready
from machinery.api.kinds import CONTROLLER_REVISIONS, DAEMON_SETS, NODES, PODS, ObjectKey, object_key
from machinery.api.labels import Selector
from machinery.api.meta import utcnow
from machinery.api.nodeselector import NODE_NAME_FIELD, RequiredNodeAffinity
from machinery.api.taints import NO_EXECUTE, NO_SCHEDULE, find_untolerated_taint
from machinery.client.errors import AlreadyExists, ApiError, NotFound
from machinery.client.objects import key_of, meta_of, to_wire
from machinery.controller import Controller
from machinery.events import NORMAL, WARNING
from machinery.informer.shared import DeletedFinalStateUnknown
from machinery.informer.store import NAMESPACE_INDEX, index_by_namespace

log = logging.getLogger(__name__)

NAME: Final = "daemonset-controller"
ALIASES: Final = ("daemonset",)
EVENT_SOURCE: Final = "daemonset-controller"
TEMPLATE_GENERATION_LABEL: Final = "pod-template-generation"
DEFAULT_REVISION_HISTORY_LIMIT: Final = 10

_DAEMON_TOLERATIONS: Final = (
    ("node.kubernetes.io/not-ready", NO_EXECUTE),
    ("node.kubernetes.io/unreachable", NO_EXECUTE),
    ("node.kubernetes.io/disk-pressure", NO_SCHEDULE),
    ("node.kubernetes.io/memory-pressure", NO_SCHEDULE),
    ("node.kubernetes.io/pid-pressure", NO_SCHEDULE),
    ("node.kubernetes.io/unschedulable", NO_SCHEDULE),
)
_NETWORK_UNAVAILABLE: Final = ("node.kubernetes.io/network-unavailable", NO_SCHEDULE)


def daemon_tolerations(spec: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The Pod spec's tolerations plus those every daemon Pod gets (``AddOrUpdateDaemonPodTolerations``)."""
    tolerations: list[dict[str, Any]] = [dict(t) for t in spec.get("tolerations") or ()]
    wanted = list(_DAEMON_TOLERATIONS)
    if spec.get("hostNetwork"):
        wanted.append(_NETWORK_UNAVAILABLE)
    for key, effect in wanted:
        if not any(t.get("key") == key and t.get("effect") == effect for t in tolerations):
            tolerations.append({"key": key, "operator": "Exists", "effect": effect})
    return tolerations


def node_should_run(template_spec: Mapping[str, Any], node: V1Node) -> tuple[bool, bool]:
    """``NodeShouldRunDaemonPod``: (should run a new Pod, should keep a running one)."""
    meta = meta_of(node)
    node_name = template_spec.get("nodeName")
    if node_name and node_name != meta.name:
        return False, False
    pod = {"spec": template_spec}
    try:
        affinity = RequiredNodeAffinity.from_pod(pod)
    except ValueError:
        return False, False
    if not affinity.matches(meta.name or "", meta.labels or {}):
        return False, False
    taints = (node.spec.taints if node.spec is not None else None) or ()
    tolerations = daemon_tolerations(template_spec)
    if find_untolerated_taint(taints, tolerations, {NO_EXECUTE}) is not None:
        return False, False
    if find_untolerated_taint(taints, tolerations, {NO_SCHEDULE}) is not None:
        return False, True
    return True, True


def target_node(pod: V1Pod) -> str | None:
    """``GetTargetNodeName``: ``spec.nodeName``, or the node the Pod's ``metadata.name`` affinity names."""
    if pod.spec is None:
        return None
    if pod.spec.node_name:
        return str(pod.spec.node_name)
    affinity = pod.spec.affinity.node_affinity if pod.spec.affinity is not None else None
    required = affinity.required_during_scheduling_ignored_during_execution if affinity is not None else None
    for term in (required.node_selector_terms if required is not None else None) or ():
        for field in term.match_fields or ():
            if field.key == NODE_NAME_FIELD and field.operator == "In" and len(field.values or ()) == 1:
                return str((field.values or [""])[0])
    return None


def with_node_affinity(spec: dict[str, Any], node_name: str) -> None:
    """``ReplaceDaemonSetPodNodeNameNodeAffinity``: require exactly this node, keep other affinity as is."""
    term = {"matchFields": [{"key": NODE_NAME_FIELD, "operator": "In", "values": [node_name]}]}
    affinity = spec.setdefault("affinity", {})
    node_affinity = affinity.setdefault("nodeAffinity", {})
    node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": [term]}


class DaemonSetsController(Controller):
    def __init__(self, ctx: ControllerContext) -> None:
        self._sets = ctx.informers.informer(DAEMON_SETS, indexers={NAMESPACE_INDEX: index_by_namespace})
        self._pods = ctx.informers.informer(PODS, indexers={NAMESPACE_INDEX: index_by_namespace})
        self._nodes = ctx.informers.informer(NODES)
        self._revisions = ctx.informers.informer(CONTROLLER_REVISIONS,
                                                 indexers={NAMESPACE_INDEX: index_by_namespace})
        super().__init__("daemonset", informers=[self._sets, self._pods, self._nodes, self._revisions],
                         workers=ctx.options.concurrent_daemonset_syncs, clock=ctx.clock)
        self._client = ctx.client
        self._recorder = ctx.events.recorder(EVENT_SOURCE)
        self._is_leading = ctx.is_leading
        self.expectations = Expectations(clock=ctx.clock)
        self._sets.add_handler(on_add=self.enqueue, on_update=lambda _o, n: self.enqueue(n),
                               on_delete=self._set_deleted)
        self._pods.add_handler(on_add=self._pod_added, on_update=self._pod_updated, on_delete=self._pod_deleted)
        self._nodes.add_handler(on_add=lambda _n: self._all(), on_update=self._node_updated,
                                on_delete=lambda _n: self._all())

    def _all(self) -> None:
        for s in self._sets.store.list():
            self.enqueue(s)

    def _node_updated(self, old: V1Node, new: V1Node) -> None:
        def shape(n: V1Node) -> Any:
            return (meta_of(n).labels, [to_wire(t) for t in (n.spec.taints if n.spec else None) or ()])
        if shape(old) != shape(new):
            self._all()

    def _set_deleted(self, obj: V1DaemonSet | DeletedFinalStateUnknown[V1DaemonSet]) -> None:
        s = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        self.expectations.delete(key_of(s))

    def _owner(self, pod: V1Pod) -> V1DaemonSet | None:
        ref = controller_of(meta_of(pod))
        if ref is None or ref.kind != DAEMON_SETS.kind:
            return None
        s = self._sets.store.get(object_key(meta_of(pod).namespace, ref.name))
        return s if s is not None and meta_of(s).uid == ref.uid else None

    def _pod_added(self, pod: V1Pod) -> None:
        s = self._owner(pod)
        if s is not None:
            if meta_of(pod).deletion_timestamp is None:
                self.expectations.creation_observed(key_of(s))
            self.enqueue(s)

    def _pod_updated(self, old: V1Pod, new: V1Pod) -> None:
        if meta_of(old).resource_version == meta_of(new).resource_version:
            return
        s = self._owner(new)
        if s is None:
            return
        if meta_of(new).deletion_timestamp is not None and meta_of(old).deletion_timestamp is None:
            self.expectations.deletion_observed(key_of(s), _pod_key(new))
        self.enqueue(s)
        min_ready = (s.spec.min_ready_seconds if s.spec else None) or 0
        if min_ready and not is_pod_ready(old) and is_pod_ready(new):
            self.queue.add_after(key_of(s), min_ready + 1.0)

    def _pod_deleted(self, obj: V1Pod | DeletedFinalStateUnknown[V1Pod]) -> None:
        pod = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        s = self._owner(pod)
        if s is not None:
            self.expectations.deletion_observed(key_of(s), _pod_key(pod))
            self.enqueue(s)

    async def sync(self, key: ObjectKey) -> None:
        s = self._sets.store.get(key)
        if s is None or not self._is_leading():
            if s is None:
                self.expectations.delete(key)
            return
        selector = Selector.from_label_selector(s.spec.selector) if s.spec and s.spec.selector else \
            Selector.nothing()
        if selector.empty():
            return
        namespace = meta_of(s).namespace or ""
        pods = await claim(self._client, s, DAEMON_SETS, PODS, selector,
                           self._pods.store.by_index(NAMESPACE_INDEX, namespace))
        revisions = await claim(self._client, s, DAEMON_SETS, CONTROLLER_REVISIONS, selector,
                                self._revisions.store.by_index(NAMESPACE_INDEX, namespace))
        if meta_of(s).deletion_timestamp is not None:
            return
        update, old_revisions = await self._revisions_of(s, revisions)
        update_hash = (meta_of(update).labels or {}).get(history.HASH_LABEL, "")
        by_node: dict[str, list[V1Pod]] = {}
        for pod in pods:
            node = target_node(pod)
            if node is not None:
                by_node.setdefault(node, []).append(pod)
        if self.expectations.satisfied(key):
            await self._manage(s, by_node, update_hash)
        await self._status(s, by_node, update_hash)
        await self._truncate_history(s, old_revisions, pods)

    async def _revisions_of(self, s: V1DaemonSet, revisions: list[V1ControllerRevision],
                            ) -> tuple[V1ControllerRevision, list[V1ControllerRevision]]:
        ordered = history.sorted_revisions(revisions)
        template = s.spec.template if s.spec else None
        data = history.template_patch(template)
        equal = [r for r in ordered if history.same_data(r, data)]
        if equal:
            update = equal[-1]
            if update is not ordered[-1]:
                body = to_wire(update)
                body["revision"] = history.next_number(ordered)
                update = await self._client.update(CONTROLLER_REVISIONS, body)
        else:
            labels = dict((s.spec.selector.match_labels if s.spec and s.spec.selector else None) or {})
            collisions = s.status.collision_count if s.status is not None else None
            body = history.new_revision(s, DAEMON_SETS, template, history.next_number(ordered), collisions, labels)
            try:
                update = await self._client.create(CONTROLLER_REVISIONS, body)
            except AlreadyExists:
                update = await self._client.get(CONTROLLER_REVISIONS, body["metadata"]["name"],
                                                namespace=meta_of(s).namespace)
                if not history.same_data(update, data):
                    raise
        return update, [r for r in ordered if meta_of(r).uid != meta_of(update).uid]

    async def _manage(self, s: V1DaemonSet, by_node: dict[str, list[V1Pod]], update_hash: str) -> None:
        template_spec = to_wire(s.spec.template.spec) if s.spec and s.spec.template and s.spec.template.spec \
            else {}
        to_create: list[str] = []
        to_delete: list[V1Pod] = []
        nodes = self._nodes.store.list()
        names = {meta_of(n).name for n in nodes}
        for node in nodes:
            name = meta_of(node).name or ""
            should_run, keep = node_should_run(template_spec, node)
            pods = [p for p in by_node.get(name, []) if meta_of(p).deletion_timestamp is None]
            if should_run and not pods:
                to_create.append(name)
            elif not keep and pods:
                to_delete.extend(pods)
            elif pods:
                failed = [p for p in pods if p.status is not None and p.status.phase == "Failed"]
                for pod in failed:
                    self._recorder.event(s, WARNING, "FailedDaemonPod",
                                         f"Found failed daemon pod {meta_of(pod).namespace}/{meta_of(pod).name} "
                                         f"on node {name}, will try to kill it")
                to_delete.extend(failed)
                healthy = sorted((p for p in pods if p not in failed),
                                 key=lambda p: meta_of(p).creation_timestamp or utcnow())
                if len(healthy) > 1 and not _surging(healthy, update_hash):
                    to_delete.extend(healthy[1:])
        for name, pods in by_node.items():
            if name not in names:
                to_delete.extend(p for p in pods if meta_of(p).deletion_timestamp is None)
        if not to_delete:
            to_delete, to_create = self._rolling_update(s, by_node, update_hash, to_create)
        key = key_of(s)
        if to_create:
            self.expectations.expect_creations(key, len(to_create))
            results = await outcomes(self._create(s, n, update_hash) for n in to_create)
            for result in results:
                if result is not None:
                    self.expectations.creation_observed(key)
            errors = [r for r in results if r is not None]
            if errors:
                raise errors[0]
        if to_delete:
            self.expectations.expect_deletions(key, [_pod_key(p) for p in to_delete])
            results = await outcomes(self._delete(s, p) for p in to_delete)
            for pod, result in zip(to_delete, results, strict=True):
                if result is not None:
                    self.expectations.deletion_observed(key, _pod_key(pod))
            errors = [r for r in results if r is not None and not isinstance(r, NotFound)]
            if errors:
                raise errors[0]

    def _rolling_update(self, s: V1DaemonSet, by_node: dict[str, list[V1Pod]], update_hash: str,
                        to_create: list[str]) -> tuple[list[V1Pod], list[str]]:
        """``rollingUpdate``: old Pods go within maxUnavailable, or are surged past within maxSurge."""
        strategy = s.spec.update_strategy if s.spec else None
        if strategy is not None and strategy.type == "OnDelete":
            return [], to_create
        rolling = strategy.rolling_update if strategy is not None else None
        desired = sum(1 for pods in by_node.values() if pods)
        max_unavailable = scaled_value(rolling.max_unavailable if rolling and rolling.max_unavailable is not None
                                       else 1, desired, round_up=True)
        max_surge = scaled_value(rolling.max_surge if rolling and rolling.max_surge is not None else 0,
                                 desired, round_up=True)
        min_ready = (s.spec.min_ready_seconds if s.spec else None) or 0
        now = utcnow()
        unavailable = 0
        old_available: list[V1Pod] = []
        old_unavailable: list[V1Pod] = []
        surging = 0
        for pods in by_node.values():
            live = [p for p in pods if meta_of(p).deletion_timestamp is None]
            new = [p for p in live if _hash(p) == update_hash]
            old = [p for p in live if _hash(p) != update_hash]
            if new and old:
                surging += 1
                if all(is_pod_available(p, min_ready, now) for p in new):
                    old_available.extend(old)
                continue
            if not live:
                unavailable += 1
                continue
            if old:
                (old_available if all(is_pod_available(p, min_ready, now) for p in old)
                 else old_unavailable).extend(old)
            elif not all(is_pod_available(p, min_ready, now) for p in new):
                unavailable += 1
        to_delete = list(old_unavailable)
        if max_surge > 0:
            # Surge: a new Pod beside each old one, up to maxSurge at once; the old goes when the new is ready.
            finished = [p for p in old_available if any(_hash(q) == update_hash for q in by_node.get(
                target_node(p) or "", []))]
            to_delete.extend(finished)
            budget = max_surge - surging
            for pod in old_available:
                if budget <= 0:
                    break
                node = target_node(pod) or ""
                if pod not in finished and node not in to_create:
                    to_create.append(node)
                    budget -= 1
            return to_delete, to_create
        budget = max_unavailable - unavailable - len(old_unavailable)
        for pod in old_available:
            if budget <= 0:
                break
            to_delete.append(pod)
            budget -= 1
        return to_delete, to_create

    async def _create(self, s: V1DaemonSet, node: str, update_hash: str) -> None:
        template = s.spec.template if s.spec else None
        body = pod_from_template(template, s, DAEMON_SETS)
        labels = body["metadata"].setdefault("labels", {})
        labels[history.POD_REVISION_LABEL] = update_hash
        labels[TEMPLATE_GENERATION_LABEL] = str(meta_of(s).generation or 1)
        spec = body["spec"]
        spec["tolerations"] = daemon_tolerations(spec)
        with_node_affinity(spec, node)
        try:
            pod = await self._client.create(PODS, body, namespace=meta_of(s).namespace)
        except ApiError as err:
            if err.has_cause("NamespaceTerminating"):
                return
            self._recorder.event(s, WARNING, "FailedCreate", f"Error creating: {err}")
            raise
        self._recorder.event(s, NORMAL, "SuccessfulCreate", f"Created pod: {meta_of(pod).name}")
        log.info("daemonset %s: created Pod %s for node %s", key_of(s), meta_of(pod).name, node)

    async def _delete(self, s: V1DaemonSet, pod: V1Pod) -> None:
        await self._client.delete(PODS, meta_of(pod).name or "", namespace=meta_of(pod).namespace)
        self._recorder.event(s, NORMAL, "SuccessfulDelete", f"Deleted pod: {meta_of(pod).name}")

    async def _status(self, s: V1DaemonSet, by_node: dict[str, list[V1Pod]], update_hash: str) -> None:
        template_spec = to_wire(s.spec.template.spec) if s.spec and s.spec.template and s.spec.template.spec \
            else {}
        min_ready = (s.spec.min_ready_seconds if s.spec else None) or 0
        now = utcnow()
        desired = current = misscheduled = ready = updated = available = 0
        for node in self._nodes.store.list():
            name = meta_of(node).name or ""
            should_run, _keep = node_should_run(template_spec, node)
            pods = [p for p in by_node.get(name, []) if meta_of(p).deletion_timestamp is None]
            if should_run:
                desired += 1
                if pods:
                    current += 1
                    newest = max(pods, key=lambda p: meta_of(p).creation_timestamp or now)
                    if is_pod_ready(newest):
                        ready += 1
                        if is_pod_available(newest, min_ready, now):
                            available += 1
                    if any(_hash(p) == update_hash for p in pods):
                        updated += 1
            elif pods:
                misscheduled += 1
        status = {"desiredNumberScheduled": desired, "currentNumberScheduled": current,
                  "numberMisscheduled": misscheduled, "numberReady": ready, "updatedNumberScheduled": updated,
                  "numberAvailable": available, "numberUnavailable": desired - available,
                  "observedGeneration": meta_of(s).generation}
        if s.status is not None and s.status.collision_count is not None:
            status["collisionCount"] = s.status.collision_count
        for field in ("updatedNumberScheduled", "numberAvailable", "numberUnavailable"):
            if not status[field]:
                del status[field]
        current_status = to_wire(s.status) if s.status is not None else {}
        if status == {k: v for k, v in current_status.items() if k != "conditions"}:
            return
        body = to_wire(s)
        body["status"] = {**status, **({"conditions": current_status["conditions"]}
                                       if current_status.get("conditions") else {})}
        await self._client.update_status(DAEMON_SETS, body)

    async def _truncate_history(self, s: V1DaemonSet, old: Sequence[V1ControllerRevision],
                                pods: Sequence[V1Pod]) -> None:
        limit = s.spec.revision_history_limit if s.spec and s.spec.revision_history_limit is not None \
            else DEFAULT_REVISION_HISTORY_LIMIT
        live = {_hash(p) for p in pods}
        unused = [r for r in old if (meta_of(r).labels or {}).get(history.HASH_LABEL) not in live]
        for revision in unused[:max(len(unused) - limit, 0)]:
            try:
                await self._client.delete(CONTROLLER_REVISIONS, meta_of(revision).name or "",
                                          namespace=meta_of(revision).namespace)
            except NotFound:
                pass


def _hash(pod: V1Pod) -> str | None:
    return (meta_of(pod).labels or {}).get(history.POD_REVISION_LABEL)


def _surging(pods: Sequence[V1Pod], update_hash: str) -> bool:
    """Two Pods on a node are a surge (old and new), not a duplicate, when their revisions differ."""
    return len(pods) == 2 and len({_hash(p) for p in pods}) == 2 and any(_hash(p) == update_hash for p in pods)


def _pod_key(pod: V1Pod) -> str:
    meta = meta_of(pod)
    return f"{meta.namespace}/{meta.name}"
