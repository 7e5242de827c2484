"""A cluster's certificates, keys and tokens, laid out as ``kubeadm init phase certs`` lays them out.

``kubesim up`` (and ``kubesim certs``, which docker-compose.yml runs once into a
volume) keeps them in ``<data-dir>/pki/``, each file readable by its owner only:

- ``ca.crt``/``ca.key``: the cluster CA (``--client-ca-file``; every kubeconfig trusts it);
- ``apiserver.crt``/``.key``: the serving certificate, for 127.0.0.1, localhost, the
  ``kubernetes`` Service's names and address, and any ``--host`` given (compose's service name);
- ``sa.key``/``sa.pub``: the ServiceAccount token signing key pair;
- ``<identity>.crt``/``.key``: a client certificate per control-plane identity
  (``admin``: ``kubernetes-admin`` in ``system:masters``; ``kube-scheduler``;
  ``kube-controller-manager``; ``metrics-server``: the ServiceAccount
  ``system:serviceaccount:kube-system:metrics-server``; ``apiserver-kubelet-client``:
  ``kube-apiserver-kubelet-client`` in ``system:masters``, what the APIServer presents to kubelets),
  CN the user and O the groups, as Kubernetes reads them;
- ``tokens.csv``: kube-apiserver's ``--token-auth-file`` with one token per simulated node
  (user ``system:node:<name>``, group ``system:nodes``), which kubelet_sim reads too.

Why the nodes have tokens and not certificates: kubelet_sim runs thousands of
kubelets in one process over one shared pool of connections. A client
certificate identifies a whole TLS connection, so 5,000 nodes with certificates
would need 5,000 connections and handshakes; a bearer token identifies one
request, so every node keeps its own identity (``system:node:<name>``, which
the Node authorizer and NodeRestriction read exactly as they read a
certificate's) over the shared pool, and making 5,000 of them costs a few
milliseconds.

What exists is kept (the CA outlives restarts, so kubeconfigs stay valid); what
is missing, or a serving certificate that lacks a requested host, is made.
Node tokens already issued keep their value. Synchronous: called from CLI code.
"""

from __future__ import annotations

import csv
import io
import secrets
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from cryptography import x509

from machinery import pki

#: The ServiceAccount issuer kube-apiserver is configured with by kubeadm (and its default audience).
SERVICE_ACCOUNT_ISSUER: Final = "https://kubernetes.default.svc.cluster.local"
#: Hosts every serving certificate names: loopback and the ``kubernetes`` Service (10.96.0.1).
DEFAULT_HOSTS: Final = ("127.0.0.1", "localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
                        "kubernetes.default.svc.cluster.local", "10.96.0.1")
NODES_GROUP: Final = "system:nodes"


@dataclass(frozen=True, slots=True)
class Identity:
    """A control-plane client: its files' stem, its user name (CN) and groups (O)."""

    stem: str
    user: str
    groups: tuple[str, ...] = ()


ADMIN: Final = Identity("admin", "kubernetes-admin", ("system:masters",))
SCHEDULER: Final = Identity("kube-scheduler", "system:kube-scheduler")
CONTROLLER_MANAGER: Final = Identity("kube-controller-manager", "system:kube-controller-manager")
#: metrics-server acts as the ServiceAccount its manifest binds ``system:metrics-server`` to; it is a process,
#: not a Pod, so it holds a client certificate naming that ServiceAccount instead of a projected token.
METRICS_SERVER: Final = Identity("metrics-server", "system:serviceaccount:kube-system:metrics-server",
                                 ("system:serviceaccounts", "system:serviceaccounts:kube-system"))
#: Study-only: the one identity of every node kubelet_sim adopts (``--adopted-nodes-kubeconfig``), bound to
#: ``system:node`` by kubesim's default policy; adopted nodes are created at run time and have no token.
NODE_ADOPTER: Final = Identity("node-adopter", "kubesim:node-adopter", ("kubesim:node-adopters",))
#: What the APIServer presents to kubelets (kubeadm's ``apiserver-kubelet-client``).
APISERVER_KUBELET_CLIENT: Final = Identity("apiserver-kubelet-client", "kube-apiserver-kubelet-client",
                                           ("system:masters",))
CONTROL_PLANE: Final = (ADMIN, SCHEDULER, CONTROLLER_MANAGER, METRICS_SERVER, NODE_ADOPTER, APISERVER_KUBELET_CLIENT)


def node_user(name: str) -> str:
    return f"system:node:{name}"


@dataclass(frozen=True, slots=True)
class ClusterPKI:
    """Paths of one cluster's files (see the module docstring)."""

    dir: Path

    @property
    def ca_cert(self) -> Path:
        return self.dir / "ca.crt"

    @property
    def ca_key(self) -> Path:
        return self.dir / "ca.key"

    @property
    def serving_cert(self) -> Path:
        return self.dir / "apiserver.crt"

    @property
    def serving_key(self) -> Path:
        return self.dir / "apiserver.key"

    @property
    def sa_key(self) -> Path:
        return self.dir / "sa.key"

    @property
    def sa_pub(self) -> Path:
        return self.dir / "sa.pub"

    @property
    def tokens(self) -> Path:
        return self.dir / "tokens.csv"

    def client_cert(self, identity: Identity) -> Path:
        return self.dir / f"{identity.stem}.crt"

    def client_key(self, identity: Identity) -> Path:
        return self.dir / f"{identity.stem}.key"

    def apiserver_flags(self) -> list[str]:
        """The APIServer flags that use these files (kubeadm's kube-apiserver manifest, in short)."""
        return [f"--tls-cert-file={self.serving_cert}", f"--tls-private-key-file={self.serving_key}",
                f"--client-ca-file={self.ca_cert}", f"--service-account-key-file={self.sa_pub}",
                f"--service-account-signing-key-file={self.sa_key}",
                f"--service-account-issuer={SERVICE_ACCOUNT_ISSUER}", f"--token-auth-file={self.tokens}",
                f"--kubelet-client-certificate={self.client_cert(APISERVER_KUBELET_CLIENT)}",
                f"--kubelet-client-key={self.client_key(APISERVER_KUBELET_CLIENT)}"]

    def node_tokens(self) -> dict[str, str]:
        """Node name -> token, from ``tokens.csv``."""
        return {user.removeprefix("system:node:"): token for token, user in _read_tokens(self.tokens)
                if user.startswith("system:node:")}


def ensure(directory: Path, *, hosts: Iterable[str] = (), identities: Sequence[Identity] = CONTROL_PLANE,
           extra_clients: Sequence[Identity] = ()) -> ClusterPKI:
    """Make whatever of the cluster's files is missing in ``directory``; return their paths."""
    files = ClusterPKI(directory)
    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(0o700)
    if files.ca_cert.exists() and files.ca_key.exists():
        ca_cert, ca_key = pki.load_cert(files.ca_cert), pki.load_key(files.ca_key)
    else:
        ca_cert, ca_key = pki.new_ca("kubernetes")
        pki.write_private(files.ca_key, pki.key_pem(ca_key))
        pki.write_private(files.ca_cert, pki.cert_pem(ca_cert))
    wanted = list(dict.fromkeys([*DEFAULT_HOSTS, *hosts]))
    if not _serves(files.serving_cert, wanted, ca_cert):
        dns, ips = pki.split_hosts(wanted)
        cert, key = pki.sign(ca_cert, ca_key, common_name="kube-apiserver", dns_names=dns, ips=ips, server=True)
        pki.write_private(files.serving_key, pki.key_pem(key))
        pki.write_private(files.serving_cert, pki.cert_pem(cert))
    if not (files.sa_key.exists() and files.sa_pub.exists()):
        sa = pki.new_rsa_key()
        pki.write_private(files.sa_key, pki.key_pem(sa))
        pki.write_private(files.sa_pub, pki.public_key_pem(sa))
    for identity in (*identities, *extra_clients):
        if not (files.client_cert(identity).exists() and files.client_key(identity).exists()):
            cert, key = pki.sign(ca_cert, ca_key, common_name=identity.user, organizations=identity.groups,
                                 client=True)
            pki.write_private(files.client_key(identity), pki.key_pem(key))
            pki.write_private(files.client_cert(identity), pki.cert_pem(cert))
    if not files.tokens.exists():
        write_node_tokens(files, ())
    return files


def _serves(path: Path, hosts: Sequence[str], ca_cert: x509.Certificate) -> bool:
    """Whether the serving certificate at ``path`` exists, was signed by this CA and names every host."""
    try:
        cert = pki.load_cert(path)
    except (OSError, ValueError):
        return False
    if cert.issuer != ca_cert.subject:
        return False
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return False
    named = {str(v) for v in san.get_values_for_type(x509.DNSName)}
    named |= {str(v) for v in san.get_values_for_type(x509.IPAddress)}
    return set(hosts) <= named


def write_node_tokens(files: ClusterPKI, nodes: Iterable[str]) -> Path:
    """``tokens.csv`` with one token per node; a node that had a token keeps it."""
    existing = files.node_tokens() if files.tokens.exists() else {}
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for name in nodes:
        token = existing.get(name) or secrets.token_urlsafe(32)
        writer.writerow([token, node_user(name), str(uuid.uuid5(uuid.NAMESPACE_URL, node_user(name))),
                         NODES_GROUP])
    return pki.write_private(files.tokens, out.getvalue().encode())


def _read_tokens(path: Path) -> list[tuple[str, str]]:
    try:
        text = path.read_text()
    except OSError:
        return []
    return [(row[0].strip(), row[1].strip()) for row in csv.reader(io.StringIO(text)) if len(row) >= 2]
