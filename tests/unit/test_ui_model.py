"""The web page's model: what each Node and Pod is summarised to, and the changes sent to the page."""

from __future__ import annotations

from typing import Any

import pytest

from kubesim.ui.model import ClusterModel, display_phase, node_summary, pod_summary, queue_of


def node(name: str = "node-1", *, ready: str | None = "True", **spec: Any) -> dict[str, Any]:
    conditions = [{"type": "Ready", "status": ready}] if ready is not None else []
    return {"metadata": {"name": name, "labels": {"zone": "a"}}, "spec": spec,
            "status": {"conditions": conditions, "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                       "nodeInfo": {"kubeletVersion": "v1.32.0"}}}


def pod(name: str = "web-1", *, phase: str = "Pending", node_name: str = "", uid: str | None = None,
        deleting: bool = False, condition: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default", "uid": uid or f"uid-{name}",
                            "labels": {"app": "web"}, "creationTimestamp": "2026-12-01T00:00:00Z",
                            "ownerReferences": [{"kind": "ReplicationController", "name": "web", "controller": True}]}
    if deleting:
        meta["deletionTimestamp"] = "2026-12-01T00:01:00Z"
    status: dict[str, Any] = {"phase": phase}
    if condition:
        status["conditions"] = [{"type": "PodScheduled", "status": "False", **condition}]
    return {"metadata": meta, "spec": {"nodeName": node_name, "containers": [
        {"name": "c", "resources": {"requests": {"cpu": "250m", "memory": "64Mi"}}}]}, "status": status}


def test_node_summary() -> None:
    s = node_summary(node(taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}], unschedulable=True))
    assert s == {"name": "node-1", "ready": "Ready", "unschedulable": True,
                 "taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}], "labels": {"zone": "a"},
                 "cpu": 4000, "memory": 8 * 2**30, "pods": 110, "version": "v1.32.0"}
    assert node_summary(node(ready="False"))["ready"] == "NotReady"
    assert node_summary(node(ready="Unknown"))["ready"] == "Unknown"
    assert node_summary(node(ready=None))["ready"] == "Unknown"


@pytest.mark.parametrize(("obj", "phase"), [
    pytest.param(pod(), "Pending", id="unbound"),
    pytest.param(pod(node_name="node-1"), "ContainerCreating", id="bound"),
    pytest.param(pod(phase="Running", node_name="node-1"), "Running", id="running"),
    pytest.param(pod(phase="Running", node_name="node-1", deleting=True), "Terminating", id="terminating"),
    pytest.param(pod(phase="Succeeded", node_name="node-1", deleting=True), "Succeeded", id="finished-stays"),
    pytest.param(pod(phase="Failed", node_name="node-1"), "Failed", id="failed"),
])
def test_display_phase(obj: dict[str, Any], phase: str) -> None:
    assert display_phase(obj) == phase


def test_pod_summary_and_its_queue() -> None:
    s = pod_summary(pod(condition={"reason": "Unschedulable", "message": "0/3 nodes are available"}))
    assert (s["cpu"], s["memory"], s["owner"], s["reason"], s["message"]) == (
        250, 64 * 2**20, "ReplicationController/web", "Unschedulable", "0/3 nodes are available")
    assert queue_of(s, {}) == "unschedulable"
    assert queue_of(s, {"default/web-1": "backoff"}) == "backoff"  # the scheduler's word wins
    assert queue_of(pod_summary(pod()), {}) == "active"
    assert queue_of(pod_summary(pod(condition={"reason": "SchedulingGated"})), {}) == "gated"
    assert queue_of(pod_summary(pod(node_name="node-1")), {"default/web-1": "active"}) == ""


def test_changes_are_sent_once_and_deletions_as_none() -> None:
    model = ClusterModel()
    model.replace("nodes", [node("a"), node("b")])
    model.replace("pods", [pod("p1"), pod("p2", phase="Running", node_name="a")])
    first = model.take_changes()
    assert first is not None and set(first["nodes"]) == {"a", "b"} and set(first["pods"]) == {"uid-p1", "uid-p2"}
    assert model.take_changes() is None
    model.apply("pods", "MODIFIED", pod("p1"))            # nothing the page draws changed
    assert model.take_changes() is None
    model.apply("pods", "MODIFIED", pod("p1", node_name="b"))
    model.apply("nodes", "DELETED", node("a"))
    changes = model.take_changes()
    assert changes == {"nodes": {"a": None}, "pods": {"uid-p1": model.pods["uid-p1"]}}
    # A relist reports what vanished while the watch was down.
    model.replace("pods", [pod("p1", node_name="b")])
    assert model.take_changes() == {"nodes": {}, "pods": {"uid-p2": None}}
    assert set(model.snapshot()["pods"]) == {"uid-p1"}


def test_scheduler_queues_move_pods_between_lanes() -> None:
    model = ClusterModel()
    model.replace("pods", [pod("p1")])
    model.take_changes()
    model.set_queues({"default/p1": "backoff"})
    assert model.take_changes() == {"nodes": {}, "pods": {"uid-p1": {**model.pods["uid-p1"], "queue": "backoff"}}}
    model.set_queues({"default/p1": "backoff"})
    assert model.take_changes() is None
