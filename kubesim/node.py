"""``kubesim node stop NAME`` / ``kubesim node start NAME``: make a simulated node fail, and recover.

A stopped node stops renewing its Lease, reporting its status and updating
its Pods, so the node lifecycle controller marks it unreachable (NotReady,
``node.kubernetes.io/unreachable`` taint, and evictions after the toleration
period); ``start`` brings it back. The command asks the APIServer, as any
request to a kubelet goes: ``POST /api/v1/nodes/NAME/proxy/stop`` (or
``start``), which the APIServer authorizes (``create`` on ``nodes/proxy``) and
relays to the kubelet_sim process hosting the node (its
``daemonEndpoints.kubeletEndpoint`` port, over HTTPS, as the APIServer), which
serves ``/nodes/NAME/stop``.

The APIServer is the one of ``--kubeconfig``, else ``$KUBECONFIG``, else the
kubeconfig ``kubesim up`` writes (``.kubesim/kubeconfig``), else ``--server``.

Synchronous: a command run from a shell.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Final
from urllib.parse import quote

import httpx

from machinery.client.config import ClientConfig, ConfigError, config_from_flags

DEFAULT_KUBECONFIG: Final = Path(".kubesim") / "kubeconfig"
DEFAULT_SERVER: Final = "https://127.0.0.1:6443"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=("stop", "start"),
                        help="stop: the node stops its heartbeats and Pod updates; start: it recovers")
    parser.add_argument("name", help="the Node's name")
    parser.add_argument("--kubeconfig", metavar="FILE",
                        help=f"kubeconfig of the cluster (default: $KUBECONFIG, else {DEFAULT_KUBECONFIG})")
    parser.add_argument("--server", metavar="URL",
                        help="the APIServer's address when there is no kubeconfig "
                             f"(default: {DEFAULT_SERVER})")


def main(args: argparse.Namespace) -> int:
    try:
        config = _config(args.kubeconfig, args.server)
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    try:
        with httpx.Client(**config.httpx_options(), timeout=10.0) as api:
            response = api.post(f"/api/v1/nodes/{quote(args.name, safe='')}/proxy/{args.action}")
    except httpx.HTTPError as err:
        print(f"error: cannot reach the APIServer at {config.server}: {err}", file=sys.stderr)
        return 1
    if response.status_code != 200:
        print(f"error: {_message(response)}", file=sys.stderr)
        return 1
    print(f"node/{args.name} {'stopped' if args.action == 'stop' else 'started'}")
    return 0


def _message(response: httpx.Response) -> str:
    """What went wrong: the APIServer's Status message, else the kubelet's own words."""
    try:
        body: Any = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and body.get("kind") == "Status" and body.get("message"):
        return str(body["message"])
    return f"the kubelet answered {response.status_code}: {response.text.strip()}"


def _config(kubeconfig: str | None, server: str | None) -> ClientConfig:
    if kubeconfig is None and server is None and DEFAULT_KUBECONFIG.exists():
        kubeconfig = str(DEFAULT_KUBECONFIG)
    try:
        return config_from_flags(server, kubeconfig)
    except ConfigError:
        if kubeconfig is not None:
            raise
        return ClientConfig(server or DEFAULT_SERVER)
