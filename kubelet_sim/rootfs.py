"""A simulated container's filesystem: a small tree in memory that the built-in shell reads and writes.

What a person looks at in a container is there: the Pod's mounted volumes at
their ``mountPath`` (ConfigMap, Secret and downward-API files with their
modes, read-only as the kubelet mounts them; ``emptyDir`` writable), the files
the kubelet writes into every container (``/etc/hostname``, ``/etc/hosts``,
``/etc/resolv.conf``), the usual top-level directories, and whatever the user
writes (``kubectl cp`` into the container, ``echo x > /tmp/f``). Like a
container's writable layer, written files last as long as the container
instance and are bounded in size (:data:`MAX_WRITTEN_BYTES`): past it a write
fails with ``No space left on device``.

Errors are :class:`FsError` with an errno name and the shell's wording. Paths
are POSIX, resolved against a working directory. Single-threaded: used from
the event loop only.
"""

from __future__ import annotations

import posixpath
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Final

MAX_WRITTEN_BYTES: Final = 64 * 1024 * 1024
BASE_DIRECTORIES: Final = ("/bin", "/dev", "/etc", "/home", "/proc", "/root", "/sys", "/tmp", "/usr", "/usr/bin",
                           "/usr/local", "/usr/local/bin", "/var", "/var/log", "/var/run", "/run")


class FsError(OSError):
    """``ENOENT``, ``EISDIR``, ``ENOTDIR``, ``EROFS``, ``ENOSPC``, ``EEXIST``, ``ENOTEMPTY``."""

    MESSAGES: Final = {
        "ENOENT": "No such file or directory", "EISDIR": "Is a directory", "ENOTDIR": "Not a directory",
        "EROFS": "Read-only file system", "ENOSPC": "No space left on device", "EEXIST": "File exists",
        "ENOTEMPTY": "Directory not empty", "EINVAL": "Invalid argument",
    }

    def __init__(self, code: str, path: str) -> None:
        super().__init__(f"{path}: {self.MESSAGES[code]}")
        self.code = code
        self.path = path

    @property
    def reason(self) -> str:
        return self.MESSAGES[self.code]


@dataclass(slots=True)
class Node:
    directory: bool
    data: bytes = b""
    mode: int = 0o644
    mtime: float = field(default_factory=time.time)
    read_only: bool = False
    #: Part of a mounted volume (replaced when the volumes are mounted again).
    mounted: bool = False


def normalize(path: str, cwd: str = "/") -> str:
    joined = posixpath.join(cwd, path) if not path.startswith("/") else path
    normalized = posixpath.normpath(joined)
    return "/" + normalized.lstrip("/") if normalized != "/" else "/"


class RootFS:
    """The tree: absolute path -> :class:`Node`."""

    def __init__(self, *, max_written_bytes: int = MAX_WRITTEN_BYTES) -> None:
        self._nodes: dict[str, Node] = {"/": Node(True, mode=0o755)}
        self._written = 0
        self._max = max_written_bytes
        for directory in BASE_DIRECTORIES:
            self._nodes[directory] = Node(True, mode=0o1777 if directory == "/tmp" else 0o755)

    # --- reading -----------------------------------------------------------------------------------

    def stat(self, path: str) -> Node | None:
        return self._nodes.get(path)

    def exists(self, path: str) -> bool:
        return path in self._nodes

    def is_dir(self, path: str) -> bool:
        node = self._nodes.get(path)
        return node is not None and node.directory

    def read(self, path: str) -> bytes:
        node = self._nodes.get(path)
        if node is None:
            raise FsError("ENOENT", path)
        if node.directory:
            raise FsError("EISDIR", path)
        return node.data

    def listdir(self, path: str) -> list[str]:
        node = self._nodes.get(path)
        if node is None:
            raise FsError("ENOENT", path)
        if not node.directory:
            raise FsError("ENOTDIR", path)
        prefix = path.rstrip("/") + "/"
        return sorted({p[len(prefix):].split("/")[0] for p in self._nodes if p.startswith(prefix) and p != path})

    def walk(self, path: str) -> Iterator[tuple[str, Node]]:
        """``path`` and everything under it, parents before children."""
        prefix = path.rstrip("/") + "/"
        for p in sorted(self._nodes):
            if p == path or p.startswith(prefix):
                yield p, self._nodes[p]

    # --- writing -----------------------------------------------------------------------------------

    def _check_parent(self, path: str) -> None:
        parent = posixpath.dirname(path)
        node = self._nodes.get(parent)
        if node is None:
            raise FsError("ENOENT", path)
        if not node.directory:
            raise FsError("ENOTDIR", path)
        if node.read_only:
            raise FsError("EROFS", path)

    def mkdir(self, path: str, *, parents: bool = False, mode: int = 0o755) -> None:
        if path in self._nodes:
            if parents and self._nodes[path].directory:
                return
            raise FsError("EEXIST", path)
        if parents:
            parent = posixpath.dirname(path)
            if parent != path:
                self.mkdir(parent, parents=True)
        self._check_parent(path)
        self._nodes[path] = Node(True, mode=mode)

    def write(self, path: str, data: bytes, *, mode: int = 0o644, append: bool = False,
              mtime: float | None = None) -> None:
        node = self._nodes.get(path)
        if node is not None:
            if node.directory:
                raise FsError("EISDIR", path)
            if node.read_only:
                raise FsError("EROFS", path)
        else:
            self._check_parent(path)
        new = (node.data if node is not None and append else b"") + data
        growth = len(new) - (len(node.data) if node is not None else 0)
        if self._written + growth > self._max:
            raise FsError("ENOSPC", path)
        self._written += growth
        self._nodes[path] = Node(False, new, mode if node is None else node.mode,
                                 mtime if mtime is not None else time.time())

    def remove(self, path: str, *, recursive: bool = False) -> None:
        node = self._nodes.get(path)
        if node is None:
            raise FsError("ENOENT", path)
        if path == "/" or node.read_only or node.mounted:
            raise FsError("EROFS" if node.read_only or node.mounted else "EINVAL", path)
        self._check_parent(path)
        children = [p for p, _ in self.walk(path) if p != path]
        if node.directory and children and not recursive:
            raise FsError("ENOTEMPTY", path)
        for p in [*children, path]:
            removed = self._nodes.pop(p)
            self._written -= len(removed.data)

    def touch(self, path: str) -> None:
        node = self._nodes.get(path)
        if node is None:
            self.write(path, b"")
        elif not node.read_only:
            node.mtime = time.time()

    # --- volumes -----------------------------------------------------------------------------------

    def mount(self, mounts: Mapping[str, tuple[Mapping[str, tuple[bytes, int]], bool]]) -> None:
        """(Re)mount volumes: mount path -> (relative path -> (content, mode), read-only).

        A file mount (``subPath`` of a single file) is given as ``{"": (content, mode)}``.
        """
        for path in [p for p, n in self._nodes.items() if n.mounted]:
            self._nodes.pop(path, None)
        for mount_path, (files, read_only) in sorted(mounts.items()):
            parent = posixpath.dirname(mount_path)
            self._ensure_dirs(parent)
            if "" in files:
                content, mode = files[""]
                self._nodes[mount_path] = Node(False, content, mode, read_only=read_only, mounted=True)
                continue
            self._nodes[mount_path] = Node(True, mode=0o777 if not read_only else 0o755, read_only=read_only,
                                           mounted=True)
            for relative, (content, mode) in sorted(files.items()):
                target = normalize(relative, mount_path)
                if not target.startswith(mount_path.rstrip("/") + "/"):
                    continue
                directory = posixpath.dirname(target)
                while directory not in self._nodes:
                    self._nodes[directory] = Node(True, mode=0o755, read_only=read_only, mounted=True)
                    directory = posixpath.dirname(directory)
                self._nodes[target] = Node(False, content, mode, read_only=read_only, mounted=True)

    def _ensure_dirs(self, path: str) -> None:
        missing = []
        while path not in self._nodes:
            missing.append(path)
            path = posixpath.dirname(path)
        for directory in reversed(missing):
            self._nodes[directory] = Node(True, mode=0o755)

    def put_system_file(self, path: str, content: bytes) -> None:
        """A file the kubelet manages (``/etc/hosts``): replaced each time, never counted as written."""
        self._ensure_dirs(posixpath.dirname(path))
        self._nodes[path] = Node(False, content, 0o644)
