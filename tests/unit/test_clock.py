"""The real clock: monotonic time precise within one event-loop iteration, and timers on it."""

from __future__ import annotations

import asyncio
import itertools
import time

import uvloop

from machinery.client.clock import RealClock


def _busy(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def test_readings_a_fraction_of_a_millisecond_apart_differ_under_uvloop() -> None:
    # uvloop's loop.time() counts whole milliseconds: two moments within one were one (the taint
    # eviction controller then took a deadline it had just set for a later one, and cancelled it).
    async def readings() -> tuple[list[float], list[float]]:
        clock, loop = RealClock(), asyncio.get_running_loop()
        ours, loops = [], []
        for _ in range(50):
            ours.append(clock.now())
            loops.append(loop.time())
            _busy(0.0002)
        return ours, loops

    ours, loops = uvloop.run(readings())
    assert all(round(t * 1000, 6).is_integer() for t in loops), "uvloop's clock is in milliseconds"
    assert any(a == b for a, b in itertools.pairwise(loops))
    assert all(b - a >= 0.0002 for a, b in itertools.pairwise(ours))


def test_timers_fire_at_their_time_on_the_monotonic_clock() -> None:
    async def fired_after() -> tuple[float, bool]:
        clock = RealClock()
        done = asyncio.Event()
        start = clock.now()
        clock.call_at(start + 0.05, done.set)
        cancelled = asyncio.Event()
        clock.call_at(start + 0.01, cancelled.set).cancel()
        await asyncio.wait_for(done.wait(), 5)
        return clock.now() - start, cancelled.is_set()

    waited, cancelled_fired = uvloop.run(fired_after())
    assert 0.045 <= waited < 1.0
    assert not cancelled_fired
