"""The process runtime's watchdog: containers' process groups die with kubelet_sim, even when it is killed.

A real container lives in a cgroup, and the runtime kills the whole cgroup.
Here a container is a process group on this host: kubelet_sim stopping
normally kills every group (:meth:`~kubelet_sim.runtimes.process.ProcessRuntime.close`),
and the parent-death signal kills each container's first process if
kubelet_sim dies at once (SIGKILL, a crash). But that signal is not inherited:
the children a container's shell started (``sh -c 'worker & server'``) would
outlive it, orphaned.

:class:`Watchdog` is one small helper process per runtime, in its own session
(so a signal to kubelet_sim's group does not reach it), that reads ``+PGID``
and ``-PGID`` lines from a pipe kubelet_sim holds. When the pipe ends (kubelet_sim
exited, however it did) it SIGKILLs every group it was told about and exits.
A group that leaves (its leader reaped, the rest killed) is taken off the list.

Concurrency: writes are small, whole lines on a blocking pipe from the event
loop (the watchdog reads continuously, so they never wait in practice).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from typing import Final

#: What the helper runs: collect the groups, kill them all once the pipe ends.
_PROGRAM: Final = """
import os, signal, sys
groups = set()
for line in sys.stdin:
    try:
        pgid = int(line[1:])
    except ValueError:
        continue
    if line[0] == "+":
        groups.add(pgid)
    else:
        groups.discard(pgid)
for pgid in groups:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass
"""


class Watchdog:
    """The helper process, started on the first group it is told about."""

    def __init__(self) -> None:
        self._process: subprocess.Popen[bytes] | None = None

    def _send(self, line: str) -> None:
        if self._process is None:
            self._process = subprocess.Popen([sys.executable, "-S", "-c", _PROGRAM], stdin=subprocess.PIPE,
                                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                             start_new_session=True, close_fds=True)
        assert self._process.stdin is not None
        with contextlib.suppress(OSError, ValueError):
            os.write(self._process.stdin.fileno(), line.encode())

    def watch(self, pgid: int) -> None:
        """``pgid`` is killed if kubelet_sim ends before :meth:`forget`."""
        self._send(f"+{pgid}\n")

    def forget(self, pgid: int) -> None:
        if self._process is not None:
            self._send(f"-{pgid}\n")

    def close(self) -> None:
        """End the helper (it kills what it still watches), waiting a moment for it."""
        process, self._process = self._process, None
        if process is None:
            return
        assert process.stdin is not None
        with contextlib.suppress(OSError):
            process.stdin.close()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)
