"""Fresh clusters for studies: etcd, the APIServer and every component, on free loopback ports.

``kubesim compare`` runs each profile on its own cluster, started here the
way ``kubesim up`` starts one (the same programs and flags, through
:mod:`kubesim.procs`), with what a study needs on top: the scheduler's
configuration, ``--seed``, plugin modules and decision log, and kubelet_sim
with no nodes of its own (``--nodes=0 --adopt-nodes``): the nodes come from
the snapshot or the trace. The tests start their clusters with it too.

The cluster is secure as ``kubesim up``'s is (:mod:`kubesim.clusterfiles`:
HTTPS, each component under its own identity, the adopted nodes as the
study-only ``kubesim:node-adopter``); ``kubeconfig`` is the admin's.

Every process is stopped by its process id when the ``with`` block ends,
whatever happened in it. Synchronous: called from CLI code and tests.
"""

from __future__ import annotations

import contextlib
import ssl
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import httpx
import yaml

from kubesim import certs, clusterfiles, procs


@dataclass(frozen=True, slots=True)
class ClusterSpec:
    """What differs between the clusters of a study."""

    scheduler_config: Path | None = None
    seed: int | None = None
    plugin_modules: tuple[str, ...] = ()
    decisions_kept: int = 100
    #: Seconds a simulated container takes to start (kubelet_sim's containerStartDelay).
    container_start: str = "200ms"
    #: Nodes kubelet_sim registers from its own profile (0: only adopted ones).
    own_nodes: int = 0
    node_monitor_grace: str = "40s"


@dataclass
class StudyCluster:
    workdir: Path
    url: str
    kubeconfig: Path
    scheduler_health: int
    processes: list[procs.ManagedProcess] = field(default_factory=list)

    @property
    def scheduler_url(self) -> str:
        return f"http://{procs.LOOPBACK}:{self.scheduler_health}"

    def tls(self) -> ssl.SSLContext:
        """TLS as the admin: trusting the cluster CA, presenting the admin's client certificate."""
        pki = self.workdir / "pki"
        ctx = ssl.create_default_context(cafile=str(pki / "ca.crt"))
        ctx.load_cert_chain(str(pki / f"{certs.ADMIN.stem}.crt"), str(pki / f"{certs.ADMIN.stem}.key"))
        return ctx

    def client(self, **kwargs: Any) -> httpx.Client:
        """A synchronous httpx client on the APIServer as the admin."""
        return httpx.Client(base_url=self.url, verify=self.tls(), **kwargs)

    def process(self, name: str) -> procs.ManagedProcess:
        return next(p for p in self.processes if p.name == name)


def _node_profile(path: Path, spec: ClusterSpec) -> Path:
    profile = yaml.safe_load((resources.files("kubelet_sim") / "default-profile.yaml").read_text())
    profile["timings"].update(containerStartDelay=spec.container_start, containerStartJitter="0s")
    path.write_text(yaml.safe_dump(profile))
    return path


@contextlib.contextmanager
def cluster(spec: ClusterSpec = ClusterSpec(), *, workdir: Path | None = None,
            log: Sequence[str] = ()) -> Iterator[StudyCluster]:
    """A whole cluster on free ports, stopped (every process, by pid) when the block ends."""
    with contextlib.ExitStack() as stack:
        if workdir is None:
            workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="kubesim-study-")))
        logs = workdir / "logs"
        started: list[procs.ManagedProcess] = []

        def start(proc: procs.ManagedProcess, timeout: float = 60.0) -> procs.ManagedProcess:
            started.append(proc)
            stack.callback(proc.stop)
            proc.start()
            proc.wait_ready(timeout)
            return proc

        etcd_port = procs.free_port()
        start(procs.etcd_process(workdir / "etcd", client_port=etcd_port, log_path=logs / "etcd.log"))
        port = procs.free_port()
        url = f"https://{procs.LOOPBACK}:{port}"
        profile = _node_profile(workdir / "nodes.yaml", spec)
        files = clusterfiles.prepare(workdir, url, clusterfiles.node_names(spec.own_nodes, profile))
        start(procs.apiserver_process(f"http://{procs.LOOPBACK}:{etcd_port}", port=port,
                                      log_path=logs / "apiserver.log", extra_args=files.apiserver_flags()))
        kubeconfig = files.admin_kubeconfig
        health: dict[str, int] = {}

        def component(name: str, module: str, flags: list[str]) -> None:
            health[name] = procs.free_port()
            start(procs.python_module(module, [*files.component_flags(name), f"--health-port={health[name]}",
                                               *flags], name=name, log_path=logs / f"{name}.log",
                                      ready_url=f"http://{procs.LOOPBACK}:{health[name]}/readyz"))

        component("controller-manager", "controller_manager", [f"--node-monitor-grace-period={spec.node_monitor_grace}"])
        scheduler = [f"--decisions-kept={spec.decisions_kept}"]
        if spec.scheduler_config is not None:
            scheduler.append(f"--config={spec.scheduler_config}")
        if spec.seed is not None:
            scheduler.append(f"--seed={spec.seed}")
        scheduler += [f"--plugin-module={m}" for m in spec.plugin_modules]
        component("scheduler", "scheduler", scheduler)
        component("kubelet", "kubelet_sim", ["--adopt-nodes", f"--nodes={spec.own_nodes}",
                                             f"--node-profile={profile}"])
        yield StudyCluster(workdir, url, kubeconfig, health["scheduler"], started)
