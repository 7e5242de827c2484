"""The real kubectl (1.27, 1.30, 1.33) against a real APIServer: version, api-resources, explain, get.

These are the requests kubectl makes before and around any CRUD: /version,
aggregated discovery (v2beta1 for 1.27, v2 later), the OpenAPI v2 (1.27's
apply, and every version's ``explain --output=plaintext-openapiv2``) and v3
documents, and server-side Tables. Each kubectl gets its own discovery
cache directory, so no run reads what another version cached.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from tests import harness

pytestmark = [pytest.mark.integration, pytest.mark.kubectl]

KUBECTL_DIR = Path("/usr/lib/google-cloud-sdk/bin")
VERSIONS = ["1.27", "1.30", "1.33"]


@pytest.fixture(params=VERSIONS, ids=[f"kubectl-{v}" for v in VERSIONS])
def kubectl(request: pytest.FixtureRequest, cluster: harness.Cluster, tmp_path: Path) -> Callable[..., str]:
    binary = KUBECTL_DIR / f"kubectl.{request.param}"
    if not binary.exists():
        pytest.skip(f"{binary} is not installed")

    def run(*args: str) -> str:
        cmd = [str(binary), "--kubeconfig", str(cluster.kubeconfig()), "--cache-dir", str(tmp_path / "cache"), *args]
        done = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=60,
                              env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"})
        assert done.returncode == 0, f"{' '.join(cmd)} failed:\n{done.stdout}\n{done.stderr}"
        return done.stdout

    return run


def test_version(kubectl: Callable[..., str]) -> None:
    out = kubectl("version")
    assert "Server Version: v1.32.0+kubesim" in out or 'GitVersion:"v1.32.0+kubesim"' in out


def test_api_resources(kubectl: Callable[..., str]) -> None:
    lines = kubectl("api-resources").splitlines()
    assert lines[0].split() == ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"]
    rows = {line.split()[0]: line.split() for line in lines[1:]}
    assert rows["pods"] == ["pods", "po", "v1", "true", "Pod"]
    assert rows["nodes"] == ["nodes", "no", "v1", "false", "Node"]
    assert rows["replicationcontrollers"] == ["replicationcontrollers", "rc", "v1", "true", "ReplicationController"]
    assert rows["leases"] == ["leases", "coordination.k8s.io/v1", "true", "Lease"]
    assert {"namespaces", "events", "bindings"} <= set(rows)


def test_explain_follows_the_openapi_documents(kubectl: Callable[..., str]) -> None:
    out = kubectl("explain", "pod.spec.affinity")
    assert "KIND:       Pod" in out and "FIELD: affinity <Affinity>" in out
    for field in ("nodeAffinity", "podAffinity", "podAntiAffinity"):
        assert field in out
    recursive = kubectl("explain", "rc.spec", "--recursive")
    assert "replicas\t<integer>" in recursive and "containers\t<[]Container> -required-" in recursive


def test_explain_reads_openapi_v2_when_asked(kubectl: Callable[..., str]) -> None:
    out = kubectl("explain", "pod.spec.affinity", "--output=plaintext-openapiv2")
    assert "KIND:     Pod" in out and "RESOURCE: affinity <Object>" in out
    assert "nodeAffinity\t<Object>" in out and "Describes node affinity scheduling rules for the pod." in out
    ports = kubectl("explain", "deployment.spec.template.spec.containers.ports", "--output=plaintext-openapiv2")
    assert "containerPort\t<integer> -required-" in ports


def test_apply_updates_a_builtin_kind_with_a_patch_from_openapi_v2(kubectl: Callable[..., str], api: httpx.Client,
                                                                   namespace: str, tmp_path: Path) -> None:
    """kubectl 1.27 computes apply's strategic merge patch from /openapi/v2 (later ones from v3).

    With the empty v2 document served before, 1.27 fell back to its compiled-in types; this keeps
    the published merge keys honest now that it reads them.
    """
    manifest = """apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: NS}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: a, image: nginx, env: [{name: A1, value: "1"}, {name: A2, value: "1"}]}
      - {name: b, image: busybox}
""".replace("NS", namespace)
    first, second = tmp_path / "first.yaml", tmp_path / "second.yaml"
    first.write_text(manifest)
    second.write_text(manifest.replace('{name: A2, value: "1"}', '{name: A2, value: "2"}').replace(
        "image: busybox", "image: busybox:2"))
    assert "created" in kubectl("apply", "-f", str(first))
    assert "configured" in kubectl("apply", "-f", str(second))
    containers = api.get(f"/apis/apps/v1/namespaces/{namespace}/deployments/web").json()[
        "spec"]["template"]["spec"]["containers"]
    # Lists merged by their keys (name), as the definitions' x-kubernetes-patch-merge-key says.
    assert [(c["name"], c["image"], c.get("env")) for c in containers] == [
        ("a", "nginx", [{"name": "A1", "value": "1"}, {"name": "A2", "value": "2"}]), ("b", "busybox:2", None)]


def test_get_prints_server_side_columns(kubectl: Callable[..., str], api: httpx.Client, namespace: str) -> None:
    r = api.post(f"/api/v1/namespaces/{namespace}/pods", json={
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]}})
    assert r.status_code == 201, r.text
    lines = kubectl("get", "pods", "-n", namespace).splitlines()
    assert lines[0].split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert lines[1].split()[:4] == ["web", "0/1", "Pending", "0"]
    wide = kubectl("get", "pods", "-n", namespace, "-o", "wide").splitlines()[0]
    assert wide.split()[5:] == ["IP", "NODE", "NOMINATED", "NODE", "READINESS", "GATES"]
