"""A throwaway cluster for one benchmark scenario: etcd, the APIServer(s) and chosen components.

With several APIServers (``apiservers=N``), each has its own port, as replicas on
several machines would, so that each one's /metrics can be read; components are
spread over them (:meth:`BenchCluster.url_for`).

Each scenario starts its own, on free loopback ports in a temporary directory,
and stops every process by its pid when done, as the tests do. Peak RSS of each
process is sampled while the scenario runs.

The cluster is secure as ``kubesim up`` makes it (HTTPS, client certificates,
node tokens, Node and RBAC authorization; audit is left off, so that what is
measured is the API): :attr:`BenchCluster.url` is an
:class:`~kubesim.bench.rawhttp.Endpoint` that connects as the admin, and
components get their own identities from :meth:`BenchCluster.component_flags`.
With ``insecure_port`` the APIServer also serves ``--insecure-port`` (plain
HTTP, no authentication or authorization) at :attr:`BenchCluster.insecure_url`,
for the figures that compare the two in one run.
"""

from __future__ import annotations

import contextlib
import functools
import ssl
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kubesim import certs, clusterfiles, procs
from kubesim.bench.rawhttp import Endpoint
from kubesim.clusterfiles import ClusterFiles
from machinery.client.config import ClientConfig, load_kubeconfig

#: The nodes every bench APIServer has tokens for (kubelet_sim's names with ``--nodes N``, up to KWOK's 5,000).
BENCH_NODES = 5_000


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


def tls_for(files: ClusterFiles, identity: certs.Identity = certs.ADMIN) -> ssl.SSLContext:
    """TLS trusting the cluster CA and presenting ``identity``'s client certificate."""
    ctx = ssl.create_default_context(cafile=str(files.files.ca_cert))
    ctx.load_cert_chain(str(files.files.client_cert(identity)), str(files.files.client_key(identity)))
    return ctx


@dataclass
class BenchCluster:
    workdir: Path
    etcd: procs.ManagedProcess
    etcd_url: str
    #: The APIServers, by process name ("apiserver", or "apiserver-1", "apiserver-2"...), and their URLs
    #: (each reached as the admin).
    apiservers: dict[str, procs.ManagedProcess]
    urls: list[Endpoint]
    files: ClusterFiles
    #: The first APIServer's ``--insecure-port`` URL, when asked for.
    insecure_url: str | None = None
    components: dict[str, procs.ManagedProcess] = field(default_factory=dict)
    peak_rss: dict[str, int] = field(default_factory=dict)
    _stop_sampling: threading.Event = field(default_factory=threading.Event)

    @property
    def url(self) -> Endpoint:
        """The first APIServer's URL, which the benchmark's own clients use (as the admin)."""
        return self.urls[0]

    def url_for(self, index: int) -> Endpoint:
        """The APIServer the ``index``-th component talks to: round robin over them."""
        return self.urls[index % len(self.urls)]

    def component_flags(self, component: str) -> list[str]:
        """``--kubeconfig`` (and the rest) that make ``scheduler``, ``controller-manager`` or ``kubelet`` itself."""
        return self.files.component_flags(component)

    def config(self, identity: str = "admin") -> ClientConfig:
        """The typed client's settings, as the admin or a component."""
        return load_kubeconfig(self.files.admin_kubeconfig if identity == "admin" else self.files.kubeconfig(identity))

    def endpoint(self, identity: certs.Identity) -> Endpoint:
        """The first APIServer's URL reached as ``identity`` (one of the cluster's client certificates)."""
        return Endpoint(str(self.url), tls_for(self.files, identity))

    def processes(self) -> dict[str, procs.ManagedProcess]:
        return {"etcd": self.etcd, **self.apiservers, **self.components}

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


@functools.cache
def _node_names() -> tuple[str, ...]:
    return tuple(f"node-{i}" for i in range(1, BENCH_NODES + 1))


@contextlib.contextmanager
def cluster(apiserver_args: Sequence[str] = (), keep: Path | None = None, *, apiservers: int = 1,
            service_accounts: bool = False, insecure_port: bool = False,
            extra_clients: Sequence[certs.Identity] = ()) -> Iterator[BenchCluster]:
    """etcd and ``apiservers`` secure APIServers; ServiceAccount admission only with ``service_accounts`` (a
    controller-manager whose ServiceAccount controller makes each namespace's ``default``); the first one
    also serves ``--insecure-port`` with ``insecure_port``; ``extra_clients`` get client certificates."""
    if not service_accounts:
        apiserver_args = ["--disable-admission-plugins=ServiceAccount", *apiserver_args]
    with contextlib.ExitStack() as stack:
        workdir = keep or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="kubesim-bench-")))
        etcd_port = procs.free_port()
        etcd = procs.etcd_process(workdir / "etcd", client_port=etcd_port, log_path=workdir / "logs" / "etcd.log")
        etcd.start()
        stack.callback(etcd.stop)
        etcd.wait_ready(30)
        etcd_url = f"http://{procs.LOOPBACK}:{etcd_port}"
        ports = [procs.free_port() for _ in range(apiservers)]
        url = f"https://{procs.LOOPBACK}:{ports[0]}"
        if extra_clients:
            certs.ensure(workdir / "pki", extra_clients=extra_clients)
        files = clusterfiles.prepare(workdir, url, _node_names())
        insecure = procs.free_port() if insecure_port else None
        started: dict[str, procs.ManagedProcess] = {}
        for i, port in enumerate(ports, 1):
            name = "apiserver" if apiservers == 1 else f"apiserver-{i}"
            flags = [*files.files.apiserver_flags(), *([f"--insecure-port={insecure}"] if insecure and i == 1 else [])]
            api = procs.apiserver_process(etcd_url, port=port, log_path=workdir / "logs" / f"{name}.log",
                                          extra_args=[*flags, *apiserver_args], name=name)
            api.start()
            stack.callback(api.stop)
            started[name] = api
        for api in started.values():
            api.wait_ready(60)
        admin = tls_for(files)
        c = BenchCluster(workdir, etcd, etcd_url, started, [Endpoint(f"https://{procs.LOOPBACK}:{port}", admin)
                                                             for port in ports],
                         files, f"http://{procs.LOOPBACK}:{insecure}" if insecure else None)

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
