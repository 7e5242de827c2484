"""The 13 steps of the flow on the whole cluster, scaling an RC, and a node that fails.

What the seed describes is checked where a user would look: the order of the
resourceVersions a watch reports (the RC is stored before its Pods, each Pod
is created, then bound, then Running, each at a later revision), the Events
each component writes, the components' ``[step N]`` log lines, and
``kubesim trace``.
"""

from __future__ import annotations

import functools
import ipaddress
import json
import os
import re
import subprocess
import sys
from typing import Any

import httpx
import pytest

from tests import harness
from tests.kube import NamespaceReader, node_of
from tests.kubectl import Kubectl

pytestmark = pytest.mark.e2e

UNREACHABLE = "node.kubernetes.io/unreachable"
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
    """The ``kubesim`` command against the cluster, as a user runs it (with the admin's kubeconfig)."""
    return subprocess.run([sys.executable, "-m", "kubesim", *args, "--server", cluster.url],
                          capture_output=True, text=True, timeout=60, check=False,
                          env={**os.environ, "KUBECONFIG": str(cluster.kubeconfig())})


def logged(cluster: harness.Cluster, component: str, step: int, text: str) -> str:
    """The component's ``[step N] ...`` log line containing ``text``, once it has been written."""
    proc = next(p for p in cluster.components if p.name == component)
    tag = f"[step {step}] "

    def find() -> str | None:
        lines = proc.log_path.read_text(errors="replace").splitlines()
        return next((line for line in lines if tag in line and text in line), None)
    return str(harness.wait_for(find, message=f"{component} to log {tag}{text}"))


def replay(api: httpx.Client, namespace: str, since: str) -> list[dict[str, Any]]:
    """Every change to the namespace's Pods after revision ``since``, as a watch from there reports them.

    The server ends the watch after a second; by then it has replayed what
    already happened, which is all the callers ask for.
    """
    r = api.get(f"/api/v1/namespaces/{namespace}/pods",
                params={"watch": "true", "resourceVersion": since, "timeoutSeconds": "1"})
    r.raise_for_status()
    return [json.loads(line) for line in r.text.splitlines() if line.strip()]


def revisions(events: list[dict[str, Any]], name: str) -> tuple[int, int, int]:
    """The revisions at which the watch saw the Pod created, bound to a node, and Running."""
    mine = [(ev["type"], int(ev["object"]["metadata"]["resourceVersion"]), ev["object"]) for ev in events
            if ev["object"]["metadata"]["name"] == name]
    created = next(rv for kind, rv, _ in mine if kind == "ADDED")
    bound = next(rv for _, rv, pod in mine if node_of(pod))
    running = next(rv for _, rv, pod in mine if pod["status"].get("phase") == "Running")
    return created, bound, running


def test_thirteen_steps_of_an_rc_with_three_replicas(cluster: harness.Cluster, api: httpx.Client,
                                                     kubectl: Kubectl, ns: NamespaceReader) -> None:
    start_rv = api.get(f"/api/v1/namespaces/{ns.name}/pods").json()["metadata"]["resourceVersion"]
    # Steps 2 and 3: kubectl submits the RC; the APIServer stores it and answers with its revision.
    rc = json.loads(kubectl("create", "-f", "-", "-o", "json", input=json.dumps(web_rc(3))))
    rc_rv = int(rc["metadata"]["resourceVersion"])
    pods = ns.wait_running("app=web", 3)
    events = replay(api, ns.name, start_rv)
    # Step 1 came first: every component listed, then watched.
    for component in ("controller-manager", "scheduler", "kubelet"):
        logged(cluster, component, 1, "pods: listed")

    # Steps 4 to 6: the controller saw the RC through its watch and created the Pods.
    logged(cluster, "controller-manager", 5, f"saw ReplicationController {ns.name}/web (replicas 3)")
    created = [f"Created pod: {p['metadata']['name']}" for p in pods]
    ns.wait(lambda: sorted(e["message"] for e in ns.events(name="web", reason="SuccessfulCreate")) == created,
            "a SuccessfulCreate Event for each Pod")
    assert {e["source"]["component"] for e in ns.events(name="web")} == {"replication-controller"}
    for pod in pods:
        name, node = pod["metadata"]["name"], node_of(pod)
        assert re.fullmatch(r"web-[a-z0-9]{5}", name)
        assert pod["metadata"]["ownerReferences"] == [{
            "apiVersion": "v1", "kind": "ReplicationController", "name": "web", "uid": rc["metadata"]["uid"],
            "controller": True, "blockOwnerDeletion": True}]
        logged(cluster, "controller-manager", 6, f"created Pod {ns.name}/{name} for ReplicationController "
                                                 f"{ns.name}/web")
        # Steps 7 and 8: stored unbound, then seen by the scheduler.
        added = next(ev["object"] for ev in events
                     if ev["type"] == "ADDED" and ev["object"]["metadata"]["name"] == name)
        assert not node_of(added) and added["status"]["phase"] == "Pending"

        # The revisions give the order: RC stored < Pod created < Pod bound < Pod Running.
        created_rv, bound_rv, running_rv = revisions(events, name)
        assert rc_rv < created_rv < bound_rv < running_rv

        # Steps 9 and 10: the scheduler picked the node and bound the Pod through pods/binding.
        scheduled = ns.wait_event(name, "Scheduled")
        assert scheduled["message"] == f"Successfully assigned {ns.name}/{name} to {node}"
        assert scheduled["source"]["component"] == "default-scheduler"
        logged(cluster, "scheduler", 9, f"{ns.name}/{name}: 3 nodes, 3 evaluated, 3 feasible; picked {node}")
        logged(cluster, "scheduler", 10, f"bound {ns.name}/{name} to {node} (rv {bound_rv})")

        # Steps 11 to 13: the kubelet saw the binding, ran the container, and its status was stored.
        logged(cluster, "kubelet", 11, f"{ns.name}/{name} bound to {node}")
        logged(cluster, "kubelet", 12, f"started the containers of {ns.name}/{name} on {node}: nginx")
        logged(cluster, "kubelet", 13, f"status of {ns.name}/{name} persisted: Running (rv {running_rv})")
        kubelet_events = [e for e in ns.wait_reasons(name, *KUBELET_EVENTS)
                          if e["source"]["component"] == "kubelet"]
        assert [e["reason"] for e in kubelet_events] == KUBELET_EVENTS
        assert {e["source"]["host"] for e in kubelet_events} == {node}
        assert kubelet_events[-1]["message"] == "Started container nginx"
        status = pod["status"]
        pod_cidr = ipaddress.ip_network(api.get(f"/api/v1/nodes/{node}").json()["spec"]["podCIDR"])
        assert ipaddress.ip_address(status["podIP"]) in pod_cidr
        assert status["podIPs"] == [{"ip": status["podIP"]}] and status["hostIP"] == "127.0.0.1"
        assert status["startTime"]
        [container] = status["containerStatuses"]
        assert container["ready"] is True and "running" in container["state"]

    # kubesim trace rebuilds all 13 steps of one Pod, at the same revisions.
    name, node = pods[0]["metadata"]["name"], node_of(pods[0])
    traced = kubesim(cluster, "trace", f"{ns.name}/{name}", "--json")
    assert traced.returncode == 0, traced.stderr
    steps = json.loads(traced.stdout)["steps"]
    assert [s["step"] for s in steps] == [1, 1, 1, *range(2, 14)]
    assert all(s["done"] for s in steps), steps
    by_step = {s["step"]: s["resource_version"] for s in steps}
    created_rv, bound_rv, running_rv = revisions(events, name)
    assert (by_step[2], by_step[7], by_step[10], by_step[13]) == (
        str(rc_rv), str(created_rv), str(bound_rv), str(running_rv))
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
        kubectl("annotate", "pod", pod["metadata"]["name"],
                f"controller.kubernetes.io/pod-deletion-cost={cost}")
    assert kubectl("scale", "rc", "web", "--replicas=2").strip() == "replicationcontroller/web scaled"
    remaining = ns.wait_running("app=web", 2)
    assert [p["metadata"]["uid"] for p in remaining] == [p["metadata"]["uid"] for p in keep]
    harness.wait_for(lambda: len(ns.pods("app=web", terminating=True)) == 2,
                     message="the 8 others to be gone")
    kept = {p["metadata"]["uid"] for p in keep}
    gone = sorted(f"Deleted pod: {p['metadata']['name']}" for p in pods if p["metadata"]["uid"] not in kept)

    def deletions() -> list[str]:
        return sorted(e["message"] for e in ns.events(name="web", reason="SuccessfulDelete"))
    ns.wait(lambda: deletions() == gone, "a SuccessfulDelete Event for each of the 8 Pods")
    harness.wait_for(lambda: rc_status(ns, "web").get("replicas") == 2, message="the RC to report 2 replicas")


def node_taints(api: httpx.Client, name: str) -> set[tuple[str, str]]:
    taints = api.get(f"/api/v1/nodes/{name}").json()["spec"].get("taints") or ()
    return {(t["key"], t["effect"]) for t in taints}


def marked_for_deletion(ns: NamespaceReader, name: str) -> dict[str, Any] | None:
    pod = ns.pod(name)
    return pod if pod["metadata"].get("deletionTimestamp") else None


def unknown_ready(api: httpx.Client, name: str) -> dict[str, Any] | None:
    """The node's Ready condition once it is Unknown."""
    conditions = api.get(f"/api/v1/nodes/{name}").json()["status"]["conditions"]
    return next((c for c in conditions if c["type"] == "Ready" and c["status"] == "Unknown"), None)


def test_stopped_node_is_unreachable_and_its_pods_are_replaced(cluster: harness.Cluster, api: httpx.Client,
                                                               kubectl: Kubectl, ns: NamespaceReader,
                                                               nodes: tuple[str, ...]) -> None:
    kubectl.apply(web_rc(3))
    pods = ns.wait_running("app=web", 3)
    victim = node_of(pods[0])
    lost = [p for p in pods if node_of(p) == victim]
    assert {(t["key"], t.get("tolerationSeconds")) for t in pods[0]["spec"]["tolerations"]} == {
        (UNREACHABLE, 3), ("node.kubernetes.io/not-ready", 3)}
    stopped = kubesim(cluster, "node", "stop", victim)
    try:
        assert (stopped.returncode, stopped.stdout.strip()) == (0, f"node/{victim} stopped"), stopped.stderr

        # The node lifecycle controller hears nothing for the grace period: Ready goes Unknown,
        # the node is tainted unreachable, and the Pods there are evicted once their toleration ends.
        ready = harness.wait_for(lambda: unknown_ready(api, victim), timeout=20,
                                 message=f"{victim} to be Unknown")
        assert isinstance(ready, dict)
        assert (ready["reason"], ready["message"]) == ("NodeStatusUnknown",
                                                       "Kubelet stopped posting node status.")
        unreachable = {(UNREACHABLE, "NoSchedule"), (UNREACHABLE, "NoExecute")}
        harness.wait_for(lambda: unreachable <= node_taints(api, victim),
                         message=f"{victim} to be tainted unreachable")
        harness.wait_for(lambda: api.get("/api/v1/namespaces/default/events", params={
            "fieldSelector": f"involvedObject.name={victim},reason=NodeNotReady"}).json()["items"],
            message=f"a NodeNotReady Event about {victim}")
        for pod in lost:
            name = pod["metadata"]["name"]
            event = ns.wait_event(name, "TaintManagerEviction")
            assert event["message"] == f"Marking for deletion Pod {ns.name}/{name}"
            evicted = ns.wait(functools.partial(marked_for_deletion, ns, name),
                              f"Pod {name} to be marked for deletion")
            assert any(c["type"] == "DisruptionTarget" and c["reason"] == "DeletionByTaintManager"
                       for c in evicted["status"]["conditions"])

        # The RC replaces them on the nodes that still answer.
        replaced = ns.wait_running("app=web", 3)
        assert victim not in {node_of(p) for p in replaced}
        assert {p["metadata"]["name"] for p in lost}.isdisjoint(p["metadata"]["name"] for p in replaced)
    finally:
        started = kubesim(cluster, "node", "start", victim)
        assert (started.returncode, started.stdout.strip()) == (0, f"node/{victim} started"), started.stderr
    # Back in touch, the kubelet finishes the deletions the API asked for while it was away.
    harness.wait_for(lambda: not node_taints(api, victim), timeout=20, message=f"{victim} to lose its taints")
    for pod in lost:
        ns.wait_gone(pod["metadata"]["name"])
