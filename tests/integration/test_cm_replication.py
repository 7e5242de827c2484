"""The ReplicationController controller against a real APIServer and etcd (no scheduler, no kubelet).

The tests stand in for the kubelet where they need Pods Running or Ready, and
bind Pods themselves where they need them scheduled.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from kubesim import procs
from tests import harness, kube
from tests.integration.test_cm_support import (
    active,
    bind,
    events,
    get,
    list_pods,
    must_get,
    set_pod_status,
    start_controller_manager,
    wait_until,
)

pytestmark = pytest.mark.integration

MERGE = {"Content-Type": "application/merge-patch+json"}


@pytest.fixture(scope="module")
def controller_manager(cluster: harness.Cluster) -> Iterator[procs.ManagedProcess]:
    proc = start_controller_manager(cluster, name="cm-replication")
    yield proc
    proc.stop()


def rc_path(namespace: str, name: str = "web") -> str:
    return f"/api/v1/namespaces/{namespace}/replicationcontrollers/{name}"


def create_rc(api: httpx.Client, namespace: str, replicas: int, name: str = "web", **spec: Any) -> dict[str, Any]:
    body = kube.rc(name, replicas)
    body["spec"].update(spec)
    r = api.post(f"/api/v1/namespaces/{namespace}/replicationcontrollers", json=body)
    assert r.status_code == 201, r.text
    created: dict[str, Any] = r.json()
    return created


def scale(api: httpx.Client, namespace: str, replicas: int, *, via: str, name: str = "web") -> None:
    if via == "scale":
        r = api.patch(rc_path(namespace, name) + "/scale", json={"spec": {"replicas": replicas}}, headers=MERGE)
    else:
        r = api.patch(rc_path(namespace, name), json={"spec": {"replicas": replicas}}, headers=MERGE)
    assert r.status_code == 200, r.text


def rc_status(api: httpx.Client, namespace: str, name: str = "web") -> dict[str, Any]:
    rc = must_get(api, rc_path(namespace, name))
    status: dict[str, Any] = rc.get("status", {})
    return status | {"generation": rc["metadata"]["generation"]}


def wait_active(api: httpx.Client, namespace: str, count: int, timeout: float = 30.0) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []

    def converged() -> bool:
        seen[:] = active(list_pods(api, namespace))
        return len(seen) == count

    wait_until(converged, timeout=timeout, message=f"{count} active pods")
    return seen


class ActivePodCounter:
    """Follows the namespace's Pods through a watch and records the most ever active at once."""

    def __init__(self, base_url: str, namespace: str) -> None:
        self.peak = 0
        self._active: set[str] = set()
        self._consumed = 0
        self._reader = kube.WatchReader(base_url, f"/api/v1/namespaces/{namespace}/pods",
                                        params={"watch": "true", "resourceVersion": "0"})

    def update(self) -> None:
        new = self._reader.events[self._consumed:]
        self._consumed += len(new)
        for event in new:
            obj = event["object"]
            if event["type"] == "DELETED" or not active([obj]):
                self._active.discard(obj["metadata"]["name"])
            else:
                self._active.add(obj["metadata"]["name"])
            self.peak = max(self.peak, len(self._active))

    def reset_peak(self) -> None:
        self.update()
        self.peak = len(self._active)

    def close(self) -> None:
        self._reader.close()


def test_creates_replicas_owned_by_the_rc_with_events_and_status(controller_manager, api, namespace):
    rc = create_rc(api, namespace, 3)
    pods = wait_active(api, namespace, 3)
    for pod in pods:
        assert pod["metadata"]["generateName"] == "web-"
        assert pod["metadata"]["name"].startswith("web-")
        assert pod["metadata"]["labels"] == {"app": "web"}
        assert pod["metadata"]["ownerReferences"] == [{
            "apiVersion": "v1", "kind": "ReplicationController", "name": "web", "uid": rc["metadata"]["uid"],
            "controller": True, "blockOwnerDeletion": True}]
    wait_until(lambda: rc_status(api, namespace) == {"replicas": 3, "fullyLabeledReplicas": 3,
                                                     "observedGeneration": 1, "generation": 1},
               message="the RC's status")
    created = wait_until(lambda: (e if len(e := events(api, namespace, "SuccessfulCreate")) == 3 else None),
                         message="three SuccessfulCreate events")
    assert {e["message"] for e in created} == {f"Created pod: {p['metadata']['name']}" for p in pods}
    assert {e["involvedObject"]["name"] for e in created} == {"web"}
    assert {e["source"]["component"] for e in created} == {"replication-controller"}
    assert "[step 6] created Pod" in controller_manager.log_path.read_text()


def test_scale_0_50_3_0_converges_and_never_overshoots(controller_manager, api, namespace, cluster):
    create_rc(api, namespace, 0)
    counter = ActivePodCounter(cluster.url, namespace)
    try:
        for replicas, via in ((50, "scale"), (3, "spec"), (0, "scale")):
            counter.reset_peak()
            peak_before = counter.peak
            scale(api, namespace, replicas, via=via)
            wait_active(api, namespace, replicas)
            # Nothing more may appear once converged: the expectations held every extra creation back.
            time.sleep(1.0)
            assert len(active(list_pods(api, namespace))) == replicas
            wait_until(lambda r=replicas: rc_status(api, namespace).get("replicas", 0) == r,
                       message=f"status.replicas {replicas}")
            counter.update()
            assert counter.peak <= max(replicas, peak_before), (replicas, counter.peak)
        status = rc_status(api, namespace)
        assert status["observedGeneration"] == status["generation"] == 4
    finally:
        counter.close()


def test_scale_down_deletes_unscheduled_pending_and_not_ready_pods_first(controller_manager, api, namespace):
    create_rc(api, namespace, 4)
    pods = sorted(wait_active(api, namespace, 4), key=lambda p: p["metadata"]["name"])
    keep_running_ready, running_not_ready, bound_pending, unbound = (p["metadata"]["name"] for p in pods)
    for name in (keep_running_ready, running_not_ready, bound_pending):
        bind(api, namespace, name, "node-a")
    set_pod_status(api, namespace, keep_running_ready, ready=True)
    set_pod_status(api, namespace, running_not_ready, ready=False)

    scale(api, namespace, 3, via="spec")
    assert {p["metadata"]["name"] for p in wait_active(api, namespace, 3)} == {
        keep_running_ready, running_not_ready, bound_pending}, "the unscheduled Pod goes first"
    scale(api, namespace, 2, via="spec")
    assert {p["metadata"]["name"] for p in wait_active(api, namespace, 2)} == {
        keep_running_ready, running_not_ready}, "then the Pending one"
    scale(api, namespace, 1, via="spec")
    assert [p["metadata"]["name"] for p in wait_active(api, namespace, 1)] == [keep_running_ready], \
        "then the one not ready"
    deleted = wait_until(lambda: (e if len(e := events(api, namespace, "SuccessfulDelete")) == 3 else None),
                         message="three SuccessfulDelete events")
    assert {e["message"] for e in deleted} == {f"Deleted pod: {n}" for n in (unbound, bound_pending,
                                                                            running_not_ready)}


def test_adopts_matching_orphans_and_releases_pods_that_stop_matching(controller_manager, api, namespace):
    r = api.post(f"/api/v1/namespaces/{namespace}/pods", json=kube.pod("orphan", labels={"app": "web"}))
    assert r.status_code == 201, r.text
    rc = create_rc(api, namespace, 2)
    pods = wait_active(api, namespace, 2)
    orphan = wait_until(lambda: (p if (p := get(api, f"/api/v1/namespaces/{namespace}/pods/orphan"))
                                 and p["metadata"].get("ownerReferences") else None), message="the adoption")
    assert orphan["metadata"]["ownerReferences"] == [{
        "apiVersion": "v1", "kind": "ReplicationController", "name": "web", "uid": rc["metadata"]["uid"],
        "controller": True, "blockOwnerDeletion": True}]
    assert "orphan" in {p["metadata"]["name"] for p in pods}, "only one replica was created next to it"

    r = api.patch(f"/api/v1/namespaces/{namespace}/pods/orphan", json={"metadata": {"labels": {"app": "debug"}}},
                  headers=MERGE)
    assert r.status_code == 200, r.text
    released = wait_until(lambda: (p if not (p := must_get(api, f"/api/v1/namespaces/{namespace}/pods/orphan"))
                                   ["metadata"].get("ownerReferences") else None), message="the release")
    assert released["metadata"]["labels"] == {"app": "debug"}
    replicas = wait_until(lambda: (p if len(p := list_pods(api, namespace, "app=web")) == 2 else None),
                          message="a replacement replica")
    assert "orphan" not in {p["metadata"]["name"] for p in replicas}
    assert len(list_pods(api, namespace)) == 3


def delete_gracefully(api: httpx.Client, namespace: str, name: str) -> None:
    """A Pod on a node is deleted gracefully: it stays, terminating, until its kubelet finishes."""
    bind(api, namespace, name, "node-a")
    assert api.delete(f"/api/v1/namespaces/{namespace}/pods/{name}").status_code == 200


@pytest.mark.parametrize("finish", [
    pytest.param(lambda api, ns, name: set_pod_status(api, ns, name, phase="Failed", ready=False), id="failed"),
    pytest.param(lambda api, ns, name: set_pod_status(api, ns, name, phase="Succeeded", ready=False),
                 id="succeeded"),
    pytest.param(delete_gracefully, id="terminating"),
])
def test_finished_and_terminating_pods_are_replaced(controller_manager, api, namespace, finish):
    create_rc(api, namespace, 2)
    victim = wait_active(api, namespace, 2)[0]["metadata"]["name"]
    finish(api, namespace, victim)
    pods = wait_until(lambda: (p if len(p := active(list_pods(api, namespace))) == 2
                               and victim not in {x["metadata"]["name"] for x in p} else None),
                      message="a replacement")
    assert len(pods) == 2
    assert get(api, f"/api/v1/namespaces/{namespace}/pods/{victim}") is not None, "the finished Pod is kept"
    wait_until(lambda: rc_status(api, namespace).get("replicas") == 2, message="status.replicas 2")


def test_ready_and_available_replicas_follow_min_ready_seconds(controller_manager, api, namespace):
    create_rc(api, namespace, 2, minReadySeconds=2)
    names = [p["metadata"]["name"] for p in wait_active(api, namespace, 2)]
    became_ready = time.monotonic()
    for name in names:
        set_pod_status(api, namespace, name, ready=True)
    wait_until(lambda: rc_status(api, namespace).get("readyReplicas") == 2, message="readyReplicas 2")
    assert rc_status(api, namespace).get("availableReplicas", 0) == 0, "not available before minReadySeconds"
    wait_until(lambda: rc_status(api, namespace).get("availableReplicas") == 2, timeout=10,
               message="availableReplicas 2")
    assert time.monotonic() - became_ready >= 2.0


def test_failed_creations_set_the_replica_failure_condition_until_they_succeed(controller_manager, api, namespace):
    # A Pod may not name a node while it has scheduling gates: the template passes validation, each Pod fails.
    body = kube.rc("web", 2)
    body["spec"]["template"]["spec"].update(nodeName="node-a", schedulingGates=[{"name": "example.com/gate"}])
    r = api.post(f"/api/v1/namespaces/{namespace}/replicationcontrollers", json=body)
    assert r.status_code == 201, r.text

    def failure() -> dict[str, Any] | None:
        conditions = rc_status(api, namespace).get("conditions") or []
        return next((c for c in conditions if c["type"] == "ReplicaFailure"), None)

    condition = wait_until(failure, message="the ReplicaFailure condition")
    assert condition["status"] == "True"
    assert condition["reason"] == "FailedCreate"
    assert "schedulingGates" in condition["message"] or "nodeName" in condition["message"]
    failed = wait_until(lambda: events(api, namespace, "FailedCreate"), message="a FailedCreate event")
    assert failed[0]["type"] == "Warning"
    assert failed[0]["message"].startswith("Error creating: ")
    assert list_pods(api, namespace) == []

    r = api.patch(rc_path(namespace), headers={"Content-Type": "application/json-patch+json"},
                  content=json.dumps([{"op": "remove", "path": "/spec/template/spec/schedulingGates"}]))
    assert r.status_code == 200, r.text
    wait_active(api, namespace, 2)
    wait_until(lambda: failure() is None, message="the condition to go")


def test_expectations_hold_while_the_watch_is_broken(fresh_cluster):
    """The APIServer restarts while Pods are being created: their ADDED events come late, none is made twice."""
    start_controller_manager(fresh_cluster, name="cm-broken-watch")
    with harness.admin_client(fresh_cluster.url, timeout=30) as api:
        create_rc(api, "default", 40)
        wait_until(lambda: len(list_pods(api, "default")) >= 5, message="the first Pods")
        fresh_cluster.apiserver.process.restart()
    with harness.admin_client(fresh_cluster.url, timeout=30) as api:
        wait_active(api, "default", 40, timeout=60)
        time.sleep(2.0)
        assert len(list_pods(api, "default")) == 40
        assert events(api, "default", "SuccessfulDelete") == [], "no surplus was ever created"


def test_restarting_the_controller_manager_mid_scale_up_leaves_exactly_the_replicas(fresh_cluster):
    proc = start_controller_manager(fresh_cluster, name="cm-killed")
    with harness.admin_client(fresh_cluster.url, timeout=30) as api:
        create_rc(api, "default", 150)
        wait_until(lambda: len(list_pods(api, "default")) >= 10, message="the first Pods")
        proc.kill()
        assert len(list_pods(api, "default")) < 150, "killed in the middle of the scale-up"
        proc.start().wait_ready(30)
        wait_active(api, "default", 150, timeout=90)
        time.sleep(2.0)
        assert len(list_pods(api, "default")) == 150
        assert events(api, "default", "SuccessfulDelete") == []
