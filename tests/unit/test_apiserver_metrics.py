"""The per-request CPU timer: it counts a coroutine's own steps, not the time it waits."""

from __future__ import annotations

import asyncio
import time

import pytest

from apiserver.metrics import CPUTimer


def burn(seconds: float) -> None:
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


async def test_the_timer_counts_the_steps_not_the_waits() -> None:
    async def work() -> str:
        burn(0.05)
        await asyncio.sleep(0.2)       # waiting costs no CPU
        burn(0.05)
        return "done"

    async def other() -> None:
        burn(0.1)                      # runs while work() waits: not work()'s CPU

    timer = CPUTimer()
    result, _ = await asyncio.gather(timer.run(work()), other())
    assert result == "done"
    assert 0.09 <= timer.seconds < 0.14


async def test_errors_and_cancellation_go_through() -> None:
    async def fails() -> None:
        await asyncio.sleep(0)
        raise ValueError("boom")

    timer = CPUTimer()
    with pytest.raises(ValueError, match="boom"):
        await timer.run(fails())

    caught: list[BaseException] = []

    async def waits() -> None:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError as e:
            caught.append(e)
            raise

    task = asyncio.create_task(CPUTimer().run(waits()))
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert len(caught) == 1
