"""``kubesim certs``: make a cluster's files ahead of time (docker-compose.yml's first-start step).

The same files ``kubesim up`` makes (:mod:`kubesim.clusterfiles`), for an
APIServer reached at ``--server`` under the names ``--host`` adds to its
serving certificate, and the nodes kubelet_sim will run.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from kubesim import clusterfiles


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data-dir", type=Path, default=Path(".kubesim"),
                   help="where the files go (default .kubesim): pki/, kubeconfigs, audit-policy.yaml")
    p.add_argument("--server", default="https://127.0.0.1:6443",
                   help="the APIServer URL the kubeconfigs name (default https://127.0.0.1:6443)")
    p.add_argument("--admin-server", default=None, metavar="URL",
                   help="the APIServer URL of the admin's kubeconfig, when users reach it elsewhere than the "
                        "components (compose: https://127.0.0.1:6443); default --server")
    p.add_argument("--host", action="append", default=[], metavar="NAME",
                   help="another name or address of the APIServer for its certificate (repeatable)")
    p.add_argument("--nodes", type=int, default=None, help="how many nodes kubelet_sim runs (default: the profile's)")
    p.add_argument("--node-profile", type=Path, default=None, help="kubelet_sim's node profile, if not the default")


def main(args: argparse.Namespace) -> int:
    files = clusterfiles.prepare(args.data_dir, args.server,
                                 clusterfiles.node_names(args.nodes, args.node_profile), hosts=args.host,
                                 admin_server=args.admin_server)
    print(f"certificates and keys in {files.files.dir}; kubeconfig {files.admin_kubeconfig}")
    return 0
