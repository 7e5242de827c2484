"""Simulated resource usage: how much cpu and memory a simulated container uses, moment by moment.

A real kubelet reads cgroups; a simulated container has none, so its usage
comes from a profile, per container:

- ``kubesim.io/cpu-usage`` and ``kubesim.io/memory-usage`` (per container with
  ``.<name>``): a quantity (``250m``, ``128Mi``) or a curve of
  ``SECONDS:QUANTITY`` points since the container started
  (``0:100m,60:800m,120:200m``), linear between points and flat after the last;
- without them, the node profile's ``usage``: a fraction of the container's
  requests (``cpuRequestsFraction``, ``memoryRequestsFraction``), at least a
  floor (``cpuFloor``, ``memoryFloor``);
- ``noise`` (a fraction) varies either, differently per container and per
  10-second window, deterministically (the same run gives the same figures).

CPU is reported, as the kubelet does, as a cumulative counter of core-seconds
(:meth:`ContainerUsage.sample`), integrated from the rate as time passes, so
that a reader (metrics-server) computes the rate from two samples.

Pure arithmetic over monotonic time; a :class:`ContainerUsage` is owned by one
container instance and sampled from the event loop.
"""

from __future__ import annotations

import hashlib
import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from machinery.api.quantity import milli_value

ANNOTATION_CPU: Final = "kubesim.io/cpu-usage"
ANNOTATION_MEMORY: Final = "kubesim.io/memory-usage"
NOISE_WINDOW: Final = 10.0
PAGE_SIZE: Final = 4096

#: (seconds since start, value) points: millicores for cpu, bytes for memory.
Curve = tuple[tuple[float, float], ...]


@dataclass(frozen=True, slots=True)
class UsageProfile:
    """The node profile's ``usage`` section (milli-cores and bytes)."""

    cpu_requests_fraction: float = 0.5
    memory_requests_fraction: float = 0.6
    cpu_floor: float = 5.0
    memory_floor: float = 16 * 1024 * 1024
    noise: float = 0.1
    #: What the node uses besides its Pods (the system, the kubelet, the runtime).
    system_cpu: float = 100.0
    system_memory: float = 512 * 1024 * 1024


class UsageError(ValueError):
    pass


def parse_curve(text: str, *, cpu: bool) -> Curve:
    """``250m`` or ``0:100m,60:800m``: millicores (cpu) or bytes (memory) over seconds since start."""
    def amount(value: str) -> float:
        milli = milli_value(value.strip())
        if milli < 0:
            raise UsageError(f'"{value}" is negative')
        return float(milli) if cpu else milli / 1000.0

    points: list[tuple[float, float]] = []
    try:
        if ":" not in text:
            return ((0.0, amount(text)),)
        for part in text.split(","):
            when, _, value = part.partition(":")
            seconds = float(when.strip().rstrip("s"))
            if not math.isfinite(seconds) or seconds < 0:
                raise UsageError(f'"{when}" is not a number of seconds')
            points.append((seconds, amount(value)))
    except ValueError as err:
        raise UsageError(f'invalid usage "{text}": {err}') from None
    return tuple(sorted(points))


def at(curve: Curve, elapsed: float) -> float:
    if elapsed <= curve[0][0]:
        return curve[0][1]
    for (t0, v0), (t1, v1) in itertools.pairwise(curve):
        if elapsed < t1:
            return v0 + (v1 - v0) * (elapsed - t0) / (t1 - t0)
    return curve[-1][1]


def _jitter(seed: bytes, window: int) -> float:
    """A deterministic number in [-1, 1] for this seed and window."""
    digest = hashlib.blake2b(seed + window.to_bytes(8, "big"), digest_size=4).digest()
    return int.from_bytes(digest, "big") / 0xFFFFFFFF * 2 - 1


@dataclass(slots=True)
class ContainerUsage:
    """One container instance's usage: curves, noise, and the integrated cpu counter."""

    cpu: Curve
    memory: Curve
    noise: float
    seed: bytes
    started: float
    _last: float = field(default=0.0)
    _core_seconds: float = 0.0

    def __post_init__(self) -> None:
        self._last = self.started

    def cpu_millicores(self, now: float) -> float:
        elapsed = max(now - self.started, 0.0)
        base = at(self.cpu, elapsed)
        return max(base * (1 + self.noise * _jitter(self.seed + b"cpu", int(elapsed // NOISE_WINDOW))), 0.0)

    def memory_bytes(self, now: float) -> int:
        """The working set now, in whole pages (as a cgroup counts it)."""
        elapsed = max(now - self.started, 0.0)
        base = at(self.memory, elapsed)
        amount = max(int(base * (1 + self.noise * _jitter(self.seed + b"mem", int(elapsed // NOISE_WINDOW)))), 0)
        return amount // PAGE_SIZE * PAGE_SIZE

    def sample(self, now: float) -> tuple[float, int]:
        """(cumulative core-seconds, working-set bytes) at ``now``; the counter never goes back."""
        if now > self._last:
            # The rate at the middle of the interval, times its length: exact for straight pieces.
            middle = (now + self._last) / 2
            self._core_seconds += self.cpu_millicores(middle) / 1000.0 * (now - self._last)
            self._last = now
        return self._core_seconds, self.memory_bytes(now)


def container_usage(annotations: Mapping[str, str], container: str, requests: Mapping[str, int],
                    profile: UsageProfile, *, container_id: str, started: float) -> tuple[ContainerUsage, list[str]]:
    """The usage model of a container instance, and the problems found in its annotations."""
    problems: list[str] = []

    def curve(key: str, cpu: bool, default: float) -> Curve:
        specific = f"{key}.{container}"
        name = specific if specific in annotations else key if key in annotations else None
        if name is None:
            return ((0.0, default),)
        try:
            return parse_curve(annotations[name], cpu=cpu)
        except UsageError as err:
            problems.append(f"annotation {name}: {err}")
            return ((0.0, default),)

    cpu_default = max(requests.get("cpu", 0) * profile.cpu_requests_fraction, profile.cpu_floor)
    memory_default = max(requests.get("memory", 0) / 1000.0 * profile.memory_requests_fraction, profile.memory_floor)
    usage = ContainerUsage(curve(ANNOTATION_CPU, True, cpu_default), curve(ANNOTATION_MEMORY, False, memory_default),
                           profile.noise, container_id.encode(), started)
    return usage, problems
