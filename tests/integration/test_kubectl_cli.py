"""kubectl's everyday commands against kubesim's APIServer, checking what kubectl prints.

Only the APIServer runs here; the commands that need a scheduler or kubelets
(logs, drain, wait for Ready, describe with a Pod's events) are in the
end-to-end tests.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
import yaml

from tests import harness
from tests.kubectl import ALL_VERSIONS, Kubectl, binary

pytestmark = [pytest.mark.integration, pytest.mark.kubectl]

RC = """
apiVersion: v1
kind: ReplicationController
metadata:
  name: web
spec:
  replicas: {replicas}
  selector:
    app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: nginx
        image: nginx:1.25
{env}        resources:
          requests:
            cpu: 100m
            memory: 64Mi
"""


@pytest.fixture
def kubectl(cluster: harness.Cluster, namespace: str, tmp_path: Path) -> Kubectl:
    return Kubectl(binary("1.32"), cluster.url, tmp_path, namespace)


@pytest.fixture(params=ALL_VERSIONS, ids=[f"kubectl-{v}" for v in ALL_VERSIONS])
def any_kubectl(request: pytest.FixtureRequest, cluster: harness.Cluster, namespace: str,
                tmp_path: Path) -> Kubectl:
    return Kubectl(binary(request.param), cluster.url, tmp_path, namespace)


def test_core_commands_on_every_version(any_kubectl: Kubectl) -> None:
    k = any_kubectl
    assert "pod/one created" in k("run", "one", "--image=nginx", "--labels=app=one")
    out = k("get", "pods")
    assert out.split("\n")[0].split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert out.split("\n")[1].split()[:3] == ["one", "0/1", "Pending"]
    assert "replicationcontroller/web created" in k("apply", "-f", "-", input=RC.format(replicas=2, env=""))
    assert "replicationcontroller/web unchanged" in k("apply", "-f", "-", input=RC.format(replicas=2, env=""))
    assert "pod/one labeled" in k("label", "pod", "one", "tier=fe")
    assert k("get", "pods", "-l", "tier=fe", "-o", "name").split() == ["pod/one"]
    assert 'pod "one" deleted' in k("delete", "pod", "one")


def test_get_output_formats(kubectl: Kubectl, namespace: str) -> None:
    kubectl("run", "a", "--image=nginx", "--labels=app=a,tier=fe")
    kubectl("run", "b", "--image=busybox", "--labels=app=b")
    wide = kubectl("get", "pods", "-o", "wide").splitlines()
    assert wide[0].split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE", "NOMINATED", "NODE",
                               "READINESS", "GATES"]
    assert [line.split()[0] for line in wide[1:]] == ["a", "b"]
    as_json = json.loads(kubectl("get", "pod", "a", "-o", "json"))
    assert as_json["kind"] == "Pod" and as_json["metadata"]["labels"] == {"app": "a", "tier": "fe"}
    as_yaml = yaml.safe_load(kubectl("get", "pods", "-o", "yaml"))
    assert as_yaml["kind"] == "List" and len(as_yaml["items"]) == 2
    labels = kubectl("get", "pods", "--show-labels").splitlines()
    assert labels[0].split()[-1] == "LABELS" and labels[1].split()[-1] == "app=a,tier=fe"
    assert kubectl("get", "pods", "-l", "app=b", "-o", "name").split() == ["pod/b"]
    assert kubectl("get", "pods", "--field-selector", "metadata.name=a", "-o", "name").split() == ["pod/a"]
    sorted_out = kubectl("get", "pods", "--sort-by=.spec.containers[0].image", "-o", "name").split()
    assert sorted_out == ["pod/b", "pod/a"]
    everywhere = kubectl("get", "pods", "-A").splitlines()
    assert everywhere[0].split()[0] == "NAMESPACE"
    assert any(line.split()[:2] == [namespace, "a"] for line in everywhere[1:])
    err = kubectl.run("get", "pod", "nope", check=False)
    assert err.returncode == 1
    assert 'Error from server (NotFound): pods "nope" not found' in err.stderr


def test_get_watch_prints_changes(kubectl: Kubectl, cluster: harness.Cluster, namespace: str) -> None:
    import subprocess
    import time
    cmd = [str(kubectl.path), *kubectl.connection(), "--cache-dir", str(kubectl.home / "cache"), "-n", namespace,
           "get", "pods", "-w", "--request-timeout=20s"]
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          env={"HOME": str(kubectl.home), "PATH": "/usr/bin:/bin"}) as watcher:
        try:
            time.sleep(1.0)
            kubectl("run", "watched", "--image=nginx")
            kubectl("label", "pod", "watched", "seen=yes")
            kubectl("delete", "pod", "watched")
            time.sleep(1.0)
        finally:
            watcher.terminate()
        out, _ = watcher.communicate(timeout=10)
    rows = [line.split() for line in out.splitlines()]
    assert rows[0] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert [r[0] for r in rows[1:]].count("watched") >= 2


def test_create_errors_read_as_kubernetes_errors(kubectl: Kubectl) -> None:
    bad = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bad"}, "spec": {"containers": []}}
    err = kubectl.run("create", "-f", "-", input=json.dumps(bad), check=False)
    assert err.returncode == 1
    assert 'The Pod "bad" is invalid: spec.containers: Required value' in err.stderr
    kubectl("run", "dup", "--image=nginx")
    err = kubectl.run("run", "dup", "--image=nginx", check=False)
    assert 'Error from server (AlreadyExists): pods "dup" already exists' in err.stderr
    typo = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "typo"},
            "spec": {"containers": [{"name": "c", "image": "x", "imagee": "y"}]}}
    err = kubectl.run("create", "-f", "-", input=json.dumps(typo), check=False)
    assert err.returncode == 1
    assert 'unknown field "spec.containers[0].imagee"' in err.stderr


def test_apply_three_times_keeps_what_others_set(kubectl: Kubectl, api: httpx.Client, namespace: str) -> None:
    assert "created" in kubectl("apply", "-f", "-", input=RC.format(replicas=3, env=""))
    # Another client sets a field that the applied file does not mention.
    api.patch(f"/api/v1/namespaces/{namespace}/replicationcontrollers/web",
              content=b'{"spec":{"template":{"spec":{"containers":[{"name":"nginx","workingDir":"/srv"}]}}}}',
              headers={"Content-Type": "application/strategic-merge-patch+json"})
    env = "        env:\n        - name: MODE\n          value: fast\n"
    assert "replicationcontroller/web configured" in kubectl("apply", "-f", "-", input=RC.format(replicas=3, env=env))
    rc = api.get(f"/api/v1/namespaces/{namespace}/replicationcontrollers/web").json()
    container = rc["spec"]["template"]["spec"]["containers"][0]
    assert container["env"] == [{"name": "MODE", "value": "fast"}]
    assert container["resources"]["requests"] == {"cpu": "100m", "memory": "64Mi"}
    assert container["workingDir"] == "/srv"
    assert "replicationcontroller/web unchanged" in kubectl("apply", "-f", "-",
                                                             input=RC.format(replicas=3, env=env))


def test_server_side_apply_and_conflict(kubectl: Kubectl) -> None:
    assert "serverside-applied" in kubectl("apply", "--server-side", "-f", "-", input=RC.format(replicas=2, env=""))
    err = kubectl.run("apply", "--server-side", "--field-manager=other", "-f", "-",
                      input=RC.format(replicas=5, env=""), check=False)
    assert err.returncode == 1
    assert 'conflict with "kubectl"' in err.stderr and ".spec.replicas" in err.stderr
    kubectl("apply", "--server-side", "--field-manager=other", "--force-conflicts", "-f", "-",
            input=RC.format(replicas=5, env=""))
    assert kubectl("get", "rc", "web", "-o", "jsonpath={.spec.replicas}") == "5"
    managers = json.loads(kubectl("get", "rc", "web", "-o", "json", "--show-managed-fields"))["metadata"]["managedFields"]
    assert {m["manager"] for m in managers} >= {"other"}


def test_scale_taint_label_annotate_cordon(kubectl: Kubectl, api: httpx.Client) -> None:
    kubectl("apply", "-f", "-", input=RC.format(replicas=1, env=""))
    assert "replicationcontroller/web scaled" in kubectl("scale", "rc", "web", "--replicas=4")
    rows = kubectl("get", "rc", "web").splitlines()
    assert rows[0].split() == ["NAME", "DESIRED", "CURRENT", "READY", "AGE"]
    assert rows[1].split()[:2] == ["web", "4"]
    node = f"cli-node-{kubectl.namespace}"
    api.post("/api/v1/nodes", json={"metadata": {"name": node, "labels": {"kubernetes.io/hostname": node}}})
    try:
        assert f"node/{node} tainted" in kubectl("taint", "nodes", node, "dedicated=gpu:NoSchedule")
        taints = json.loads(kubectl("get", "node", node, "-o", "json"))["spec"]["taints"]
        assert taints == [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]
        assert "Taints:             dedicated=gpu:NoSchedule" in kubectl("describe", "node", node)
        assert f"node/{node} untainted" in kubectl("taint", "nodes", node, "dedicated=gpu:NoSchedule-")
        assert "taints" not in json.loads(kubectl("get", "node", node, "-o", "json"))["spec"]
        assert f"node/{node} cordoned" in kubectl("cordon", node)
        assert "SchedulingDisabled" in kubectl("get", "node", node)
        assert f"node/{node} uncordoned" in kubectl("uncordon", node)
        assert f"node/{node} labeled" in kubectl("label", "node", node, "disk=ssd")
        assert f"node/{node} annotated" in kubectl("annotate", "node", node, "note=hello")
        got = api.get(f"/api/v1/nodes/{node}").json()["metadata"]
        assert got["labels"]["disk"] == "ssd" and got["annotations"]["note"] == "hello"
    finally:
        api.delete(f"/api/v1/nodes/{node}")


def test_edit_with_kube_editor(kubectl: Kubectl, tmp_path: Path) -> None:
    kubectl("run", "edited", "--image=nginx", "--labels=stage=one")
    editor = tmp_path / "editor.sh"
    editor.write_text("#!/bin/sh\nsed -i 's/stage: one/stage: two/' \"$1\"\n")
    editor.chmod(0o755)
    out = kubectl.run("edit", "pod", "edited", env={"KUBE_EDITOR": str(editor)})
    assert "pod/edited edited" in out.stdout
    assert kubectl("get", "pod", "edited", "-o", "jsonpath={.metadata.labels.stage}") == "two"


def test_create_namespace_sends_protobuf_and_works(kubectl: Kubectl, api: httpx.Client) -> None:
    name = f"{kubectl.namespace}-made"
    assert f"namespace/{name} created" in kubectl("create", "namespace", name)
    ns = api.get(f"/api/v1/namespaces/{name}").json()
    assert ns["status"]["phase"] == "Active" and ns["spec"]["finalizers"] == ["kubernetes"]
    assert "generateName" not in ns["metadata"]
    api.delete(f"/api/v1/namespaces/{name}")


def test_delete_unbound_pod_returns_at_once(kubectl: Kubectl) -> None:
    kubectl("run", "short", "--image=nginx")
    assert 'pod "short" deleted' in kubectl("delete", "pod", "short", "--timeout=20s")
    err = kubectl.run("get", "pod", "short", check=False)
    assert "NotFound" in err.stderr


def test_events_and_namespaces_tables(kubectl: Kubectl, api: httpx.Client, namespace: str) -> None:
    api.post(f"/api/v1/namespaces/{namespace}/events", json={
        "metadata": {"name": "ev1"}, "involvedObject": {"kind": "Pod", "name": "x", "namespace": namespace},
        "reason": "Tested", "message": "hello from the test", "type": "Normal", "count": 1,
        "source": {"component": "pytest"}})
    rows = kubectl("get", "events").splitlines()
    assert rows[0].split() == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert "Tested" in rows[1] and "pod/x" in rows[1] and "hello from the test" in rows[1]
    ns_rows = kubectl("get", "namespaces").splitlines()
    assert ns_rows[0].split() == ["NAME", "STATUS", "AGE"]
    assert any(r.split()[:2] == [namespace, "Active"] for r in ns_rows)
