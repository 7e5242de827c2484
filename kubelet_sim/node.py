"""Simulated nodes: registration, Lease heartbeats, status reports, and failing on demand.

Each node behaves, as seen through the API, like a kubelet's node agent
(pkg/kubelet/kubelet_node_status.go, pkg/kubelet/nodestatus,
component-helpers' lease controller):

- **registration**: create the Node with its labels, taints, podCIDR and a full
  status (capacity, allocatable, the four conditions, addresses, nodeInfo,
  daemonEndpoints on this process's kubelet port); if it already exists, adopt
  it: reconcile the kubelet's own labels, then patch the status (the port has
  changed). Failures retry from 100 ms doubling to 7 s, as the kubelet does.
- **Lease heartbeats**: ``kube-node-lease/<node>`` renewed every
  ``nodeLeaseRenewInterval`` with an update based on the Lease last written (no
  read), a read only after a conflict, a create when it is missing.
- **status reports**: every ``nodeStatusUpdateFrequency`` the node compares the
  status it would report with the server's (kept current by the Node watch);
  it patches ``nodes/status`` when they differ (the node lifecycle controller
  set Ready to Unknown, say) or when ``nodeStatusReportFrequency`` has passed.
- **adoption** (:mod:`kubelet_sim.adopt`): a Node that exists already (a
  snapshot's, a replayed trace's) joins at run time with :meth:`NodeManager.add_node`
  and reports the conditions it was given instead of a healthy kubelet's; when
  such a Node is deleted, it is gone for good (it is not registered again).
- **stop/start** (:meth:`NodeManager.stop`): a stopped node writes nothing
  (no Lease, no status, no Pod updates, no Events) until started again, so the
  node lifecycle controller sees it as unreachable; its simulated containers
  keep running meanwhile, as they would behind a network partition.

At 5,000 nodes the writes must not come in bursts: node ``i`` of ``n`` renews
at a fixed offset ``i/n`` of the interval, on a fixed-rate schedule, so the
process sends a steady ``n / interval`` renewals a second. Per-node state is a
compact :class:`SimNode`; the process never holds a full ``V1Node``.

Concurrency: one event loop. Timers only enqueue node names; the work queues'
workers do the writes (at most one write of each kind per node at a time).
"""

from __future__ import annotations

import asyncio
import hashlib
import ipaddress
import logging
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import httpx
from kubernetes.client import V1ObjectReference

from kubelet_sim.profile import LABEL_ARCH, LABEL_HOSTNAME, LABEL_OS, PlannedNode, Timings
from kubelet_sim.views import LEASE_VIEWS, NODE_VIEWS, LeaseView, NodeView
from machinery.api.kinds import ObjectKey
from machinery.api.meta import now_micro_time, now_time
from machinery.api.quantity import ResourceList, milli_value, resource_list
from machinery.api.schema import KUBERNETES_VERSION
from machinery.client import AlreadyExists, ApiError, Client, Conflict, NotFound, PatchType
from machinery.client.clock import Clock, RealClock
from machinery.events import NORMAL, EventBroadcaster, EventRecorder, EventType
from machinery.informer import DeletedFinalStateUnknown
from machinery.workqueue import ItemExponentialFailureRateLimiter, WorkQueue, run_workers

log = logging.getLogger("kubelet_sim.node")

NODE_LEASE_NAMESPACE: Final = "kube-node-lease"
#: Every simulated node answers on loopback: the APIServer reaches /containerLogs there.
NODE_IP: Final = "127.0.0.1"
FIELD_MANAGER: Final = "kubelet"
EVENT_SOURCE: Final = "kubelet"
KUBELET_VERSION: Final = KUBERNETES_VERSION
CONTAINER_RUNTIME_VERSION: Final = "containerd://1.7.24"

_ATTACH_DETACH_ANNOTATION: Final = "volumes.kubernetes.io/controller-managed-attach-detach"
#: The kubelet's own labels, reconciled on an existing Node (updateDefaultLabels).
_DEFAULT_LABELS: Final = (LABEL_HOSTNAME, LABEL_OS, LABEL_ARCH, "beta.kubernetes.io/os",
                          "beta.kubernetes.io/arch")

#: (type, status, reason, message, event) of the conditions a healthy kubelet reports, in its order.
_HEALTHY_CONDITIONS: Final = (
    ("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available",
     "NodeHasSufficientMemory"),
    ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure",
     "NodeHasNoDiskPressure"),
    ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available",
     "NodeHasSufficientPID"),
    ("Ready", "True", "KubeletReady", "kubelet is posting ready status", "NodeReady"),
)

_MEMORY_PRESSURE: Final = ("MemoryPressure", "True", "KubeletHasInsufficientMemory",
                           "kubelet has insufficient memory available", "NodeHasInsufficientMemory")


def reported_conditions(node: SimNode) -> tuple[tuple[str, str, str, str, str], ...]:
    """(type, status, reason, message, event) of the conditions this node reports now."""
    if node.reported is not None:
        # An adopted node reports what it was given; its Events say so as a kubelet's would.
        return tuple((ctype, status, reason, message, f"Node{ctype}{status}")
                     for ctype, status, reason, message in node.reported)
    if not node.memory_pressure:
        return _HEALTHY_CONDITIONS
    return (_MEMORY_PRESSURE, *_HEALTHY_CONDITIONS[1:])


# The kubelet's registration retry (100 ms doubling to 7 s) and its lease controller's maxBackoff.
_RETRY_BASE: Final = 0.1
_RETRY_MAX: Final = 7.0


class ThrottledWarnings:
    """At most one warning line per ``period`` seconds, then how many were held back.

    An APIServer outage makes every node's renewal fail: at 5,000 nodes that would
    be 500 lines a second, which costs more than the work itself and says nothing more.
    """

    def __init__(self, logger: logging.Logger, period: float = 10.0, clock: Clock | None = None) -> None:
        self._log = logger
        self._period = period
        self._clock = clock or RealClock()
        self._last: float | None = None
        self._held = 0

    def warning(self, message: str, *args: object) -> None:
        now, last = self._clock.now(), self._last
        if last is not None and now - last < self._period:
            self._held += 1
            return
        if self._held and last is not None:
            message += f" ({self._held} similar warnings in the last {now - last:.0f}s)"
        self._log.warning(message, *args)
        self._last, self._held = now, 0


class AddressPool:
    """Pod IPs of one node's podCIDR; the network, gateway (.1) and broadcast addresses are never given."""

    __slots__ = ("_base", "_free", "_next", "_size", "_taken")

    def __init__(self, cidr: str) -> None:
        network = ipaddress.ip_network(cidr)
        self._base = int(network.network_address)
        self._size = network.num_addresses
        self._next = 2
        self._free: list[int] = []
        self._taken: set[int] = set()

    def allocate(self) -> str | None:
        """A free address, or None when the range is exhausted."""
        while self._free:
            offset = self._free.pop()
            if offset not in self._taken:
                self._taken.add(offset)
                return str(ipaddress.ip_address(self._base + offset))
        while self._next < self._size - 1:
            offset = self._next
            self._next += 1
            if offset not in self._taken:
                self._taken.add(offset)
                return str(ipaddress.ip_address(self._base + offset))
        return None

    def reserve(self, address: str) -> None:
        """Mark an address already in use (a Pod adopted after a restart)."""
        offset = self._offset(address)
        if offset is not None:
            self._taken.add(offset)

    def release(self, address: str) -> None:
        offset = self._offset(address)
        if offset is not None and offset in self._taken:
            self._taken.discard(offset)
            self._free.append(offset)

    def _offset(self, address: str) -> int | None:
        try:
            offset = int(ipaddress.ip_address(address)) - self._base
        except ValueError:
            return None
        return offset if 0 < offset < self._size - 1 else None


@dataclass(slots=True, eq=False)
class SimNode:
    """What the process keeps of one node: a few ints and strings, no API object."""

    planned: PlannedNode
    index: int
    recorder: EventRecorder
    #: The node's allocatable in milli-units (shared between the nodes of a group; never mutated).
    allocatable: ResourceList
    #: The node's InternalIP (and its Pods' hostIP): where the APIServer reaches this process.
    ip: str = NODE_IP
    uid: str = ""
    registered: bool = False
    stopped: bool = False
    #: The labels and taints as the server has them (users may change them).
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Mapping[str, Any], ...] = ()
    #: Condition type -> (status, lastTransitionTime) as the server has them.
    server_conditions: dict[str, tuple[str, str]] = field(default_factory=dict)
    lease_resource_version: str = ""
    last_report: float | None = None
    #: Whether the node's heartbeat timers run (they start at the first registration and never stop).
    scheduled: bool = False
    #: Requests of the admitted, not yet finished Pods, and how many there are.
    used: ResourceList = field(default_factory=dict)
    pod_count: int = 0
    #: The admitted, not yet finished Pods themselves (what uses the node's resources).
    pods: set[ObjectKey] = field(default_factory=set)
    #: Under memory pressure (the eviction manager says), and since when (monotonic seconds).
    memory_pressure: bool = False
    memory_pressure_since: float = 0.0
    #: (protocol, hostIP, hostPort) of the admitted Pods' host ports.
    host_ports: set[tuple[str, str, int]] = field(default_factory=set)
    addresses: AddressPool | None = None
    images: set[str] = field(default_factory=set)
    #: Pods whose changes arrived while the node was stopped or not yet registered.
    unsynced: set[ObjectKey] = field(default_factory=set)
    #: Pods whose status writes wait for the node to start again.
    parked: set[ObjectKey] = field(default_factory=set)
    #: An adopted node's own conditions, (type, status, reason, message) in the order reported; None: healthy.
    reported: tuple[tuple[str, str, str, str], ...] | None = None
    #: The client that acts as this node (``system:node:<name>``); None: the process's own.
    client: Client | None = field(default=None, repr=False, compare=False)

    @property
    def name(self) -> str:
        return self.planned.name

    @property
    def os(self) -> str:
        return self.planned.group.os

    @property
    def capacity_memory(self) -> int:
        """The node's memory capacity in bytes."""
        return -(-milli_value(self.planned.group.capacity.get("memory", "0")) // 1000)

    @property
    def active(self) -> bool:
        """Registered and not stopped: the node may act and write."""
        return self.registered and not self.stopped

    def event(self, obj: V1ObjectReference, type: EventType, reason: str, message: str) -> None:
        """Record an Event from this node's kubelet; a stopped node records none (it cannot reach the API)."""
        if not self.stopped:
            self.recorder.event(obj, type, reason, message)


# --- the objects a kubelet writes -------------------------------------------------------------------------


def node_info(node: SimNode) -> dict[str, str]:
    """``status.nodeInfo``: stable ids derived from the name, the versions kubesim emulates."""
    name = node.name
    return {
        "machineID": hashlib.md5(name.encode(), usedforsecurity=False).hexdigest(),
        "systemUUID": str(uuid.uuid5(uuid.NAMESPACE_DNS, name)),
        "bootID": str(uuid.uuid5(uuid.NAMESPACE_URL, name)),
        "kernelVersion": "6.8.0-kubesim",
        "osImage": "kubesim simulated node",
        "containerRuntimeVersion": CONTAINER_RUNTIME_VERSION,
        "kubeletVersion": KUBELET_VERSION,
        "kubeProxyVersion": "",
        "operatingSystem": node.os,
        "architecture": node.planned.group.arch,
    }


def node_conditions(node: SimNode, now: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The conditions to report (heartbeat ``now``) and the Events of those that changed.

    A condition keeps its server-side ``lastTransitionTime`` while its status does not change.
    """
    conditions: list[dict[str, Any]] = []
    events: list[str] = []
    for ctype, status, reason, message, event in reported_conditions(node):
        previous = node.server_conditions.get(ctype)
        transition = previous[1] if previous is not None and previous[0] == status and previous[1] else now
        if previous is None or previous[0] != status:
            events.append(event)
        conditions.append({"type": ctype, "status": status, "lastHeartbeatTime": now,
                           "lastTransitionTime": transition, "reason": reason, "message": message})
    return conditions, events


def node_status(node: SimNode, port: int, now: str) -> tuple[dict[str, Any], list[str]]:
    """The full ``NodeStatus`` the kubelet reports, and the Events of the conditions that changed."""
    group = node.planned.group
    conditions, events = node_conditions(node, now)
    status = {
        "capacity": dict(group.capacity),
        "allocatable": dict(group.allocatable),
        "conditions": conditions,
        "addresses": [{"type": "InternalIP", "address": node.ip}, {"type": "Hostname", "address": node.name}],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": port}},
        "nodeInfo": node_info(node),
    }
    return status, events


def node_object(node: SimNode, port: int, now: str) -> tuple[dict[str, Any], list[str]]:
    """The Node to register (the kubelet's ``initialNode``), and the Events of its conditions."""
    planned = node.planned
    status, events = node_status(node, port, now)
    spec: dict[str, Any] = {"podCIDR": planned.pod_cidr, "podCIDRs": [planned.pod_cidr]}
    if planned.group.taints:
        spec["taints"] = [dict(t) for t in planned.group.taints]
    body = {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": node.name, "labels": dict(planned.labels),
                     "annotations": {_ATTACH_DETACH_ANNOTATION: "true"}},
        "spec": spec,
        "status": status,
    }
    return body, events


def lease_object(node: SimNode, duration_seconds: int) -> dict[str, Any]:
    """The node's Lease with ``renewTime`` now, based on the version last written (if any)."""
    metadata: dict[str, Any] = {
        "name": node.name, "namespace": NODE_LEASE_NAMESPACE,
        "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": node.name, "uid": node.uid}],
    }
    if node.lease_resource_version:
        metadata["resourceVersion"] = node.lease_resource_version
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": metadata,
            "spec": {"holderIdentity": node.name, "leaseDurationSeconds": duration_seconds,
                     "renewTime": now_micro_time()}}


def next_slot(now: float, epoch: float, interval: float, offset: float) -> float:
    """The first time after ``now`` on the fixed-rate schedule ``epoch + offset + k * interval``."""
    first = epoch + offset
    if now < first:
        return first
    periods = int((now - first) // interval) + 1
    return first + periods * interval


# --- the manager ------------------------------------------------------------------------------------------


class NodeManager:
    """Registers the process's nodes and keeps them alive (or not, on demand).

    ``on_active(node)`` is called when a node has registered or started again:
    the Pod side then processes what arrived for it meanwhile.
    """

    def __init__(self, client: Client, events: EventBroadcaster, planned: Iterable[PlannedNode], *,
                 timings: Timings, on_active: Callable[[SimNode], None], clock: Clock | None = None,
                 registration_workers: int = 32, node_ip: str = NODE_IP,
                 on_unknown_node: Callable[[NodeView], None] | None = None,
                 client_for: Callable[[str], Client] | None = None) -> None:
        self._client = client
        self._client_for = client_for
        self._events = events
        self._node_ip = node_ip
        #: Called with Nodes the process does not host (the adopter takes those it may).
        self.on_unknown_node = on_unknown_node
        #: Names of the nodes added at run time (adopted): deleting one removes it.
        self.adopted: set[str] = set()
        self._timings = timings
        self._on_active = on_active
        self._clock = clock or RealClock()
        self._registration_workers = registration_workers
        self.port = 0
        allocatable: dict[int, ResourceList] = {}
        self.nodes: dict[str, SimNode] = {}
        for index, p in enumerate(planned):
            shared = allocatable.setdefault(id(p.group), resource_list(p.group.allocatable))
            self.nodes[p.name] = SimNode(p, index, events.recorder(EVENT_SOURCE, p.name), shared, ip=node_ip,
                                         labels=p.labels, taints=tuple(p.group.taints),
                                         client=client_for(p.name) if client_for is not None else None)
        self._registrations: WorkQueue[str] = WorkQueue(
            "node-registration", rate_limiter=ItemExponentialFailureRateLimiter(_RETRY_BASE, _RETRY_MAX),
            clock=self._clock)
        self._leases: WorkQueue[str] = WorkQueue(
            "node-lease", rate_limiter=ItemExponentialFailureRateLimiter(_RETRY_BASE, _RETRY_MAX),
            clock=self._clock)
        self._statuses: WorkQueue[str] = WorkQueue(
            "node-status", rate_limiter=ItemExponentialFailureRateLimiter(_RETRY_BASE, _RETRY_MAX),
            clock=self._clock)
        self._registered = 0
        self._epoch = 0.0
        self._warnings = ThrottledWarnings(log, clock=self._clock)
        self._lease_workers = min(256, max(8, len(self.nodes) // 20))
        #: Set while Lease renewals keep up. Pod status writes wait while it is clear: the stand-in
        #: for API Priority and Fairness, which serves node heartbeats before workload writes. (Letting
        #: 8 go on meanwhile kept the renewals behind for most of a density run, and the Pods reached
        #: Running later: 206 s against 173 s, startup p50 77.6 s against 16.8 s.)
        self.heartbeats_on_time = asyncio.Event()
        self.heartbeats_on_time.set()

    @property
    def all_registered(self) -> bool:
        return self._registered == len(self.nodes)

    # --- the Node watch -------------------------------------------------------------------------------

    def on_node(self, view: NodeView) -> None:
        """Informer handler (add and update): keep what the server holds for our nodes."""
        node = self.nodes.get(view.metadata.name)
        if node is None:
            if self.on_unknown_node is not None:
                self.on_unknown_node(view)
            return
        node.labels = view.metadata.labels or {}
        node.taints = tuple(view.spec.taints or ())
        node.server_conditions = {c.type: (c.status, c.last_transition_time or "")
                                  for c in view.status.conditions or ()}
        if view.metadata.uid:
            node.uid = view.metadata.uid
        # The kubelet's next status check would notice within nodeStatusUpdateFrequency; reporting at
        # once is the same outcome, sooner, and what makes a node Ready again right after it starts.
        # (What it would report: an adopted node may report itself not Ready, and must not loop on it.)
        if node.active and _differs(node):
            self._statuses.add(node.name)

    def on_node_deleted(self, view: NodeView | DeletedFinalStateUnknown[NodeView]) -> None:
        """Informer handler: someone deleted one of our Nodes; register it again, as a restarted kubelet does.

        (A running kubelet would only log errors until it is restarted; re-registering is what a user
        deleting a simulated node most likely wants.)
        """
        name = view.key if isinstance(view, DeletedFinalStateUnknown) else view.metadata.name
        if name in self.adopted:
            # Even while its adoption is in flight: an adopted Node deleted is gone for good.
            self.remove_node(name)
            return
        node = self.nodes.get(name)
        if node is None or not node.registered:
            return
        log.info("node %s was deleted from the API; registering it again", name)
        node.registered = False
        node.server_conditions = {}
        node.lease_resource_version = ""
        self._registered -= 1
        self._registrations.add(name)

    # --- running --------------------------------------------------------------------------------------

    async def run(self, port: int) -> None:
        """Register every node, then keep them alive until cancelled. ``port`` is the kubelet API's."""
        self.port = port
        self._epoch = self._clock.now()
        for name in self.nodes:
            self._registrations.add(name)
        async with asyncio.TaskGroup() as group:
            group.create_task(run_workers(self._registrations, self._register,
                                          workers=self._registration_workers, drain_timeout=0),
                              name="node-registration")
            group.create_task(run_workers(self._leases, self._renew, workers=self._lease_workers,
                                          drain_timeout=0), name="node-lease")
            group.create_task(run_workers(self._statuses, self._report, workers=8, drain_timeout=0),
                              name="node-status")

    def add_node(self, planned: PlannedNode, *,
                 reported: tuple[tuple[str, str, str, str], ...] | None = None) -> SimNode:
        """Host one more node from now on (an adopted one): it registers, or adopts its existing Node."""
        node = SimNode(planned, len(self.nodes), self._events.recorder(EVENT_SOURCE, planned.name),
                       resource_list(planned.group.allocatable), ip=self._node_ip, labels=planned.labels,
                       taints=tuple(planned.group.taints), reported=reported,
                       client=self._client_for(planned.name) if self._client_for is not None else None)
        self.nodes[planned.name] = node
        self.adopted.add(planned.name)
        self._registrations.add(planned.name)
        return node

    def remove_node(self, name: str) -> None:
        """Stop hosting an adopted node whose Node was deleted: no more writes, its timers end."""
        node = self.nodes.pop(name, None)
        self.adopted.discard(name)
        if node is None:
            return
        if node.registered:
            self._registered -= 1
        node.registered = False
        node.stopped = True
        log.info("node %s was deleted from the API; it is no longer simulated", name)

    def stop(self, name: str) -> SimNode | None:
        """Make a node fail: from now on it writes nothing. None when the process has no such node."""
        node = self.nodes.get(name)
        if node is not None and not node.stopped:
            node.stopped = True
            log.info("node %s stopped: no more heartbeats, status or Pod updates", name)
        return node

    def start(self, name: str) -> SimNode | None:
        """Let a stopped node recover: it renews its Lease, reports Ready and catches up with its Pods."""
        node = self.nodes.get(name)
        if node is None or not node.stopped:
            return node
        node.stopped = False
        log.info("node %s started again", name)
        if node.registered:
            node.event(self._node_ref(node), NORMAL, "Starting", "Starting kubelet.")
            self._leases.add(name)
            self._statuses.add(name)
            self._on_active(node)
        return node

    # --- registration ---------------------------------------------------------------------------------

    async def _register(self, name: str) -> None:
        node = self.nodes.get(name)
        if node is None:
            return
        try:
            if name in self.adopted:
                # An adopted Node is someone else's: it is taken over, never created. Gone already, it
                # is not simulated (its deletion may have come before its adoption got this far).
                try:
                    await self._adopt(node, node_object(node, self.port, now_time())[0])
                except NotFound:
                    self.remove_node(name)
                    return
            else:
                await self._register_node(node)
            if self.nodes.get(name) is not node:
                return  # deleted (and removed) while it was being adopted
            await self._ensure_lease(node)
        except (ApiError, httpx.TransportError) as err:
            self._warnings.warning("unable to register node %s with the APIServer, will retry: %s", name,
                                   err)
            self._registrations.add_rate_limited(name)
            return
        self._registrations.forget(name)
        node.registered = True
        self._registered += 1
        node.last_report = self._clock.now()
        log.debug("registered node %s", name)
        if self.all_registered:
            log.info("registered %d node(s): %s", len(self.nodes), _summary(self.nodes))
        if not node.scheduled:
            self._schedule(node)
        if not node.stopped:
            self._on_active(node)

    async def _register_node(self, node: SimNode) -> None:
        now = now_time()
        body, events = node_object(node, self.port, now)
        try:
            created = await self.client_of(node).create(NODE_VIEWS, body, field_manager=FIELD_MANAGER)
        except AlreadyExists:
            await self._adopt(node, body)
            return
        node.uid = created.metadata.uid
        node.addresses = AddressPool(node.planned.pod_cidr)
        self._announce(node, events)

    async def _adopt(self, node: SimNode, body: dict[str, Any]) -> None:
        """The Node exists (an earlier run): keep its podCIDR, fix the kubelet's labels, report status."""
        existing = await self.client_of(node).get(NODE_VIEWS, node.name)
        node.uid = existing.metadata.uid
        node.addresses = AddressPool(existing.spec.pod_cidr or node.planned.pod_cidr)
        labels = existing.metadata.labels or {}
        own = body["metadata"]["labels"]
        wanted = {k: own[k] for k in _DEFAULT_LABELS if labels.get(k) != own[k]}
        if wanted:
            await self.client_of(node).patch(NODE_VIEWS, node.name, {"metadata": {"labels": wanted}},
                                     patch_type=PatchType.MERGE, field_manager=FIELD_MANAGER)
        node.server_conditions = {c.type: (c.status, c.last_transition_time or "")
                                  for c in existing.status.conditions or ()}
        await self._write_status(node)
        node.event(self._node_ref(node), NORMAL, "Starting", "Starting kubelet.")

    async def _ensure_lease(self, node: SimNode) -> None:
        body = lease_object(node, self._timings.node_lease_duration_seconds)
        try:
            lease = await self.client_of(node).create(LEASE_VIEWS, body, field_manager=FIELD_MANAGER)
        except AlreadyExists:
            # An earlier run's Lease: renew it from the version the server holds.
            current = await self.client_of(node).get(LEASE_VIEWS, node.name, namespace=NODE_LEASE_NAMESPACE)
            node.lease_resource_version = _rv(current)
            lease = await self._write_lease(node)
        node.lease_resource_version = _rv(lease)

    def _announce(self, node: SimNode, events: list[str]) -> None:
        ref = self._node_ref(node)
        node.event(ref, NORMAL, "Starting", "Starting kubelet.")
        for event in events:
            node.event(ref, NORMAL, event, f"Node {node.name} status is now: {event}")

    @staticmethod
    def _node_ref(node: SimNode) -> V1ObjectReference:
        # The kubelet's nodeRef carries the node's name as its uid too.
        return V1ObjectReference(kind="Node", api_version="v1", name=node.name, uid=node.name)

    # --- heartbeats -----------------------------------------------------------------------------------

    def _schedule(self, node: SimNode) -> None:
        """Put the node on the fixed-rate Lease and status schedules, at its own offset.

        The timers re-arm themselves forever; they act only while the node is active.
        """
        node.scheduled = True
        count = len(self.nodes)
        renew = self._timings.node_lease_renew_interval
        check = self._timings.node_status_update_frequency
        now = self._clock.now()
        lease_due = next_slot(now, self._epoch, renew, renew * node.index / count)
        self._clock.call_at(lease_due, lambda: self._lease_due(node, lease_due))
        status_due = next_slot(now, self._epoch, check, check * node.index / count)
        self._clock.call_at(status_due, lambda: self._status_due(node, status_due))

    def _after(self, due: float, interval: float) -> float:
        """The time to look for the slot after ``due`` from.

        Not the clock's reading alone: a timer may fire before its time (uvloop
        rounds its clock to milliseconds and reads it once per turn of the loop,
        so under load a timer runs up to a turn early), and the slot found from
        that reading would be ``due`` again: a second renewal a few milliseconds
        after the first (seen: 709 renewals a second from 5,000 nodes, not 500).
        """
        return max(self._clock.now(), due + interval / 2)

    def _lease_due(self, node: SimNode, due: float) -> None:
        if self.nodes.get(node.name) is not node:
            return
        if node.active:
            self._leases.add(node.name)
            self._check_backlog()
        renew = self._timings.node_lease_renew_interval
        offset = renew * node.index / len(self.nodes)
        following = next_slot(self._after(due, renew), self._epoch, renew, offset)
        self._clock.call_at(following, lambda: self._lease_due(node, following))

    def _status_due(self, node: SimNode, due: float) -> None:
        if self.nodes.get(node.name) is not node:
            return
        now = self._clock.now()
        if node.active:
            report = self._timings.node_status_report_frequency
            stale = node.last_report is None or now - node.last_report >= report
            if stale or _differs(node):
                self._statuses.add(node.name)
        check = self._timings.node_status_update_frequency
        following = next_slot(self._after(due, check), self._epoch, check, check * node.index / len(self.nodes))
        self._clock.call_at(following, lambda: self._status_due(node, following))

    def client_of(self, node: SimNode) -> Client:
        """The client acting as ``node`` (its own identity when it has one)."""
        return node.client or self._client

    async def _renew(self, name: str) -> None:
        node = self.nodes.get(name)
        if node is None or not node.active:
            return
        try:
            lease = await self._write_lease(node)
        except (ApiError, httpx.TransportError) as err:
            self._warnings.warning("failed to renew the lease of node %s, will retry: %s", name, err)
            self._leases.add_rate_limited(name)
            return
        self._leases.forget(name)
        node.lease_resource_version = _rv(lease)
        self._check_backlog()

    async def _write_lease(self, node: SimNode) -> LeaseView:
        """Renew on top of the Lease last written; read it after a conflict, create it when it is missing."""
        duration, client = self._timings.node_lease_duration_seconds, self.client_of(node)
        try:
            return await client.update(LEASE_VIEWS, lease_object(node, duration), field_manager=FIELD_MANAGER)
        except Conflict:
            current = await client.get(LEASE_VIEWS, node.name, namespace=NODE_LEASE_NAMESPACE)
            node.lease_resource_version = _rv(current)
        except NotFound:
            node.lease_resource_version = ""
            return await client.create(LEASE_VIEWS, lease_object(node, duration), field_manager=FIELD_MANAGER)
        return await client.update(LEASE_VIEWS, lease_object(node, duration), field_manager=FIELD_MANAGER)

    def _check_backlog(self) -> None:
        """Renewals waiting for a worker mean the APIServer is behind: hold the Pod writes back."""
        if len(self._leases) > self._lease_workers:
            self.heartbeats_on_time.clear()
        else:
            self.heartbeats_on_time.set()

    async def _report(self, name: str) -> None:
        node = self.nodes.get(name)
        if node is None or not node.active:
            return
        try:
            await self._write_status(node)
        except NotFound:
            # Deleted meanwhile: the Node watch re-registers it.
            return
        except (ApiError, httpx.TransportError) as err:
            self._warnings.warning("error updating the status of node %s, will retry: %s", name, err)
            self._statuses.add_rate_limited(name)
            return
        self._statuses.forget(name)

    async def _write_status(self, node: SimNode) -> None:
        status, events = node_status(node, self.port, now_time())
        await self.client_of(node).patch(NODE_VIEWS, node.name, {"status": status}, subresource="status",
                                         field_manager=FIELD_MANAGER)
        node.last_report = self._clock.now()
        node.server_conditions = {c["type"]: (c["status"], c["lastTransitionTime"])
                                  for c in status["conditions"]}
        ref = self._node_ref(node)
        for event in events:
            node.event(ref, NORMAL, event, f"Node {node.name} status is now: {event}")


def _differs(node: SimNode) -> bool:
    """Whether the server's conditions differ from what this node would report."""
    return any(node.server_conditions.get(ctype, ("",))[0] != status
               for ctype, status, *_ in reported_conditions(node))


def _rv(lease: LeaseView) -> str:
    return lease.metadata.resource_version


def _summary(nodes: Mapping[str, SimNode]) -> str:
    names = list(nodes)
    return ", ".join(names) if len(names) <= 5 else f"{', '.join(names[:3])}, ..., {names[-1]}"

