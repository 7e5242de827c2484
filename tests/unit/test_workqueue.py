"""The work queue's ordering, dedup, exclusivity, delays and rate limiting, on virtual time."""

from __future__ import annotations

import asyncio

import pytest

from machinery.client.clock import FakeClock
from machinery.workqueue import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    ShutDown,
    WorkQueue,
    default_controller_rate_limiter,
    run_workers,
)


async def get_all(q: WorkQueue[str]) -> list[str]:
    items = []
    while len(q):
        item = await q.get()
        items.append(item)
        q.done(item)
    return items


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def q(clock: FakeClock) -> WorkQueue[str]:
    return WorkQueue(clock=clock)


async def test_fifo_order(q: WorkQueue[str]) -> None:
    for k in ["c", "a", "b"]:
        q.add(k)
    assert await get_all(q) == ["c", "a", "b"]


async def test_waiting_key_is_deduplicated(q: WorkQueue[str]) -> None:
    for k in ["a", "b", "a", "a", "b", "c"]:
        q.add(k)
    assert len(q) == 3
    assert await get_all(q) == ["a", "b", "c"]


async def test_key_is_never_given_to_two_workers(q: WorkQueue[str]) -> None:
    q.add("a")
    first = await q.get()
    q.add("a")
    assert len(q) == 0, "a key in processing must not be queued again"
    second_getter = asyncio.create_task(q.get())
    await asyncio.sleep(0)
    assert not second_getter.done()
    q.done(first)
    assert await asyncio.wait_for(second_getter, 1) == "a"


async def test_key_added_many_times_while_processing_comes_back_once(q: WorkQueue[str]) -> None:
    q.add("a")
    item = await q.get()
    for _ in range(5):
        q.add("a")
    q.add("b")
    q.done(item)
    assert await get_all(q) == ["b", "a"]


async def test_done_without_re_add_does_not_requeue(q: WorkQueue[str]) -> None:
    q.add("a")
    q.done(await q.get())
    assert len(q) == 0


async def test_get_waits_for_an_add(q: WorkQueue[str]) -> None:
    getter = asyncio.create_task(q.get())
    await asyncio.sleep(0)
    assert not getter.done()
    q.add("x")
    assert await asyncio.wait_for(getter, 1) == "x"


async def test_cancelled_getter_does_not_swallow_a_wakeup(q: WorkQueue[str]) -> None:
    g1 = asyncio.create_task(q.get())
    g2 = asyncio.create_task(q.get())
    await asyncio.sleep(0)
    q.add("x")  # wakes g1 ...
    g1.cancel()  # ... which goes away before it runs
    assert await asyncio.wait_for(g2, 1) == "x"


async def test_add_after_releases_on_virtual_time(q: WorkQueue[str], clock: FakeClock) -> None:
    q.add_after("late", 2.0)
    q.add_after("early", 1.0)
    q.add("now")
    assert await get_all(q) == ["now"]
    clock.advance(0.999)
    assert len(q) == 0
    clock.advance(0.001)
    assert await get_all(q) == ["early"]
    clock.advance(1.0)
    assert await get_all(q) == ["late"]


async def test_add_after_keeps_the_earlier_time(q: WorkQueue[str], clock: FakeClock) -> None:
    q.add_after("k", 5.0)
    q.add_after("k", 1.0)
    q.add_after("k", 3.0)
    clock.advance(1.0)
    assert await get_all(q) == ["k"]
    clock.advance(10.0)
    assert len(q) == 0, "the later duplicates must not fire again"


async def test_add_after_zero_adds_at_once(q: WorkQueue[str]) -> None:
    q.add_after("k", 0)
    assert len(q) == 1


async def test_delayed_key_already_queued_is_not_duplicated(q: WorkQueue[str], clock: FakeClock) -> None:
    q.add("k")
    q.add_after("k", 1.0)
    clock.advance(1.0)
    assert await get_all(q) == ["k"]


async def test_getter_is_woken_by_a_delayed_key(q: WorkQueue[str], clock: FakeClock) -> None:
    getter = asyncio.create_task(q.get())
    q.add_after("k", 0.5)
    await asyncio.sleep(0)
    assert not getter.done()
    clock.advance(0.5)
    assert await asyncio.wait_for(getter, 1) == "k"


async def test_rate_limited_backoff_doubles_per_key_and_forget_resets(q: WorkQueue[str], clock: FakeClock) -> None:
    delays = []
    for _ in range(4):
        q.add_rate_limited("k")
        waited = 0.0
        while not len(q):
            clock.advance(0.001)
            waited += 0.001
        delays.append(round(waited, 3))
        q.done(await q.get())
    assert delays == [0.005, 0.01, 0.02, 0.04]
    assert q.num_requeues("k") == 4
    q.forget("k")
    assert q.num_requeues("k") == 0


@pytest.mark.parametrize(("failures", "expected"), [
    pytest.param(0, 0.005, id="first-failure-5ms"),
    pytest.param(1, 0.010, id="second-10ms"),
    pytest.param(10, 5.12, id="eleventh-5.12s"),
    pytest.param(17, 655.36, id="eighteenth-655s"),
    pytest.param(18, 1000.0, id="capped-at-1000s"),
    pytest.param(500, 1000.0, id="no-overflow-far-past-the-cap"),
])
def test_item_exponential_failure_rate_limiter(failures: int, expected: float) -> None:
    limiter = ItemExponentialFailureRateLimiter(0.005, 1000.0)
    for _ in range(failures):
        limiter.when("k")
    assert limiter.when("k") == pytest.approx(expected)
    assert limiter.when("other") == pytest.approx(0.005), "backoff is per key"


def test_bucket_rate_limiter_allows_a_burst_then_paces(clock: FakeClock) -> None:
    limiter = BucketRateLimiter(10.0, 100, clock=clock)
    assert [limiter.when(i) for i in range(100)] == [0.0] * 100
    assert limiter.when("a") == pytest.approx(0.1)
    assert limiter.when("b") == pytest.approx(0.2)
    clock.advance(1.0)  # ten tokens come back, paying the debt of two and leaving eight
    assert [limiter.when(i) for i in range(8)] == [0.0] * 8
    assert limiter.when("c") == pytest.approx(0.1)


def test_max_of_takes_the_longest_delay(clock: FakeClock) -> None:
    limiter = default_controller_rate_limiter(clock)
    # The bucket's burst is spent by 100 different keys; the 101st key waits on the bucket
    # although its own backoff would be 5 ms.
    for i in range(100):
        assert limiter.when(f"k{i}") == pytest.approx(0.005)
    assert limiter.when("fresh") == pytest.approx(0.1)
    assert limiter.num_requeues("fresh") == 1
    limiter.forget("fresh")
    assert limiter.num_requeues("fresh") == 0


def test_max_of_needs_a_limiter() -> None:
    with pytest.raises(ValueError, match="at least one"):
        MaxOfRateLimiter()


async def test_shut_down_hands_out_what_is_queued_then_raises(q: WorkQueue[str], clock: FakeClock) -> None:
    q.add("a")
    q.add_after("later", 1.0)
    q.shut_down()
    q.add("ignored")
    clock.advance(2.0)
    assert await q.get() == "a"
    with pytest.raises(ShutDown):
        await q.get()


async def test_shut_down_wakes_waiting_getters(q: WorkQueue[str]) -> None:
    getters = [asyncio.create_task(q.get()) for _ in range(3)]
    await asyncio.sleep(0)
    q.shut_down()
    results = await asyncio.gather(*getters, return_exceptions=True)
    assert all(isinstance(r, ShutDown) for r in results)


async def test_shut_down_with_drain_waits_for_keys_in_hand(q: WorkQueue[str]) -> None:
    q.add("a")
    item = await q.get()
    drain = asyncio.create_task(q.shut_down_with_drain())
    await asyncio.sleep(0)
    assert not drain.done()
    q.done(item)
    await asyncio.wait_for(drain, 1)


async def test_shut_down_with_drain_returns_at_once_when_idle(q: WorkQueue[str]) -> None:
    await asyncio.wait_for(q.shut_down_with_drain(), 1)
    assert q.shutting_down


async def test_run_workers_processes_each_key_once_at_a_time() -> None:
    q: WorkQueue[str] = WorkQueue()
    active: set[str] = set()
    seen: list[str] = []
    release = asyncio.Event()

    async def handle(key: str) -> None:
        assert key not in active, "two workers got the same key"
        active.add(key)
        seen.append(key)
        await release.wait()
        active.discard(key)

    for k in ["a", "b", "a"]:
        q.add(k)
    runner = asyncio.create_task(run_workers(q, handle, workers=3))
    for _ in range(5):
        await asyncio.sleep(0)
    assert sorted(seen) == ["a", "b"]
    q.add("a")  # while "a" is being handled: it must come back once, afterwards
    release.set()
    for _ in range(10):
        await asyncio.sleep(0)
    assert sorted(seen) == ["a", "a", "b"]
    runner.cancel()
    with pytest.raises(asyncio.CancelledError):
        await runner


async def test_run_workers_survives_a_failing_handler(caplog: pytest.LogCaptureFixture) -> None:
    q: WorkQueue[str] = WorkQueue()
    handled: list[str] = []

    async def handle(key: str) -> None:
        if key == "bad":
            raise RuntimeError("boom")
        handled.append(key)

    q.add("bad")
    q.add("good")
    runner = asyncio.create_task(run_workers(q, handle, workers=1))
    for _ in range(5):
        await asyncio.sleep(0)
    assert handled == ["good"]
    assert "boom" in caplog.text
    runner.cancel()
    with pytest.raises(asyncio.CancelledError):
        await runner


async def test_run_workers_drains_in_flight_work_then_cancels_stragglers() -> None:
    q: WorkQueue[str] = WorkQueue()
    finished: list[str] = []
    started = asyncio.Event()
    stuck = asyncio.Event()

    async def handle(key: str) -> None:
        started.set()
        if key == "stuck":
            await stuck.wait()  # never set: must be cancelled after the drain timeout
        finished.append(key)

    q.add("quick")
    runner = asyncio.create_task(run_workers(q, handle, workers=1, drain_timeout=0.05))
    await started.wait()
    q.add("stuck")
    await asyncio.sleep(0)
    runner.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(runner, 2)
    assert finished == ["quick"]
    assert q.shutting_down
