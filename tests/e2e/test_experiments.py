"""The seed's scheduling experiments, each on the whole cluster and driven with kubectl.

The cluster's three nodes (node-1..3 in zone-a..c) are shared: every test
that labels, taints or cordons them takes the ``nodes`` fixture, which undoes
all of it afterwards. Scheduling decisions are checked by the node each Pod
landed on, and refusals by the exact FailedScheduling message, built the way
kube-scheduler builds it (sorted reason counts, then what preemption found).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from tests import kube
from tests.kube import NamespaceReader, node_of
from tests.kubectl import Kubectl

pytestmark = pytest.mark.e2e

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
NOT_HELPFUL = "Preemption is not helpful for scheduling"
NO_VICTIMS = "No preemption victims found for incoming pod"


def failed(reasons: str, preemption: str) -> str:
    """kube-scheduler's FailedScheduling message on the 3-node cluster."""
    return f"0/3 nodes are available: {reasons}. preemption: 0/3 nodes are available: {preemption}."


def required(*expressions: dict[str, Any]) -> dict[str, Any]:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": list(expressions)}]}}}


def preferred(weight: int, *expressions: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"weight": weight, "preference": {"matchExpressions": list(expressions)}}]


def soft(*expressions: dict[str, Any]) -> dict[str, Any]:
    return {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": preferred(80, *expressions)}}


def expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": operator, **({"values": list(values)} if values else {})}


def on_node(node: str) -> dict[str, str]:
    return {HOSTNAME: node}


def placed(ns: NamespaceReader, *names: str) -> list[str]:
    """The nodes the Pods run on, once they all run."""
    return [node_of(ns.wait_running(f"name={n}", 1)[0]) for n in names]


def pod(name: str, **spec: Any) -> dict[str, Any]:
    """A seed-style Pod, labelled ``name=<name>`` so that it can be waited for alone."""
    return kube.pod(name, labels={"name": name}, **spec)


def test_node_name_pins_the_pod_without_the_scheduler(kubectl: Kubectl, ns: NamespaceReader) -> None:
    kubectl.apply(pod("myapp01", nodeName="node-2"))
    assert placed(ns, "myapp01") == ["node-2"]
    reasons = {e["reason"] for e in ns.wait_reasons("myapp01", "Created", "Started")}
    assert not reasons & {"Scheduled", "FailedScheduling"}


def test_hard_node_affinity_in_a_label_one_node_has(kubectl: Kubectl, admin: Kubectl, ns: NamespaceReader,
                                                    nodes: tuple[str, ...]) -> None:
    assert admin("label", "nodes", "node-2", "disktype=ssd").strip() == "node/node-2 labeled"
    kubectl.apply(kube.rc("myapp01", 3, affinity=required(expr("disktype", "In", "ssd"))))
    assert {node_of(p) for p in ns.wait_running("app=myapp01", 3)} == {"node-2"}
    kubectl.apply(pod("nowhere", affinity=required(expr("disktype", "In", "nvme"))))
    assert ns.wait_unschedulable("nowhere") == failed(
        "3 node(s) didn't match Pod's node affinity/selector", f"3 {NOT_HELPFUL}")


def test_soft_node_affinity_prefers_a_label_one_node_has(
        kubectl: Kubectl, admin: Kubectl, ns: NamespaceReader, nodes: tuple[str, ...]) -> None:
    admin("label", "nodes", "node-3", "disktype=ssd")
    kubectl.apply(*(pod(f"myapp0{i}", affinity=soft(expr("disktype", "In", "ssd"))) for i in (1, 2, 3)))
    assert placed(ns, "myapp01", "myapp02", "myapp03") == ["node-3"] * 3
    # A preference that no node meets does not stop the Pod from running.
    kubectl.apply(pod("anywhere", affinity=soft(expr("disktype", "In", "nvme"))))
    assert placed(ns, "anywhere")[0] in nodes


def test_soft_affinity_chooses_among_what_hard_affinity_allows(
        kubectl: Kubectl, admin: Kubectl, ns: NamespaceReader, nodes: tuple[str, ...]) -> None:
    admin("label", "nodes", "node-2", "node-3", "disktype=ssd")
    affinity = required(expr(ZONE, "In", "zone-a", "zone-b"))
    affinity["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] = preferred(
        100, expr("disktype", "In", "ssd"))
    kubectl.apply(*(pod(f"myapp0{i}", affinity=affinity) for i in (1, 2, 3)))
    # node-3 is preferred too, but the hard rule has already ruled it out.
    assert placed(ns, "myapp01", "myapp02", "myapp03") == ["node-2"] * 3


@pytest.mark.parametrize(("expression", "allowed"), [
    pytest.param(expr(ZONE, "NotIn", "zone-a", "zone-b"), {"node-3"}, id="NotIn"),
    pytest.param(expr("cores", "Gt", "5"), {"node-3"}, id="Gt"),
    pytest.param(expr("cores", "Lt", "3"), {"node-1"}, id="Lt"),
    pytest.param(expr("gpu", "Exists"), {"node-2"}, id="Exists"),
    pytest.param(expr("gpu", "DoesNotExist"), {"node-1", "node-3"}, id="DoesNotExist"),
])
def test_node_affinity_operators(kubectl: Kubectl, admin: Kubectl, ns: NamespaceReader,
                                 nodes: tuple[str, ...], expression: dict[str, Any],
                                 allowed: set[str]) -> None:
    for node, cores in zip(nodes, ("2", "4", "8"), strict=True):
        admin("label", "nodes", node, f"cores={cores}")
    admin("label", "nodes", "node-2", "gpu=")
    kubectl.apply(*(pod(f"myapp0{i}", affinity=required(expression)) for i in (1, 2, 3)))
    assert set(placed(ns, "myapp01", "myapp02", "myapp03")) <= allowed


def test_pod_affinity_places_replicas_next_to_myapp01(kubectl: Kubectl, ns: NamespaceReader) -> None:
    kubectl.apply(kube.pod("myapp01", labels={"app": "myapp01"}))
    [target] = ns.wait_running("app=myapp01", 1)
    affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "myapp01"}}, "topologyKey": HOSTNAME}]}}
    kubectl.apply(kube.rc("myapp02", 3, affinity=affinity))
    assert {node_of(p) for p in ns.wait_running("app=myapp02", 3)} == {node_of(target)}
    lonely = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "nobody"}}, "topologyKey": HOSTNAME}]}}
    kubectl.apply(pod("lonely", affinity=lonely))
    assert ns.wait_unschedulable("lonely") == failed("3 node(s) didn't match pod affinity rules",
                                                     f"3 {NOT_HELPFUL}")


def test_pod_anti_affinity_spreads_one_per_node_and_leaves_the_extra_pending(kubectl: Kubectl,
                                                                            ns: NamespaceReader) -> None:
    affinity = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchExpressions": [expr("app", "In", "myapp01")]}, "topologyKey": HOSTNAME}]}}
    kubectl.apply(kube.rc("myapp01", 4, affinity=affinity))
    pending = _pending_one(ns, "app=myapp01", 4)
    running = [p for p in ns.pods("app=myapp01") if p["metadata"]["name"] != pending]
    assert sorted(node_of(p) for p in running) == ["node-1", "node-2", "node-3"]
    assert ns.wait_unschedulable(pending) == failed("3 node(s) didn't match pod anti-affinity rules",
                                                    f"3 {NO_VICTIMS}")


def _pending_one(ns: NamespaceReader, selector: str, total: int) -> str:
    """The one Pod of ``total`` left unscheduled once the others run."""
    def split() -> str | None:
        pods = ns.pods(selector)
        waiting = [p for p in pods if not node_of(p)]
        if len(pods) == total and len(waiting) == 1 and sum(map(kube.is_ready, pods)) == total - 1:
            return str(waiting[0]["metadata"]["name"])
        return None
    return str(ns.wait(split, f"{total - 1} running Pods and one pending with {selector}"))


def toleration(effect: str, **extra: Any) -> list[dict[str, Any]]:
    return [{"key": "key", "operator": "Equal", "value": "value", "effect": effect, **extra}]


def test_no_schedule_taint_set_and_removed_with_kubectl(kubectl: Kubectl, admin: Kubectl, ns: NamespaceReader,
                                                        nodes: tuple[str, ...]) -> None:
    kubectl.apply(pod("before", nodeSelector=on_node("node-1")))
    assert placed(ns, "before") == ["node-1"]
    assert admin("taint", "nodes", "node-1", "key=value:NoSchedule").strip() == "node/node-1 tainted"
    kubectl.apply(kube.rc("myapp01", 4), pod("after", nodeSelector=on_node("node-1")))
    assert "node-1" not in {node_of(p) for p in ns.wait_running("app=myapp01", 4)}
    assert ns.wait_unschedulable("after") == failed(
        "1 node(s) had untolerated taint {key: value}, 2 node(s) didn't match Pod's node affinity/selector",
        f"3 {NOT_HELPFUL}")
    # NoSchedule keeps new Pods away and leaves the running one alone.
    assert kube.is_ready(ns.pod("before"))
    assert admin("taint", "nodes", "node-1", "key=value:NoSchedule-").strip() == "node/node-1 untainted"
    assert placed(ns, "after") == ["node-1"]


def test_prefer_no_schedule_steers_pods_away(kubectl: Kubectl, admin: Kubectl, ns: NamespaceReader,
                                            nodes: tuple[str, ...]) -> None:
    admin("taint", "nodes", "node-1", "node-2", "key=value:PreferNoSchedule")
    kubectl.apply(*(pod(f"myapp0{i}") for i in (1, 2, 3)))
    assert placed(ns, "myapp01", "myapp02", "myapp03") == ["node-3"] * 3


def test_no_execute_evicts_running_pods_that_do_not_tolerate_it(
        kubectl: Kubectl, admin: Kubectl, ns: NamespaceReader, nodes: tuple[str, ...]) -> None:
    kubectl.apply(pod("stays", nodeName="node-1", tolerations=toleration("NoExecute")),
                  pod("lingers", nodeName="node-1", tolerations=toleration("NoExecute", tolerationSeconds=2)),
                  pod("goes", nodeName="node-1"))
    placed(ns, "stays", "lingers", "goes")
    assert admin("taint", "nodes", "node-1", "key=value:NoExecute").strip() == "node/node-1 tainted"
    ns.wait_gone("goes")
    ns.wait_gone("lingers")
    evicted = {}
    for name in ("goes", "lingers"):
        event = ns.wait_event(name, "TaintManagerEviction")
        assert event["message"] == f"Marking for deletion Pod {ns.name}/{name}"
        evicted[name] = dt.datetime.fromisoformat(event["eventTime"])
    # The toleration's 2 seconds were honoured, on the controller's own clock.
    assert (evicted["lingers"] - evicted["goes"]).total_seconds() >= 1.9
    assert kube.is_ready(ns.pod("stays"))
    assert admin("taint", "nodes", "node-1", "key=value:NoExecute-").strip() == "node/node-1 untainted"


def test_every_node_tainted_keeps_the_rc_pending_until_its_template_tolerates(
        kubectl: Kubectl, admin: Kubectl, ns: NamespaceReader, nodes: tuple[str, ...]) -> None:
    admin("taint", "nodes", "--all", "key=value:NoSchedule")
    kubectl.apply(kube.rc("myapp01", 2))
    message = failed("3 node(s) had untolerated taint {key: value}", f"3 {NOT_HELPFUL}")
    pending = ns.wait(lambda: len(ns.pods("app=myapp01")) == 2 and ns.pods("app=myapp01"), "2 Pods")
    for p in pending:
        assert ns.wait_unschedulable(p["metadata"]["name"]) == message
    # A new template does not change the Pods an RC already made (Kubernetes has no rollout for
    # RCs): they stay Pending until deleted, and their replacements carry the toleration.
    kubectl.apply(kube.rc("myapp01", 2, tolerations=toleration("NoSchedule")))
    assert all(not any(t.get("key") == "key" for t in ns.pod(p["metadata"]["name"])["spec"]["tolerations"])
               for p in pending)
    kubectl("delete", "pods", "-l", "app=myapp01", "--wait=false")
    running = ns.wait_running("app=myapp01", 2)
    assert {p["metadata"]["uid"] for p in running}.isdisjoint(p["metadata"]["uid"] for p in pending)
    assert all(toleration("NoSchedule")[0] in p["spec"]["tolerations"] for p in running)


def test_host_port_conflict_leaves_the_fourth_replica_pending(kubectl: Kubectl, ns: NamespaceReader) -> None:
    container = {"name": "c", "image": "nginx:1.25", "ports": [{"containerPort": 80, "hostPort": 8080}]}
    kubectl.apply(kube.rc("myapp01", 4, containers=[container]))
    pending = _pending_one(ns, "app=myapp01", 4)
    running = [p for p in ns.pods("app=myapp01") if p["metadata"]["name"] != pending]
    assert sorted(node_of(p) for p in running) == ["node-1", "node-2", "node-3"]
    assert ns.wait_unschedulable(pending) == failed(
        "3 node(s) didn't have free ports for the requested pod ports", f"3 {NO_VICTIMS}")


def test_disk_conflict_waits_for_the_disk_to_be_free(kubectl: Kubectl, ns: NamespaceReader) -> None:
    def disk_pod(name: str, read_only: bool = False) -> dict[str, Any]:
        body = pod(name, nodeSelector=on_node("node-1"),
                   volumes=[{"name": "data", "gcePersistentDisk": {"pdName": "mydisk", "fsType": "ext4",
                                                                   "readOnly": read_only}}])
        body["spec"]["containers"][0]["volumeMounts"] = [{"name": "data", "mountPath": "/data"}]
        return body

    kubectl.apply(disk_pod("first"))
    assert placed(ns, "first") == ["node-1"]
    kubectl.apply(disk_pod("second"))
    assert ns.wait_unschedulable("second") == failed(
        "1 node(s) had no available disk, 2 node(s) didn't match Pod's node affinity/selector",
        f"1 {NO_VICTIMS}, 2 {NOT_HELPFUL}")
    kubectl("delete", "pod", "first")
    assert placed(ns, "second") == ["node-1"]
    # Read-only mounts of the same disk share it.
    kubectl("delete", "pod", "second")
    kubectl.apply(disk_pod("reader-1", read_only=True), disk_pod("reader-2", read_only=True))
    assert placed(ns, "reader-1", "reader-2") == ["node-1", "node-1"]
