"""Real processes for tests: etcd, the APIServer, components, on free loopback ports.

Fixtures in ``tests/conftest.py`` build on these. Every process started here is
stopped by its process id when the fixture (or ``with`` block) ends, even when
the test fails.

Security is on, as ``kubesim up`` runs it: the APIServer serves HTTPS with one
cluster CA per test session (:func:`session_files`: certificates, node tokens,
kubeconfigs), authenticates, authorizes with Node and RBAC, and audits.
Tests talk to it as the admin (``kubernetes-admin`` in ``system:masters``)
through :meth:`Cluster.client` / :func:`admin_tls`, give components their own
identities with :meth:`Cluster.component_args`, and get plain HTTP only when
they ask for it (``cluster(insecure_port=True)``, :attr:`ApiServer.insecure_url`).
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import shutil
import ssl
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import yaml

from kubesim import certs, clusterfiles, procs
from kubesim.clusterfiles import ClusterFiles
from kubesim.kubeconfig import kubeconfig_document
from machinery import pki
from machinery.client.config import ClientConfig, load_cert_chain, load_kubeconfig

#: Node names every test APIServer has tokens for (kubelet_sim's default pattern).
NODE_NAMES = tuple(f"node-{i}" for i in range(1, 101))
#: A placeholder server in the session's kubeconfigs; tests point them at their APIServer.
PLACEHOLDER_SERVER = "https://127.0.0.1:1"


@functools.cache
def session_files() -> ClusterFiles:
    """One cluster CA, set of identities and node tokens for every APIServer this test session starts."""
    workdir = Path(tempfile.mkdtemp(prefix="kubesim-test-pki-"))
    atexit.register(shutil.rmtree, workdir, ignore_errors=True)
    return clusterfiles.prepare(workdir, PLACEHOLDER_SERVER, NODE_NAMES)


@functools.cache
def admin_tls() -> ssl.SSLContext:
    """TLS as the admin: trusting the session CA, presenting kubernetes-admin's certificate."""
    files = session_files().files
    ctx = ssl.create_default_context(cafile=str(files.ca_cert))
    ctx.load_cert_chain(str(files.client_cert(certs.ADMIN)), str(files.client_key(certs.ADMIN)))
    return ctx


@functools.cache
def anonymous_tls() -> ssl.SSLContext:
    """TLS trusting the session CA, with no client certificate."""
    return ssl.create_default_context(cafile=str(session_files().files.ca_cert))


@functools.cache
def user_tls(name: str, groups: tuple[str, ...] = ()) -> ssl.SSLContext:
    """TLS as the user ``name`` in ``groups``: a client certificate the session CA signs on the spot."""
    files = session_files().files
    cert, key = pki.sign(pki.load_cert(files.ca_cert), pki.load_key(files.ca_key), common_name=name,
                         organizations=groups, client=True)
    ctx = ssl.create_default_context(cafile=str(files.ca_cert))
    load_cert_chain(ctx, pki.cert_pem(cert), pki.key_pem(key))
    return ctx


def kubelet_tls(name: str | None = None, groups: tuple[str, ...] = ()) -> ssl.SSLContext:
    """TLS to a kubelet: its self-signed serving certificate unchecked (as the APIServer does by default),
    presenting a certificate of ``name`` in ``groups`` that the session CA signs, when a name is given."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    if name is not None:
        files = session_files().files
        cert, key = pki.sign(pki.load_cert(files.ca_cert), pki.load_key(files.ca_key), common_name=name,
                             organizations=groups, client=True)
        load_cert_chain(ctx, pki.cert_pem(cert), pki.key_pem(key))
    return ctx


def user_client(base_url: str, name: str, groups: tuple[str, ...] = (), **kwargs: Any) -> httpx.Client:
    """An httpx client authenticated by a client certificate of ``name`` in ``groups``."""
    return httpx.Client(base_url=base_url, verify=user_tls(name, tuple(groups)), **kwargs)


def token_client(base_url: str, token: str, **kwargs: Any) -> httpx.Client:
    """An httpx client that trusts the CA and sends ``token`` (no client certificate)."""
    return httpx.Client(base_url=base_url, verify=anonymous_tls(), headers={"Authorization": f"Bearer {token}"},
                        **kwargs)


def node_token(name: str) -> str:
    """The bearer token of node ``name`` (``system:node:<name>``) in the session's token file."""
    return session_files().files.node_tokens()[name]


def admin_files() -> tuple[str, str, str]:
    """(CA certificate, admin client certificate, its key) as file paths, for clients that take files (requests)."""
    files = session_files().files
    return str(files.ca_cert), str(files.client_cert(certs.ADMIN)), str(files.client_key(certs.ADMIN))


def admin_client(base_url: str, **kwargs: Any) -> httpx.Client:
    """A synchronous httpx client on ``base_url`` as the admin (plain httpx for an ``http://`` URL)."""
    if base_url.startswith("https:"):
        kwargs.setdefault("verify", admin_tls())
    return httpx.Client(base_url=base_url, **kwargs)


@dataclass
class Etcd:
    process: procs.ManagedProcess
    port: int
    data_dir: Path

    @property
    def url(self) -> str:
        return f"http://{procs.LOOPBACK}:{self.port}"


@dataclass
class ApiServer:
    process: procs.ManagedProcess
    port: int
    workdir: Path | None = None
    insecure_port: int | None = None

    @property
    def url(self) -> str:
        return f"https://{procs.LOOPBACK}:{self.port}"

    def kubeconfig(self, identity: str = "admin") -> Path:
        """A kubeconfig for this APIServer: ``admin``, or a component's (``scheduler``, ``controller-manager``,
        ``kubelet``: the first node's token)."""
        assert self.workdir is not None, "an ApiServer started by start_apiserver has a workdir"
        path = self.workdir / "kubeconfigs" / f"{identity}-{self.port}.conf"
        if not path.exists():
            files = session_files()
            source = files.admin_kubeconfig if identity == "admin" else files.kubeconfig(identity)
            text = source.read_text().replace(PLACEHOLDER_SERVER, self.url)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            path.chmod(0o600)
        return path

    def config(self, identity: str = "admin") -> ClientConfig:
        """The typed client's settings for this APIServer as ``identity`` (see :meth:`kubeconfig`)."""
        return load_kubeconfig(self.kubeconfig(identity))

    def user_kubeconfig(self, name: str, groups: tuple[str, ...] = ()) -> Path:
        """A kubeconfig for the user ``name`` in ``groups`` (a client certificate the session CA signs)."""
        assert self.workdir is not None
        path = self.workdir / "kubeconfigs" / f"user-{name.replace(':', '_')}-{self.port}.conf"
        if not path.exists():
            files = session_files().files
            cert, key = pki.sign(pki.load_cert(files.ca_cert), pki.load_key(files.ca_key), common_name=name,
                                 organizations=groups, client=True)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(yaml.safe_dump(kubeconfig_document(self.url, ca=files.ca_cert.read_bytes(),
                                                               cert=pki.cert_pem(cert), key=pki.key_pem(key))))
            path.chmod(0o600)
        return path

    @property
    def insecure_url(self) -> str:
        """The ``--insecure-port`` URL (plain HTTP, every request system:masters), when it was started with one."""
        assert self.insecure_port, "start the cluster with insecure_port=True"
        return f"http://{procs.LOOPBACK}:{self.insecure_port}"


@dataclass
class Cluster:
    """etcd plus one APIServer (or several: ``apiservers``); ``components`` holds whatever else a test started.

    ``apiserver`` is the first APIServer; the others, when there are several, share the etcd
    and nothing else, as kube-apiserver replicas do.
    """

    etcd: Etcd
    apiserver: ApiServer
    workdir: Path
    components: list[procs.ManagedProcess] = field(default_factory=list)
    apiservers: list[ApiServer] = field(default_factory=list)

    @property
    def url(self) -> str:
        return self.apiserver.url

    def client(self, **kwargs: Any) -> httpx.Client:
        """An httpx client on the APIServer as the admin (system:masters)."""
        return admin_client(self.url, **kwargs)

    def kubeconfig(self, identity: str = "admin") -> Path:
        """A kubeconfig for the APIServer (see :meth:`ApiServer.kubeconfig`)."""
        return self.apiserver.kubeconfig(identity)

    def config(self, identity: str = "admin") -> ClientConfig:
        return self.apiserver.config(identity)

    def user_kubeconfig(self, name: str, groups: tuple[str, ...] = ()) -> Path:
        return self.apiserver.user_kubeconfig(name, groups)

    @property
    def audit_log(self) -> Path:
        """Where the APIServer writes its audit events (every request, at Metadata level)."""
        return self.workdir / "logs" / "audit.log"

    def component_args(self, component: str) -> list[str]:
        """The flags that make ``controller-manager``, ``scheduler``, ``kubelet`` or ``metrics-server`` act as
        itself here: ``kubesim up``'s, with this APIServer's copies of the kubeconfigs."""
        return session_files().component_flags(component, kubeconfig=self.kubeconfig)

    def start_component(self, module: str, args: Sequence[str], *, name: str | None = None,
                        ready_url: str | None = None, timeout: float = 30.0) -> procs.ManagedProcess:
        name = name or module
        proc = procs.python_module(module, list(args), name=name,
                                   log_path=self.workdir / "logs" / f"{name}-{len(self.components)}.log",
                                   ready_url=ready_url)
        self.components.append(proc)
        proc.start()
        proc.wait_ready(timeout)
        return proc

    def stop(self) -> None:
        for proc in reversed(self.components):
            proc.stop()
        for api in self.apiservers or [self.apiserver]:
            api.process.stop()
        self.etcd.process.stop()


def start_etcd(workdir: Path) -> Etcd:
    port = procs.free_port()
    proc = procs.etcd_process(workdir / "etcd", client_port=port, log_path=workdir / "logs" / "etcd.log")
    proc.start()
    try:
        proc.wait_ready(30)
    except Exception:
        proc.stop()
        raise
    return Etcd(proc, port, workdir / "etcd")


@contextlib.contextmanager
def etcd_alone(prefix: str = "kubesim-etcd-") -> Iterator[str]:
    """A fresh etcd with nothing over it (for tests of the storage layer), stopped on exit; its URL."""
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        etcd = start_etcd(Path(tmp))
        try:
            yield etcd.url
        finally:
            etcd.process.stop()


#: What a cluster without a controller-manager needs: no ServiceAccount admission, which would refuse every
#: Pod until the ServiceAccount controller made the namespace's ``default`` (Kubernetes' own integration
#: tests disable it the same way).
WITHOUT_SERVICE_ACCOUNTS = ("--disable-admission-plugins=ServiceAccount",)


def secure_apiserver_args(workdir: Path) -> list[str]:
    """The APIServer flags of a secure test cluster: the session's certificates and tokens, and audit."""
    files = session_files()
    policy = workdir / "audit-policy.yaml"
    if not policy.exists():
        workdir.mkdir(parents=True, exist_ok=True)
        shutil.copy(files.audit_policy, policy)
    return [*files.files.apiserver_flags(), f"--audit-policy-file={policy}",
            f"--audit-log-path={workdir / 'logs' / 'audit.log'}"]


def start_apiserver(etcd_url: str, workdir: Path, extra_args: Sequence[str] = (), *,
                    timeout: float = 30.0, service_accounts: bool = False, insecure_port: bool = False) -> ApiServer:
    """A secure APIServer on ``etcd_url``; ServiceAccount admission only with ``service_accounts``,
    a plain-HTTP port too with ``insecure_port``."""
    if not service_accounts:
        extra_args = [*WITHOUT_SERVICE_ACCOUNTS, *extra_args]
    port = procs.free_port()
    insecure = procs.free_port() if insecure_port else None
    args = [*secure_apiserver_args(workdir), *([f"--insecure-port={insecure}"] if insecure else []), *extra_args]
    # The probe presents the admin's certificate, so that it works whatever the flags (--anonymous-auth=false).
    proc = procs.apiserver_process(etcd_url, port=port, log_path=workdir / "logs" / f"apiserver-{port}.log",
                                   extra_args=args, probe_tls=admin_tls())
    proc.start()
    try:
        proc.wait_ready(timeout)
    except Exception:
        proc.stop()
        raise
    return ApiServer(proc, port, workdir, insecure)


@contextlib.contextmanager
def cluster(apiserver_args: Sequence[str] = (), workdir: Path | None = None, *,
            apiservers: int = 1, service_accounts: bool = False, insecure_port: bool = False) -> Iterator[Cluster]:
    """A fresh etcd and ``apiservers`` secure APIServers over it (each on its own port, auditing to one
    file), stopped on exit (ServiceAccount admission only if ``service_accounts``; ``insecure_port`` adds a
    plain-HTTP port to each)."""
    with contextlib.ExitStack() as stack:
        if workdir is None:
            workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="kubesim-test-")))
        etcd = start_etcd(workdir)
        stack.callback(etcd.process.stop)
        started: list[ApiServer] = []
        for _ in range(apiservers):
            started.append(start_apiserver(etcd.url, workdir, apiserver_args, service_accounts=service_accounts,
                                           insecure_port=insecure_port))
            stack.callback(started[-1].process.stop)
        c = Cluster(etcd, started[0], workdir, apiservers=started)
        stack.callback(c.stop)
        yield c


def wait_for(predicate: Callable[[], object], timeout: float = 10.0, interval: float = 0.05,
             message: str = "condition") -> object:
    """Poll ``predicate`` until it returns something truthy, or fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    last: object = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {message} (last value: {last!r})")
