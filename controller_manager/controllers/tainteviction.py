"""Taint-based eviction: Pods leave nodes with NoExecute taints they do not tolerate.

Kubernetes' taint eviction controller (``pkg/controller/tainteviction``, its
own controller since 1.29, still fed by the node lifecycle controller's
``unreachable`` and ``not-ready`` taints). For each Pod bound to a node with
NoExecute taints:

- a taint no toleration matches: the Pod is deleted at once;
- every taint tolerated, some toleration with ``tolerationSeconds``: the Pod
  is deleted when the smallest of those has passed since the controller saw
  the taint (a later, longer toleration never postpones an earlier deadline);
- every taint tolerated forever: the Pod stays;
- a taint removed (or the Pod deleted) before the deadline cancels the eviction.

An eviction marks the Pod with the ``DisruptionTarget`` condition, then
deletes it (gracefully: its kubelet finishes the job), with the Events
``TaintManagerEviction`` "Marking for deletion Pod ns/name" and, when a
scheduled eviction is called off, "Cancelling deletion of Pod ns/name".

Concurrency: informer handlers enqueue node names and Pod keys; workers
recompute the Pods' deadlines; each scheduled eviction is a clock timer that,
when it fires, hands the Pod key to the eviction workers. A key stays
recorded after its eviction succeeded, so that later updates of the
terminating Pod do not evict it twice, until the Pod or the taint is gone.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

import httpx
from kubernetes.client import V1Node, V1ObjectReference, V1Pod, V1Taint, V1Toleration

from controller_manager.context import ControllerContext
from controller_manager.podutil import DISRUPTION_TARGET, get_pod_condition
from machinery.api.kinds import NODES, PODS, ObjectKey, split_key
from machinery.api.meta import format_time, utcnow
from machinery.api.taints import NO_EXECUTE, tolerates
from machinery.client.clock import Clock, Timer
from machinery.client.errors import ApiError, NotFound
from machinery.client.objects import key_of, meta_of
from machinery.client.rest import PatchType
from machinery.events import NORMAL
from machinery.informer.shared import DeletedFinalStateUnknown
from machinery.informer.store import NODE_NAME_INDEX, index_pod_by_node_name
from machinery.workqueue import WorkQueue, run_workers

log = logging.getLogger(__name__)

NAME: Final = "taint-eviction-controller"
ALIASES: Final[tuple[str, ...]] = ()
EVENT_REASON: Final = "TaintManagerEviction"
#: Workers per queue, and attempts per eviction (Kubernetes' ``UpdateWorkerSize`` and ``retries``).
UPDATE_WORKERS: Final = 8
EVICTION_ATTEMPTS: Final = 5
_DISRUPTION_REASON: Final = "DeletionByTaintManager"
_DISRUPTION_MESSAGE: Final = "Taint manager: deleting due to NoExecute taint"

_PodUpdate = tuple[ObjectKey, str]
#: What a taint change means for one Pod.
Outcome = Literal["now", "later", "stays"]


@dataclass(slots=True)
class ScheduledEviction:
    created_at: float
    fire_at: float
    #: The pending timer; None once it fired (the key then blocks re-adding until cancelled).
    timer: Timer | None


class TimedEvictions:
    """Kubernetes' ``TimedWorkerQueue``: one timer per Pod key; ``fire(key)`` runs when it is due."""

    def __init__(self, clock: Clock, fire: Callable[[ObjectKey], None]) -> None:
        self._clock = clock
        self._fire = fire
        self._scheduled: dict[ObjectKey, ScheduledEviction] = {}

    def add(self, key: ObjectKey, created_at: float, fire_at: float) -> None:
        """Schedule ``key``, unless it is already scheduled or was evicted and not cancelled since."""
        if key in self._scheduled:
            return
        entry = ScheduledEviction(created_at, fire_at, None)
        self._scheduled[key] = entry
        if fire_at <= self._clock.now():
            self._fire(key)
            return
        entry.timer = self._clock.call_at(fire_at, lambda: self._due(key, entry))

    def pending(self, key: ObjectKey) -> ScheduledEviction | None:
        """The eviction still waiting for its time, if any."""
        entry = self._scheduled.get(key)
        return entry if entry is not None and entry.timer is not None else None

    def cancel(self, key: ObjectKey) -> bool:
        """Forget ``key``; True when a pending eviction was called off."""
        entry = self._scheduled.pop(key, None)
        if entry is None or entry.timer is None:
            return False
        entry.timer.cancel()
        return True

    def fired(self, key: ObjectKey) -> bool:
        entry = self._scheduled.get(key)
        return entry is not None and entry.timer is None

    def failed(self, key: ObjectKey) -> None:
        """The eviction did not happen: a later update may schedule it again."""
        entry = self._scheduled.get(key)
        if entry is not None and entry.timer is None:
            del self._scheduled[key]

    def _due(self, key: ObjectKey, entry: ScheduledEviction) -> None:
        if self._scheduled.get(key) is entry:
            entry.timer = None
            self._fire(key)


class TaintEvictionController:
    """Evicts Pods from nodes with NoExecute taints they do not tolerate (or tolerate only for a while)."""

    def __init__(self, ctx: ControllerContext) -> None:
        self._pods = ctx.informers.informer(PODS, indexers={NODE_NAME_INDEX: index_pod_by_node_name})
        self._nodes = ctx.informers.informer(NODES)
        self._client = ctx.client
        self._clock = ctx.clock
        self._is_leading = ctx.is_leading
        self._recorder = ctx.events.recorder(NAME)
        #: NoExecute taints of every node that has some.
        self._tainted: dict[str, list[V1Taint]] = {}
        self._node_updates: WorkQueue[str] = WorkQueue("noexec_taint_node", clock=ctx.clock)
        self._pod_updates: WorkQueue[_PodUpdate] = WorkQueue("noexec_taint_pod", clock=ctx.clock)
        self._evictions_due: WorkQueue[ObjectKey] = WorkQueue("noexec_taint_eviction", clock=ctx.clock)
        self.evictions = TimedEvictions(ctx.clock, self._evictions_due.add)
        self._pods.add_handler(on_add=self._pod_added, on_update=self._pod_updated,
                               on_delete=self._pod_deleted)
        self._nodes.add_handler(on_add=self._node_added, on_update=self._node_updated,
                                on_delete=self._node_deleted)

    async def run(self) -> None:
        await self._pods.wait_synced()
        await self._nodes.wait_synced()
        log.info("%s: caches synced, starting workers", NAME)
        async with asyncio.TaskGroup() as group:
            group.create_task(run_workers(self._node_updates, self._handle_node_update,
                                          workers=UPDATE_WORKERS), name="taint-eviction-nodes")
            group.create_task(run_workers(self._pod_updates, self._handle_pod_update,
                                          workers=UPDATE_WORKERS), name="taint-eviction-pods")
            group.create_task(run_workers(self._evictions_due, self._evict, workers=UPDATE_WORKERS),
                              name="taint-eviction-evictions")

    # --- handlers --------------------------------------------------------------------------

    def _pod_added(self, pod: V1Pod) -> None:
        self._pod_updates.add((key_of(pod), _node_name(pod)))

    def _pod_updated(self, old: V1Pod, new: V1Pod) -> None:
        if _node_name(old) == _node_name(new) and _tolerations(old) == _tolerations(new):
            return
        self._pod_updates.add((key_of(new), _node_name(new)))

    def _pod_deleted(self, obj: V1Pod | DeletedFinalStateUnknown[V1Pod]) -> None:
        pod = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        self._pod_updates.add((key_of(pod), _node_name(pod)))

    def _node_added(self, node: V1Node) -> None:
        self._node_updates.add(meta_of(node).name or "")

    def _node_updated(self, old: V1Node, new: V1Node) -> None:
        if no_execute_taints(old) != no_execute_taints(new):
            self._node_updates.add(meta_of(new).name or "")

    def _node_deleted(self, obj: V1Node | DeletedFinalStateUnknown[V1Node]) -> None:
        node = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        self._node_updates.add(meta_of(node).name or "")

    # --- workers ---------------------------------------------------------------------------

    async def _handle_node_update(self, node_name: str) -> None:
        node = self._nodes.store.get(node_name)
        if node is None:
            self._tainted.pop(node_name, None)
            return
        taints = no_execute_taints(node)
        # The taints are recorded before the Pods are read: a Pod bound meanwhile is handled by its own
        # update, which reads them.
        if taints:
            self._tainted[node_name] = taints
        else:
            self._tainted.pop(node_name, None)
        pods = self._pods.store.by_index(NODE_NAME_INDEX, node_name)
        if not pods:
            return
        if not taints:
            for pod in pods:
                self._cancel_with_event(key_of(pod))
            return
        now = self._clock.now()
        outcomes = [self._process_pod_on_node(key_of(pod), _tolerations(pod), taints, now) for pod in pods]
        # One line per node, not per Pod: a node with thousands of Pods must not flood the log.
        log.info("node %s has NoExecute taints %s: of its %d Pods, %d are evicted now, %d later, %d stay",
                 node_name, ", ".join(f"{t.key}:{t.effect}" for t in taints), len(pods),
                 outcomes.count("now"), outcomes.count("later"), outcomes.count("stays"))

    async def _handle_pod_update(self, update: _PodUpdate) -> None:
        key, node_name = update
        pod = self._pods.store.get(key)
        if pod is None:
            self._cancel_with_event(key)
            return
        # A stale update (the Pod moved since) is somebody else's to handle.
        if _node_name(pod) != node_name or not node_name:
            return
        taints = self._tainted.get(node_name)
        if taints is None:
            return
        self._process_pod_on_node(key, _tolerations(pod), taints, self._clock.now())

    def _process_pod_on_node(self, key: ObjectKey, tolerations: Sequence[V1Toleration],
                             taints: Sequence[V1Taint], now: float) -> Outcome:
        """Schedule, keep or cancel the Pod's eviction for these taints (``processPodOnNode``)."""
        all_tolerated, used = matching_tolerations(taints, tolerations)
        if not all_tolerated:
            self._cancel_with_event(key)
            self.evictions.add(key, now, now)
            return "now"
        wait = min_toleration_seconds(used)
        if wait < 0:
            self._cancel_with_event(key)
            return "stays"
        start, fire_at = now, now + wait
        scheduled = self.evictions.pending(key)
        if scheduled is not None:
            start = scheduled.created_at
            if start + wait < fire_at:
                # The deadline already set is earlier: a newer, longer toleration never postpones it.
                return "later"
            self._cancel_with_event(key)
        self.evictions.add(key, start, fire_at)
        return "now" if fire_at <= now else "later"

    def _cancel_with_event(self, key: ObjectKey) -> None:
        if self.evictions.cancel(key):
            self._recorder.event(_pod_reference(key), NORMAL, EVENT_REASON,
                                 f"Cancelling deletion of Pod {key}")

    async def _evict(self, key: ObjectKey) -> None:
        if not self.evictions.fired(key) or not self._is_leading():
            return
        log.debug("%s: deleting Pod %s", NAME, key)
        self._recorder.event(_pod_reference(key), NORMAL, EVENT_REASON, f"Marking for deletion Pod {key}")
        namespace, name = split_key(key)
        for attempt in range(1, EVICTION_ATTEMPTS + 1):
            try:
                await self._mark_and_delete(namespace or "", name)
                return
            except NotFound:
                return
            except (ApiError, httpx.TransportError) as err:
                if attempt == EVICTION_ATTEMPTS:
                    log.warning("%s: could not delete Pod %s: %s", NAME, key, err)
                    self.evictions.failed(key)
                    return
            await self._clock.sleep(0.01)

    async def _mark_and_delete(self, namespace: str, name: str) -> None:
        """``addConditionAndDeletePod``: the DisruptionTarget condition first, then the graceful delete."""
        pod = await self._client.get(PODS, name, namespace=namespace)
        condition = get_pod_condition(pod, DISRUPTION_TARGET)
        if condition is None or condition.status != "True" or condition.reason != _DISRUPTION_REASON:
            patch: dict[str, Any] = {
                "metadata": {"uid": meta_of(pod).uid},
                "status": {"conditions": [{"type": DISRUPTION_TARGET, "status": "True",
                                           "lastTransitionTime": format_time(utcnow()),
                                           "reason": _DISRUPTION_REASON, "message": _DISRUPTION_MESSAGE}]}}
            await self._client.patch(PODS, name, patch, namespace=namespace, subresource="status",
                                     patch_type=PatchType.STRATEGIC_MERGE)
        await self._client.delete(PODS, name, namespace=namespace)


def no_execute_taints(node: V1Node) -> list[V1Taint]:
    taints = node.spec.taints if node.spec is not None else None
    return [t for t in taints or () if t.effect == NO_EXECUTE]


def matching_tolerations(taints: Sequence[V1Taint], tolerations: Sequence[V1Toleration],
                         ) -> tuple[bool, list[V1Toleration]]:
    """``GetMatchingTolerations``: whether every taint is tolerated, and the first toleration of each."""
    used: list[V1Toleration] = []
    for taint in taints:
        match = next((t for t in tolerations if tolerates(t, taint)), None)
        if match is None:
            return False, []
        used.append(match)
    return True, used


def min_toleration_seconds(tolerations: Sequence[V1Toleration]) -> float:
    """``getMinTolerationTime``: the shortest ``tolerationSeconds`` (0 for none used), or -1 for forever."""
    if not tolerations:
        return 0.0
    shortest: int | None = None
    for toleration in tolerations:
        seconds = toleration.toleration_seconds
        if seconds is None:
            continue
        if seconds <= 0:
            return 0.0
        shortest = seconds if shortest is None else min(shortest, seconds)
    return -1.0 if shortest is None else float(shortest)


def _node_name(pod: V1Pod) -> str:
    return (pod.spec.node_name if pod.spec is not None else None) or ""


def _tolerations(pod: V1Pod) -> list[V1Toleration]:
    return list((pod.spec.tolerations if pod.spec is not None else None) or ())


def _pod_reference(key: ObjectKey) -> V1ObjectReference:
    namespace, name = split_key(key)
    return V1ObjectReference(api_version="v1", kind="Pod", name=name, namespace=namespace)
