"""A real operator framework (kopf, from PyPI) runs a small operator against `kubesim up`.

The operator watches a custom kind (``Sleeper``) and creates, for each object,
one Pod owned by it; the scheduler binds those Pods and the simulated kubelets
run them, as on a real cluster. Deleting the object lets kopf run its deletion
handler (kopf's finalizer on the custom object) and the garbage collector
delete the owned Pod.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from kubesim import procs
from machinery.client.config import load_kubeconfig
from tests import harness
from tests.crds import CRDS, established

pytestmark = pytest.mark.e2e

SLEEPERS = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "sleepers.kopf.example.com"},
    "spec": {"group": "kopf.example.com", "scope": "Namespaced",
             "names": {"plural": "sleepers", "singular": "sleeper", "kind": "Sleeper"},
             "versions": [{"name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
                           "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                               "spec": {"type": "object", "properties": {
                                   "image": {"type": "string", "default": "busybox:1.36"}}},
                               "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}}}]},
}

OPERATOR = textwrap.dedent('''
    import kopf
    import kubernetes


    @kopf.on.startup()
    def configure(settings: kopf.OperatorSettings, **_):
        settings.posting.enabled = True
        settings.watching.server_timeout = 30


    @kopf.on.create("kopf.example.com", "v1", "sleepers")
    def create_pod(spec, name, namespace, body, **_):
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": f"{name}-pod", "labels": {"sleeper": name}},
               "spec": {"containers": [{"name": "sleep", "image": spec["image"]}]}}
        kopf.adopt(pod, owner=body)
        kubernetes.config.load_kube_config()
        created = kubernetes.client.CoreV1Api().create_namespaced_pod(namespace, pod)
        return {"pod": created.metadata.name}


    @kopf.on.delete("kopf.example.com", "v1", "sleepers")
    def deleted(name, **_):
        kopf.info({"kind": "Sleeper"}, reason="Deleted", message=f"{name} is gone")
''')


@pytest.fixture
def kubesim_up(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    port, etcd_port = procs.free_port(), procs.free_port()
    data = tmp_path / "data"
    proc = subprocess.Popen(
        [sys.executable, "-m", "kubesim", "up", "--port", str(port), "--etcd-port", str(etcd_port),
         "--data-dir", str(data), "--no-color"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        url = f"https://127.0.0.1:{port}"
        harness.wait_for(lambda: procs.http_ok(f"{url}/readyz") and (data / "kubeconfig").exists(), timeout=90,
                         message="kubesim up ready")
        yield url, data / "kubeconfig"
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)


def test_a_kopf_operator_creates_pods_that_run(kubesim_up: tuple[str, Path], tmp_path: Path) -> None:
    _url, kubeconfig = kubesim_up
    # As the admin of the kubeconfig kubesim up wrote, which kopf uses too.
    with httpx.Client(**load_kubeconfig(kubeconfig).httpx_options(), timeout=30) as api:
        harness.wait_for(lambda: len([n for n in api.get("/api/v1/nodes").json()["items"]
                                      if any(c["type"] == "Ready" and c["status"] == "True"
                                             for c in n["status"].get("conditions") or ())]) >= 1,
                         timeout=60, message="a Ready node")
        assert api.post(CRDS, json=SLEEPERS).status_code == 201
        harness.wait_for(lambda: established(api.get(f"{CRDS}/sleepers.kopf.example.com").json()),
                         message="Sleepers established")
        operator = tmp_path / "operator.py"
        operator.write_text(OPERATOR)
        log = (tmp_path / "kopf.log").open("w")
        kopf = subprocess.Popen(
            [sys.executable, "-m", "kopf", "run", "--standalone", "--all-namespaces", "--verbose", str(operator)],
            env={**os.environ, "KUBECONFIG": str(kubeconfig)}, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True)
        try:
            coll = "/apis/kopf.example.com/v1/namespaces/default/sleepers"
            for name in ("nap", "doze"):
                # spec is given (empty) so that its image is defaulted: defaults apply inside objects that exist.
                body = {"apiVersion": "kopf.example.com/v1", "kind": "Sleeper", "metadata": {"name": name},
                        "spec": {}}
                assert api.post(coll, json=body).status_code == 201

            def running() -> list[dict[str, object]] | None:
                pods = api.get("/api/v1/namespaces/default/pods", params={"labelSelector": "sleeper"}).json()["items"]
                ok = [p for p in pods if p["status"].get("phase") == "Running" and p["spec"].get("nodeName")]
                return pods if len(ok) == 2 else None
            pods = harness.wait_for(running, timeout=90, message="the operator's Pods Running")
            assert isinstance(pods, list)
            for pod in pods:
                assert isinstance(pod, dict)
                owner = pod["metadata"]["ownerReferences"][0]  # type: ignore[index]
                assert owner["kind"] == "Sleeper" and owner["apiVersion"] == "kopf.example.com/v1"
                assert pod["spec"]["containers"][0]["image"] == "busybox:1.36"  # type: ignore[index]
            # kopf keeps its state on the object (finalizer, annotations, status of the handler's result).
            nap = api.get(f"{coll}/nap").json()
            assert "kopf.zalando.org/KopfFinalizerMarker" in nap["metadata"]["finalizers"]
            harness.wait_for(lambda: (api.get(f"{coll}/nap").json().get("status") or {}).get("create_pod")
                             == {"pod": "nap-pod"}, timeout=30, message="the handler's result in status")
            # Deleting the object: kopf runs its delete handler and removes its finalizer.
            api.delete(f"{coll}/nap")
            harness.wait_for(lambda: api.get(f"{coll}/nap").status_code == 404, timeout=60,
                             message="kopf released its finalizer")
        finally:
            os.killpg(kopf.pid, signal.SIGTERM)
            try:
                kopf.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(kopf.pid, signal.SIGKILL)
                kopf.wait(10)
            log.close()
