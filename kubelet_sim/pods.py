"""Steps 11 to 13 of the flow: the Pods bound to this process's nodes, from admission to deletion.

What the kubelet does with a Pod, simulated per node (pkg/kubelet: the pod
workers, ``lifecycle/predicate.go`` for admission, ``kubelet_pods.go`` for the
status and phase, ``status/`` for the status manager):

- **admission**: a Pod that does not fit the node's allocatable after the Pods
  already admitted (``OutOfcpu``, ``OutOfmemory``, ``OutOfpods``...), whose
  required node affinity or nodeSelector does not match (``NodeAffinity``),
  whose host ports are taken (``NodePorts``), or that does not tolerate a
  ``NoExecute`` taint (``TaintToleration``) is rejected: phase Failed, reason,
  ``Pod was rejected: <message>``, and a Warning Event;
- **lifecycle**: init containers one after the other, then the containers
  together; ``Pulling``/``Pulled``/``Created``/``Started`` Events; restarts by
  ``restartPolicy`` with CrashLoopBackOff; the phase as ``getPhase`` computes it
  and the kubelet's conditions (``PodReadyToStartContainers``, ``Initialized``,
  ``Ready``, ``ContainersReady``, ``PodScheduled``) with their reasons;
- **deletion**: on a deletionTimestamp the containers get SIGTERM (``Killing``),
  exit (or are killed when the grace period runs out), the final status is
  written, and the Pod is deleted with ``gracePeriodSeconds=0`` and a uid
  precondition;
- **status writes**: a strategic merge patch of ``pods/status`` (with the uid
  as precondition) per transition, built when it is sent: a Pod that changed
  several times before its write gets one write with its latest state, and one
  that did not change gets none. They wait while the nodes' Lease renewals are
  behind (``heartbeats_on_time``), as API Priority and Fairness would serve
  node heartbeats first;
- **restart**: Pods already started by an earlier run are adopted from their
  status (container ids, restart counts, start times) without restarting
  anything.

Concurrency: one event loop. Informer handlers call :meth:`PodManager.sync`,
which reconciles one Pod synchronously; container timers (clock callbacks)
drive the lifecycle; status writes run on the ``pod-status`` work queue's
workers, never two for one Pod at once.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import random
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import httpx
import orjson
from kubernetes.client import V1ObjectReference

from kubelet_sim.node import FIELD_MANAGER, SimNode, ThrottledWarnings
from kubelet_sim.prober import Check, ContainerProber, Probe, Result, container_probes, simulated_check
from kubelet_sim.profile import LABEL_OS, Timings
from kubelet_sim.runtime import (
    KILLED_EXIT_CODE,
    Behaviour,
    ContainerLog,
    SimContainer,
    State,
    Terminated,
    behaviour,
    go_duration,
    image_size,
)
from kubelet_sim.runtimes import ContainerRuntime, StartError
from kubelet_sim.views import POD_VIEWS, ContainerStatusView, PodView
from machinery.api.kinds import ObjectKey, object_key
from machinery.api.labels import SelectorError
from machinery.api.meta import now_time, parse_time
from machinery.api.nodeselector import RequiredNodeAffinity
from machinery.api.quantity import (
    ResourceList,
    add_resources,
    insufficient_resources,
    pod_requests,
    subtract_resources,
)
from machinery.api.taints import NO_EXECUTE, find_untolerated_taint
from machinery.client import ApiError, Client, Conflict, NotFound
from machinery.client.clock import Clock, RealClock
from machinery.events import NORMAL, WARNING, EventType
from machinery.informer import NODE_NAME_INDEX, DeletedFinalStateUnknown, Store
from machinery.workqueue import ItemExponentialFailureRateLimiter, WorkQueue, run_workers

log = logging.getLogger("kubelet_sim.pods")

PENDING: Final = "Pending"
RUNNING: Final = "Running"
SUCCEEDED: Final = "Succeeded"
FAILED: Final = "Failed"
TERMINAL_PHASES: Final = (SUCCEEDED, FAILED)

#: The kubelet-owned conditions, then PodScheduled, in the order the kubelet writes them.
CONDITION_ORDER: Final = (
    "PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")

_UNKNOWN_REASON: Final = "ContainerStatusUnknown"
_UNKNOWN_MESSAGE: Final = "The container could not be located when the pod was terminated"
_ADOPTED_LINE: Final = "kubesim: kubelet_sim restarted; the lines this container printed before are lost"
#: containerd's exit code for a container whose process could not be started.
START_ERROR_EXIT_CODE: Final = 128


@dataclass(frozen=True, slots=True)
class Rejection:
    """Why the kubelet refused a Pod: the status reason and the Event's message."""

    reason: str
    message: str


@dataclass(slots=True, eq=False)
class SimPod:
    """A Pod as the kubelet of its node runs it."""

    key: ObjectKey
    uid: str
    node: SimNode
    view: PodView
    init_containers: list[SimContainer]
    containers: list[SimContainer]
    requests: ResourceList
    host_ports: frozenset[tuple[str, str, int]]
    phase: str = PENDING
    rejection: Rejection | None = None
    start_time: str = ""
    pod_ip: str = ""
    sandbox_ready: bool = False
    #: Condition type -> (status, lastTransitionTime) as last generated.
    conditions: dict[str, tuple[str, str]] = field(default_factory=dict)
    #: Whether the node counts this Pod's requests, ports and IP.
    holds_resources: bool = False
    terminating: bool = False
    #: Why the kubelet evicted the Pod (its status message), once it has.
    evicted: str | None = None
    deleted: bool = False
    running_logged: bool = False
    #: A hash of the status last written, so that an unchanged status is not written again.
    written: int = 0
    #: The resourceVersion and the Ready condition's status of the last write: a newer Pod whose Ready
    #: differs was changed by someone else (MarkPodsNotReady), and the kubelet writes its own again.
    written_rv: int = 0
    written_ready: str | None = None

    @property
    def namespace(self) -> str:
        return self.view.metadata.namespace or ""

    @property
    def name(self) -> str:
        return self.view.metadata.name

    @property
    def restart_policy(self) -> str:
        return self.view.spec.restart_policy or "Always"

    @property
    def all_containers(self) -> list[SimContainer]:
        return [*self.init_containers, *self.containers]

    def container(self, name: str) -> SimContainer | None:
        return next((c for c in self.all_containers if c.name == name), None)

    def describe(self) -> str:
        """The kubelet's ``format.Pod``: ``name_namespace(uid)``."""
        return f"{self.name}_{self.namespace}({self.uid})"


# --- admission ---------------------------------------------------------------------------------------------


def wire_spec(view: PodView) -> dict[str, Any]:
    """The Pod's spec in wire form, as ``machinery.api``'s quantity and affinity functions take it."""
    return {"spec": view.spec.model_dump(by_alias=True, exclude_none=True)}


def host_ports(view: PodView) -> frozenset[tuple[str, str, int]]:
    """(protocol, hostIP, hostPort) of every host port the Pod's containers and sidecars ask for."""
    sidecars = [c for c in view.spec.init_containers or () if c.restart_policy == "Always"]
    containers = [*view.spec.containers, *sidecars]
    return frozenset((p.protocol or "TCP", p.host_ip or "0.0.0.0", p.host_port)
                     for c in containers for p in c.ports or () if p.host_port)


def _ports_conflict(wanted: frozenset[tuple[str, str, int]], used: set[tuple[str, str, int]]) -> bool:
    """The scheduler's ``HostPortInfo.CheckConflict``: 0.0.0.0 conflicts with every address."""
    for protocol, ip, port in wanted:
        for used_protocol, used_ip, used_port in used:
            if (used_protocol, used_port) == (protocol, port) and "0.0.0.0" in (ip, used_ip) or \
                    (used_protocol, used_ip, used_port) == (protocol, ip, port):
                return True
    return False


def _is_extended(resource: str) -> bool:
    """``IsExtendedResourceName``: a domain-prefixed name outside ``kubernetes.io``."""
    return "/" in resource and "kubernetes.io/" not in resource and not resource.startswith("requests.")


def _natural(resource: str, milli: int) -> int:
    """What Kubernetes prints in admission messages: millicores for cpu, whole units for the rest."""
    return milli if resource == "cpu" else -(-milli // 1000)


def is_best_effort(view: PodView) -> bool:
    """QoS class BestEffort: no container (init included) has any request or limit."""
    containers = [*view.spec.containers, *(view.spec.init_containers or ())]
    return not any((c.resources or {}).get("requests") or (c.resources or {}).get("limits") for c in containers)


def admit(view: PodView, node: SimNode, requests: ResourceList,
          ports: frozenset[tuple[str, str, int]]) -> Rejection | None:
    """The kubelet's predicate admission of ``view`` on ``node``, given the Pods admitted so far."""
    if node.memory_pressure and is_best_effort(view):
        # The eviction manager's admit handler: no BestEffort Pod while memory is short.
        return Rejection("Evicted", "The node had condition: [MemoryPressure]. ")
    pod_os = (view.metadata.labels or {}).get(LABEL_OS)
    if pod_os is not None and pod_os != node.labels.get(LABEL_OS, node.os):
        return Rejection("PodOSSelectorNodeLabelDoesNotMatch",
                         "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label")
    if view.spec.os is not None and view.spec.os.name != node.os:
        return Rejection("PodOSNotSupported", "Failed to admit pod as the OS field doesn't match node OS")
    allowed_pods = node.allocatable.get("pods", 0) // 1000
    if node.pod_count + 1 > allowed_pods:
        return Rejection("OutOfpods", f"Node didn't have enough resource: pods, requested: 1, "
                                      f"used: {node.pod_count}, capacity: {allowed_pods}")
    # Extended resources the node does not know are cluster-level ones: the kubelet ignores them.
    wanted = {r: q for r, q in requests.items() if not _is_extended(r) or r in node.allocatable}
    short = insufficient_resources(wanted, node.allocatable, node.used)
    if short:
        resource = short[0]
        return Rejection(f"OutOf{resource}",
                         f"Node didn't have enough resource: {resource}, "
                         f"requested: {_natural(resource, wanted[resource])}, "
                         f"used: {_natural(resource, node.used.get(resource, 0))}, "
                         f"capacity: {_natural(resource, node.allocatable.get(resource, 0))}")
    try:
        matches = RequiredNodeAffinity.from_pod(wire_spec(view)).matches(node.name, node.labels)
    except SelectorError:
        matches = False
    if not matches:
        return Rejection("NodeAffinity",
                         "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector")
    if _ports_conflict(ports, node.host_ports):
        return Rejection("NodePorts", "Predicate NodePorts failed: node(s) didn't have free ports for the "
                                      "requested pod ports")
    if find_untolerated_taint(node.taints, view.spec.tolerations or (), {NO_EXECUTE}) is not None:
        return Rejection("TaintToleration", "Predicate TaintToleration failed: node(s) had untolerated taint")
    return None


# --- phase and status --------------------------------------------------------------------------------------


def _started_before(c: SimContainer) -> bool:
    return c.state is not State.WAITING or c.last_terminated is not None


def _bracketed(names: Sequence[str]) -> str:
    """Go's ``%s`` of a ``[]string``: ``[a b]``."""
    return "[" + " ".join(names) + "]"


def pod_phase(pod: SimPod, *, terminal: bool = False) -> str:
    """The kubelet's ``getPhase`` over the simulated containers; ``terminal`` once the Pod was killed."""
    if pod.phase in TERMINAL_PHASES:
        return pod.phase
    pending_init = failed_init = 0
    running = waiting = stopped = succeeded = 0
    for c in pod.init_containers:
        if c.sidecar:
            if c.state is State.RUNNING:
                running += 1
            elif c.state is State.WAITING and c.last_terminated is None:
                pending_init += 1
                waiting += 1
        elif c.state is State.RUNNING:
            pending_init += 1
        elif c.state is State.TERMINATED:
            failed_init += c.terminated is not None and c.terminated.exit_code != 0
        elif c.last_terminated is not None:
            failed_init += c.last_terminated.exit_code != 0
        else:
            pending_init += 1
    for c in pod.containers:
        if c.state is State.RUNNING:
            running += 1
        elif c.state is State.TERMINATED:
            stopped += 1
            succeeded += c.terminated is not None and c.terminated.exit_code == 0
        elif c.last_terminated is not None:
            stopped += 1
        else:
            waiting += 1
    policy = pod.restart_policy
    if failed_init and policy == "Never":
        return FAILED
    if (pending_init and not any(_started_before(c) for c in pod.containers)) or waiting:
        return PENDING
    if running:
        return RUNNING
    if stopped:
        if terminal:
            return SUCCEEDED if stopped == succeeded else FAILED
        if policy == "Always":
            return RUNNING
        if stopped == succeeded:
            return SUCCEEDED
        return FAILED if policy == "Never" else RUNNING
    return PENDING


def _condition(pod: SimPod, ctype: str, status: str, now: str, reason: str = "",
               message: str = "") -> dict[str, Any]:
    previous = pod.conditions.get(ctype)
    when = previous[1] if previous is not None and previous[0] == status else now
    pod.conditions[ctype] = (status, when)
    # Explicit nulls clear a reason or message left by an earlier write: conditions merge by type.
    return {"type": ctype, "status": status, "lastTransitionTime": when,
            "reason": reason or None, "message": message or None}


def pod_conditions(pod: SimPod, now: str) -> list[dict[str, Any]]:
    """The kubelet's conditions (``status.Generate*Condition``) plus PodScheduled, in its order."""
    phase = pod.phase
    incomplete = [c.name for c in pod.init_containers
                  if not (c.state is State.RUNNING if c.sidecar else c.ready)]
    if not pod.init_containers:
        initialized = ("True", "", "")
    elif phase == SUCCEEDED:
        initialized = ("True", "PodCompleted", "")
    elif any(_started_before(c) for c in pod.containers) or not incomplete:
        initialized = ("True", "", "")
    else:
        initialized = ("False", "ContainersNotInitialized",
                       f"containers with incomplete status: {_bracketed(incomplete)}")
    unready = [c.name for c in pod.init_containers if c.sidecar and not c.ready]
    unready += [c.name for c in pod.containers if not c.ready]
    if phase == SUCCEEDED:
        ready = ("False", "PodCompleted", "")
    elif phase == FAILED:
        ready = ("False", "PodFailed", "")
    elif unready:
        ready = ("False", "ContainersNotReady", f"containers with unready status: {_bracketed(unready)}")
    else:
        ready = ("True", "", "")
    return [
        _condition(pod, "PodReadyToStartContainers", "True" if pod.sandbox_ready else "False", now),
        _condition(pod, "Initialized", initialized[0], now, initialized[1], initialized[2]),
        _condition(pod, "Ready", ready[0], now, ready[1], ready[2]),
        _condition(pod, "ContainersReady", ready[0], now, ready[1], ready[2]),
        _condition(pod, "PodScheduled", "True", now),
    ]


def pod_status(pod: SimPod, now: str) -> dict[str, Any]:
    """The ``PodStatus`` the kubelet reports for ``pod`` now (``generateAPIPodStatus``)."""
    if pod.rejection is not None:
        return {"phase": FAILED, "reason": pod.rejection.reason,
                "message": f"Pod was rejected: {pod.rejection.message}", "startTime": pod.start_time}
    conditions = pod_conditions(pod, now)
    order = list(CONDITION_ORDER)
    if pod.evicted is not None:
        conditions.insert(0, _condition(pod, "DisruptionTarget", "True", now, "TerminationByKubelet", pod.evicted))
        order.insert(0, "DisruptionTarget")
    status: dict[str, Any] = {
        "phase": pod.phase,
        "conditions": conditions,
        "$setElementOrder/conditions": [{"type": t} for t in order],
        "hostIP": pod.node.ip,
        "hostIPs": [{"ip": pod.node.ip}],
        "startTime": pod.start_time,
        "containerStatuses": sorted((c.status_wire() for c in pod.containers), key=lambda s: s["name"]),
    }
    if pod.init_containers:
        status["initContainerStatuses"] = [c.status_wire() for c in pod.init_containers]
    if pod.pod_ip:
        status["podIP"] = pod.pod_ip
        status["podIPs"] = [{"ip": pod.pod_ip}]
    if pod.evicted is not None and pod.phase == FAILED:
        status["reason"], status["message"] = "Evicted", pod.evicted
    return status


# --- the manager -------------------------------------------------------------------------------------------


class PodManager:
    """Runs the Pods of every node of the process and writes their status.

    The store must index Pods by node (``NODE_NAME_INDEX``).

    >>> pods = PodManager(client, informer.store, nodes.nodes, timings=profile.timings)
    >>> informer.add_handler(on_add=pods.on_pod, on_update=lambda old, new: pods.on_pod(new),
    ...                      on_delete=pods.on_pod_deleted)
    """

    def __init__(self, client: Client, store: Store[PodView], nodes: Mapping[str, SimNode], *,
                 timings: Timings, heartbeats_on_time: asyncio.Event | None = None,
                 clock: Clock | None = None, rand: random.Random | None = None,
                 status_workers: int = 64, runtime: ContainerRuntime | None = None) -> None:
        self._client = client
        #: Containers are real processes (their exits and stops come from the runtime, not from timers).
        self._runtime = runtime if runtime is not None and runtime.runs_processes else None
        self._tasks: set[asyncio.Task[None]] = set()
        self._store = store
        self._nodes = nodes
        self._timings = timings
        self._clock = clock or RealClock()
        self._rand = rand or random.Random()
        self._status_workers = status_workers
        self._heartbeats_on_time = heartbeats_on_time
        self._pods: dict[ObjectKey, SimPod] = {}
        self._warnings = ThrottledWarnings(log, clock=self._clock)
        self.statuses: WorkQueue[ObjectKey] = WorkQueue(
            "pod-status", rate_limiter=ItemExponentialFailureRateLimiter(0.2, 30.0), clock=self._clock)

    def pod(self, namespace: str, name: str) -> SimPod | None:
        return self._pods.get(object_key(namespace, name))

    def pods_on(self, node: SimNode) -> list[SimPod]:
        """The Pods admitted on ``node`` that have not finished (those using its resources)."""
        return [pod for key in node.pods if (pod := self._pods.get(key)) is not None]

    async def run(self) -> None:
        """Write Pod statuses (and make the final deletes) until cancelled."""
        await run_workers(self.statuses, self._write, workers=self._status_workers, drain_timeout=1.0)

    # --- informer handlers ------------------------------------------------------------------------------

    def on_pod(self, view: PodView) -> None:
        self.sync(object_key(view.metadata.namespace, view.metadata.name))

    def on_pod_deleted(self, obj: PodView | DeletedFinalStateUnknown[PodView]) -> None:
        if isinstance(obj, DeletedFinalStateUnknown):
            self.sync(obj.key)
        else:
            self.on_pod(obj)

    def node_active(self, node: SimNode) -> None:
        """A node registered or started again: catch up with its Pods, oldest first, and flush its writes.

        What changed while it was away is in ``node.unsynced``; at registration its Pods
        are those the informer indexes under its name.
        """
        keys = set(node.unsynced)
        node.unsynced.clear()
        keys.update(self._store.index_keys(NODE_NAME_INDEX, node.name))
        for key in sorted(keys, key=self._creation_order):
            self.sync(key)
        for key in node.parked:
            self.statuses.add(key)
        node.parked.clear()

    def sync(self, key: ObjectKey) -> None:
        """Reconcile the Pod at ``key`` with what the informer holds now (it may be gone)."""
        view = self._store.get(key)
        pod = self._pods.get(key)
        node = self._nodes.get(self._node_name(view)) if view is not None else None
        if node is None and pod is not None:
            node = pod.node
        if node is None:
            return
        if not node.active:
            node.unsynced.add(key)
            return
        if pod is not None and (view is None or view.metadata.uid != pod.uid):
            self._forget(pod)
            pod = None
        if view is None or self._nodes.get(self._node_name(view)) is not node:
            return
        if pod is None:
            pod = self._add(view, node)
        else:
            pod.view = view
            if pod.written_ready is not None and _ready_overwritten(view, pod):
                # The kubelet's status manager reconciles a status someone else changed: the node
                # lifecycle controller marks a silent node's Pods not ready, and they are ready again
                # once the kubelet is back (or was never away).
                pod.written = 0
                self.statuses.add(pod.key)
        if view.metadata.deletion_timestamp and not pod.terminating:
            self._terminate(pod)

    @staticmethod
    def _node_name(view: PodView | None) -> str:
        return (view.spec.node_name or "") if view is not None else ""

    def _creation_order(self, key: ObjectKey) -> tuple[str, str]:
        view = self._store.get(key)
        return (view.metadata.creation_timestamp or "" if view is not None else "", key)

    # --- a Pod arrives ----------------------------------------------------------------------------------

    def _new_pod(self, view: PodView, node: SimNode) -> SimPod:
        has_init = bool(view.spec.init_containers)
        default_wait = "PodInitializing" if has_init else "ContainerCreating"
        key = object_key(view.metadata.namespace, view.metadata.name)
        pod = SimPod(
            key=key, uid=view.metadata.uid, node=node, view=view,
            init_containers=[SimContainer(c.name, c.image, init=True, sidecar=c.restart_policy == "Always",
                                          waiting_reason="PodInitializing")
                             for c in view.spec.init_containers or ()],
            containers=[SimContainer(c.name, c.image, waiting_reason=default_wait)
                        for c in view.spec.containers],
            requests=pod_requests(wire_spec(view)), host_ports=host_ports(view))
        scheduled = next((c for c in view.status.conditions or () if c.type == "PodScheduled"), None)
        if scheduled is not None and scheduled.last_transition_time:
            pod.conditions["PodScheduled"] = (scheduled.status, scheduled.last_transition_time)
        self._pods[key] = pod
        return pod

    def _add(self, view: PodView, node: SimNode) -> SimPod:
        if view.status.start_time:
            return self._adopt(view, node)
        pod = self._new_pod(view, node)
        pod.start_time = now_time()
        log.info("%s bound to %s, seen through the watch", pod.key, node.name, extra={"step": 11})
        rejection = admit(view, node, pod.requests, pod.host_ports)
        if rejection is not None:
            pod.rejection = rejection
            pod.phase = FAILED
            log.info("rejected %s on %s: %s", pod.key, node.name, rejection.reason, extra={"step": 12})
            self._event(pod, WARNING, rejection.reason, rejection.message)
            self._changed(pod)
            return pod
        self._hold(pod)
        self._changed(pod)
        self._advance(pod)
        return pod

    def _adopt(self, view: PodView, node: SimNode) -> SimPod:
        """A Pod an earlier run of kubelet_sim started: rebuild its containers from its status."""
        pod = self._new_pod(view, node)
        status = view.status
        pod.start_time = status.start_time or ""
        pod.pod_ip = status.pod_ip or ""
        pod.phase = status.phase or PENDING
        for condition in view.status.conditions or ():
            if condition.type in CONDITION_ORDER and condition.last_transition_time:
                pod.conditions[condition.type] = (condition.status, condition.last_transition_time)
        reported = [*(status.init_container_statuses or ()), *(status.container_statuses or ())]
        by_name = {s.name: s for s in reported}
        now = self._clock.now()
        for c in pod.all_containers:
            previous = by_name.get(c.name)
            if previous is not None:
                self._restore(pod, c, previous, now)
        pod.sandbox_ready = bool(pod.pod_ip) and pod.phase not in TERMINAL_PHASES
        if pod.phase not in TERMINAL_PHASES:
            self._hold(pod)
            if pod.pod_ip and node.addresses is not None and pod.pod_ip != node.ip:
                node.addresses.reserve(pod.pod_ip)
        pod.written = hash(orjson.dumps(pod_status(pod, now_time())))
        log.debug("adopted %s on %s (phase %s)", pod.key, node.name, pod.phase)
        if self._runtime is not None:
            # The processes of an earlier kubelet_sim died with it: those containers have exited.
            for c in pod.all_containers:
                if c.state is State.RUNNING:
                    c.cancel_timers()
                    self._clock.call_at(self._clock.now(), functools.partial(
                        self._exited, pod, c, KILLED_EXIT_CODE, reason="Error",
                        message="the process ended when kubelet_sim stopped"))
        self._advance(pod)
        return pod

    def _restore(self, pod: SimPod, c: SimContainer, status: ContainerStatusView, now: float) -> None:
        state = status.state or {}
        c.restart_count = status.restart_count
        c.container_id = status.container_id or ""
        c.created = bool(c.container_id)
        c.ready = status.ready
        last = (status.last_state or {}).get("terminated")
        c.last_terminated = _terminated(last) if last else None
        if "running" in state:
            started_at = (state["running"] or {}).get("startedAt") or ""
            c.state = State.RUNNING
            c.started_at = started_at
            started = parse_time(started_at)
            c.started_mono = now - (time.time() - started.timestamp() if started is not None else 0.0)
            c.log = ContainerLog()
            c.log.write(_ADOPTED_LINE, time.time())
            c.behaviour, _ = self._behaviour(pod, c, 0.0)
            self._arm_running(pod, c)
        elif "terminated" in state:
            c.state = State.TERMINATED
            c.terminated = _terminated(state["terminated"] or {})
            c.log = ContainerLog()
            c.log.write(_ADOPTED_LINE, time.time())
            c.log.close()
        else:
            waiting = state.get("waiting") or {}
            c.wait(waiting.get("reason") or c.waiting_reason, waiting.get("message") or "")

    # --- the lifecycle ----------------------------------------------------------------------------------

    def _advance(self, pod: SimPod) -> None:
        """Start whatever should start next: the next init container, or the containers."""
        if pod.phase in TERMINAL_PHASES or pod.terminating:
            return
        # One start delay for everything started together, so that they start (and are written) together.
        delay = self._start_delay()
        for c in pod.init_containers:
            if c.sidecar and c.state is State.RUNNING:
                continue
            if not c.sidecar and c.state is State.TERMINATED and c.terminated is not None \
                    and c.terminated.exit_code == 0:
                continue
            if c.state is State.WAITING and not c.starting:
                self._begin_start(pod, c, delay)
            return
        for c in pod.containers:
            if c.state is State.WAITING and not c.starting:
                self._begin_start(pod, c, delay)

    def _start_delay(self) -> float:
        t = self._timings
        return max(0.0, self._rand.uniform(t.container_start_delay - t.container_start_jitter,
                                           t.container_start_delay + t.container_start_jitter))

    def _behaviour(self, pod: SimPod, c: SimContainer, default_startup: float) -> tuple[Behaviour, list[str]]:
        annotations = pod.view.metadata.annotations or {}
        return behaviour(annotations, c.name, init=c.init, default_startup=default_startup)

    def _begin_start(self, pod: SimPod, c: SimContainer, default_startup: float) -> None:
        """The kubelet starts a container: image first, then create and start after the startup time."""
        c.starting = True
        plan, problems = self._behaviour(pod, c, default_startup)
        for problem in problems:
            self._event(pod, WARNING, "InvalidSimulationAnnotation", problem, c)
        specs = [*pod.view.spec.containers, *(pod.view.spec.init_containers or ())]
        policy = next((s.image_pull_policy for s in specs if s.name == c.name), None)
        pull = policy == "Always" or (policy != "Never" and c.image not in pod.node.images)
        if pull:
            # Containers started after this one find the image there, as the kubelet's pulls are serial.
            pod.node.images.add(c.image)
            self._event(pod, NORMAL, "Pulling", f'Pulling image "{c.image}"', c)
        else:
            self._event(pod, NORMAL, "Pulled", f'Container image "{c.image}" already present on machine', c)
        self._after(c, plan.startup, lambda: self._started(pod, c, plan, pull))

    def _started(self, pod: SimPod, c: SimContainer, plan: Behaviour, pulled: bool) -> None:
        c.timers.clear()
        if pulled:
            took = go_duration(plan.startup)
            size = image_size(c.image)
            self._event(pod, NORMAL, "Pulled", f'Successfully pulled image "{c.image}" in {took} ({took} '
                                               f"including waiting). Image size: {size} bytes.", c)
        if not pod.sandbox_ready:
            pod.sandbox_ready = True
            if not pod.pod_ip:
                pod.pod_ip = self._allocate_ip(pod)
        self._event(pod, NORMAL, "Created", f"Created container: {c.name}", c)
        c.start(plan, self._clock.now(), time.time(), narrate=self._runtime is None)
        if self._runtime is not None:
            self._spawn(self._run_process(pod, c, self._runtime), f"start-{c.name}")
            return
        self._event(pod, NORMAL, "Started", f"Started container {c.name}", c)
        if not self._probe(pod, c, plan.ready_after) and (not c.init or c.sidecar):
            c.ready = plan.ready_after == 0
        self._arm_running(pod, c)
        self._changed(pod)
        if c.sidecar:
            self._advance(pod)

    def _probe(self, pod: SimPod, c: SimContainer, ready_after: float = 0.0) -> bool:
        """Start the container's probes, if it declares any (init containers are not probed, sidecars are)."""
        if c.init and not c.sidecar:
            return False
        specs = [*pod.view.spec.containers, *(pod.view.spec.init_containers or ())]
        spec = next((s for s in specs if s.name == c.name), None)
        probes = container_probes(spec) if spec is not None else {}
        if not probes:
            return False
        check: Check
        if self._runtime is not None:
            runtime = self._runtime

            def check(probe: Probe, _elapsed: float) -> Awaitable[Result]:
                return runtime.probe(pod, c, probe)
        else:
            check = simulated_check(pod.view.metadata.annotations or {}, c.name, pod.pod_ip, ready_after)
        c.ready = False
        c.startup_passed = False if "startup" in probes else None

        def started() -> None:
            if c.startup_passed is False:
                c.startup_passed = True
                self._changed(pod)

        def ready(value: bool) -> None:
            c.ready = value
            if value and c.log is not None and self._runtime is None:
                c.log.write(f"kubesim: container {c.name} is ready", time.time())
            self._changed(pod)

        def kill(why: str, grace: int | None) -> None:
            self._event(pod, NORMAL, "Killing", f"Container {c.name} {why}", c)
            c.killed_by_probe = True
            if self._runtime is not None:
                c.prober = None
                self._runtime.stop(pod, c, grace if grace is not None else self._grace(pod))
            else:
                self._exited(pod, c, KILLED_EXIT_CODE)

        def unhealthy(message: str) -> None:
            self._event(pod, WARNING, "Unhealthy", message, c)

        c.prober = ContainerProber(self._clock, c.started_mono, probes, check, started, ready, kill, unhealthy)
        c.prober.start()
        return True

    async def _run_process(self, pod: SimPod, c: SimContainer, runtime: ContainerRuntime) -> None:
        """Start the container's process; its exit (with this instance's id) ends the instance."""
        instance = c.container_id

        def on_exit(code: int) -> None:
            if c.container_id == instance and c.state is State.RUNNING and pod.key in self._pods:
                self._exited(pod, c, code)

        try:
            await runtime.start(pod, c, on_exit)
        except StartError as err:
            if c.container_id != instance or pod.key not in self._pods:
                return
            self._event(pod, WARNING, "Failed", f"Error: {err}", c)
            self._exited(pod, c, START_ERROR_EXIT_CODE, reason="StartError", message=str(err))
            return
        if c.container_id != instance or c.state is not State.RUNNING:
            return
        self._event(pod, NORMAL, "Started", f"Started container {c.name}", c)
        if not self._probe(pod, c) and (not c.init or c.sidecar):
            c.ready = True
        self._changed(pod)
        if c.sidecar:
            self._advance(pod)
        if pod.terminating:
            # Deleted while it was starting: stop it now.
            runtime.stop(pod, c, self._grace(pod))

    def _spawn(self, coro: Coroutine[Any, Any, None], name: str) -> None:
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _arm_running(self, pod: SimPod, c: SimContainer) -> None:
        """Timers of a running instance: ready after ``ready_after``, exit after ``run`` (from its start)."""
        plan = c.behaviour
        if plan is None:
            return
        elapsed = self._clock.now() - c.started_mono
        if self._runtime is not None:
            # A real process: it is ready when it runs (or its probes say), and it exits on its own.
            return
        if not c.ready and (not c.init or c.sidecar) and c.prober is None:
            self._after(c, plan.ready_after - elapsed, lambda: self._became_ready(pod, c))
        if plan.run is not None:
            self._after(c, plan.run - elapsed, lambda: self._exited(pod, c, plan.exit_code))

    def _became_ready(self, pod: SimPod, c: SimContainer) -> None:
        c.ready = True
        if c.log is not None:
            c.log.write(f"kubesim: container {c.name} is ready", time.time())
        self._changed(pod)

    def _exited(self, pod: SimPod, c: SimContainer, exit_code: int, *, reason: str = "",
                message: str = "") -> None:
        c.cancel_timers()
        c.exit(exit_code, time.time(), narrate=self._runtime is None, reason=reason, message=message)
        if c.init and not c.sidecar and exit_code == 0:
            # The prober reports a completed init container as ready.
            c.ready = True
        if pod.terminating or pod.evicted is not None:
            self._changed(pod)
            if all(x.state is not State.RUNNING for x in pod.all_containers):
                self._finish_termination(pod)
            return
        if self._restarts(pod, c, exit_code):
            finished = self._clock.now()
            wait = c.restart_delay(finished)
            if wait:
                message = (f"back-off {go_duration(wait)} restarting failed container={c.name} "
                           f"pod={pod.describe()}")
                c.wait("CrashLoopBackOff", message)
                c.starting = True
                self._event(pod, WARNING, "BackOff",
                            f"Back-off restarting failed container {c.name} in pod {pod.describe()}", c)
            self._after(c, wait, lambda: self._restart(pod, c, finished))
        self._changed(pod)
        self._advance(pod)

    def _restarts(self, pod: SimPod, c: SimContainer, exit_code: int) -> bool:
        if c.sidecar:
            return True
        if c.killed_by_probe:
            # The kubelet restarts a container its probe killed unless the Pod never restarts.
            return pod.restart_policy != "Never"
        if c.init:
            return exit_code != 0 and pod.restart_policy != "Never"
        return pod.restart_policy == "Always" or (pod.restart_policy == "OnFailure" and exit_code != 0)

    def _restart(self, pod: SimPod, c: SimContainer, finished: float) -> None:
        c.timers.clear()
        c.note_restart(finished, self._clock.now())
        c.starting = False
        self._begin_start(pod, c, self._start_delay())

    def _update_phase(self, pod: SimPod) -> None:
        phase = pod_phase(pod)
        if phase in TERMINAL_PHASES and pod.phase not in TERMINAL_PHASES:
            pod.sandbox_ready = False
            self._release(pod)
        pod.phase = phase

    # --- eviction ---------------------------------------------------------------------------------------

    def evict(self, pod: SimPod, message: str) -> bool:
        """The eviction manager's choice: kill the Pod's containers at once and fail it with ``message``.

        The Pod stays, Failed with reason ``Evicted`` and a DisruptionTarget condition, as the
        kubelet leaves it (its controller makes a new one). False if it is already finishing.
        """
        if pod.phase in TERMINAL_PHASES or pod.terminating or pod.evicted is not None or pod.rejection is not None:
            return False
        pod.evicted = message
        log.info("evicting %s from %s: %s", pod.key, pod.node.name, message)
        self._event(pod, WARNING, "Evicted", message)
        running = False
        for c in pod.all_containers:
            c.cancel_timers()
            c.starting = False
            if c.state is not State.RUNNING:
                continue
            running = True
            self._event(pod, NORMAL, "Killing", f"Stopping container {c.name}", c)
            if self._runtime is not None:
                # A hard eviction has no grace period.
                self._runtime.stop(pod, c, 0)
            else:
                self._after(c, 0.0, functools.partial(self._exited, pod, c, KILLED_EXIT_CODE))
        if not running:
            self._finish_termination(pod)
        return True

    # --- deletion ---------------------------------------------------------------------------------------

    def _terminate(self, pod: SimPod) -> None:
        """The Pod got a deletionTimestamp: SIGTERM its containers, SIGKILL what outlives the grace period."""
        pod.terminating = True
        if pod.phase in TERMINAL_PHASES:
            # Nothing runs any more: only the final delete is left.
            self.statuses.add(pod.key)
            return
        grace = self._grace(pod)
        log.debug("killing the containers of %s (grace period %ss)", pod.key, grace)
        running = False
        for c in pod.all_containers:
            c.cancel_timers()
            c.starting = False
            if c.state is not State.RUNNING:
                continue
            running = True
            self._event(pod, NORMAL, "Killing", f"Stopping container {c.name}", c)
            if self._runtime is not None:
                # The process gets SIGTERM, then SIGKILL after the grace period; its exit comes back.
                self._runtime.stop(pod, c, grace)
                continue
            if c.log is not None:
                c.log.write(f"kubesim: container {c.name} received SIGTERM", time.time())
            shutdown = c.behaviour.shutdown if c.behaviour is not None else 0.0
            if shutdown < grace:
                self._after(c, shutdown, functools.partial(self._exited, pod, c, 0))
            else:
                self._after(c, grace, functools.partial(self._exited, pod, c, KILLED_EXIT_CODE))
        if not running:
            self._finish_termination(pod)

    @staticmethod
    def _grace(pod: SimPod) -> int:
        """The Pod's grace period: the deletion's, else the spec's, else 30 seconds."""
        grace = pod.view.metadata.deletion_grace_period_seconds
        if grace is None:
            grace = pod.view.spec.termination_grace_period_seconds
        return 30 if grace is None else max(grace, 0)

    def _finish_termination(self, pod: SimPod) -> None:
        """Every container has stopped: the kubelet's ``TerminatePod``, then the final write and delete."""
        for c in pod.all_containers:
            if c.state is not State.TERMINATED:
                c.cancel_timers()
                c.state = State.TERMINATED
                c.ready = False
                c.terminated = Terminated(KILLED_EXIT_CODE, _UNKNOWN_REASON, "", "", message=_UNKNOWN_MESSAGE)
        phase = pod_phase(pod, terminal=True)
        pod.phase = phase if phase in TERMINAL_PHASES and pod.evicted is None else FAILED
        pod.sandbox_ready = False
        self._release(pod)
        self._changed(pod)

    # --- resources --------------------------------------------------------------------------------------

    def _hold(self, pod: SimPod) -> None:
        node = pod.node
        node.used = add_resources(node.used, pod.requests)
        node.pod_count += 1
        node.pods.add(pod.key)
        node.host_ports.update(pod.host_ports)
        pod.holds_resources = True

    def _release(self, pod: SimPod) -> None:
        if not pod.holds_resources:
            return
        node = pod.node
        node.used = subtract_resources(node.used, pod.requests)
        node.pod_count -= 1
        node.pods.discard(pod.key)
        node.host_ports.difference_update(pod.host_ports)
        if pod.pod_ip and node.addresses is not None:
            node.addresses.release(pod.pod_ip)
        pod.holds_resources = False

    def _allocate_ip(self, pod: SimPod) -> str:
        # Processes listen on this host's addresses: such Pods share the node's network, as hostNetwork ones do.
        if pod.view.spec.host_network or self._runtime is not None:
            return pod.node.ip
        addresses = pod.node.addresses
        address = addresses.allocate() if addresses is not None else None
        if address is None:
            # The profile keeps maxPods within the podCIDR, so this only happens to a hand-made Node.
            raise RuntimeError(f"node {pod.node.name} has no free Pod IP")
        return address

    def _forget(self, pod: SimPod) -> None:
        """The Pod is gone from the API: drop it and everything it held (its processes included)."""
        for c in pod.all_containers:
            c.cancel_timers()
            if c.log is not None:
                c.log.close()
        if self._runtime is not None:
            self._runtime.forget(pod)
        self._release(pod)
        del self._pods[pod.key]
        log.debug("forgot %s", pod.key)

    # --- writing -----------------------------------------------------------------------------------------

    def _changed(self, pod: SimPod) -> None:
        """Something about the Pod changed: recompute its phase and queue a status write."""
        if pod.rejection is None:
            self._update_phase(pod)
        self.statuses.add(pod.key)
        if pod.phase == RUNNING and not pod.running_logged:
            pod.running_logged = True
            log.info("started the containers of %s on %s: %s", pod.key, pod.node.name,
                     ", ".join(c.name for c in pod.containers), extra={"step": 12})

    async def _write(self, key: ObjectKey) -> None:
        if self._heartbeats_on_time is not None and not self._heartbeats_on_time.is_set():
            await self._heartbeats_on_time.wait()
        pod = self._pods.get(key)
        if pod is None:
            self.statuses.forget(key)
            return
        if pod.node.stopped:
            pod.node.parked.add(key)
            return
        status = pod_status(pod, now_time())
        digest = hash(orjson.dumps(status))
        try:
            if digest != pod.written:
                client = pod.node.client or self._client
                written = await client.patch(
                    POD_VIEWS, pod.name, {"metadata": {"uid": pod.uid}, "status": status},
                    namespace=pod.namespace, subresource="status", field_manager=FIELD_MANAGER)
                pod.written = digest
                pod.written_rv = int(written.metadata.resource_version or 0)
                pod.written_ready = next((c["status"] for c in status.get("conditions") or ()
                                          if c["type"] == "Ready"), None)
                log.info("status of %s persisted: %s (rv %s)", key, status["phase"],
                         written.metadata.resource_version, extra={"step": 13})
            if pod.terminating and pod.phase in TERMINAL_PHASES and not pod.deleted:
                await (pod.node.client or self._client).delete(POD_VIEWS, pod.name, namespace=pod.namespace,
                                                               uid=pod.uid, grace_period_seconds=0)
                pod.deleted = True
        except (NotFound, Conflict):
            # Gone, or replaced by another Pod of the same name: the watch will say so.
            self.statuses.forget(key)
            return
        except (ApiError, httpx.TransportError) as err:
            self._warnings.warning("failed to update the status of %s, will retry: %s", key, err)
            self.statuses.add_rate_limited(key)
            return
        self.statuses.forget(key)

    # --- helpers -----------------------------------------------------------------------------------------

    def _after(self, c: SimContainer, delay: float, callback: Callable[[], None]) -> None:
        c.timers.append(self._clock.call_at(self._clock.now() + max(delay, 0.0), callback))

    def _event(self, pod: SimPod, type: EventType, reason: str, message: str,
               c: SimContainer | None = None) -> None:
        meta = pod.view.metadata
        field_path = None
        if c is not None:
            field_path = f"spec.initContainers{{{c.name}}}" if c.init else f"spec.containers{{{c.name}}}"
        ref = V1ObjectReference(kind="Pod", api_version="v1", namespace=meta.namespace, name=meta.name,
                                uid=meta.uid, resource_version=meta.resource_version or None,
                                field_path=field_path)
        pod.node.event(ref, type, reason, message)


def _ready_overwritten(view: PodView, pod: SimPod) -> bool:
    """Whether ``view``, newer than the kubelet's last status write, holds another Ready status than it wrote."""
    try:
        rv = int(view.metadata.resource_version or 0)
    except ValueError:
        return False
    if rv <= pod.written_rv:
        return False
    ready = next((c.status for c in view.status.conditions or () if c.type == "Ready"), None)
    return ready != pod.written_ready


def _terminated(state: Mapping[str, Any]) -> Terminated:
    return Terminated(int(state.get("exitCode") or 0), state.get("reason") or "",
                      state.get("startedAt") or "", state.get("finishedAt") or "",
                      state.get("containerID") or "", state.get("message") or "")
