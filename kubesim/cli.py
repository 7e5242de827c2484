"""The ``kubesim`` command: run a local cluster and look inside it.

Each subcommand lives in its own module, which exports ``add_arguments(parser)``
and the function that runs it; :data:`COMMANDS` lists them with the texts
``--help`` shows, and is the only place a new subcommand is registered.

A command imports only its own subcommand's module: together they import the
APIServer's admission and audit code, the scheduler's framework, matplotlib and
the web page's server, two seconds of CPU that ``kubesim status`` (or a test
running ``kubesim snapshot``) has no use for.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final, cast


@dataclass(frozen=True)
class Command:
    """One subcommand: its name, the module whose functions add its flags and run it, and its texts."""

    name: str
    #: The module exporting ``add_arguments(parser)`` and the function :attr:`function` names.
    module: str
    function: str
    #: The line ``kubesim --help`` shows beside the name.
    help: str
    #: What ``kubesim NAME --help`` says above the flags.
    description: str

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        importlib.import_module(self.module).add_arguments(parser)

    @property
    def run(self) -> Callable[[argparse.Namespace], int]:
        return cast("Callable[[argparse.Namespace], int]", getattr(importlib.import_module(self.module),
                                                                  self.function))


COMMANDS: Final = (
    Command("up", "kubesim.up", "up",
            "start etcd, the APIServer and the components; Ctrl-C stops them",
            "Start a local kubesim cluster and supervise it until Ctrl-C."),
    Command("certs", "kubesim.certs_command", "main",
            "make a cluster's certificates, kubeconfigs and tokens",
            "Make (or complete) the CA, serving and client certificates, node tokens, kubeconfigs and audit "
            "policy of a cluster, as `kubesim up` does at start; docker-compose.yml runs it once."),
    Command("status", "kubesim.status", "main",
            "each component's health and the cluster's nodes and Pods",
            "Show each component's health and the nodes and Pods at a glance. Exits 1 when something is "
            "unhealthy."),
    Command("trace", "kubesim.trace", "main",
            "the 13 steps that brought one Pod to life",
            "Rebuild, from the API, the 13 steps of the flow for one Pod: who did what, when (since step 2) "
            "and at which resourceVersion."),
    Command("node", "kubesim.node", "main",
            "make a simulated node fail or recover",
            "Stop a simulated node's heartbeats and Pod updates (as if it lost its network), or start them "
            "again."),
    Command("ui", "kubesim.ui.__main__", "main",
            "serve the web page of a cluster",
            "Serve kubesim's web page of a live cluster (nodes, Pods, the scheduling queue, each Pod's 13 "
            "steps), for kubesim or any cluster a kubeconfig reaches."),
    Command("snapshot", "kubesim.studies.snapshot", "main",
            "save a cluster's objects to a file, or load them",
            "Save every object of any cluster as YAML (read-only), or recreate a saved snapshot on a kubesim "
            "cluster."),
    Command("record", "kubesim.studies.record", "main",
            "write every change of a cluster to a trace",
            "Watch every kind the cluster serves and write each change with its time (JSON lines, gzip when "
            "TRACE ends in .gz) until Ctrl-C or --duration. Read-only."),
    Command("replay", "kubesim.studies.replay", "main",
            "redo a trace's client actions on a cluster",
            "Re-create a recorded trace's client actions (creates, scales, deletes, nodes added and removed) "
            "at K times real speed, leaving the rest to the cluster's controllers, scheduler and kubelets."),
    Command("compare", "kubesim.studies.compare", "main",
            "replay one trace under several scheduler configurations",
            "Replay the same trace on fresh clusters, one per KubeSchedulerConfiguration, and report them side "
            "by side: scheduling over time, latency, preemptions, allocation spread, fragmentation, nodes used, "
            "and which plugins decided what differs."),
    Command("explain", "kubesim.studies.explain", "main",
            "why the scheduler put a Pod where it did (why not node X?)",
            "Print the scheduler's full per-node results of its latest decision about a Pod: rejected nodes by "
            "plugin and reason, scored nodes plugin by plugin; --node X answers why not X."),
    Command("scheduler", "kubesim.studies.schedconfig", "main",
            "the scheduler's configuration while it runs",
            "Get, set or reset the KubeSchedulerConfiguration the scheduler reloads from its ConfigMap."),
    Command("bench", "kubesim.bench.runner", "main",
            "run the benchmarks and print their figures",
            "Start throwaway clusters on free ports, run the scenarios, print one table and write a JSON file "
            "of results."),
)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole parser, or with ``only`` one whose other subcommands are listed but not imported."""
    p = argparse.ArgumentParser(prog="kubesim", description="kubesim: a Kubernetes control plane emulator.")
    sub = p.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        parser = sub.add_parser(command.name, help=command.help, description=command.description)
        if only is None or only == command.name:
            command.add_arguments(parser)
            parser.set_defaults(func=command.run)
    return p


def _chosen(argv: Sequence[str]) -> str:
    """The subcommand ``argv`` names ("" when none does: then argparse says what is wrong, or prints help)."""
    names = {command.name for command in COMMANDS}
    return next((arg for arg in argv if arg in names), "")


def main(argv: list[str] | None = None) -> int:
    args = build_parser(only=_chosen(sys.argv[1:] if argv is None else argv)).parse_args(argv)
    code: int = args.func(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
