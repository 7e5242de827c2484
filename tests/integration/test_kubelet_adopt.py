"""kubelet_sim --adopt-nodes: existing annotated Nodes are simulated as they describe themselves."""

from __future__ import annotations

import time
from typing import Any

import pytest

from kubelet_sim.adopt import ADOPT_ANNOTATION
from kubesim import procs
from tests import harness
from tests.kube import pod

pytestmark = pytest.mark.integration


def adoptable(name: str, **status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "annotations": {ADOPT_ANNOTATION: "true"},
                     "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                "kubernetes.io/arch": "arm64", "node.kubernetes.io/instance-type": "m6g.large",
                                "topology.kubernetes.io/zone": "eu-west-1b"}},
        "spec": {"podCIDR": "10.9.3.0/24", "podCIDRs": ["10.9.3.0/24"],
                 "taints": [{"key": "dedicated", "value": "batch", "effect": "PreferNoSchedule"}]},
        "status": {"capacity": {"cpu": "2", "memory": "8Gi", "pods": "20"},
                   "allocatable": {"cpu": "1930m", "memory": "7Gi", "pods": "20"}, **status},
    }


def start(c: harness.Cluster, *flags: str) -> procs.ManagedProcess:
    health = procs.free_port()
    # Its own nodes by their tokens, adopted ones as kubesim:node-adopter (NodeRestriction would refuse
    # node-1 writing another node's Node or Lease).
    return c.start_component("kubelet_sim", [*c.component_args("kubelet"), "--health-port", str(health),
                                             "--node-lease-renew-interval=1s", *flags],
                             name="kubelet", ready_url=f"http://127.0.0.1:{health}/readyz")


def test_an_adopted_node_keeps_its_shape_and_conditions(fresh_cluster: harness.Cluster) -> None:
    start(fresh_cluster, "--nodes=0", "--adopt-nodes")
    pressure = {"type": "MemoryPressure", "status": "True", "reason": "KubeletHasInsufficientMemory",
                "message": "kubelet has insufficient memory available"}
    ready = {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status"}
    with fresh_cluster.client(timeout=10) as api:
        assert api.post("/api/v1/namespaces", json={"metadata": {"name": "default"}}).status_code in (201, 409)
        assert api.post("/api/v1/nodes", json=adoptable("prod-1", conditions=[pressure, ready])).status_code == 201
        # A Node without the annotation is someone else's.
        other = adoptable("other")
        del other["metadata"]["annotations"]
        assert api.post("/api/v1/nodes", json=other).status_code == 201

        def heartbeat() -> dict[str, Any] | None:
            r = api.get("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/prod-1")
            return r.json() if r.status_code == 200 else None
        harness.wait_for(heartbeat, timeout=20, message="the adopted node's Lease")
        node = api.get("/api/v1/nodes/prod-1").json()
        assert node["status"]["capacity"] == {"cpu": "2", "memory": "8Gi", "pods": "20"}
        assert node["status"]["allocatable"] == {"cpu": "1930m", "memory": "7Gi", "pods": "20"}
        assert node["metadata"]["labels"]["node.kubernetes.io/instance-type"] == "m6g.large"
        assert node["metadata"]["labels"]["kubernetes.io/arch"] == "arm64"
        assert node["spec"]["taints"] == [{"key": "dedicated", "value": "batch", "effect": "PreferNoSchedule"}]
        assert node["spec"]["podCIDR"] == "10.9.3.0/24"
        conditions = {c["type"]: c for c in node["status"]["conditions"]}
        assert (conditions["MemoryPressure"]["status"], conditions["MemoryPressure"]["reason"]) == (
            "True", "KubeletHasInsufficientMemory")
        assert conditions["MemoryPressure"]["lastHeartbeatTime"]
        assert node["status"]["nodeInfo"]["kubeletVersion"]
        assert api.get("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/other").status_code == 404

        # A Pod bound to it runs there, with an address of its podCIDR.
        body = pod("bound", node="prod-1")
        assert api.post("/api/v1/namespaces/default/pods", json=body).status_code == 201

        def running() -> dict[str, Any] | None:
            p = api.get("/api/v1/namespaces/default/pods/bound").json()
            return p if p["status"].get("phase") == "Running" else None
        started = harness.wait_for(running, timeout=20, message="the Pod on the adopted node Running")
        assert started["status"]["podIP"].startswith("10.9.3.")

        # Deleted, it is gone: it is not registered again.
        assert api.delete("/api/v1/nodes/prod-1").status_code == 200
        log = fresh_cluster.components[-1].log_path
        harness.wait_for(lambda: "node prod-1 was deleted from the API; it is no longer simulated" in log.read_text(),
                         timeout=10, message="the kubelet letting the node go")
        last = api.get("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/prod-1").json()
        # Absence can only be watched for a while: three renewal intervals.
        time.sleep(3)
        assert api.get("/api/v1/nodes/prod-1").status_code == 404
        now = api.get("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/prod-1").json()
        assert now["spec"]["renewTime"] == last["spec"]["renewTime"]


def test_zero_nodes_needs_adoption(fresh_cluster: harness.Cluster) -> None:
    with pytest.raises(procs.StartError, match="--nodes=0 simulates no node: use it with --adopt-nodes"):
        start(fresh_cluster, "--nodes=0")


def test_a_node_deleted_while_it_is_being_adopted_is_not_created_again(fresh_cluster: harness.Cluster) -> None:
    # The deletion may come between the kubelet seeing the Node and its taking it over: an adopted Node is
    # never created by the kubelet, so it stays gone (a replayed trace adds and deletes nodes this fast).
    start(fresh_cluster, "--nodes=0", "--adopt-nodes")
    names = [f"brief-{i}" for i in range(12)]
    with fresh_cluster.client(timeout=10) as api:
        for i, name in enumerate(names):
            body = adoptable(name)
            body["spec"] = {"podCIDR": f"10.9.{10 + i}.0/24", "podCIDRs": [f"10.9.{10 + i}.0/24"]}
            assert api.post("/api/v1/nodes", json=body).status_code == 201
            time.sleep(0.005 * i)  # from at once to 55 ms: each step of the adoption meets a deletion
            assert api.delete(f"/api/v1/nodes/{name}").status_code == 200
        # Absence can only be watched for a while: long enough for every adoption to have finished.
        time.sleep(3)
        left = [n["metadata"]["name"] for n in api.get("/api/v1/nodes").json()["items"]]
        assert left == []
