"""What "running a container" means in kubelet_sim: a few timestamps, a log, and a script.

No process runs. A simulated container is a :class:`SimContainer`: the state the
kubelet reports (waiting, running, terminated, with Kubernetes' reasons), the
ids and image references a container runtime would give it, and a
:class:`ContainerLog` of the lines it "printed". What it does is scripted by the
Pod's annotations (:class:`Behaviour`):

- ``kubesim.io/startup-seconds``: from "the kubelet starts it" to running
  (default: the profile's start delay with jitter);
- ``kubesim.io/run-seconds``: the container exits this long after it started
  (default: never; init containers default to 0, they exit once started);
- ``kubesim.io/exit-code``: its exit code then (default 0);
- ``kubesim.io/ready-after-seconds``: ready this long after it started (default 0);
- ``kubesim.io/shutdown-seconds``: how long it takes to exit after SIGTERM
  (default 0; past the grace period it is killed, exit code 137);
- ``kubesim.io/log``: lines it prints after its start line.

Each key may also be given for one container as ``<key>.<container name>``
(``kubesim.io/exit-code.migrate``), which wins over the Pod-wide key; init
containers only read these per-container keys. A value that is not a
non-negative number is reported (the caller turns it into an Event) and the
default is used.

Restarts back off as the kubelet's ``flowcontrol.Backoff`` does for
CrashLoopBackOff: the first restart is immediate, then 10 s doubling to
5 minutes, measured from the exit; ten quiet minutes reset it.

Concurrency: everything here runs on the event loop; a container is changed
only by its Pod's owner (``kubelet_sim.pods``). Log followers wait on a future
that each new line resolves.
"""

from __future__ import annotations

import asyncio
import enum
import hashlib
import math
import os
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from kubelet_sim.rootfs import RootFS
from machinery.api.meta import format_time, utcnow

ANNOTATION_STARTUP: Final = "kubesim.io/startup-seconds"
ANNOTATION_RUN: Final = "kubesim.io/run-seconds"
ANNOTATION_EXIT_CODE: Final = "kubesim.io/exit-code"
ANNOTATION_READY_AFTER: Final = "kubesim.io/ready-after-seconds"
ANNOTATION_SHUTDOWN: Final = "kubesim.io/shutdown-seconds"
ANNOTATION_LOG: Final = "kubesim.io/log"

#: The kubelet's CrashLoopBackOff: 10 s doubling to 5 minutes (backOffPeriod, MaxContainerBackOff).
BACKOFF_INITIAL: Final = 10.0
BACKOFF_MAX: Final = 300.0
#: Exit code of a container killed with SIGKILL when its grace period runs out.
KILLED_EXIT_CODE: Final = 137
#: Lines kept per container instance: enough for any scripted log, bounded for 10,000 Pods.
MAX_LOG_LINES: Final = 1000

RUNTIME: Final = "containerd"


class State(enum.Enum):
    WAITING = "waiting"
    RUNNING = "running"
    TERMINATED = "terminated"


@dataclass(frozen=True, slots=True)
class Behaviour:
    """What one container instance does, read from the Pod's annotations when it starts."""

    startup: float
    run: float | None
    exit_code: int
    ready_after: float
    shutdown: float
    log: tuple[str, ...]


def behaviour(annotations: Mapping[str, str], container: str, *, init: bool,
              default_startup: float) -> tuple[Behaviour, list[str]]:
    """The container's behaviour and the problems found in its annotations (one message each)."""
    problems: list[str] = []

    def lookup(key: str) -> tuple[str, str] | None:
        specific = f"{key}.{container}"
        if specific in annotations:
            return specific, annotations[specific]
        if not init and key in annotations:
            return key, annotations[key]
        return None

    def seconds(key: str, default: float | None) -> float | None:
        found = lookup(key)
        if found is None:
            return default
        name, text = found
        try:
            number = float(text)
        except ValueError:
            number = -1.0
        if not math.isfinite(number) or number < 0:
            problems.append(f'annotation {name}: invalid value "{text}": '
                            "must be a non-negative number of seconds")
            return default
        return number

    exit_code = 0
    found = lookup(ANNOTATION_EXIT_CODE)
    if found is not None:
        name, text = found
        try:
            exit_code = int(text)
            if not 0 <= exit_code <= 255:
                raise ValueError
        except ValueError:
            problems.append(f'annotation {name}: invalid value "{text}": must be an integer from 0 to 255')
            exit_code = 0
    log_text = lookup(ANNOTATION_LOG)
    result = Behaviour(
        startup=seconds(ANNOTATION_STARTUP, default_startup) or 0.0,
        run=seconds(ANNOTATION_RUN, 0.0 if init else None),
        exit_code=exit_code,
        ready_after=seconds(ANNOTATION_READY_AFTER, 0.0) or 0.0,
        shutdown=seconds(ANNOTATION_SHUTDOWN, 0.0) or 0.0,
        log=tuple(log_text[1].splitlines()) if log_text is not None else (),
    )
    return result, problems


# --- images and ids ----------------------------------------------------------------------------------


def normalize_image(image: str) -> str:
    """The full reference containerd reports: ``nginx:1.25`` is ``docker.io/library/nginx:1.25``."""
    name, _, digest = image.partition("@")
    first, slash, rest = name.partition("/")
    if not slash or ("." not in first and ":" not in first and first != "localhost"):
        registry, path = "docker.io", name
    else:
        registry, path = first, rest
    if registry == "docker.io" and "/" not in path:
        path = f"library/{path}"
    if not digest and ":" not in path.rpartition("/")[2]:
        path += ":latest"
    return f"{registry}/{path}" + (f"@{digest}" if digest else "")


def image_id(image: str) -> str:
    """A stable digest reference for an image, as ``imageID`` carries it."""
    reference = normalize_image(image)
    repository = reference.partition("@")[0]
    last = repository.rpartition("/")[2]
    if ":" in last:
        repository = repository[:len(repository) - len(last)] + last.partition(":")[0]
    return f"{repository}@sha256:{hashlib.sha256(reference.encode()).hexdigest()}"


def image_size(image: str) -> int:
    """A stable, plausible image size in bytes (10 to 200 MB)."""
    digest = hashlib.sha256(image.encode()).digest()
    return 10_000_000 + int.from_bytes(digest[:4], "big") % 190_000_000


def new_container_id() -> str:
    return f"{RUNTIME}://{os.urandom(32).hex()}"


def go_duration(seconds: float) -> str:
    """Go's ``time.Duration.String()`` of a duration cut to milliseconds (``512ms``, ``1.5s``, ``5m0s``)."""
    millis = int(seconds * 1000)
    if millis == 0:
        return "0s"
    if millis < 1000:
        return f"{millis}ms"
    minutes, millis = divmod(millis, 60_000)
    hours, minutes = divmod(minutes, 60)
    whole, frac = divmod(millis, 1000)
    text = f"{whole}.{frac:03d}".rstrip("0").rstrip(".") + "s"
    if hours:
        return f"{hours}h{minutes}m{text}"
    if minutes:
        return f"{minutes}m{text}"
    return text


# --- logs --------------------------------------------------------------------------------------------


class ContainerLog:
    """The lines one container instance printed, with their times; followers wait for more."""

    __slots__ = ("_changed", "closed", "lines")

    def __init__(self) -> None:
        #: (wall-clock time as ``time.time()``, text) per line, oldest first.
        self.lines: list[tuple[float, str]] = []
        self.closed = False
        self._changed: asyncio.Future[None] | None = None

    def write(self, text: str, when: float) -> None:
        for line in text.splitlines() or [""]:
            self.lines.append((when, line))
        if len(self.lines) > MAX_LOG_LINES:
            del self.lines[:len(self.lines) - MAX_LOG_LINES]
        self._wake()

    def close(self) -> None:
        """The instance exited: followers get what is left and then the end of the stream."""
        self.closed = True
        self._wake()

    def _wake(self) -> None:
        if self._changed is not None and not self._changed.done():
            self._changed.set_result(None)
        self._changed = None

    async def read(self, start: int, *, follow: bool) -> AsyncIterator[tuple[float, str]]:
        """Lines from index ``start`` on; with ``follow``, then new ones until the log is closed."""
        position = start
        while True:
            # Lines dropped for the size bound shift the indexes; never re-send or skip past the end.
            position = min(position, len(self.lines))
            while position < len(self.lines):
                yield self.lines[position]
                position += 1
            if self.closed or not follow:
                return
            if self._changed is None:
                self._changed = asyncio.get_running_loop().create_future()
            await asyncio.shield(self._changed)


# --- containers --------------------------------------------------------------------------------------


@dataclass(slots=True)
class Terminated:
    """A ``ContainerStateTerminated``, with its times already in wire form."""

    exit_code: int
    reason: str
    started_at: str
    finished_at: str
    container_id: str = ""
    message: str = ""

    def wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {"exitCode": self.exit_code, "reason": self.reason}
        if self.message:
            out["message"] = self.message
        if self.started_at:
            out["startedAt"] = self.started_at
        if self.finished_at:
            out["finishedAt"] = self.finished_at
        if self.container_id:
            out["containerID"] = self.container_id
        return out


@dataclass(slots=True, eq=False)
class SimContainer:
    """One container of a Pod across its restarts, as the kubelet would report it."""

    name: str
    image: str
    init: bool = False
    #: An init container with ``restartPolicy: Always`` (a sidecar).
    sidecar: bool = False
    state: State = State.WAITING
    waiting_reason: str = "ContainerCreating"
    waiting_message: str = ""
    #: Set while the kubelet is starting it (pulling, creating): the next step is on a timer.
    starting: bool = False
    started_at: str = ""
    #: Loop time of the start, for the run and ready timers.
    started_mono: float = 0.0
    #: Wall-clock time of the start, to the microsecond (``startedAt`` has whole seconds only).
    started_wall: float = 0.0
    terminated: Terminated | None = None
    last_terminated: Terminated | None = None
    restart_count: int = 0
    container_id: str = ""
    ready: bool = False
    #: The instance was created at least once (``image``/``imageID`` come from the runtime then).
    created: bool = False
    backoff: float = 0.0
    backoff_updated: float | None = None
    log: ContainerLog | None = None
    previous_log: ContainerLog | None = None
    behaviour: Behaviour | None = None
    timers: list[Any] = field(default_factory=list)
    #: The simulated filesystem of this instance (created at the first exec, dropped at a restart).
    rootfs: RootFS | None = None
    #: This instance's probes (a ``kubelet_sim.prober.ContainerProber``), if it declares any.
    prober: Any = None
    #: False until a startup probe passes; None without a startup probe.
    startup_passed: bool | None = None
    #: The instance was killed because a liveness or startup probe gave up (it restarts unless Never).
    killed_by_probe: bool = False
    #: This instance's simulated usage (a ``kubelet_sim.usage.ContainerUsage``), made when first sampled.
    usage: Any = None

    # --- transitions (times are passed in so that callers and tests control them) ----------------------

    def start(self, behaviour: Behaviour, now_mono: float, when: float, *, narrate: bool = True) -> None:
        """The runtime created and started a new instance.

        ``narrate`` writes kubesim's start line (and the behaviour's lines) into the log; a real
        process (the process runtime) writes its own log instead.
        """
        if self.created:
            self.restart_count += 1
        if self.state is State.TERMINATED:
            self.last_terminated = self.terminated
        self.behaviour = behaviour
        self.state = State.RUNNING
        self.starting = False
        self.terminated = None
        self.waiting_reason = self.waiting_message = ""
        self.started_at = format_time(utcnow())
        self.started_mono = now_mono
        self.started_wall = when
        self.container_id = new_container_id()
        self.created = True
        self.rootfs = None
        self.startup_passed = None
        self.killed_by_probe = False
        self.usage = None
        self.ready = False
        if self.log is not None:
            self.log.close()
        self.previous_log = self.log
        self.log = ContainerLog()
        if narrate:
            self.log.write(f"kubesim: container {self.name} started (image {self.image}, "
                           f"restart {self.restart_count})", when)
            for line in behaviour.log:
                self.log.write(line, when)

    def exit(self, exit_code: int, when: float, *, narrate: bool = True, reason: str = "",
             message: str = "") -> None:
        """The instance exited (or was killed) with ``exit_code``: ``Completed`` if 0, else ``Error``.

        ``reason`` and ``message`` replace those (``StartError`` when a process could not start).
        """
        self.state = State.TERMINATED
        self.ready = False
        self.terminated = Terminated(exit_code, reason or ("Completed" if exit_code == 0 else "Error"),
                                     self.started_at, format_time(utcnow()), self.container_id, message)
        if self.log is not None:
            if narrate:
                self.log.write(f"kubesim: container {self.name} exited with code {exit_code}", when)
            self.log.close()

    def wait(self, reason: str, message: str = "") -> None:
        """Waiting to be (re)started; a terminated instance becomes the last state."""
        if self.state is State.TERMINATED:
            self.last_terminated = self.terminated
            self.terminated = None
        self.state = State.WAITING
        self.waiting_reason, self.waiting_message = reason, message

    def restart_delay(self, finished_mono: float) -> float:
        """How long to wait before restarting after an exit at ``finished_mono`` (0: at once).

        The kubelet's ``IsInBackOffSince``: in back-off when an entry exists that
        has not expired (two maximum periods without a restart).
        """
        if self.backoff_updated is None or finished_mono - self.backoff_updated > 2 * BACKOFF_MAX:
            return 0.0
        return self.backoff

    def note_restart(self, finished_mono: float, now_mono: float) -> None:
        """The kubelet's ``Backoff.Next``: the first restart sets 10 s, each later one doubles it."""
        if self.backoff_updated is None or finished_mono - self.backoff_updated > 2 * BACKOFF_MAX:
            self.backoff = BACKOFF_INITIAL
        else:
            self.backoff = min(self.backoff * 2, BACKOFF_MAX)
        self.backoff_updated = now_mono

    def cancel_timers(self) -> None:
        for timer in self.timers:
            timer.cancel()
        self.timers.clear()
        if self.prober is not None:
            self.prober.stop()
            self.prober = None

    # --- the API's view ----------------------------------------------------------------------------------

    def state_wire(self) -> dict[str, Any]:
        if self.state is State.RUNNING:
            return {"running": {"startedAt": self.started_at}}
        if self.state is State.TERMINATED and self.terminated is not None:
            return {"terminated": self.terminated.wire()}
        waiting: dict[str, Any] = {"reason": self.waiting_reason} if self.waiting_reason else {}
        if self.waiting_message:
            waiting["message"] = self.waiting_message
        return {"waiting": waiting}

    def status_wire(self) -> dict[str, Any]:
        """This container's ``ContainerStatus``."""
        status: dict[str, Any] = {
            "name": self.name,
            "state": self.state_wire(),
            "lastState": {"terminated": self.last_terminated.wire()} if self.last_terminated else {},
            "ready": self.ready,
            "restartCount": self.restart_count,
            "image": normalize_image(self.image) if self.created else self.image,
            "imageID": image_id(self.image) if self.created else "",
            # Started while it runs, once its startup probe (if any) has passed.
            "started": self.state is State.RUNNING and self.startup_passed is not False,
        }
        if self.container_id:
            status["containerID"] = self.container_id
        return status
