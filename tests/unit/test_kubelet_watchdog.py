"""The process runtime's watchdog kills the process groups it watches once its pipe ends (kubelet_sim gone)."""

from __future__ import annotations

import os
import signal
import subprocess
import time

from kubelet_sim.runtimes.watchdog import Watchdog


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def _wait_gone(pgid: int, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _group_alive(pgid):
            return True
        time.sleep(0.05)
    return False


def test_the_groups_watched_die_with_the_pipe_and_forgotten_ones_do_not() -> None:
    # A shell whose children outlive it (the parent-death signal would reach only the shell).
    # It says when both sleeps are started, so that killing it cannot come before they exist.
    watched = subprocess.Popen(["sh", "-c", "sleep 60 & sleep 60 & echo started; wait"], start_new_session=True,
                               stdout=subprocess.PIPE)
    forgotten = subprocess.Popen(["sleep", "60"], start_new_session=True)
    watchdog = Watchdog()
    try:
        assert watched.stdout is not None
        assert watched.stdout.readline() == b"started\n"
        watched.stdout.close()
        watchdog.watch(watched.pid)
        watchdog.watch(forgotten.pid)
        watchdog.forget(forgotten.pid)
        watched.kill()  # the shell goes first; its sleeps are orphans in its group
        watched.wait(5)
        assert _group_alive(watched.pid)
        watchdog.close()  # what kubelet_sim's exit does to the pipe
        assert _wait_gone(watched.pid)
        assert forgotten.poll() is None
    finally:
        watchdog.close()
        for pgid in (watched.pid, forgotten.pid):
            if _group_alive(pgid):
                os.killpg(pgid, signal.SIGKILL)
        forgotten.wait(5)
