"""kubelet_sim --runtime=process: containers as real processes, through the real APIServer and kubectl.

Each Pod is pinned to one of this module's nodes (no scheduler here). Every
process the runtime starts has its working directory under the runtime's
``--root-dir``, which is how the tests find them: after each test, and after
kubelet_sim stops, none may be left.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from kubesim import procs
from machinery.httpstream.client import exec_websocket, upgrade
from tests import harness
from tests.integration.test_kubelet_nodes import KubeletSim, start_kubelet_sim
from tests.kube import WatchReader
from tests.kubectl import Kubectl, binary
from tests.terminal import run_on_pty

pytestmark = [pytest.mark.integration, pytest.mark.kubectl]

PYTHON = sys.executable


def processes_under(root: Path) -> list[tuple[int, str]]:
    """(pid, command line) of every process whose working directory is under ``root``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cwd = os.readlink(f"/proc/{entry}/cwd")
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if cwd.startswith(str(root)):
            found.append((int(entry), cmdline.strip()))
    return found


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("process-runtime")


@pytest.fixture(scope="module")
def kubelet(cluster: harness.Cluster, tmp_path_factory: pytest.TempPathFactory, root: Path) -> Iterator[KubeletSim]:
    sim = start_kubelet_sim(cluster, tmp_path_factory.mktemp("kubelet"), nodes=1,
                            extra_args=["--runtime=process", f"--root-dir={root}"])
    yield sim
    sim.remove()
    assert processes_under(root) == []


@pytest.fixture
def kubectl(cluster: harness.Cluster, namespace: str, tmp_path: Path) -> Kubectl:
    return Kubectl(binary("1.32"), cluster.url, tmp_path, namespace)


def _pod(name: str, node: str, *containers: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"nodeName": node, "containers": list(containers), **spec}}


def _container(name: str, *command: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, "image": "python:3.12", "command": list(command), **fields}


def _wait_pod(api: httpx.Client, namespace: str, name: str, check: Any, what: str, timeout: float = 30) -> Any:
    def probe() -> Any:
        response = api.get(f"/api/v1/namespaces/{namespace}/pods/{name}")
        return check(response.json()) if response.status_code == 200 else None
    return harness.wait_for(probe, timeout=timeout, message=what)


def _state(pod: dict[str, Any], container: str) -> dict[str, Any]:
    statuses = pod["status"].get("containerStatuses") or []
    return next((s for s in statuses if s["name"] == container), {})


def _running(api: httpx.Client, namespace: str, name: str) -> dict[str, Any]:
    pod: dict[str, Any] = _wait_pod(api, namespace, name, lambda p: p["status"].get("phase") == "Running" and all(
        "running" in s["state"] for s in p["status"].get("containerStatuses") or [{"state": {}}]) and p,
        f"{name} to run")
    return pod


SERVER = ("import http.server, os\n"
          "class H(http.server.BaseHTTPRequestHandler):\n"
          "    def do_GET(self):\n"
          "        body = (os.environ['GREETING'] + ' ' + open('etc/info/name').read()).encode()\n"
          "        self.send_response(200); self.send_header('Content-Length', str(len(body)))\n"
          "        self.end_headers(); self.wfile.write(body)\n"
          "    def log_message(self, *args): print('served', self.path, flush=True)\n"
          "print('listening', flush=True)\n"
          "http.server.HTTPServer(('127.0.0.1', int(os.environ['PORT'])), H).serve_forever()\n")


def test_a_container_runs_its_command_with_its_env_volumes_and_port(api: httpx.Client, kubectl: Kubectl,
                                                                     kubelet: KubeletSim, namespace: str,
                                                                     root: Path) -> None:
    port = procs.free_port()
    body = _pod("web", kubelet.nodes[0], _container(
        "app", PYTHON, "-c", SERVER, env=[{"name": "GREETING", "value": "hello"}, {"name": "PORT", "value": str(port)}],
        ports=[{"containerPort": port}], volumeMounts=[{"name": "info", "mountPath": "/etc/info"}]),
        volumes=[{"name": "info", "downwardAPI": {"items": [{"path": "name", "fieldRef": {
            "fieldPath": "metadata.name"}}]}}])
    assert api.post(f"/api/v1/namespaces/{namespace}/pods", json=body).status_code == 201
    pod = _running(api, namespace, "web")
    # The Pod shares this host's network: its IP is the node's.
    assert pod["status"]["podIP"] == pod["status"]["hostIP"] == "127.0.0.1"
    harness.wait_for(lambda: "listening" in kubectl("logs", "web"), timeout=20, message="the server to listen")
    exec_ = kubectl("exec", "web", "--", "sh", "-c", "echo $GREETING; cat etc/info/name; echo; pwd")
    assert exec_.splitlines()[:2] == ["hello", "web"]
    assert exec_.splitlines()[2].startswith(str(root))
    local = procs.free_port()
    with port_forward(kubectl, "pod/web", f"{local}:{port}"):
        assert httpx.get(f"http://127.0.0.1:{local}/x", timeout=10).text == "hello web"
    harness.wait_for(lambda: "served /x" in kubectl("logs", "web"), timeout=10, message="the request in the log")
    assert any("-c" in cmd for _, cmd in processes_under(root))
    assert api.delete(f"/api/v1/namespaces/{namespace}/pods/web").status_code == 200
    harness.wait_for(lambda: api.get(f"/api/v1/namespaces/{namespace}/pods/web").status_code == 404, timeout=30,
                     message="web to be deleted")
    harness.wait_for(lambda: not processes_under(root), timeout=10, message="the server process to end")


def test_exit_codes_drive_the_container_state_and_restarts(api: httpx.Client, kubelet: KubeletSim,
                                                           namespace: str) -> None:
    node = kubelet.nodes[0]
    for name, policy, command in (("quits", "Never", "import sys; print('bye'); sys.exit(3)"),
                                  ("retries", "OnFailure", "import sys; sys.exit(2)"),
                                  ("done", "OnFailure", "print('ok')")):
        body = _pod(name, node, _container("app", PYTHON, "-c", command), restartPolicy=policy)
        assert api.post(f"/api/v1/namespaces/{namespace}/pods", json=body).status_code == 201
    quits = _wait_pod(api, namespace, "quits", lambda p: p["status"].get("phase") == "Failed" and p, "quits to fail")
    assert _state(quits, "app")["state"]["terminated"]["exitCode"] == 3
    logs = api.get(f"/api/v1/namespaces/{namespace}/pods/quits/log")
    assert logs.text == "bye\n"
    retried = _wait_pod(api, namespace, "retries", lambda p: _state(p, "app").get("restartCount", 0) >= 1 and p,
                        "retries to restart")
    assert _state(retried, "app")["lastState"]["terminated"]["exitCode"] == 2
    _wait_pod(api, namespace, "done", lambda p: p["status"].get("phase") == "Succeeded", "done to succeed")


def test_a_missing_command_is_a_start_error(api: httpx.Client, kubelet: KubeletSim, namespace: str) -> None:
    body = _pod("broken", kubelet.nodes[0], _container("app", "no-such-program"), restartPolicy="Never")
    assert api.post(f"/api/v1/namespaces/{namespace}/pods", json=body).status_code == 201
    pod = _wait_pod(api, namespace, "broken", lambda p: p["status"].get("phase") == "Failed" and p, "a start error")
    terminated = _state(pod, "app")["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (128, "StartError")
    assert 'exec: "no-such-program": executable file not found in $PATH' in terminated["message"]


@pytest.mark.parametrize(("handler", "grace", "code", "quick"), [
    pytest.param("signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))", 30, 0, True, id="exits-on-sigterm"),
    pytest.param("signal.signal(signal.SIGTERM, signal.SIG_IGN)", 2, 137, False, id="killed-after-grace"),
])
def test_deletion_sends_sigterm_then_sigkill(api: httpx.Client, kubelet: KubeletSim, namespace: str, root: Path,
                                             handler: str, grace: int, code: int, quick: bool) -> None:
    script = f"import signal, sys, time\n{handler}\nprint('ready', flush=True)\nwhile True: time.sleep(0.1)\n"
    body = _pod("term", kubelet.nodes[0], _container("app", PYTHON, "-c", script), terminationGracePeriodSeconds=grace)
    assert api.post(f"/api/v1/namespaces/{namespace}/pods", json=body).status_code == 201
    _running(api, namespace, "term")
    harness.wait_for(lambda: "ready" in api.get(f"/api/v1/namespaces/{namespace}/pods/term/log").text, timeout=20,
                     message="the handler to be installed")
    def terminated(events: list[dict[str, Any]]) -> dict[str, Any] | None:
        return next((_state(e["object"], "app")["state"]["terminated"] for e in events
                     if "terminated" in _state(e["object"], "app").get("state", {})), None)

    with WatchReader(str(api.base_url), f"/api/v1/namespaces/{namespace}/pods",
                     {"watch": "true", "fieldSelector": "metadata.name=term"}) as watch:
        started = time.monotonic()
        assert api.delete(f"/api/v1/namespaces/{namespace}/pods/term").status_code == 200
        events = watch.wait_until(terminated, timeout=30)
        took = time.monotonic() - started
    final = terminated(events)
    assert final is not None and final["exitCode"] == code
    assert (took < grace) if quick else (took >= grace - 0.5)
    harness.wait_for(lambda: not processes_under(root), timeout=10, message="the process to end")


def test_exec_tty_and_a_client_that_leaves(api: httpx.Client, kubectl: Kubectl, kubelet: KubeletSim,
                                           namespace: str, cluster: harness.Cluster, root: Path) -> None:
    body = _pod("shell", kubelet.nodes[0], _container("app", PYTHON, "-c", "import time; time.sleep(3600)"))
    assert api.post(f"/api/v1/namespaces/{namespace}/pods", json=body).status_code == 201
    _running(api, namespace, "shell")
    piped = kubectl.run("exec", "-i", "shell", "--", "sh", "-c", "cat; exit 4", input="through stdin\n",
                        check=False)
    assert (piped.returncode, piped.stdout) == (4, "through stdin\n")
    argv = [str(kubectl.path), *kubectl.connection(), "--namespace", namespace, "exec", "-it", "shell", "--",
            "sh"]
    code, out = run_on_pty(argv, [b"stty size\r", (33, 111), b"stty size\r", b"tty && exit 6\r"],
                           env={"HOME": str(kubectl.home), "PATH": os.environ["PATH"]}, size=(25, 90))
    text = out.decode()
    assert code == 6, text
    assert "25 90" in text and "33 111" in text and "/dev/pts/" in text

    async def leave_early() -> None:
        url = (f"{cluster.url}/api/v1/namespaces/{namespace}/pods/shell/exec?command=sleep&command=300"
               "&stdout=true&stderr=true")
        up = await upgrade(url, kind="websocket", protocols=("v5.channel.k8s.io",), tls=harness.admin_tls())
        await asyncio.sleep(1)
        assert any("sleep 300" in cmd for _, cmd in processes_under(root))
        up.writer.close()
        # Over TLS the close is an exchange: let it end, so the socket is closed too.
        with contextlib.suppress(OSError):
            await up.writer.wait_closed()
    asyncio.run(leave_early())
    # The exec'd process goes with the client that started it.
    harness.wait_for(lambda: not any("sleep 300" in cmd for _, cmd in processes_under(root)), timeout=15,
                     message="the exec'd sleep to be killed")
    result = asyncio.run(exec_websocket(f"{cluster.url}/api/v1/namespaces/{namespace}/pods/shell/exec"
                                        "?command=nope&stdout=true", tls=harness.admin_tls()))
    assert 'exec: "nope": executable file not found in $PATH' in (result.status or {}).get("message", "")


def test_cp_both_ways_and_attach(api: httpx.Client, kubectl: Kubectl, kubelet: KubeletSim, namespace: str,
                                 tmp_path: Path) -> None:
    ticker = "import time\nfor i in range(8):\n    print('tick', i, flush=True)\n    time.sleep(0.5)\n"
    body = _pod("talker", kubelet.nodes[0], _container("app", PYTHON, "-c", ticker), restartPolicy="Never")
    assert api.post(f"/api/v1/namespaces/{namespace}/pods", json=body).status_code == 201
    _running(api, namespace, "talker")
    # kubectl attach follows the process's output until it exits.
    attached = kubectl.run("attach", "talker", timeout=60)
    assert "tick 7" in attached.stdout, attached.stdout + attached.stderr
    shell = _pod("files", kubelet.nodes[0], _container("app", PYTHON, "-c", "import time; time.sleep(3600)"))
    assert api.post(f"/api/v1/namespaces/{namespace}/pods", json=shell).status_code == 201
    _running(api, namespace, "files")
    source = tmp_path / "src"
    source.mkdir()
    (source / "blob.bin").write_bytes(os.urandom(100_000))
    # tar runs in the container's directory on this host (relative paths stay inside it).
    kubectl("cp", str(source), "files:copied")
    assert kubectl("exec", "files", "--", "ls", "copied") == "blob.bin\n"
    kubectl("cp", "files:copied", str(tmp_path / "back"))
    assert (tmp_path / "back" / "blob.bin").read_bytes() == (source / "blob.bin").read_bytes()


def test_stopping_kubelet_sim_stops_every_process(cluster: harness.Cluster, tmp_path: Path, api: httpx.Client,
                                                  namespace: str) -> None:
    own_root = tmp_path / "root"
    sim = start_kubelet_sim(cluster, tmp_path, nodes=1, extra_args=["--runtime=process", f"--root-dir={own_root}"])
    try:
        script = "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\ntime.sleep(3600)\n"
        body = _pod("stubborn", sim.nodes[0], _container("app", PYTHON, "-c", script),
                    _container("child", "sh", "-c", "sleep 3600 & sleep 3600"))
        assert api.post(f"/api/v1/namespaces/{namespace}/pods", json=body).status_code == 201
        _running(api, namespace, "stubborn")
        harness.wait_for(lambda: len(processes_under(own_root)) >= 4, timeout=20, message="the processes to start")
    finally:
        sim.remove()
    assert processes_under(own_root) == []


def test_a_killed_kubelet_sim_leaves_no_process_either(cluster: harness.Cluster, tmp_path: Path,
                                                       api: httpx.Client, namespace: str) -> None:
    own_root = tmp_path / "root"
    sim = start_kubelet_sim(cluster, tmp_path, nodes=1, extra_args=["--runtime=process", f"--root-dir={own_root}"])
    try:
        # The shell's sleeps are beyond the parent-death signal's reach: only the watchdog kills them.
        body = _pod("orphans", sim.nodes[0], _container("app", "sh", "-c", "sleep 3600 & sleep 3600 & wait"))
        assert api.post(f"/api/v1/namespaces/{namespace}/pods", json=body).status_code == 201
        _running(api, namespace, "orphans")
        harness.wait_for(lambda: len(processes_under(own_root)) >= 3, timeout=20, message="the processes to start")
        sim.process.kill()
        harness.wait_for(lambda: processes_under(own_root) == [], timeout=15,
                         message=f"every process to end: {processes_under(own_root)}")
    finally:
        sim.remove()
        for pid, _ in processes_under(own_root):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


@contextlib.contextmanager
def port_forward(kubectl: Kubectl, target: str, mapping: str) -> Iterator[None]:
    proc = subprocess.Popen(
        [str(kubectl.path), *kubectl.connection(), "--namespace", str(kubectl.namespace), "port-forward",
         target, mapping], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={"HOME": str(kubectl.home), "PATH": os.environ["PATH"]}, start_new_session=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("Forwarding from"), line
        yield
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=10)
