"""The ``kubesim`` command: run a local cluster and look inside it."""

from __future__ import annotations

import argparse
import sys

from kubesim import up
from kubesim.bench import runner as bench_runner


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="kubesim", description="kubesim: a Kubernetes control plane emulator.")
    sub = p.add_subparsers(dest="command", required=True)
    up_parser = sub.add_parser("up", help="start etcd, the APIServer and the components; Ctrl-C stops them",
                               description="Start a local kubesim cluster and supervise it until Ctrl-C.")
    up.add_arguments(up_parser)
    up_parser.set_defaults(func=up.up)
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
