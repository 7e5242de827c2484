"""Running a program on a pseudo-terminal, as a person at a terminal would (``kubectl exec -it``).

:func:`run_on_pty` starts the program with a pty as stdin, stdout and stderr,
types each input once the output has been quiet for a moment (the first once the
program has printed something, its prompt: typed earlier, a line would race the
client's first terminal size, as a person's could not), can resize the
terminal in between (``(rows, cols)`` items: ``TIOCSWINSZ`` then SIGWINCH, as
a terminal emulator does), and returns the exit code and everything printed.
The program runs in its own session and is killed if it outlives the deadline.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pty
import select
import signal
import struct
import subprocess
import termios
import time
from collections.abc import Mapping, Sequence

Step = bytes | tuple[int, int]


def _set_size(fd: int, rows: int, cols: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def run_on_pty(argv: Sequence[str], steps: Sequence[Step], *, env: Mapping[str, str] | None = None,
               size: tuple[int, int] = (24, 80), quiet: float = 0.5, timeout: float = 30.0) -> tuple[int, bytes]:
    master, slave = pty.openpty()
    _set_size(slave, *size)
    proc = subprocess.Popen(list(argv), stdin=slave, stdout=slave, stderr=slave, env=dict(env) if env else None,
                            start_new_session=True)
    os.close(slave)
    output = bytearray()
    pending = list(steps)
    last = time.monotonic()
    deadline = last + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.1)
            if ready:
                try:
                    data = os.read(master, 65536)
                except OSError:
                    break
                if not data:
                    break
                output += data
                last = time.monotonic()
            elif proc.poll() is not None:
                break
            elif pending and output and time.monotonic() - last > quiet:
                step = pending.pop(0)
                if isinstance(step, tuple):
                    _set_size(master, *step)
                    os.kill(proc.pid, signal.SIGWINCH)
                else:
                    os.write(master, step)
                last = time.monotonic()
    finally:
        os.close(master)
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
    return proc.returncode, bytes(output)
