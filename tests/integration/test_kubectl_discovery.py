"""The real kubectl (1.27, 1.30, 1.33) against a real APIServer: version, api-resources, explain, get.

These are the requests kubectl makes before and around any CRUD: /version,
aggregated discovery (v2beta1 for 1.27, v2 later), the OpenAPI v2 (1.27) and
v3 documents, and server-side Tables. Each kubectl gets its own discovery
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
        cmd = [str(binary), "--server", cluster.url, "--cache-dir", str(tmp_path / "cache"), *args]
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
