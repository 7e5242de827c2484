"""``kubesim scheduler config get|set FILE|reset``: the scheduler's configuration at run time.

The scheduler takes the KubeSchedulerConfiguration in the ConfigMap
``kube-system/kubesim-scheduler-config`` (key ``config.yaml``) over its
``--config`` file while the ConfigMap exists, between two scheduling cycles
(:mod:`scheduler.reload`). ``set`` checks the file as the scheduler will
(every profile built, with ``--plugin-module`` plugins) and writes the
ConfigMap; ``get`` prints it; ``reset`` deletes it, so the scheduler goes back
to its file or the defaults. With ``--scheduler URL`` (its health port),
``get`` prints what the scheduler runs, from ``/debug/config``.

Synchronous: a command run from a shell.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import httpx

from kubesim.studies import api
from machinery.client import ConfigError
from scheduler.framework.runtime import FrameworkError
from scheduler.outoftree import PluginModuleError, load_registry
from scheduler.profile import ConfigError as SchedulerConfigError
from scheduler.profile import load_config
from scheduler.reload import CONFIGMAP_KEY, CONFIGMAP_NAME, CONFIGMAP_NAMESPACE
from scheduler.scheduler import check_profiles

_PATH = f"/api/v1/namespaces/{CONFIGMAP_NAMESPACE}/configmaps"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="what", required=True)
    config = sub.add_parser("config", help="get or set the scheduler's configuration while it runs",
                            description="Get, set or reset the KubeSchedulerConfiguration the scheduler "
                                        f"reloads from the ConfigMap {CONFIGMAP_NAMESPACE}/{CONFIGMAP_NAME}.")
    actions = config.add_subparsers(dest="action", required=True)
    get = actions.add_parser("get", help="print the configuration in the ConfigMap (or the scheduler's)")
    get.add_argument("--scheduler", metavar="URL", help="print what this scheduler runs (its /debug/config)")
    api.add_connection_flags(get)
    set_ = actions.add_parser("set", help="check FILE and put it in the ConfigMap: the scheduler takes it")
    set_.add_argument("file", type=Path, metavar="FILE", help="a KubeSchedulerConfiguration")
    set_.add_argument("--plugin-module", action="append", default=[], metavar="MODULE",
                      help="out-of-tree plugin modules the scheduler runs with, to check FILE against")
    api.add_connection_flags(set_)
    reset = actions.add_parser("reset", help="delete the ConfigMap: the scheduler goes back to its --config")
    api.add_connection_flags(reset)


def main(args: argparse.Namespace) -> int:
    try:
        config = api.connection(args.kubeconfig, args.server)
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    try:
        with httpx.Client(**config.httpx_options(), timeout=10) as client:
            if args.action == "get":
                return _get(client, args)
            if args.action == "set":
                return _set(client, args)
            response = client.delete(f"{_PATH}/{CONFIGMAP_NAME}")
            if response.status_code not in (200, 202, 404):
                print(f"error: {response.status_code} {response.text}", file=sys.stderr)
                return 1
            print(f"configmap/{CONFIGMAP_NAME} deleted: the scheduler goes back to its --config (or the defaults)")
            return 0
    except httpx.HTTPError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1


def _get(client: httpx.Client, args: argparse.Namespace) -> int:
    if args.scheduler:
        doc = httpx.get(f"{args.scheduler.rstrip('/')}/debug/config", timeout=10).json()
        print(f"# source: {doc['source']}")
        print(doc.get("text") or json.dumps(doc["profiles"], indent=2))
        return 0
    response = client.get(f"{_PATH}/{CONFIGMAP_NAME}")
    if response.status_code == 404:
        print(f"no ConfigMap {CONFIGMAP_NAMESPACE}/{CONFIGMAP_NAME}: the scheduler runs its --config file (or the "
              "defaults)", file=sys.stderr)
        return 1
    response.raise_for_status()
    print((response.json().get("data") or {}).get(CONFIGMAP_KEY, ""), end="")
    return 0


def _set(client: httpx.Client, args: argparse.Namespace) -> int:
    try:
        check_profiles(load_config(args.file), load_registry(args.plugin_module))
    except (SchedulerConfigError, FrameworkError, PluginModuleError) as err:
        print(f"error: {args.file}: {err}", file=sys.stderr)
        return 1
    body = {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": CONFIGMAP_NAME, "namespace": CONFIGMAP_NAMESPACE},
            "data": {CONFIGMAP_KEY: args.file.read_text()}}
    response = client.post(_PATH, json=body)
    if response.status_code == 409:
        response = client.patch(f"{_PATH}/{CONFIGMAP_NAME}", json={"data": body["data"]},
                                headers={"Content-Type": "application/merge-patch+json"})
    if response.status_code not in (200, 201):
        print(f"error: {response.status_code} {response.text}", file=sys.stderr)
        return 1
    print(f"configmap/{CONFIGMAP_NAME} set from {args.file}: the scheduler reloads it (its log says what changed)")
    return 0
