"""The audit log backend: one JSON Event per line, in a file that rotates (``--audit-log-*``).

As kube-apiserver's log backend (which writes through lumberjack):
``--audit-log-path`` is the file (``-`` for standard output); when a line
would take it past ``--audit-log-maxsize`` megabytes (100 when 0, lumberjack's
default) the file is renamed to ``<name>-<UTC time>.<ext>``
(``audit-2025-01-02T03-04-05.678.log``) and a new one started; at most
``--audit-log-maxbackup`` rotated files are kept (0: all) and none older than
``--audit-log-maxage`` days (0: no limit). Files are created 0600.

Each line is one ``os.write`` on a descriptor opened with ``O_APPEND``, so a
line is never split and nothing waits in a buffer when the process dies:
kube-apiserver's default ``blocking`` mode.

Concurrency: called on the event loop only; a write never awaits.
"""

from __future__ import annotations

import datetime as dt
import os
import sys
import time
from pathlib import Path
from typing import Final

MEGABYTE: Final = 1024 * 1024
DEFAULT_MAX_SIZE_MB: Final = 100
_STAMP: Final = "%Y-%m-%dT%H-%M-%S"


class LogBackend:
    def __init__(self, path: str, *, max_size_mb: int = 0, max_backups: int = 0, max_age_days: int = 0) -> None:
        self.path = path
        self.max_bytes = (max_size_mb or DEFAULT_MAX_SIZE_MB) * MEGABYTE
        self.max_backups = max_backups
        self.max_age_days = max_age_days
        self._fd: int | None = None
        self._size = 0
        if path != "-":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            self._open()

    def _open(self) -> None:
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        self._size = os.fstat(self._fd).st_size

    def write(self, line: bytes) -> None:
        if self.path == "-":
            sys.stdout.buffer.write(line)
            sys.stdout.buffer.flush()
            return
        if self._fd is None:
            self._open()
        if self._size and self._size + len(line) > self.max_bytes:
            self._rotate()
        assert self._fd is not None
        os.write(self._fd, line)
        self._size += len(line)

    def _backup_name(self) -> Path:
        path = Path(self.path)
        now = dt.datetime.now(dt.UTC)
        stamp = now.strftime(_STAMP) + f".{now.microsecond // 1000:03d}"
        return path.with_name(f"{path.stem}-{stamp}{path.suffix}")

    def _rotate(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        backup = self._backup_name()
        while backup.exists():  # two rotations in one millisecond
            time.sleep(0.001)
            backup = self._backup_name()
        os.replace(self.path, backup)
        self._open()
        self._prune()

    def backups(self) -> list[Path]:
        """The rotated files, oldest first."""
        path = Path(self.path)
        return sorted(p for p in path.parent.glob(f"{path.stem}-*{path.suffix}") if p != path)

    def _prune(self) -> None:
        backups = self.backups()
        doomed: set[Path] = set()
        if self.max_backups > 0 and len(backups) > self.max_backups:
            doomed.update(backups[:len(backups) - self.max_backups])
        if self.max_age_days > 0:
            cutoff = time.time() - self.max_age_days * 86400
            doomed.update(p for p in backups if p.stat().st_mtime < cutoff)
        for p in doomed:
            p.unlink(missing_ok=True)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
