"""A throwaway cluster for one benchmark scenario: etcd, the APIServer and chosen components.

Each scenario starts its own, on free loopback ports in a temporary directory,
and stops every process by its pid when done, as the tests do. Peak RSS of each
process is sampled while the scenario runs.
"""

from __future__ import annotations

import contextlib
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kubesim import procs


def rss_bytes(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def cpu_seconds(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / 100.0
    except (OSError, IndexError, ValueError):
        return 0.0


@dataclass
class BenchCluster:
    workdir: Path
    etcd: procs.ManagedProcess
    etcd_url: str
    apiserver: procs.ManagedProcess
    url: str
    components: dict[str, procs.ManagedProcess] = field(default_factory=dict)
    peak_rss: dict[str, int] = field(default_factory=dict)
    _stop_sampling: threading.Event = field(default_factory=threading.Event)

    def processes(self) -> dict[str, procs.ManagedProcess]:
        return {"etcd": self.etcd, "apiserver": self.apiserver, **self.components}

    def start_component(self, name: str, module: str, args: Sequence[str], *, timeout: float = 120.0,
                        ready_url: str | None = None) -> procs.ManagedProcess:
        proc = procs.python_module(module, list(args), name=name, log_path=self.workdir / "logs" / f"{name}.log",
                                   ready_url=ready_url)
        self.components[name] = proc
        proc.start()
        proc.wait_ready(timeout)
        return proc

    def sample(self) -> None:
        for name, proc in self.processes().items():
            if proc.pid:
                self.peak_rss[name] = max(self.peak_rss.get(name, 0), rss_bytes(proc.pid))

    def cpu(self) -> dict[str, float]:
        return {name: cpu_seconds(p.pid) for name, p in self.processes().items() if p.pid}

    def _sampler(self) -> None:
        while not self._stop_sampling.wait(0.5):
            self.sample()


@contextlib.contextmanager
def cluster(apiserver_args: Sequence[str] = (), keep: Path | None = None) -> Iterator[BenchCluster]:
    with contextlib.ExitStack() as stack:
        workdir = keep or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="kubesim-bench-")))
        etcd_port = procs.free_port()
        etcd = procs.etcd_process(workdir / "etcd", client_port=etcd_port, log_path=workdir / "logs" / "etcd.log")
        etcd.start()
        stack.callback(etcd.stop)
        etcd.wait_ready(30)
        etcd_url = f"http://{procs.LOOPBACK}:{etcd_port}"
        port = procs.free_port()
        api = procs.apiserver_process(etcd_url, port=port, log_path=workdir / "logs" / "apiserver.log",
                                      extra_args=apiserver_args)
        api.start()
        stack.callback(api.stop)
        api.wait_ready(60)
        c = BenchCluster(workdir, etcd, etcd_url, api, f"http://{procs.LOOPBACK}:{port}")

        def stop_components() -> None:
            for proc in reversed(list(c.components.values())):
                proc.stop()
        stack.callback(stop_components)
        sampler = threading.Thread(target=c._sampler, name="rss-sampler", daemon=True)
        sampler.start()
        stack.callback(sampler.join, 5)
        stack.callback(c._stop_sampling.set)
        yield c


def wait_http(url: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if procs.http_ok(url):
            return
        time.sleep(0.1)
    raise procs.StartError(f"{url} did not answer within {timeout}s")
