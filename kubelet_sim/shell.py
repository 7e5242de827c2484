"""The simulated runtime's built-in shell: what ``kubectl exec`` runs in a container that has no process.

A simulated container runs nothing, yet people exec into it to look around,
and tools exec into it to copy files. This interpreter answers the commands
typed for that, against the container's :class:`~kubelet_sim.rootfs.RootFS`
and environment, in BusyBox's words (the image most examples use):

- builtins: ``echo``, ``printf``, ``cat``, ``env``/``printenv``, ``hostname``,
  ``date``, ``ls``, ``sleep``, ``exit``, ``sh``/``bash``/``ash`` (``-c``, a
  script on stdin, or interactive with a prompt on a TTY), ``test``/``[``,
  ``true``/``false``, ``pwd``/``cd``, ``export``/``unset``, ``mkdir``, ``rm``,
  ``touch``, ``head``, ``tail``, ``wc``, ``grep``, ``uname``, ``whoami``,
  ``id``, ``which``, ``stty size`` and ``tar`` (``c``, ``x``, ``t`` with ``f -``,
  ``-C``, ``z``: what ``kubectl cp`` runs);
- syntax: words with single and double quotes and backslashes, ``$VAR``,
  ``${VAR}``, ``$?``, ``$(command)``, globs, ``;``, ``&&``, ``||``, pipes,
  ``<``, ``>``, ``>>``, ``2>``, ``2>&1``, ``NAME=value`` prefixes, ``#``
  comments. No ``if``/``for``/``while``: a script needing them gets
  ``sh: syntax error``;
- any other command: ``sh: CMD: not found``, exit 127, as a shell says it;
  executed directly (not through ``sh``), the runtime's own error, as
  containerd reports an executable missing from ``$PATH``.

On a TTY the shell is its own line discipline: it echoes, erases on
backspace, ends a line on Enter, answers ``^C`` with a new prompt and exits
on ``^D``; output newlines become CRLF.

Concurrency: one :class:`Shell` per exec session, on the event loop; ``sleep``
and reads of stdin end when the client goes away.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import fnmatch
import io
import posixpath
import re
import tarfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Final

from kubelet_sim.rootfs import FsError, RootFS, normalize
from kubelet_sim.streaming.session import ExecError, Session, TerminalSize

SHELLS: Final = frozenset({"sh", "bash", "ash", "dash"})
#: Largest stdin a builtin reads whole (``tar x``, ``wc``).
MAX_INPUT: Final = 256 * 1024 * 1024
_GLOB: Final = re.compile(r"[*?\[]")


class ExitShell(Exception):
    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


class SyntaxProblem(Exception):
    pass


# --- streams -----------------------------------------------------------------------------------------


class Reader:
    """Bytes in, with line reads; a :class:`Session`'s stdin or a buffer."""

    def __init__(self, source: Callable[[], Awaitable[bytes]] | None = None, data: bytes = b"") -> None:
        self._source = source
        self._buffer = bytearray(data)
        self._eof = source is None

    async def _fill(self) -> bool:
        if self._eof or self._source is None:
            return False
        chunk = await self._source()
        if not chunk:
            self._eof = True
            return False
        self._buffer += chunk
        return True

    async def read(self) -> bytes:
        if not self._buffer and not await self._fill():
            return b""
        data = bytes(self._buffer)
        self._buffer.clear()
        return data

    async def read_all(self, limit: int = MAX_INPUT) -> bytes:
        while len(self._buffer) <= limit and await self._fill():
            pass
        data = bytes(self._buffer[:limit])
        del self._buffer[:limit]
        return data

    async def readline(self) -> bytes:
        while b"\n" not in self._buffer:
            if not await self._fill():
                break
        index = self._buffer.find(b"\n")
        end = index + 1 if index >= 0 else len(self._buffer)
        line = bytes(self._buffer[:end])
        del self._buffer[:end]
        return line


class Writer:
    """Bytes out: to a session stream (CRLF on a TTY), a buffer, or nowhere."""

    def __init__(self, sink: Callable[[bytes], Awaitable[None]] | None = None, *, crlf: bool = False) -> None:
        self._sink = sink
        self._crlf = crlf
        self.captured = bytearray()

    async def write(self, data: bytes) -> None:
        if not data:
            return
        if self._sink is None:
            self.captured += data
            return
        if self._crlf:
            data = data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
        await self._sink(data)

    async def text(self, text: str) -> None:
        await self.write(text.encode())


@dataclass(slots=True)
class IO:
    stdin: Reader
    stdout: Writer
    stderr: Writer


# --- words and commands ------------------------------------------------------------------------------


@dataclass(slots=True)
class Segment:
    kind: str  # "lit", "var" or "cmd"
    value: str
    quoted: bool


@dataclass(slots=True)
class Word:
    segments: list[Segment] = field(default_factory=list)


@dataclass(slots=True)
class Redirect:
    fd: int
    op: str  # ">", ">>", "<", ">&"
    target: Word | int


@dataclass(slots=True)
class Command:
    words: list[Word] = field(default_factory=list)
    redirects: list[Redirect] = field(default_factory=list)


#: (operator before it: ";", "&&" or "||"), and the pipeline's commands.
Script = list[tuple[str, list[Command]]]

_OPERATORS: Final = ("&&", "||", ">>", ">&", ";", "|", ">", "<", "&")
_RESERVED: Final = frozenset({"if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case",
                              "esac", "function", "{", "}"})


def _read_variable(text: str, i: int) -> tuple[Segment | None, int]:
    """A ``$`` expansion starting at ``text[i] == "$"``; None for a lone ``$``."""
    if i + 1 >= len(text):
        return None, i + 1
    nxt = text[i + 1]
    if nxt == "{":
        end = text.find("}", i + 2)
        if end < 0:
            raise SyntaxProblem("bad substitution")
        return Segment("var", text[i + 2:end], False), end + 1
    if nxt == "(":
        depth, j = 1, i + 2
        while j < len(text) and depth:
            depth += {"(": 1, ")": -1}.get(text[j], 0)
            j += 1
        if depth:
            raise SyntaxProblem("unterminated $(")
        return Segment("cmd", text[i + 2:j - 1], False), j
    if nxt in "?$#!0123456789":
        return Segment("var", nxt, False), i + 2
    match = re.match(r"[A-Za-z_][A-Za-z0-9_]*", text[i + 1:])
    if match is None:
        return None, i + 1
    return Segment("var", match.group(0), False), i + 1 + match.end()


def parse(text: str) -> Script:
    """The script's pipelines and how they chain; :class:`SyntaxProblem` when it cannot be read."""
    tokens: list[Word | str] = []
    word: Word | None = None
    i, n = 0, len(text)

    def lit(value: str, quoted: bool) -> None:
        nonlocal word
        if word is None:
            word = Word()
        if word.segments and word.segments[-1].kind == "lit" and word.segments[-1].quoted == quoted:
            word.segments[-1].value += value
        else:
            word.segments.append(Segment("lit", value, quoted))

    def end_word() -> None:
        nonlocal word
        if word is not None:
            tokens.append(word)
            word = None

    while i < n:
        c = text[i]
        if c in " \t\r":
            end_word()
            i += 1
        elif c == "\n":
            end_word()
            tokens.append(";")
            i += 1
        elif c == "#" and word is None:
            while i < n and text[i] != "\n":
                i += 1
        elif c == "'":
            end = text.find("'", i + 1)
            if end < 0:
                raise SyntaxProblem("unterminated quoted string")
            lit(text[i + 1:end], True)
            if word is None:
                word = Word()
            i = end + 1
        elif c == '"':
            i += 1
            if word is None:
                word = Word([Segment("lit", "", True)])
            while True:
                if i >= n:
                    raise SyntaxProblem("unterminated quoted string")
                c = text[i]
                if c == '"':
                    i += 1
                    break
                if c == "\\" and i + 1 < n and text[i + 1] in '"\\$`\n':
                    lit(text[i + 1], True)
                    i += 2
                elif c == "$":
                    segment, i = _read_variable(text, i)
                    if segment is None:
                        lit("$", True)
                    else:
                        segment.quoted = True
                        word.segments.append(segment)
                else:
                    lit(c, True)
                    i += 1
        elif c == "\\":
            if i + 1 < n and text[i + 1] != "\n":
                lit(text[i + 1], True)
            i += 2
        elif c == "$":
            segment, i = _read_variable(text, i)
            if segment is None:
                lit("$", False)
            else:
                if word is None:
                    word = Word()
                word.segments.append(segment)
        elif c in ";&|<>":
            # "2>" and "2>&1": a word that is one digit right before a redirection is its file descriptor.
            if c in "<>" and word is not None and len(word.segments) == 1 and word.segments[0].kind == "lit" \
                    and not word.segments[0].quoted and word.segments[0].value.isdigit():
                tokens.append(f"fd{word.segments[0].value}")
                word = None
            end_word()
            op = next(o for o in _OPERATORS if text.startswith(o, i))
            tokens.append(op)
            i += len(op)
        else:
            lit(c, False)
            i += 1
    end_word()
    return _group(tokens)


def _group(tokens: list[Word | str]) -> Script:
    script: Script = []
    pipeline: list[Command] = []
    command = Command()
    joiner = ";"
    fd: int | None = None
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if isinstance(token, Word):
            if not command.words and not command.redirects and _word_text(token) in _RESERVED:
                raise SyntaxProblem(f'unexpected "{_word_text(token)}"')
            command.words.append(token)
        elif token.startswith("fd"):
            fd = int(token[2:])
        elif token in (">", ">>", "<", ">&"):
            if i + 1 >= len(tokens) or not isinstance(tokens[i + 1], Word):
                raise SyntaxProblem("unexpected redirection")
            target = tokens[i + 1]
            assert isinstance(target, Word)
            default_fd = 0 if token == "<" else 1
            if token == ">&":
                text = _word_text(target)
                if not text.isdigit():
                    raise SyntaxProblem(f"{text}: bad file descriptor")
                command.redirects.append(Redirect(fd if fd is not None else default_fd, ">&", int(text)))
            else:
                command.redirects.append(Redirect(fd if fd is not None else default_fd, token, target))
            fd = None
            i += 1
        elif token == "|":
            if not command.words:
                raise SyntaxProblem('unexpected "|"')
            pipeline.append(command)
            command = Command()
        elif token in (";", "&&", "||", "&"):
            if command.words or command.redirects:
                pipeline.append(command)
            elif pipeline or token in ("&&", "||"):
                raise SyntaxProblem(f'unexpected "{token}"')
            if pipeline:
                script.append((joiner, pipeline))
            pipeline, command = [], Command()
            joiner = token if token in ("&&", "||") else ";"
        i += 1
    if command.words or command.redirects:
        pipeline.append(command)
    elif pipeline:
        raise SyntaxProblem("unexpected end of file")
    if pipeline:
        script.append((joiner, pipeline))
    elif joiner in ("&&", "||"):
        raise SyntaxProblem("unexpected end of file")
    return script


def _word_text(word: Word) -> str:
    return "".join(s.value for s in word.segments if s.kind == "lit")


# --- the shell ---------------------------------------------------------------------------------------


Builtin = Callable[["Shell", list[str], IO], Awaitable[int]]
_BUILTINS: dict[str, Builtin] = {}


def builtin(*names: str) -> Callable[[Builtin], Builtin]:
    def register(fn: Builtin) -> Builtin:
        for name in names:
            _BUILTINS[name] = fn
        return fn
    return register


def is_builtin(name: str) -> bool:
    return posixpath.basename(name) in _BUILTINS


@dataclass(slots=True)
class Terminal:
    """The session's terminal, shared by a shell and the shells it starts (resizes reach them all).

    The client's sizes arrive on ``resizes`` (the exec session's queue); the terminal takes the latest one
    when a command asks for its size, so a size the client sent before a command's line is the size that
    command sees, as with a pty whose size is set before the command reads it. (A task copying the queue
    into ``size`` ran one scheduling turn behind the line, and an ``stty size`` typed right after the
    resize could print the old size.)
    """

    size: TerminalSize | None = None
    resizes: asyncio.Queue[TerminalSize] | None = None

    def current(self) -> TerminalSize | None:
        """The size now: the last one the client sent, else the one it was made with."""
        if self.resizes is not None:
            while not self.resizes.empty():
                self.size = self.resizes.get_nowait()
        return self.size


@dataclass
class Shell:
    """One shell: its filesystem, variables, working directory and last status."""

    fs: RootFS
    env: dict[str, str]
    hostname: str
    gone: asyncio.Event = field(default_factory=asyncio.Event)
    cwd: str = "/"
    status: int = 0
    terminal: Terminal = field(default_factory=Terminal)
    tty: bool = False
    name: str = "sh"

    # --- running --------------------------------------------------------------------------------

    async def run_script(self, text: str, io_: IO) -> int:
        try:
            script = parse(text)
        except SyntaxProblem as err:
            await io_.stderr.text(f"{self.name}: syntax error: {err}\n")
            self.status = 2
            return 2
        for joiner, pipeline in script:
            if joiner == "&&" and self.status != 0 or joiner == "||" and self.status == 0:
                continue
            self.status = await self._pipeline(pipeline, io_)
        return self.status

    async def _pipeline(self, commands: list[Command], io_: IO) -> int:
        stdin = io_.stdin
        status = 0
        for index, command in enumerate(commands):
            last = index == len(commands) - 1
            stdout = io_.stdout if last else Writer()
            status = await self._command(command, IO(stdin, stdout, io_.stderr))
            if not last:
                stdin = Reader(data=bytes(stdout.captured))
        return status

    async def _expand(self, word: Word) -> list[str]:
        fields: list[str] = [""]
        globbing = False
        split_any = False
        for segment in word.segments:
            if segment.kind == "lit":
                fields[-1] += segment.value
                globbing |= not segment.quoted and bool(_GLOB.search(segment.value))
                continue
            value = await self._substitute(segment)
            if segment.quoted:
                fields[-1] += value
            else:
                parts = value.split()
                split_any = True
                if not parts:
                    continue
                if value[:1].isspace() and fields[-1]:
                    fields.append("")
                fields[-1] += parts[0]
                fields.extend(parts[1:])
                if value[-1:].isspace():
                    fields.append("")
        fields = [f for f in fields if f or not split_any] if split_any else fields
        if globbing and len(fields) == 1:
            matches = self._glob(fields[0])
            if matches:
                return matches
        return fields

    async def _substitute(self, segment: Segment) -> str:
        if segment.kind == "cmd":
            out = Writer()
            sub = Shell(self.fs, dict(self.env), self.hostname, self.gone, self.cwd, tty=False, name=self.name)
            try:
                await sub.run_script(segment.value, IO(Reader(), out, Writer()))
            except ExitShell as exit_:
                self.status = exit_.code
            return out.captured.decode("utf-8", "replace").rstrip("\n")
        name = segment.value
        if name == "?":
            return str(self.status)
        if name == "$":
            return "1"
        if name == "#":
            return "0"
        if name == "0":
            return self.name
        if name.isdigit() or name == "!":
            return ""
        default: str | None = None
        for op in (":-", "-"):
            if op in name:
                name, default = name.split(op, 1)
                break
        value = self.env.get(name)
        if default is not None and not value:
            return default
        return value or ""

    def _glob(self, pattern: str) -> list[str]:
        absolute = normalize(pattern, self.cwd)
        directory = posixpath.dirname(absolute)
        if _GLOB.search(directory) or not self.fs.is_dir(directory):
            return []
        base = posixpath.basename(absolute)
        names = [n for n in self.fs.listdir(directory) if fnmatch.fnmatchcase(n, base)
                 and (base.startswith(".") or not n.startswith("."))]
        prefix = posixpath.dirname(pattern)
        return [posixpath.join(prefix, n) if prefix else n for n in names]

    async def _command(self, command: Command, io_: IO) -> int:
        argv: list[str] = []
        for word in command.words:
            argv.extend(await self._expand(word))
        assignments: dict[str, str] = {}
        while argv and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", argv[0], re.DOTALL):
            name, _, value = argv.pop(0).partition("=")
            assignments[name] = value
        try:
            io_, files = await self._redirect(command.redirects, io_)
        except FsError as err:
            await io_.stderr.text(f"{self.name}: can't create {err.path}: {err.reason}\n")
            return 1
        if not argv:
            self.env.update(assignments)
            return await self._flush(files, io_, 0)
        saved: dict[str, str | None] = {name: self.env.get(name) for name in assignments}
        self.env.update(assignments)
        status = 1
        try:
            status = await self.call(argv, io_)
        finally:
            for name, before in saved.items():
                if before is None:
                    self.env.pop(name, None)
                else:
                    self.env[name] = before
            status = await self._flush(files, io_, status)
        return status

    async def _flush(self, files: list[tuple[str, Writer]], io_: IO, status: int) -> int:
        """Write what a command sent to redirected files (after it ends, as one write each)."""
        for path, writer in files:
            try:
                self.fs.write(path, bytes(writer.captured), append=True)
            except FsError as err:
                await io_.stderr.text(f"{self.name}: write error: {err.reason}\n")
                status = 1
        return status

    async def call(self, argv: list[str], io_: IO) -> int:
        fn = _BUILTINS.get(posixpath.basename(argv[0]))
        if fn is None:
            await io_.stderr.text(f"{self.name}: {argv[0]}: not found\n")
            return 127
        return await fn(self, argv, io_)

    async def _redirect(self, redirects: Sequence[Redirect], io_: IO) -> tuple[IO, list[tuple[str, Writer]]]:
        stdin, stdout, stderr = io_.stdin, io_.stdout, io_.stderr
        files: list[tuple[str, Writer]] = []
        for r in redirects:
            if r.op == ">&":
                assert isinstance(r.target, int)
                source = stdout if r.target == 1 else stderr
                if r.fd == 2:
                    stderr = source
                elif r.fd == 1:
                    stdout = source
                continue
            assert isinstance(r.target, Word)
            path = normalize(" ".join(await self._expand(r.target)), self.cwd)
            if r.op == "<":
                stdin = Reader(data=self.fs.read(path))
                continue
            # Created (or truncated) at once, as a shell does; written when the command ends.
            self.fs.write(path, b"", append=r.op == ">>")
            writer = Writer()
            files.append((path, writer))
            if r.fd == 2:
                stderr = writer
            else:
                stdout = writer
        return IO(stdin, stdout, stderr), files

    def resolve(self, path: str) -> str:
        return normalize(path, self.cwd)


# --- running a session ---------------------------------------------------------------------------------


async def run_session(shell: Shell, command: list[str], session: Session) -> int:
    """Run ``command`` (an exec's argv) with the session's streams; returns the exit code."""
    shell.tty = session.tty
    stdin = Reader(session.stdin.read) if session.stdin is not None else Reader()
    out = Writer(session.write_out, crlf=session.tty)
    err = Writer(session.write_err, crlf=session.tty)
    io_ = IO(stdin, out, err)
    if session.tty:
        shell.terminal.resizes = session.resizes
    try:
        if not command:
            raise ExecError("failed to exec in container: no command given")
        name = posixpath.basename(command[0])
        if name not in _BUILTINS:
            raise ExecError(
                f'failed to exec in container: failed to start exec: OCI runtime exec failed: exec failed: '
                f'unable to start container process: exec: "{command[0]}": executable file not found in $PATH: '
                f'unknown')
        try:
            return await shell.call(command, io_)
        except ExitShell as exit_:
            return exit_.code
    finally:
        shell.terminal.resizes = None


# --- builtins ----------------------------------------------------------------------------------------


@builtin("sh", "bash", "ash", "dash")
async def _sh(shell: Shell, argv: list[str], io_: IO) -> int:
    sub = Shell(shell.fs, dict(shell.env), shell.hostname, shell.gone, shell.cwd, terminal=shell.terminal,
                tty=shell.tty, name=posixpath.basename(argv[0]))
    args = argv[1:]
    while args and args[0] in ("-e", "-x", "-l", "-i", "-s", "--login"):
        args = args[1:]
    try:
        if args and args[0] == "-c":
            if len(args) < 2:
                await io_.stderr.text(f"{sub.name}: -c requires an argument\n")
                return 2
            return await sub.run_script(args[1], io_)
        if args:
            path = shell.resolve(args[0])
            try:
                script = shell.fs.read(path).decode("utf-8", "replace")
            except FsError as err:
                await io_.stderr.text(f"{sub.name}: can't open '{args[0]}': {err.reason}\n")
                return 2
            return await sub.run_script(script, io_)
        if shell.tty:
            return await _interactive(sub, io_)
        while True:
            line = await io_.stdin.readline()
            if not line:
                return sub.status
            await sub.run_script(line.decode("utf-8", "replace"), io_)
    except ExitShell as exit_:
        return exit_.code


async def _interactive(shell: Shell, io_: IO) -> int:
    """A shell on a TTY: prompt, echo, line editing, ^C and ^D."""
    line = bytearray()

    def prompt() -> bytes:
        return f"{shell.cwd} # ".encode()

    await io_.stdout.write(prompt())
    while True:
        data = await io_.stdin.read()
        if not data:
            return shell.status
        i = 0
        while i < len(data):
            c = data[i:i + 1]
            i += 1
            if c in (b"\r", b"\n"):
                await io_.stdout.write(b"\r\n")
                text = line.decode("utf-8", "replace")
                line.clear()
                if text.strip():
                    await shell.run_script(text, io_)
                await io_.stdout.write(prompt())
            elif c in (b"\x7f", b"\x08"):
                if line:
                    # Erase a whole UTF-8 character.
                    while line and (line[-1] & 0xC0) == 0x80:
                        line.pop()
                    if line:
                        line.pop()
                    await io_.stdout.write(b"\x08 \x08")
            elif c == b"\x03":
                line.clear()
                await io_.stdout.write(b"^C\r\n" + prompt())
            elif c == b"\x04":
                if not line:
                    await io_.stdout.write(b"\r\n")
                    return shell.status
            elif c == b"\x15":
                await io_.stdout.write(b"\x08 \x08" * len(line.decode("utf-8", "replace")))
                line.clear()
            elif c == b"\x1b":
                # Skip an escape sequence (arrow keys): ESC [ ... final byte.
                if data[i:i + 1] == b"[":
                    i += 1
                    while i < len(data) and not 0x40 <= data[i] <= 0x7E:
                        i += 1
                    i += 1
            elif c >= b" " or c == b"\t":
                line += c
                await io_.stdout.write(c)


@builtin("exit")
async def _exit(shell: Shell, argv: list[str], io_: IO) -> int:
    code = shell.status
    if len(argv) > 1:
        try:
            code = int(argv[1]) & 0xFF
        except ValueError:
            await io_.stderr.text(f"{shell.name}: exit: Illegal number: {argv[1]}\n")
            code = 2
    raise ExitShell(code)


@builtin("echo")
async def _echo(shell: Shell, argv: list[str], io_: IO) -> int:
    args = argv[1:]
    newline, escapes = True, False
    while args and re.fullmatch(r"-[neE]+", args[0]):
        newline = newline and "n" not in args[0]
        escapes = "e" in args[0] or escapes
        args = args[1:]
    text = " ".join(args)
    if escapes:
        text = _unescape(text)
    await io_.stdout.text(text + ("\n" if newline else ""))
    return 0


def _unescape(text: str) -> str:
    table = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "a": "\a", "b": "\b", "e": "\x1b", "0": "\0"}
    return re.sub(r"\\(.)", lambda m: table.get(m.group(1), "\\" + m.group(1)), text)


@builtin("printf")
async def _printf(shell: Shell, argv: list[str], io_: IO) -> int:
    if len(argv) < 2:
        await io_.stderr.text("printf: usage: printf FORMAT [ARGUMENT]...\n")
        return 1
    fmt, remaining = _unescape(argv[1]), argv[2:]
    out: list[str] = []
    while True:
        used = 0
        args = remaining

        def field_(match: re.Match[str], args: list[str] = args) -> str:
            nonlocal used
            spec = match.group(0)
            if spec == "%%":
                return "%"
            value = args[used] if used < len(args) else ""
            used += 1
            if spec[-1] in "di":
                try:
                    return (spec[:-1] + "d") % int(value or "0")
                except ValueError:
                    return "0"
            return (spec[:-1] + "s") % value
        out.append(re.sub(r"%[-0-9.]*[sdi%]", field_, fmt))
        remaining = remaining[used:]
        if not remaining or not used:
            break
    await io_.stdout.text("".join(out))
    return 0


@builtin("cat")
async def _cat(shell: Shell, argv: list[str], io_: IO) -> int:
    paths = [a for a in argv[1:] if a != "-u"] or ["-"]
    status = 0
    for path in paths:
        if path == "-":
            while chunk := await io_.stdin.read():
                await io_.stdout.write(chunk)
            continue
        try:
            await io_.stdout.write(shell.fs.read(shell.resolve(path)))
        except FsError as err:
            where = "read error" if err.code == "EISDIR" else f"can't open '{path}'"
            await io_.stderr.text(f"cat: {where}: {err.reason}\n")
            status = 1
    return status


@builtin("env", "printenv")
async def _env(shell: Shell, argv: list[str], io_: IO) -> int:
    name = posixpath.basename(argv[0])
    args = argv[1:]
    if name == "printenv" and args:
        found = [shell.env[a] for a in args if a in shell.env]
        for value in found:
            await io_.stdout.text(value + "\n")
        return 0 if len(found) == len(args) else 1
    env = dict(shell.env)
    while args and "=" in args[0]:
        key, _, value = args.pop(0).partition("=")
        env[key] = value
    if args:
        sub = Shell(shell.fs, env, shell.hostname, shell.gone, shell.cwd, terminal=shell.terminal, tty=shell.tty)
        return await sub.call(args, io_)
    await io_.stdout.text("".join(f"{k}={v}\n" for k, v in env.items()))
    return 0


@builtin("export")
async def _export(shell: Shell, argv: list[str], io_: IO) -> int:
    for arg in argv[1:]:
        name, sep, value = arg.partition("=")
        if sep:
            shell.env[name] = value
    if len(argv) == 1:
        await io_.stdout.text("".join(f"export {k}='{v}'\n" for k, v in shell.env.items()))
    return 0


@builtin("unset")
async def _unset(shell: Shell, argv: list[str], io_: IO) -> int:
    for name in argv[1:]:
        shell.env.pop(name, None)
    return 0


@builtin("hostname")
async def _hostname(shell: Shell, argv: list[str], io_: IO) -> int:
    await io_.stdout.text(shell.hostname + "\n")
    return 0


@builtin("date")
async def _date(shell: Shell, argv: list[str], io_: IO) -> int:
    now = dt.datetime.now(dt.UTC)
    fmt = next((a[1:] for a in argv[1:] if a.startswith("+")), None)
    if fmt is None:
        # BusyBox's default: "Wed Jan 10 12:00:00 UTC 2024" (the container's zone is UTC).
        text = f"{now:%a %b} {now.day:2d} {now:%H:%M:%S} UTC {now.year}"
    else:
        text = now.strftime(fmt.replace("%N", f"{now.microsecond * 1000:09d}"))
    await io_.stdout.text(text + "\n")
    return 0


@builtin("sleep")
async def _sleep(shell: Shell, argv: list[str], io_: IO) -> int:
    total = 0.0
    for arg in argv[1:] or ["?"]:
        match = re.fullmatch(r"(\d+(?:\.\d*)?|\.\d+)([smhd]?)", arg)
        if match is None:
            await io_.stderr.text(f"sleep: invalid number '{arg}'\n")
            return 1
        total += float(match.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[match.group(2)]
    try:
        await asyncio.wait_for(shell.gone.wait(), timeout=total)
    except TimeoutError:
        return 0
    return 130


@builtin("true", ":")
async def _true(shell: Shell, argv: list[str], io_: IO) -> int:
    return 0


@builtin("false")
async def _false(shell: Shell, argv: list[str], io_: IO) -> int:
    return 1


@builtin("pwd")
async def _pwd(shell: Shell, argv: list[str], io_: IO) -> int:
    await io_.stdout.text(shell.cwd + "\n")
    return 0


@builtin("cd")
async def _cd(shell: Shell, argv: list[str], io_: IO) -> int:
    target = shell.resolve(argv[1] if len(argv) > 1 else shell.env.get("HOME", "/"))
    if not shell.fs.is_dir(target):
        reason = "Not a directory" if shell.fs.exists(target) else "No such file or directory"
        await io_.stderr.text(f"{shell.name}: cd: can't cd to {argv[1] if len(argv) > 1 else target}: {reason}\n")
        return 2
    shell.cwd = target
    return 0


@builtin("test", "[")
async def _test(shell: Shell, argv: list[str], io_: IO) -> int:
    args = argv[1:]
    if posixpath.basename(argv[0]) == "[":
        if not args or args[-1] != "]":
            await io_.stderr.text("[: missing ]\n")
            return 2
        args = args[:-1]
    negate = False
    if args and args[0] == "!":
        negate, args = True, args[1:]
    try:
        result = _evaluate(shell, args)
    except ValueError as err:
        await io_.stderr.text(f"test: {err}\n")
        return 2
    return 0 if result != negate else 1


def _evaluate(shell: Shell, args: list[str]) -> bool:
    if not args:
        return False
    if len(args) == 1:
        return bool(args[0])
    if len(args) == 2:
        op, value = args
        path = shell.resolve(value) if value else ""
        node = shell.fs.stat(path) if value else None
        checks: dict[str, Callable[[], bool]] = {
            "-z": lambda: not value, "-n": lambda: bool(value),
            "-e": lambda: node is not None, "-f": lambda: node is not None and not node.directory,
            "-d": lambda: node is not None and node.directory,
            "-s": lambda: node is not None and not node.directory and bool(node.data),
            "-r": lambda: node is not None, "-x": lambda: node is not None and bool(node.mode & 0o111),
            "-w": lambda: node is not None and not node.read_only,
        }
        if op not in checks:
            raise ValueError(f"{op}: unknown operand")
        return checks[op]()
    if len(args) == 3:
        left, op, right = args
        if op in ("=", "=="):
            return left == right
        if op == "!=":
            return left != right
        numeric = {"-eq": int.__eq__, "-ne": int.__ne__, "-lt": int.__lt__, "-le": int.__le__,
                   "-gt": int.__gt__, "-ge": int.__ge__}
        if op in numeric:
            try:
                return bool(numeric[op](int(left), int(right)))
            except ValueError:
                raise ValueError(f"{left if not left.lstrip('-').isdigit() else right}: bad number") from None
    raise ValueError("unknown operand")


def _mode_string(directory: bool, mode: int) -> str:
    bits = "".join(c if mode & (1 << (8 - i)) else "-" for i, c in enumerate("rwxrwxrwx"))
    return ("d" if directory else "-") + bits


@builtin("ls")
async def _ls(shell: Shell, argv: list[str], io_: IO) -> int:
    flags = set("".join(a[1:] for a in argv[1:] if a.startswith("-") and len(a) > 1))
    paths = [a for a in argv[1:] if not a.startswith("-") or a == "-"] or ["."]
    long_, everything = "l" in flags, "a" in flags or "A" in flags
    status = 0
    listings: list[tuple[str, list[tuple[str, str]]]] = []
    files: list[tuple[str, str]] = []
    for path in paths:
        absolute = shell.resolve(path)
        node = shell.fs.stat(absolute)
        if node is None:
            await io_.stderr.text(f"ls: {path}: No such file or directory\n")
            status = 1
        elif node.directory and "d" not in flags:
            names = [n for n in shell.fs.listdir(absolute) if everything or not n.startswith(".")]
            if "a" in flags:
                names = [".", "..", *names]
            listings.append((path, [(n, posixpath.join(absolute, n) if n not in (".", "..") else absolute)
                                    for n in names]))
        else:
            files.append((path, absolute))

    def line(name: str, absolute: str) -> str:
        if not long_:
            return name
        node = shell.fs.stat(absolute)
        assert node is not None
        size = 4096 if node.directory else len(node.data)
        stamp = time.strftime("%b %e %H:%M", time.gmtime(node.mtime))
        return f"{_mode_string(node.directory, node.mode)}    1 root     root    {size:>10} {stamp} {name}"

    out: list[str] = [line(n, a) for n, a in files]
    for index, (path, entries) in enumerate(listings):
        if len(paths) > 1:
            if out or index:
                out.append("")
            out.append(f"{path}:")
        if long_:
            out.append(f"total {len(entries)}")
        out.extend(line(n, a) for n, a in entries)
    if out:
        await io_.stdout.text("\n".join(out) + "\n")
    return status


@builtin("mkdir")
async def _mkdir(shell: Shell, argv: list[str], io_: IO) -> int:
    parents = "-p" in argv[1:]
    status = 0
    for path in (a for a in argv[1:] if not a.startswith("-")):
        try:
            shell.fs.mkdir(shell.resolve(path), parents=parents)
        except FsError as err:
            await io_.stderr.text(f"mkdir: can't create directory '{path}': {err.reason}\n")
            status = 1
    return status


@builtin("rm")
async def _rm(shell: Shell, argv: list[str], io_: IO) -> int:
    flags = set("".join(a[1:] for a in argv[1:] if a.startswith("-")))
    status = 0
    for path in (a for a in argv[1:] if not a.startswith("-")):
        absolute = shell.resolve(path)
        try:
            if shell.fs.is_dir(absolute) and not ({"r", "R"} & flags):
                raise FsError("EISDIR", absolute)
            shell.fs.remove(absolute, recursive=bool({"r", "R"} & flags))
        except FsError as err:
            if err.code == "ENOENT" and "f" in flags:
                continue
            await io_.stderr.text(f"rm: can't remove '{path}': {err.reason}\n")
            status = 1
    return status


@builtin("touch")
async def _touch(shell: Shell, argv: list[str], io_: IO) -> int:
    status = 0
    for path in (a for a in argv[1:] if not a.startswith("-")):
        try:
            shell.fs.touch(shell.resolve(path))
        except FsError as err:
            await io_.stderr.text(f"touch: {path}: {err.reason}\n")
            status = 1
    return status


async def _inputs(shell: Shell, name: str, paths: list[str], io_: IO) -> list[bytes] | None:
    if not paths:
        return [await io_.stdin.read_all()]
    out = []
    for path in paths:
        try:
            out.append(await io_.stdin.read_all() if path == "-" else shell.fs.read(shell.resolve(path)))
        except FsError as err:
            await io_.stderr.text(f"{name}: can't open '{path}': {err.reason}\n")
            return None
    return out


def _count_option(args: list[str], default: int) -> tuple[int, list[str]]:
    count, rest = default, []
    i = 0
    while i < len(args):
        if args[i] == "-n" and i + 1 < len(args):
            count = int(args[i + 1].lstrip("+-") or "0")
            i += 2
            continue
        if re.fullmatch(r"-n?\d+", args[i]):
            count = int(args[i].lstrip("-n"))
        else:
            rest.append(args[i])
        i += 1
    return count, rest


@builtin("head", "tail")
async def _head_tail(shell: Shell, argv: list[str], io_: IO) -> int:
    name = posixpath.basename(argv[0])
    try:
        count, paths = _count_option(argv[1:], 10)
    except ValueError:
        await io_.stderr.text(f"{name}: invalid number\n")
        return 1
    inputs = await _inputs(shell, name, paths, io_)
    if inputs is None:
        return 1
    for data in inputs:
        lines = data.splitlines(keepends=True)
        await io_.stdout.write(b"".join(lines[:count] if name == "head" else lines[-count:] if count else []))
    return 0


@builtin("wc")
async def _wc(shell: Shell, argv: list[str], io_: IO) -> int:
    flags = set("".join(a[1:] for a in argv[1:] if a.startswith("-"))) or {"l", "w", "c"}
    paths = [a for a in argv[1:] if not a.startswith("-")]
    inputs = await _inputs(shell, "wc", paths, io_)
    if inputs is None:
        return 1
    for index, data in enumerate(inputs):
        counts = [str(v) for k, v in (("l", data.count(b"\n")), ("w", len(data.split())), ("c", len(data)))
                  if k in flags]
        suffix = f" {paths[index]}" if paths else ""
        await io_.stdout.text(" ".join(f"{c:>7}" if len(counts) > 1 else c for c in counts) + suffix + "\n")
    return 0


@builtin("grep")
async def _grep(shell: Shell, argv: list[str], io_: IO) -> int:
    flags = set("".join(a[1:] for a in argv[1:] if a.startswith("-") and len(a) > 1 and a[1] != "-"))
    rest = [a for a in argv[1:] if not (a.startswith("-") and len(a) > 1)]
    if not rest:
        await io_.stderr.text("Usage: grep [-icvqE] PATTERN [FILE]...\n")
        return 2
    try:
        pattern = re.compile(rest[0] if "F" not in flags else re.escape(rest[0]), re.IGNORECASE if "i" in flags else 0)
    except re.error:
        await io_.stderr.text(f"grep: bad regex '{rest[0]}'\n")
        return 2
    inputs = await _inputs(shell, "grep", rest[1:], io_)
    if inputs is None:
        return 2
    found = 0
    for data in inputs:
        for raw in data.splitlines(keepends=True):
            text = raw.decode("utf-8", "replace")
            if bool(pattern.search(text)) != ("v" in flags):
                found += 1
                if not flags & {"c", "q"}:
                    await io_.stdout.write(raw if raw.endswith(b"\n") else raw + b"\n")
    if "c" in flags:
        await io_.stdout.text(f"{found}\n")
    return 0 if found else 1


@builtin("uname")
async def _uname(shell: Shell, argv: list[str], io_: IO) -> int:
    values = {"s": "Linux", "n": shell.hostname, "r": "6.8.0-kubesim", "v": "#1 SMP", "m": "x86_64"}
    flags = "".join(a[1:] for a in argv[1:] if a.startswith("-")) or "s"
    keys = "snrvm" if "a" in flags else [k for k in "snrvm" if k in flags]
    await io_.stdout.text(" ".join(values[k] for k in keys) + ("  GNU/Linux" if "a" in flags else "") + "\n")
    return 0


@builtin("whoami")
async def _whoami(shell: Shell, argv: list[str], io_: IO) -> int:
    await io_.stdout.text("root\n")
    return 0


@builtin("id")
async def _id(shell: Shell, argv: list[str], io_: IO) -> int:
    await io_.stdout.text("uid=0(root) gid=0(root) groups=0(root)\n")
    return 0


@builtin("which")
async def _which(shell: Shell, argv: list[str], io_: IO) -> int:
    status = 0
    for name in argv[1:]:
        if name in _BUILTINS:
            await io_.stdout.text(f"/bin/{name}\n")
        else:
            status = 1
    return status


@builtin("stty")
async def _stty(shell: Shell, argv: list[str], io_: IO) -> int:
    if argv[1:] == ["size"]:
        if not shell.tty:
            await io_.stderr.text("stty: standard input: Not a tty\n")
            return 1
        size = shell.terminal.current() or TerminalSize(80, 24)
        await io_.stdout.text(f"{size.height} {size.width}\n")
    return 0


@builtin("tar")
async def _tar(shell: Shell, argv: list[str], io_: IO) -> int:
    args = list(argv[1:])
    if args and not args[0].startswith("-"):
        args[0] = "-" + args[0]
    mode, archive, directory, gzip = "", None, shell.cwd, False
    paths: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg.startswith("--"):
            if arg.startswith("--directory="):
                directory = shell.resolve(arg.split("=", 1)[1])
            elif arg.startswith("--file="):
                archive = arg.split("=", 1)[1]
            continue
        if arg.startswith("-") and len(arg) > 1:
            for flag in arg[1:]:
                if flag in "cxt":
                    mode = flag
                elif flag == "z":
                    gzip = True
                elif flag == "f":
                    archive = args[i] if i < len(args) else "-"
                    i += 1
                elif flag == "C":
                    directory = shell.resolve(args[i]) if i < len(args) else directory
                    i += 1
            continue
        paths.append(arg)
    if not mode:
        await io_.stderr.text("tar: need exactly one of 'c', 'x' or 't'\n")
        return 1
    if mode == "c":
        return await _tar_create(shell, paths, directory, archive, gzip, io_)
    data = await io_.stdin.read_all() if archive in (None, "-") else None
    if data is None:
        try:
            data = shell.fs.read(shell.resolve(archive or ""))
        except FsError as err:
            await io_.stderr.text(f"tar: can't open '{archive}': {err.reason}\n")
            return 1
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as tar:
            members = tar.getmembers()
            if mode == "t":
                await io_.stdout.text("".join(m.name + ("/" if m.isdir() else "") + "\n" for m in members))
                return 0
            for member in members:
                name = posixpath.normpath("/" + member.name).lstrip("/")
                if not name or name == ".":
                    continue
                target = normalize(name, directory)
                if member.isdir():
                    shell.fs.mkdir(target, parents=True)
                elif member.isfile():
                    shell.fs.mkdir(posixpath.dirname(target), parents=True)
                    extracted = tar.extractfile(member)
                    content = extracted.read() if extracted is not None else b""
                    if shell.fs.is_dir(target):
                        raise FsError("EISDIR", target)
                    shell.fs.write(target, content, mode=member.mode & 0o7777 or 0o644)
    except tarfile.TarError as err:
        await io_.stderr.text(f"tar: invalid tar format: {err}\n" if data else "tar: short read\n")
        return 1
    except FsError as err:
        await io_.stderr.text(f"tar: can't open '{err.path}': {err.reason}\n")
        return 1
    return 0


async def _tar_create(shell: Shell, paths: list[str], directory: str, archive: str | None, gzip: bool,
                      io_: IO) -> int:
    if not paths:
        await io_.stderr.text("tar: empty archive\n")
        return 1
    buffer = io.BytesIO()
    status = 0
    warned = False
    with tarfile.open(fileobj=buffer, mode="w:gz" if gzip else "w", format=tarfile.GNU_FORMAT) as tar:
        for path in paths:
            absolute = normalize(path, directory)
            if not shell.fs.exists(absolute):
                await io_.stderr.text(f"tar: {path}: No such file or directory\n")
                status = 1
                continue
            if path.startswith("/") and not warned:
                warned = True
                await io_.stderr.text("tar: removing leading '/' from member names\n")
            base = posixpath.normpath(path).lstrip("/")
            for name, node in shell.fs.walk(absolute):
                relative = base + name[len(absolute):] if name != absolute else base
                info = tarfile.TarInfo(relative or ".")
                info.mtime = int(node.mtime)
                info.mode = node.mode & 0o7777
                info.uname = info.gname = "root"
                if node.directory:
                    info.type = tarfile.DIRTYPE
                    tar.addfile(info)
                else:
                    info.size = len(node.data)
                    tar.addfile(info, io.BytesIO(node.data))
    data = buffer.getvalue()
    if archive not in (None, "-"):
        try:
            shell.fs.write(shell.resolve(archive or ""), data)
        except FsError as err:
            await io_.stderr.text(f"tar: can't open '{archive}': {err.reason}\n")
            return 1
        return status
    for start in range(0, len(data), 256 * 1024):
        await io_.stdout.write(data[start:start + 256 * 1024])
    return status
