"""The namespace controller against a real APIServer: a deleted namespace is emptied, then it goes."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

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
    start_controller_manager,
    wait_until,
)

pytestmark = pytest.mark.integration

MERGE = {"Content-Type": "application/merge-patch+json"}


@pytest.fixture
def fresh_namespace(api: httpx.Client) -> str:
    name = f"ns-{uuid.uuid4().hex[:8]}"
    assert api.post("/api/v1/namespaces", json={"metadata": {"name": name}}).status_code == 201
    return name


@pytest.fixture
def controller_manager(cluster: harness.Cluster) -> Iterator[procs.ManagedProcess]:
    proc = start_controller_manager(cluster, name="cm-namespace")
    yield proc
    proc.stop()


def conditions(api: httpx.Client, namespace: str) -> dict[str, tuple[str, str, str]]:
    ns = must_get(api, f"/api/v1/namespaces/{namespace}")
    return {c["type"]: (c["status"], c["reason"], c["message"]) for c in ns.get("status", {}).get("conditions") or ()}


def test_a_deleted_namespace_is_emptied_then_finalized(controller_manager, api, fresh_namespace):
    ns = fresh_namespace
    assert api.post(f"/api/v1/namespaces/{ns}/replicationcontrollers", json=kube.rc("web", 2)).status_code == 201
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "lock"}, "spec": {}}
    assert api.post(f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases", json=lease).status_code == 201
    # A Pod on a node goes gracefully: it stays until its kubelet (here, the test) finishes the deletion.
    # While its grace period lasts the controller expects it to stay (after, it reports it as unexpected
    # content), and requeues the namespace halfway through the period: long enough for a loaded machine
    # (with 6 s, a fresh-clone CI run on a slow evening saw no pass within it), short enough for the
    # namespace to go soon after the Pod.
    slow = kube.pod("slow", terminationGracePeriodSeconds=12)
    assert api.post(f"/api/v1/namespaces/{ns}/pods", json=slow).status_code == 201
    bind(api, ns, "slow", "node-a")
    wait_until(lambda: len(list_pods(api, ns)) == 3, message="the RC's Pods")

    assert api.delete(f"/api/v1/namespaces/{ns}").status_code == 200
    # The controller retries a namespace with content left with backoff; on a loaded machine a delete of its
    # content may fail once (ContentDeletionFailed) before a retry succeeds: wait for the steady state.
    found = wait_until(lambda: (c := conditions(api, ns)).get("NamespaceContentRemaining", ("",))[0] == "True"
                       and c.get("NamespaceDeletionContentFailure", ("",))[0] == "False" and c,
                       timeout=60, message="the content-remaining condition")
    assert found["NamespaceContentRemaining"] == (
        "True", "SomeResourcesRemain", "Some resources are remaining: pods. has 1 resource instances")
    assert found["NamespaceDeletionDiscoveryFailure"] == (
        "False", "ResourcesDiscovered", "All resources successfully discovered")
    assert found["NamespaceDeletionContentFailure"] == (
        "False", "ContentDeleted", "All content successfully deleted, may be waiting on finalization")
    assert found["NamespaceFinalizersRemaining"] == (
        "False", "ContentHasNoFinalizers", "All content-preserving finalizers finished")
    assert [p["metadata"]["name"] for p in list_pods(api, ns)] == ["slow"]
    assert get(api, f"/api/v1/namespaces/{ns}/replicationcontrollers/web") is None
    assert get(api, f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/lock") is None
    assert must_get(api, f"/api/v1/namespaces/{ns}")["spec"]["finalizers"] == ["kubernetes"]

    finished = time.monotonic()
    r = api.request("DELETE", f"/api/v1/namespaces/{ns}/pods/slow", json={"gracePeriodSeconds": 0})
    assert r.status_code == 200, r.text
    wait_until(lambda: get(api, f"/api/v1/namespaces/{ns}") is None, timeout=20, message="the namespace to go")
    assert time.monotonic() - finished < 15  # the requeue comes within 12 // 2 + 1 s


def test_an_empty_namespace_goes_at_once(controller_manager, api, fresh_namespace):
    assert api.delete(f"/api/v1/namespaces/{fresh_namespace}").status_code == 200
    wait_until(lambda: get(api, f"/api/v1/namespaces/{fresh_namespace}") is None, timeout=10,
               message="the namespace to go")


def test_creations_in_a_terminating_namespace_fail_silently(cluster, api, fresh_namespace):
    """As Kubernetes: no FailedCreate Event and no ReplicaFailure condition when the namespace is going."""
    ns = fresh_namespace
    proc = start_controller_manager(cluster, "--controllers=*,-namespace", name="cm-no-namespace-controller")
    try:
        assert api.post(f"/api/v1/namespaces/{ns}/replicationcontrollers", json=kube.rc("web", 1)).status_code == 201
        wait_until(lambda: len(active(list_pods(api, ns))) == 1, message="the first replica")
        assert api.delete(f"/api/v1/namespaces/{ns}").status_code == 200
        r = api.patch(f"/api/v1/namespaces/{ns}/replicationcontrollers/web", json={"spec": {"replicas": 3}},
                      headers=MERGE)
        assert r.status_code == 200, r.text
        wait_until(lambda: must_get(api, f"/api/v1/namespaces/{ns}/replicationcontrollers/web")["status"]
                   .get("observedGeneration") == 2, message="the RC synced")
        time.sleep(1.0)
        assert len(list_pods(api, ns)) == 1
        assert events(api, ns, "FailedCreate") == []
        assert "conditions" not in must_get(api, f"/api/v1/namespaces/{ns}/replicationcontrollers/web")["status"]
    finally:
        proc.stop()
    # With the namespace controller back, the namespace is emptied and goes.
    proc = start_controller_manager(cluster, name="cm-namespace-back")
    try:
        wait_until(lambda: get(api, f"/api/v1/namespaces/{ns}") is None, timeout=20,
                   message="the namespace to go")
    finally:
        proc.stop()
