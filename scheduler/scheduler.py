"""The scheduler: informers feed the cache and the queue; one loop schedules; bindings run in the background.

Steps 9 to 11 of the flow, as kube-scheduler runs them:

- **informers** (step 1) on Pods (all but finished ones), Nodes, Namespaces and
  ReplicationControllers. Bound Pods go to the :class:`~scheduler.cache.Cache`
  (confirming assumed ones); unbound Pods whose ``schedulerName`` is one of the
  profiles go to the :class:`~scheduler.queue.SchedulingQueue`; node and Pod
  changes move unschedulable Pods back when they may help;
- **the scheduling loop** pops one Pod at a time and runs its scheduling cycle
  synchronously (step 9: filter, score, pick; see :mod:`scheduler.schedule_one`),
  then *assumes* the Pod on the chosen node in the cache, so the next cycle
  counts it, and starts its binding cycle as a task;
- **binding cycles** (step 10) run concurrently (at most
  ``max_inflight_bindings``; the loop waits beyond that): Bind through
  ``pods/binding`` with the explanation annotations, then the ``Scheduled``
  Event. A failed binding forgets the assumption and re-queues the Pod with
  backoff; a 409 or 404 (someone else bound it, or it is gone) drops it quietly;
- **failures**: the ``FailedScheduling`` Event with the message built by
  :mod:`scheduler.framework.diagnosis`, the ``PodScheduled=False`` condition
  (and ``nominatedNodeName`` after a preemption) in one ``/status`` patch, and
  the explanation annotation in one metadata patch; each is skipped when the
  Pod already says the same. These writes, preemption's evictions and Events
  all run in the background: nothing the APIServer does blocks a cycle.

Concurrency: everything runs on one event loop. A scheduling cycle never
awaits, so handlers (which run between awaits) never see it half done.
:meth:`Scheduler.run` owns the loop and every background task it starts, and
on cancellation stops the loop, then lets bindings in flight finish briefly.
Only the leader schedules (``rt.lead``); a standby keeps its cache warm.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Callable, Collection, Coroutine, Mapping, Sequence
from typing import Any, Final, cast

import httpx
from kubernetes.client import V1Namespace, V1Node, V1Pod, V1ReplicationController

from machinery.api import NAMESPACES, NODES, PODS, REPLICATION_CONTROLLERS, Selector, now_time
from machinery.client import ApiError, Client, Conflict, NotFound, PatchType
from machinery.client.clock import Clock
from machinery.client.errors import UnexpectedResponse
from machinery.events import NORMAL, WARNING, EventBroadcaster, EventRecorder
from machinery.gctune import freeze_survivors
from machinery.informer import DeletedFinalStateUnknown, InformerFactory
from scheduler import explain, metrics
from scheduler.cache import Cache
from scheduler.framework.diagnosis import FitError, truncate_message
from scheduler.framework.interface import (
    ActionType,
    ClusterEvent,
    CycleState,
    EventResource,
    Status,
)
from scheduler.framework.runtime import ClusterView, Framework
from scheduler.framework.types import PodInfo
from scheduler.plugins.defaultpreemption import PREEMPTION_BY_SCHEDULER
from scheduler.plugins.registry import IN_TREE
from scheduler.profile import SchedulerConfig
from scheduler.queue import QueuedPodInfo, SchedulingQueue
from scheduler.schedule_one import Algorithm, ScheduleResult

log = logging.getLogger("scheduler")

#: Pods in a finished phase hold no resources: the scheduler does not watch them (kube-scheduler's selector).
POD_FIELD_SELECTOR: Final = "status.phase!=Succeeded,status.phase!=Failed"
REASON_UNSCHEDULABLE: Final = "Unschedulable"
REASON_SCHEDULER_ERROR: Final = "SchedulerError"

ASSIGNED_POD_ADD: Final = ClusterEvent(EventResource.POD, ActionType.ADD, "AssignedPodAdd")
ASSIGNED_POD_DELETE: Final = ClusterEvent(EventResource.POD, ActionType.DELETE, "AssignedPodDelete")
NODE_ADD: Final = ClusterEvent(EventResource.NODE, ActionType.ADD, "NodeAdd")
NODE_DELETE: Final = ClusterEvent(EventResource.NODE, ActionType.DELETE, "NodeDelete")


def _assigned(pod: V1Pod) -> bool:
    return bool(pod.spec is not None and pod.spec.node_name)


def _uid(pod: V1Pod) -> str:
    return (pod.metadata.uid if pod.metadata is not None else None) or ""


def node_update_action(old: V1Node, new: V1Node) -> ActionType:
    """Which of a node's scheduling properties changed (none for a heartbeat): ``nodeSchedulingPropertiesChange``."""
    action = ActionType(0)
    om, nm, os_, ns_, ost, nst = old.metadata, new.metadata, old.spec, new.spec, old.status, new.status
    if (om.labels if om else None) != (nm.labels if nm else None):
        action |= ActionType.UPDATE_NODE_LABEL
    if ((os_.taints if os_ else None) != (ns_.taints if ns_ else None)
            or bool(os_ and os_.unschedulable) != bool(ns_ and ns_.unschedulable)):
        action |= ActionType.UPDATE_NODE_TAINT
    if (ost.allocatable if ost else None) != (nst.allocatable if nst else None):
        action |= ActionType.UPDATE_NODE_ALLOCATABLE
    conditions = [[(c.type, c.status) for c in (s.conditions or ())] if s else [] for s in (ost, nst)]
    if conditions[0] != conditions[1]:
        action |= ActionType.UPDATE_NODE_CONDITION
    if (om.annotations if om else None) != (nm.annotations if nm else None):
        action |= ActionType.UPDATE_NODE_ANNOTATION
    return action


def check_profiles(config: SchedulerConfig) -> None:
    """Build every profile's plugins once, so that a bad profile is refused before anything starts.

    Raises :class:`~scheduler.framework.runtime.FrameworkError`. Plugins only
    keep their handle when built, so an empty cluster view serves.
    """
    view = ClusterView(client=cast(Client, None), snapshot=Cache(), namespace_labels=lambda namespace: None,
                       namespaces_matching=lambda selector: [],
                       replication_controller_selector=lambda namespace, name: None,
                       nominated_pods_for_node=lambda node: [], nominated_node_names=lambda: (),
                       preempt=lambda profile, pod, node, victims: None)
    for profile in config.profiles:
        Framework(profile, IN_TREE, view)


class _BindLog:
    """Pairs a binding's success with the informer's view of it, to log step 10 with the resourceVersion.

    The APIServer answers a Binding with a Status, so the Pod's new
    resourceVersion is only known when the watch delivers the bound Pod,
    which may come before or after the answer; whichever comes second logs.
    """

    def __init__(self) -> None:
        self._answered: dict[str, str] = {}
        self._seen: dict[str, str] = {}

    def bound(self, pod: PodInfo, node: str) -> None:
        rv = self._seen.pop(pod.uid, None)
        if rv is None:
            self._answered[pod.uid] = node
        else:
            log.info("bound %s to %s (rv %s)", pod.key, node, rv, extra={"step": 10})

    def seen(self, pod: V1Pod) -> None:
        uid = _uid(pod)
        node = self._answered.pop(uid, None)
        rv = (pod.metadata.resource_version if pod.metadata is not None else None) or ""
        if node is None:
            self._seen[uid] = rv
        else:
            log.info("bound %s/%s to %s (rv %s)", pod.metadata.namespace if pod.metadata else "",
                     pod.metadata.name if pod.metadata else "", node, rv, extra={"step": 10})

    def failed(self, uid: str) -> None:
        self._answered.pop(uid, None)
        self._seen.pop(uid, None)


class Scheduler:
    """kube-scheduler's ``Scheduler``: wiring, the scheduling loop, binding and failure handling."""

    def __init__(self, *, client: Client, informers: InformerFactory, events: EventBroadcaster,
                 config: SchedulerConfig, is_leading: Callable[[], bool] = lambda: True,
                 clock: Clock | None = None, rng: random.Random | None = None,
                 max_inflight_bindings: int = 64) -> None:
        self._client = client
        self._is_leading = is_leading
        self.cache = Cache()
        self._pods = informers.informer(PODS, field_selector=POD_FIELD_SELECTOR)
        self._nodes = informers.informer(NODES)
        self._namespaces = informers.informer(NAMESPACES)
        self._rcs = informers.informer(REPLICATION_CONTROLLERS)
        view = ClusterView(
            client=client, snapshot=self.cache, namespace_labels=self._namespace_labels,
            namespaces_matching=self._namespaces_matching,
            replication_controller_selector=self._rc_selector,
            nominated_pods_for_node=lambda node: self.queue.nominated_pods_for_node(node),
            nominated_node_names=lambda: self.queue.nominated_node_names(),
            preempt=self._preempt)
        self.frameworks = {p.scheduler_name: Framework(p, IN_TREE, view) for p in config.profiles}
        self._events = {name: fwk.events_to_register() for name, fwk in self.frameworks.items()}
        self._recorders = {name: events.recorder(name) for name in self.frameworks}
        first = next(iter(self.frameworks.values()))
        self.queue = SchedulingQueue(first.less, pre_enqueue=self._pre_enqueue, interest=self._interest,
                                     clock=clock, initial_backoff=config.pod_initial_backoff_seconds,
                                     max_backoff=config.pod_max_backoff_seconds)
        self.algorithm = Algorithm(self.cache, percentage_of_nodes_to_score=config.percentage_of_nodes_to_score,
                                   rng=rng)
        self._slots = asyncio.Semaphore(max_inflight_bindings)
        self._tasks: set[asyncio.Task[None]] = set()
        self._bind_log = _BindLog()
        self._pods.add_handler(on_add=self._on_pod_add, on_update=self._on_pod_update,
                               on_delete=self._on_pod_delete)
        self._nodes.add_handler(on_add=self._on_node_add, on_update=self._on_node_update,
                                on_delete=self._on_node_delete)

    # --- the loop ----------------------------------------------------------------------------------

    async def run(self) -> None:
        """Schedule until cancelled (once the caches are synced); then let bindings in flight finish."""
        for informer in (self._pods, self._nodes, self._namespaces, self._rcs):
            await informer.wait_synced()
        for name, fwk in self.frameworks.items():
            log.info("profile %s schedules with %s", name,
                     "; ".join(f"{point}: {', '.join(plugins)}" for point, plugins in fwk.list_plugins().items()
                               if plugins))
        log.info("caches synced: %d nodes, %d pods in the cache, %s", self.cache.num_nodes, len(self.cache),
                 self.queue.counts())
        freeze_survivors()
        try:
            while True:
                await self._slots.acquire()
                try:
                    qpi = await self.queue.pop()
                except BaseException:
                    self._slots.release()
                    raise
                try:
                    started = self.schedule_one(qpi)
                except Exception:
                    # A bug must not stop scheduling: report it and retry the Pod after its backoff.
                    log.exception("scheduling %s failed unexpectedly", qpi.pod_info.key)
                    self.queue.add_backoff(qpi)
                    started = False
                if not started:
                    self._slots.release()
                # Let watch events and binding answers in between two cycles.
                await asyncio.sleep(0)
        finally:
            self.queue.close()
            await self._drain()

    async def _drain(self, timeout: float = 3.0) -> None:
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=timeout)
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def _spawn(self, coro: Coroutine[Any, Any, None], name: str) -> None:
        task = asyncio.create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("%s failed", task.get_name(), exc_info=task.exception())

    # --- one Pod -------------------------------------------------------------------------------------

    def schedule_one(self, qpi: QueuedPodInfo) -> bool:
        """The scheduling cycle of one Pod; True when it started a binding cycle. Never awaits."""
        pod = qpi.pod_info
        fwk = self.frameworks.get(self._scheduler_name(pod))
        if fwk is None:
            log.error("no profile for scheduler name %r of pod %s", self._scheduler_name(pod), pod.key)
            return False
        if pod.terminating:
            self._recorders[fwk.profile_name].event(
                pod.pod, WARNING, "FailedScheduling", f"skip schedule deleting pod: {pod.key}")
            return False
        if self.cache.is_assumed(pod.uid):
            return False
        start = time.perf_counter()
        state = CycleState()
        outcome = self.algorithm.schedule_pod(fwk, state, pod)
        if isinstance(outcome, FitError):
            nominated: str | None = ""
            if fwk.has_post_filter_plugins():
                result, status = fwk.run_post_filter(state, pod, outcome.diagnosis.node_to_status)
                outcome.diagnosis.post_filter_msg = status.message
                nominated = result.nominated_node_name if result is not None else None
            self._fail(fwk, qpi, start, rejected=True, message=outcome.message,
                       plugins=outcome.diagnosis.unschedulable_plugins, nominated=nominated,
                       annotations=explain.failure_annotations(outcome.diagnosis, outcome.num_all_nodes))
            return False
        if isinstance(outcome, Status):
            self._fail(fwk, qpi, start, rejected=outcome.is_rejected(), message=outcome.message, plugins=(),
                       nominated="", annotations=None)
            return False
        return self._assume_and_bind(fwk, state, qpi, outcome, start)

    def _assume_and_bind(self, fwk: Framework, state: CycleState, qpi: QueuedPodInfo, result: ScheduleResult,
                         start: float) -> bool:
        pod = qpi.pod_info
        host = result.suggested_host
        if self.cache.pod(pod.uid) is not None:
            # Bound meanwhile (the informer saw it): nothing left to do for this Pod.
            log.info("%s is already on a node; not binding it again", pod.key)
            return False
        self.cache.assume_pod(pod, host)
        self.queue.delete_nominated_pod(pod.uid)
        status = fwk.run_reserve(state, pod, host)
        if not status.is_success():
            fwk.run_unreserve(state, pod, host)
            self.cache.forget_pod(pod)
            self._fail(fwk, qpi, start, rejected=status.is_rejected(), message=status.message,
                       plugins={status.plugin} if status.is_rejected() else (), nominated="", annotations=None)
            return False
        top = result.top[0].total if result.top else None
        log.info("%s: %d nodes, %d evaluated, %d feasible; picked %s%s", pod.key, result.num_all_nodes,
                 result.evaluated_nodes, result.feasible_nodes, host,
                 f" (score {top})" if top is not None else "", extra={"step": 9})
        annotations = explain.success_annotations(result, fwk.score_weights)
        self._spawn(self._binding_cycle(fwk, state, qpi, host, annotations, start), f"bind-{pod.key}")
        return True

    async def _binding_cycle(self, fwk: Framework, state: CycleState, qpi: QueuedPodInfo, host: str,
                             annotations: Mapping[str, str], start: float) -> None:
        pod = qpi.pod_info
        try:
            if self._is_leading():
                status = await fwk.run_bind(state, pod, host, annotations)
            else:
                status = Status.from_error("lost leadership before binding")
        finally:
            self._slots.release()
        elapsed = time.perf_counter() - start
        if status.is_success():
            metrics.SCHEDULE_ATTEMPTS.labels(metrics.SCHEDULED, fwk.profile_name).inc()
            metrics.SCHEDULING_ATTEMPT_DURATION.labels(metrics.SCHEDULED, fwk.profile_name).observe(elapsed)
            self._recorders[fwk.profile_name].event(pod.pod, NORMAL, "Scheduled",
                                                    f"Successfully assigned {pod.key} to {host}")
            self._bind_log.bound(pod, host)
            return
        self._bind_log.failed(pod.uid)
        fwk.run_unreserve(state, pod, host)
        self.cache.forget_pod(pod)
        if isinstance(status.error, Conflict | NotFound):
            # Bound by someone else, or gone: the informer brings the Pod's real state.
            log.info("binding %s to %s refused, dropping it: %s", pod.key, host, status.message)
            return
        # The assumed Pod's resources are free again; Pods waiting for them may fit.
        self.queue.move_all(ASSIGNED_POD_DELETE)
        self._fail(fwk, qpi, start, rejected=False, message=status.message, plugins=(), nominated="",
                   annotations=None)

    def _fail(self, fwk: Framework, qpi: QueuedPodInfo, start: float, *, rejected: bool, message: str,
              plugins: Collection[str], nominated: str | None, annotations: Mapping[str, str] | None) -> None:
        """``handleSchedulingFailure``: requeue, Event, condition, nomination, explanation."""
        result = metrics.UNSCHEDULABLE if rejected else metrics.ERROR
        metrics.SCHEDULE_ATTEMPTS.labels(result, fwk.profile_name).inc()
        metrics.SCHEDULING_ATTEMPT_DURATION.labels(result, fwk.profile_name).observe(time.perf_counter() - start)
        pod = qpi.pod_info
        if rejected:
            log.info("%s is unschedulable: %s", pod.key, message, extra={"step": 9})
        else:
            log.warning("error scheduling %s, retrying: %s", pod.key, message)
        current = self._pods.store.get(pod.key)
        if current is None or _uid(current) != pod.uid:
            return
        if _assigned(current):
            log.info("%s has been assigned to a node meanwhile; not retrying it", pod.key)
            return
        if current is not pod.pod:
            qpi.pod_info = pod = PodInfo(current)
        if nominated is not None:
            self.queue.add_nominated_pod(pod, nominated)
        if rejected:
            self.queue.add_unschedulable(qpi, plugins)
        else:
            self.queue.add_backoff(qpi)
        self._recorders[fwk.profile_name].event(pod.pod, WARNING, "FailedScheduling", truncate_message(message))
        self._spawn(self._report_failure(pod, REASON_UNSCHEDULABLE if rejected else REASON_SCHEDULER_ERROR, message,
                                         nominated, annotations), f"report-{pod.key}")

    async def _report_failure(self, pod: PodInfo, reason: str, message: str, nominated: str | None,
                              annotations: Mapping[str, str] | None) -> None:
        """The ``PodScheduled=False`` condition and nomination in one status patch; the explanation in another."""
        status = pod.pod.status
        condition = next((c for c in (status.conditions if status else None) or () if c.type == "PodScheduled"),
                         None)
        patch: dict[str, Any] = {}
        if condition is None or (condition.status, condition.reason, condition.message) != ("False", reason, message):
            changed = condition is None or condition.status != "False"
            patch["conditions"] = [{
                "type": "PodScheduled", "status": "False", "reason": reason, "message": message,
                "lastProbeTime": None,
                "lastTransitionTime": now_time() if changed or condition is None else condition.last_transition_time,
            }]
        current_nominated = (status.nominated_node_name if status else None) or ""
        if nominated is not None and nominated != current_nominated:
            patch["nominatedNodeName"] = nominated or None
        try:
            if patch:
                await self._client.patch(PODS, pod.name, {"status": patch}, namespace=pod.namespace,
                                         subresource="status", patch_type=PatchType.STRATEGIC_MERGE)
            if annotations is not None:
                await self._annotate(pod, annotations)
        except NotFound:
            pass
        except (ApiError, httpx.TransportError, UnexpectedResponse) as err:
            log.warning("could not record the scheduling failure of %s: %s", pod.key, err)

    async def _annotate(self, pod: PodInfo, annotations: Mapping[str, str]) -> None:
        current = (pod.pod.metadata.annotations if pod.pod.metadata else None) or {}
        wanted: dict[str, str | None] = {k: v for k, v in annotations.items() if current.get(k) != v}
        # A failed cycle has no score and no node: drop those of an earlier explanation.
        for stale in (explain.SCORE_RESULT, explain.SELECTED_NODE):
            if stale in current and stale not in annotations:
                wanted[stale] = None
        if wanted:
            await self._client.patch(PODS, pod.name, {"metadata": {"annotations": wanted}},
                                     namespace=pod.namespace, patch_type=PatchType.MERGE)

    # --- preemption ----------------------------------------------------------------------------------

    def _preempt(self, profile: str, pod: PodInfo, node: str, victims: Sequence[PodInfo]) -> None:
        lower = [p for p in self.queue.nominated_pods_for_node(node) if p.priority < pod.priority]
        for other in lower:
            # Lower-priority Pods nominated to this node may no longer fit there: let them look again.
            self.queue.delete_nominated_pod(other.uid)
        log.info("preempting %d pod(s) on %s for %s: %s", len(victims), node, pod.key,
                 ", ".join(v.key for v in victims), extra={"step": 9})
        self._spawn(self._evict(profile, pod, node, list(victims), lower), f"preempt-{pod.key}")

    async def _evict(self, profile: str, pod: PodInfo, node: str, victims: list[PodInfo],
                     lower: list[PodInfo]) -> None:
        recorder: EventRecorder = self._recorders[profile]
        condition = {"type": "DisruptionTarget", "status": "True", "reason": PREEMPTION_BY_SCHEDULER,
                     "message": f"{profile}: preempting to accommodate a higher priority pod",
                     "lastTransitionTime": now_time()}
        for victim in victims:
            try:
                await self._client.patch(PODS, victim.name, {"status": {"conditions": [condition]}},
                                         namespace=victim.namespace, subresource="status")
                await self._client.delete(PODS, victim.name, namespace=victim.namespace, uid=victim.uid)
            except NotFound:
                continue
            except (ApiError, httpx.TransportError, UnexpectedResponse) as err:
                log.warning("could not preempt %s for %s: %s", victim.key, pod.key, err)
                continue
            recorder.event(victim.pod, NORMAL, "Preempted", f"Preempted by pod {pod.uid} on node {node}")
        for other in lower:
            with contextlib.suppress(ApiError, httpx.TransportError, UnexpectedResponse):
                await self._client.patch(PODS, other.name, {"status": {"nominatedNodeName": None}},
                                         namespace=other.namespace, subresource="status")

    # --- queue and framework plumbing ------------------------------------------------------------------

    @staticmethod
    def _scheduler_name(pod: PodInfo) -> str:
        return (pod.pod.spec.scheduler_name if pod.pod.spec is not None else None) or "default-scheduler"

    def _responsible(self, pod: V1Pod) -> bool:
        name = (pod.spec.scheduler_name if pod.spec is not None else None) or "default-scheduler"
        return name in self.frameworks

    def _pre_enqueue(self, pod: PodInfo) -> Status:
        fwk = self.frameworks.get(self._scheduler_name(pod))
        return fwk.run_pre_enqueue(pod) if fwk is not None else Status()

    def _interest(self, qpi: QueuedPodInfo, event: ClusterEvent) -> bool:
        """Whether one of the plugins that rejected the Pod registered for this event.

        Kubernetes refines this with per-plugin queueing hints; kubesim's plugins register events only.
        """
        plugins = qpi.unschedulable_plugins
        if not plugins:
            return True
        registered = self._events.get(self._scheduler_name(qpi.pod_info), {})
        for plugin in plugins:
            events = registered.get(plugin)
            if events is None:
                # A plugin that registers nothing is interested in everything, as in Kubernetes.
                return True
            if any(registered_event.matches(event) for registered_event in events):
                return True
        return False

    def _namespace_labels(self, namespace: str) -> Mapping[str, str] | None:
        ns: V1Namespace | None = self._namespaces.store.get(namespace)
        if ns is None or ns.metadata is None:
            return None
        return ns.metadata.labels or {}

    def _namespaces_matching(self, selector: Selector) -> list[str]:
        return [ns.metadata.name for ns in self._namespaces.store.list()
                if ns.metadata is not None and ns.metadata.name and selector.matches(ns.metadata.labels or {})]

    def _rc_selector(self, namespace: str, name: str) -> Mapping[str, str] | None:
        rc: V1ReplicationController | None = self._rcs.store.get(f"{namespace}/{name}")
        if rc is None or rc.spec is None:
            return None
        return rc.spec.selector

    # --- informer handlers -------------------------------------------------------------------------------

    def _on_pod_add(self, pod: V1Pod) -> None:
        if _assigned(pod):
            self._add_assigned(pod)
        elif self._responsible(pod):
            self.queue.add(PodInfo(pod))

    def _add_assigned(self, pod: V1Pod) -> None:
        uid = _uid(pod)
        if self.cache.is_assumed(uid):
            self._bind_log.seen(pod)
        self.queue.delete(uid)
        self.cache.add_pod(pod)
        self.queue.move_all(ASSIGNED_POD_ADD)

    def _on_pod_update(self, old: V1Pod, new: V1Pod) -> None:
        if _assigned(new):
            if not _assigned(old):
                self._add_assigned(new)
                return
            before = self.cache.pod(_uid(new))
            after = self.cache.add_pod(new)
            action = ActionType(0)
            if before is not None and before.labels != after.labels:
                action |= ActionType.UPDATE_POD_LABEL
            if before is not None and (after.cpu < before.cpu or after.memory < before.memory):
                action |= ActionType.UPDATE_POD_SCALE_DOWN
            if action:
                self.queue.move_all(ClusterEvent(EventResource.POD, action, "AssignedPodUpdate"))
            return
        if not self._responsible(new) or self.cache.is_assumed(_uid(new)):
            # A Pod whose binding is in flight is not scheduled again.
            return
        meta_old, meta_new = old.metadata, new.metadata
        changed = old.spec != new.spec or (meta_old.labels if meta_old else None) != (meta_new.labels if meta_new else None)
        self.queue.update(PodInfo(new), changed=changed)

    def _on_pod_delete(self, obj: V1Pod | DeletedFinalStateUnknown[V1Pod]) -> None:
        pod = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        uid = _uid(pod)
        self.queue.delete(uid)
        if self.cache.remove_pod(uid) is not None:
            self.queue.move_all(ASSIGNED_POD_DELETE)

    def _on_node_add(self, node: V1Node) -> None:
        self.cache.add_node(node)
        self.queue.move_all(NODE_ADD)

    def _on_node_update(self, old: V1Node, new: V1Node) -> None:
        self.cache.add_node(new)
        action = node_update_action(old, new)
        if action:
            self.queue.move_all(ClusterEvent(EventResource.NODE, action, "NodeUpdate"))

    def _on_node_delete(self, obj: V1Node | DeletedFinalStateUnknown[V1Node]) -> None:
        node = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        if node.metadata is not None and node.metadata.name:
            self.cache.remove_node(node.metadata.name)
            self.queue.move_all(NODE_DELETE)
