"""`kubesim up --etcd-members 3 --apiservers 2`: a cluster that keeps serving when an etcd member or an
APIServer is killed with SIGKILL, as a 3-member etcd behind two kube-apiserver replicas does."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import httpx
import pytest

from kubesim import procs
from tests import harness
from tests.integration.test_kubesim_up_startup import Up, kubesim_up

pytestmark = pytest.mark.integration


class Writer(threading.Thread):
    """Creates ConfigMaps one after another and records the longest time between two acknowledged ones."""

    def __init__(self, up: Up) -> None:
        super().__init__(daemon=True)
        self.up = up
        self.stop = threading.Event()
        self.acked: list[float] = []
        self.failures: list[str] = []

    def run(self) -> None:
        with self.up.client(timeout=15) as api:
            i = 0
            while not self.stop.is_set():
                try:
                    r = api.post("/api/v1/namespaces/default/configmaps",
                                 json={"metadata": {"name": f"w-{i}"}, "data": {"i": str(i)}})
                    if r.status_code == 201:
                        self.acked.append(time.monotonic())
                        i += 1
                    else:
                        self.failures.append(f"{r.status_code} {r.text[:200]}")
                except httpx.HTTPError as e:
                    self.failures.append(repr(e))
                time.sleep(0.05)

    def longest_gap(self, since: float) -> float:
        times = [since] + [t for t in self.acked if t >= since]
        return max(b - a for a, b in itertools.pairwise(times)) if len(times) > 1 else float("inf")


def _members_healthy(etcd_ports: list[int]) -> bool:
    etcdctl = str(Path(procs.find_etcd_binary()).with_name("etcdctl"))
    endpoints = ",".join(f"http://127.0.0.1:{p}" for p in etcd_ports)
    out = subprocess.run([etcdctl, f"--endpoints={endpoints}", "endpoint", "health", "-w", "json"],
                         capture_output=True, text=True, timeout=30, check=False)
    with contextlib.suppress(ValueError):
        return len(etcd_ports) == sum(1 for e in json.loads(out.stdout) if e.get("health"))
    return False


def test_three_etcd_members_and_two_apiservers_survive_the_loss_of_one_of_each(tmp_path: Path) -> None:
    with kubesim_up(tmp_path, "--etcd-members", "3", "--apiservers", "2", "--nodes", "2", "--ui-port", "0") as up:
        harness.wait_for(lambda: "kubesim is up" in up.output(), timeout=240, message="kubesim up to finish")
        pids = up.pids()
        assert {"etcd-1", "etcd-2", "etcd-3", "apiserver-1", "apiserver-2"} <= set(pids), pids
        etcd_ports = [up.etcd_port, up.etcd_port + 2, up.etcd_port + 4]
        assert _members_healthy(etcd_ports)
        with up.client(timeout=15) as api:
            harness.wait_for(lambda: len([n for n in api.get("/api/v1/nodes").json()["items"]
                                          if any(c["type"] == "Ready" and c["status"] == "True"
                                                 for c in n["status"]["conditions"])]) == 2,
                             timeout=90, message="two Ready nodes")
            writer = Writer(up)
            writer.start()
            try:
                harness.wait_for(lambda: len(writer.acked) >= 5, timeout=60, message="writes going through")
                for victim in ("etcd-1", "apiserver-1"):
                    before = up.pids()[victim]
                    killed_at = time.monotonic()
                    os.kill(before, signal.SIGKILL)
                    # The others serve on: writes are acknowledged within seconds, not after the restart.
                    harness.wait_for(lambda t=killed_at: len([a for a in writer.acked if a > t + 0.5]) >= 5,
                                     timeout=60, message=f"writes acknowledged after {victim} was killed")
                    harness.wait_for(lambda v=victim, b=before: up.pids().get(v) not in (None, b), timeout=60,
                                     message=f"{victim} restarted")
                    print(f"\n{victim} killed: longest gap between acknowledged writes "
                          f"{writer.longest_gap(killed_at - 1):.2f}s")
                harness.wait_for(lambda: _members_healthy(etcd_ports), timeout=90, message="etcd-1 back in")
            finally:
                writer.stop.set()
                writer.join(30)
            # Nothing acknowledged was lost, whichever APIServer and etcd member took it.
            names = {o["metadata"]["name"] for o in api.get("/api/v1/namespaces/default/configmaps").json()["items"]}
            assert {f"w-{i}" for i in range(len(writer.acked))} <= names
        # Each replica audits what it serves to its own file (HTTPS, as the admin of the kubeconfig). The kernel
        # spreads connections over the replicas listening by their addresses' hash (the restarted apiserver-1 only
        # once it listens again), so a few long-lived connections may all land on one: new ones reach both.
        def audited_by_both() -> bool:
            with up.client(timeout=15) as fresh:
                assert fresh.get("/api/v1/namespaces/default").status_code == 200
            return all(any(json.loads(line)["user"].get("username") == "kubernetes-admin"
                           for line in (up.data / "logs" / f"audit-{i}.log").read_bytes().splitlines())
                       for i in (1, 2))
        harness.wait_for(audited_by_both, timeout=60, interval=0.1, message="both replicas to audit an admin request")
        out = up.output()
        assert "kubesim: etcd-1 exited with code -9" in out and "kubesim: apiserver-1 exited with code -9" in out
        up.proc.send_signal(signal.SIGTERM)
        assert up.proc.wait(90) == 0
