"""Simulated nodes: the objects they write, Pod addresses, and heartbeats spread over the interval."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from kubernetes.client import V1Status

from kubelet_sim.node import (
    AddressPool,
    NodeManager,
    SimNode,
    ThrottledWarnings,
    lease_object,
    next_slot,
    node_conditions,
    node_object,
)
from kubelet_sim.profile import Timings, load_profile
from kubelet_sim.views import LeaseView, NodeView
from machinery.api.quantity import resource_list
from machinery.client import AlreadyExists, Conflict, NotFound
from machinery.client.clock import FakeClock, Timer
from machinery.events import EventBroadcaster


class Recorder:
    def __init__(self) -> None:
        self.reasons: list[str] = []

    def event(self, obj: Any, type: str, reason: str, message: str) -> None:
        self.reasons.append(reason)


def sim_node(index: int = 0) -> SimNode:
    planned = load_profile().plan()[index]
    recorder: Any = Recorder()
    return SimNode(planned, index, recorder, resource_list(planned.group.allocatable), labels=planned.labels)


def test_the_node_registers_as_a_kubelets_initial_node() -> None:
    node = sim_node(1)
    body, events = node_object(node, 10250, "2024-05-01T10:00:00Z")
    meta, spec, status = body["metadata"], body["spec"], body["status"]
    assert meta["name"] == "node-2"
    assert meta["labels"]["kubernetes.io/hostname"] == "node-2"
    assert meta["annotations"] == {"volumes.kubernetes.io/controller-managed-attach-detach": "true"}
    assert spec == {"podCIDR": "10.0.1.0/24", "podCIDRs": ["10.0.1.0/24"]}
    assert status["capacity"] == {"cpu": "4", "memory": "16Gi", "pods": "110", "ephemeral-storage": "100Gi"}
    assert status["allocatable"]["cpu"] == "3800m"
    assert [(c["type"], c["status"], c["reason"]) for c in status["conditions"]] == [
        ("MemoryPressure", "False", "KubeletHasSufficientMemory"),
        ("DiskPressure", "False", "KubeletHasNoDiskPressure"),
        ("PIDPressure", "False", "KubeletHasSufficientPID"), ("Ready", "True", "KubeletReady")]
    assert all(c["lastHeartbeatTime"] == c["lastTransitionTime"] == "2024-05-01T10:00:00Z"
               for c in status["conditions"])
    assert status["addresses"] == [{"type": "InternalIP", "address": "127.0.0.1"},
                                   {"type": "Hostname", "address": "node-2"}]
    assert status["daemonEndpoints"] == {"kubeletEndpoint": {"Port": 10250}}
    info = status["nodeInfo"]
    assert (info["kubeletVersion"], info["operatingSystem"], info["architecture"]) == (
        "v1.32.0", "linux", "amd64")
    assert info["containerRuntimeVersion"].startswith("containerd://")
    assert node_object(sim_node(1), 1, "t")[0]["status"]["nodeInfo"]["machineID"] == info["machineID"]
    assert events == ["NodeHasSufficientMemory", "NodeHasNoDiskPressure", "NodeHasSufficientPID", "NodeReady"]


def test_conditions_keep_their_transition_until_the_status_changes() -> None:
    node = sim_node()
    node.server_conditions = {"MemoryPressure": ("False", "t0"), "DiskPressure": ("False", "t0"),
                              "PIDPressure": ("Unknown", "t1"), "Ready": ("Unknown", "t1")}
    conditions, events = node_conditions(node, "t2")
    assert [(c["type"], c["lastHeartbeatTime"], c["lastTransitionTime"]) for c in conditions] == [
        ("MemoryPressure", "t2", "t0"), ("DiskPressure", "t2", "t0"), ("PIDPressure", "t2", "t2"),
        ("Ready", "t2", "t2")]
    assert events == ["NodeHasSufficientPID", "NodeReady"]


def test_the_lease_is_the_lease_controllers() -> None:
    node = sim_node()
    node.uid = "node-uid"
    first = lease_object(node, 40)
    assert first["metadata"] == {"name": "node-1", "namespace": "kube-node-lease", "ownerReferences": [
        {"apiVersion": "v1", "kind": "Node", "name": "node-1", "uid": "node-uid"}]}
    assert (first["spec"]["holderIdentity"], first["spec"]["leaseDurationSeconds"]) == ("node-1", 40)
    assert first["spec"]["renewTime"].endswith("Z") and len(first["spec"]["renewTime"]) == 27
    node.lease_resource_version = "42"
    assert lease_object(node, 40)["metadata"]["resourceVersion"] == "42"


@pytest.mark.parametrize(("now", "offset", "expected"), [
    pytest.param(0.0, 2.5, 2.5, id="first-slot-ahead"),
    pytest.param(2.5, 2.5, 12.5, id="exactly-on-a-slot"),
    pytest.param(13.0, 2.5, 22.5, id="later"),
    pytest.param(99.9, 0.0, 100.0, id="offset-zero"),
])
def test_slots_are_fixed_rate_at_each_nodes_offset(now: float, offset: float, expected: float) -> None:
    assert next_slot(now, 0.0, 10.0, offset) == pytest.approx(expected)


def test_pod_addresses_skip_network_gateway_and_broadcast() -> None:
    pool = AddressPool("10.0.0.0/29")
    assert [pool.allocate() for _ in range(6)] == ["10.0.0.2", "10.0.0.3", "10.0.0.4", "10.0.0.5", "10.0.0.6",
                                                   None]
    pool.release("10.0.0.4")
    pool.release("10.9.9.9")
    assert pool.allocate() == "10.0.0.4"
    other = AddressPool("10.0.0.0/24")
    other.reserve("10.0.0.2")
    assert other.allocate() == "10.0.0.3"


class FakeApi:
    """Nodes and Leases kept in dicts; answers as the APIServer would for what the manager sends."""

    def __init__(self) -> None:
        self.rv = 0
        self.leases: dict[str, dict[str, Any]] = {}
        self.nodes: dict[str, dict[str, Any]] = {}
        self.renewals: list[tuple[str, float]] = []
        self.status_patches: list[str] = []
        self.clock: FakeClock | None = None
        self.changed = asyncio.Event()

    def _next(self) -> str:
        self.rv += 1
        self.changed.set()
        return str(self.rv)

    async def create(self, resource: Any, body: dict[str, Any], **_: Any) -> Any:
        name = body["metadata"]["name"]
        store = self.leases if resource.kind == "Lease" else self.nodes
        if name in store:
            raise AlreadyExists(V1Status(code=409, reason="AlreadyExists", message="exists"))
        meta = {**body["metadata"], "resourceVersion": self._next(), "uid": f"u-{name}"}
        store[name] = {**body, "metadata": meta}
        return resource.model.model_validate(store[name])

    async def get(self, resource: Any, name: str, **_: Any) -> Any:
        store = self.leases if resource.kind == "Lease" else self.nodes
        if name not in store:
            raise NotFound(V1Status(code=404, reason="NotFound", message="missing"))
        return resource.model.model_validate(store[name])

    async def update(self, resource: Any, body: dict[str, Any], **_: Any) -> LeaseView:
        name = body["metadata"]["name"]
        if name not in self.leases:
            raise NotFound(V1Status(code=404, reason="NotFound", message="missing"))
        if body["metadata"].get("resourceVersion") != self.leases[name]["metadata"]["resourceVersion"]:
            raise Conflict(V1Status(code=409, reason="Conflict", message="changed"))
        assert self.clock is not None
        self.renewals.append((name, self.clock.now()))
        self.leases[name] = {**body, "metadata": {**body["metadata"], "resourceVersion": self._next()}}
        return LeaseView.model_validate(self.leases[name])

    async def patch(self, resource: Any, name: str, patch: dict[str, Any], **options: Any) -> NodeView:
        if options.get("subresource") == "status":
            self.status_patches.append(name)
        self._next()
        return NodeView.model_validate(self.nodes[name])

    async def settle(self) -> None:
        """Let the managers' workers run until the API has been quiet for a few loop turns."""
        for _ in range(50):
            await asyncio.sleep(0)


@pytest.fixture
async def manager() -> AsyncIterator[tuple[NodeManager, FakeApi, FakeClock, list[str]]]:
    clock = FakeClock()
    api = FakeApi()
    api.clock = clock
    active: list[str] = []
    planned = load_profile().plan(4)
    nodes = NodeManager(api, EventBroadcaster(api), planned, timings=Timings(),  # type: ignore[arg-type]
                        on_active=lambda n: active.append(n.name), clock=clock)
    task = asyncio.create_task(nodes.run(10250))
    async with asyncio.timeout(5):
        while not nodes.all_registered:
            await asyncio.sleep(0)
    yield nodes, api, clock, active
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_nodes_register_and_renew_their_leases_spread_over_the_interval(
        manager: tuple[NodeManager, FakeApi, FakeClock, list[str]]) -> None:
    _nodes, api, clock, active = manager
    assert sorted(api.nodes) == sorted(active) == ["node-1", "node-2", "node-3", "node-4"]
    assert sorted(api.leases) == ["node-1", "node-2", "node-3", "node-4"]
    assert api.leases["node-1"]["metadata"]["ownerReferences"][0]["uid"] == "u-node-1"
    for _ in range(40):
        clock.advance(0.5)
        await api.settle()
    times = {name: [t for n, t in api.renewals if n == name] for name in api.leases}
    # Node i of 4 renews at offset i/4 of the 10 s interval, every 10 s.
    assert times == {"node-1": [10.0, 20.0], "node-2": [2.5, 12.5], "node-3": [5.0, 15.0],
                     "node-4": [7.5, 17.5]}


class EarlyClock(FakeClock):
    """Timers fire 5 ms before their time, as uvloop's do under load (its clock is read once per turn).

    A second timer for the same moment fires on time, as a real one would, time having moved on.
    """

    def __init__(self) -> None:
        super().__init__()
        self._seen: set[float] = set()

    def call_at(self, when: float, callback: Callable[[], None]) -> Timer:
        early = when not in self._seen
        self._seen.add(when)
        return super().call_at(when - 0.005 if early else when, callback)


async def test_a_timer_that_fires_early_renews_once_per_interval() -> None:
    clock = EarlyClock()
    api = FakeApi()
    api.clock = clock
    nodes = NodeManager(api, EventBroadcaster(api), load_profile().plan(4), timings=Timings(),  # type: ignore[arg-type]
                        on_active=lambda n: None, clock=clock)
    task = asyncio.create_task(nodes.run(10250))
    try:
        async with asyncio.timeout(5):
            while not nodes.all_registered:
                await asyncio.sleep(0)
        for _ in range(400):
            clock.advance(0.05)
            await api.settle()
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    # Twice in 20 s each, not once more a few milliseconds after each slot.
    assert sorted(n for n, _ in api.renewals) == sorted(["node-1", "node-2", "node-3", "node-4"] * 2)


async def test_a_stopped_node_writes_nothing_until_it_starts(
        manager: tuple[NodeManager, FakeApi, FakeClock, list[str]]) -> None:
    nodes, api, clock, active = manager
    assert nodes.stop("node-2") is not None and nodes.stop("node-9") is None
    clock.advance(30.0)
    await api.settle()
    assert not [n for n, _ in api.renewals if n == "node-2"]
    api.status_patches.clear()
    started = nodes.start("node-2")
    assert started is not None and not started.stopped
    await api.settle()
    assert ("node-2", 30.0) in api.renewals and api.status_patches == ["node-2"]
    assert active.count("node-2") == 2


async def test_ready_set_to_unknown_by_someone_else_is_reported_again(
        manager: tuple[NodeManager, FakeApi, FakeClock, list[str]]) -> None:
    nodes, api, _, _ = manager
    api.status_patches.clear()
    unknown = NodeView.model_validate({
        "metadata": {"name": "node-3", "uid": "u-node-3"},
        "status": {"conditions": [{"type": "Ready", "status": "Unknown", "lastTransitionTime": "t"}]}})
    nodes.on_node(unknown)
    await api.settle()
    assert api.status_patches == ["node-3"]
    assert nodes.nodes["node-3"].server_conditions["Ready"][0] == "True"


async def test_a_lease_changed_by_someone_else_is_read_again(
        manager: tuple[NodeManager, FakeApi, FakeClock, list[str]]) -> None:
    _nodes, api, clock, _ = manager
    api.leases["node-1"]["metadata"]["resourceVersion"] = "999"
    del api.leases["node-2"]
    clock.advance(10.0)
    await api.settle()
    assert [n for n, _ in api.renewals].count("node-1") == 1
    assert "node-2" in api.leases


def test_warnings_about_many_nodes_are_throttled(caplog: pytest.LogCaptureFixture) -> None:
    clock = FakeClock()
    warnings = ThrottledWarnings(logging.getLogger("test.kubelet"), period=10.0, clock=clock)
    with caplog.at_level(logging.WARNING, logger="test.kubelet"):
        for i in range(500):
            warnings.warning("failed to renew the lease of node %s", f"node-{i}")
        clock.advance(10.0)
        warnings.warning("failed to renew the lease of node %s", "node-0")
    assert [r.getMessage() for r in caplog.records] == [
        "failed to renew the lease of node node-0",
        "failed to renew the lease of node node-0 (499 similar warnings in the last 10s)"]
