"""The garbage collector against a real APIServer: Background, Foreground and Orphan deletion, dangling owners."""

from __future__ import annotations

import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from kubesim import procs
from tests import harness, kube
from tests.integration.test_cm_support import (
    create_node,
    delete_nodes,
    get,
    list_pods,
    must_get,
    start_controller_manager,
    unique,
    wait_until,
)

pytestmark = pytest.mark.integration

MERGE = {"Content-Type": "application/merge-patch+json"}
HOLD = "example.com/hold"


@pytest.fixture(scope="module")
def controller_manager(cluster: harness.Cluster) -> Iterator[procs.ManagedProcess]:
    proc = start_controller_manager(cluster, name="cm-gc")
    yield proc
    proc.stop()


def create_rc(api: httpx.Client, namespace: str, replicas: int, *, finalizers: list[str] | None = None) -> str:
    body = kube.rc("web", replicas)
    if finalizers:
        body["spec"]["template"]["metadata"]["finalizers"] = finalizers
    r = api.post(f"/api/v1/namespaces/{namespace}/replicationcontrollers", json=body)
    assert r.status_code == 201, r.text
    wait_until(lambda: len(list_pods(api, namespace)) == replicas, message=f"{replicas} replicas")
    uid: str = r.json()["metadata"]["uid"]
    return uid


def delete_rc(api: httpx.Client, namespace: str, policy: str) -> httpx.Response:
    return api.request("DELETE", f"/api/v1/namespaces/{namespace}/replicationcontrollers/web",
                       json={"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": policy})


def rc(api: httpx.Client, namespace: str) -> dict[str, Any] | None:
    return get(api, f"/api/v1/namespaces/{namespace}/replicationcontrollers/web")


def owner_ref(kind: str, name: str, uid: str, **extra: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": kind, "name": name, "uid": uid, **extra}


def create_pod(api: httpx.Client, namespace: str, name: str, owners: list[dict[str, Any]]) -> None:
    body = kube.pod(name)
    body["metadata"]["ownerReferences"] = owners
    r = api.post(f"/api/v1/namespaces/{namespace}/pods", json=body)
    assert r.status_code == 201, r.text


def test_background_deletion_removes_the_owner_then_its_dependents(controller_manager, api, namespace):
    create_rc(api, namespace, 3)
    r = delete_rc(api, namespace, "Background")
    assert r.status_code == 200, r.text
    assert rc(api, namespace) is None, "the owner goes at once"
    wait_until(lambda: list_pods(api, namespace) == [], message="the dependents to be collected")


def test_foreground_deletion_keeps_the_owner_until_blocking_dependents_are_gone(controller_manager, api, namespace):
    # The Pods' own finalizer keeps them (terminating) until the test removes it.
    create_rc(api, namespace, 2, finalizers=[HOLD])
    r = delete_rc(api, namespace, "Foreground")
    assert r.status_code == 200, r.text
    waiting = rc(api, namespace)
    assert waiting is not None
    assert waiting["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert waiting["metadata"].get("deletionTimestamp")

    def all_terminating() -> list[dict[str, Any]] | None:
        pods = list_pods(api, namespace)
        return pods if all(p["metadata"].get("deletionTimestamp") for p in pods) else None

    pods = wait_until(all_terminating, message="the dependents to be deleted")
    time.sleep(1.0)
    assert rc(api, namespace) is not None, "the owner waits for its dependents"

    for pod in pods:
        r = api.patch(f"/api/v1/namespaces/{namespace}/pods/{pod['metadata']['name']}",
                      json={"metadata": {"finalizers": None}}, headers=MERGE)
        assert r.status_code == 200, r.text
    wait_until(lambda: rc(api, namespace) is None, message="the owner to go")
    assert list_pods(api, namespace) == []


def test_orphan_deletion_removes_the_owner_and_leaves_the_dependents(controller_manager, api, namespace):
    create_rc(api, namespace, 2)
    before = {p["metadata"]["name"] for p in list_pods(api, namespace)}
    r = delete_rc(api, namespace, "Orphan")
    assert r.status_code == 200, r.text
    wait_until(lambda: rc(api, namespace) is None, message="the owner to go")
    pods = list_pods(api, namespace)
    assert {p["metadata"]["name"] for p in pods} == before
    assert all(not p["metadata"].get("ownerReferences") for p in pods)
    time.sleep(1.0)
    assert len(list_pods(api, namespace)) == 2, "orphans are not collected"


def test_an_rc_deleted_without_a_policy_orphans_its_pods_as_core_v1_does(controller_manager, api, namespace):
    # core/v1 kept the default it had before the garbage collector (rcStrategy's
    # DefaultGarbageCollectionPolicy): the Pods outlive their RC unless a policy says otherwise.
    create_rc(api, namespace, 2)
    r = api.delete(f"/api/v1/namespaces/{namespace}/replicationcontrollers/web")
    assert r.status_code == 200, r.text
    wait_until(lambda: rc(api, namespace) is None, message="the owner to go")
    pods = list_pods(api, namespace)
    assert len(pods) == 2 and all(not p["metadata"].get("ownerReferences") for p in pods)


def test_dependents_of_owners_that_do_not_exist_are_collected(controller_manager, api, namespace):
    live = create_rc(api, namespace, 0)
    create_pod(api, namespace, "no-such-owner", [owner_ref("ReplicationController", "ghost", str(uuid.uuid4()))])
    create_pod(api, namespace, "wrong-uid", [owner_ref("ReplicationController", "web", str(uuid.uuid4()))])
    dead = str(uuid.uuid4())
    create_pod(api, namespace, "one-dead-owner", [owner_ref("ReplicationController", "web", live),
                                                  owner_ref("ReplicationController", "gone", dead)])
    create_pod(api, namespace, "unknown-kind", [{"apiVersion": "example.com/v1", "kind": "Widget", "name": "w",
                                                 "uid": str(uuid.uuid4())}])
    wait_until(lambda: {p["metadata"]["name"] for p in list_pods(api, namespace)} == {
        "one-dead-owner", "unknown-kind"}, message="the orphans to be collected")
    kept = wait_until(lambda: (p if len((p := must_get(api, f"/api/v1/namespaces/{namespace}/pods/one-dead-owner"))
                                        ["metadata"]["ownerReferences"]) == 1 else None),
                      message="the dangling reference to be removed")
    assert kept["metadata"]["ownerReferences"][0]["uid"] == live


def test_a_deleted_node_takes_its_lease_along(controller_manager, api):
    name = unique("gc-node")
    create_node(api, name)
    lease_path = f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{name}"
    assert get(api, lease_path) is not None
    assert api.delete(f"/api/v1/nodes/{name}").status_code == 200
    try:
        wait_until(lambda: get(api, lease_path) is None, message="the Lease to be collected")
    finally:
        delete_nodes(api, [name])


@pytest.mark.kubectl
@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
@pytest.mark.parametrize(("cascade", "pods_left"), [
    pytest.param([], 0, id="background"),
    pytest.param(["--cascade=orphan"], 2, id="orphan"),
])
def test_kubectl_delete_rc(controller_manager, api, namespace, cluster, cascade, pods_left):
    create_rc(api, namespace, 2)
    result = subprocess.run(["kubectl", "--kubeconfig", str(cluster.kubeconfig()), "-n", namespace, "delete", "rc", "web",
                             *cascade], capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == 'replicationcontroller "web" deleted'
    wait_until(lambda: len(list_pods(api, namespace)) == pods_left, message=f"{pods_left} Pods left")
    time.sleep(1.0)
    assert len(list_pods(api, namespace)) == pods_left


def test_every_kind_is_collected_found_through_discovery(api: httpx.Client, namespace: str,
                                                         controller_manager: procs.ManagedProcess) -> None:
    """Kinds the collector knew nothing special about: a ConfigMap and a Role owned by a Secret."""
    r = api.post(f"/api/v1/namespaces/{namespace}/secrets",
                 json={"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "owner"}})
    assert r.status_code == 201, r.text
    ref = {"apiVersion": "v1", "kind": "Secret", "name": "owner", "uid": r.json()["metadata"]["uid"]}
    r = api.post(f"/api/v1/namespaces/{namespace}/configmaps", json={
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dependent", "ownerReferences": [ref]}})
    assert r.status_code == 201, r.text
    r = api.post(f"/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/roles", json={
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": "dependent", "ownerReferences": [ref]}, "rules": []})
    assert r.status_code == 201, r.text
    assert api.delete(f"/api/v1/namespaces/{namespace}/secrets/owner").status_code == 200
    wait_until(lambda: get(api, f"/api/v1/namespaces/{namespace}/configmaps/dependent") is None
               and get(api, f"/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/roles/dependent") is None,
               message="the Secret's dependents collected")


def test_a_dependent_of_a_kind_discovery_lists_stays_while_its_owner_lives(
        api: httpx.Client, namespace: str, controller_manager: procs.ManagedProcess) -> None:
    r = api.post(f"/api/v1/namespaces/{namespace}/configmaps",
                 json={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owner"}})
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": r.json()["metadata"]["uid"]}
    r = api.post(f"/apis/apps/v1/namespaces/{namespace}/controllerrevisions", json={
        "apiVersion": "apps/v1", "kind": "ControllerRevision", "revision": 1, "data": {},
        "metadata": {"name": "dependent", "ownerReferences": [ref]}})
    assert r.status_code == 201, r.text
    time.sleep(1.5)
    assert get(api, f"/apis/apps/v1/namespaces/{namespace}/controllerrevisions/dependent") is not None
    api.delete(f"/api/v1/namespaces/{namespace}/configmaps/owner")
    wait_until(lambda: get(api, f"/apis/apps/v1/namespaces/{namespace}/controllerrevisions/dependent") is None,
               message="the ControllerRevision collected")
