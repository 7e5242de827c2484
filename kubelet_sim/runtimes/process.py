"""The process runtime (``--runtime=process``): every container's command runs as a real process on this host.

For the few-node clusters that learners and controller developers run, a Pod
should do what its spec says: ``command: [python3, -m, http.server, "8000"]``
serves HTTP, prints to its log, exits with its own code. This runtime does
that, **unsandboxed**: the command runs as the user running kubelet_sim, with
its files and network. The image name is recorded, never pulled.

- **start**: the whole Pod is read once; the container's variables are the
  kubelet's (:func:`kubelet_sim.volumes.container_environment`, with this
  host's ``PATH`` standing in for the image's and ``HOME`` at the container's
  root); its ConfigMap, Secret, downward-API and emptyDir volumes are written
  under ``<root-dir>/<namespace>_<pod>_<uid>/volumes/`` and linked at their
  ``mountPath`` inside the container's root directory, which is also its
  working directory (``workingDir`` is taken inside it). Absolute paths in a
  command therefore mean the host's, relative ones the container's: ``cat
  etc/config/key`` reads the mounted ConfigMap. ``$(VAR)`` in ``command`` and
  ``args`` is expanded as Kubernetes does. A command that does not exist makes
  the container terminate at once with containerd's ``StartError`` (exit code
  128); a container without ``command`` or ``args`` cannot start (the image's
  entrypoint is unknown here);
- **output**: stdout and stderr become the container's log lines; with
  ``tty: true`` the process gets a pseudo-terminal and one merged output;
- **exit**: the process's exit code drives the container state (a signal N is
  exit code 128+N); whatever is left of its process group is killed then, as
  a container's cgroup would be;
- **stop**: SIGTERM to the process group, SIGKILL when the grace period ends;
- **exec** runs a command with the container's variables and directory (a
  pseudo-terminal for ``-t``, resized as the client asks); a client that goes
  away kills it; **attach** joins the container's output and, with ``stdin:
  true``, its stdin (closed after the first attach with ``stdinOnce``);
  **port-forward** connects to the port on 127.0.0.1, where the processes
  listen (the Pods share this host's network, so their IP is the node's).

Nothing is left behind: :meth:`ProcessRuntime.close` (kubelet_sim stopping)
terminates every container and exec, then SIGKILLs what remains; if
kubelet_sim dies without stopping (SIGKILL, a crash), each first process gets
Linux's parent-death signal (``setpriv --pdeathsig KILL``) and the
:mod:`~kubelet_sim.runtimes.watchdog` kills the rest of each process group.

Concurrency: on the event loop. Each container process has a reader task per
output and a waiter task; exec sessions own their process for their lifetime.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import shutil
import signal
import struct
import tempfile
import termios
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import httpx

from kubelet_sim.pods import SimPod
from kubelet_sim.prober import Probe, Result
from kubelet_sim.runtime import ContainerLog, SimContainer
from kubelet_sim.runtimes import OnExit, StartError, Usage, connection_refused
from kubelet_sim.runtimes.simulated import (
    ApiObjects,
    container_spec,
    etc_hosts,
    node_client,
    read_pod,
    resolv_conf,
)
from kubelet_sim.runtimes.watchdog import Watchdog
from kubelet_sim.streaming.portforward import Channel, PortForwardError, pipe
from kubelet_sim.streaming.session import ExecError, Session, TerminalSize
from kubelet_sim.volumes import VolumeError, container_environment, expand, pod_hostname, volume_files
from machinery.client import Client

log = logging.getLogger("kubelet_sim.process")

#: Exit code containerd reports for a container whose process could not be started.
START_ERROR_EXIT_CODE: Final = 128
#: How long kubelet_sim waits for its processes to stop on SIGTERM before SIGKILL, when it stops itself.
SHUTDOWN_GRACE: Final = 3.0
_CLOCK_TICKS: Final = os.sysconf("SC_CLK_TCK")
_PAGE_SIZE: Final = os.sysconf("SC_PAGE_SIZE")
_DIE_WITH_PARENT: Final = ["setpriv", "--pdeathsig", "KILL", "--"] if shutil.which("setpriv") else []


def exit_code(returncode: int) -> int:
    """asyncio's returncode (negative for a signal) as a container's exit code."""
    return 128 - returncode if returncode < 0 else returncode


def kill_group(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def set_window(fd: int, size: TerminalSize) -> None:
    with contextlib.suppress(OSError):
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", size.height, size.width, 0, 0))


class Fanout:
    """A process's output to any number of attached sessions (each a queue; None at the end)."""

    def __init__(self) -> None:
        self._subscribers: set[asyncio.Queue[bytes | None]] = set()
        self.closed = False

    def subscribe(self) -> asyncio.Queue[bytes | None]:
        queue: asyncio.Queue[bytes | None] = asyncio.Queue(maxsize=256)
        if self.closed:
            queue.put_nowait(None)
        else:
            self._subscribers.add(queue)
        return queue

    def unsubscribe(self, queue: asyncio.Queue[bytes | None]) -> None:
        self._subscribers.discard(queue)

    def publish(self, data: bytes) -> None:
        for queue in list(self._subscribers):
            if queue.full():
                # A session that does not keep up loses output rather than stalling the container.
                continue
            queue.put_nowait(data)

    def close(self) -> None:
        self.closed = True
        for queue in self._subscribers:
            with contextlib.suppress(asyncio.QueueFull):
                queue.put_nowait(None)
        self._subscribers.clear()


class LineLog:
    """Bytes to log lines: complete lines as they come, the rest when the output ends."""

    def __init__(self, log_: ContainerLog) -> None:
        self._log = log_
        self._partial = b""

    def feed(self, data: bytes) -> None:
        self._partial += data
        *lines, self._partial = self._partial.split(b"\n")
        now = time.time()
        for line in lines:
            self._log.write(line.rstrip(b"\r").decode("utf-8", "replace"), now)

    def flush(self) -> None:
        if self._partial:
            self._log.write(self._partial.rstrip(b"\r").decode("utf-8", "replace"), time.time())
            self._partial = b""


@dataclass(eq=False)
class Spawned:
    """A started process: its pid (also its process group), its streams or its terminal."""

    process: asyncio.subprocess.Process
    master: int | None = None
    #: Waits for the process, then takes its group off the watchdog's list.
    reaped: asyncio.Future[None] | None = None

    @property
    def pid(self) -> int:
        return self.process.pid


def resolve_executable(command: str, path: str) -> str | None:
    if "/" in command:
        return command if os.access(command, os.X_OK) and not os.path.isdir(command) else None
    return shutil.which(command, path=path)


async def spawn(argv: Sequence[str], *, env: dict[str, str], cwd: str, stdin: bool, tty: bool,
                watchdog: Watchdog) -> Spawned:
    """Start ``argv`` in its own session (and process group), dying with kubelet_sim (its group too)."""
    spawned = await _spawn(argv, env=env, cwd=cwd, stdin=stdin, tty=tty)
    pid = spawned.pid
    watchdog.watch(pid)

    async def reap() -> None:
        await spawned.process.wait()
        watchdog.forget(pid)

    spawned.reaped = asyncio.ensure_future(reap())
    return spawned


async def _spawn(argv: Sequence[str], *, env: dict[str, str], cwd: str, stdin: bool, tty: bool) -> Spawned:
    if tty:
        master, slave = os.openpty()
        os.set_blocking(master, False)
        try:
            # setsid --ctty: a new session whose controlling terminal is the pty, as a container's shell has.
            process = await asyncio.create_subprocess_exec(
                *_DIE_WITH_PARENT, "setsid", "--ctty", "--", *argv, stdin=slave, stdout=slave, stderr=slave,
                env=env, cwd=cwd)
        except BaseException:
            os.close(master)
            raise
        finally:
            os.close(slave)
        return Spawned(process, master)
    process = await asyncio.create_subprocess_exec(
        *_DIE_WITH_PARENT, *argv, stdin=asyncio.subprocess.PIPE if stdin else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env, cwd=cwd, start_new_session=True)
    return Spawned(process)


async def read_master(master: int, on_data: Callable[[bytes], None]) -> None:
    """Read a pty master until the terminal's other side is closed."""
    loop = asyncio.get_running_loop()
    readable = asyncio.Event()
    loop.add_reader(master, readable.set)
    try:
        while True:
            await readable.wait()
            readable.clear()
            try:
                data = os.read(master, 65536)
            except BlockingIOError:
                continue
            except OSError:
                return
            if not data:
                return
            on_data(data)
    finally:
        loop.remove_reader(master)


async def write_master(master: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        try:
            written = os.write(master, view)
        except BlockingIOError:
            await asyncio.sleep(0.005)
            continue
        view = view[written:]


@dataclass(eq=False)
class ContainerProcess:
    """The process of one container instance."""

    container_id: str
    spawned: Spawned
    output: Fanout = field(default_factory=Fanout)
    stdin_once: bool = False
    attached_once: bool = False
    exited: asyncio.Event = field(default_factory=asyncio.Event)
    kill_timer: asyncio.TimerHandle | None = None
    tasks: list[asyncio.Task[None]] = field(default_factory=list)
    #: The last usage sample: cumulative core-seconds, nanocores since the one before, when.
    core_seconds: float = 0.0
    nano_cores: int = 0
    sampled_at: float | None = None

    async def write_stdin(self, data: bytes) -> None:
        if self.spawned.master is not None:
            await write_master(self.spawned.master, data)
        elif self.spawned.process.stdin is not None and not self.spawned.process.stdin.is_closing():
            self.spawned.process.stdin.write(data)
            await self.spawned.process.stdin.drain()

    def close_stdin(self) -> None:
        if self.spawned.master is None and self.spawned.process.stdin is not None:
            self.spawned.process.stdin.close()

    def takes_stdin(self) -> bool:
        """Whether an attach's stdin reaches the process: it has one, and ``stdinOnce`` has not used it up."""
        has_stdin = self.spawned.master is not None or self.spawned.process.stdin is not None
        return has_stdin and not (self.stdin_once and self.attached_once)


@dataclass(frozen=True, slots=True)
class Prepared:
    """Where and how a container's commands run."""

    env: dict[str, str]
    cwd: str
    spec: dict[str, Any]


class ProcessRuntime:
    """Containers as real processes; see the module docstring for what that means and what it does not."""

    name: Final = "process"

    def __init__(self, client: Client, root_dir: Path | None = None) -> None:
        self._client = client
        self._temporary = root_dir is None
        self.root_dir = Path(tempfile.mkdtemp(prefix="kubesim-process-runtime-")) if root_dir is None else root_dir
        self.root_dir.mkdir(parents=True, exist_ok=True)
        self._containers: dict[tuple[str, str], ContainerProcess] = {}
        self._execs: dict[tuple[str, str], set[Spawned]] = {}
        self._prepared: dict[tuple[str, str], Prepared] = {}
        self._snapshot: tuple[float, dict[int, tuple[int, int]]] | None = None
        self.watchdog = Watchdog()

    @property
    def runs_processes(self) -> bool:
        return True

    # --- the container's directory and variables ------------------------------------------------

    def pod_dir(self, pod: SimPod) -> Path:
        return self.root_dir / f"{pod.namespace}_{pod.name}_{pod.uid}"

    async def prepare(self, pod: SimPod, container: SimContainer) -> Prepared:
        """Write the volumes, link the mounts, build the variables; VolumeError when that cannot be done."""
        client = node_client(pod, self._client)
        objects = ApiObjects(client)
        wire = await read_pod(client, pod)
        spec = container_spec(wire, container.name)
        hostname = pod_hostname(wire)
        base = self.pod_dir(pod)
        rootfs = base / "containers" / container.name / "rootfs"
        env = await container_environment(wire, spec, objects, hostname=hostname,
                                          node_allocatable=pod.node.planned.group.allocatable,
                                          tty=bool(spec.get("tty")))
        env["PATH"] = next((v["value"] for v in spec.get("env") or () if v.get("name") == "PATH" and "value" in v),
                           os.environ.get("PATH", env["PATH"]))
        env.setdefault("HOME", str(rootfs))
        if env.get("HOME") == "/root":
            env["HOME"] = str(rootfs)
        files = await volume_files(wire, objects)
        rootfs.mkdir(parents=True, exist_ok=True)
        volumes_dir = base / "volumes"
        for name, content in files.items():
            directory = volumes_dir / name
            directory.mkdir(parents=True, exist_ok=True)
            for relative, (data, mode) in content.items():
                target = (directory / relative).resolve()
                if not str(target).startswith(str(directory.resolve())):
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
                target.chmod(mode & 0o777)
        etc = rootfs / "etc"
        etc.mkdir(exist_ok=True)
        (etc / "hostname").write_text(hostname + "\n")
        (etc / "hosts").write_bytes(etc_hosts(pod.pod_ip, hostname))
        (etc / "resolv.conf").write_bytes(resolv_conf(pod.namespace))
        for mount in spec.get("volumeMounts") or ():
            source = volumes_dir / str(mount.get("name"))
            sub = str(mount.get("subPath") or "").strip("/")
            if sub:
                source = source / sub
            link = rootfs / str(mount.get("mountPath") or "/").lstrip("/")
            link.parent.mkdir(parents=True, exist_ok=True)
            if link.is_symlink() or link.is_file():
                link.unlink()
            elif link.is_dir():
                shutil.rmtree(link)
            link.symlink_to(source)
        cwd = rootfs / str(spec.get("workingDir") or "").lstrip("/")
        cwd.mkdir(parents=True, exist_ok=True)
        prepared = Prepared(env, str(cwd), spec)
        self._prepared[(pod.uid, container.name)] = prepared
        return prepared

    # --- containers ---------------------------------------------------------------------------------

    async def start(self, pod: SimPod, container: SimContainer, on_exit: OnExit) -> None:
        try:
            prepared = await self.prepare(pod, container)
        except VolumeError as err:
            raise StartError(str(err)) from None
        spec = prepared.spec
        argv = [expand(str(a), prepared.env) for a in [*(spec.get("command") or ()), *(spec.get("args") or ())]]
        if not argv:
            raise StartError(f'the process runtime cannot run image "{container.image}" without a command: '
                             "its entrypoint is unknown here (set command or args)")
        executable = resolve_executable(argv[0], prepared.env["PATH"])
        if executable is None:
            raise StartError(f'failed to create containerd task: failed to create shim task: OCI runtime create '
                             f'failed: runc create failed: unable to start container process: exec: "{argv[0]}": '
                             f'executable file not found in $PATH: unknown')
        tty = bool(spec.get("tty"))
        try:
            spawned = await spawn([executable, *argv[1:]], env=prepared.env, cwd=prepared.cwd,
                                  stdin=bool(spec.get("stdin")), tty=tty, watchdog=self.watchdog)
        except OSError as err:
            raise StartError(f"failed to start the container process: {err}") from None
        key = (pod.uid, container.name)
        process = ContainerProcess(container.container_id, spawned, stdin_once=bool(spec.get("stdinOnce")))
        self._containers[key] = process
        log.info("started %s/%s container %s: pid %d, %s", pod.namespace, pod.name, container.name, spawned.pid,
                 argv)
        assert container.log is not None
        lines = LineLog(container.log)

        def output(data: bytes) -> None:
            lines.feed(data)
            process.output.publish(data)

        readers: list[asyncio.Task[None]] = []
        if spawned.master is not None:
            readers.append(asyncio.create_task(read_master(spawned.master, output), name="container-tty"))
        else:
            for stream in (spawned.process.stdout, spawned.process.stderr):
                assert stream is not None
                readers.append(asyncio.create_task(_read_stream(stream, output), name="container-output"))

        async def wait() -> None:
            returncode = await spawned.process.wait()
            # The container's "cgroup": what its process left running goes with it.
            kill_group(spawned.pid, signal.SIGKILL)
            await asyncio.wait(readers, timeout=2.0)
            for reader in readers:
                reader.cancel()
            lines.flush()
            if spawned.master is not None:
                with contextlib.suppress(OSError):
                    os.close(spawned.master)
            process.output.close()
            if process.kill_timer is not None:
                process.kill_timer.cancel()
            process.exited.set()
            self._kill_execs(key)
            if self._containers.get(key) is process:
                del self._containers[key]
            code = exit_code(returncode)
            log.info("container %s of %s/%s exited with code %d", container.name, pod.namespace, pod.name, code)
            on_exit(code)

        process.tasks = [*readers, asyncio.create_task(wait(), name="container-wait")]

    def stop(self, pod: SimPod, container: SimContainer, grace: float) -> None:
        process = self._containers.get((pod.uid, container.name))
        if process is None or process.exited.is_set():
            return
        kill_group(process.spawned.pid, signal.SIGTERM if grace > 0 else signal.SIGKILL)
        if grace > 0:
            loop = asyncio.get_running_loop()
            process.kill_timer = loop.call_later(grace, kill_group, process.spawned.pid, signal.SIGKILL)

    def usage(self, pod: SimPod, container: SimContainer, now: float) -> Usage | None:
        """The container's processes' cpu time and resident memory, read from /proc (its process group)."""
        process = self._containers.get((pod.uid, container.name))
        if process is None:
            return None
        snapshot = self._proc_snapshot(now)
        ticks, pages = snapshot.get(process.spawned.pid, (0, 0))
        core_seconds = max(ticks / _CLOCK_TICKS, process.core_seconds)
        if process.sampled_at is not None and now > process.sampled_at:
            process.nano_cores = int((core_seconds - process.core_seconds) / (now - process.sampled_at) * 1e9)
        process.core_seconds, process.sampled_at = core_seconds, now
        return core_seconds, process.nano_cores, pages * _PAGE_SIZE

    def _proc_snapshot(self, now: float) -> dict[int, tuple[int, int]]:
        """Process group -> (cpu ticks, resident pages) of every process on the host, read at most once a second."""
        if self._snapshot is not None and now - self._snapshot[0] < 1.0:
            return self._snapshot[1]
        groups: dict[int, tuple[int, int]] = {}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat", "rb") as f:
                    rest = f.read().rsplit(b")", 1)[1].split()
            except OSError:
                continue
            # Fields after the command: [2] pgrp, [11:15] utime stime cutime cstime, [21] rss (pages).
            group = int(rest[2])
            ticks = sum(int(x) for x in rest[11:15])
            total, pages = groups.get(group, (0, 0))
            groups[group] = (total + ticks, pages + int(rest[21]))
        self._snapshot = (now, groups)
        return groups

    def prepared(self, pod: SimPod, container: SimContainer) -> Prepared | None:
        return self._prepared.get((pod.uid, container.name))

    async def probe(self, pod: SimPod, container: SimContainer, probe: Probe) -> Result:
        return await probe_process(self, pod, container, probe)

    def running(self, pod: SimPod, container: SimContainer) -> ContainerProcess | None:
        return self._containers.get((pod.uid, container.name))

    def forget(self, pod: SimPod) -> None:
        """The Pod is gone: kill whatever of it still runs and remove its directory."""
        for (uid, name), process in list(self._containers.items()):
            if uid == pod.uid:
                kill_group(process.spawned.pid, signal.SIGKILL)
        for key in [k for k in self._execs if k[0] == pod.uid]:
            self._kill_execs(key)
        for key in [k for k in self._prepared if k[0] == pod.uid]:
            del self._prepared[key]
        shutil.rmtree(self.pod_dir(pod), ignore_errors=True)

    def _kill_execs(self, key: tuple[str, str]) -> None:
        for spawned in self._execs.pop(key, set()):
            kill_group(spawned.pid, signal.SIGKILL)

    async def close(self) -> None:
        """Stop every container and exec: SIGTERM, then SIGKILL after :data:`SHUTDOWN_GRACE`."""
        processes = list(self._containers.values())
        execs = [s for group in self._execs.values() for s in group]
        for process in processes:
            kill_group(process.spawned.pid, signal.SIGTERM)
        for spawned in execs:
            kill_group(spawned.pid, signal.SIGKILL)
        waits = [p.spawned.process.wait() for p in processes] + [s.process.wait() for s in execs]
        if waits:
            _, pending = await asyncio.wait([asyncio.ensure_future(w) for w in waits], timeout=SHUTDOWN_GRACE)
            for process in processes:
                kill_group(process.spawned.pid, signal.SIGKILL)
            if pending:
                await asyncio.wait(pending, timeout=5.0)
        for process in processes:
            for task in process.tasks:
                task.cancel()
            await asyncio.gather(*process.tasks, return_exceptions=True)
        self.watchdog.close()
        if self._temporary:
            shutil.rmtree(self.root_dir, ignore_errors=True)

    # --- exec, attach, port-forward -------------------------------------------------------------------

    async def exec(self, pod: SimPod, container: SimContainer, command: Sequence[str], session: Session) -> int:
        prepared = self._prepared.get((pod.uid, container.name))
        if prepared is None:
            try:
                prepared = await self.prepare(pod, container)
            except VolumeError as err:
                raise ExecError(str(err)) from None
        env = dict(prepared.env)
        if session.tty:
            env.setdefault("TERM", "xterm")
        if not command:
            raise ExecError("failed to exec in container: no command given")
        executable = resolve_executable(command[0], env["PATH"])
        if executable is None:
            raise ExecError(f'failed to exec in container: failed to start exec: OCI runtime exec failed: exec '
                            f'failed: unable to start container process: exec: "{command[0]}": executable file not '
                            f'found in $PATH: unknown')
        spawned = await spawn([executable, *command[1:]], env=env, cwd=prepared.cwd, stdin=session.stdin is not None,
                              tty=session.tty, watchdog=self.watchdog)
        key = (pod.uid, container.name)
        self._execs.setdefault(key, set()).add(spawned)
        try:
            return await _run_exec(spawned, session)
        finally:
            kill_group(spawned.pid, signal.SIGKILL)
            self._execs.get(key, set()).discard(spawned)
            if spawned.master is not None:
                with contextlib.suppress(OSError):
                    os.close(spawned.master)

    async def attach(self, pod: SimPod, container: SimContainer, session: Session) -> int:
        process = self._containers.get((pod.uid, container.name))
        if process is None:
            return 0
        queue = process.output.subscribe()
        feeding: asyncio.Task[None] | None = None
        if session.stdin is not None and process.takes_stdin():
            feeding = asyncio.create_task(_feed_stdin(session, process), name="attach-stdin")
        resizing = asyncio.create_task(_resizes(session, process.spawned.master), name="attach-resize") \
            if session.tty and process.spawned.master is not None else None
        try:
            while True:
                get = asyncio.ensure_future(queue.get())
                gone = asyncio.ensure_future(session.gone.wait())
                done, _ = await asyncio.wait({get, gone}, return_when=asyncio.FIRST_COMPLETED)
                gone.cancel()
                if get not in done:
                    get.cancel()
                    break
                data = get.result()
                if data is None:
                    break
                await session.write_out(data)
                if feeding is not None and feeding.done() and session.stdin is not None and process.stdin_once:
                    break
        finally:
            process.output.unsubscribe(queue)
            for task in (feeding, resizing):
                if task is not None:
                    task.cancel()
            process.attached_once = True
            if process.stdin_once:
                process.close_stdin()
        return 0

    async def port_forward(self, pod: SimPod, port: int, channel: Channel) -> None:
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            raise PortForwardError(connection_refused(pod.uid, port)) from None
        await pipe(channel, reader, writer)


async def _read_stream(stream: asyncio.StreamReader, on_data: Callable[[bytes], None]) -> None:
    while data := await stream.read(65536):
        on_data(data)


async def _feed_stdin(session: Session, process: ContainerProcess) -> None:
    assert session.stdin is not None
    while data := await session.stdin.read():
        await process.write_stdin(data)
    if process.stdin_once:
        process.close_stdin()


async def _resizes(session: Session, master: int | None) -> None:
    while True:
        size = await session.resizes.get()
        if master is not None:
            set_window(master, size)


async def _run_exec(spawned: Spawned, session: Session) -> int:
    """Copy the session to the exec'd process and back until it exits (or the client leaves)."""
    tasks: list[asyncio.Task[Any]] = []
    if spawned.master is not None:
        master = spawned.master
        chunks: asyncio.Queue[bytes] = asyncio.Queue()
        tasks.append(asyncio.create_task(read_master(master, chunks.put_nowait), name="exec-tty-read"))
        tasks.append(asyncio.create_task(_resizes(session, master), name="exec-resize"))

        async def forward_output() -> None:
            while True:
                await session.write_out(await chunks.get())
        tasks.append(asyncio.create_task(forward_output(), name="exec-tty-out"))
        if session.stdin is not None:
            async def forward_input() -> None:
                assert session.stdin is not None
                while data := await session.stdin.read():
                    await write_master(master, data)
            tasks.append(asyncio.create_task(forward_input(), name="exec-tty-in"))
        readers: list[asyncio.Task[Any]] = [tasks[0]]
    else:
        process = spawned.process
        assert process.stdout is not None and process.stderr is not None
        out, err = process.stdout, process.stderr

        async def copy(stream: asyncio.StreamReader, write: Callable[[bytes], Any]) -> None:
            while data := await stream.read(65536):
                await write(data)
        readers = [asyncio.create_task(copy(out, session.write_out), name="exec-out"),
                   asyncio.create_task(copy(err, session.write_err), name="exec-err")]
        tasks.extend(readers)
        if session.stdin is not None and process.stdin is not None:
            stdin_writer = process.stdin

            async def forward_input() -> None:
                assert session.stdin is not None
                with contextlib.suppress(ConnectionError, BrokenPipeError):
                    while data := await session.stdin.read():
                        stdin_writer.write(data)
                        await stdin_writer.drain()
                stdin_writer.close()
            tasks.append(asyncio.create_task(forward_input(), name="exec-in"))
    waiting = asyncio.create_task(spawned.process.wait(), name="exec-wait")
    gone = asyncio.create_task(session.gone.wait(), name="exec-gone")
    try:
        await asyncio.wait({waiting, gone}, return_when=asyncio.FIRST_COMPLETED)
        if not waiting.done():
            # The client left: the command goes too, and frees what it held.
            kill_group(spawned.pid, signal.SIGKILL)
            await waiting
        kill_group(spawned.pid, signal.SIGKILL)
        # What the process wrote before it exited still reaches the client.
        await asyncio.wait(readers, timeout=2.0)
        if spawned.master is not None:
            await asyncio.sleep(0)
            while not chunks.empty():
                await session.write_out(chunks.get_nowait())
        return exit_code(waiting.result())
    finally:
        for task in (*tasks, gone):
            task.cancel()
        await asyncio.gather(*tasks, gone, return_exceptions=True)


# --- probes -----------------------------------------------------------------------------------------------


def named_port(spec: dict[str, Any], port: Any) -> int | None:
    """A probe's port: a number, or the name of one of the container's ports."""
    if isinstance(port, int):
        return port
    if isinstance(port, str) and port.isdigit():
        return int(port)
    return next((int(p["containerPort"]) for p in spec.get("ports") or () if p.get("name") == port), None)


async def probe_process(runtime: ProcessRuntime, pod: SimPod, container: SimContainer, probe: Probe) -> Result:
    """A real check: run the command, GET the URL or open the socket, on this host (the Pod's network)."""
    prepared = runtime.prepared(pod, container)
    spec = prepared.spec if prepared is not None else {}
    handler = probe.handler
    host = "127.0.0.1"
    if "exec" in handler:
        command = [str(a) for a in (handler["exec"] or {}).get("command") or ()]
        if prepared is None or not command:
            return Result(False, "no command to run")
        executable = resolve_executable(command[0], prepared.env["PATH"])
        if executable is None:
            return Result(False, f'exec: "{command[0]}": executable file not found in $PATH')
        spawned = await spawn([executable, *command[1:]], env=prepared.env, cwd=prepared.cwd, stdin=False, tty=False,
                              watchdog=runtime.watchdog)
        try:
            out, err = await spawned.process.communicate()
        finally:
            kill_group(spawned.pid, signal.SIGKILL)
        code = exit_code(spawned.process.returncode or 0)
        output = (out + err).decode("utf-8", "replace").strip()
        return Result(True) if code == 0 else Result(False, output or f"command terminated with exit code {code}")
    if "httpGet" in handler:
        get = handler["httpGet"] or {}
        port = named_port(spec, get.get("port"))
        scheme = str(get.get("scheme") or "HTTP").lower()
        target = get.get("host") or host
        url = f"{scheme}://{target}:{port}{get.get('path') or '/'}"
        headers = {h.get("name", ""): h.get("value", "") for h in get.get("httpHeaders") or ()}
        headers.setdefault("User-Agent", "kube-probe/1.32")
        try:
            async with httpx.AsyncClient(verify=False, timeout=probe.timeout) as http:
                response = await http.get(url, headers=headers)
        except httpx.HTTPError as err:
            return Result(False, f'Get "{url}": {err}')
        if 200 <= response.status_code < 400:
            return Result(True)
        return Result(False, f"HTTP probe failed with statuscode: {response.status_code}")
    if "tcpSocket" in handler:
        tcp = handler["tcpSocket"] or {}
        port = named_port(spec, tcp.get("port"))
        try:
            _, writer = await asyncio.wait_for(asyncio.open_connection(tcp.get("host") or host, port), probe.timeout)
        except (OSError, TimeoutError):
            return Result(False, f"dial tcp {host}:{port}: connect: connection refused")
        writer.close()
        return Result(True)
    # gRPC probes would need the health protocol's client: they pass, as a probe kubesim cannot run.
    return Result(True)
