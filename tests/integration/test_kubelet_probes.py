"""Startup, readiness and liveness probes in both runtimes, through the real APIServer.

Simulated containers take their probe outcomes from ``kubesim.io/<kind>-probe``
annotations; process containers are really probed (HTTP, TCP, exec).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from kubesim import procs
from tests import harness
from tests.integration.test_kubelet_nodes import KubeletSim, start_kubelet_sim
from tests.integration.test_kubelet_process_runtime import processes_under

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def simulated(cluster: harness.Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeletSim]:
    sim = start_kubelet_sim(cluster, tmp_path_factory.mktemp("kubelet"), nodes=1)
    yield sim
    sim.remove()


@pytest.fixture(scope="module")
def process_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("probe-root")


@pytest.fixture(scope="module")
def processes(cluster: harness.Cluster, tmp_path_factory: pytest.TempPathFactory,
              process_root: Path) -> Iterator[KubeletSim]:
    sim = start_kubelet_sim(cluster, tmp_path_factory.mktemp("kubelet"), nodes=1,
                            extra_args=["--runtime=process", f"--root-dir={process_root}"])
    yield sim
    sim.remove()
    assert processes_under(process_root) == []


def _create(api: httpx.Client, namespace: str, body: dict[str, Any]) -> None:
    response = api.post(f"/api/v1/namespaces/{namespace}/pods", json=body)
    assert response.status_code == 201, response.text


def _status(api: httpx.Client, namespace: str, name: str) -> dict[str, Any]:
    status: dict[str, Any] = api.get(f"/api/v1/namespaces/{namespace}/pods/{name}").json()["status"]
    return status


def _container_status(api: httpx.Client, namespace: str, name: str) -> dict[str, Any]:
    statuses = _status(api, namespace, name).get("containerStatuses") or [{}]
    return dict(statuses[0])


def _reasons(api: httpx.Client, namespace: str, name: str) -> list[tuple[str, str]]:
    items = api.get(f"/api/v1/namespaces/{namespace}/events",
                    params={"fieldSelector": f"involvedObject.name={name}"}).json()["items"]
    return [(e["reason"], e["message"]) for e in items]


def test_simulated_readiness_follows_its_schedule(api: httpx.Client, simulated: KubeletSim, namespace: str) -> None:
    body = {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "slow-ready", "annotations": {"kubesim.io/readiness-probe": "0:fail,3:pass"}},
            "spec": {"nodeName": simulated.nodes[0], "containers": [{
                "name": "app", "image": "nginx", "readinessProbe": {"httpGet": {"path": "/", "port": 80},
                                                                   "periodSeconds": 1}}]}}
    _create(api, namespace, body)
    harness.wait_for(lambda: _status(api, namespace, "slow-ready").get("phase") == "Running", timeout=20,
                     message="slow-ready to run")
    assert _container_status(api, namespace, "slow-ready")["ready"] is False
    harness.wait_for(lambda: _container_status(api, namespace, "slow-ready").get("ready"), timeout=20,
                     message="slow-ready to be ready")
    ready = {c["type"]: c["status"] for c in _status(api, namespace, "slow-ready")["conditions"]}
    assert ready["Ready"] == "True" and ready["ContainersReady"] == "True"
    assert ("Unhealthy", "Readiness probe failed: HTTP probe failed with statuscode: 503") in \
        _reasons(api, namespace, "slow-ready")


def test_simulated_liveness_failures_restart_the_container(api: httpx.Client, simulated: KubeletSim,
                                                           namespace: str) -> None:
    body = {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "sick", "annotations": {"kubesim.io/liveness-probe": "0:pass,1:fail"}},
            "spec": {"nodeName": simulated.nodes[0], "containers": [{
                "name": "app", "image": "nginx",
                "livenessProbe": {"tcpSocket": {"port": 80}, "periodSeconds": 1, "failureThreshold": 2}}]}}
    _create(api, namespace, body)
    status = harness.wait_for(lambda: (s := _container_status(api, namespace, "sick")).get("restartCount", 0) >= 1
                              and s, timeout=30, message="sick to restart")
    assert isinstance(status, dict) and status["lastState"]["terminated"]["exitCode"] == 137
    reasons = _reasons(api, namespace, "sick")
    assert ("Killing", "Container app failed liveness probe, will be restarted") in reasons
    assert any(r == "Unhealthy" and m.startswith("Liveness probe failed: dial tcp ") for r, m in reasons)


def test_simulated_startup_probe_gates_started(api: httpx.Client, simulated: KubeletSim, namespace: str) -> None:
    body = {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "starting", "annotations": {"kubesim.io/startup-probe": "0:fail,3:pass"}},
            "spec": {"nodeName": simulated.nodes[0], "containers": [{
                "name": "app", "image": "nginx",
                "startupProbe": {"exec": {"command": ["true"]}, "periodSeconds": 1, "failureThreshold": 10}}]}}
    _create(api, namespace, body)
    harness.wait_for(lambda: "running" in (_container_status(api, namespace, "starting").get("state") or {}),
                     timeout=20, message="starting to run")
    first = _container_status(api, namespace, "starting")
    assert (first["started"], first["ready"]) == (False, False)
    harness.wait_for(lambda: _container_status(api, namespace, "starting").get("ready"), timeout=20,
                     message="starting to be started and ready")
    assert _container_status(api, namespace, "starting")["started"] is True


SERVER = ("import http.server, os, sys, time\n"
          "time.sleep(2)\n"
          "class H(http.server.BaseHTTPRequestHandler):\n"
          "    def do_GET(self):\n"
          "        code = 200 if os.path.exists('healthy') else 500\n"
          "        self.send_response(code); self.send_header('Content-Length', '0'); self.end_headers()\n"
          "    def log_message(self, *args): pass\n"
          "http.server.HTTPServer(('127.0.0.1', int(sys.argv[1])), H).serve_forever()\n")


def test_process_probes_are_real(api: httpx.Client, processes: KubeletSim, namespace: str) -> None:
    port = procs.free_port()
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "probed"},
            "spec": {"nodeName": processes.nodes[0], "containers": [{
                "name": "app", "image": "python", "command": [sys.executable, "-c", SERVER, str(port)],
                "ports": [{"name": "http", "containerPort": port}],
                "startupProbe": {"tcpSocket": {"port": "http"}, "periodSeconds": 1, "failureThreshold": 20},
                "readinessProbe": {"httpGet": {"path": "/ready", "port": port}, "periodSeconds": 1,
                                   "failureThreshold": 1},
                "livenessProbe": {"exec": {"command": ["test", "-e", "alive"]}, "periodSeconds": 1,
                                  "failureThreshold": 3}}]}}
    _create(api, namespace, body)
    harness.wait_for(lambda: _container_status(api, namespace, "probed").get("started"), timeout=30,
                     message="the TCP startup probe to pass")
    assert _container_status(api, namespace, "probed")["ready"] is False
    # No 'alive' file: the exec liveness probe fails three times and the process is restarted.
    status = harness.wait_for(lambda: (s := _container_status(api, namespace, "probed")).get("restartCount", 0) >= 1
                              and s, timeout=40, message="the liveness probe to restart it")
    assert isinstance(status, dict)
    reasons = _reasons(api, namespace, "probed")
    assert ("Killing", "Container app failed liveness probe, will be restarted") in reasons
    assert ("Unhealthy", "Readiness probe failed: HTTP probe failed with statuscode: 500") in reasons
    assert any(r == "Unhealthy" and m.startswith("Liveness probe failed: ") for r, m in reasons)
