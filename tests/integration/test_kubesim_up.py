"""`kubesim up`: the cluster starts secure, its kubeconfig works with kubectl, and SIGTERM leaves nothing behind."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import ssl
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from kubesim import procs
from machinery.client.config import load_kubeconfig
from tests import harness

pytestmark = pytest.mark.integration


def _children_of(pid: int) -> set[int]:
    out = subprocess.run(["ps", "-eo", "pid=,ppid=,pgid="], capture_output=True, text=True, check=True).stdout
    rows = [tuple(int(x) for x in line.split()) for line in out.splitlines() if line.strip()]
    found = {pid}
    changed = True
    while changed:
        changed = False
        for p, pp, _ in rows:
            if pp in found and p not in found:
                found.add(p)
                changed = True
    found.discard(pid)
    return found


def _pid_of(command: str, pids: set[int], *, missing_ok: bool = False) -> int | None:
    for pid in pids:
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if command in cmdline:
            return pid
    if missing_ok:
        return None
    raise AssertionError(f"no process runs {command!r}")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is gone for our purposes.
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split()[2] != "Z"


def test_up_serves_writes_kubeconfig_and_stops_everything(tmp_path: Path) -> None:
    port, etcd_port, insecure_port = procs.free_port(), procs.free_port(), procs.free_port()
    data = tmp_path / "data"
    proc = subprocess.Popen(
        [sys.executable, "-m", "kubesim", "up", "--port", str(port), "--etcd-port", str(etcd_port),
         "--data-dir", str(data), "--no-color", "--insecure-port", str(insecure_port)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        url = f"https://127.0.0.1:{port}"
        harness.wait_for(lambda: procs.http_ok(f"{url}/readyz"), timeout=60, message="kubesim up ready")
        kubeconfig = data / "kubeconfig"
        harness.wait_for(kubeconfig.exists, message="kubeconfig written")
        assert (data / "etcd").is_dir()
        assert (data / "logs" / "apiserver.log").exists() and (data / "logs" / "etcd.log").exists()
        # Certificates, keys, tokens and kubeconfigs are the owner's only.
        for path in [*(data / "pki").iterdir(), kubeconfig, data / "scheduler.conf", data / "kubelet.conf"]:
            assert oct(path.stat().st_mode & 0o777) == "0o600", path
        config = load_kubeconfig(kubeconfig)
        assert config.server == url and config.tls.ca and config.tls.cert
        with httpx.Client(**config.httpx_options()) as api:
            harness.wait_for(lambda: api.get("/api/v1/namespaces/kube-system").status_code == 200)
            me = api.post("/apis/authentication.k8s.io/v1/selfsubjectreviews",
                          json={"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}).json()
            assert me["status"]["userInfo"]["username"] == "kubernetes-admin"
            assert "system:masters" in me["status"]["userInfo"]["groups"]
        with httpx.Client(base_url=url, verify=ssl.create_default_context(cafile=str(data / "pki" / "ca.crt"))) \
                as anonymous:
            assert anonymous.get("/api/v1/namespaces/default/pods").status_code == 403
            assert anonymous.get("/healthz").status_code == 200
        with httpx.Client(base_url=f"http://127.0.0.1:{insecure_port}") as plain:
            assert plain.get("/api/v1/namespaces/default/pods").status_code == 200
        if shutil.which("kubectl"):
            out = subprocess.run(["kubectl", "--kubeconfig", str(kubeconfig), "get", "namespaces"],
                                 capture_output=True, text=True, timeout=60, check=False)
            assert out.returncode == 0, out.stderr
            assert "kube-system" in out.stdout and "Active" in out.stdout
        harness.wait_for((data / "components.json").exists, timeout=60, message="components started")
        # metrics-server registered itself with the aggregation layer, which found it answering.
        with httpx.Client(**config.httpx_options()) as api:
            def metrics_available() -> bool:
                found = api.get("/apis/apiregistration.k8s.io/v1/apiservices/v1beta1.metrics.k8s.io")
                conditions = found.json().get("status", {}).get("conditions", []) if found.status_code == 200 else []
                return any(c["type"] == "Available" and c["status"] == "True" for c in conditions)
            harness.wait_for(metrics_available, timeout=60, message="the metrics APIService available")
            assert api.get("/apis/metrics.k8s.io/v1beta1/nodes").status_code == 200
        children = _children_of(proc.pid)
        assert len(children) >= 5, "etcd, the APIServer and the three components should be running"
        status = subprocess.run([sys.executable, "-m", "kubesim", "status", "--data-dir", str(data)],
                                capture_output=True, text=True, timeout=60, check=False,
                                env={**os.environ, "KUBECONFIG": str(data / "kubeconfig")})
        assert status.returncode == 0, status.stdout
        assert re.search(r"^kubelets \(3 nodes\)\s+ok", status.stdout, re.MULTILINE), status.stdout
        assert re.search(r"^scheduler process\s+ok", status.stdout, re.MULTILINE), status.stdout
        # A component that dies is reported and restarted, the others untouched.
        scheduler = _pid_of("python -m scheduler", children)
        apiserver = _pid_of("python -m apiserver", children)
        os.kill(scheduler, signal.SIGKILL)
        restarted = harness.wait_for(
            lambda: _pid_of("python -m scheduler", _children_of(proc.pid), missing_ok=True) not in (None, scheduler),
            timeout=60, message="the scheduler restarted")
        assert restarted
        assert _alive(apiserver)
        # Every component acts as itself: the audit log (Metadata level) names them.
        def audited_users() -> set[str]:
            lines = (data / "logs" / "audit.log").read_bytes().splitlines()
            return {json.loads(line)["user"].get("username", "") for line in lines}
        harness.wait_for(lambda: {"system:kube-scheduler", "system:kube-controller-manager",
                                  "system:node:node-1"} <= audited_users(), timeout=60,
                         message="the components' own identities in the audit log")
        children = _children_of(proc.pid)
        proc.send_signal(signal.SIGTERM)
        output, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
    assert proc.returncode == 0, output
    assert f"API: {url}" in output
    assert "with no authentication or authorization (--insecure-port)" in output
    assert "kubesim: scheduler exited with code -9; its last lines:" in output
    assert "kubesim: restarting scheduler" in output
    assert f"export KUBECONFIG={data.resolve() / 'kubeconfig'}" in output
    deadline = time.monotonic() + 10
    while any(_alive(p) for p in children) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [p for p in children if _alive(p)], "kubesim up left processes behind"


def test_up_refuses_a_busy_port(tmp_path: Path) -> None:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        busy = s.getsockname()[1]
        out = subprocess.run([sys.executable, "-m", "kubesim", "up", "--port", str(busy), "--data-dir",
                              str(tmp_path)], capture_output=True, text=True, timeout=60, check=False)
    assert out.returncode == 2
    assert f"port {busy} is in use" in out.stdout


def test_apiserver_compacts_etcd_periodically(tmp_path: Path) -> None:
    with harness.cluster(apiserver_args=["--etcd-compaction-interval", "1s"], workdir=tmp_path) as c, \
            harness.admin_client(c.url) as api:
        harness.wait_for(lambda: api.get("/api/v1/namespaces/default").status_code == 200)
        first = api.post("/api/v1/namespaces/default/pods", json={
            "metadata": {"name": "c0"}, "spec": {"containers": [{"name": "c", "image": "x"}]}}).json()
        old_rv = first["metadata"]["resourceVersion"]

        def compacted() -> bool:
            api.post("/api/v1/namespaces/default/pods", json={
                "metadata": {"generateName": "c-"}, "spec": {"containers": [{"name": "c", "image": "x"}]}})
            r = api.get("/api/v1/namespaces/default/pods",
                        params={"resourceVersion": old_rv, "resourceVersionMatch": "Exact"})
            return r.status_code == 410
        harness.wait_for(compacted, timeout=15, interval=0.5, message="etcd history compacted")
        r = api.get("/api/v1/namespaces/default/pods",
                    params={"resourceVersion": old_rv, "resourceVersionMatch": "Exact"})
        assert r.json()["reason"] == "Expired"
