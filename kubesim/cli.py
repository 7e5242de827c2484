"""The ``kubesim`` command: run a local cluster and look inside it."""

from __future__ import annotations

import argparse
import sys

from kubesim import node, status, trace, up
from kubesim.bench import runner as bench_runner


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="kubesim", description="kubesim: a Kubernetes control plane emulator.")
    sub = p.add_subparsers(dest="command", required=True)
    up_parser = sub.add_parser("up", help="start etcd, the APIServer and the components; Ctrl-C stops them",
                               description="Start a local kubesim cluster and supervise it until Ctrl-C.")
    up.add_arguments(up_parser)
    up_parser.set_defaults(func=up.up)
    status_parser = sub.add_parser("status", help="each component's health and the cluster's nodes and Pods",
                                   description="Show each component's health and the nodes and Pods at a "
                                               "glance. Exits 1 when something is unhealthy.")
    status.add_arguments(status_parser)
    status_parser.set_defaults(func=status.main)
    trace_parser = sub.add_parser("trace", help="the 13 steps that brought one Pod to life",
                                  description="Rebuild, from the API, the 13 steps of the flow for one Pod: "
                                              "who did what, when (since step 2) and at which resourceVersion.")
    trace.add_arguments(trace_parser)
    trace_parser.set_defaults(func=trace.main)
    node_parser = sub.add_parser("node", help="make a simulated node fail or recover",
                                 description="Stop a simulated node's heartbeats and Pod updates (as if it "
                                             "lost its network), or start them again.")
    node.add_arguments(node_parser)
    node_parser.set_defaults(func=node.main)
    bench_parser = sub.add_parser("bench", help="run the benchmarks and print their figures",
                                  description="Start throwaway clusters on free ports, run the scenarios, "
                                              "print one table and write a JSON file of results.")
    bench_runner.add_arguments(bench_parser)
    bench_parser.set_defaults(func=bench_runner.main)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    code: int = args.func(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
