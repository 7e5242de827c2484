"""The scheduling queue: activeQ, backoffQ and unschedulable Pods, as kube-scheduler's PriorityQueue.

Where a Pod waiting for a node is:

- **activeQ**, a heap in the QueueSort plugin's order (higher priority, then
  earlier queued): :meth:`SchedulingQueue.pop` hands its head to the next
  scheduling cycle;
- **backoffQ**, after a failed attempt that should be retried soon (an error,
  or an event that may have helped arrived while it backs off): it waits
  ``initial * 2**(attempts-1)`` seconds (1 s doubling to 10 s by default), then
  goes back to activeQ;
- **unschedulable**, after a failed attempt that only a cluster change can
  fix: :meth:`SchedulingQueue.move_all` moves it when an event that one of the
  plugins that rejected it registered for happens (node added or changed,
  Pod deleted...), and it moves anyway after 5 minutes; a Pod gated by a
  PreEnqueue plugin (``schedulingGates``) waits here too, until its own update
  lets it in.

Kubernetes also tracks events that arrive while a Pod is in a scheduling
cycle ("in-flight events"). kubesim needs no such tracking: a cycle runs from
:meth:`pop` to :meth:`add_unschedulable` without awaiting, so no event can
arrive in between (binding failures, which come later, go to backoffQ).

The queue also holds the *nominator*: which Pods are nominated to which node
after a preemption, so that other Pods leave them room.

Time comes from a :class:`~machinery.client.clock.Clock` (tests use virtual
time); the queue arms at most two timers (the next backoff expiry, the next
unschedulable timeout) and never polls. Everything runs on the event loop;
:meth:`pop` is the only coroutine.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
from collections.abc import Callable, Collection, Iterable
from typing import Final

from machinery.client.clock import Clock, RealClock, Timer
from scheduler import metrics
from scheduler.framework.interface import ClusterEvent, Status
from scheduler.framework.types import PodInfo

log = logging.getLogger(__name__)

#: How long a Pod stays unschedulable before it is retried anyway (``podMaxInUnschedulablePodsDuration``).
MAX_IN_UNSCHEDULABLE: Final = 300.0

#: The event that moves Pods that stayed unschedulable too long.
UNSCHEDULABLE_TIMEOUT: Final = "UnschedulableTimeout"


class QueuedPodInfo:
    """A Pod in the queue, with its scheduling history."""

    __slots__ = ("attempts", "backoff_expiry", "gated_by", "initial_attempt", "pod_info", "timestamp",
                 "unschedulable_plugins")

    def __init__(self, pod_info: PodInfo, timestamp: float) -> None:
        self.pod_info = pod_info
        #: When the Pod was last put in a queue (the QueueSort order and the 5-minute timeout use it).
        self.timestamp = timestamp
        #: Scheduling attempts so far.
        self.attempts = 0
        #: When the first attempt started (for the end-to-end latency).
        self.initial_attempt: float | None = None
        #: Plugins that rejected the Pod in its last attempt; empty after an error.
        self.unschedulable_plugins: frozenset[str] = frozenset()
        #: The PreEnqueue status keeping the Pod out of activeQ, if any.
        self.gated_by: Status | None = None
        self.backoff_expiry = 0.0

    def __repr__(self) -> str:
        return f"QueuedPodInfo({self.pod_info.key}, attempts={self.attempts})"


#: Whether ``event`` may make this unschedulable Pod schedulable.
EventInterest = Callable[[QueuedPodInfo, ClusterEvent], bool]


class _Entry:
    """A heap entry of activeQ, ordered by the QueueSort plugin; dropped lazily when removed."""

    __slots__ = ("less", "qpi", "removed")

    def __init__(self, qpi: QueuedPodInfo, less: Callable[[QueuedPodInfo, QueuedPodInfo], bool]) -> None:
        self.qpi = qpi
        self.less = less
        self.removed = False

    def __lt__(self, other: _Entry) -> bool:
        return self.less(self.qpi, other.qpi)


class SchedulingQueue:
    """Pods waiting to be scheduled (see the module docstring)."""

    def __init__(self, less: Callable[[QueuedPodInfo, QueuedPodInfo], bool], *,
                 pre_enqueue: Callable[[PodInfo], Status], interest: EventInterest,
                 clock: Clock | None = None, initial_backoff: float = 1.0, max_backoff: float = 10.0,
                 max_in_unschedulable: float = MAX_IN_UNSCHEDULABLE) -> None:
        self._less = less
        self._pre_enqueue = pre_enqueue
        self._interest = interest
        self._clock = clock or RealClock()
        self._initial_backoff = initial_backoff
        self._max_backoff = max_backoff
        self._max_in_unschedulable = max_in_unschedulable
        self._active: list[_Entry] = []
        self._active_by_uid: dict[str, _Entry] = {}
        self._backoff: list[tuple[float, int, str]] = []
        self._backoff_by_uid: dict[str, QueuedPodInfo] = {}
        self._unschedulable: dict[str, QueuedPodInfo] = {}
        self._seq = itertools.count()
        self._ready = asyncio.Event()
        self._closed = False
        self._backoff_timer: Timer | None = None
        self._backoff_timer_at: float | None = None
        self._timeout_timer: Timer | None = None
        self._nominated: dict[str, dict[str, PodInfo]] = {}
        self._nominated_node: dict[str, str] = {}
        metrics.PENDING_PODS.labels("active").set_function(lambda: len(self._active_by_uid))
        metrics.PENDING_PODS.labels("backoff").set_function(lambda: len(self._backoff_by_uid))
        metrics.PENDING_PODS.labels("unschedulable").set_function(
            lambda: sum(1 for q in self._unschedulable.values() if q.gated_by is None))
        metrics.PENDING_PODS.labels("gated").set_function(
            lambda: sum(1 for q in self._unschedulable.values() if q.gated_by is not None))

    # --- reading -----------------------------------------------------------------------------------

    def counts(self) -> dict[str, int]:
        """How many Pods are in each queue (``scheduler_pending_pods``)."""
        gated = sum(1 for q in self._unschedulable.values() if q.gated_by is not None)
        return {"active": len(self._active_by_uid), "backoff": len(self._backoff_by_uid),
                "unschedulable": len(self._unschedulable) - gated, "gated": gated}

    def keys(self) -> dict[str, list[str]]:
        """Which Pods (``namespace/name``) wait in each queue, as ``/debug/queue`` shows them."""
        unschedulable = [q for q in self._unschedulable.values() if q.gated_by is None]
        gated = [q for q in self._unschedulable.values() if q.gated_by is not None]
        return {"active": sorted(e.qpi.pod_info.key for e in self._active_by_uid.values()),
                "backoff": sorted(q.pod_info.key for q in self._backoff_by_uid.values()),
                "unschedulable": sorted(q.pod_info.key for q in unschedulable),
                "gated": sorted(q.pod_info.key for q in gated)}

    def get(self, uid: str) -> QueuedPodInfo | None:
        entry = self._active_by_uid.get(uid)
        if entry is not None:
            return entry.qpi
        return self._backoff_by_uid.get(uid) or self._unschedulable.get(uid)

    def __contains__(self, uid: object) -> bool:
        return uid in self._active_by_uid or uid in self._backoff_by_uid or uid in self._unschedulable

    # --- Pods coming and going -----------------------------------------------------------------------

    def add(self, pod: PodInfo) -> None:
        """A new unscheduled Pod (or one seen again after a failed binding)."""
        if pod.uid in self:
            self.update(pod)
            return
        nominated = pod.pod.status.nominated_node_name if pod.pod.status is not None else None
        if nominated:
            self.add_nominated_pod(pod, nominated)
        self._enqueue(QueuedPodInfo(pod, self._clock.now()))

    def _enqueue(self, qpi: QueuedPodInfo) -> None:
        """Into activeQ, unless a PreEnqueue plugin gates it."""
        status = self._pre_enqueue(qpi.pod_info)
        if not status.is_success():
            qpi.gated_by = status
            self._unschedulable[qpi.pod_info.uid] = qpi
            self._arm_timeout()
            return
        qpi.gated_by = None
        self._push_active(qpi)

    def update(self, pod: PodInfo, *, changed: bool = True) -> None:
        """A newer version of a queued Pod; ``changed`` when its spec or labels changed (not just status).

        A changed unschedulable Pod is retried (after its backoff), since the
        change may be what it lacked; a gated one is re-checked for its gates.
        """
        uid = pod.uid
        entry = self._active_by_uid.get(uid)
        if entry is not None:
            entry.qpi.pod_info = pod
            return
        qpi = self._backoff_by_uid.get(uid)
        if qpi is not None:
            qpi.pod_info = pod
            return
        qpi = self._unschedulable.get(uid)
        if qpi is None:
            self.add(pod)
            return
        qpi.pod_info = pod
        if qpi.gated_by is not None:
            del self._unschedulable[uid]
            self._enqueue(qpi)
        elif changed:
            del self._unschedulable[uid]
            self._requeue(qpi)

    def delete(self, uid: str) -> None:
        self.delete_nominated_pod(uid)
        entry = self._active_by_uid.pop(uid, None)
        if entry is not None:
            entry.removed = True
            self._refresh_ready()
            return
        if self._backoff_by_uid.pop(uid, None) is None:
            self._unschedulable.pop(uid, None)

    async def pop(self) -> QueuedPodInfo:
        """The next Pod to schedule, waiting while activeQ is empty. Raises CancelledError when closed."""
        while True:
            while self._active:
                entry = heapq.heappop(self._active)
                if entry.removed:
                    continue
                del self._active_by_uid[entry.qpi.pod_info.uid]
                self._refresh_ready()
                qpi = entry.qpi
                qpi.attempts += 1
                if qpi.initial_attempt is None:
                    qpi.initial_attempt = self._clock.now()
                return qpi
            self._ready.clear()
            if self._closed:
                raise asyncio.CancelledError("the scheduling queue is closed")
            await self._ready.wait()

    def add_unschedulable(self, qpi: QueuedPodInfo, unschedulable_plugins: Collection[str]) -> None:
        """After a failed attempt: wait for a helpful event, or back off when no plugin rejected it (an error)."""
        uid = qpi.pod_info.uid
        if uid in self:
            return
        qpi.timestamp = self._clock.now()
        qpi.unschedulable_plugins = frozenset(unschedulable_plugins)
        qpi.backoff_expiry = qpi.timestamp + self._backoff_duration(qpi.attempts)
        if not qpi.unschedulable_plugins:
            self._push_backoff(qpi)
            return
        self._unschedulable[uid] = qpi
        self._arm_timeout()

    def add_backoff(self, qpi: QueuedPodInfo) -> None:
        """After a failed binding: retry once the backoff is over."""
        if qpi.pod_info.uid in self:
            return
        qpi.timestamp = self._clock.now()
        qpi.unschedulable_plugins = frozenset()
        qpi.backoff_expiry = qpi.timestamp + self._backoff_duration(qpi.attempts)
        self._push_backoff(qpi)

    def move_all(self, event: ClusterEvent) -> int:
        """Move the unschedulable Pods this event may help to backoffQ or activeQ; how many moved."""
        if not self._unschedulable:
            return 0
        moving = [qpi for qpi in self._unschedulable.values()
                  if qpi.gated_by is None and self._interest(qpi, event)]
        for qpi in moving:
            del self._unschedulable[qpi.pod_info.uid]
            self._requeue(qpi)
        if moving:
            log.debug("%s moved %d unschedulable pods", event.label, len(moving))
        return len(moving)

    def close(self) -> None:
        """Wake :meth:`pop` for good and stop the timers."""
        self._closed = True
        self._ready.set()
        for timer in (self._backoff_timer, self._timeout_timer):
            if timer is not None:
                timer.cancel()

    def activate(self, uids: Iterable[str]) -> int:
        """Move these Pods from backoffQ or the unschedulable ones to activeQ at once (``Activate``).

        What a plugin asks for when it knows a Pod can now be scheduled (a
        gang member arrived); gated Pods stay gated. How many moved.
        """
        moved = 0
        for uid in uids:
            qpi = self._unschedulable.get(uid)
            if qpi is not None and qpi.gated_by is None:
                del self._unschedulable[uid]
            else:
                qpi = self._backoff_by_uid.pop(uid, None)
            if qpi is None:
                continue
            qpi.timestamp = self._clock.now()
            self._push_active(qpi)
            moved += 1
        return moved

    def set_less(self, less: Callable[[QueuedPodInfo, QueuedPodInfo], bool]) -> None:
        """Order activeQ by another QueueSort (a reloaded configuration); the heap is rebuilt."""
        self._less = less
        entries = [_Entry(e.qpi, less) for e in self._active_by_uid.values()]
        self._active_by_uid = {e.qpi.pod_info.uid: e for e in entries}
        self._active = entries
        heapq.heapify(self._active)

    def set_backoff(self, initial: float, maximum: float) -> None:
        """The backoff of a reloaded configuration, for the next failures."""
        self._initial_backoff = initial
        self._max_backoff = maximum

    # --- nominated Pods ------------------------------------------------------------------------------

    def add_nominated_pod(self, pod: PodInfo, node_name: str) -> None:
        """Nominate ``pod`` to ``node_name`` ("" clears its nomination)."""
        self.delete_nominated_pod(pod.uid)
        if node_name:
            self._nominated.setdefault(node_name, {})[pod.uid] = pod
            self._nominated_node[pod.uid] = node_name

    def delete_nominated_pod(self, uid: str) -> None:
        node = self._nominated_node.pop(uid, None)
        if node is None:
            return
        pods = self._nominated[node]
        del pods[uid]
        if not pods:
            del self._nominated[node]

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]:
        return list(self._nominated.get(node_name, {}).values())

    def nominated_node_names(self) -> Collection[str]:
        return self._nominated.keys()

    # --- internals -----------------------------------------------------------------------------------

    def _backoff_duration(self, attempts: int) -> float:
        duration = self._initial_backoff
        for _ in range(1, attempts):
            if duration > self._max_backoff - duration:
                return self._max_backoff
            duration += duration
        return min(duration, self._max_backoff)

    def _requeue(self, qpi: QueuedPodInfo) -> None:
        if qpi.backoff_expiry > self._clock.now():
            self._push_backoff(qpi)
        else:
            qpi.timestamp = self._clock.now()
            self._push_active(qpi)

    def _push_active(self, qpi: QueuedPodInfo) -> None:
        entry = _Entry(qpi, self._less)
        self._active_by_uid[qpi.pod_info.uid] = entry
        heapq.heappush(self._active, entry)
        self._ready.set()

    def _refresh_ready(self) -> None:
        if not self._active_by_uid:
            self._ready.clear()
            # Drop entries removed lazily, so the heap does not grow without bound.
            self._active.clear()

    def _push_backoff(self, qpi: QueuedPodInfo) -> None:
        uid = qpi.pod_info.uid
        self._backoff_by_uid[uid] = qpi
        heapq.heappush(self._backoff, (qpi.backoff_expiry, next(self._seq), uid))
        if self._backoff_timer_at is None or qpi.backoff_expiry < self._backoff_timer_at:
            self._arm_backoff(qpi.backoff_expiry)

    def _arm_backoff(self, when: float) -> None:
        if self._backoff_timer is not None:
            self._backoff_timer.cancel()
        self._backoff_timer_at = when
        self._backoff_timer = self._clock.call_at(when, self._flush_backoff)

    def _flush_backoff(self) -> None:
        """Move Pods whose backoff is over to activeQ (``flushBackoffQCompleted``)."""
        self._backoff_timer = self._backoff_timer_at = None
        now = self._clock.now()
        while self._backoff:
            expiry, _, uid = self._backoff[0]
            qpi = self._backoff_by_uid.get(uid)
            if qpi is None or qpi.backoff_expiry != expiry:
                heapq.heappop(self._backoff)
                continue
            if expiry > now:
                self._arm_backoff(expiry)
                return
            heapq.heappop(self._backoff)
            del self._backoff_by_uid[uid]
            qpi.timestamp = now
            self._push_active(qpi)

    def _arm_timeout(self) -> None:
        if self._timeout_timer is not None or self._closed:
            return
        oldest = min((q.timestamp for q in self._unschedulable.values() if q.gated_by is None), default=None)
        if oldest is None:
            return
        self._timeout_timer = self._clock.call_at(oldest + self._max_in_unschedulable, self._flush_unschedulable)

    def _flush_unschedulable(self) -> None:
        """Retry Pods unschedulable for longer than the limit (``flushUnschedulablePodsLeftover``)."""
        self._timeout_timer = None
        deadline = self._clock.now() - self._max_in_unschedulable
        stale = [q for q in self._unschedulable.values() if q.gated_by is None and q.timestamp <= deadline]
        for qpi in stale:
            del self._unschedulable[qpi.pod_info.uid]
            self._requeue(qpi)
        if stale:
            log.debug("%s moved %d unschedulable pods", UNSCHEDULABLE_TIMEOUT, len(stale))
        self._arm_timeout()

