"""``kubesim up``: run a whole cluster locally, as a supervisor would.

Starts etcd (unless ``--etcd-servers`` points at one that runs already), the
APIServer, then the components, each its own process logging to
``<data-dir>/logs/<name>.log``; follows those logs to the terminal, prefixed
and coloured per component; restarts a component that dies (saying so and
showing its last lines) without touching the others; and on Ctrl-C or
SIGTERM stops everything it started, in reverse order, by process id.

Single-threaded: one loop follows the logs and checks the children.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from kubesim import procs
from kubesim.kubeconfig import write_kubeconfig

_COLOURS = {"etcd": "\033[35m", "apiserver": "\033[36m", "controller-manager": "\033[33m",
            "scheduler": "\033[32m", "kubelet": "\033[34m"}
_RESET = "\033[0m"


@dataclass
class Child:
    proc: procs.ManagedProcess
    restart: bool = True
    position: int = 0
    restarts: int = 0
    last_restart: float = 0.0
    pending: str = field(default="")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--port", type=int, default=8080, help="APIServer port (default 8080)")
    p.add_argument("--etcd-port", type=int, default=2379, help="etcd client port (default 2379)")
    p.add_argument("--etcd-servers", default=None,
                   help="use this running etcd (comma-separated URLs) instead of starting one")
    p.add_argument("--data-dir", type=Path, default=Path(".kubesim"),
                   help="etcd data, kubeconfig and logs go here (default .kubesim)")
    p.add_argument("--nodes", type=int, default=None,
                   help="how many simulated nodes kubelet_sim runs (default: the node profile's, 3)")
    p.add_argument("--node-profile", type=Path, default=None,
                   help="a kubelet_sim node profile YAML (capacity, labels, taints, timings)")
    p.add_argument("--scheduler-config", type=Path, default=None,
                   help="a KubeSchedulerConfiguration file for the scheduler")
    p.add_argument("--apiserver-arg", action="append", default=[], metavar="FLAG",
                   help="an extra flag for the APIServer (repeatable), e.g. --apiserver-arg=--event-ttl=10m")
    p.add_argument("--no-color", action="store_true", help="do not colour the component prefixes")
    p.add_argument("--quiet", action="store_true", help="do not copy component logs to the terminal")


def component_commands(args: argparse.Namespace, master: str) -> list[tuple[str, str, list[str]]]:
    """(name, module, flags) of each component, in start order (``--health-port`` is added per run).

    docker-compose.yml starts the same programs with the same flags (a test checks it), plus
    the ones a container needs to be reached at its own address.
    """
    scheduler = [f"--config={args.scheduler_config}"] if args.scheduler_config else []
    kubelet = [f"--nodes={args.nodes}"] if args.nodes is not None else []
    if args.node_profile is not None:
        kubelet.append(f"--node-profile={args.node_profile}")
    return [
        ("controller-manager", "controller_manager", [f"--master={master}"]),
        ("scheduler", "scheduler", [f"--master={master}", *scheduler]),
        ("kubelet", "kubelet_sim", [f"--master={master}", *kubelet]),
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
            return f"{_COLOURS.get(name, '')}{tag}{_RESET}"
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

    def start(self, proc: procs.ManagedProcess, *, timeout: float = 60.0, restart: bool = True) -> Child:
        child = Child(proc, restart=restart)
        try:
            child.position = proc.log_path.stat().st_size
        except OSError:
            child.position = 0
        self.children.append(child)
        proc.start()
        proc.wait_ready(timeout)
        return child

    def check_children(self) -> None:
        for child in self.children:
            if child.proc.alive() or not child.restart or self.stopping:
                continue
            code = child.proc.proc.returncode if child.proc.proc else None
            self.follow_logs()
            self.say(f"kubesim: {child.proc.name} exited with code {code}; its last lines:")
            for line in procs.tail(child.proc.log_path, 10).splitlines():
                self.say(f"    {line}")
            # Back off when a component keeps dying, as a supervisor would.
            delay = min(2 ** min(child.restarts, 5), 30) if time.monotonic() - child.last_restart < 60 else 0
            if delay:
                self.say(f"kubesim: restarting {child.proc.name} in {delay}s")
                time.sleep(delay)
            child.restarts += 1
            child.last_restart = time.monotonic()
            self.say(f"kubesim: restarting {child.proc.name}")
            try:
                child.proc.start()
                child.proc.wait_ready(60)
            except procs.StartError as e:
                self.say(f"kubesim: {child.proc.name} did not come back: {e}")

    def stop_all(self) -> None:
        self.stopping = True
        for child in reversed(self.children):
            child.proc.stop()
        (self.data_dir / "components.json").unlink(missing_ok=True)
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
            if not procs.port_is_free(args.etcd_port):
                self.say(f"kubesim: port {args.etcd_port} is in use (another etcd?); pick another with "
                         "--etcd-port, or use it with --etcd-servers")
                return 2
            etcd = procs.etcd_process(self.data_dir / "etcd", client_port=args.etcd_port,
                                      log_path=self.logs / "etcd.log")
            self.say(f"kubesim: starting etcd on 127.0.0.1:{args.etcd_port} (data in {self.data_dir / 'etcd'})")
            self.start(etcd)
            etcd_servers = f"http://{procs.LOOPBACK}:{args.etcd_port}"
        api = procs.apiserver_process(etcd_servers, port=args.port, log_path=self.logs / "apiserver.log",
                                      extra_args=args.apiserver_arg)
        self.say(f"kubesim: starting the APIServer on http://{procs.LOOPBACK}:{args.port}")
        self.start(api)
        url = f"http://{procs.LOOPBACK}:{args.port}"
        kubeconfig = write_kubeconfig(self.data_dir / "kubeconfig", url)
        health_ports: dict[str, int] = {}
        for name, module, argv in component_commands(args, url):
            health = health_ports[name] = procs.free_port()
            self.say(f"kubesim: starting {name}")
            self.start(procs.python_module(
                module, [*argv, f"--health-port={health}"], name=name,
                log_path=self.logs / f"{name}.log", ready_url=f"http://{procs.LOOPBACK}:{health}/readyz"))
        # `kubesim status` checks these processes' health endpoints.
        (self.data_dir / "components.json").write_text(json.dumps(health_ports))
        self.say("")
        self.say(f"kubesim is up. API: {url}")
        self.say(f"kubeconfig: {kubeconfig}")
        self.say(f"  export KUBECONFIG={kubeconfig}")
        self.say("  kubectl get nodes")
        self.say("  kubectl get pods -A -o wide")
        self.say(f"  curl {url}/api/v1/namespaces/default/pods")
        self.say("Ctrl-C stops everything.")
        self.say("")
        while not self.stopping:
            self.follow_logs()
            self.check_children()
            time.sleep(0.2)
        return 0


def up(args: argparse.Namespace) -> int:
    sup = Supervisor(args)

    def on_signal(signum: int, _frame: object) -> None:
        sup.stopping = True

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    try:
        return sup.run()
    except procs.StartError as e:
        sup.say(f"kubesim: {e}")
        return 1
    finally:
        sup.say("kubesim: stopping")
        sup.stop_all()
        sup.say("kubesim: stopped")
