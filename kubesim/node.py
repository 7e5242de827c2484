"""``kubesim node stop NAME`` / ``kubesim node start NAME``: make a simulated node fail, and recover.

A stopped node stops renewing its Lease, reporting its status and updating
its Pods, so the node lifecycle controller marks it unreachable (NotReady,
``node.kubernetes.io/unreachable`` taint, and evictions after the toleration
period); ``start`` brings it back. The command finds the kubelet_sim process
that hosts the node the way the APIServer's log proxy finds a kubelet: from
the Node's ``status.daemonEndpoints.kubeletEndpoint.Port`` on its InternalIP,
then ``POST /nodes/NAME/stop`` (or ``/start``) there.

The APIServer is the one of ``--kubeconfig``, else ``$KUBECONFIG``, else the
kubeconfig ``kubesim up`` writes (``.kubesim/kubeconfig``), else ``--server``.

Synchronous: a command run from a shell.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Final

import httpx

from machinery.client.config import ClientConfig, ConfigError, config_from_flags

DEFAULT_KUBECONFIG: Final = Path(".kubesim") / "kubeconfig"
DEFAULT_SERVER: Final = "http://127.0.0.1:8080"


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
        endpoint = _kubelet_endpoint(config, args.name)
        with httpx.Client(timeout=10.0) as http:
            response = http.post(f"{endpoint}/nodes/{args.name}/{args.action}")
    except _Failure as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    except httpx.HTTPError as err:
        print(f"error: cannot reach the kubelet of node {args.name}: {err}", file=sys.stderr)
        return 1
    if response.status_code != 200:
        print(f"error: the kubelet of node {args.name} answered {response.status_code}: "
              f"{response.text.strip()}", file=sys.stderr)
        return 1
    print(f"node/{args.name} {'stopped' if args.action == 'stop' else 'started'}")
    return 0


class _Failure(Exception):
    """A failure already worded for the user."""


def _config(kubeconfig: str | None, server: str | None) -> ClientConfig:
    if kubeconfig is None and server is None and DEFAULT_KUBECONFIG.exists():
        kubeconfig = str(DEFAULT_KUBECONFIG)
    try:
        return config_from_flags(server, kubeconfig)
    except ConfigError:
        if kubeconfig is not None:
            raise
        return ClientConfig(server or DEFAULT_SERVER)


def _kubelet_endpoint(config: ClientConfig, name: str) -> str:
    """``http://<InternalIP>:<kubelet port>`` of the node, read from its status."""
    headers = {"Authorization": f"Bearer {config.token}"} if config.token else {}
    try:
        with httpx.Client(base_url=config.server, headers=headers, timeout=10.0) as api:
            response = api.get(f"/api/v1/nodes/{name}")
    except httpx.HTTPError as err:
        raise _Failure(f"cannot reach the APIServer at {config.server}: {err}") from None
    if response.status_code == 404:
        raise _Failure(f'nodes "{name}" not found')
    if response.status_code != 200:
        raise _Failure(f"the APIServer answered {response.status_code}: {response.text.strip()}")
    status: dict[str, Any] = response.json().get("status") or {}
    port = ((status.get("daemonEndpoints") or {}).get("kubeletEndpoint") or {}).get("Port")
    addresses = status.get("addresses") or ()
    address = next((a.get("address") for a in addresses if a.get("type") == "InternalIP"), None)
    if not port or not address:
        raise _Failure(f"node {name} has no kubelet endpoint in its status: is it a kubelet_sim node?")
    return f"http://{address}:{port}"
