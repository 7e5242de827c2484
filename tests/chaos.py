"""Faults under load: a cluster run by ``kubesim up``, a steady load, and processes killed in turn.

The campaign of issue 16, shared by the short round in ``make test``
(``tests/e2e/test_faults_under_load.py``) and the long one in ``make chaos``:

- ``kubesim up`` runs the cluster and is its only supervisor: nothing is
  restarted by hand;
- the load: a ReplicationController scaled between its low and high replica
  counts, and Pods created and deleted at a steady rate;
- a Pod watch held from the start records every ``spec.nodeName`` each Pod
  ever had, so a Pod bound twice cannot go unseen;
- each fault (SIGKILL of a process found in ``processes.json``, or etcd
  stopped with SIGSTOP for a while) is followed by probes that time the
  recovery: until ``/readyz``, the first acknowledged write, the first
  binding and the first Pod Running;
- at the end: every create that was acknowledged and not deleted is still
  there, no Pod was bound twice, the RC converged with every Pod Running.

Bounded in time and requests; it talks only to 127.0.0.1, over HTTPS as the
admin of the kubeconfig ``kubesim up`` wrote (:func:`client`).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import orjson
import yaml

from kubesim import procs
from machinery.client.config import load_kubeconfig
from tests import harness

NS = "chaos"
#: The kubeconfig of each running campaign cluster, by its URL (see :func:`client`).
_KUBECONFIGS: dict[str, Path] = {}


def client(url: str, **kwargs: Any) -> httpx.Client:
    """An httpx client on the cluster at ``url`` as its admin (CA and client certificate of its kubeconfig)."""
    return httpx.Client(**load_kubeconfig(_KUBECONFIGS[url]).httpx_options(), **kwargs)


@dataclass
class Recovery:
    fault: str
    readyz: float | None = None
    first_write: float | None = None
    first_binding: float | None = None
    first_running: float | None = None

    def row(self) -> str:
        def f(v: float | None) -> str:
            return f"{v:6.1f}s" if v is not None else "      -"
        return f"{self.fault:<28} {f(self.readyz)} {f(self.first_write)} {f(self.first_binding)} {f(self.first_running)}"


@dataclass
class Report:
    recoveries: list[Recovery] = field(default_factory=list)
    creates_acknowledged: int = 0
    deletes_acknowledged: int = 0
    create_errors: dict[int, int] = field(default_factory=dict)
    lost: list[str] = field(default_factory=list)
    bound_twice: list[str] = field(default_factory=list)
    restarts: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def text(self) -> str:
        lines = ["", "faults under load: recovery after each fault (from the fault)",
                 f"{'FAULT':<28} {'READYZ':>7} {'WRITE':>7} {'BINDING':>7} {'RUNNING':>7}"]
        lines += [r.row() for r in self.recoveries]
        lines.append(f"creates acknowledged {self.creates_acknowledged}, deletes acknowledged "
                     f"{self.deletes_acknowledged}, create errors by code {self.create_errors}; lost "
                     f"{len(self.lost)}, bound twice {len(self.bound_twice)}; restarts by kubesim up {self.restarts}")
        lines += self.notes
        return "\n".join(lines)


def _profile(path: Path) -> Path:
    from importlib import resources
    profile = yaml.safe_load((resources.files("kubelet_sim") / "default-profile.yaml").read_text())
    profile["timings"].update(containerStartDelay="200ms", containerStartJitter="100ms")
    path.write_text(yaml.safe_dump(profile))
    return path


class Cluster:
    """``kubesim up`` in a subprocess, its output in a file, its children's pids in processes.json."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.data = workdir / "data"
        self.port, self.etcd_port = procs.free_port(), procs.free_port()
        self.out = workdir / "up.out"
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def start(self) -> None:
        _KUBECONFIGS[self.url] = self.data / "kubeconfig"
        with open(self.out, "wb") as sink:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "kubesim", "up", "--port", str(self.port), "--etcd-port", str(self.etcd_port),
                 "--data-dir", str(self.data), "--no-color", "--quiet",
                 "--node-profile", str(_profile(self.workdir / "nodes.yaml"))],
                stdout=sink, stderr=subprocess.STDOUT, start_new_session=True)
        harness.wait_for(lambda: "kubesim is up" in self.output() or self.proc.poll() is not None,  # type: ignore[union-attr]
                         timeout=120, message="kubesim up")
        assert "kubesim is up" in self.output(), self.output()

    def output(self) -> str:
        return self.out.read_text(errors="replace")

    def pids(self) -> dict[str, int]:
        try:
            return dict(json.loads((self.data / "processes.json").read_text()))
        except (OSError, ValueError):
            return {}

    def signal(self, name: str, sig: int) -> int:
        # A process killed a moment ago may still wait for kubesim up to restart it.
        harness.wait_for(lambda: name in self.pids(), timeout=60, message=f"{name} running")
        pid = self.pids()[name]
        os.kill(pid, sig)
        return pid

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)

    def restarts(self) -> dict[str, int]:
        out = self.output()
        return {name: out.count(f"kubesim: restarting {name}\n")
                for name in ("etcd", "apiserver", "controller-manager", "scheduler", "kubelet")}


def pod_body(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"load": "churn"}},
            "spec": {"containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "10m"}}}],
                     "terminationGracePeriodSeconds": 0}}


class Load:
    """Pods created and deleted at ``rate`` per second, and the RC scaled between ``low`` and ``high``."""

    def __init__(self, url: str, report: Report, *, rate: float, low: int, high: int) -> None:
        self.url, self.report, self.rate, self.low, self.high = url, report, rate, low, high
        self.live: dict[str, str] = {}   # name -> uid, created by us and not (acknowledged) deleted
        self.stopping = threading.Event()
        self.lock = threading.Lock()
        self.threads: list[threading.Thread] = []

    def start(self) -> None:
        for target in (self._churn, self._scale):
            t = threading.Thread(target=target, daemon=True, name=target.__name__)
            t.start()
            self.threads.append(t)

    def stop(self) -> None:
        self.stopping.set()
        for t in self.threads:
            t.join(30)

    def _churn(self) -> None:
        with client(self.url, timeout=10) as api:
            period = 1 / self.rate
            while not self.stopping.is_set():
                name = f"churn-{uuid.uuid4().hex[:8]}"
                try:
                    r = api.post(f"/api/v1/namespaces/{NS}/pods", json=pod_body(name))
                    if r.status_code == 201:
                        with self.lock:
                            self.report.creates_acknowledged += 1
                            self.live[name] = r.json()["metadata"]["uid"]
                    else:
                        self.report.create_errors[r.status_code] = self.report.create_errors.get(r.status_code, 0) + 1
                except httpx.HTTPError:
                    self.report.create_errors[0] = self.report.create_errors.get(0, 0) + 1
                with self.lock:
                    victims = list(self.live)[:-20] if len(self.live) > 20 else []
                for victim in victims[:2]:
                    with contextlib.suppress(httpx.HTTPError):
                        r = api.delete(f"/api/v1/namespaces/{NS}/pods/{victim}", params={"gracePeriodSeconds": "0"})
                        if r.status_code in (200, 404):
                            with self.lock:
                                self.live.pop(victim, None)
                                self.report.deletes_acknowledged += r.status_code == 200
                self.stopping.wait(period)

    def _scale(self) -> None:
        with client(self.url, timeout=10) as api:
            replicas = self.low
            while not self.stopping.wait(5):
                replicas = self.high if replicas == self.low else self.low
                with contextlib.suppress(httpx.HTTPError):
                    api.patch(f"/api/v1/namespaces/{NS}/replicationcontrollers/web/scale",
                              json={"spec": {"replicas": replicas}},
                              headers={"Content-Type": "application/merge-patch+json"})


class BindingWatch:
    """Every nodeName each Pod had, from a watch held (and resumed) from the start."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.nodes: dict[str, set[str]] = {}
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True, name="binding-watch")
        self.rv = ""
        self.relists = 0

    def start(self) -> None:
        with client(self.url, timeout=10) as api:
            listed = api.get(f"/api/v1/namespaces/{NS}/pods").json()
            self.rv = listed["metadata"]["resourceVersion"]
        self.thread.start()

    def _run(self) -> None:
        with client(self.url, timeout=httpx.Timeout(10, read=60)) as api:
            while not self.stopping.is_set():
                try:
                    with api.stream("GET", f"/api/v1/namespaces/{NS}/pods", params={
                            "watch": "true", "resourceVersion": self.rv, "allowWatchBookmarks": "true",
                            "timeoutSeconds": "30"}) as r:
                        for line in r.iter_lines():
                            if not line:
                                continue
                            ev = orjson.loads(line)
                            obj = ev["object"]
                            if ev["type"] == "ERROR":
                                # Only a 410 ends it; then a relist gives a new start (and the gap is
                                # covered by the final list's nodeNames).
                                self.relists += 1
                                listed = api.get(f"/api/v1/namespaces/{NS}/pods").json()
                                self.rv = listed["metadata"]["resourceVersion"]
                                break
                            self.rv = obj["metadata"]["resourceVersion"]
                            node = (obj.get("spec") or {}).get("nodeName")
                            if node:
                                self.nodes.setdefault(obj["metadata"]["uid"], set()).add(node)
                            if self.stopping.is_set():
                                return
                except (httpx.HTTPError, RuntimeError, KeyError):
                    self.stopping.wait(0.5)

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join(70)


def measure_recovery(url: str, fault: str, since: float, *, timeout: float = 120) -> Recovery:
    """Probe until the cluster answers /readyz, takes a write, binds a Pod and runs it again."""
    rec = Recovery(fault)
    deadline = since + timeout
    name = f"probe-{uuid.uuid4().hex[:8]}"
    with client(url, timeout=5) as api:
        while time.monotonic() < deadline and rec.readyz is None:
            with contextlib.suppress(httpx.HTTPError):
                if api.get("/readyz").status_code == 200:
                    rec.readyz = time.monotonic() - since
            time.sleep(0.05)
        while time.monotonic() < deadline and rec.first_write is None:
            with contextlib.suppress(httpx.HTTPError):
                if api.post(f"/api/v1/namespaces/{NS}/pods", json=pod_body(name)).status_code == 201:
                    rec.first_write = time.monotonic() - since
            time.sleep(0.05)
        while time.monotonic() < deadline and rec.first_running is None:
            with contextlib.suppress(httpx.HTTPError, ValueError):
                pod = api.get(f"/api/v1/namespaces/{NS}/pods/{name}").json()
                if rec.first_binding is None and (pod.get("spec") or {}).get("nodeName"):
                    rec.first_binding = time.monotonic() - since
                if (pod.get("status") or {}).get("phase") == "Running":
                    rec.first_running = time.monotonic() - since
            time.sleep(0.05)
        with contextlib.suppress(httpx.HTTPError):
            api.delete(f"/api/v1/namespaces/{NS}/pods/{name}", params={"gracePeriodSeconds": "0"})
    return rec


@contextlib.contextmanager
def campaign(workdir: Path, *, rate: float, low: int, high: int) -> Iterator[tuple[Cluster, Load, Report]]:
    report = Report()
    cluster = Cluster(workdir)
    cluster.start()
    try:
        with client(cluster.url, timeout=30) as api:
            assert api.post("/api/v1/namespaces", json={"metadata": {"name": NS}}).status_code == 201
            rc = {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "web"},
                  "spec": {"replicas": low, "selector": {"app": "web"}, "template": {
                      "metadata": {"labels": {"app": "web"}},
                      "spec": {"containers": [{"name": "c", "image": "nginx",
                                               "resources": {"requests": {"cpu": "10m"}}}]}}}}
            assert api.post(f"/api/v1/namespaces/{NS}/replicationcontrollers", json=rc).status_code == 201
        watch = BindingWatch(cluster.url)
        watch.start()
        load = Load(cluster.url, report, rate=rate, low=low, high=high)
        load.start()
        try:
            yield cluster, load, report
        finally:
            load.stop()
        settle(cluster, load, watch, report, high=high)
        watch.stop()
        report.bound_twice = [uid for uid, nodes in watch.nodes.items() if len(nodes) > 1]
        report.restarts = cluster.restarts()
    finally:
        cluster.stop()


def settle(cluster: Cluster, load: Load, watch: BindingWatch, report: Report, *, high: int) -> None:
    """After the load: the RC converges, every Pod runs, and every acknowledged create is still there."""
    with client(cluster.url, timeout=30) as api:
        r = api.patch(f"/api/v1/namespaces/{NS}/replicationcontrollers/web/scale", json={"spec": {"replicas": high}},
                      headers={"Content-Type": "application/merge-patch+json"})
        assert r.status_code == 200, r.text

        def converged() -> bool:
            rc = api.get(f"/api/v1/namespaces/{NS}/replicationcontrollers/web").json()
            pods = api.get(f"/api/v1/namespaces/{NS}/pods").json()["items"]
            running = all((p.get("status") or {}).get("phase") == "Running" for p in pods
                          if not p["metadata"].get("deletionTimestamp"))
            return (rc.get("status") or {}).get("readyReplicas") == high and running
        harness.wait_for(converged, timeout=180, interval=0.5, message="the RC to converge with every Pod Running")
        present = {p["metadata"]["name"]: p["metadata"]["uid"]
                   for p in api.get(f"/api/v1/namespaces/{NS}/pods").json()["items"]}
        report.lost = [name for name, uid in load.live.items() if present.get(name) != uid]
