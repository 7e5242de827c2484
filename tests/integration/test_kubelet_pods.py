"""kubelet_sim's Pods through the real APIServer: statuses, Events, admission, restarts, deletion, logs."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests import harness
from tests.integration.test_kubelet_nodes import KubeletSim, start_kubelet_sim
from tests.kube import WatchReader, pod

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def kubelet(cluster: harness.Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeletSim]:
    sim = start_kubelet_sim(cluster, tmp_path_factory.mktemp("kubelet"), nodes=2)
    yield sim
    sim.remove()


def _create(api: httpx.Client, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
    response = api.post(f"/api/v1/namespaces/{namespace}/pods", json=body)
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


def _pod(api: httpx.Client, namespace: str, name: str) -> dict[str, Any]:
    found: dict[str, Any] = api.get(f"/api/v1/namespaces/{namespace}/pods/{name}").json()
    return found


def _events(api: httpx.Client, namespace: str, name: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = api.get(f"/api/v1/namespaces/{namespace}/events", params={
        "fieldSelector": f"involvedObject.name={name}"}).json()["items"]
    return items


def _wait_phase(api: httpx.Client, namespace: str, name: str, phase: str,
                timeout: float = 20) -> dict[str, Any]:
    found = harness.wait_for(lambda: (p := _pod(api, namespace, name))["status"].get("phase") == phase and p,
                             timeout=timeout, message=f"{name} to be {phase}")
    assert isinstance(found, dict)
    return found


def _annotated(name: str, node: str, annotations: dict[str, str], **spec: Any) -> dict[str, Any]:
    body = pod(name, node=node, **spec)
    body["metadata"]["annotations"] = annotations
    return body


def test_a_pod_goes_from_pending_to_running_with_its_events(api: httpx.Client, cluster: harness.Cluster,
                                                            kubelet: KubeletSim, namespace: str) -> None:
    node = kubelet.nodes[0]
    with WatchReader(cluster.url, f"/api/v1/namespaces/{namespace}/pods", {"watch": "true"}) as watch:
        _create(api, namespace, pod("web", node=node, image="example.com/web:1"))
        events = watch.wait_until(
            lambda evs: any(e["object"]["status"].get("phase") == "Running" for e in evs))
    statuses = [e["object"]["status"] for e in events]
    pending = next(s for s in statuses if s.get("containerStatuses"))
    assert pending["phase"] == "Pending"
    assert pending["containerStatuses"][0]["state"] == {"waiting": {"reason": "ContainerCreating"}}
    assert {c["type"]: c["status"] for c in pending["conditions"]} == {
        "PodReadyToStartContainers": "False", "Initialized": "True", "Ready": "False",
        "ContainersReady": "False", "PodScheduled": "True"}
    running = statuses[-1]
    assert {c["type"]: c["status"] for c in running["conditions"]} == {
        "PodReadyToStartContainers": "True", "Initialized": "True", "Ready": "True",
        "ContainersReady": "True", "PodScheduled": "True"}
    assert (running["hostIP"], running["podIP"].startswith("10."), running["startTime"]) == (
        "127.0.0.1", True, pending["startTime"])
    container = running["containerStatuses"][0]
    assert (container["ready"], container["started"], container["restartCount"]) == (True, True, 0)
    assert (container["image"], container["imageID"].startswith("example.com/web@sha256:")) == (
        "example.com/web:1", True)
    assert container["state"]["running"]["startedAt"] and container["containerID"].startswith("containerd://")
    harness.wait_for(lambda: len(_events(api, namespace, "web")) >= 4, message="the kubelet's Events")
    seen = _events(api, namespace, "web")
    assert sorted(e["reason"] for e in seen) == ["Created", "Pulled", "Pulling", "Started"]
    assert next(e for e in seen if e["reason"] == "Pulled")["message"].startswith(
        'Successfully pulled image "example.com/web:1" in ')
    sources = {(e["source"]["component"], e["source"]["host"], e["involvedObject"]["fieldPath"])
               for e in seen}
    assert sources == {("kubelet", node, "spec.containers{c}")}


@pytest.mark.parametrize(("spec", "reason", "message"), [
    pytest.param({"containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "3"}}}]},
                 "OutOfcpu",
                 "Node didn't have enough resource: cpu, requested: 3000, used: 0, capacity: 2000", id="cpu"),
    pytest.param({"nodeSelector": {"disk": "ssd"}}, "NodeAffinity",
                 "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector",
                 id="affinity"),
])
def test_pods_that_do_not_fit_are_rejected(api: httpx.Client, kubelet: KubeletSim, namespace: str,
                                           spec: dict[str, Any], reason: str, message: str) -> None:
    _create(api, namespace, pod("rejected", node=kubelet.nodes[1], **spec))
    failed = _wait_phase(api, namespace, "rejected", "Failed")
    assert (failed["status"]["reason"], failed["status"]["message"]) == (
        reason, f"Pod was rejected: {message}")
    harness.wait_for(lambda: _events(api, namespace, "rejected"), message="the rejection Event")
    (event,) = _events(api, namespace, "rejected")
    assert (event["type"], event["reason"], event["message"]) == ("Warning", reason, message)


def test_host_ports_are_taken_by_the_first_pod(api: httpx.Client, kubelet: KubeletSim,
                                               namespace: str) -> None:
    ports = {"containers": [{"name": "c", "image": "nginx",
                             "ports": [{"containerPort": 80, "hostPort": 9090}]}]}
    _create(api, namespace, pod("first", node=kubelet.nodes[1], **ports))
    _wait_phase(api, namespace, "first", "Running")
    _create(api, namespace, pod("second", node=kubelet.nodes[1], **ports))
    assert _wait_phase(api, namespace, "second", "Failed")["status"]["reason"] == "NodePorts"


@pytest.mark.parametrize(("policy", "exit_code", "phase"), [
    pytest.param("Never", 3, "Failed", id="never"),
    pytest.param("OnFailure", 0, "Succeeded", id="onfailure"),
])
def test_containers_that_exit_for_good(api: httpx.Client, kubelet: KubeletSim, namespace: str, policy: str,
                                       exit_code: int, phase: str) -> None:
    _create(api, namespace, _annotated("job", kubelet.nodes[0], {"kubesim.io/run-seconds": "0.5",
                                                                 "kubesim.io/exit-code": str(exit_code)},
                                       restartPolicy=policy))
    done = _wait_phase(api, namespace, "job", phase)
    terminated = done["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (
        exit_code, "Error" if exit_code else "Completed")
    assert done["status"]["containerStatuses"][0]["restartCount"] == 0


def test_a_crashing_container_restarts_then_backs_off(api: httpx.Client, kubelet: KubeletSim,
                                                      namespace: str) -> None:
    _create(api, namespace, _annotated("crash", kubelet.nodes[0], {"kubesim.io/run-seconds": "0.5",
                                                                   "kubesim.io/exit-code": "1"}))

    def crash_looping() -> dict[str, Any] | None:
        status = _pod(api, namespace, "crash")["status"]
        container = (status.get("containerStatuses") or [{}])[0]
        waiting = container.get("state", {}).get("waiting", {})
        return container if waiting.get("reason") == "CrashLoopBackOff" else None

    container = harness.wait_for(crash_looping, timeout=20, message="CrashLoopBackOff")
    assert isinstance(container, dict)
    assert container["restartCount"] == 1
    assert container["state"]["waiting"]["message"].startswith(
        "back-off 10s restarting failed container=c pod=crash_")
    assert container["lastState"]["terminated"]["exitCode"] == 1
    assert _pod(api, namespace, "crash")["status"]["phase"] == "Running"
    harness.wait_for(lambda: any(e["reason"] == "BackOff" for e in _events(api, namespace, "crash")),
                     message="the BackOff Event")


def test_init_containers_run_first(api: httpx.Client, kubelet: KubeletSim, namespace: str) -> None:
    body = _annotated("init", kubelet.nodes[1], {"kubesim.io/run-seconds.setup": "0.3"},
                      initContainers=[{"name": "setup", "image": "busybox"},
                                      {"name": "migrate", "image": "busybox"}])
    _create(api, namespace, body)
    running = _wait_phase(api, namespace, "init", "Running")
    init = running["status"]["initContainerStatuses"]
    assert [(s["name"], s["state"]["terminated"]["reason"]) for s in init] == [
        ("setup", "Completed"), ("migrate", "Completed")]
    starts = {e["involvedObject"]["fieldPath"]: e["firstTimestamp"] for e in _events(api, namespace, "init")
              if e["reason"] == "Started"}
    assert starts["spec.initContainers{setup}"] <= starts["spec.initContainers{migrate}"] <= \
        starts["spec.containers{c}"]


def test_deletion_stops_the_containers_and_removes_the_pod(api: httpx.Client, cluster: harness.Cluster,
                                                           kubelet: KubeletSim, namespace: str) -> None:
    _create(api, namespace, _annotated("doomed", kubelet.nodes[0], {"kubesim.io/shutdown-seconds": "1"}))
    _wait_phase(api, namespace, "doomed", "Running")
    with WatchReader(cluster.url, f"/api/v1/namespaces/{namespace}/pods",
                     {"watch": "true", "fieldSelector": "metadata.name=doomed"}) as watch:
        started = time.monotonic()
        assert api.delete(f"/api/v1/namespaces/{namespace}/pods/doomed").status_code == 200
        events = watch.wait_until(lambda evs: any(e["type"] == "DELETED" for e in evs), timeout=15)
    assert events[-1]["type"] == "DELETED"
    assert time.monotonic() - started >= 1.0
    final = [e["object"]["status"] for e in events if e["object"]["status"].get("phase") == "Succeeded"]
    assert final and final[0]["containerStatuses"][0]["state"]["terminated"]["reason"] == "Completed"
    assert any(e["reason"] == "Killing" and e["message"] == "Stopping container c"
               for e in _events(api, namespace, "doomed"))


def test_logs_through_the_apiserver(api: httpx.Client, cluster: harness.Cluster, kubelet: KubeletSim,
                                    namespace: str) -> None:
    _create(api, namespace, _annotated("talker", kubelet.nodes[1], {"kubesim.io/log": "hello\nworld"}))
    _wait_phase(api, namespace, "talker", "Running")
    path = f"/api/v1/namespaces/{namespace}/pods/talker/log"
    assert api.get(path).text.splitlines() == [
        "kubesim: container c started (image nginx:1.25, restart 0)", "hello", "world"]
    assert api.get(path, params={"tailLines": "1", "timestamps": "true"}).text.endswith("Z world\n")
    previous = api.get(path, params={"previous": "true"})
    assert previous.status_code == 400
    assert 'previous terminated container "c" in pod "talker" not found' in previous.json()["message"]


@pytest.mark.kubectl
def test_kubectl_logs(api: httpx.Client, cluster: harness.Cluster, kubelet: KubeletSim,
                      namespace: str) -> None:
    _create(api, namespace, _annotated("chatty", kubelet.nodes[0], {"kubesim.io/log": "one\ntwo\nthree"}))
    _wait_phase(api, namespace, "chatty", "Running")
    kubectl = shutil.which("kubectl")
    assert kubectl is not None
    out = subprocess.run([kubectl, "--kubeconfig", str(cluster.kubeconfig()), "-n", namespace, "logs", "chatty",
                          "--tail=2"],
                         check=False, capture_output=True, text=True, timeout=60)
    assert (out.returncode, out.stdout.splitlines()) == (0, ["two", "three"]), out.stderr


def test_following_logs_streams_until_the_container_exits(api: httpx.Client, cluster: harness.Cluster,
                                                          kubelet: KubeletSim, namespace: str) -> None:
    _create(api, namespace, _annotated("short", kubelet.nodes[0], {
        "kubesim.io/run-seconds": "1.5", "kubesim.io/ready-after-seconds": "0.5"}, restartPolicy="Never"))
    _wait_phase(api, namespace, "short", "Running")
    with harness.admin_client(cluster.url, timeout=httpx.Timeout(10, read=20)) as client, \
            client.stream("GET", f"/api/v1/namespaces/{namespace}/pods/short/log",
                          params={"follow": "true"}) as response:
        lines = list(response.iter_lines())
    assert lines[0] == "kubesim: container c started (image nginx:1.25, restart 0)"
    assert lines[-1] == "kubesim: container c exited with code 0"
