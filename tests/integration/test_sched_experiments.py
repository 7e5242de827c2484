"""The seed's scheduling experiments, through the real APIServer and a scheduler process.

One private etcd, APIServer and scheduler for the module (the session's
shared cluster is left alone: a scheduler there would bind other tests'
Pods). Each test creates its own nodes (deleted afterwards) and namespace.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import orjson
import pytest

from kubesim import procs
from tests import harness

pytestmark = pytest.mark.integration

ZONE = "topology.kubernetes.io/zone"


@pytest.fixture(scope="module")
def sched_cluster() -> Iterator[tuple[harness.Cluster, str]]:
    """The cluster, and the scheduler's /metrics URL."""
    with harness.cluster() as c:
        config = c.workdir / "scheduler.yaml"
        config.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
                          "profiles:\n- schedulerName: default-scheduler\n- schedulerName: bin-packer\n"
                          "  pluginConfig:\n  - name: NodeResourcesFit\n"
                          "    args: {scoringStrategy: {type: MostAllocated}}\n")
        port = procs.free_port()
        c.start_component("scheduler", [*c.component_args("scheduler"), "--health-port", str(port), "--leader-elect=false",
                                        "--config", str(config)],
                          ready_url=f"http://{procs.LOOPBACK}:{port}/readyz")
        yield c, f"http://{procs.LOOPBACK}:{port}/metrics"


@pytest.fixture
def api(sched_cluster: tuple[harness.Cluster, str]) -> Iterator[httpx.Client]:
    with harness.admin_client(sched_cluster[0].url, timeout=30) as client:
        yield client


@pytest.fixture
def ns(api: httpx.Client) -> str:
    name = f"s-{uuid.uuid4().hex[:8]}"
    r = api.post("/api/v1/namespaces", json={"metadata": {"name": name}})
    assert r.status_code == 201, r.text
    return name


@pytest.fixture
def make_node(api: httpx.Client) -> Iterator[Callable[..., str]]:
    made: list[str] = []
    tag = uuid.uuid4().hex[:6]

    def make(short: str, *, cpu: str = "4", labels: dict[str, str] | None = None,
             taints: list[dict[str, str]] | None = None) -> str:
        name = f"{short}-{tag}"
        resources = {"cpu": cpu, "memory": "16Gi", "pods": "110"}
        body = {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
                "spec": {"taints": taints or []},
                "status": {"capacity": resources, "allocatable": resources,
                           "conditions": [{"type": "Ready", "status": "True"}]}}
        r = api.post("/api/v1/nodes", json=body)
        assert r.status_code == 201, r.text
        made.append(name)
        return name

    yield make
    for name in made:
        api.delete(f"/api/v1/nodes/{name}")


def create_pod(api: httpx.Client, ns: str, name: str, *, cpu: str = "100m", labels: dict[str, str] | None = None,
               **spec: Any) -> dict[str, Any]:
    body = {"metadata": {"name": name, "labels": labels or {}},
            "spec": {"containers": [{"name": "c", "image": "nginx:1.25",
                                     "resources": {"requests": {"cpu": cpu, "memory": "64Mi"}}}], **spec}}
    r = api.post(f"/api/v1/namespaces/{ns}/pods", json=body)
    assert r.status_code == 201, r.text
    return dict(r.json())


def get_pod(api: httpx.Client, ns: str, name: str) -> dict[str, Any]:
    r = api.get(f"/api/v1/namespaces/{ns}/pods/{name}")
    assert r.status_code == 200, r.text
    return dict(r.json())


def wait_bound(api: httpx.Client, ns: str, name: str, timeout: float = 15.0) -> str:
    def node_of() -> str:
        return str(get_pod(api, ns, name)["spec"].get("nodeName") or "")
    return str(harness.wait_for(node_of, timeout=timeout, message=f"{ns}/{name} to be bound"))


def wait_unschedulable(api: httpx.Client, ns: str, name: str, timeout: float = 15.0) -> str:
    """The PodScheduled=False message, once the scheduler has written one."""
    def message() -> str | None:
        for cond in get_pod(api, ns, name).get("status", {}).get("conditions") or []:
            if cond["type"] == "PodScheduled" and cond["status"] == "False":
                assert cond["reason"] == "Unschedulable"
                return str(cond["message"])
        return None
    return str(harness.wait_for(message, timeout=timeout, message=f"{ns}/{name} to be unschedulable"))


def events_for(api: httpx.Client, ns: str, name: str, reason: str) -> list[dict[str, Any]]:
    items = api.get(f"/api/v1/namespaces/{ns}/events",
                    params={"fieldSelector": f"involvedObject.name={name},reason={reason}"}).json()["items"]
    return list(items)


def wait_events(api: httpx.Client, ns: str, name: str, reason: str) -> list[dict[str, Any]]:
    """The Events of this reason about the object, once the recorder has written some."""
    found = harness.wait_for(lambda: events_for(api, ns, name, reason), message=f"a {reason} Event for {name}")
    assert isinstance(found, list)
    return found


def test_pinned_pod_never_reaches_the_scheduler(api: httpx.Client, ns: str, make_node: Callable[..., str]) -> None:
    make_node("a")
    target = make_node("b")
    created = create_pod(api, ns, "pinned", nodeName=target)
    assert created["spec"]["nodeName"] == target
    other = create_pod(api, ns, "witness")
    wait_bound(api, ns, other["metadata"]["name"])
    pinned = get_pod(api, ns, "pinned")
    assert not any(k.startswith("kubesim.io/") for k in pinned["metadata"].get("annotations") or {})
    assert not events_for(api, ns, "pinned", "Scheduled")


def test_scheduled_pod_has_event_condition_and_explanation(api: httpx.Client, ns: str,
                                                           make_node: Callable[..., str]) -> None:
    make_node("a")
    create_pod(api, ns, "web")
    node = wait_bound(api, ns, "web")
    pod = get_pod(api, ns, "web")
    annotations = pod["metadata"]["annotations"]
    assert annotations["kubesim.io/selected-node"] == node
    assert orjson.loads(annotations["kubesim.io/filter-result"])["feasible"] >= 1
    assert orjson.loads(annotations["kubesim.io/score-result"])["weights"]["TaintToleration"] == 3
    assert [c["status"] for c in pod["status"]["conditions"] if c["type"] == "PodScheduled"] == ["True"]
    [event] = wait_events(api, ns, "web", "Scheduled")
    assert event["message"] == f"Successfully assigned {ns}/web to {node}"
    assert event["source"]["component"] == "default-scheduler"


def test_hard_node_affinity_matching_nothing_stays_pending(api: httpx.Client, ns: str,
                                                           make_node: Callable[..., str]) -> None:
    first = make_node("a", labels={ZONE: "x"})
    make_node("b", labels={ZONE: "x"})
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["nowhere"]}]}]}}}
    create_pod(api, ns, "lost", affinity=affinity)
    message = wait_unschedulable(api, ns, "lost")
    assert message == ("0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector. "
                       "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.")
    [event] = wait_events(api, ns, "lost", "FailedScheduling")
    assert event["type"] == "Warning" and event["message"] == message
    # Label a node into the zone: the scheduler retries and places the Pod there.
    r = api.patch(f"/api/v1/nodes/{first}", content=orjson.dumps({"metadata": {"labels": {ZONE: "nowhere"}}}),
                  headers={"Content-Type": "application/merge-patch+json"})
    assert r.status_code == 200, r.text
    assert wait_bound(api, ns, "lost", timeout=20) == first


def test_soft_affinity_chooses_among_what_hard_affinity_allows(api: httpx.Client, ns: str,
                                                               make_node: Callable[..., str]) -> None:
    make_node("a", labels={ZONE: "a"})
    b = make_node("b", labels={ZONE: "b", "disk": "ssd"})
    make_node("c", labels={ZONE: "c", "disk": "ssd"})
    affinity = {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["a", "b"]}]}]},
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 100, "preference": {"matchExpressions": [{"key": "disk", "operator": "In",
                                                                  "values": ["ssd"]}]}}]}}
    for i in range(3):
        create_pod(api, ns, f"picky-{i}", affinity=affinity)
    assert {wait_bound(api, ns, f"picky-{i}") for i in range(3)} == {b}


def test_pod_affinity_places_next_to_myapp01(api: httpx.Client, ns: str, make_node: Callable[..., str]) -> None:
    make_node("a")
    b = make_node("b")
    make_node("c")
    create_pod(api, ns, "myapp01", labels={"app": "myapp01"}, nodeSelector={"kubernetes.io/hostname": b})
    assert wait_bound(api, ns, "myapp01") == b
    affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["myapp01"]}]},
         "topologyKey": "kubernetes.io/hostname"}]}}
    for i in range(3):
        create_pod(api, ns, f"friend-{i}", affinity=affinity)
    assert {wait_bound(api, ns, f"friend-{i}") for i in range(3)} == {b}


def test_pod_anti_affinity_spreads(api: httpx.Client, ns: str, make_node: Callable[..., str]) -> None:
    nodes = {make_node(n) for n in ("a", "b", "c")}
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "spread"}}, "topologyKey": "kubernetes.io/hostname"}]}}
    names = [f"spread-{i}" for i in range(4)]
    for name in names:
        create_pod(api, ns, name, labels={"app": "spread"}, affinity=anti)

    def three_bound() -> dict[str, str] | None:
        placed = {n: node for n in names if (node := get_pod(api, ns, n)["spec"].get("nodeName"))}
        return placed if len(placed) == 3 else None
    placed = harness.wait_for(three_bound, message="three of the four Pods to be bound")
    assert isinstance(placed, dict) and set(placed.values()) == nodes
    pending = next(n for n in names if n not in placed)
    assert wait_unschedulable(api, ns, pending) == (
        "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules. "
        "preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.")


def test_taints_keep_pods_off_until_tolerated_or_removed(api: httpx.Client, ns: str,
                                                         make_node: Callable[..., str]) -> None:
    taint = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]
    a = make_node("a", taints=taint)
    make_node("b", taints=taint)
    create_pod(api, ns, "plain")
    assert wait_unschedulable(api, ns, "plain") == (
        "0/2 nodes are available: 2 node(s) had untolerated taint {dedicated: gpu}. "
        "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.")
    # Add a toleration: the Pod's update sends it back to the queue, and it fits.
    toleration = [{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]
    r = api.patch(f"/api/v1/namespaces/{ns}/pods/plain", content=orjson.dumps({"spec": {"tolerations": toleration}}),
                  headers={"Content-Type": "application/strategic-merge-patch+json"})
    assert r.status_code == 200, r.text
    wait_bound(api, ns, "plain")
    # Remove the taint from one node: another waiting Pod lands there.
    create_pod(api, ns, "later")
    wait_unschedulable(api, ns, "later")
    r = api.patch(f"/api/v1/nodes/{a}", content=orjson.dumps({"spec": {"taints": None}}),
                  headers={"Content-Type": "application/merge-patch+json"})
    assert r.status_code == 200, r.text
    assert wait_bound(api, ns, "later", timeout=20) == a


def test_a_second_profile_serves_its_scheduler_name(api: httpx.Client, ns: str,
                                                    make_node: Callable[..., str]) -> None:
    busy = make_node("busy")
    make_node("idle")
    create_pod(api, ns, "filler", cpu="2", nodeName=busy)
    # MostAllocated packs the Pod onto the busier node; LeastAllocated spreads to the idle one.
    create_pod(api, ns, "packed", schedulerName="bin-packer")
    create_pod(api, ns, "spread")
    assert wait_bound(api, ns, "packed") == busy
    assert wait_bound(api, ns, "spread") != busy
    [event] = wait_events(api, ns, "packed", "Scheduled")
    assert event["source"]["component"] == "bin-packer"
    create_pod(api, ns, "nobody", schedulerName="no-such-scheduler")
    assert not get_pod(api, ns, "nobody").get("status", {}).get("conditions")


def priority_class(api: httpx.Client, value: int) -> str:
    """A PriorityClass of this value (the Priority admission plugin turns it into spec.priority)."""
    name = f"p{value}-{uuid.uuid4().hex[:6]}"
    r = api.post("/apis/scheduling.k8s.io/v1/priorityclasses",
                 json={"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
                       "value": value})
    assert r.status_code == 201, r.text
    return name


def test_preemption_evicts_a_lower_priority_pod(api: httpx.Client, ns: str, make_node: Callable[..., str]) -> None:
    node = make_node("small", cpu="2")
    create_pod(api, ns, "victim", cpu="2", priorityClassName=priority_class(api, 1), nodeName=node)
    create_pod(api, ns, "vip", cpu="2", priorityClassName=priority_class(api, 1000))
    assert get_pod(api, ns, "vip")["spec"]["priority"] == 1000

    def deleting() -> bool:
        return bool(get_pod(api, ns, "victim")["metadata"].get("deletionTimestamp"))
    harness.wait_for(deleting, message="the victim to be deleted")
    victim = get_pod(api, ns, "victim")
    assert any(c["type"] == "DisruptionTarget" and c["reason"] == "PreemptionByScheduler"
               for c in victim["status"]["conditions"])
    assert get_pod(api, ns, "vip")["status"].get("nominatedNodeName") == node
    [event] = wait_events(api, ns, "victim", "Preempted")
    assert event["message"] == f"Preempted by pod {get_pod(api, ns, 'vip')['metadata']['uid']} on node {node}"
    # No kubelet runs here: finish the graceful deletion as the kubelet would.
    r = api.delete(f"/api/v1/namespaces/{ns}/pods/victim", params={"gracePeriodSeconds": "0"})
    assert r.status_code == 200, r.text
    assert wait_bound(api, ns, "vip", timeout=20) == node


def test_metrics(api: httpx.Client, ns: str, make_node: Callable[..., str],
                 sched_cluster: tuple[harness.Cluster, str]) -> None:
    make_node("a", cpu="1")
    create_pod(api, ns, "fits")
    create_pod(api, ns, "too-big", cpu="2")
    wait_bound(api, ns, "fits")
    wait_unschedulable(api, ns, "too-big")
    text = httpx.get(sched_cluster[1]).text
    assert 'scheduler_schedule_attempts_total{profile="default-scheduler",result="scheduled"}' in text
    assert 'scheduler_schedule_attempts_total{profile="default-scheduler",result="unschedulable"}' in text
    assert "scheduler_scheduling_attempt_duration_seconds_bucket" in text
    unschedulable = [line for line in text.splitlines() if line.startswith('scheduler_pending_pods{queue="unschedulable"}')]
    assert unschedulable and float(unschedulable[0].split()[-1]) >= 1
