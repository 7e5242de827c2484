"""The simulated kubelet's Pods: admission, phase, conditions, lifecycle, deletion and adoption.

The lifecycle tests drive :class:`PodManager` on virtual time (``FakeClock``)
with a fake API that records the status patches and deletes it receives.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from kubelet_sim.node import AddressPool, SimNode
from kubelet_sim.pods import (
    PodManager,
    Rejection,
    SimPod,
    admit,
    host_ports,
    pod_phase,
    pod_status,
    wire_spec,
)
from kubelet_sim.profile import Timings, load_profile
from kubelet_sim.runtime import Behaviour, SimContainer, Terminated, image_size
from kubelet_sim.views import PodView
from machinery.api.kinds import object_key
from machinery.api.meta import format_time, utcnow
from machinery.api.quantity import pod_requests, resource_list
from machinery.client.clock import FakeClock
from machinery.informer import NODE_NAME_INDEX, Store, index_pod_by_node_name

NAMESPACE = "default"


class Recorder:
    """Stands in for a node's EventRecorder: keeps (type, reason, message, fieldPath)."""

    def __init__(self) -> None:
        self.events: list[tuple[str, str, str, str | None]] = []

    def event(self, obj: Any, type: str, reason: str, message: str) -> None:
        self.events.append((type, reason, message, obj.field_path))

    def reasons(self) -> list[str]:
        return [reason for _, reason, _, _ in self.events]


class FakeApi:
    """Records status patches and deletes; answers each patch with a new resourceVersion."""

    def __init__(self) -> None:
        self.patches: asyncio.Queue[tuple[str, dict[str, Any]]] = asyncio.Queue()
        self.deletes: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.rv = 100

    async def patch(self, resource: Any, name: str, patch: dict[str, Any], **options: Any) -> PodView:
        assert options["subresource"] == "status" and options["field_manager"] == "kubelet"
        self.rv += 1
        await self.patches.put((name, patch))
        return PodView.model_validate({"metadata": {"name": name, "resourceVersion": str(self.rv)}})

    async def delete(self, resource: Any, name: str, **options: Any) -> None:
        await self.deletes.put({"name": name, **options})

    async def status(self) -> dict[str, Any]:
        _, patch = await asyncio.wait_for(self.patches.get(), 5)
        return patch["status"]


def node(name: str = "node-1", **labels: str) -> SimNode:
    planned = load_profile().plan(1)[0]
    sim = SimNode(planned, 0, Recorder(), resource_list(planned.group.allocatable),  # type: ignore[arg-type]
                  labels={**planned.labels, **labels}, registered=True)
    sim.addresses = AddressPool(planned.pod_cidr)
    return sim


def view(name: str = "web", *, node_name: str = "node-1", annotations: dict[str, str] | None = None,
         uid: str = "uid-1", init: list[dict[str, Any]] | None = None, status: dict[str, Any] | None = None,
         **spec: Any) -> PodView:
    spec.setdefault("containers", [{"name": "c", "image": "nginx:1.25"}])
    body: dict[str, Any] = {
        "metadata": {"name": name, "namespace": NAMESPACE, "uid": uid, "resourceVersion": "10",
                     "creationTimestamp": "2024-05-01T10:00:00Z", "annotations": annotations or {}},
        "spec": {"nodeName": node_name, **spec, **({"initContainers": init} if init else {})},
        "status": status or {"phase": "Pending", "conditions": [
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2024-05-01T10:00:00Z"}]},
    }
    return PodView.model_validate(body)


class Harness:
    def __init__(self, sim: SimNode, clock: FakeClock, api: FakeApi, store: Store[PodView],
                 pods: PodManager) -> None:
        self.node, self.clock, self.api, self.store, self.pods = sim, clock, api, store, pods

    def put(self, v: PodView) -> None:
        self.store.upsert(object_key(v.metadata.namespace, v.metadata.name), v)
        self.pods.on_pod(v)

    def remove(self, v: PodView) -> None:
        self.store.delete(object_key(v.metadata.namespace, v.metadata.name))
        self.pods.on_pod_deleted(v)

    @property
    def recorder(self) -> Recorder:
        return self.node.recorder  # type: ignore[return-value]


@pytest.fixture
async def kubelet() -> AsyncIterator[Harness]:
    sim = node()
    clock = FakeClock()
    api = FakeApi()
    store: Store[PodView] = Store({NODE_NAME_INDEX: index_pod_by_node_name})
    client: Any = api
    timings = Timings(container_start_delay=1.0, container_start_jitter=0.0)
    pods = PodManager(client, store, {sim.name: sim}, timings=timings, clock=clock)
    workers = asyncio.create_task(pods.run())
    yield Harness(sim, clock, api, store, pods)
    workers.cancel()
    await asyncio.gather(workers, return_exceptions=True)


def conditions(status: dict[str, Any]) -> dict[str, tuple[str, str | None]]:
    return {c["type"]: (c["status"], c.get("reason")) for c in status["conditions"]}


# --- admission ------------------------------------------------------------------------------------------


def _admit(v: PodView, sim: SimNode) -> Rejection | None:
    return admit(v, sim, pod_requests(wire_spec(v)), host_ports(v))


def _requests(cpu: str = "100m", **more: str) -> list[dict[str, Any]]:
    return [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": cpu, **more}}}]


@pytest.mark.parametrize(("pod", "expected"), [
    pytest.param(view(containers=_requests()), None, id="fits"),
    pytest.param(view(containers=_requests("4")),
                 Rejection("OutOfcpu", "Node didn't have enough resource: cpu, requested: 4000, used: 0, "
                                       "capacity: 3800"), id="cpu"),
    pytest.param(view(containers=_requests(memory="20Gi")),
                 Rejection("OutOfmemory", "Node didn't have enough resource: memory, requested: 21474836480, "
                                          "used: 0, capacity: 16106127360"), id="memory"),
    pytest.param(view(containers=_requests(**{"example.com/gpu": "1"})), None, id="unknown-extended-ignored"),
    pytest.param(view(nodeSelector={"disk": "ssd"}),
                 Rejection("NodeAffinity", "Predicate NodeAffinity failed: node(s) didn't match Pod's node "
                                           "affinity/selector"), id="node-selector"),
    pytest.param(view(affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["zone-b"]}]}]}}}),
                 Rejection("NodeAffinity", "Predicate NodeAffinity failed: node(s) didn't match Pod's node "
                                           "affinity/selector"), id="required-affinity"),
    pytest.param(view(tolerations=[]), None, id="no-taints"),
    pytest.param(view(os={"name": "windows"}),
                 Rejection("PodOSNotSupported", "Failed to admit pod as the OS field doesn't match node OS"),
                 id="os-field"),
])
def test_admission_as_the_kubelet_decides(pod: PodView, expected: Rejection | None) -> None:
    assert _admit(pod, node()) == expected


def test_admission_counts_the_pods_already_admitted() -> None:
    sim = node()
    sim.used = {"cpu": 3000}
    assert _admit(view(containers=_requests("1")), sim) == Rejection(
        "OutOfcpu", "Node didn't have enough resource: cpu, requested: 1000, used: 3000, capacity: 3800")
    sim.pod_count = 110
    assert _admit(view(), sim) == Rejection(
        "OutOfpods", "Node didn't have enough resource: pods, requested: 1, used: 110, capacity: 110")


def test_known_extended_resources_are_checked() -> None:
    sim = node()
    sim.allocatable = {**sim.allocatable, "example.com/gpu": 1000}
    rejection = _admit(view(containers=_requests(**{"example.com/gpu": "2"})), sim)
    assert rejection == Rejection(
        "OutOfexample.com/gpu",
        "Node didn't have enough resource: example.com/gpu, requested: 2, used: 0, capacity: 1")


@pytest.mark.parametrize(("used", "wanted", "conflict"), [
    pytest.param(("TCP", "0.0.0.0", 80), ("TCP", "10.0.0.1", 80), True, id="any-address-takes-all"),
    pytest.param(("TCP", "10.0.0.1", 80), ("TCP", "0.0.0.0", 80), True, id="all-conflicts-with-one"),
    pytest.param(("TCP", "10.0.0.1", 80), ("TCP", "10.0.0.2", 80), False, id="different-addresses"),
    pytest.param(("UDP", "0.0.0.0", 80), ("TCP", "0.0.0.0", 80), False, id="different-protocols"),
    pytest.param(("TCP", "0.0.0.0", 80), ("TCP", "0.0.0.0", 81), False, id="different-ports"),
])
def test_host_ports_conflict_as_the_scheduler_says(used: tuple[str, str, int], wanted: tuple[str, str, int],
                                                   conflict: bool) -> None:
    sim = node()
    sim.host_ports.add(used)
    protocol, ip, port = wanted
    pod = view(containers=[{"name": "c", "image": "nginx", "ports": [
        {"containerPort": 8080, "hostPort": port, "hostIP": ip, "protocol": protocol}]}])
    expected = Rejection("NodePorts", "Predicate NodePorts failed: node(s) didn't have free ports for the "
                                      "requested pod ports") if conflict else None
    assert _admit(pod, sim) == expected


def test_only_no_execute_taints_reject_and_os_labels_must_match() -> None:
    sim = node()
    sim.taints = ({"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},)
    assert _admit(view(), sim) is None
    sim.taints = ({"key": "dedicated", "value": "gpu", "effect": "NoExecute"},)
    assert _admit(view(), sim) == Rejection("TaintToleration",
                                            "Predicate TaintToleration failed: node(s) had untolerated taint")
    assert _admit(view(tolerations=[{"key": "dedicated", "operator": "Exists"}]), sim) is None
    labelled = PodView.model_validate({**view().model_dump(by_alias=True), "metadata": {
        "name": "w", "labels": {"kubernetes.io/os": "windows"}}})
    assert _admit(labelled, node()) == Rejection(
        "PodOSSelectorNodeLabelDoesNotMatch",
        "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label")


# --- phase ------------------------------------------------------------------------------------------------


def _container(name: str, state: str, exit_code: int = 0, *, init: bool = False, sidecar: bool = False,
               last_exit: int | None = None) -> SimContainer:
    c = SimContainer(name, "img", init=init, sidecar=sidecar)
    if state == "running":
        c.start(Behaviour(0, None, 0, 0, 0, ()), 0.0, 0.0)
    elif state == "terminated":
        c.start(Behaviour(0, None, 0, 0, 0, ()), 0.0, 0.0)
        c.exit(exit_code, 1.0)
    if last_exit is not None:
        c.last_terminated = Terminated(last_exit, "Error", "", "")
    return c


def _sim_pod(containers: list[SimContainer], init: list[SimContainer] | None = None,
             policy: str = "Always") -> SimPod:
    return SimPod(object_key(NAMESPACE, "p"), "uid", node(), view(restartPolicy=policy), init or [],
                  containers, {}, frozenset())


@pytest.mark.parametrize(("containers", "init", "policy", "terminal", "phase"), [
    pytest.param([_container("a", "waiting")], [], "Always", False, "Pending", id="waiting"),
    pytest.param([_container("a", "running"), _container("b", "waiting")], [], "Always", False, "Pending",
                 id="one-still-waiting"),
    pytest.param([_container("a", "running")], [], "Always", False, "Running", id="running"),
    pytest.param([_container("a", "terminated", 0)], [], "Never", False, "Succeeded", id="never-succeeded"),
    pytest.param([_container("a", "terminated", 2)], [], "Never", False, "Failed", id="never-failed"),
    pytest.param([_container("a", "terminated", 0), _container("b", "running")], [], "Never", False,
                 "Running", id="one-still-running"),
    pytest.param([_container("a", "terminated", 0)], [], "OnFailure", False, "Succeeded",
                 id="onfailure-success"),
    pytest.param([_container("a", "waiting", last_exit=1)], [], "OnFailure", False, "Running",
                 id="onfailure-restarting"),
    pytest.param([_container("a", "terminated", 0)], [], "Always", False, "Running", id="always-restarting"),
    pytest.param([_container("a", "terminated", 0)], [], "Always", True, "Succeeded", id="killed-cleanly"),
    pytest.param([_container("a", "terminated", 137)], [], "Always", True, "Failed", id="killed"),
    pytest.param([_container("a", "waiting")], [_container("i", "running", init=True)], "Always", False,
                 "Pending", id="initializing"),
    pytest.param([_container("a", "waiting")], [_container("i", "terminated", 1, init=True)], "Never", False,
                 "Failed", id="init-failed-never"),
    pytest.param([_container("a", "waiting")], [_container("i", "waiting", init=True, last_exit=1)], "Always",
                 False, "Pending", id="init-crash-looping"),
    pytest.param([_container("a", "running")], [_container("s", "running", init=True, sidecar=True)],
                 "Always", False, "Running", id="with-sidecar"),
])
def test_phase_is_computed_as_get_phase_does(containers: list[SimContainer], init: list[SimContainer],
                                             policy: str, terminal: bool, phase: str) -> None:
    assert pod_phase(_sim_pod(containers, init, policy), terminal=terminal) == phase


def test_status_of_a_rejected_pod() -> None:
    pod = _sim_pod([_container("a", "waiting")])
    pod.rejection = Rejection("OutOfcpu", "Node didn't have enough resource: cpu")
    pod.start_time = "2024-05-01T10:00:01Z"
    assert pod_status(pod, "now") == {
        "phase": "Failed", "reason": "OutOfcpu", "startTime": "2024-05-01T10:00:01Z",
        "message": "Pod was rejected: Node didn't have enough resource: cpu"}


def test_conditions_keep_their_transition_time_until_their_status_changes() -> None:
    pod = _sim_pod([_container("a", "waiting")])
    first = {c["type"]: c for c in pod_status(pod, "t1")["conditions"]}
    assert first["Ready"] == {"type": "Ready", "status": "False", "lastTransitionTime": "t1",
                              "reason": "ContainersNotReady",
                              "message": "containers with unready status: [a]"}
    pod.containers[0].start(Behaviour(0, None, 0, 0, 0, ()), 0.0, 0.0)
    pod.containers[0].ready = True
    pod.sandbox_ready = True
    second = {c["type"]: c for c in pod_status(pod, "t2")["conditions"]}
    # Explicit nulls remove the reason and message of the earlier write (conditions merge by type).
    assert second["Ready"] == {"type": "Ready", "status": "True", "lastTransitionTime": "t2", "reason": None,
                               "message": None}
    assert second["Initialized"]["lastTransitionTime"] == "t1"
    assert second["PodReadyToStartContainers"]["lastTransitionTime"] == "t2"
    assert [c["type"] for c in pod_status(pod, "t3")["conditions"]] == [
        "PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"]


# --- lifecycle --------------------------------------------------------------------------------------------


async def test_a_pod_is_pending_then_running_with_the_kubelets_fields(kubelet: Harness) -> None:
    kubelet.put(view())
    pending = await kubelet.api.status()
    assert pending["phase"] == "Pending"
    assert pending["containerStatuses"][0]["state"] == {"waiting": {"reason": "ContainerCreating"}}
    assert conditions(pending) == {
        "PodReadyToStartContainers": ("False", None), "Initialized": ("True", None),
        "Ready": ("False", "ContainersNotReady"), "ContainersReady": ("False", "ContainersNotReady"),
        "PodScheduled": ("True", None)}
    assert (pending["hostIP"], pending["hostIPs"]) == ("127.0.0.1", [{"ip": "127.0.0.1"}])
    assert "podIP" not in pending and pending["startTime"]
    kubelet.clock.advance(1.0)
    running = await kubelet.api.status()
    assert running["phase"] == "Running"
    assert set(conditions(running).values()) == {("True", None)}
    assert (running["podIP"], running["podIPs"]) == ("10.0.0.2", [{"ip": "10.0.0.2"}])
    container = running["containerStatuses"][0]
    assert (container["ready"], container["started"], container["restartCount"]) == (True, True, 0)
    assert set(container["state"]) == {"running"} and container["containerID"].startswith("containerd://")
    assert [(r, m, p) for _, r, m, p in kubelet.recorder.events] == [
        ("Pulling", 'Pulling image "nginx:1.25"', "spec.containers{c}"),
        ("Pulled", ('Successfully pulled image "nginx:1.25" in 1s (1s including waiting). Image size: '
                   f"{image_size('nginx:1.25')} bytes."), "spec.containers{c}"),
        ("Created", "Created container: c", "spec.containers{c}"),
        ("Started", "Started container c", "spec.containers{c}")]
    assert kubelet.node.pod_count == 1


async def test_the_second_pod_finds_the_image_present(kubelet: Harness) -> None:
    kubelet.put(view("a", uid="a"))
    kubelet.put(view("b", uid="b"))
    assert [(r, m) for _, r, m, _ in kubelet.recorder.events] == [
        ("Pulling", 'Pulling image "nginx:1.25"'),
        ("Pulled", 'Container image "nginx:1.25" already present on machine')]


async def test_a_pod_that_changes_twice_before_its_write_is_written_once(kubelet: Harness) -> None:
    kubelet.put(view(annotations={"kubesim.io/startup-seconds": "0"}))
    kubelet.clock.advance(0.0)
    status = await kubelet.api.status()
    assert status["phase"] == "Running"
    assert kubelet.api.patches.empty()


async def test_a_ready_condition_someone_else_cleared_is_written_again(kubelet: Harness) -> None:
    """The node lifecycle controller marks a silent node's Pods not ready; the kubelet puts its status back,
    and leaves alone the echo of its own write and changes that keep Ready as it wrote it."""
    kubelet.put(view(annotations={"kubesim.io/startup-seconds": "0"}))
    kubelet.clock.advance(0.0)
    running = await kubelet.api.status()
    assert conditions(running)["Ready"] == ("True", None)
    written_rv = kubelet.api.rv
    echo = view(status=running)
    echo.metadata.resource_version = str(written_rv)
    kubelet.put(echo)
    relabelled = view(status=running)
    relabelled.metadata.resource_version = str(written_rv + 1)
    kubelet.put(relabelled)
    await asyncio.sleep(0.05)
    assert kubelet.api.patches.empty()
    marked = view(status={**running, "conditions": [{**c, "status": "False"} if c["type"] == "Ready" else c
                                                    for c in running["conditions"]]})
    marked.metadata.resource_version = str(written_rv + 2)
    kubelet.put(marked)
    again = await kubelet.api.status()
    assert conditions(again)["Ready"] == ("True", None)


async def test_readiness_comes_after_the_ready_after_seconds(kubelet: Harness) -> None:
    kubelet.put(view(annotations={"kubesim.io/ready-after-seconds": "5"}))
    await kubelet.api.status()
    kubelet.clock.advance(1.0)
    running = await kubelet.api.status()
    assert (running["phase"], conditions(running)["Ready"]) == ("Running", ("False", "ContainersNotReady"))
    assert running["containerStatuses"][0]["ready"] is False
    kubelet.clock.advance(5.0)
    ready = await kubelet.api.status()
    assert conditions(ready)["Ready"] == ("True", None)


@pytest.mark.parametrize(("policy", "exit_code", "phase", "reason"), [
    pytest.param("Never", 0, "Succeeded", "Completed", id="never-success"),
    pytest.param("Never", 3, "Failed", "Error", id="never-failure"),
    pytest.param("OnFailure", 0, "Succeeded", "Completed", id="onfailure-success"),
])
async def test_containers_that_exit_for_good(kubelet: Harness, policy: str, exit_code: int, phase: str,
                                             reason: str) -> None:
    kubelet.put(view(restartPolicy=policy, annotations={"kubesim.io/run-seconds": "2",
                                                        "kubesim.io/exit-code": str(exit_code)}))
    await kubelet.api.status()
    kubelet.clock.advance(1.0)
    await kubelet.api.status()
    kubelet.clock.advance(2.0)
    final = await kubelet.api.status()
    terminated = final["containerStatuses"][0]["state"]["terminated"]
    assert (final["phase"], terminated["exitCode"], terminated["reason"]) == (phase, exit_code, reason)
    expected_ready = "PodCompleted" if phase == "Succeeded" else "PodFailed"
    assert conditions(final)["Ready"] == ("False", expected_ready)
    assert conditions(final)["PodReadyToStartContainers"] == ("False", None)
    assert kubelet.node.pod_count == 0 and kubelet.node.addresses is not None
    assert kubelet.node.addresses.allocate() == "10.0.0.2"


async def test_crash_loop_back_off(kubelet: Harness) -> None:
    kubelet.put(view(annotations={"kubesim.io/run-seconds": "1", "kubesim.io/exit-code": "1",
                                  "kubesim.io/startup-seconds": "0"}))
    kubelet.clock.advance(0.0)
    assert (await kubelet.api.status())["phase"] == "Running"
    kubelet.clock.advance(1.0)
    # The first restart is immediate: the terminated instance shows until the new one runs.
    restarted = await _until(kubelet, lambda s: s["containerStatuses"][0]["restartCount"] == 1)
    assert restarted["containerStatuses"][0]["lastState"]["terminated"]["exitCode"] == 1
    kubelet.clock.advance(1.0)
    crashed = await _until(kubelet, lambda s: "waiting" in s["containerStatuses"][0]["state"])
    waiting = crashed["containerStatuses"][0]["state"]["waiting"]
    assert waiting["reason"] == "CrashLoopBackOff"
    assert waiting["message"] == "back-off 10s restarting failed container=c pod=web_default(uid-1)"
    assert (crashed["phase"], conditions(crashed)["Ready"]) == ("Running", ("False", "ContainersNotReady"))
    assert ("Warning", "BackOff", "Back-off restarting failed container c in pod web_default(uid-1)",
            "spec.containers{c}") in kubelet.recorder.events
    kubelet.clock.advance(9.9)
    assert kubelet.api.patches.empty()
    kubelet.clock.advance(0.1)
    again = await _until(kubelet, lambda s: "running" in s["containerStatuses"][0]["state"])
    assert again["containerStatuses"][0]["restartCount"] == 2


async def _until(kubelet: Harness, predicate: Any) -> dict[str, Any]:
    while True:
        status = await kubelet.api.status()
        if predicate(status):
            return status


async def test_init_containers_run_first_in_order(kubelet: Harness) -> None:
    kubelet.put(view(init=[{"name": "one", "image": "busybox"}, {"name": "two", "image": "busybox"}],
                     annotations={"kubesim.io/run-seconds.one": "2"}))
    pending = await kubelet.api.status()
    assert [s["state"] for s in pending["initContainerStatuses"]] == [
        {"waiting": {"reason": "PodInitializing"}}, {"waiting": {"reason": "PodInitializing"}}]
    assert pending["containerStatuses"][0]["state"] == {"waiting": {"reason": "PodInitializing"}}
    assert conditions(pending)["Initialized"] == ("False", "ContainersNotInitialized")
    assert {c["type"]: c for c in pending["conditions"]}["Initialized"]["message"] == \
        "containers with incomplete status: [one two]"
    kubelet.clock.advance(1.0)
    first = await kubelet.api.status()
    assert [set(s["state"]) for s in first["initContainerStatuses"]] == [{"running"}, {"waiting"}]
    kubelet.clock.advance(2.0)  # "one" exits; "two" is being started
    kubelet.clock.advance(1.0)  # "two" runs and exits at once; the containers are being started
    kubelet.clock.advance(1.0)
    running = await _until(kubelet, lambda s: s["phase"] == "Running")
    assert [s["state"]["terminated"]["reason"] for s in running["initContainerStatuses"]] == ["Completed"] * 2
    assert [s["ready"] for s in running["initContainerStatuses"]] == [True, True]
    assert conditions(running)["Initialized"] == ("True", None)
    started = [p for _, r, _, p in kubelet.recorder.events if r == "Started"]
    assert started == ["spec.initContainers{one}", "spec.initContainers{two}", "spec.containers{c}"]


async def test_deletion_stops_the_containers_then_deletes_the_pod(kubelet: Harness) -> None:
    kubelet.put(view())
    await kubelet.api.status()
    kubelet.clock.advance(1.0)
    await kubelet.api.status()
    kubelet.put(view(uid="uid-1", status=None).model_copy(update={
        "metadata": view().metadata.model_copy(update={"deletion_timestamp": "2024-05-01T10:01:00Z",
                                                       "deletion_grace_period_seconds": 30})}))
    assert ("Normal", "Killing", "Stopping container c", "spec.containers{c}") in kubelet.recorder.events
    kubelet.clock.advance(0.0)
    final = await _until(kubelet, lambda s: s["phase"] in ("Succeeded", "Failed"))
    assert final["phase"] == "Succeeded"
    assert final["containerStatuses"][0]["state"]["terminated"]["reason"] == "Completed"
    deleted = await asyncio.wait_for(kubelet.api.deletes.get(), 5)
    assert deleted == {"name": "web", "namespace": NAMESPACE, "uid": "uid-1", "grace_period_seconds": 0}
    assert kubelet.node.pod_count == 0


async def test_a_container_slower_than_its_grace_period_is_killed(kubelet: Harness) -> None:
    slow = {"kubesim.io/shutdown-seconds": "60", "kubesim.io/startup-seconds": "0"}
    kubelet.put(view(annotations=slow))
    kubelet.clock.advance(0.0)
    await kubelet.api.status()
    deleting = view(annotations=slow)
    deleting = deleting.model_copy(update={"metadata": deleting.metadata.model_copy(update={
        "deletion_timestamp": "2024-05-01T10:01:00Z", "deletion_grace_period_seconds": 5})})
    kubelet.put(deleting)
    kubelet.clock.advance(4.9)
    assert kubelet.api.deletes.empty()
    kubelet.clock.advance(0.1)
    final = await _until(kubelet, lambda s: s["phase"] in ("Succeeded", "Failed"))
    terminated = final["containerStatuses"][0]["state"]["terminated"]
    assert (final["phase"], terminated["exitCode"], terminated["reason"]) == ("Failed", 137, "Error")
    await asyncio.wait_for(kubelet.api.deletes.get(), 5)


async def test_a_pod_deleted_before_it_started_ends_failed(kubelet: Harness) -> None:
    kubelet.put(view())
    await kubelet.api.status()
    deleting = view()
    kubelet.put(deleting.model_copy(update={"metadata": deleting.metadata.model_copy(update={
        "deletion_timestamp": "2024-05-01T10:01:00Z", "deletion_grace_period_seconds": 30})}))
    final = await kubelet.api.status()
    terminated = final["containerStatuses"][0]["state"]["terminated"]
    assert (final["phase"], terminated["exitCode"], terminated["reason"]) == (
        "Failed", 137, "ContainerStatusUnknown")
    await asyncio.wait_for(kubelet.api.deletes.get(), 5)
    kubelet.clock.advance(5.0)
    assert "Started" not in kubelet.recorder.reasons()


async def test_a_rejected_pod_fails_with_an_event(kubelet: Harness) -> None:
    kubelet.put(view(containers=_requests("8")))
    rejected = await kubelet.api.status()
    assert (rejected["phase"], rejected["reason"]) == ("Failed", "OutOfcpu")
    message = "Node didn't have enough resource: cpu, requested: 8000, used: 0, capacity: 3800"
    assert rejected["message"] == f"Pod was rejected: {message}"
    assert kubelet.recorder.events == [("Warning", "OutOfcpu", message, None)]
    assert kubelet.node.pod_count == 0


async def test_a_stopped_node_neither_admits_nor_writes_until_it_starts(kubelet: Harness) -> None:
    kubelet.node.stopped = True
    kubelet.put(view())
    kubelet.clock.advance(5.0)
    assert kubelet.api.patches.empty() and kubelet.recorder.events == []
    kubelet.node.stopped = False
    kubelet.pods.node_active(kubelet.node)
    assert (await kubelet.api.status())["phase"] == "Pending"
    kubelet.clock.advance(1.0)
    assert (await kubelet.api.status())["phase"] == "Running"
    kubelet.node.stopped = True
    kubelet.put(view(annotations={"kubesim.io/run-seconds": "1"}))
    kubelet.remove(view())
    kubelet.node.stopped = False
    kubelet.pods.node_active(kubelet.node)
    assert kubelet.pods.pod(NAMESPACE, "web") is None and kubelet.node.pod_count == 0


async def test_a_pod_started_by_an_earlier_run_is_adopted_without_a_restart(kubelet: Harness) -> None:
    started = format_time(utcnow())
    adopted = view(annotations={"kubesim.io/run-seconds": "30", "kubesim.io/exit-code": "1"},
                   restartPolicy="Never", status={
        "phase": "Running", "startTime": started, "podIP": "10.0.0.7",
        "conditions": [{"type": t, "status": "True", "lastTransitionTime": started}
                       for t in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady",
                                 "PodScheduled")],
        "containerStatuses": [{"name": "c", "ready": True, "started": True, "restartCount": 4,
                               "image": "docker.io/library/nginx:1.25", "imageID": "x",
                               "containerID": "containerd://abc",
                               "state": {"running": {"startedAt": started}}}]})
    kubelet.put(adopted)
    pod = kubelet.pods.pod(NAMESPACE, "web")
    assert pod is not None and pod.containers[0].restart_count == 4
    assert kubelet.recorder.events == [] and kubelet.node.pod_count == 1
    assert kubelet.node.addresses is not None and kubelet.node.addresses.allocate() == "10.0.0.2"
    kubelet.clock.advance(10.0)
    assert kubelet.api.patches.empty()
    kubelet.clock.advance(21.0)
    final = await kubelet.api.status()
    terminated = final["containerStatuses"][0]["state"]["terminated"]
    assert (final["phase"], terminated["exitCode"], terminated["containerID"]) == (
        "Failed", 1, "containerd://abc")
    assert final["containerStatuses"][0]["restartCount"] == 4 and final["podIP"] == "10.0.0.7"


# --- memory pressure -------------------------------------------------------------------------------------


def test_best_effort_pods_are_refused_under_memory_pressure() -> None:
    sim = node()
    sim.memory_pressure = True
    assert _admit(view(), sim) == Rejection("Evicted", "The node had condition: [MemoryPressure]. ")
    assert _admit(view(containers=_requests()), sim) is None


async def test_the_eviction_manager_evicts_best_effort_first_with_the_kubelets_message(kubelet: Harness) -> None:
    from kubelet_sim.eviction import EvictionManager
    from kubelet_sim.runtimes.simulated import SimulatedRuntime
    from kubelet_sim.stats import StatsProvider
    from kubelet_sim.usage import UsageProfile

    usage = UsageProfile(noise=0.0, system_memory=512 * 2**20)
    # 16Gi: a Guaranteed Pod using 10Gi of its 12Gi and a BestEffort one using 6Gi leave less than 100Mi.
    guaranteed = [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "100m", "memory": "12Gi"}}}]
    kubelet.put(view("steady", uid="u-steady", containers=guaranteed,
                     annotations={"kubesim.io/memory-usage": "10Gi"}))
    kubelet.put(view("greedy", uid="u-greedy", annotations={"kubesim.io/memory-usage": "6Gi"}))
    kubelet.clock.advance(1.0)
    stats = StatsProvider(kubelet.pods, SimulatedRuntime(None, usage), usage, clock=kubelet.clock)  # type: ignore[arg-type]
    manager = EvictionManager({kubelet.node.name: kubelet.node}, kubelet.pods, stats, threshold=100 * 2**20,
                              transition=30.0, clock=kubelet.clock)
    victim = manager.check(kubelet.node)
    assert victim is not None and victim.name == "greedy"
    assert kubelet.node.memory_pressure
    message = ("The node was low on resource: memory. Threshold quantity: 100Mi, available: 0. "
               "Container c was using 6Gi, request is 0, has larger consumption of memory. ")
    assert ("Warning", "Evicted", message, None) in kubelet.recorder.events
    kubelet.clock.advance(0.0)
    final = await _until(kubelet, lambda s: s.get("reason") == "Evicted")
    assert (final["phase"], final["message"]) == ("Failed", message)
    disruption = next(c for c in final["conditions"] if c["type"] == "DisruptionTarget")
    assert (disruption["status"], disruption["reason"], disruption["message"]) == ("True", "TerminationByKubelet",
                                                                                   message)
    assert kubelet.api.deletes.empty()
    # Memory is back above the threshold: the pressure clears only after the transition period.
    assert manager.check(kubelet.node) is None and kubelet.node.memory_pressure
    kubelet.clock.advance(30.0)
    manager.check(kubelet.node)
    assert not kubelet.node.memory_pressure


async def test_metrics_rates_stay_right_when_the_wall_clock_steps(kubelet: Harness,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Counters run on the kubelet's monotonic clock, and so do the times a sample reports: a step of the
    wall clock between two scrapes does not change the rate metrics-server computes (CI: 590m for 400m)."""
    import time as time_module

    from kubelet_sim.runtimes.simulated import SimulatedRuntime
    from kubelet_sim.stats import StatsProvider, resource_metrics
    from kubelet_sim.usage import UsageProfile
    from metrics_server.scraper import parse_resource_metrics
    from metrics_server.storage import rate

    usage = UsageProfile(noise=0.0)
    kubelet.put(view("busy", uid="u-busy", annotations={"kubesim.io/cpu-usage": "400m"}))
    kubelet.clock.advance(1.0)
    stats = StatsProvider(kubelet.pods, SimulatedRuntime(None, usage), usage, clock=kubelet.clock)  # type: ignore[arg-type]
    kubelet.clock.advance(1.0)  # the container has run for a second
    _, first = parse_resource_metrics(resource_metrics(stats.sample(kubelet.node)))
    real_time = time_module.time
    monkeypatch.setattr(time_module, "time", lambda: real_time() - 0.65)  # the wall clock steps back
    kubelet.clock.advance(2.0)
    _, second = parse_resource_metrics(resource_metrics(stats.sample(kubelet.node)))
    key = next(iter(second))
    between = rate(second[key]["c"], first[key]["c"])
    assert between is not None and abs(between.nano_cores - 400_000_000) < 4_000_000
    assert abs(between.window - 2.0) < 0.01
    since_start = rate(first[key]["c"], None)
    assert since_start is not None and abs(since_start.nano_cores - 400_000_000) < 4_000_000
