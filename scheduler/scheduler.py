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
  ``max_inflight_bindings``; the loop waits beyond that): wait while a Permit
  plugin holds the Pod (without holding a binding slot), PreBind, Bind through
  ``pods/binding`` with the explanation annotations, then the ``Scheduled``
  Event and PostBind. A failed binding forgets the assumption and re-queues the
  Pod with backoff; a 409 or 404 (someone else bound it, or it is gone) drops
  it quietly; a Permit rejection makes it unschedulable;
- **failures**: the ``FailedScheduling`` Event with the message built by
  :mod:`scheduler.framework.diagnosis`, the ``PodScheduled=False`` condition
  (and ``nominatedNodeName`` after a preemption) in one ``/status`` patch, and
  the explanation annotation in one metadata patch; each is skipped when the
  Pod already says the same. These writes, preemption's evictions and Events
  all run in the background: nothing the APIServer does blocks a cycle.

Each cycle's full per-node results go to a :class:`~scheduler.decisions.DecisionLog`
(``/debug/decisions``). :meth:`Scheduler.apply_config` swaps the profiles
between two cycles (the configuration reloaded on SIGHUP or from its
ConfigMap, see :mod:`scheduler.reload`); binding cycles in flight finish
with the profile they started with.

Concurrency: everything runs on one event loop. A scheduling cycle never
awaits, so handlers (which run between awaits) never see it half done.
:meth:`Scheduler.run` owns the loop and every background task it starts, and
on cancellation stops the loop, then lets bindings in flight finish briefly.
Only the leader schedules (``rt.lead``); a standby keeps its cache warm.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import random
import time
from collections.abc import Callable, Collection, Coroutine, Iterable, Mapping, Sequence
from typing import Any, Final, cast

import httpx
from kubernetes.client import V1Namespace, V1Node, V1Pod

from machinery.api import NAMESPACES, NODES, PODS, REPLICATION_CONTROLLERS, Selector, now_time
from machinery.api.kinds import (
    CSI_NODES,
    PERSISTENT_VOLUME_CLAIMS,
    PERSISTENT_VOLUMES,
    REPLICA_SETS,
    SERVICES,
    STATEFUL_SETS,
    STORAGE_CLASSES,
    ResourceInfo,
)
from machinery.client import ApiError, Client, Conflict, NotFound, PatchType
from machinery.client.clock import Clock, RealClock
from machinery.client.errors import UnexpectedResponse
from machinery.events import NORMAL, WARNING, EventBroadcaster, EventRecorder
from machinery.gctune import freeze_survivors
from machinery.informer import DeletedFinalStateUnknown, InformerFactory, SharedInformer
from machinery.informer.store import NAMESPACE_INDEX, Store, index_by_namespace
from scheduler import explain, metrics
from scheduler.cache import Cache
from scheduler.decisions import Decision, DecisionLog
from scheduler.framework.diagnosis import FitError, truncate_message
from scheduler.framework.interface import (
    ActionType,
    ClusterEvent,
    CycleState,
    EventResource,
    PluginFactory,
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
#: The scheduler's configuration changed: every unschedulable Pod is worth another try.
CONFIG_CHANGED: Final = ClusterEvent(EventResource.WILDCARD, ActionType.ALL, "SchedulerConfigChanged")


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


def check_profiles(config: SchedulerConfig, registry: Mapping[str, PluginFactory] = IN_TREE) -> None:
    """Build every profile's plugins once, so that a bad profile is refused before anything starts.

    Raises :class:`~scheduler.framework.runtime.FrameworkError` (an unknown
    plugin, bad args). Plugins only keep their handle when built, so an empty
    cluster view serves; ``registry`` includes any out-of-tree plugins.
    """
    view = ClusterView(client=cast(Client, None), snapshot=Cache(), namespace_labels=lambda namespace: None,
                       namespaces_matching=lambda selector: [],
                       lister=lambda resource: None,
                       nominated_pods_for_node=lambda node: [], nominated_node_names=lambda: (),
                       preempt=lambda profile, pod, node, victims: None)
    for profile in config.profiles:
        Framework(profile, registry, view)


def _status_doc(status: Status) -> dict[str, Any]:
    return {"plugin": status.plugin, "code": str(status.code), "reasons": list(status.reasons)}


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


#: The resources plugins read through ``Handle.lister``: the owners and Services that give PodTopologySpread
#: its default selector, and what VolumeBinding and NodeVolumeLimits decide on.
LISTED: Final = (SERVICES, REPLICATION_CONTROLLERS, REPLICA_SETS, STATEFUL_SETS, PERSISTENT_VOLUME_CLAIMS,
                 PERSISTENT_VOLUMES, STORAGE_CLASSES, CSI_NODES)


#: Resources whose changes may make Pods the volume plugins rejected schedulable.
_VOLUME_EVENTS: Final[dict[ResourceInfo[Any], EventResource]] = {PERSISTENT_VOLUME_CLAIMS: EventResource.PERSISTENT_VOLUME_CLAIM,
                         PERSISTENT_VOLUMES: EventResource.PERSISTENT_VOLUME,
                         STORAGE_CLASSES: EventResource.STORAGE_CLASS, CSI_NODES: EventResource.CSI_NODE}


class Scheduler:
    """kube-scheduler's ``Scheduler``: wiring, the scheduling loop, binding and failure handling."""

    def __init__(self, *, client: Client, informers: InformerFactory, events: EventBroadcaster,
                 config: SchedulerConfig, is_leading: Callable[[], bool] = lambda: True,
                 clock: Clock | None = None, rng: random.Random | None = None,
                 max_inflight_bindings: int = 64, registry: Mapping[str, PluginFactory] = IN_TREE,
                 decisions: DecisionLog | None = None) -> None:
        self._client = client
        self._is_leading = is_leading
        self._registry = registry
        self._events_broadcaster = events
        self.decisions = decisions if decisions is not None else DecisionLog()
        rng = rng or random.Random()
        self.cache = Cache()
        self._pods = informers.informer(PODS, field_selector=POD_FIELD_SELECTOR)
        self._nodes = informers.informer(NODES)
        self._namespaces = informers.informer(NAMESPACES)
        # What plugins read besides Pods and Nodes: default spreading selectors and volumes.
        self._listed = {(r.group, r.plural): informers.informer(r, indexers={NAMESPACE_INDEX: index_by_namespace})
                        for r in LISTED}

        view = ClusterView(
            client=client, snapshot=self.cache, namespace_labels=self._namespace_labels,
            namespaces_matching=self._namespaces_matching,
            lister=self._lister,
            nominated_pods_for_node=lambda node: self.queue.nominated_pods_for_node(node),
            nominated_node_names=lambda: self.queue.nominated_node_names(),
            preempt=self._preempt, informers=informers, rng=rng, activate=self._activate,
            clock=clock or RealClock())
        self._view = view
        self.config = config
        self.frameworks = {p.scheduler_name: Framework(p, registry, view) for p in config.profiles}
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
        for resource, event in _VOLUME_EVENTS.items():
            self._listed[(resource.group, resource.plural)].add_handler(
                on_add=functools.partial(self._volume_event, event, ActionType.ADD),
                on_update=functools.partial(self._volume_event, event, ActionType.UPDATE))

    # --- the loop ----------------------------------------------------------------------------------

    async def run(self) -> None:
        """Schedule until cancelled (once the caches are synced); then let bindings in flight finish."""
        informers: list[SharedInformer[Any]] = [self._pods, self._nodes, self._namespaces, *self._listed.values()]
        for informer in informers:
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

    def apply_config(self, config: SchedulerConfig) -> None:
        """Schedule with ``config`` from the next cycle on (raises FrameworkError, keeping the old one).

        Every profile is built before anything changes, so a bad configuration
        leaves the scheduler as it was. Pods queued for a profile that is gone
        wait until a profile of their scheduler name comes back.
        """
        frameworks = {p.scheduler_name: Framework(p, self._registry, self._view) for p in config.profiles}
        self.frameworks = frameworks
        self._events = {name: fwk.events_to_register() for name, fwk in frameworks.items()}
        self._recorders = {name: self._recorders.get(name) or self._events_broadcaster.recorder(name)
                           for name in frameworks}
        self.queue.set_less(next(iter(frameworks.values())).less)
        self.queue.set_backoff(config.pod_initial_backoff_seconds, config.pod_max_backoff_seconds)
        self.algorithm.set_percentage_of_nodes_to_score(config.percentage_of_nodes_to_score)
        self.config = config
        # A new profile may schedule Pods the old one could not (or that waited for a missing profile).
        self.queue.move_all(CONFIG_CHANGED)

    def _activate(self, uids: Iterable[str]) -> None:
        self.queue.activate(uids)

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
        decision = self.decisions.record(Decision(pod.namespace, pod.name, pod.uid, fwk.profile_name, qpi.attempts,
                                                  now_time(), fwk.score_weights, outcome))
        if isinstance(outcome, FitError):
            nominated: str | None = ""
            if fwk.has_post_filter_plugins():
                result, status = fwk.run_post_filter(state, pod, outcome.diagnosis.node_to_status)
                outcome.diagnosis.post_filter_msg = status.message
                nominated = result.nominated_node_name if result is not None else None
                if status.message:
                    decision.extra["postFilter"] = _status_doc(status)
            self._fail(fwk, qpi, start, rejected=True, message=outcome.message,
                       plugins=outcome.diagnosis.unschedulable_plugins, nominated=nominated,
                       annotations=explain.failure_annotations(outcome.diagnosis, outcome.num_all_nodes))
            return False
        if isinstance(outcome, Status):
            self._fail(fwk, qpi, start, rejected=outcome.is_rejected(), message=outcome.message, plugins=(),
                       nominated="", annotations=None)
            return False
        return self._assume_and_bind(fwk, state, qpi, outcome, start, decision)

    def _assume_and_bind(self, fwk: Framework, state: CycleState, qpi: QueuedPodInfo, result: ScheduleResult,
                         start: float, decision: Decision) -> bool:
        pod = qpi.pod_info
        host = result.suggested_host
        if self.cache.pod(pod.uid) is not None:
            # Bound meanwhile (the informer saw it): nothing left to do for this Pod.
            log.info("%s is already on a node; not binding it again", pod.key)
            return False
        self.cache.assume_pod(pod, host)
        self.queue.delete_nominated_pod(pod.uid)
        status = fwk.run_reserve(state, pod, host)
        if status.is_success():
            status = fwk.run_permit(state, pod, host)
        if not status.is_success() and not status.is_wait():
            decision.extra["reserveOrPermit"] = _status_doc(status)
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
            status = await self._wait_on_permit(fwk, pod)
            if status.is_success() and self._is_leading():
                # PreBind writes (VolumeBinding binds PVCs): only the leader gets that far.
                status = await fwk.run_pre_bind(state, pod, host)
                if status.is_success():
                    status = await fwk.run_bind(state, pod, host, annotations)
            elif status.is_success():
                status = Status.from_error("lost leadership before binding")
        finally:
            self._slots.release()
        elapsed = time.perf_counter() - start
        if status.is_success():
            metrics.SCHEDULE_ATTEMPTS.labels(metrics.SCHEDULED, fwk.profile_name).inc()
            metrics.SCHEDULING_ATTEMPT_DURATION.labels(metrics.SCHEDULED, fwk.profile_name).observe(elapsed)
            self._recorder(fwk).event(pod.pod, NORMAL, "Scheduled", f"Successfully assigned {pod.key} to {host}")
            self._bind_log.bound(pod, host)
            fwk.run_post_bind(state, pod, host)
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
        self._fail(fwk, qpi, start, rejected=status.is_rejected(), message=status.message,
                   plugins={status.plugin} if status.is_rejected() and status.plugin else (), nominated="",
                   annotations=None)

    async def _wait_on_permit(self, fwk: Framework, pod: PodInfo) -> Status:
        """Wait while a Permit plugin holds the Pod, giving its binding slot back meanwhile.

        A gang larger than ``max_inflight_bindings`` would otherwise hold every
        slot while waiting for members that can then never be scheduled.
        """
        if fwk.get_waiting_pod(pod.uid) is None:
            return await fwk.wait_on_permit(pod)
        self._slots.release()
        try:
            return await fwk.wait_on_permit(pod)
        finally:
            await self._slots.acquire()

    def _recorder(self, fwk: Framework) -> EventRecorder:
        recorder = self._recorders.get(fwk.profile_name)
        if recorder is None:
            # A binding that outlived its profile (the configuration changed meanwhile).
            recorder = self._recorders[fwk.profile_name] = self._events_broadcaster.recorder(fwk.profile_name)
        return recorder

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
        self._recorder(fwk).event(pod.pod, WARNING, "FailedScheduling", truncate_message(message))
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
        recorder: EventRecorder = self._recorders.get(profile) or self._events_broadcaster.recorder(profile)
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
        if not plugins or event.resource is EventResource.WILDCARD:
            # An event about everything (a new configuration) may help any Pod.
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

    def _lister(self, resource: ResourceInfo[Any]) -> Store[Any] | None:
        informer = self._listed.get((resource.group, resource.plural))
        return informer.store if informer is not None else None

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

    def _volume_event(self, resource: EventResource, action: ActionType, *_objects: Any) -> None:
        label = f"{resource.value.rsplit('/', 1)[-1]}{'Add' if action is ActionType.ADD else 'Update'}"
        self.queue.move_all(ClusterEvent(resource, action, label))

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
