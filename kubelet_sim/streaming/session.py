"""What an exec or attach session hands a container runtime, whatever the transport underneath.

The kubelet's remote-command server (``pkg/kubelet/cri/streaming/remotecommand``)
turns SPDY streams or WebSocket channels into plain readers and writers and
calls the runtime with them; so does kubesim. A runtime sees a
:class:`Session`: optional stdin, stdout and stderr, whether a TTY was asked
for, terminal sizes as they arrive, and an event set when the client has gone
(so that it can stop the command and free what it holds).

It answers with an exit code, or raises :class:`ExecError` when the command
could not run at all; :func:`exit_status` and :func:`error_status` are the
``metav1.Status`` the error stream then carries (the exit code as an
``ExitCode`` cause, as kubectl reads it).

Concurrency: a session belongs to one connection's tasks: the transport's
reader feeds :class:`Pipe` and the resize queue; the runtime reads and writes.
"""

from __future__ import annotations

import asyncio
import json
from collections import deque
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from machinery.httpstream import EXIT_CODE_CAUSE_TYPE, NON_ZERO_EXIT_CODE_REASON

#: Bytes a :class:`Pipe` holds before its writer has to wait for the reader.
PIPE_HIGH_WATER: Final = 1 << 20


class Input(Protocol):
    async def read(self) -> bytes:
        """The next bytes; ``b""`` at the end."""
        ...


class Output(Protocol):
    async def write(self, data: bytes) -> None: ...

    async def close(self) -> None: ...


@dataclass(frozen=True, slots=True)
class TerminalSize:
    """client-go's ``TerminalSize`` (its JSON has capitalised field names)."""

    width: int
    height: int

    @classmethod
    def from_wire(cls, value: Any) -> TerminalSize | None:
        if not isinstance(value, dict):
            return None
        width, height = value.get("Width"), value.get("Height")
        if not isinstance(width, int) or not isinstance(height, int) or not (0 <= width < 65536) \
                or not (0 <= height < 65536):
            return None
        return cls(width, height)


def decode_sizes(buffer: bytearray) -> list[TerminalSize]:
    """The complete JSON sizes at the front of ``buffer`` (which keeps any partial one)."""
    decoder = json.JSONDecoder()
    sizes: list[TerminalSize] = []
    text = buffer.decode("utf-8", "replace")
    position = 0
    while True:
        while position < len(text) and text[position].isspace():
            position += 1
        if position >= len(text):
            break
        try:
            value, position = decoder.raw_decode(text, position)
        except json.JSONDecodeError:
            break
        size = TerminalSize.from_wire(value)
        if size is not None:
            sizes.append(size)
    del buffer[:len(text[:position].encode("utf-8"))]
    return sizes


class Pipe:
    """An in-memory byte pipe: the transport feeds it, the runtime reads it."""

    def __init__(self) -> None:
        self._chunks: deque[bytes] = deque()
        self._size = 0
        self._eof = False
        self._readable = asyncio.Event()
        self._writable = asyncio.Event()
        self._writable.set()

    async def feed(self, data: bytes) -> None:
        if self._eof or not data:
            return
        self._chunks.append(data)
        self._size += len(data)
        self._readable.set()
        if self._size > PIPE_HIGH_WATER:
            self._writable.clear()
            await self._writable.wait()

    def feed_eof(self) -> None:
        self._eof = True
        self._readable.set()
        self._writable.set()

    async def read(self) -> bytes:
        while not self._chunks:
            if self._eof:
                return b""
            self._readable.clear()
            await self._readable.wait()
        chunk = self._chunks.popleft()
        self._size -= len(chunk)
        if self._size <= PIPE_HIGH_WATER:
            self._writable.set()
        return chunk


@dataclass(eq=False)
class Session:
    """The streams of one exec or attach, as the runtime uses them."""

    stdin: Input | None
    stdout: Output | None
    stderr: Output | None
    tty: bool
    resizes: asyncio.Queue[TerminalSize] = field(default_factory=asyncio.Queue)
    #: Set when the client has gone away: the command should stop.
    gone: asyncio.Event = field(default_factory=asyncio.Event)

    async def write_out(self, data: bytes) -> None:
        if self.stdout is not None and data:
            await self.stdout.write(data)

    async def write_err(self, data: bytes) -> None:
        """stderr, or stdout with a TTY (a terminal has one output)."""
        target = self.stdout if self.tty else self.stderr
        if target is not None and data:
            await target.write(data)


#: Runs the command (or attaches) with the session's streams; returns the exit code.
Runner = Callable[[Session], Coroutine[Any, Any, int]]


class ExecError(Exception):
    """The command could not be run (not an exit code): an InternalError on the error stream."""


def success_status() -> dict[str, Any]:
    return {"metadata": {}, "status": "Success"}


def exit_status(command: Sequence[str], code: int) -> dict[str, Any]:
    """The Status of a command that exited with ``code`` (containerd's message inside the kubelet's)."""
    if code == 0:
        return success_status()
    inner = f"error executing command [{' '.join(command)}], exit code {code}"
    return {"metadata": {}, "status": "Failure",
            "message": f"command terminated with non-zero exit code: {inner}",
            "reason": NON_ZERO_EXIT_CODE_REASON,
            "details": {"causes": [{"reason": EXIT_CODE_CAUSE_TYPE, "message": str(code)}]}}


def error_status(message: str) -> dict[str, Any]:
    """apierrors.NewInternalError of ``error executing command in container: <message>``."""
    cause = f"error executing command in container: {message}"
    return {"metadata": {}, "status": "Failure", "message": f"Internal error occurred: {cause}",
            "reason": "InternalError", "details": {"causes": [{"message": cause}]}, "code": 500}
