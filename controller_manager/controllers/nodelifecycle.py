"""The node lifecycle controller: notices nodes that stop reporting, and taints them so their Pods move.

Kubernetes' ``pkg/controller/nodelifecycle``, with its numbers:

- **Health.** Every ``--node-monitor-period`` (5 s) each node's signs of life
  are checked: a renewed Lease in ``kube-node-lease`` or a new heartbeat in its
  Ready condition. Time is measured on this controller's clock from when a
  change was *seen*, never by comparing the kubelet's timestamps with ours. A
  node silent for longer than ``--node-monitor-grace-period`` (40 s;
  ``--node-startup-grace-period``, 60 s, for one that never reported) gets
  Ready, MemoryPressure, DiskPressure and PIDPressure set to ``Unknown``
  ("Kubelet stopped posting node status."), the Event ``NodeNotReady``, and
  its Pods marked not ready.
- **Taints from conditions** (NoSchedule, at once, on every node change):
  Ready False -> ``node.kubernetes.io/not-ready``, Unknown -> ``unreachable``,
  the pressure conditions and ``spec.unschedulable`` -> theirs.
- **NoExecute taints** ``unreachable`` / ``not-ready`` for nodes seen not
  ready, added through a per-zone queue released at ``--node-eviction-rate``
  (0.1 node/s, bursts of 1) and removed as soon as the node is Ready again.
  The taint eviction controller then evicts the Pods that do not tolerate them.
- **Disruption.** A zone with no Ready node is fully disrupted; one with more
  than 2 and at least ``--unhealthy-zone-threshold`` (55%) of its nodes not
  ready is partially disrupted, and taints there slow to
  ``--secondary-node-eviction-rate`` (or stop, in clusters of at most
  ``--large-cluster-size-threshold`` nodes). When *every* zone is fully
  disrupted the controller assumes it is the one cut off: it removes the
  NoExecute taints and stops adding them until some node is Ready again.

Concurrency: one task runs the monitor passes and one the NoExecute tainting
passes; workers handle node updates (NoSchedule taints, labels) and Pods newly
bound to nodes. They share the health map and the zone queues, which change
only between awaits.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

import httpx
from kubernetes.client import V1Node, V1NodeCondition, V1Pod

from controller_manager.context import ControllerContext
from controller_manager.podutil import POD_READY, get_pod_condition
from machinery.api.kinds import LEASES, NODES, PODS, ObjectKey, object_key
from machinery.api.meta import format_time, utcnow
from machinery.api.taints import NO_EXECUTE, NO_SCHEDULE
from machinery.client.clock import Clock
from machinery.client.errors import ApiError, Conflict, NotFound
from machinery.client.objects import key_of, meta_of, to_wire
from machinery.client.rest import Client, PatchType
from machinery.client.retry import retry_on_conflict
from machinery.events import NORMAL, WARNING, EventRecorder
from machinery.informer.shared import DeletedFinalStateUnknown
from machinery.informer.store import NODE_NAME_INDEX, index_pod_by_node_name
from machinery.workqueue import WorkQueue, run_workers

log = logging.getLogger(__name__)

NAME: Final = "node-lifecycle-controller"
ALIASES: Final = ("nodelifecycle",)
EVENT_SOURCE: Final = "node-controller"
NODE_LEASE_NAMESPACE: Final = "kube-node-lease"

TAINT_UNREACHABLE: Final = "node.kubernetes.io/unreachable"
TAINT_NOT_READY: Final = "node.kubernetes.io/not-ready"
TAINT_UNSCHEDULABLE: Final = "node.kubernetes.io/unschedulable"
#: Node conditions and the taint each status brings (``nodeConditionToTaintKeyStatusMap``).
CONDITION_TAINTS: Final[dict[str, dict[str, str]]] = {
    "Ready": {"False": TAINT_NOT_READY, "Unknown": TAINT_UNREACHABLE},
    "MemoryPressure": {"True": "node.kubernetes.io/memory-pressure"},
    "DiskPressure": {"True": "node.kubernetes.io/disk-pressure"},
    "NetworkUnavailable": {"True": "node.kubernetes.io/network-unavailable"},
    "PIDPressure": {"True": "node.kubernetes.io/pid-pressure"},
}
_CONDITION_TAINT_KEYS: Final = frozenset(k for taints in CONDITION_TAINTS.values() for k in taints.values())
#: The conditions set to Unknown when a node goes silent (NetworkUnavailable belongs to the network).
_SILENCED_CONDITIONS: Final = ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")
#: Nodes with this label are left out of the disruption count.
LABEL_EXCLUDE_DISRUPTION: Final = "node.kubernetes.io/exclude-disruption"
#: Stable labels and the beta labels kept equal to them (``labelReconcileInfo``).
_RECONCILED_LABELS: Final = (("kubernetes.io/os", "beta.kubernetes.io/os"),
                             ("kubernetes.io/arch", "beta.kubernetes.io/arch"))
_ZONE_LABELS: Final = ("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone")
_REGION_LABELS: Final = ("topology.kubernetes.io/region", "failure-domain.beta.kubernetes.io/region")

NODE_UPDATE_WORKERS: Final = 8
POD_UPDATE_WORKERS: Final = 4
#: Attempts to write a node's Unknown status, re-reading it between them (``NodeHealthUpdateRetry``).
HEALTH_UPDATE_ATTEMPTS: Final = 5

ZoneState = Literal["Initial", "Normal", "PartialDisruption", "FullDisruption"]


@dataclass(slots=True)
class NodeHealth:
    """What was last seen of a node, and when (on this controller's monotonic clock)."""

    probe_at: float
    ready_transition_at: float
    #: The Ready condition's (lastHeartbeatTime, lastTransitionTime), None when the node has none.
    ready_times: tuple[dt.datetime | None, dt.datetime | None] | None
    #: The Ready condition's status as last seen or written ("Unknown" when there is none).
    ready_status: str
    lease_renewed: dt.datetime | None = None


class TokenBucket:
    """A token bucket with ``try_accept`` (client-go's ``flowcontrol`` limiter); qps 0 accepts nothing."""

    def __init__(self, qps: float, burst: int, now: float) -> None:
        self.qps = qps
        self._burst = float(burst)
        self._tokens = float(burst) if qps > 0 else 0.0
        self._last = now

    def try_accept(self, now: float) -> bool:
        self._refill(now)
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return True
        return False

    def next_token_at(self, now: float) -> float | None:
        """When a token will be available (None: never)."""
        if self.qps <= 0:
            return None
        self._refill(now)
        return now + max(0.0, 1.0 - self._tokens) / self.qps

    def saturated(self, now: float) -> bool:
        self._refill(now)
        return self._tokens < 1.0

    def _refill(self, now: float) -> None:
        if self.qps > 0:
            self._tokens = min(self._burst, self._tokens + (now - self._last) * self.qps)
        self._last = now


@dataclass(slots=True)
class ZoneTainter:
    """``RateLimitedTimedQueue``: a zone's nodes waiting for a NoExecute taint, released at the zone's rate.

    A node stays *known* after it was processed, so it is not queued again
    until :meth:`remove` (it became Ready, or lost its taint).
    """

    limiter: TokenBucket
    queue: dict[str, float] = field(default_factory=dict)
    known: set[str] = field(default_factory=set)

    def add(self, name: str, now: float) -> bool:
        if name in self.known:
            return False
        self.known.add(name)
        self.queue[name] = now
        return True

    def remove(self, name: str) -> bool:
        self.queue.pop(name, None)
        if name in self.known:
            self.known.discard(name)
            return True
        return False

    def swap_limiter(self, qps: float, now: float) -> None:
        if qps == self.limiter.qps:
            return
        saturated = self.limiter.saturated(now)
        self.limiter = TokenBucket(qps, 1, now)
        if saturated:
            # Waiting on the old limiter: the new one starts drained, as client-go's SwapLimiter does.
            self.limiter.try_accept(now)


def zone_key(node: V1Node) -> str:
    """``GetZoneKey``: ``region:\\x00:zone`` from the topology labels, "" when the node has neither."""
    labels = (node.metadata.labels if node.metadata is not None else None) or {}
    region = next((labels[k] for k in _REGION_LABELS if labels.get(k)), "")
    zone = next((labels[k] for k in _ZONE_LABELS if labels.get(k)), "")
    if not region and not zone:
        return ""
    return f"{region}:\x00:{zone}"


def compute_zone_state(ready_statuses: Sequence[str | None], unhealthy_threshold: float,
                       ) -> tuple[int, ZoneState]:
    """``ComputeZoneState``: (not-ready nodes, state) from each node's Ready status (None: no condition)."""
    ready = sum(1 for s in ready_statuses if s == "True")
    not_ready = len(ready_statuses) - ready
    if ready == 0 and not_ready > 0:
        return not_ready, "FullDisruption"
    if not_ready > 2 and not_ready / (not_ready + ready) >= unhealthy_threshold:
        return not_ready, "PartialDisruption"
    return not_ready, "Normal"


def condition_taints(node: V1Node) -> list[dict[str, str]]:
    """The NoSchedule taints a node's conditions and ``unschedulable`` call for."""
    taints = []
    for condition in (node.status.conditions if node.status is not None else None) or ():
        key = CONDITION_TAINTS.get(condition.type, {}).get(condition.status)
        if key is not None:
            taints.append({"key": key, "effect": NO_SCHEDULE})
    if node.spec is not None and node.spec.unschedulable:
        taints.append({"key": TAINT_UNSCHEDULABLE, "effect": NO_SCHEDULE})
    return taints


def ready_condition(node: V1Node) -> V1NodeCondition | None:
    for condition in (node.status.conditions if node.status is not None else None) or ():
        if condition.type == "Ready":
            return condition
    return None


def has_taint(node: V1Node, key: str, effect: str) -> bool:
    taints = node.spec.taints if node.spec is not None else None
    return any(t.key == key and t.effect == effect for t in taints or ())


class NodeLifecycleController:
    """Marks silent nodes Unknown, taints unhealthy nodes, and stops when the whole cluster looks down."""

    def __init__(self, ctx: ControllerContext) -> None:
        options = ctx.options
        self._nodes = ctx.informers.informer(NODES)
        self._leases = ctx.informers.informer(LEASES)
        self._pods = ctx.informers.informer(PODS, indexers={NODE_NAME_INDEX: index_pod_by_node_name})
        self._client = ctx.client
        self._clock = ctx.clock
        self._is_leading = ctx.is_leading
        self._recorder = ctx.events.recorder(EVENT_SOURCE)
        self._monitor_period = options.node_monitor_period
        self._grace_period = options.node_monitor_grace_period
        self._startup_grace_period = options.node_startup_grace_period
        self._eviction_rate = options.node_eviction_rate
        self._secondary_eviction_rate = options.secondary_node_eviction_rate
        self._large_cluster = options.large_cluster_size_threshold
        self._unhealthy_threshold = options.unhealthy_zone_threshold
        self.health: dict[str, NodeHealth] = {}
        self._known: dict[str, V1Node] = {}
        self.zone_states: dict[str, ZoneState] = {}
        self.tainters: dict[str, ZoneTainter] = {}
        #: Nodes whose Pods must still be marked not ready (a previous attempt failed).
        self._retry_pods: set[str] = set()
        self._tainting_wakeup = asyncio.Event()
        self._node_updates: WorkQueue[str] = WorkQueue("node_lifecycle_controller", clock=ctx.clock)
        self._pod_updates: WorkQueue[ObjectKey] = WorkQueue("node_lifecycle_controller_pods", clock=ctx.clock)
        self._nodes.add_handler(on_add=self._node_changed, on_delete=self._node_deleted,
                                on_update=lambda _old, new: self._node_changed(new))
        self._pods.add_handler(on_add=lambda pod: self._pod_changed(None, pod), on_update=self._pod_changed)

    async def run(self) -> None:
        for informer in (self._nodes, self._leases, self._pods):
            await informer.wait_synced()
        log.info("%s: caches synced, monitoring node health every %gs (grace period %gs)", NAME,
                 self._monitor_period, self._grace_period)
        async with asyncio.TaskGroup() as group:
            group.create_task(run_workers(self._node_updates, self._no_schedule_pass,
                                          workers=NODE_UPDATE_WORKERS), name="nodelifecycle-nodes")
            group.create_task(run_workers(self._pod_updates, self._process_pod, workers=POD_UPDATE_WORKERS),
                              name="nodelifecycle-pods")
            group.create_task(self._tainting_loop(), name="nodelifecycle-noexecute-tainting")
            group.create_task(self._monitor_loop(), name="nodelifecycle-monitor")

    # --- handlers --------------------------------------------------------------------------

    def _node_changed(self, node: V1Node) -> None:
        self._node_updates.add(meta_of(node).name or "")

    def _node_deleted(self, obj: V1Node | DeletedFinalStateUnknown[V1Node]) -> None:
        node = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        self._retry_pods.discard(meta_of(node).name or "")

    def _pod_changed(self, old: V1Pod | None, new: V1Pod) -> None:
        node = new.spec.node_name if new.spec is not None else None
        old_node = old.spec.node_name if old is not None and old.spec is not None else None
        if node and node != old_node:
            self._pod_updates.add(key_of(new))

    # --- NoSchedule taints and labels, per node update -------------------------------------

    async def _no_schedule_pass(self, name: str) -> None:
        node = self._nodes.store.get(name)
        if node is None or not self._is_leading():
            return
        wanted = condition_taints(node)
        present = [t for t in (node.spec.taints if node.spec is not None else None) or ()
                   if t.effect == NO_SCHEDULE
                   and (t.key == TAINT_UNSCHEDULABLE or t.key in _CONDITION_TAINT_KEYS)]
        present_keys = {(t.key, t.effect) for t in present}
        wanted_keys = {(t["key"], t["effect"]) for t in wanted}
        to_add = [t for t in wanted if (t["key"], t["effect"]) not in present_keys]
        to_remove = [k for k in present_keys if k not in wanted_keys]
        try:
            if to_add or to_remove:
                await self._swap_taints(node, to_add, to_remove)
            await self._reconcile_labels(node)
        except (ApiError, httpx.TransportError) as err:
            log.warning("%s: updating the taints or labels of node %s failed: %s", NAME, name, err)

    async def _reconcile_labels(self, node: V1Node) -> None:
        labels = meta_of(node).labels or {}
        changes = {beta: labels[stable] for stable, beta in _RECONCILED_LABELS
                   if stable in labels and labels.get(beta) != labels[stable]}
        if changes:
            await self._client.patch(NODES, meta_of(node).name or "", {"metadata": {"labels": changes}},
                                     patch_type=PatchType.STRATEGIC_MERGE)

    # --- Pods newly bound to a node that is not ready ----------------------------------------

    async def _process_pod(self, key: ObjectKey) -> None:
        pod = self._pods.store.get(key)
        if pod is None or pod.spec is None or not pod.spec.node_name:
            return
        health = self.health.get(pod.spec.node_name)
        if health is None or health.ready_times is None or health.ready_status == "True":
            return
        try:
            await mark_pods_not_ready(self._client, self._recorder, [pod], pod.spec.node_name)
        except (ApiError, httpx.TransportError) as err:
            log.info("%s: could not mark Pod %s not ready: %s", NAME, key, err)
            self._pod_updates.add_rate_limited(key)

    # --- the monitor pass ------------------------------------------------------------------

    async def _monitor_loop(self) -> None:
        while True:
            if self._is_leading():
                try:
                    await self.monitor_node_health()
                except (ApiError, httpx.TransportError) as err:
                    log.warning("%s: monitoring node health failed: %s", NAME, err)
            await self._clock.sleep(self._monitor_period)

    async def monitor_node_health(self) -> None:
        """One pass over every node (``monitorNodeHealth``)."""
        nodes = self._nodes.store.list()
        names = {meta_of(n).name or "" for n in nodes}
        now = self._clock.now()
        for node in nodes:
            name = meta_of(node).name or ""
            self._ensure_zone(zone_key(node), now)
            if name not in self._known:
                self._known[name] = node
                self._recorder.event(node, NORMAL, "RegisteredNode", f"Registered Node {name} in Controller")
                await self._mark_reachable(node)
        for name in [n for n in self._known if n not in names]:
            gone = self._known.pop(name)
            self.health.pop(name, None)
            self._recorder.event(gone, NORMAL, "RemovingNode", f"Removing Node {name} from Controller")

        zone_statuses: dict[str, list[str | None]] = {}
        pending = iter(nodes)

        async def worker() -> None:
            # A few workers share one iterator (``ParallelizeUntil``): healthy nodes cost no task each, and
            # the writes of a mass failure still overlap.
            for node in pending:
                try:
                    current = await self._update_node(node)
                except (ApiError, httpx.TransportError) as err:
                    # A node whose health is unknown to us takes no part in the disruption count.
                    log.error("%s: updating the health of node %s failed, no Pods will be evicted: %s", NAME,
                              meta_of(node).name, err)
                    continue
                if LABEL_EXCLUDE_DISRUPTION not in (meta_of(node).labels or {}):
                    zone_statuses.setdefault(zone_key(node), []).append(current)

        await asyncio.gather(*(worker() for _ in range(NODE_UPDATE_WORKERS)))
        await self._handle_disruption(zone_statuses, nodes)
        self._tainting_wakeup.set()

    async def _update_node(self, node: V1Node) -> str | None:
        """Update one node's health and act on it; its Ready status now (None: no Ready condition)."""
        name = meta_of(node).name or ""
        observed, current, node = await self._try_update_health(node)
        if current is None:
            return None
        await self._taint_based_eviction(node, observed)
        retry = name in self._retry_pods
        if (current != "True" and observed == "True") or (retry and observed != "True"):
            if observed == "True":
                self._recorder.event(node, NORMAL, "NodeNotReady", f"Node {name} status is now: NodeNotReady")
            pods = self._pods.store.by_index(NODE_NAME_INDEX, name)
            try:
                await mark_pods_not_ready(self._client, self._recorder, pods, name)
            except (ApiError, httpx.TransportError) as err:
                log.warning("%s: could not mark all Pods on node %s not ready, will retry: %s", NAME, name,
                            err)
                self._retry_pods.add(name)
                return current
        self._retry_pods.discard(name)
        return current

    async def _try_update_health(self, node: V1Node) -> tuple[str, str | None, V1Node]:
        """``tryUpdateNodeHealth``, retried on write conflicts with a fresh read of the node."""
        for attempt in range(1, HEALTH_UPDATE_ATTEMPTS + 1):
            try:
                return await self._update_health_once(node)
            except Conflict:
                if attempt == HEALTH_UPDATE_ATTEMPTS:
                    raise
            node = await self._client.get(NODES, meta_of(node).name or "")
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    async def _update_health_once(self, node: V1Node) -> tuple[str, str | None, V1Node]:
        """Record what is new about the node; write Unknown conditions if it has been silent too long.

        Returns (the Ready status observed before this pass, the status now or
        None, the node as it now is).
        """
        name = meta_of(node).name or ""
        now = self._clock.now()
        health = self.health.get(name)
        current = ready_condition(node)
        if current is None:
            # Never reported: measure the startup grace period from the node's creation.
            created = meta_of(node).creation_timestamp
            age = (utcnow() - created).total_seconds() if created is not None else 0.0
            observed_status, grace = "Unknown", self._startup_grace_period
            if health is None:
                health = NodeHealth(now - age, now - age, None, "Unknown")
        else:
            observed_status, grace = current.status, self._grace_period
            times = (current.last_heartbeat_time, current.last_transition_time)
            if health is None or health.ready_times is None:
                health = NodeHealth(now, now, times, current.status)
            elif health.ready_times[0] != times[0]:
                transition = now if health.ready_times[1] != times[1] else health.ready_transition_at
                health = NodeHealth(now, transition, times, current.status, health.lease_renewed)
            else:
                health.ready_status = current.status
        lease = self._leases.store.get(object_key(NODE_LEASE_NAMESPACE, name))
        renewed = lease.spec.renew_time if lease is not None and lease.spec is not None else None
        if renewed is not None and (health.lease_renewed is None or health.lease_renewed < renewed):
            health.lease_renewed = renewed
            health.probe_at = now
        self.health[name] = health
        if now <= health.probe_at + grace:
            return observed_status, (current.status if current is not None else None), node
        status = to_wire(node.status) if node.status is not None else {}
        conditions = silence_conditions(status.get("conditions") or [], meta_of(node).creation_timestamp,
                                        format_time(utcnow()))
        new_ready = next(c for c in conditions if c["type"] == "Ready")
        if current is not None and new_ready["status"] == current.status:
            return observed_status, current.status, node
        log.info("%s: node %s has not reported for %.0fs: marking it %s", NAME, name, now - health.probe_at,
                 new_ready["status"])
        body = to_wire(node)
        body["status"] = {**status, "conditions": conditions}
        updated = await self._client.update_status(NODES, body)
        self.health[name] = NodeHealth(health.probe_at, now, health.ready_times, new_ready["status"],
                                       health.lease_renewed)
        return observed_status, new_ready["status"], updated

    async def _taint_based_eviction(self, node: V1Node, observed: str) -> None:
        """``processTaintBaseEviction``: queue (or swap) the NoExecute taint of the Ready status seen."""
        name = meta_of(node).name or ""
        tainter = self._ensure_zone(zone_key(node), self._clock.now())
        if observed == "False":
            if has_taint(node, TAINT_UNREACHABLE, NO_EXECUTE):
                await self._swap_taints_logged(node, TAINT_NOT_READY, TAINT_UNREACHABLE)
            else:
                if not has_taint(node, TAINT_NOT_READY, NO_EXECUTE):
                    tainter.remove(name)
                if tainter.add(name, self._clock.now()):
                    log.info("%s: node %s is not ready: queued for the %s taint", NAME, name, TAINT_NOT_READY)
        elif observed == "Unknown":
            if has_taint(node, TAINT_NOT_READY, NO_EXECUTE):
                await self._swap_taints_logged(node, TAINT_UNREACHABLE, TAINT_NOT_READY)
            else:
                if not has_taint(node, TAINT_UNREACHABLE, NO_EXECUTE):
                    tainter.remove(name)
                if tainter.add(name, self._clock.now()):
                    log.info("%s: node %s is unreachable: queued for the %s taint", NAME, name,
                             TAINT_UNREACHABLE)
        elif observed == "True" and await self._mark_reachable(node):
            log.info("%s: node %s is healthy again, removed its NoExecute taints", NAME, name)

    async def _swap_taints_logged(self, node: V1Node, add: str, remove: str) -> None:
        try:
            await self._swap_taints(node, [{"key": add, "effect": NO_EXECUTE}], [(remove, NO_EXECUTE)])
        except (ApiError, httpx.TransportError) as err:
            log.error("%s: failed to swap the %s taint of node %s for %s, will retry: %s", NAME, remove,
                      meta_of(node).name, add, err)

    async def _mark_reachable(self, node: V1Node) -> bool:
        """Remove the NoExecute unreachable and not-ready taints; True when the node was queued for one."""
        name = meta_of(node).name or ""
        present = [(key, NO_EXECUTE) for key in (TAINT_UNREACHABLE, TAINT_NOT_READY)
                   if has_taint(node, key, NO_EXECUTE)]
        if present:
            try:
                await self._swap_taints(node, [], present)
            except (ApiError, httpx.TransportError) as err:
                log.error("%s: failed to remove the NoExecute taints of node %s: %s", NAME, name, err)
                return False
        tainter = self.tainters.get(zone_key(node))
        return tainter is not None and tainter.remove(name)

    # --- zones and disruption --------------------------------------------------------------

    def _ensure_zone(self, zone: str, now: float) -> ZoneTainter:
        tainter = self.tainters.get(zone)
        if tainter is None:
            tainter = ZoneTainter(TokenBucket(self._eviction_rate, 1, now))
            self.tainters[zone] = tainter
            self.zone_states[zone] = "Initial"
        return tainter

    async def _handle_disruption(self, zone_statuses: dict[str, list[str | None]],
                                 nodes: Sequence[V1Node]) -> None:
        now = self._clock.now()
        new_states: dict[str, ZoneState] = {}
        for zone, statuses in zone_statuses.items():
            new_states[zone] = compute_zone_state(statuses, self._unhealthy_threshold)[1]
            self._ensure_zone(zone, now)
        all_are_down = all(s == "FullDisruption" for s in new_states.values())
        for zone in [z for z in self.zone_states if z not in zone_statuses]:
            del self.zone_states[zone]
        all_were_down = all(s == "FullDisruption" for s in self.zone_states.values())
        if all_are_down and all_were_down:
            return
        if all_are_down:
            log.info("%s: all nodes are not ready: entering master disruption mode (no more taints)", NAME)
            for node in nodes:
                await self._mark_reachable(node)
            for zone in self.zone_states:
                self.tainters[zone].swap_limiter(0.0, now)
                self.zone_states[zone] = "FullDisruption"
            return
        if all_were_down:
            log.info("%s: some nodes are ready: exiting master disruption mode", NAME)
            for health in self.health.values():
                health.probe_at = health.ready_transition_at = now
            for zone in self.zone_states:
                state = new_states.get(zone, "Normal")
                self._set_zone_limiter(zone, len(zone_statuses.get(zone, ())), state, now)
                self.zone_states[zone] = state
            return
        for zone, state in self.zone_states.items():
            new_state = new_states.get(zone, state)
            if new_state != state:
                log.info("%s: zone %r is now in state %s", NAME, zone, new_state)
                self._set_zone_limiter(zone, len(zone_statuses.get(zone, ())), new_state, now)
                self.zone_states[zone] = new_state

    def _set_zone_limiter(self, zone: str, size: int, state: ZoneState, now: float) -> None:
        if state == "PartialDisruption":
            qps = self._secondary_eviction_rate if size > self._large_cluster else 0.0
        else:
            qps = self._eviction_rate
        self.tainters[zone].swap_limiter(qps, now)

    # --- the NoExecute tainting pass -------------------------------------------------------

    async def _tainting_loop(self) -> None:
        while True:
            self._tainting_wakeup.clear()
            wake_at = await self._no_execute_tainting_pass() if self._is_leading() else None
            timer = self._clock.call_at(wake_at, self._tainting_wakeup.set) if wake_at is not None else None
            try:
                await self._tainting_wakeup.wait()
            finally:
                if timer is not None:
                    timer.cancel()

    async def _no_execute_tainting_pass(self) -> float | None:
        """Taint the queued nodes that are due, at each zone's rate; when to look again (None: on news)."""
        wake_at: float | None = None
        for tainter in list(self.tainters.values()):
            while tainter.queue:
                now = self._clock.now()
                name, due = min(tainter.queue.items(), key=lambda item: item[1])
                if due > now:
                    wake_at = due if wake_at is None else min(wake_at, due)
                    break
                if not tainter.limiter.try_accept(now):
                    token_at = tainter.limiter.next_token_at(now)
                    if token_at is not None:
                        wake_at = token_at if wake_at is None else min(wake_at, token_at)
                    break
                if await self._taint_no_execute(name):
                    del tainter.queue[name]
                else:
                    tainter.queue[name] = now + 0.05
        return wake_at

    async def _taint_no_execute(self, name: str) -> bool:
        """Give a queued node the NoExecute taint of its Ready status; False to retry shortly."""
        node = self._nodes.store.get(name)
        if node is None:
            return True
        condition = ready_condition(node)
        if condition is None:
            return False
        if condition.status == "False":
            add, remove = TAINT_NOT_READY, TAINT_UNREACHABLE
        elif condition.status == "Unknown":
            add, remove = TAINT_UNREACHABLE, TAINT_NOT_READY
        else:
            return True
        try:
            await self._swap_taints(node, [{"key": add, "effect": NO_EXECUTE}], [(remove, NO_EXECUTE)])
        except (ApiError, httpx.TransportError) as err:
            log.warning("%s: tainting node %s failed: %s", NAME, name, err)
            return False
        log.info("%s: tainted node %s with %s:%s", NAME, name, add, NO_EXECUTE)
        return True

    async def _swap_taints(self, node: V1Node, add: Sequence[dict[str, str]],
                           remove: Sequence[tuple[str, str]]) -> None:
        await swap_node_taints(self._client, node, add, remove, self._clock)


async def swap_node_taints(client: Client, node: V1Node, add: Sequence[dict[str, str]],
                           remove: Sequence[tuple[str, str]], clock: Clock | None = None) -> None:
    """``SwapNodeControllerTaint``: add (stamped with timeAdded) and remove taints in one guarded patch.

    The first attempt works on the cached node; a conflict re-reads it. The
    patch carries the resourceVersion it was computed from, since a list of
    taints has no merge key and is replaced whole.
    """
    name = meta_of(node).name or ""
    stamp = format_time(utcnow())
    removed = set(remove)
    cached: V1Node | None = node

    async def attempt() -> None:
        nonlocal cached
        current = cached if cached is not None else await client.get(NODES, name)
        cached = None
        taints = [to_wire(t) for t in (current.spec.taints if current.spec is not None else None) or ()]
        kept = [t for t in taints if (t.get("key"), t.get("effect")) not in removed]
        for taint in add:
            if not any(t.get("key") == taint["key"] and t.get("effect") == taint["effect"] for t in kept):
                kept.append({**taint, "timeAdded": stamp})
        if kept == taints:
            return
        patch = {"metadata": {"resourceVersion": meta_of(current).resource_version},
                 "spec": {"taints": kept or None}}
        await client.patch(NODES, name, patch, patch_type=PatchType.STRATEGIC_MERGE)

    await retry_on_conflict(attempt, clock=clock)


async def mark_pods_not_ready(client: Client, recorder: EventRecorder, pods: Sequence[V1Pod],
                              node_name: str) -> None:
    """``MarkPodsNotReady``: set each ready Pod's Ready condition to False, with a NodeNotReady Event."""
    errors: list[ApiError | httpx.TransportError] = []
    for pod in pods:
        if pod.spec is None or pod.spec.node_name != node_name:
            continue
        condition = get_pod_condition(pod, POD_READY)
        if condition is None or condition.status == "False":
            continue
        body = to_wire(pod)
        status = body.setdefault("status", {})
        now = format_time(utcnow())
        status["conditions"] = [{**c, "status": "False", "lastTransitionTime": now}
                                if c.get("type") == POD_READY else c for c in status.get("conditions") or ()]
        try:
            await client.update_status(PODS, body)
        except NotFound:
            continue
        except (ApiError, httpx.TransportError) as err:
            errors.append(err)
        recorder.event(pod, WARNING, "NodeNotReady", "Node is not ready")
    if errors:
        raise errors[0]


def silence_conditions(conditions: Sequence[dict[str, Any]], created: dt.datetime | None,
                       now: str) -> list[dict[str, Any]]:
    """A silent node's conditions: Ready and the pressures Unknown, added if the kubelet never posted them."""
    result = [dict(c) for c in conditions]
    for ctype in _SILENCED_CONDITIONS:
        existing = next((c for c in result if c.get("type") == ctype), None)
        if existing is None:
            result.append({"type": ctype, "status": "Unknown", "reason": "NodeStatusNeverUpdated",
                           "message": "Kubelet never posted node status.",
                           "lastHeartbeatTime": format_time(created) if created is not None else now,
                           "lastTransitionTime": now})
        elif existing.get("status") != "Unknown":
            existing.update(status="Unknown", reason="NodeStatusUnknown",
                            message="Kubelet stopped posting node status.", lastTransitionTime=now)
    return result

