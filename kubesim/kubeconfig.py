"""The kubeconfigs ``kubesim up`` writes, and how ``kubesim`` subcommands find their cluster.

Each file is a standard kubeconfig (cluster ``kubesim``, user ``kubesim``,
context ``kubesim``), so kubectl, the official clients and kubesim's own
components all read it unchanged. As kubeadm's ``admin.conf`` does, a
kubeconfig for an HTTPS server embeds the cluster CA
(``certificate-authority-data``) and the user's client certificate and key
(``client-certificate-data``, ``client-key-data``) or bearer token: the file
alone is enough to connect, and it is written readable by its owner only.
"""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any

import yaml

from machinery import pki
from machinery.client.config import ClientConfig, load_kubeconfig


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def kubeconfig_document(server: str, *, token: str | None = None, ca: bytes | None = None,
                        cert: bytes | None = None, key: bytes | None = None) -> dict[str, Any]:
    """A one-context kubeconfig; ``ca``, ``cert`` and ``key`` are PEM bytes to embed."""
    user: dict[str, Any] = {}
    if cert is not None and key is not None:
        user["client-certificate-data"] = _b64(cert)
        user["client-key-data"] = _b64(key)
    if token:
        user["token"] = token
    cluster: dict[str, Any] = {"server": server}
    if ca is not None:
        cluster["certificate-authority-data"] = _b64(ca)
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "kubesim", "cluster": cluster}],
        "users": [{"name": "kubesim", "user": user}],
        "contexts": [{"name": "kubesim", "context": {"cluster": "kubesim", "user": "kubesim",
                                                     "namespace": "default"}}],
        "current-context": "kubesim",
        "preferences": {},
    }


def write_kubeconfig(path: Path, server: str, *, token: str | None = None, ca_file: Path | None = None,
                     cert_file: Path | None = None, key_file: Path | None = None) -> Path:
    """Write a kubeconfig (0600) for ``server``, embedding the CA and client certificate files given."""
    doc = kubeconfig_document(server, token=token, ca=ca_file.read_bytes() if ca_file else None,
                              cert=cert_file.read_bytes() if cert_file else None,
                              key=key_file.read_bytes() if key_file else None)
    return pki.write_private(path, yaml.safe_dump(doc, sort_keys=False).encode())


def find_config(explicit_server: str | None, data_dir: Path) -> ClientConfig:
    """Where the cluster is and how to reach it.

    ``$KUBECONFIG``'s current context, else the data dir's kubeconfig (``--server``,
    when given, replaces the server but keeps the credentials); a bare ``--server``
    without either file connects with no credentials.
    """
    env = os.environ.get("KUBECONFIG")
    candidates = [Path(p) for p in env.split(os.pathsep) if p] if env else []
    candidates.append(data_dir / "kubeconfig")
    for path in candidates:
        if path.exists():
            loaded = load_kubeconfig(path)
            return loaded.with_server(explicit_server) if explicit_server else loaded
    if explicit_server:
        return ClientConfig(server=explicit_server)
    raise FileNotFoundError(f"no cluster found: pass --server URL, set KUBECONFIG, or run `kubesim up` "
                            f"(it writes {data_dir / 'kubeconfig'})")


def find_server(explicit: str | None, data_dir: Path) -> str:
    """The server URL :func:`find_config` finds."""
    return find_config(explicit, data_dir).server
