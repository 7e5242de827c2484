"""The kubelet's prober: startup, readiness and liveness probes with their timing fields.

As ``pkg/kubelet/prober`` runs them, per container and probe:

- the first check comes ``initialDelaySeconds`` after the container started,
  then one every ``periodSeconds`` (default 10), each allowed
  ``timeoutSeconds`` (default 1; a check that takes longer fails);
- a result counts once it repeats: ``successThreshold`` (default 1; always 1
  for liveness and startup) successes in a row, or ``failureThreshold``
  (default 3) failures in a row;
- **startup**: until it succeeds, no readiness or liveness check runs and the
  container is not ``started``; reaching its failure threshold kills the
  container, as liveness does;
- **readiness**: the container is ready only while it passes (without a
  readiness probe it is ready once started);
- **liveness**: reaching the failure threshold kills the container ("Container
  app failed liveness probe, will be restarted") with the probe's
  ``terminationGracePeriodSeconds`` if it has one;
- each failed check is a Warning Event ``Unhealthy`` (``Readiness probe failed:
  HTTP probe failed with statuscode: 503``).

What a check does is the runtime's (:data:`Check`): the simulated runtime
reads the outcome from the Pod's annotations (:func:`simulated_check`), the
process runtime really runs the command, GETs the URL or opens the socket.

Concurrency: timers on the given clock; a check that has to wait (a real
probe) runs as a task, and its result is applied when it comes back, unless
the container has moved on to another instance meanwhile.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from machinery.client.clock import Clock, Timer

ProbeKind = Literal["startup", "readiness", "liveness"]
KINDS: Final[tuple[ProbeKind, ...]] = ("startup", "readiness", "liveness")
_TITLES: Final = {"startup": "Startup", "readiness": "Readiness", "liveness": "Liveness"}

#: Annotations that script the simulated runtime's probe outcomes, per container with ``.<name>``:
#: ``pass``, ``fail``, or ``SECONDS:pass|fail`` steps since the container started (``0:fail,20:pass``).
ANNOTATION_PROBE: Final = {kind: f"kubesim.io/{kind}-probe" for kind in KINDS}


@dataclass(frozen=True, slots=True)
class Probe:
    kind: ProbeKind
    #: The handler in wire form: {"httpGet": {...}}, {"tcpSocket": {...}}, {"exec": {...}} or {"grpc": {...}}.
    handler: Mapping[str, Any]
    initial_delay: float = 0.0
    period: float = 10.0
    timeout: float = 1.0
    success_threshold: int = 1
    failure_threshold: int = 3
    termination_grace: int | None = None

    @classmethod
    def from_wire(cls, kind: ProbeKind, wire: Mapping[str, Any]) -> Probe:
        handler = {k: v for k, v in wire.items() if k in ("httpGet", "tcpSocket", "exec", "grpc")}

        def number(name: str, default: float, minimum: float) -> float:
            value = wire.get(name)
            return max(float(value), minimum) if isinstance(value, int | float) and value else default
        success = int(number("successThreshold", 1, 1)) if kind == "readiness" else 1
        grace = wire.get("terminationGracePeriodSeconds")
        return cls(kind, handler, number("initialDelaySeconds", 0.0, 0.0), number("periodSeconds", 10.0, 1.0),
                   number("timeoutSeconds", 1.0, 1.0), success, int(number("failureThreshold", 3, 1)),
                   int(grace) if isinstance(grace, int) else None)

    @property
    def title(self) -> str:
        return _TITLES[self.kind]


@dataclass(frozen=True, slots=True)
class Result:
    success: bool
    message: str = ""


#: Runs one check of ``probe`` for a container that started ``elapsed`` seconds ago.
Check = Callable[[Probe, float], Result | Awaitable[Result]]


def parse_schedule(text: str) -> list[tuple[float, bool]] | None:
    """``pass``, ``fail`` or ``0:fail,20:pass`` as (from second, passes) steps; None when malformed."""
    text = text.strip()
    if text in ("pass", "fail"):
        return [(0.0, text == "pass")]
    steps: list[tuple[float, bool]] = []
    for part in text.split(","):
        when, sep, outcome = part.strip().rpartition(":")
        try:
            seconds = float(when.rstrip("s"))
        except ValueError:
            return None
        if not sep or outcome not in ("pass", "fail") or not math.isfinite(seconds) or seconds < 0:
            return None
        steps.append((seconds, outcome == "pass"))
    return sorted(steps)


def scheduled(steps: list[tuple[float, bool]], elapsed: float) -> bool:
    passes = True
    for when, outcome in steps:
        if elapsed >= when:
            passes = outcome
    return passes


def failure_message(probe: Probe, pod_ip: str) -> str:
    """What a failed check of this handler says in Kubernetes."""
    handler = probe.handler
    if "httpGet" in handler:
        return "HTTP probe failed with statuscode: 503"
    if "tcpSocket" in handler:
        port = handler["tcpSocket"].get("port")
        return f"dial tcp {pod_ip}:{port}: connect: connection refused"
    if "grpc" in handler:
        return f"timeout: failed to connect service \"{pod_ip}:{handler['grpc'].get('port')}\" within 1s"
    return "command terminated with exit code 1"


def simulated_check(annotations: Mapping[str, str], container: str, pod_ip: str,
                    default_ready_after: float = 0.0) -> Check:
    """The simulated runtime's checks: each probe's outcome follows its ``kubesim.io/<kind>-probe`` schedule.

    Without an annotation a probe passes, except readiness before ``kubesim.io/ready-after-seconds``.
    """
    schedules: dict[str, list[tuple[float, bool]] | None] = {}
    for kind, key in ANNOTATION_PROBE.items():
        text = annotations.get(f"{key}.{container}", annotations.get(key))
        schedules[kind] = parse_schedule(text) if text is not None else None

    def check(probe: Probe, elapsed: float) -> Result:
        steps = schedules.get(probe.kind)
        if steps is None:
            passes = probe.kind != "readiness" or elapsed >= default_ready_after
        else:
            passes = scheduled(steps, elapsed)
        return Result(True) if passes else Result(False, failure_message(probe, pod_ip))
    return check


@dataclass(eq=False)
class _Worker:
    probe: Probe
    successes: int = 0
    failures: int = 0
    timer: Timer | None = None
    task: asyncio.Task[None] | None = None


@dataclass(eq=False)
class ContainerProber:
    """The probes of one container instance, from its start until :meth:`stop`.

    ``on_started`` fires when the startup probe passes (at once without one),
    ``on_ready(bool)`` when readiness changes, ``on_kill(message, grace)`` when
    liveness or startup gives up, ``on_unhealthy(message)`` for each failed check.
    """

    clock: Clock
    started_at: float
    probes: dict[ProbeKind, Probe]
    check: Check
    on_started: Callable[[], None]
    on_ready: Callable[[bool], None]
    on_kill: Callable[[str, int | None], None]
    on_unhealthy: Callable[[str], None]
    _workers: dict[ProbeKind, _Worker] = field(default_factory=dict)
    started: bool = False
    ready: bool = False
    stopped: bool = False

    def start(self) -> None:
        if "startup" in self.probes:
            self._arm("startup")
        else:
            self._startup_done()

    def _startup_done(self) -> None:
        self.started = True
        self.on_started()
        if "readiness" in self.probes:
            self._arm("readiness")
        else:
            self._set_ready(True)
        if "liveness" in self.probes:
            self._arm("liveness")

    def _arm(self, kind: ProbeKind) -> None:
        probe = self.probes[kind]
        worker = self._workers[kind] = _Worker(probe)
        first = self.started_at + probe.initial_delay
        worker.timer = self.clock.call_at(max(first, self.clock.now()), lambda: self._tick(worker))

    def _tick(self, worker: _Worker) -> None:
        if self.stopped:
            return
        probe = worker.probe
        outcome = self.check(probe, self.clock.now() - self.started_at)
        if isinstance(outcome, Result):
            self._apply(worker, outcome)
            return

        async def wait() -> None:
            try:
                result = await asyncio.wait_for(outcome, probe.timeout)
            except TimeoutError:
                result = Result(False, f"timeout: probe did not answer within {probe.timeout:g}s")
            if not self.stopped:
                self._apply(worker, result)
        worker.task = asyncio.ensure_future(wait())

    def _apply(self, worker: _Worker, result: Result) -> None:
        probe = worker.probe
        if result.success:
            worker.successes += 1
            worker.failures = 0
        else:
            worker.failures += 1
            worker.successes = 0
            self.on_unhealthy(f"{probe.title} probe failed: {result.message}")
        if probe.kind == "startup":
            if result.success:
                self._cancel(worker)
                self._startup_done()
                return
            if worker.failures >= probe.failure_threshold:
                self.stop()
                self.on_kill("failed startup probe, will be restarted", probe.termination_grace)
                return
        elif probe.kind == "readiness":
            if worker.successes >= probe.success_threshold:
                self._set_ready(True)
            elif worker.failures >= probe.failure_threshold:
                self._set_ready(False)
        elif worker.failures >= probe.failure_threshold:
            self.stop()
            self.on_kill("failed liveness probe, will be restarted", probe.termination_grace)
            return
        worker.timer = self.clock.call_at(self.clock.now() + probe.period, lambda: self._tick(worker))

    def _set_ready(self, ready: bool) -> None:
        if ready != self.ready:
            self.ready = ready
            self.on_ready(ready)

    @staticmethod
    def _cancel(worker: _Worker) -> None:
        if worker.timer is not None:
            worker.timer.cancel()
        if worker.task is not None:
            worker.task.cancel()

    def stop(self) -> None:
        self.stopped = True
        for worker in self._workers.values():
            self._cancel(worker)


def container_probes(container: Any) -> dict[ProbeKind, Probe]:
    """The probes a container (a view with ``startup_probe``, ``readiness_probe``, ``liveness_probe``) declares."""
    probes: dict[ProbeKind, Probe] = {}
    for kind in KINDS:
        wire = getattr(container, f"{kind}_probe", None)
        if wire:
            probes[kind] = Probe.from_wire(kind, wire)
    return probes
