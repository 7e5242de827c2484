"""Time for the client machinery, real or virtual.

Backoff, the work queue and its token bucket, the reflector and leader
election all need to ask "what time is it?" and "call me back at T". They
take a :class:`Clock` so that unit tests can drive them on virtual time with
:meth:`FakeClock.advance` instead of sleeping; production code uses
:class:`RealClock`, the system's monotonic clock.

Times are monotonic seconds, never wall-clock time: wall-clock timestamps that
go on the wire (``renewTime``, ``lastTimestamp``) come from
:mod:`machinery.api.meta`.

Concurrency: a clock is used from the event loop's thread only. Callbacks run
synchronously from the loop (real clock) or from ``advance`` (fake clock), so
they must not block.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import Callable
from typing import Protocol


class Timer(Protocol):
    """A scheduled callback that can still be called off."""

    def cancel(self) -> None: ...


class Clock(Protocol):
    """Monotonic time and timers."""

    def now(self) -> float: ...

    def call_at(self, when: float, callback: Callable[[], None]) -> Timer: ...

    async def sleep(self, seconds: float) -> None: ...


class RealClock:
    """``time.monotonic()``, with the running event loop's timers and sleep.

    Not ``loop.time()``: uvloop's is libuv's ``uv_now()``, read once per loop iteration in whole
    milliseconds, so two readings in one iteration are equal. Code that orders events by time (the
    taint eviction controller keeping the earlier of two deadlines, as Kubernetes' does with
    nanosecond clocks) would then see two moments as one.
    """

    def now(self) -> float:
        return time.monotonic()

    def call_at(self, when: float, callback: Callable[[], None]) -> Timer:
        return asyncio.get_running_loop().call_later(max(0.0, when - time.monotonic()), callback)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


class _FakeTimer:
    __slots__ = ("callback", "cancelled")

    def __init__(self, callback: Callable[[], None]) -> None:
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class FakeClock:
    """Virtual time for tests: nothing happens until :meth:`advance` is called.

    ``advance`` fires due timers in time order, each with :meth:`now` set to its
    own due time, so code that re-arms a timer from its callback sees the same
    sequence of times as it would in real life.
    """

    def __init__(self, start: float = 0.0) -> None:
        self._now = start
        self._timers: list[tuple[float, int, _FakeTimer]] = []
        self._seq = itertools.count()

    def now(self) -> float:
        return self._now

    def call_at(self, when: float, callback: Callable[[], None]) -> Timer:
        timer = _FakeTimer(callback)
        heapq.heappush(self._timers, (when, next(self._seq), timer))
        return timer

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def wake() -> None:
            if not future.done():
                future.set_result(None)

        timer = self.call_at(self._now + seconds, wake)
        try:
            await future
        finally:
            timer.cancel()

    def advance(self, seconds: float) -> None:
        """Move time forward, firing every timer that falls due on the way."""
        target = self._now + seconds
        while self._timers and self._timers[0][0] <= target:
            when, _, timer = heapq.heappop(self._timers)
            if timer.cancelled:
                continue
            self._now = max(self._now, when)
            timer.callback()
        self._now = target

    @property
    def pending_timers(self) -> int:
        """How many timers are still armed (tests use it to know a sleeper is waiting)."""
        return sum(1 for _, _, t in self._timers if not t.cancelled)
