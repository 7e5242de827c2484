"""The 13 steps of the flow on the whole cluster, scaling an RC, and a node that fails.

What the seed describes is checked where a user would look: the order of the
resourceVersions a watch reports (the RC is stored before its Pods, each Pod
is created, then bound, then Running, each at a later revision), the Events
each component writes, the components' ``[step N]`` log lines, and
``kubesim trace``.
"""

from __future__ import annotations

import ipaddress
import json
import re
import subprocess
import sys
from typing import Any

import httpx
import pytest

from tests import harness
from tests.kube import NamespaceReader, WatchReader, node_of
from tests.kubectl import Kubectl

pytestmark = pytest.mark.e2e

KUBELET_EVENTS = ["Pulling", "Pulled", "Created", "Started"]


def web_rc(replicas: int) -> dict[str, Any]:
    """The seed's RC: ``imagePullPolicy: Always`` so every Pod shows the kubelet's whole Pulling...Started."""
    return {
        "apiVersion": "v1", "kind": "ReplicationController",
        "metadata": {"name": "web"},
        "spec": {"replicas": replicas, "selector": {"app": "web"},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "nginx", "image": "nginx:1.25",
                                                       "imagePullPolicy": "Always",
                                                       "resources": {"requests": {"cpu": "100m",
                                                                                  "memory": "64Mi"}}}]}}},
    }


def kubesim(cluster: harness.Cluster, *args: str) -> subprocess.CompletedProcess[str]:
    """The ``kubesim`` command against the cluster, as a user runs it."""
    return subprocess.run([sys.executable, "-m", "kubesim", *args, "--server", cluster.url],
                          capture_output=True, text=True, timeout=60, check=False)


def step_lines(cluster: harness.Cluster, component: str, step: int, needle: str) -> list[str]:
    """The component's ``[step N]`` log lines that mention ``needle``."""
    proc = next(p for p in cluster.components if p.name == component)
    tag = f"[step {step}] "
    return [line for line in proc.log_path.read_text(errors="replace").splitlines()
            if tag in line and needle in line]


def first_rv(events: list[dict[str, Any]], name: str, predicate: Any) -> int:
    return next(int(ev["object"]["metadata"]["resourceVersion"]) for ev in events
                if ev["object"]["metadata"]["name"] == name and predicate(ev))


def test_thirteen_steps_of_an_rc_with_three_replicas(cluster: harness.Cluster, api: httpx.Client,
                                                     kubectl: Kubectl, ns: NamespaceReader) -> None:
    start_rv = api.get(f"/api/v1/namespaces/{ns.name}/pods").json()["metadata"]["resourceVersion"]
    with WatchReader(cluster.url, f"/api/v1/namespaces/{ns.name}/pods",
                     params={"watch": "true", "resourceVersion": start_rv}) as watch:
        # Steps 2 and 3: kubectl submits the RC; the APIServer stores it and answers with its revision.
        rc = json.loads(kubectl("create", "-f", "-", "-o", "json", input=json.dumps(web_rc(3))))
        rc_rv = int(rc["metadata"]["resourceVersion"])
        pods = ns.wait_running("app=web", 3)
        names = [p["metadata"]["name"] for p in pods]
        events = watch.wait_until(lambda evs: all(
            any(ev["object"]["metadata"]["name"] == n and ev["object"]["status"].get("phase") == "Running"
                for ev in evs) for n in names))

    # Steps 5 to 8: the controller saw the RC and created the Pods, owned by it, unbound.
    assert step_lines(cluster, "controller-manager", 5, f"saw ReplicationController {ns.name}/web (replicas 3)")
    created_events = ns.events(name="web", reason="SuccessfulCreate")
    assert sorted(e["message"] for e in created_events) == [f"Created pod: {n}" for n in names]
    assert {e["source"]["component"] for e in created_events} == {"replication-controller"}
    for pod in pods:
        name, node = pod["metadata"]["name"], node_of(pod)
        assert re.fullmatch(r"web-[a-z0-9]{5}", name)
        assert pod["metadata"]["ownerReferences"] == [{
            "apiVersion": "v1", "kind": "ReplicationController", "name": "web", "uid": rc["metadata"]["uid"],
            "controller": True, "blockOwnerDeletion": True}]
        assert step_lines(cluster, "controller-manager", 6, f"created Pod {ns.name}/{name} for "
                                                            f"ReplicationController {ns.name}/web")
        added = next(ev["object"] for ev in events if ev["type"] == "ADDED" and ev["object"]["metadata"]["name"] == name)
        assert not node_of(added) and added["status"]["phase"] == "Pending"

        # The resourceVersions say the order: RC stored < Pod created < Pod bound < Pod Running.
        created_rv = first_rv(events, name, lambda ev: ev["type"] == "ADDED")
        bound_rv = first_rv(events, name, lambda ev: node_of(ev["object"]))
        running_rv = first_rv(events, name, lambda ev: ev["object"]["status"].get("phase") == "Running")
        assert rc_rv < created_rv < bound_rv < running_rv

        # Steps 9 and 10: the scheduler picked the node and bound the Pod through pods/binding.
        [scheduled] = ns.events(name=name, reason="Scheduled")
        assert scheduled["message"] == f"Successfully assigned {ns.name}/{name} to {node}"
        assert scheduled["source"]["component"] == "default-scheduler"
        assert step_lines(cluster, "scheduler", 9, f"{ns.name}/{name}: 3 nodes, 3 evaluated, 3 feasible; "
                                                   f"picked {node}")
        assert step_lines(cluster, "scheduler", 10, f"bound {ns.name}/{name} to {node} (rv {bound_rv})")

        # Steps 11 to 13: the kubelet saw the binding, ran the container, and the status was stored.
        assert step_lines(cluster, "kubelet", 11, f"{ns.name}/{name} bound to {node}")
        assert step_lines(cluster, "kubelet", 12, f"started the containers of {ns.name}/{name} on {node}: nginx")
        assert step_lines(cluster, "kubelet", 13, f"status of {ns.name}/{name} persisted: Running (rv {running_rv})")
        kubelet_events = sorted((e for e in ns.events(name=name) if e["source"]["component"] == "kubelet"),
                                key=lambda e: e["eventTime"])
        assert [e["reason"] for e in kubelet_events] == KUBELET_EVENTS
        assert {e["source"]["host"] for e in kubelet_events} == {node}
        assert kubelet_events[-1]["message"] == "Started container nginx"
        status = pod["status"]
        node_cidr = ipaddress.ip_network(api.get(f"/api/v1/nodes/{node}").json()["spec"]["podCIDR"])
        assert ipaddress.ip_address(status["podIP"]) in node_cidr
        assert status["podIPs"] == [{"ip": status["podIP"]}] and status["hostIP"] == "127.0.0.1"
        assert status["startTime"]
        [container] = status["containerStatuses"]
        assert container["ready"] is True and "running" in container["state"]
    # Step 1 happened before all this: every component listed, then watched.
    for component in ("controller-manager", "scheduler", "kubelet"):
        assert step_lines(cluster, component, 1, "pods: listed")

    # kubesim trace rebuilds all 13 steps of one Pod, with the same revisions.
    pod = pods[0]
    name, node = pod["metadata"]["name"], node_of(pod)
    traced = kubesim(cluster, "trace", f"{ns.name}/{name}", "--json")
    assert traced.returncode == 0, traced.stderr
    steps = json.loads(traced.stdout)["steps"]
    assert sorted({s["step"] for s in steps}) == list(range(1, 14))
    assert all(s["done"] for s in steps), steps
    by_step = {s["step"]: s for s in steps}
    assert by_step[2]["resource_version"] == str(rc_rv)
    assert by_step[7]["resource_version"] == str(first_rv(events, name, lambda ev: ev["type"] == "ADDED"))
    assert by_step[10]["resource_version"] == str(first_rv(events, name, lambda ev: node_of(ev["object"])))
    assert by_step[13]["resource_version"] == str(
        first_rv(events, name, lambda ev: ev["object"]["status"].get("phase") == "Running"))
    text = kubesim(cluster, "trace", f"{ns.name}/{name}")
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert lines[0] == f"Pod {ns.name}/{name} (ReplicationController {ns.name}/web)"
    rows = [line.split(None, 1) for line in lines[lines.index("") + 2:]]
    assert [int(step) for step, _ in rows] == [1, 1, 1, *range(2, 14)]
    [step9] = [rest for step, rest in rows if step == "9"]
    assert f"picked {node}" in step9


def rc_status(ns: NamespaceReader, name: str) -> dict[str, Any]:
    return dict((ns.get("replicationcontrollers", name) or {}).get("status") or {})


def test_scale_up_then_down_keeps_the_pods_marked_costly(kubectl: Kubectl, ns: NamespaceReader) -> None:
    kubectl.apply(web_rc(3))
    first = ns.wait_running("app=web", 3)
    assert kubectl("scale", "rc", "web", "--replicas=10").strip() == "replicationcontroller/web scaled"
    pods = ns.wait_running("app=web", 10)
    assert {node_of(p) for p in pods} == {"node-1", "node-2", "node-3"}
    harness.wait_for(lambda: rc_status(ns, "web").get("readyReplicas") == 10, message="10 ready replicas")

    # Scale-down deletes by Kubernetes' ranking; among Pods that are all Ready, the
    # pod-deletion-cost annotation decides before age does, so the two Pods marked
    # costly are the ones that must stay.
    keep = first[:2]
    for cost, pod in zip(("200", "100"), keep, strict=True):
        kubectl("annotate", "pod", pod["metadata"]["name"], f"controller.kubernetes.io/pod-deletion-cost={cost}")
    assert kubectl("scale", "rc", "web", "--replicas=2").strip() == "replicationcontroller/web scaled"
    remaining = ns.wait_running("app=web", 2)
    assert [p["metadata"]["uid"] for p in remaining] == [p["metadata"]["uid"] for p in keep]
    harness.wait_for(lambda: len(ns.pods("app=web", terminating=True)) == 2, message="the 8 others to be gone")
    gone = sorted(p["metadata"]["name"] for p in pods[:] if p["metadata"]["uid"] not in
                  {k["metadata"]["uid"] for k in keep})
    deleted = ns.events(name="web", reason="SuccessfulDelete")
    assert sorted(e["message"] for e in deleted) == [f"Deleted pod: {n}" for n in gone]
    harness.wait_for(lambda: rc_status(ns, "web").get("replicas") == 2, message="the RC to report 2 replicas")
