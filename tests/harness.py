"""Real processes for tests: etcd, the APIServer, components, on free loopback ports.

Fixtures in ``tests/conftest.py`` build on these. Every process started here is
stopped by its process id when the fixture (or ``with`` block) ends, even when
the test fails.
"""

from __future__ import annotations

import contextlib
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kubesim import procs


@dataclass
class Etcd:
    process: procs.ManagedProcess
    port: int
    data_dir: Path

    @property
    def url(self) -> str:
        return f"http://{procs.LOOPBACK}:{self.port}"


@dataclass
class ApiServer:
    process: procs.ManagedProcess
    port: int

    @property
    def url(self) -> str:
        return f"http://{procs.LOOPBACK}:{self.port}"


@dataclass
class Cluster:
    """etcd plus one APIServer; ``components`` holds whatever else a test started."""

    etcd: Etcd
    apiserver: ApiServer
    workdir: Path
    components: list[procs.ManagedProcess] = field(default_factory=list)

    @property
    def url(self) -> str:
        return self.apiserver.url

    def start_component(self, module: str, args: Sequence[str], *, name: str | None = None,
                        ready_url: str | None = None, timeout: float = 30.0) -> procs.ManagedProcess:
        name = name or module
        proc = procs.python_module(module, list(args), name=name,
                                   log_path=self.workdir / "logs" / f"{name}-{len(self.components)}.log",
                                   ready_url=ready_url)
        self.components.append(proc)
        proc.start()
        proc.wait_ready(timeout)
        return proc

    def stop(self) -> None:
        for proc in reversed(self.components):
            proc.stop()
        self.apiserver.process.stop()
        self.etcd.process.stop()


def start_etcd(workdir: Path) -> Etcd:
    port = procs.free_port()
    proc = procs.etcd_process(workdir / "etcd", client_port=port, log_path=workdir / "logs" / "etcd.log")
    proc.start()
    try:
        proc.wait_ready(30)
    except Exception:
        proc.stop()
        raise
    return Etcd(proc, port, workdir / "etcd")


def start_apiserver(etcd_url: str, workdir: Path, extra_args: Sequence[str] = ()) -> ApiServer:
    port = procs.free_port()
    proc = procs.apiserver_process(etcd_url, port=port,
                                   log_path=workdir / "logs" / f"apiserver-{port}.log",
                                   extra_args=extra_args)
    proc.start()
    try:
        proc.wait_ready(30)
    except Exception:
        proc.stop()
        raise
    return ApiServer(proc, port)


@contextlib.contextmanager
def cluster(apiserver_args: Sequence[str] = (), workdir: Path | None = None) -> Iterator[Cluster]:
    """A fresh etcd and APIServer, stopped on exit."""
    with contextlib.ExitStack() as stack:
        if workdir is None:
            workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="kubesim-test-")))
        etcd = start_etcd(workdir)
        stack.callback(etcd.process.stop)
        api = start_apiserver(etcd.url, workdir, apiserver_args)
        c = Cluster(etcd, api, workdir)
        stack.callback(c.stop)
        yield c


def wait_for(predicate: Callable[[], object], timeout: float = 10.0, interval: float = 0.05,
             message: str = "condition") -> object:
    """Poll ``predicate`` until it returns something truthy, or fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    last: object = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {message} (last value: {last!r})")
