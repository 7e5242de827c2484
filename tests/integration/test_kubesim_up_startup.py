"""`kubesim up` under start-up faults: a process killed while the others start, an etcd data dir left by a crash.

Each test runs ``kubesim up`` as a real process on free ports with its own data
directory, reads its output from a file, finds its children in
``<data-dir>/processes.json``, and stops it with SIGTERM (SIGKILL of its
process group if that fails), so nothing is left behind.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from kubesim import procs
from machinery.client.config import load_kubeconfig
from tests import harness

pytestmark = pytest.mark.integration


class Up:
    def __init__(self, data: Path, port: int, etcd_port: int, proc: subprocess.Popen[bytes], out: Path) -> None:
        self.data, self.port, self.etcd_port, self.proc, self.out = data, port, etcd_port, proc, out

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def client(self, **kwargs: Any) -> httpx.Client:
        """An httpx client as the admin, from the kubeconfig ``kubesim up`` wrote."""
        return httpx.Client(**load_kubeconfig(self.data / "kubeconfig").httpx_options(), **kwargs)

    def output(self) -> str:
        return self.out.read_text(errors="replace")

    def pids(self) -> dict[str, int]:
        try:
            return dict(json.loads((self.data / "processes.json").read_text()))
        except (OSError, ValueError):
            return {}


@contextlib.contextmanager
def kubesim_up(tmp_path: Path, *extra: str, data: Path | None = None) -> Iterator[Up]:
    port, etcd_port = procs.free_port(), procs.free_port()
    data = data or tmp_path / "data"
    out = tmp_path / "up.out"
    with open(out, "wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "kubesim", "up", "--port", str(port), "--etcd-port", str(etcd_port),
             "--data-dir", str(data), "--no-color", *extra],
            stdout=sink, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        yield Up(data, port, etcd_port, proc, out)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def test_the_apiserver_killed_as_soon_as_it_is_ready_is_restarted_and_up_finishes(tmp_path: Path) -> None:
    with kubesim_up(tmp_path) as up:
        harness.wait_for(lambda: procs.http_ok(f"{up.url}/readyz", timeout=0.2), timeout=60, interval=0.01,
                         message="the APIServer's first /readyz")
        first = up.pids()["apiserver"]
        # The components are still being started (or waited for) when the APIServer dies.
        _kill(first)
        harness.wait_for(lambda: "kubesim is up" in up.output(), timeout=120, message="kubesim up to finish")
        assert up.proc.poll() is None, up.output()
        assert up.pids()["apiserver"] != first
        out = up.output()
        assert "kubesim: apiserver exited with code -9" in out and "kubesim: restarting apiserver" in out
        with up.client(timeout=10) as api:
            harness.wait_for(lambda: len([n for n in api.get("/api/v1/nodes").json()["items"]
                                          if any(c["type"] == "Ready" and c["status"] == "True"
                                                 for c in n["status"]["conditions"])]) == 3,
                             timeout=60, message="three Ready nodes")
        assert (up.data / "components.json").exists()
        up.proc.send_signal(signal.SIGTERM)
        assert up.proc.wait(60) == 0


def test_a_component_killed_while_starting_is_restarted(tmp_path: Path) -> None:
    with kubesim_up(tmp_path) as up:
        pid = harness.wait_for(lambda: up.pids().get("kubelet"), timeout=90, interval=0.01,
                               message="the kubelet to be started")
        assert isinstance(pid, int)
        _kill(pid)
        harness.wait_for(lambda: "kubesim is up" in up.output(), timeout=120, message="kubesim up to finish")
        assert "kubesim: kubelet exited with code -9" in up.output()
        assert up.pids()["kubelet"] != pid


def _crashed_data_dir(tmp_path: Path) -> Path:
    """An etcd data dir with a few writes, its etcd killed with SIGKILL (as a crash would)."""
    data = tmp_path / "data"
    port = procs.free_port()
    etcd = procs.etcd_process(data / "etcd", client_port=port, log_path=tmp_path / "first-etcd.log")
    etcd.start().wait_ready(30)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}") as client:
            for _ in range(50):
                client.post("/v3/kv/put", json={"key": "a2V5", "value": "dmFsdWU="})
    finally:
        etcd.kill()
    return data


def _last_wal(data: Path) -> tuple[Path, int]:
    wal = max((data / "etcd" / "member" / "wal").glob("*.wal"))
    return wal, len(wal.read_bytes().rstrip(b"\0"))


def test_a_half_written_wal_from_a_crash_is_repaired(tmp_path: Path) -> None:
    data = _crashed_data_dir(tmp_path)
    wal, end = _last_wal(data)
    with open(wal, "r+b") as f:
        f.truncate(end - 37)  # the last record cut in the middle
    with kubesim_up(tmp_path, data=data) as up:
        harness.wait_for(lambda: "kubesim is up" in up.output() or up.proc.poll() is not None, timeout=120,
                         message="kubesim up to finish")
        assert "kubesim is up" in up.output(), up.output()


def test_a_damaged_wal_is_named_with_etcds_reason_and_what_to_do(tmp_path: Path) -> None:
    data = _crashed_data_dir(tmp_path)
    wal, end = _last_wal(data)
    raw = bytearray(wal.read_bytes())
    raw[end - 20:end] = bytes(20)  # a torn write: the last record's bytes zeroed
    wal.write_bytes(bytes(raw))
    with kubesim_up(tmp_path, data=data) as up:
        assert up.proc.wait(120) == 1
        out = up.output()
    assert "etcd exited" in out and "giving up" in out
    assert f"etcd cannot start from its data directory {data.resolve() / 'etcd'}" in out
    assert "proto: Record: illegal tag 0" in out
    assert "move it away" in out
    assert not (data / "processes.json").exists()
    shutil.rmtree(data)
