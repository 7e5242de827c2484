"""kubelet_sim's nodes through the real APIServer: registration, Lease heartbeats, failing and recovering.

Each test module starts its own kubelet_sim process on a private profile
(node names with a unique prefix), so that modules sharing the session's
APIServer never adopt each other's nodes. :func:`start_kubelet_sim` is also
used by ``test_kubelet_pods``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from kubesim import node as node_command
from kubesim import procs
from machinery.api.meta import parse_time
from tests import harness
from tests.kube import pod

pytestmark = pytest.mark.integration


@dataclass
class KubeletSim:
    process: procs.ManagedProcess
    nodes: list[str]
    kubelet_port: int
    api_url: str

    def remove(self) -> None:
        """Stop the process, then delete its Nodes and Leases: the session's APIServer is shared."""
        self.process.stop()
        with harness.admin_client(self.api_url, timeout=10) as api:
            for name in self.nodes:
                api.delete(f"/api/v1/nodes/{name}")
                api.delete(f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{name}")


def start_kubelet_sim(cluster: harness.Cluster, workdir: Path, *, nodes: int = 2, prefix: str | None = None,
                      kubelet_port: int | None = None, renew: str = "1s",
                      extra_args: Sequence[str] = ()) -> KubeletSim:
    """A kubelet_sim with ``nodes`` nodes named ``<prefix>-<i>``, fast timings, and ready to serve."""
    prefix = prefix or f"k{uuid.uuid4().hex[:6]}"
    profile = {
        "apiVersion": "kubesim.io/v1alpha1", "kind": "NodeProfile",
        "nodeGroups": [{"name": "worker", "count": nodes, "namePattern": f"{prefix}-{{index}}",
                        "zones": ["zone-a", "zone-b"], "labels": {"kubesim.io/test": prefix},
                        "taints": [{"key": "kubesim.io/quiet", "value": "yes", "effect": "PreferNoSchedule"}],
                        "capacity": {"cpu": "2", "memory": "4Gi", "pods": "10"}}],
        "timings": {"containerStartDelay": "200ms", "containerStartJitter": "100ms",
                    "nodeStatusUpdateFrequency": "1s"},
    }
    path = workdir / f"{prefix}-profile.yaml"
    path.write_text(yaml.safe_dump(profile))
    health = procs.free_port()
    port = kubelet_port or procs.free_port()
    # Nodes named after the test act as the admin: only node-N have tokens.
    args = ["--kubeconfig", str(cluster.kubeconfig()), "--node-profile", str(path), "--health-port", str(health),
            "--kubelet-port", str(port), f"--node-lease-renew-interval={renew}", *extra_args]
    process = cluster.start_component("kubelet_sim", args, name=f"kubelet-{prefix}",
                                      ready_url=f"http://127.0.0.1:{health}/readyz")
    return KubeletSim(process, [f"{prefix}-{i}" for i in range(1, nodes + 1)], port, cluster.url)


@pytest.fixture(scope="module")
def kubelet(cluster: harness.Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeletSim]:
    sim = start_kubelet_sim(cluster, tmp_path_factory.mktemp("kubelet"), nodes=2)
    yield sim
    sim.remove()


def _node(api: httpx.Client, name: str) -> dict[str, Any]:
    response = api.get(f"/api/v1/nodes/{name}")
    assert response.status_code == 200, response.text
    node: dict[str, Any] = response.json()
    return node


def _lease(api: httpx.Client, name: str) -> dict[str, Any]:
    lease: dict[str, Any] = api.get(
        f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{name}").json()
    return lease


def _renewed(api: httpx.Client, name: str) -> dt.datetime:
    renewed = parse_time(_lease(api, name)["spec"]["renewTime"])
    assert renewed is not None
    return renewed


def _ready(node: dict[str, Any]) -> str:
    return next(c["status"] for c in node["status"]["conditions"] if c["type"] == "Ready")


def test_nodes_register_with_the_kubelets_fields(api: httpx.Client, kubelet: KubeletSim) -> None:
    first = _node(api, kubelet.nodes[0])
    meta, spec, status = first["metadata"], first["spec"], first["status"]
    assert {k: meta["labels"][k] for k in ("kubernetes.io/hostname", "kubernetes.io/os", "kubernetes.io/arch",
                                           "topology.kubernetes.io/zone")} == {
        "kubernetes.io/hostname": kubelet.nodes[0], "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64", "topology.kubernetes.io/zone": "zone-a"}
    assert spec["taints"] == [{"key": "kubesim.io/quiet", "value": "yes", "effect": "PreferNoSchedule"}]
    assert spec["podCIDR"] == spec["podCIDRs"][0]
    assert (status["capacity"]["cpu"], status["capacity"]["pods"]) == ("2", "10")
    assert [(c["type"], c["status"]) for c in status["conditions"]] == [
        ("MemoryPressure", "False"), ("DiskPressure", "False"), ("PIDPressure", "False"), ("Ready", "True")]
    assert {a["type"]: a["address"] for a in status["addresses"]} == {"InternalIP": "127.0.0.1",
                                                                      "Hostname": kubelet.nodes[0]}
    assert status["daemonEndpoints"] == {"kubeletEndpoint": {"Port": kubelet.kubelet_port}}
    assert status["nodeInfo"]["kubeletVersion"].startswith("v1.32")
    # The recorder writes Events in the background, after the status that they report.
    def node_events() -> list[dict[str, Any]] | None:
        items: list[dict[str, Any]] = api.get("/api/v1/namespaces/default/events", params={
            "fieldSelector": f"involvedObject.name={kubelet.nodes[0]}"}).json()["items"]
        return items if {"Starting", "NodeReady"} <= {e["reason"] for e in items} else None
    events = harness.wait_for(node_events, timeout=20, message="the Starting and NodeReady Events")
    assert {e["source"]["component"] for e in events} == {"kubelet"}


def test_leases_are_renewed_every_interval(api: httpx.Client, kubelet: KubeletSim) -> None:
    name = kubelet.nodes[1]
    lease = _lease(api, name)
    assert (lease["spec"]["holderIdentity"], lease["spec"]["leaseDurationSeconds"]) == (name, 40)
    assert lease["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Node", "name": name, "uid": _node(api, name)["metadata"]["uid"]}]
    before = _renewed(api, name)
    harness.wait_for(lambda: _renewed(api, name) >= before + dt.timedelta(seconds=2), timeout=10,
                     message="two more renewals")


def test_a_stopped_node_stops_its_heartbeats_and_recovers(api: httpx.Client, kubelet: KubeletSim,
                                                          namespace: str) -> None:
    name = kubelet.nodes[0]
    # Through the APIServer's nodes/proxy, to the kubelet hosting the node (over HTTPS, as the APIServer).
    stopped = api.post(f"/api/v1/nodes/{name}/proxy/stop")
    assert stopped.json() == {"node": name, "stopped": True}
    # A Pod bound to the stopped node is not seen by its kubelet meanwhile.
    r = api.post(f"/api/v1/namespaces/{namespace}/pods", json=pod("late", node=name))
    assert r.status_code == 201, r.text
    frozen = _renewed(api, name)
    harness.wait_for(lambda: _renewed(api, kubelet.nodes[1]) > frozen + dt.timedelta(seconds=3), timeout=15,
                     message="the other node's renewals to go on")
    assert _renewed(api, name) == frozen
    assert "containerStatuses" not in api.get(f"/api/v1/namespaces/{namespace}/pods/late").json()["status"]
    # A stopped node's kubelet answers nothing else, through the APIServer either.
    unreachable = api.get(f"/api/v1/nodes/{name}/proxy/healthz")
    assert unreachable.status_code == 503, unreachable.text
    started = api.post(f"/api/v1/nodes/{name}/proxy/start")
    assert started.json() == {"node": name, "stopped": False}
    harness.wait_for(lambda: _renewed(api, name) > frozen, timeout=10, message="renewals to resume")
    late = f"/api/v1/namespaces/{namespace}/pods/late"
    harness.wait_for(lambda: api.get(late).json()["status"].get("phase") == "Running", timeout=15,
                     message="the Pod to run once the node is back")


def test_the_kubesim_node_command(api: httpx.Client, cluster: harness.Cluster, kubelet: KubeletSim,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser()
    node_command.add_arguments(parser)
    name = kubelet.nodes[1]
    assert node_command.main(parser.parse_args(["stop", name, "--kubeconfig", str(cluster.kubeconfig())])) == 0
    assert capsys.readouterr().out == f"node/{name} stopped\n"
    frozen = _renewed(api, name)
    harness.wait_for(lambda: _renewed(api, kubelet.nodes[0]) > frozen + dt.timedelta(seconds=2), timeout=15,
                     message="time to pass")
    assert _renewed(api, name) == frozen
    assert node_command.main(parser.parse_args(["start", name, "--kubeconfig", str(cluster.kubeconfig())])) == 0
    assert capsys.readouterr().out == f"node/{name} started\n"
    harness.wait_for(lambda: _renewed(api, name) > frozen, timeout=10, message="renewals to resume")
    assert node_command.main(parser.parse_args(["stop", "no-such-node", "--kubeconfig", str(cluster.kubeconfig())])) == 1
    assert 'nodes "no-such-node" not found' in capsys.readouterr().err


def test_ready_set_to_unknown_is_reported_ready_again(api: httpx.Client, kubelet: KubeletSim) -> None:
    name = kubelet.nodes[1]
    node = _node(api, name)
    # What the node lifecycle controller writes when the heartbeats stop.
    unknown = {"status": "Unknown", "reason": "NodeStatusUnknown",
               "message": "Kubelet stopped posting node status."}
    conditions = [dict(c, **unknown) if c["type"] == "Ready" else c for c in node["status"]["conditions"]]
    patched = api.patch(f"/api/v1/nodes/{name}/status", json={"status": {"conditions": conditions}},
                        headers={"Content-Type": "application/strategic-merge-patch+json"})
    assert patched.status_code == 200 and _ready(patched.json()) == "Unknown"
    harness.wait_for(lambda: _ready(_node(api, name)) == "True", timeout=10, message="Ready to be True again")
    ready = next(c for c in _node(api, name)["status"]["conditions"] if c["type"] == "Ready")
    assert (ready["reason"], ready["message"]) == ("KubeletReady", "kubelet is posting ready status")


def test_a_restarted_kubelet_sim_adopts_its_nodes_and_pods(api: httpx.Client, cluster: harness.Cluster,
                                                           namespace: str, tmp_path: Path) -> None:
    sims = [start_kubelet_sim(cluster, tmp_path, nodes=1)]
    try:
        _restart_and_adopt(api, cluster, namespace, tmp_path, sims)
    finally:
        for sim in sims:
            sim.remove()


def _restart_and_adopt(api: httpx.Client, cluster: harness.Cluster, namespace: str, tmp_path: Path,
                       sims: list[KubeletSim]) -> None:
    name = sims[0].nodes[0]
    crashing = pod("crashing", node=name)
    crashing["metadata"]["annotations"] = {"kubesim.io/run-seconds": "0.5", "kubesim.io/exit-code": "1"}
    for body in (pod("steady", node=name), crashing):
        assert api.post(f"/api/v1/namespaces/{namespace}/pods", json=body).status_code == 201

    def statuses() -> dict[str, dict[str, Any]]:
        items = api.get(f"/api/v1/namespaces/{namespace}/pods").json()["items"]
        return {p["metadata"]["name"]: (p["status"].get("containerStatuses") or [{}])[0] for p in items}

    def settled() -> bool:
        now = statuses()
        waiting = now["crashing"].get("state", {}).get("waiting", {})
        return "running" in now["steady"].get("state", {}) and waiting.get("reason") == "CrashLoopBackOff"

    harness.wait_for(settled, timeout=20, message="one Pod running, one crash-looping")
    before = statuses()
    sims[0].process.stop()
    # Bound while no kubelet_sim runs: the restarted one starts it.
    assert api.post(f"/api/v1/namespaces/{namespace}/pods", json=pod("late", node=name)).status_code == 201
    # The same nodes from a new process, on another kubelet port.
    sims.append(start_kubelet_sim(cluster, tmp_path, nodes=1, prefix=name.rpartition("-")[0]))
    harness.wait_for(lambda: statuses()["late"].get("state", {}).get("running"), timeout=20,
                     message="the Pod bound during the restart to run")
    after = statuses()
    assert after["steady"]["containerID"] == before["steady"]["containerID"]
    assert after["steady"]["restartCount"] == before["steady"]["restartCount"] == 0
    assert after["crashing"]["restartCount"] >= before["crashing"]["restartCount"]
    assert _node(api, name)["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"] == sims[1].kubelet_port
    started = [e for e in api.get(f"/api/v1/namespaces/{namespace}/events").json()["items"]
               if e["reason"] == "Started" and e["involvedObject"]["name"] == "steady"]
    assert sum(e["count"] for e in started) == 1
