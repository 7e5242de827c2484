"""``kubesim up``: run a whole cluster locally, as a supervisor would.

Prepares the cluster's certificates, kubeconfigs, node tokens and audit
policy in the data dir (:mod:`kubesim.clusterfiles`), starts etcd (one member,
or ``--etcd-members N`` of one etcd cluster; none when ``--etcd-servers``
points at one that runs already), the APIServer (HTTPS, Node and RBAC
authorization, audit to ``<data-dir>/logs/audit.log``; or ``--apiservers N``
of them sharing one port, as replicas behind a load balancer), then the
components, each its own process under its own identity, logging to
``<data-dir>/logs/<name>.log``; follows those logs to the terminal, prefixed
and coloured per component; restarts a component that dies (saying so and
showing its last lines) without touching the others; and on Ctrl-C or
SIGTERM stops everything it started, in reverse order, by process id.

Supervision covers start-up too: from the moment a process is started, a
death is a restart (with backoff), never the end of ``up``, and waiting for one
process to be ready never stops the others from being watched. ``up`` gives up
only when one process crashes :data:`MAX_CRASHES` times within
:data:`CRASH_WINDOW` seconds, printing its last lines and what to do. The
process ids are kept in ``<data-dir>/processes.json``.

Single-threaded: one loop follows the logs and checks the children; it never
blocks on one of them.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from kubesim import clusterfiles, procs
from kubesim.clusterfiles import ClusterFiles
from machinery.process import positive_int_arg

_COLOURS = {"etcd": "\033[35m", "apiserver": "\033[36m", "controller-manager": "\033[33m",
            "scheduler": "\033[32m", "kubelet": "\033[34m", "metrics-server": "\033[37m"}
_RESET = "\033[0m"


#: A component that crashes this many times within :data:`CRASH_WINDOW` seconds makes ``up`` give up.
MAX_CRASHES = 5
CRASH_WINDOW = 120.0
#: How long a component may take to become ready before ``up`` says so (it keeps waiting).
READY_WARNING = 60.0


@dataclass
class Child:
    """One supervised process and where it is in its life: starting, ready, or waiting to be restarted."""

    proc: procs.ManagedProcess
    restart: bool = True
    position: int = 0
    restarts: int = 0
    pending: str = field(default="")
    ready: bool = False
    started_at: float = 0.0
    warned_slow: bool = False
    #: When a dead child is due to be started again (0: not waiting).
    restart_at: float = 0.0
    #: Monotonic times of its recent crashes, to tell a crash loop from a crash.
    crashes: list[float] = field(default_factory=list)


def etcd_fatal_error(log_tail: str) -> str:
    """The message and error of etcd's last fatal log line (it logs JSON), or "" when there is none."""
    for line in reversed(log_tail.splitlines()):
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and record.get("level") in ("fatal", "panic"):
            parts = [str(record[k]) for k in ("msg", "error") if record.get(k)]
            return ": ".join(parts)
    return ""


def default_apiservers() -> int:
    """One APIServer per 4 cores: the APIServer is about half of the control plane's CPU, and the
    scheduler, controller-manager, kubelet_sim and etcd need cores too."""
    return max(1, (os.cpu_count() or 1) // 4)


class GiveUp(Exception):
    """A component keeps crashing: ``up`` stops the cluster and says why."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--port", type=int, default=6443, help="APIServer HTTPS port (default 6443)")
    p.add_argument("--insecure-port", type=int, default=0, metavar="PORT",
                   help="also serve plain HTTP on 127.0.0.1:PORT with no authentication or authorization "
                        "(default 0: off; prefer `kubectl proxy`)")
    p.add_argument("--etcd-port", type=int, default=2379, help="etcd client port (default 2379)")
    p.add_argument("--etcd-servers", default=None,
                   help="use this running etcd (comma-separated URLs) instead of starting one")
    p.add_argument("--etcd-members", type=positive_int_arg, default=1, metavar="N",
                   help="run etcd as a cluster of N members (3 keeps serving when one dies); the first listens "
                        "on --etcd-port, the others on the ports after it, two apart (default 1)")
    p.add_argument("--apiservers", type=positive_int_arg, default=default_apiservers(), metavar="N",
                   help="run N APIServer processes on --port (SO_REUSEPORT), each with its own watch cache "
                        "over the one etcd, as kube-apiserver replicas behind a load balancer (default: "
                        f"one per 4 cores, at least 1; here {default_apiservers()})")
    p.add_argument("--data-dir", type=Path, default=Path(".kubesim"),
                   help="etcd data, kubeconfig and logs go here (default .kubesim)")
    p.add_argument("--nodes", type=int, default=None,
                   help="how many simulated nodes kubelet_sim runs (default: the node profile's, 3); 0 for none "
                        "but those a snapshot load or a replay adds")
    p.add_argument("--node-profile", type=Path, default=None,
                   help="a kubelet_sim node profile YAML (capacity, labels, taints, timings)")
    p.add_argument("--runtime", choices=("simulated", "process"), default="simulated",
                   help="what a container is: 'simulated' (no process; the default) or 'process' (each "
                        "container's command runs as a real, unsandboxed process on this host)")
    p.add_argument("--scheduler-config", type=Path, default=None,
                   help="a KubeSchedulerConfiguration file for the scheduler")
    p.add_argument("--scheduler-plugin-module", action="append", default=[], metavar="MODULE",
                   help="a Python module of out-of-tree scheduler plugins (repeatable), imported from the "
                        "current directory or the Python path, e.g. myplugins.spot")
    p.add_argument("--apiserver-arg", action="append", default=[], metavar="FLAG",
                   help="an extra flag for the APIServer (repeatable), e.g. --apiserver-arg=--event-ttl=10m")
    p.add_argument("--ui-port", type=int, default=8090,
                   help="port of the web page of the cluster (default 8090; 0: no web page)")
    p.add_argument("--no-color", action="store_true", help="do not colour the component prefixes")
    p.add_argument("--quiet", action="store_true", help="do not copy component logs to the terminal")


def component_commands(args: argparse.Namespace, files: ClusterFiles, metrics_port: int) -> list[tuple[str, str, list[str]]]:
    """(name, module, flags) of each component, in start order (``--health-port`` is added per run).

    Each gets its own kubeconfig (its identity). docker-compose.yml starts the same programs
    with the same flags (a test checks it), plus the ones a container needs to be reached at
    its own address.
    """
    scheduler = [f"--config={args.scheduler_config}"] if args.scheduler_config else []
    scheduler += [f"--plugin-module={m}" for m in args.scheduler_plugin_module]
    # Nodes that a snapshot load or a replay creates are simulated too (kubelet_sim.adopt).
    kubelet = ["--adopt-nodes"]
    if args.nodes is not None:
        kubelet.append(f"--nodes={args.nodes}")
    if args.node_profile is not None:
        kubelet.append(f"--node-profile={args.node_profile}")
    if getattr(args, "runtime", "simulated") != "simulated":
        kubelet += [f"--runtime={args.runtime}", f"--root-dir={Path(args.data_dir).resolve() / 'kubelet'}"]
    return [
        ("controller-manager", "controller_manager", files.component_flags("controller-manager")),
        ("scheduler", "scheduler", [*files.component_flags("scheduler"), *scheduler]),
        ("kubelet", "kubelet_sim", [*files.component_flags("kubelet"), *kubelet]),
        # metrics-server registers its APIService (and the Service's Endpoints) itself, as its manifest would.
        ("metrics-server", "metrics_server", [*files.component_flags("metrics-server"), f"--port={metrics_port}",
                                              "--register-apiservice"]),
    ]


class Supervisor:
    def __init__(self, args: argparse.Namespace, out: TextIO = sys.stdout) -> None:
        self.args = args
        self.out = out
        self.data_dir: Path = args.data_dir.resolve()
        self.logs = self.data_dir / "logs"
        self.children: list[Child] = []
        self.stopping = False
        self.colour = not args.no_color and out.isatty()

    # --- output ------------------------------------------------------------------------------

    def say(self, text: str) -> None:
        print(text, file=self.out, flush=True)

    def _prefix(self, name: str) -> str:
        tag = f"[{name}]"
        if self.colour:
            colour = next((c for k, c in _COLOURS.items() if name == k or name.startswith(f"{k}-")), "")
            return f"{colour}{tag}{_RESET}"
        return tag

    def follow_logs(self) -> None:
        for child in self.children:
            path = child.proc.log_path
            try:
                with open(path, "rb") as f:
                    f.seek(child.position)
                    data = f.read(1 << 20)
            except OSError:
                continue
            if not data:
                continue
            child.position += len(data)
            text = child.pending + data.decode("utf-8", "replace")
            lines = text.split("\n")
            child.pending = lines.pop()
            if not self.args.quiet:
                for line in lines:
                    if line.strip():
                        self.say(f"{self._prefix(child.proc.name)} {line}")

    # --- processes ---------------------------------------------------------------------------

    def start(self, proc: procs.ManagedProcess, *, restart: bool = True) -> Child:
        """Start ``proc`` under supervision; it becomes ready (or is restarted) in :meth:`supervise`."""
        child = Child(proc, restart=restart)
        try:
            child.position = proc.log_path.stat().st_size
        except OSError:
            child.position = 0
        self.children.append(child)
        self._launch(child)
        return child

    def _launch(self, child: Child) -> None:
        child.proc.start()
        child.ready = False
        child.warned_slow = False
        child.started_at = time.monotonic()
        child.restart_at = 0.0
        self._write_pids()

    def _write_pids(self) -> None:
        """``<data-dir>/processes.json``: the process id of every child, for people and tests to find them."""
        pids = {c.proc.name: c.proc.pid for c in self.children if c.proc.alive()}
        path = self.data_dir / "processes.json"
        with contextlib.suppress(OSError):
            # Written aside and renamed: a reader never sees a half-written file.
            (tmp := path.with_suffix(".json.tmp")).write_text(json.dumps(pids))
            os.replace(tmp, path)

    def supervise(self) -> None:
        """One pass: notice readiness, report and schedule restarts of dead children, restart those due.

        Never blocks: a child that is slow to start or waits to be restarted holds up nobody.
        Raises :class:`GiveUp` when a child crashed :data:`MAX_CRASHES` times within
        :data:`CRASH_WINDOW` seconds.
        """
        now = time.monotonic()
        for child in self.children:
            if self.stopping:
                return
            if child.restart_at:
                if now >= child.restart_at:
                    self.say(f"kubesim: restarting {child.proc.name}")
                    self._launch(child)
                continue
            if child.proc.alive():
                if not child.ready and (child.proc.ready_check is None or child.proc.ready_check()):
                    child.ready = True
                    if child.restarts:
                        self.say(f"kubesim: {child.proc.name} is ready again "
                                 f"({now - child.started_at:.1f}s after its restart)")
                elif not child.ready and not child.warned_slow and now - child.started_at > READY_WARNING:
                    child.warned_slow = True
                    self.say(f"kubesim: {child.proc.name} is not ready after {READY_WARNING:.0f}s; still "
                             f"waiting. Its last lines:")
                    for line in procs.tail(child.proc.log_path, 10).splitlines():
                        self.say(f"    {line}")
                continue
            if not child.restart:
                continue
            self._crashed(child, now)

    def _crashed(self, child: Child, now: float) -> None:
        code = child.proc.proc.returncode if child.proc.proc else None
        self.follow_logs()
        child.crashes = [t for t in child.crashes if now - t < CRASH_WINDOW] + [now]
        phase = "" if child.ready else " while starting"
        self.say(f"kubesim: {child.proc.name} exited with code {code}{phase}; its last lines:")
        last = procs.tail(child.proc.log_path, 10)
        for line in last.splitlines():
            self.say(f"    {line}")
        if len(child.crashes) >= MAX_CRASHES:
            raise GiveUp(f"{child.proc.name} exited {len(child.crashes)} times within {CRASH_WINDOW:.0f}s "
                         f"(last exit code {code}); giving up. Its last lines:\n{last}"
                         + self._advice(child, last))
        # Back off when a component keeps dying, as a supervisor would.
        delay = min(2 ** (len(child.crashes) - 1), 30) if len(child.crashes) > 1 else 0
        child.restarts += 1
        child.ready = False
        child.restart_at = now + delay
        if delay:
            self.say(f"kubesim: restarting {child.proc.name} in {delay}s")

    def _advice(self, child: Child, last: str) -> str:
        if not child.proc.name.startswith("etcd"):
            return ""
        reason = etcd_fatal_error(last)
        said = f" ({reason})" if reason else ""
        where = self.data_dir / ("etcd" if child.proc.name == "etcd" else f"etcd-cluster/{child.proc.name}")
        return (f"\netcd cannot start from its data directory {where}{said}. If it is left "
                "from a crashed run and damaged, move it away (or delete it, losing the cluster's state) and run "
                "kubesim up again.")

    def wait_ready(self, children: list[Child]) -> None:
        """Supervise (restarting what dies) until every one of ``children`` is ready, or a stop is asked."""
        while not self.stopping and not all(c.ready for c in children):
            self.follow_logs()
            self.supervise()
            time.sleep(0.1)

    def stop_all(self) -> None:
        self.stopping = True
        for child in reversed(self.children):
            child.proc.stop()
        (self.data_dir / "components.json").unlink(missing_ok=True)
        (self.data_dir / "processes.json").unlink(missing_ok=True)
        self.follow_logs()

    # --- the cluster ---------------------------------------------------------------------------

    def run(self) -> int:
        args = self.args
        self.logs.mkdir(parents=True, exist_ok=True)
        if not procs.port_is_free(args.port):
            self.say(f"kubesim: port {args.port} is in use; pick another with --port")
            return 2
        if args.etcd_servers:
            etcd_servers = args.etcd_servers
        else:
            ports = [args.etcd_port + 2 * i for i in range(args.etcd_members)]
            busy = [port for port in ports if not procs.port_is_free(port)]
            if busy:
                self.say(f"kubesim: port {busy[0]} is in use (another etcd?); pick another with "
                         "--etcd-port, or use it with --etcd-servers")
                return 2
            if args.etcd_members == 1:
                members = [procs.etcd_process(self.data_dir / "etcd", client_port=args.etcd_port,
                                              log_path=self.logs / "etcd.log")]
                self.say(f"kubesim: starting etcd on 127.0.0.1:{args.etcd_port} (data in {self.data_dir / 'etcd'})")
            else:
                members = procs.etcd_members(self.data_dir / "etcd-cluster", ports, log_dir=self.logs)
                self.say(f"kubesim: starting an etcd cluster of {len(members)} members on 127.0.0.1:"
                         f"{', '.join(map(str, ports))} (data in {self.data_dir / 'etcd-cluster'})")
            self.wait_ready([self.start(m) for m in members])
            etcd_servers = ",".join(f"http://{procs.LOOPBACK}:{port}" for port in ports)
        url = f"https://{procs.LOOPBACK}:{args.port}"
        files = clusterfiles.prepare(self.data_dir, url, clusterfiles.node_names(args.nodes, args.node_profile))
        kubeconfig = files.admin_kubeconfig
        if args.insecure_port:
            self.say(f"kubesim: warning: http://{procs.LOOPBACK}:{args.insecure_port} serves the API with no "
                     "authentication or authorization (--insecure-port)")
        # metrics-server keeps one port across restarts, so that its Endpoints stay right.
        metrics_port = procs.free_port()
        if args.runtime == "process":
            self.say("kubesim: warning: --runtime=process runs the commands of Pods on this host, as this user, "
                     "unsandboxed")
        self.wait_ready([self.start(api) for api in self._apiservers(etcd_servers, files)])
        health_ports: dict[str, int] = {}
        components = []
        for name, module, argv in component_commands(args, files, metrics_port):
            health = health_ports[name] = procs.free_port()
            self.say(f"kubesim: starting {name}")
            components.append(self.start(procs.python_module(
                module, [*argv, f"--health-port={health}"], name=name,
                log_path=self.logs / f"{name}.log", ready_url=f"http://{procs.LOOPBACK}:{health}/readyz")))
        # Everything started is supervised from here on: a process that dies while the others
        # start (the APIServer killed right after it answered /readyz) is restarted like any other.
        self.wait_ready(self.children)
        if self.stopping:
            return 0
        # `kubesim status` checks these processes' health endpoints.
        (self.data_dir / "components.json").write_text(json.dumps(health_ports))
        ui = self._start_ui(kubeconfig, health_ports)
        self.say("")
        self.say(f"kubesim is up. API: {url}")
        if ui:
            self.say(f"Web page: {ui}")
        self.say(f"kubeconfig: {kubeconfig}")
        self.say(f"  export KUBECONFIG={kubeconfig}")
        self.say("  kubectl get nodes")
        self.say("  kubectl get pods -A -o wide")
        self.say("  kubectl proxy &   # then: curl http://127.0.0.1:8001/api/v1/namespaces/default/pods")
        self.say("Ctrl-C stops everything.")
        self.say("")
        while not self.stopping:
            self.follow_logs()
            self.supervise()
            time.sleep(0.2)
        return 0

    def _apiservers(self, etcd_servers: str, files: ClusterFiles) -> list[procs.ManagedProcess]:
        """The APIServer, or ``--apiservers`` replicas on one port, each with the cluster's certificates."""
        args = self.args
        insecure = [f"--insecure-port={args.insecure_port}"] if args.insecure_port else []
        flags = [*files.apiserver_flags(), *insecure, *args.apiserver_arg]
        url = f"https://{procs.LOOPBACK}:{args.port}"
        if args.apiservers == 1:
            self.say(f"kubesim: starting the APIServer on {url} (certificates in {files.files.dir})")
            return [procs.apiserver_process(etcd_servers, port=args.port, log_path=self.logs / "apiserver.log",
                                            extra_args=flags)]
        self.say(f"kubesim: starting {args.apiservers} APIServers on {url} (certificates in {files.files.dir})")
        # Each replica audits to its own file (audit-N.log), as each kube-apiserver writes its own log: one
        # file would be rotated by several writers.
        return [procs.apiserver_process(etcd_servers, port=args.port, log_path=self.logs / f"apiserver-{i}.log",
                                        extra_args=["--reuse-port", *flags,
                                                    f"--audit-log-path={self.logs / f'audit-{i}.log'}"],
                                        name=f"apiserver-{i}")
                for i in range(1, args.apiservers + 1)]

    def _start_ui(self, kubeconfig: Path, health_ports: dict[str, int]) -> str | None:
        """The web page (``python -m kubesim.ui``), a client of the APIServer like the components."""
        port = self.args.ui_port
        if not port:
            return None
        if not procs.port_is_free(port):
            self.say(f"kubesim: port {port} is in use: no web page (pick another with --ui-port)")
            return None
        flags = [f"--kubeconfig={kubeconfig}", f"--port={port}"]
        if "scheduler" in health_ports:
            flags.append(f"--scheduler-url=http://{procs.LOOPBACK}:{health_ports['scheduler']}")
        self.say("kubesim: starting the web page")
        self.wait_ready([self.start(procs.python_module("kubesim.ui", flags, name="ui", log_path=self.logs / "ui.log",
                                                        ready_url=f"http://{procs.LOOPBACK}:{port}/readyz"))])
        return f"http://{procs.LOOPBACK}:{port}"


def up(args: argparse.Namespace) -> int:
    sup = Supervisor(args)

    def on_signal(signum: int, _frame: object) -> None:
        sup.stopping = True

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    try:
        return sup.run()
    except (procs.StartError, GiveUp) as e:
        sup.say(f"kubesim: {e}")
        return 1
    finally:
        sup.say("kubesim: stopping")
        sup.stop_all()
        sup.say("kubesim: stopped")
