"""The simulated runtime's built-in shell (kubelet_sim.shell) over its filesystem (kubelet_sim.rootfs)."""

from __future__ import annotations

import asyncio
import io
import tarfile

import pytest

from kubelet_sim.rootfs import FsError, RootFS
from kubelet_sim.shell import IO, ExitShell, Reader, Shell, Writer, parse, run_session
from kubelet_sim.streaming.session import ExecError, Pipe, Session, TerminalSize


def _shell() -> Shell:
    fs = RootFS()
    fs.mount({"/etc/config": ({"key": (b"value1", 0o644), "nested/deep": (b"D", 0o600)}, True),
              "/data": ({}, False)})
    return Shell(fs, {"PATH": "/bin", "HOSTNAME": "web-1", "GREETING": "hello world"}, "web-1")


async def _run(shell: Shell, script: str, stdin: bytes = b"") -> tuple[int, str, str]:
    out, err = Writer(), Writer()
    try:
        code = await shell.run_script(script, IO(Reader(data=stdin), out, err))
    except ExitShell as exit_:
        code = exit_.code
    return code, out.captured.decode(), err.captured.decode()


@pytest.mark.parametrize(("script", "expected"), [
    pytest.param("echo hi", (0, "hi\n", ""), id="echo"),
    pytest.param("echo -n a; echo b", (0, "ab\n", ""), id="echo-n"),
    pytest.param("printf '%s=%d\\n' a 1 b 2", (0, "a=1\nb=2\n", ""), id="printf"),
    pytest.param("cat /etc/config/key", (0, "value1", ""), id="cat-configmap-file"),
    pytest.param("cat /nope", (1, "", "cat: can't open '/nope': No such file or directory\n"), id="cat-missing"),
    pytest.param("ls /etc/config", (0, "key\nnested\n", ""), id="ls"),
    pytest.param("ls /nope", (1, "", "ls: /nope: No such file or directory\n"), id="ls-missing"),
    pytest.param("hostname", (0, "web-1\n", ""), id="hostname"),
    pytest.param("printenv GREETING", (0, "hello world\n", ""), id="printenv"),
    pytest.param("nosuch --flag", (127, "", "sh: nosuch: not found\n"), id="not-found"),
    pytest.param("false || echo fallback && echo and", (0, "fallback\nand\n", ""), id="and-or"),
    pytest.param("sh -c 'exit 3'; echo $?", (0, "3\n", ""), id="exit-status"),
    pytest.param("exit 4", (4, "", ""), id="exit"),
    pytest.param("echo $GREETING | wc -w", (0, "2\n", ""), id="pipe-and-field-splitting"),
    pytest.param('echo "$GREETING" \'$GREETING\'', (0, "hello world $GREETING\n", ""), id="quotes"),
    pytest.param("echo ${MISSING:-default} $(hostname)", (0, "default web-1\n", ""), id="expansions"),
    pytest.param("X=1 env | grep ^X=; echo ${X:-unset}", (0, "X=1\nunset\n", ""), id="prefix-assignment"),
    pytest.param("echo no > /etc/config/key",
                 (1, "", "sh: can't create /etc/config/key: Read-only file system\n"), id="read-only-mount"),
    pytest.param("echo a > /data/f; echo b >> /data/f; cat /data/f", (0, "a\nb\n", ""), id="redirects"),
    pytest.param("cat nope 2>&1", (1, "cat: can't open 'nope': No such file or directory\n", ""), id="2>&1"),
    pytest.param("test -d /etc/config && [ -f /etc/config/key ] && test ! -e /x && echo ok",
                 (0, "ok\n", ""), id="test"),
    pytest.param("cd /etc/config; pwd; ls n*", (0, "/etc/config\ndeep\n", ""), id="cd-and-glob"),
    pytest.param("if true; then echo; fi", (2, "", 'sh: syntax error: unexpected "if"\n'), id="unsupported-syntax"),
    pytest.param("echo 'open", (2, "", "sh: syntax error: unterminated quoted string\n"), id="unterminated"),
    pytest.param("head -n 1", (0, "one\n", ""), id="head-stdin"),
])
async def test_scripts(script: str, expected: tuple[int, str, str]) -> None:
    assert await _run(_shell(), script, stdin=b"one\ntwo\n") == expected


async def test_tar_round_trip_as_kubectl_cp_runs_it() -> None:
    source = io.BytesIO()
    with tarfile.open(fileobj=source, mode="w") as tar:
        for name, data in (("dir/a.txt", b"A"), ("dir/sub/b.bin", bytes(range(256)))):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    shell = _shell()
    code, _, err = await _run(shell, "tar -xmf - -C /tmp", stdin=source.getvalue())
    assert (code, err) == (0, "")
    assert shell.fs.read("/tmp/dir/sub/b.bin") == bytes(range(256))
    out = Writer()
    code = await shell.run_script("tar cf - /tmp/dir", IO(Reader(), out, Writer()))
    with tarfile.open(fileobj=io.BytesIO(bytes(out.captured))) as tar:
        names = {m.name: m for m in tar.getmembers()}
        assert code == 0 and set(names) == {"tmp/dir", "tmp/dir/a.txt", "tmp/dir/sub", "tmp/dir/sub/b.bin"}
        extracted = tar.extractfile(names["tmp/dir/a.txt"])
        assert extracted is not None and extracted.read() == b"A"


async def test_a_written_layer_is_bounded() -> None:
    fs = RootFS(max_written_bytes=10)
    fs.write("/tmp/a", b"12345")
    with pytest.raises(FsError, match="No space left on device"):
        fs.write("/tmp/b", b"123456")
    fs.remove("/tmp/a")
    fs.write("/tmp/b", b"123456")


def test_mounts_are_replaced_when_remounted() -> None:
    fs = RootFS()
    fs.mount({"/etc/config": ({"a": (b"1", 0o644)}, True)})
    fs.write("/tmp/kept", b"x")
    fs.mount({"/etc/config": ({"b": (b"2", 0o644)}, True), "/etc/one-file": ({"": (b"f", 0o400)}, True)})
    assert fs.listdir("/etc/config") == ["b"]
    assert fs.read("/etc/one-file") == b"f"
    assert fs.read("/tmp/kept") == b"x"
    with pytest.raises(FsError, match="Read-only"):
        fs.remove("/etc/config/b")


def test_parse_keeps_operators_apart_from_words() -> None:
    script = parse("a 'b c'|d > f 2>&1 && e;g")
    assert [op for op, _ in script] == [";", "&&", ";"]
    first = script[0][1]
    assert len(first) == 2 and len(first[1].redirects) == 2


def _session(stdin: bytes | None, tty: bool) -> tuple[Session, bytearray, bytearray]:
    out, err = bytearray(), bytearray()

    class Sink:
        def __init__(self, buffer: bytearray) -> None:
            self.buffer = buffer

        async def write(self, data: bytes) -> None:
            self.buffer.extend(data)

        async def close(self) -> None:
            return

    pipe = None
    if stdin is not None:
        pipe = Pipe()

        async def fill(pipe: Pipe = pipe) -> None:
            await pipe.feed(stdin)
            pipe.feed_eof()
        _background.add(asyncio.create_task(fill()))
    return Session(pipe, Sink(out), Sink(err), tty), out, err


_background: set[asyncio.Task[None]] = set()


async def test_an_interactive_shell_on_a_tty_echoes_edits_and_resizes() -> None:
    session, out, _ = _session(b"echo hx\x7fi\rstty size\r\x03exit 6\r", tty=True)
    session.resizes.put_nowait(TerminalSize(120, 40))
    code = await run_session(_shell(), ["sh"], session)
    assert code == 6
    assert out.decode() == ("/ # echo hx\x08 \x08i\r\nhi\r\n/ # stty size\r\n40 120\r\n/ # ^C\r\n/ # exit 6\r\n")


async def test_a_resize_that_arrives_just_before_a_line_is_the_size_that_line_sees() -> None:
    # As on an exec's connection: the resize stream's reader wakes on the client's resize frame, the
    # shell's stdin on the next frame; the line must see the new size (the old shell, which copied sizes
    # with a task of its own, printed the old one).
    pipe = Pipe()
    out = bytearray()

    class Sink:
        async def write(self, data: bytes) -> None:
            out.extend(data)

        async def close(self) -> None:
            return

    session = Session(pipe, Sink(), Sink(), True)
    frame = asyncio.Event()

    async def read_resizes() -> None:
        await frame.wait()
        session.resizes.put_nowait(TerminalSize(132, 40))

    resizing = asyncio.create_task(read_resizes())
    running = asyncio.create_task(run_session(_shell(), ["sh"], session))
    await asyncio.sleep(0.01)
    frame.set()
    await pipe.feed(b"stty size\r")
    await asyncio.sleep(0.01)
    pipe.feed_eof()
    await running
    await resizing
    assert "stty size\r\n40 132\r\n" in out.decode()


async def test_a_script_on_stdin_without_a_tty() -> None:
    session, out, err = _session(b"echo one\nnope\necho two\n", tty=False)
    assert await run_session(_shell(), ["/bin/sh"], session) == 0
    assert (out.decode(), err.decode()) == ("one\ntwo\n", "sh: nope: not found\n")


async def test_a_command_that_is_not_in_the_image_is_an_exec_error() -> None:
    session, _, _ = _session(None, tty=False)
    with pytest.raises(ExecError, match='exec: "python": executable file not found in \\$PATH'):
        await run_session(_shell(), ["python", "-V"], session)


async def test_sleep_ends_when_the_client_goes_away() -> None:
    shell = _shell()
    task = asyncio.create_task(_run(shell, "sleep 30"))
    await asyncio.sleep(0.05)
    shell.gone.set()
    assert (await asyncio.wait_for(task, 5))[0] == 130
