"""What a secure kubesim cluster keeps on disk, and the flags each program is started with to use it.

``kubeadm init`` writes certificates (its ``certs`` phase: :mod:`kubesim.certs`),
one kubeconfig per control-plane identity (its ``kubeconfig`` phase) and the
static Pod manifests that pass them to each component. ``kubesim up`` and
``kubesim certs`` (which docker-compose.yml runs once into a volume) do the same
into a data directory::

    <data-dir>/pki/...                    the CA, serving and client certificates, keys, node tokens
    <data-dir>/kubeconfig                 kubernetes-admin (system:masters): yours
    <data-dir>/scheduler.conf             system:kube-scheduler
    <data-dir>/controller-manager.conf    system:kube-controller-manager
    <data-dir>/kubelet.conf               the first simulated node, for kubelet_sim's shared watches
    <data-dir>/metrics-server.conf        system:serviceaccount:kube-system:metrics-server
    <data-dir>/node-adopter.conf          kubesim:node-adopter, the nodes kubelet_sim adopts (study-only)
    <data-dir>/audit-policy.yaml          every request at Metadata level
    <data-dir>/logs/audit.log             the audit log

Every file is readable by its owner only. :func:`prepare` makes what is
missing and rewrites the kubeconfigs (the server address may have changed);
:class:`ClusterFiles` gives each program its flags.

Synchronous: called from CLI code.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from apiserver.audit.policy import metadata_policy
from kubesim import certs
from kubesim.kubeconfig import write_kubeconfig
from machinery import pki


@dataclass(frozen=True, slots=True)
class ClusterFiles:
    data_dir: Path
    files: certs.ClusterPKI

    @property
    def admin_kubeconfig(self) -> Path:
        return self.data_dir / "kubeconfig"

    def kubeconfig(self, component: str) -> Path:
        """``scheduler``, ``controller-manager``, ``kubelet`` or ``metrics-server``."""
        return self.data_dir / f"{component}.conf"

    @property
    def audit_policy(self) -> Path:
        return self.data_dir / "audit-policy.yaml"

    @property
    def audit_log(self) -> Path:
        return self.data_dir / "logs" / "audit.log"

    def apiserver_flags(self) -> list[str]:
        return [*self.files.apiserver_flags(), f"--audit-policy-file={self.audit_policy}",
                f"--audit-log-path={self.audit_log}"]

    def component_flags(self, component: str, kubeconfig: Callable[[str], Path] | None = None) -> list[str]:
        """The flags that give a component (controller-manager, scheduler, kubelet, metrics-server) its identity.

        ``kubeconfig`` names the file of an identity (``admin`` or a component's) when they are not this
        directory's own (the tests copy them per APIServer)."""
        own = kubeconfig or (lambda identity: self.admin_kubeconfig if identity == "admin" else self.kubeconfig(identity))
        flags = [f"--kubeconfig={own(component)}"]
        if component == "controller-manager":
            # The CA the root CA publisher puts in every namespace's kube-root-ca.crt, as kubeadm gives it.
            flags += ["--use-service-account-credentials", f"--root-ca-file={self.files.ca_cert}"]
        if component == "kubelet":
            flags += [f"--node-tokens={self.files.tokens}",
                      f"--adopted-nodes-kubeconfig={own('node-adopter')}",
                      # kubeadm's kubelet configuration: only the APIServer's client certificate and tokens the
                      # APIServer vouches for get in, and the APIServer authorizes each request (nodes/proxy...).
                      f"--client-ca-file={self.files.ca_cert}", "--anonymous-auth=false",
                      "--authentication-token-webhook", "--authorization-mode=Webhook"]
        if component == "metrics-server":
            # Its manifest's objects (RBAC, Service, APIService) are written as an admin applies them; kubelets
            # serve self-signed certificates, as kubeadm's do, hence the flag every kubeadm user passes.
            flags += [f"--register-kubeconfig={own('admin')}", "--kubelet-insecure-tls"]
        return flags


def node_names(nodes: int | None, profile: Path | None) -> list[str]:
    """The names kubelet_sim will give its nodes (their tokens must exist before the APIServer starts)."""
    from kubelet_sim.profile import load_profile

    return [p.name for p in load_profile(profile).plan(nodes)]


def prepare(data_dir: Path, server: str, nodes: Sequence[str], *, hosts: Iterable[str] = (),
            admin_server: str | None = None) -> ClusterFiles:
    """Make the cluster's files for an APIServer at ``server`` and the ``nodes`` kubelet_sim runs.

    ``admin_server`` is where the admin's kubeconfig points, when users reach the
    APIServer at another address than the components do (compose's published port).
    """
    files = certs.ensure(data_dir / "pki", hosts=hosts)
    certs.write_node_tokens(files, nodes)
    out = ClusterFiles(data_dir, files)
    write_kubeconfig(out.admin_kubeconfig, admin_server or server, ca_file=files.ca_cert,
                     cert_file=files.client_cert(certs.ADMIN), key_file=files.client_key(certs.ADMIN))
    for component, identity in (("scheduler", certs.SCHEDULER), ("controller-manager", certs.CONTROLLER_MANAGER),
                                ("metrics-server", certs.METRICS_SERVER), ("node-adopter", certs.NODE_ADOPTER)):
        write_kubeconfig(out.kubeconfig(component), server, ca_file=files.ca_cert,
                         cert_file=files.client_cert(identity), key_file=files.client_key(identity))
    tokens = files.node_tokens()
    first = tokens.get(nodes[0]) if nodes else None
    if first is not None:
        write_kubeconfig(out.kubeconfig("kubelet"), server, ca_file=files.ca_cert, token=first)
    else:
        # No node of its own (``--nodes 0``: a study's adopted nodes only): the process watches as the adopter.
        write_kubeconfig(out.kubeconfig("kubelet"), server, ca_file=files.ca_cert,
                         cert_file=files.client_cert(certs.NODE_ADOPTER), key_file=files.client_key(certs.NODE_ADOPTER))
    (data_dir / "logs").mkdir(parents=True, exist_ok=True)
    pki.write_private(out.audit_policy, yaml.safe_dump(metadata_policy(), sort_keys=False).encode())
    return out
