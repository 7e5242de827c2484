"""kubesim snapshot save and load between two whole clusters: the round trip, and kinds the target lacks.

Cluster A runs its own nodes and a workload (a ReplicationController's Pods,
a bare Pod, ConfigMaps, a Secret, a PriorityClass); its snapshot loads into
cluster B, whose kubelet_sim has no nodes but those it adopts. B then runs
the same nodes and Pods (bound where they ran; the RC adopts its Pods rather
than making more), and B's snapshot is byte for byte A's.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from kubesim.kubeconfig import write_kubeconfig
from kubesim.studies.clusters import ClusterSpec, cluster
from tests import harness
from tests.kube import pod, rc

pytestmark = pytest.mark.e2e


def kubesim(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kubesim", *args], capture_output=True, text=True, timeout=180,
                          check=False)


def settled(api: httpx.Client, namespace: str, pods: int) -> bool:
    items = api.get(f"/api/v1/namespaces/{namespace}/pods").json()["items"]
    nodes = api.get("/api/v1/nodes").json()["items"]
    ready = all(any(c["type"] == "Ready" and c["status"] == "True" for c in n["status"].get("conditions") or ())
                and not any(t["key"].startswith("node.kubernetes.io/") for t in n["spec"].get("taints") or ())
                for n in nodes)
    return ready and len(items) == pods and all(p["status"].get("phase") == "Running" for p in items)


def workload(api: httpx.Client) -> None:
    def post(path: str, body: dict[str, Any]) -> None:
        r = api.post(path, json=body)
        assert r.status_code == 201, r.text
    post("/api/v1/namespaces", {"metadata": {"name": "shop", "labels": {"team": "checkout"}}})
    post("/apis/scheduling.k8s.io/v1/priorityclasses", {"metadata": {"name": "shop-high"}, "value": 1000})
    post("/api/v1/namespaces/shop/configmaps", {"metadata": {"name": "settings"}, "data": {"mode": "fast"}})
    applied = '{"apiVersion":"v1","data":{"token":"c2VjcmV0"},"kind":"Secret","metadata":{"name":"token"}}'
    post("/api/v1/namespaces/shop/secrets", {"metadata": {"name": "token", "annotations": {
        "kubectl.kubernetes.io/last-applied-configuration": applied}}, "data": {"token": "c2VjcmV0"}})
    post("/api/v1/namespaces/shop/replicationcontrollers", rc("web", replicas=2))
    post("/api/v1/namespaces/shop/pods", pod("single", priorityClassName="shop-high"))


def test_save_load_save_gives_the_same_file(tmp_path: Path) -> None:
    first, second = tmp_path / "a.yaml", tmp_path / "b.yaml"
    with cluster(ClusterSpec(own_nodes=3, container_start="100ms")) as a, a.client(timeout=30) as api:
        workload(api)
        harness.wait_for(lambda: settled(api, "shop", 3), timeout=60, message="cluster A's workload Running")
        done = kubesim("snapshot", "save", str(first), "--kubeconfig", str(a.kubeconfig))
        assert done.returncode == 0, done.stderr
    text = first.read_text()
    docs = [d for d in yaml.safe_load_all(text) if d]
    secret = next(d for d in docs if d["kind"] == "Secret")
    assert secret["data"] == {"token": ""} and secret["metadata"]["annotations"] == {"kubesim.io/data-removed": "true"}
    assert "uid:" not in text and "resourceVersion" not in text and "managedFields" not in text
    assert "c2VjcmV0" not in text  # the Secret's value, neither in data nor in kubectl apply's copy of it
    assert sum(d["kind"] == "Node" for d in docs) == 3
    with cluster(ClusterSpec(container_start="100ms")) as b, b.client(timeout=30) as api:
        done = kubesim("snapshot", "load", str(first), "--kubeconfig", str(b.kubeconfig))
        assert done.returncode == 0, done.stdout + done.stderr
        assert "created" in done.stdout
        harness.wait_for(lambda: settled(api, "shop", 3), timeout=60, message="cluster B running A's workload")
        pods = api.get("/api/v1/namespaces/shop/pods").json()["items"]
        owned = [p for p in pods if p["metadata"].get("ownerReferences")]
        rc_uid = api.get("/api/v1/namespaces/shop/replicationcontrollers/web").json()["metadata"]["uid"]
        assert len(owned) == 2 and {p["metadata"]["ownerReferences"][0]["uid"] for p in owned} == {rc_uid}
        done = kubesim("snapshot", "save", str(second), "--kubeconfig", str(b.kubeconfig))
        assert done.returncode == 0, done.stderr
    assert second.read_text() == text


def test_kinds_the_target_does_not_serve_are_listed_and_the_rest_loads(tmp_path: Path) -> None:
    snapshot = tmp_path / "s.yaml"
    snapshot.write_text(yaml.safe_dump_all([
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "lab"}},
        {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w1", "namespace": "lab"}},
        {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w2", "namespace": "lab"}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "lab"}, "data": {"a": "1"}},
    ]))
    broken = tmp_path / "broken.yaml"
    broken.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ok}\n---\napiVersion: v1\nkind: ConfigMap\n"
                      "data: {a: 1}\n")
    with cluster() as c, c.client(timeout=30) as api:
        done = kubesim("snapshot", "load", str(snapshot), "--kubeconfig", str(c.kubeconfig))
        assert done.returncode == 0, done.stdout + done.stderr
        assert "not loaded, the target does not serve these kinds: Widget.example.com (2 objects)" in done.stdout
        assert api.get("/api/v1/namespaces/lab/configmaps/c").json()["data"] == {"a": "1"}
        strict = kubesim("snapshot", "load", str(snapshot), "--strict", "--kubeconfig", str(c.kubeconfig))
        assert strict.returncode == 1 and "2 unchanged" in strict.stdout
        bad = kubesim("snapshot", "load", str(broken), "--kubeconfig", str(c.kubeconfig))
        assert bad.returncode == 1
        assert f"{broken}:5: document 2 needs apiVersion, kind and metadata.name" in bad.stderr
        assert api.get("/api/v1/namespaces/default/configmaps/ok").status_code == 404


def test_a_snapshot_of_any_cluster_needs_only_reads(tmp_path: Path) -> None:
    """Saving sends nothing but GETs, with the kubeconfig's credentials (a read-only one of production is enough)."""
    methods: list[str] = []
    tokens: set[str | None] = set()
    with cluster(ClusterSpec(own_nodes=1)) as c:
        target, tls = c.url, c.tls()

        class Proxy(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                methods.append("GET")
                tokens.add(self.headers.get("Authorization"))
                # The proxy stands for production: it answers as the cluster's admin.
                r = httpx.get(target + self.path, verify=tls, timeout=30)
                self.send_response(r.status_code)
                self.send_header("Content-Type", r.headers.get("content-type", "application/json"))
                self.send_header("Content-Length", str(len(r.content)))
                self.end_headers()
                self.wfile.write(r.content)

            def refuse(self) -> None:
                methods.append(self.command)
                self.send_response(405)
                self.send_header("Content-Length", "0")
                self.end_headers()
            do_POST = do_PUT = do_PATCH = do_DELETE = refuse

            def log_message(self, *args: Any) -> None:
                pass
        server = ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            kubeconfig = write_kubeconfig(tmp_path / "prod-readonly.kubeconfig",
                                          f"http://127.0.0.1:{server.server_address[1]}", token="view-only-token")
            done = kubesim("snapshot", "save", str(tmp_path / "s.yaml"), "--kubeconfig", str(kubeconfig))
        finally:
            server.shutdown()
            server.server_close()
        assert done.returncode == 0, done.stderr
        assert methods and set(methods) == {"GET"}
        assert tokens == {"Bearer view-only-token"}
        assert "kind: Node" in (tmp_path / "s.yaml").read_text()

