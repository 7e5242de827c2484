"""Several APIServer processes on one port, as kube-apiserver replicas behind a load balancer.

Python runs one core per process, and the APIServer is the busiest process of the control
plane. ``python -m apiserver --workers N`` starts N APIServer processes that bind the same
port with ``SO_REUSEPORT``, so that the kernel spreads connections over them. Nothing is
shared between them but etcd: each has its own watch cache fed by its own etcd watch, its
own admission chain and its own in-flight limits, exactly as separate kube-apiserver
replicas are, which keeps what they answer consistent (resourceVersions are etcd's
revisions, conflicts are etcd transactions, consistent reads wait until the cache has
caught up with etcd's current revision, and a watch can resume on any of them).

This process only supervises: it restarts a worker that dies, ends them all on SIGTERM or
SIGINT, and its workers end with it even when it is killed with SIGKILL (PR_SET_PDEATHSIG).

What replicas must share, they are given (:func:`shared_secrets`): a serving certificate (else
each would make its own, and a client trusting one would fail on the next connection) and the
ServiceAccount signing key (else a token one worker issues would be refused by the others), made
once by the supervisor in a private directory when the flags do not name them.
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

log = logging.getLogger("apiserver.workers")

#: A worker that dies this many times within ``_CRASH_WINDOW`` seconds is not restarted again.
_MAX_CRASHES = 5
_CRASH_WINDOW = 60.0
_STOP_TIMEOUT = 10.0
_PR_SET_PDEATHSIG = 1


def reuse_port_socket(host: str, port: int) -> socket.socket:
    """A listening-ready TCP socket bound with ``SO_REUSEPORT`` (uvicorn listens on it)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def _die_with_parent() -> None:
    """In the child, before exec: SIGTERM when the supervising process dies, however it dies."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


def _bind_address_and_port(argv: Sequence[str]) -> tuple[str, int]:
    from apiserver.__main__ import build_parser  # the same flags the workers parse

    args = build_parser().parse_args(list(argv))
    return args.bind_address, args.secure_port


def needs_shared_secrets(args: Any) -> bool:
    """Whether the flags leave a secret for the supervisor to make (:func:`shared_secrets`)."""
    return (not args.tls_cert_file and not args.tls_private_key_file) or not args.service_account_signing_key_file


def shared_secrets(args: Any, directory: Path) -> list[str]:
    """The flags that give every worker the same serving certificate and ServiceAccount signing key,
    made into ``directory`` (private) when ``args`` does not name them."""
    from apiserver import serving
    from machinery import pki

    flags: list[str] = []
    if not args.tls_cert_file and not args.tls_private_key_file:
        cert, key = serving.serving_files(None, None, args.cert_dir, args.bind_address)
        cert_file, key_file = directory / "apiserver.crt", directory / "apiserver.key"
        pki.write_private(cert_file, cert)
        pki.write_private(key_file, key)
        flags += [f"--tls-cert-file={cert_file}", f"--tls-private-key-file={key_file}"]
    if not args.service_account_signing_key_file:
        sa_key = directory / "sa.key"
        pki.write_private(sa_key, pki.key_pem(pki.new_key()))
        flags.append(f"--service-account-signing-key-file={sa_key}")
    return flags


class _Worker:
    def __init__(self, index: int, argv: list[str]) -> None:
        self.index = index
        self.argv = argv
        self.proc: subprocess.Popen[bytes] | None = None
        self.crashes: list[float] = []

    def start(self) -> None:
        env = {**os.environ, "KUBESIM_APISERVER_WORKER": str(self.index)}
        self.proc = subprocess.Popen(self.argv, env=env, preexec_fn=_die_with_parent)  # noqa: PLW1509
        log.info("worker %d started (pid %d)", self.index, self.proc.pid)


def supervise(argv: Sequence[str], count: int) -> int:
    """Run ``count`` APIServer workers with ``argv`` (plus ``--reuse-port``) until told to stop."""
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s apiserver %(levelname)s %(message)s")
    host, port = _bind_address_and_port(argv)
    try:
        reuse_port_socket(host, port).close()
    except OSError as e:
        log.error("cannot serve on %s:%d: %s", host, port, e)
        return 1
    child_argv = [sys.executable, "-m", "apiserver", *argv, "--workers=1", "--reuse-port"]
    workers = [_Worker(i, child_argv) for i in range(1, count + 1)]
    stopping = False

    def on_signal(signum: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    for worker in workers:
        worker.start()
    status = 0
    while not stopping:
        time.sleep(0.2)
        for worker in workers:
            assert worker.proc is not None
            code = worker.proc.poll()
            if code is None or stopping:
                continue
            now = time.monotonic()
            worker.crashes = [t for t in worker.crashes if now - t < _CRASH_WINDOW] + [now]
            if len(worker.crashes) >= _MAX_CRASHES:
                log.error("worker %d exited %d times in %ds (last code %d): stopping", worker.index,
                          len(worker.crashes), int(_CRASH_WINDOW), code)
                stopping, status = True, 1
                break
            log.warning("worker %d exited with code %d: starting it again", worker.index, code)
            worker.start()
    _stop(workers)
    return status


def _stop(workers: list[_Worker]) -> None:
    running = [w.proc for w in workers if w.proc is not None and w.proc.poll() is None]
    for proc in running:
        proc.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + _STOP_TIMEOUT
    for proc in running:
        try:
            proc.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
