"""``python -m kubesim.ui`` (and ``kubesim ui``): serve the web page of a cluster."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

import uvicorn

from kubesim.kubeconfig import find_server
from kubesim.ui.server import create_app
from machinery.client.config import ClientConfig, ConfigError, config_from_flags

DEFAULT_PORT = 8090


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--kubeconfig", metavar="FILE",
                   help="kubeconfig of the cluster (default: $KUBECONFIG, else <data-dir>/kubeconfig)")
    p.add_argument("--server", metavar="URL", help="the APIServer's URL, overriding the kubeconfig's")
    p.add_argument("--data-dir", type=Path, default=Path(".kubesim"),
                   help="kubesim up's data dir, where its kubeconfig is (default .kubesim)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port to serve the page on (default {DEFAULT_PORT})")
    p.add_argument("--bind-address", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--scheduler-url", metavar="URL",
                   help="the scheduler's health port (http://127.0.0.1:PORT), to show its queues; without it "
                        "the queue of each pending Pod is read from its PodScheduled condition")
    p.add_argument("--log-level", default="warning", choices=["debug", "info", "warning", "error"])


def client_config(args: argparse.Namespace) -> ClientConfig:
    if args.kubeconfig or not args.server:
        try:
            return config_from_flags(args.server, args.kubeconfig)
        except ConfigError:
            if args.kubeconfig:
                raise
    return ClientConfig(server=find_server(args.server, args.data_dir))


def main(args: argparse.Namespace) -> int:
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s ui %(levelname)s %(message)s")
    try:
        config = client_config(args)
    except (ConfigError, FileNotFoundError, ValueError) as err:
        print(f"kubesim ui: {err}", file=sys.stderr)
        return 2
    app = create_app(config, scheduler_url=args.scheduler_url)
    print(f"kubesim ui: http://{args.bind_address}:{args.port} (cluster {config.server})", file=sys.stderr,
          flush=True)
    uvicorn.run(app, host=args.bind_address, port=args.port, log_level=args.log_level, access_log=False,
                timeout_graceful_shutdown=2)
    return 0


def build_parser() -> argparse.ArgumentParser:
    """``python -m kubesim.ui``'s flags (docker-compose.yml's are checked against them)."""
    parser = argparse.ArgumentParser(prog="python -m kubesim.ui", description="Serve kubesim's web page of a "
                                     "live cluster (nodes, Pods, the scheduling queue, each Pod's 13 steps).")
    add_arguments(parser)
    return parser


if __name__ == "__main__":
    sys.exit(main(build_parser().parse_args()))
