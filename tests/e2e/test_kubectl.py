"""kubectl 1.32 commands that need the whole cluster: a scheduler to place Pods and kubelets to run them.

Each test reads what kubectl printed, not only its exit code, and checks it
against the objects in the API. The commands that need only the APIServer
are in ``tests/integration/test_kubectl_cli.py``.
"""

from __future__ import annotations

import re
import time
from typing import Any

import httpx
import pytest

from tests import kube
from tests.kube import NamespaceReader, node_of
from tests.kubectl import Kubectl

pytestmark = [pytest.mark.e2e, pytest.mark.kubectl]

LOG_LINES = ["hello", "from", "myapp01"]


def sized_pod(name: str, *, cpu: str = "250m", memory: str = "128Mi", **spec: Any) -> dict[str, Any]:
    body = kube.pod(name, labels={"app": name}, **spec)
    body["spec"]["containers"][0]["resources"] = {"requests": {"cpu": cpu, "memory": memory}}
    return body


def scripted(body: dict[str, Any], **behaviour: str) -> dict[str, Any]:
    """The Pod with kubelet_sim's behaviour annotations (``run_seconds`` is ``kubesim.io/run-seconds``)."""
    body["metadata"]["annotations"] = {f"kubesim.io/{key.replace('_', '-')}": value
                                       for key, value in behaviour.items()}
    return body


def section(text: str, title: str) -> list[str]:
    """The lines of one ``kubectl describe`` section, up to the next unindented line."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(title))
    body = []
    for line in lines[start + 1:]:
        if line and not line[0].isspace():
            break
        body.append(line)
    return body


def test_describe_pod_shows_where_it_runs_and_its_events(kubectl: Kubectl, ns: NamespaceReader) -> None:
    kubectl.apply(sized_pod("myapp01"))
    [pod] = ns.wait_running("app=myapp01", 1)
    node = node_of(pod)
    ns.wait_reasons("myapp01", "Scheduled", "Created", "Started")
    out = kubectl("describe", "pod", "myapp01")
    fields = dict(re.findall(r"^(\w[\w ]*):\s+(.*)$", out, re.MULTILINE))
    assert fields["Name"] == "myapp01" and fields["Namespace"] == ns.name
    assert fields["Node"] == f"{node}/127.0.0.1"
    assert fields["Status"] == "Running"
    assert fields["IP"] == pod["status"]["podIP"]
    events = [line.split(None, 4) for line in section(out, "Events:")[2:]]
    by_reason = {reason: (kind, source, message) for kind, reason, _age, source, message in events}
    assert by_reason["Scheduled"] == ("Normal", "default-scheduler",
                                      f"Successfully assigned {ns.name}/myapp01 to {node}")
    assert by_reason["Created"] == ("Normal", "kubelet", "Created container: c")
    assert by_reason["Started"] == ("Normal", "kubelet", "Started container c")


def test_describe_node_lists_its_pods_and_allocated_resources(kubectl: Kubectl, admin: Kubectl,
                                                              ns: NamespaceReader) -> None:
    kubectl.apply(sized_pod("myapp01", cpu="380m", memory="1536Mi",
                            nodeSelector={"kubernetes.io/hostname": "node-2"}))
    ns.wait_running("app=myapp01", 1)
    out = admin("describe", "node", "node-2")
    pods = section(out, "Non-terminated Pods:")
    assert pods[0].split() == ["Namespace", "Name", "CPU", "Requests", "CPU", "Limits", "Memory", "Requests",
                               "Memory", "Limits", "Age"]
    [row] = [line.split() for line in pods[2:] if line.split()[:2] == [ns.name, "myapp01"]]
    # 380m of the node's 3800m allocatable CPU, 1536Mi of its 15Gi memory.
    assert row[2:10] == ["380m", "(10%)", "0", "(0%)", "1536Mi", "(10%)", "0", "(0%)"]
    allocated = {line.split()[0]: line.split()[1:] for line in section(out, "Allocated resources:")[3:]}
    assert set(allocated) == {"cpu", "memory", "ephemeral-storage"}
    cpu = re.fullmatch(r"(\d+)m", allocated["cpu"][0])
    assert cpu is not None and int(cpu.group(1)) >= 380


def test_delete_of_a_bound_pod_waits_for_the_kubelet(kubectl: Kubectl, ns: NamespaceReader) -> None:
    kubectl.apply(scripted(sized_pod("myapp01"), shutdown_seconds="1"))
    ns.wait_running("app=myapp01", 1)
    start = time.monotonic()
    assert kubectl("delete", "pod", "myapp01").strip() == 'pod "myapp01" deleted'
    took = time.monotonic() - start
    # kubectl returns once the kubelet has stopped the container (1 s) and made the final delete,
    # well before the 30 s grace period.
    assert 1.0 <= took < 10.0
    assert ns.get("pods", "myapp01") is None


def test_drain_evicts_through_the_eviction_api(kubectl: Kubectl, admin: Kubectl, api: httpx.Client,
                                               ns: NamespaceReader, nodes: tuple[str, ...]) -> None:
    kubectl.apply(kube.rc("web", 3))
    pods = ns.wait_running("app=web", 3)
    node = node_of(pods[0])
    there = sorted(p["metadata"]["name"] for p in pods if node_of(p) == node)
    drained = admin.run("drain", node, "--pod-selector=app=web", "--ignore-daemonsets", "--timeout=60s")
    out = drained.stdout + drained.stderr
    assert f"node/{node} cordoned" in out and f"node/{node} drained" in out
    for name in there:
        assert f"evicting pod {ns.name}/{name}" in out and f"pod/{name} evicted" in out
    assert api.get(f"/api/v1/nodes/{node}").json()["spec"]["unschedulable"] is True
    replaced = ns.wait_running("app=web", 3)
    assert node not in {node_of(p) for p in replaced}
    assert set(there).isdisjoint(p["metadata"]["name"] for p in replaced)


def test_logs_follow_tail_and_timestamps(kubectl: Kubectl, ns: NamespaceReader) -> None:
    kubectl.apply(scripted(sized_pod("myapp01", restartPolicy="Never"), log="\n".join(LOG_LINES),
                           run_seconds="2"))
    ns.wait_running("app=myapp01", 1)
    # -f follows the running container until it exits, 2 seconds after it started.
    lines = ["kubesim: container c started (image nginx:1.25, restart 0)", *LOG_LINES,
             "kubesim: container c exited with code 0"]
    assert kubectl.run("logs", "-f", "myapp01", timeout=30).stdout.splitlines() == lines
    ns.wait(lambda: ns.pod("myapp01")["status"]["phase"] == "Succeeded", "the Pod to succeed")
    assert kubectl("logs", "myapp01").splitlines() == lines
    assert kubectl("logs", "myapp01", "--tail=2").splitlines() == lines[-2:]
    stamped = [line.split(" ", 1) for line in kubectl("logs", "myapp01", "--timestamps").splitlines()]
    assert [text for _, text in stamped] == lines
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z", stamp) for stamp, _ in stamped)


def test_wait_for_ready(kubectl: Kubectl, ns: NamespaceReader) -> None:
    kubectl.apply(sized_pod("myapp01"))
    assert kubectl("wait", "--for=condition=Ready", "pod/myapp01", "--timeout=30s").strip() == \
        "pod/myapp01 condition met"
    assert kube.is_ready(ns.pod("myapp01"))


def test_get_pods_wide_shows_node_and_ip(kubectl: Kubectl, ns: NamespaceReader) -> None:
    kubectl.apply(kube.rc("web", 3))
    pods = ns.wait_running("app=web", 3)
    lines = kubectl("get", "pods", "-o", "wide").splitlines()
    assert lines[0].split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE", "NOMINATED",
                                "NODE", "READINESS", "GATES"]
    rows = [line.split() for line in lines[1:]]
    assert [(r[0], r[1], r[2], r[3], r[5], r[6], r[7], r[8]) for r in rows] == [
        (p["metadata"]["name"], "1/1", "Running", "0", p["status"]["podIP"], node_of(p), "<none>", "<none>")
        for p in pods]


def test_delete_rc_removes_the_rc_then_its_pods(kubectl: Kubectl, ns: NamespaceReader) -> None:
    kubectl.apply(kube.rc("web", 2))
    ns.wait_running("app=web", 2)
    assert kubectl("delete", "rc", "web").strip() == 'replicationcontroller "web" deleted'
    assert ns.get("replicationcontrollers", "web") is None
    ns.wait(lambda: not ns.pods("app=web", terminating=True), "the garbage collector to delete the Pods")


def test_delete_rc_cascade_orphan_leaves_the_pods_without_owner(kubectl: Kubectl,
                                                                ns: NamespaceReader) -> None:
    kubectl.apply(kube.rc("web", 2))
    before = ns.wait_running("app=web", 2)
    assert kubectl("delete", "rc", "web", "--cascade=orphan", "--timeout=10s").strip() == \
        'replicationcontroller "web" deleted'
    assert ns.get("replicationcontrollers", "web") is None
    after = ns.pods("app=web", terminating=True)
    assert [p["metadata"]["uid"] for p in after] == [p["metadata"]["uid"] for p in before]
    assert all("ownerReferences" not in p["metadata"] and kube.is_ready(p) for p in after)
    assert kubectl("get", "pods", "-l", "app=web", "-o", "name").split() == [
        f"pod/{p['metadata']['name']}" for p in before]

