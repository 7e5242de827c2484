"""Resource usage end to end: kubelet_sim's simulated usage -> metrics-server -> the aggregation layer -> kubectl top.

Also memory pressure: a node whose simulated working set leaves less than
``evictionHard`` reports MemoryPressure, is tainted by the node lifecycle
controller, and evicts its BestEffort Pod first.
"""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest

from tests import harness, kube
from tests.kube import NamespaceReader
from tests.kubectl import Kubectl, binary

pytestmark = [pytest.mark.e2e, pytest.mark.kubectl]


def busy_pod(name: str, *, cpu: str, memory: str, node: str | None = None,
             requests: dict[str, str] | None = None) -> dict[str, Any]:
    body = kube.pod(name, labels={"app": name}, node=node)
    body["metadata"]["annotations"] = {"kubesim.io/cpu-usage": cpu, "kubesim.io/memory-usage": memory}
    if requests:
        body["spec"]["containers"][0]["resources"] = {"requests": requests, "limits": requests}
    return body


def _millicores(text: str) -> int:
    return int(text[:-1]) if text.endswith("m") else int(float(text) * 1000)


def _mebibytes(text: str) -> int:
    return int(text.removesuffix("Mi"))


@pytest.mark.parametrize("version", ["1.27", "1.30", "1.33"])
def test_kubectl_top_pods_and_nodes(kubectl: Kubectl, ns: NamespaceReader, version: str) -> None:
    kubectl.apply(busy_pod("busy", cpu="400m", memory="200Mi"))
    ns.wait_running("app=busy", 1)
    k = Kubectl(binary(version), kubectl.server, kubectl.home, kubectl.namespace)

    def top_pod() -> list[str] | None:
        done = k.run("top", "pod", "busy", "--containers", check=False)
        lines = done.stdout.splitlines()
        return lines if done.returncode == 0 and len(lines) == 2 else None
    lines = harness.wait_for(top_pod, timeout=30, message="PodMetrics for busy")
    assert isinstance(lines, list)
    assert lines[0].split() == ["POD", "NAME", "CPU(cores)", "MEMORY(bytes)"]
    pod, container, cpu, memory = lines[1].split()
    # The profile's noise is +-10% per 10-second window.
    assert (pod, container) == ("busy", "c")
    assert 350 <= _millicores(cpu) <= 450 and 175 <= _mebibytes(memory) <= 225

    def top_nodes() -> list[str] | None:
        # A node has a cpu rate from its second scrape on (metrics-server's rule): until then, and for a
        # young cluster, kubectl prints <unknown> in its row.
        lines = k("top", "nodes").splitlines()
        return lines if len(lines) == 4 and "<unknown>" not in "".join(lines) else None
    nodes = harness.wait_for(top_nodes, timeout=60, interval=1, message="NodeMetrics for all three nodes")
    assert isinstance(nodes, list)
    assert re.split(r"\s{2,}", nodes[0].strip()) == ["NAME", "CPU(cores)", "CPU(%)", "MEMORY(bytes)", "MEMORY(%)"] \
        or nodes[0].split() == ["NAME", "CPU(cores)", "CPU%", "MEMORY(bytes)", "MEMORY%"]
    rows = {line.split()[0]: line.split() for line in nodes[1:]}
    assert set(rows) == {"node-1", "node-2", "node-3"}
    # Each node uses at least what its system uses (100m, 512Mi), out of 3800m allocatable.
    assert all(_millicores(r[1]) >= 90 and r[2].endswith("%") and _mebibytes(r[3]) >= 460 for r in rows.values())


def test_the_metrics_apiservice_is_available_and_discovered(admin: Kubectl, api: httpx.Client) -> None:
    def available() -> str | None:
        out = admin.run("get", "apiservice", "v1beta1.metrics.k8s.io", check=False).stdout
        return out if "True" in out else None
    out = harness.wait_for(available, timeout=30, message="the metrics APIService to be available")
    assert isinstance(out, str)
    assert out.splitlines()[1].split()[:3] == ["v1beta1.metrics.k8s.io", "kube-system/metrics-server", "True"]
    # The condition is the stored object's status, written by the availability controller.
    stored = api.get("/apis/apiregistration.k8s.io/v1/apiservices/v1beta1.metrics.k8s.io").json()
    [condition] = [c for c in stored["status"]["conditions"] if c["type"] == "Available"]
    assert (condition["status"], condition["reason"], condition["message"]) == ("True", "Passed", "all checks passed")
    service = api.get("/api/v1/namespaces/kube-system/services/metrics-server").json()
    assert (service["spec"]["type"], service["spec"]["externalName"]) == ("ExternalName", "localhost")
    groups = {g["name"] for g in api.get("/apis").json()["groups"]}
    assert "metrics.k8s.io" in groups
    resources = admin("api-resources", "--api-group=metrics.k8s.io").splitlines()
    assert {line.split()[0] for line in resources[1:]} == {"nodes", "pods"}
    missing = api.get("/apis/metrics.k8s.io/v1beta1/nodes/nope")
    assert (missing.status_code, missing.json()["message"]) == (404, 'nodemetrics.metrics.k8s.io "nope" not found')


def test_memory_pressure_evicts_best_effort_first(kubectl: Kubectl, ns: NamespaceReader, api: httpx.Client,
                                                  nodes: tuple[str, ...]) -> None:
    node = nodes[2]
    # 16Gi nodes, 512Mi for the system: a 7Gi Guaranteed Pod and a BestEffort one growing to 9Gi leave
    # less than the 100Mi evictionHard threshold.
    kubectl.apply(busy_pod("steady", cpu="100m", memory="7Gi", node=node, requests={"cpu": "100m", "memory": "7Gi"}))
    ns.wait_running("app=steady", 1)
    kubectl.apply(busy_pod("greedy", cpu="100m", memory="0:100Mi,3:9Gi", node=node))
    greedy = ns.wait(lambda: (p := ns.pod("greedy"))["status"].get("reason") == "Evicted" and p,
                     "greedy to be evicted")
    status = greedy["status"]
    assert status["phase"] == "Failed"
    assert status["message"].startswith("The node was low on resource: memory. Threshold quantity: 100Mi, "
                                        "available: ")
    assert "Container c was using" in status["message"] and "request is 0, has larger consumption of memory." in \
        status["message"]
    assert any(c["type"] == "DisruptionTarget" and c["reason"] == "TerminationByKubelet"
               for c in status["conditions"])
    assert ns.pod("steady")["status"]["phase"] == "Running"
    evicted = ns.wait_event("greedy", "Evicted")
    assert evicted["type"] == "Warning" and evicted["message"] == status["message"]
    # The kubelet reports the pressure; the node lifecycle controller taints the node for it.
    def pressured() -> dict[str, Any] | None:
        found: dict[str, Any] = api.get(f"/api/v1/nodes/{node}").json()
        conditions = {c["type"]: c for c in found["status"]["conditions"]}
        taints = {t["key"] for t in found["spec"].get("taints") or ()}
        return found if conditions["MemoryPressure"]["status"] == "True" and \
            "node.kubernetes.io/memory-pressure" in taints else None
    found = harness.wait_for(pressured, timeout=30, message="MemoryPressure and its taint")
    assert isinstance(found, dict)
    memory = next(c for c in found["status"]["conditions"] if c["type"] == "MemoryPressure")
    assert (memory["reason"], memory["message"]) == ("KubeletHasInsufficientMemory",
                                                     "kubelet has insufficient memory available")
    # Once the Pods are gone, memory recovers and the condition clears after the transition period.
    kubectl("delete", "pod", "steady", "greedy", "--wait=false")
    harness.wait_for(lambda: next(c for c in api.get(f"/api/v1/nodes/{node}").json()["status"]["conditions"]
                                  if c["type"] == "MemoryPressure")["status"] == "False", timeout=40,
                     message="MemoryPressure to clear")
