"""The kubeconfig ``kubesim up`` writes, and how ``kubesim`` subcommands find their cluster.

The file is a standard kubeconfig (cluster ``kubesim``, user ``kubesim``,
context ``kubesim``), so kubectl, the official clients and kubesim's own
components all read it unchanged.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from machinery.client.config import load_kubeconfig


def kubeconfig_document(server: str, *, token: str | None = None) -> dict[str, Any]:
    user: dict[str, Any] = {"token": token} if token else {}
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "kubesim", "cluster": {"server": server}}],
        "users": [{"name": "kubesim", "user": user}],
        "contexts": [{"name": "kubesim", "context": {"cluster": "kubesim", "user": "kubesim",
                                                     "namespace": "default"}}],
        "current-context": "kubesim",
        "preferences": {},
    }


def write_kubeconfig(path: Path, server: str, *, token: str | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(yaml.safe_dump(kubeconfig_document(server, token=token), sort_keys=False))
    tmp.chmod(0o600)
    tmp.replace(path)
    return path


def find_server(explicit: str | None, data_dir: Path) -> str:
    """``--server`` if given, else ``$KUBECONFIG``'s current context, else the data dir's kubeconfig."""
    if explicit:
        return explicit
    env = os.environ.get("KUBECONFIG")
    if env:
        for part in env.split(os.pathsep):
            if part and Path(part).exists():
                return load_kubeconfig(part).server
    local = data_dir / "kubeconfig"
    if local.exists():
        return load_kubeconfig(local).server
    raise FileNotFoundError(
        f"no cluster found: pass --server URL, set KUBECONFIG, or run `kubesim up` (it writes {local})")
