"""The controllers' work queue: client-go's rate-limiting work queue, on asyncio.

What it guarantees, as client-go's does:

- a key waiting in the queue is held once however often it is added (the
  *dirty* set);
- a key is never handed to two workers at once (the *processing* set); a key
  added while a worker holds it is queued again, once, when the worker calls
  :meth:`WorkQueue.done`;
- :meth:`WorkQueue.add_after` delays a key; :meth:`WorkQueue.add_rate_limited`
  delays it by the rate limiter's verdict, by default the maximum of a per-key
  exponential backoff (5 ms doubling to 1,000 s) and an overall token bucket
  (10 per second, bursts of 100); :meth:`WorkQueue.forget` ends a key's backoff;
- after :meth:`WorkQueue.shut_down` adds are ignored, keys still queued are
  handed out, then :meth:`WorkQueue.get` raises :class:`ShutDown`;
  :meth:`WorkQueue.shut_down_with_drain` also waits for the keys in hand to be done;
- :func:`run_workers` is the worker pool every queue user needs: take a key,
  handle it, mark it done; on shutdown, drain for a while, then cancel.

Time comes from a :class:`~machinery.client.clock.Clock`, so tests drive the
delays on virtual time. Concurrency: one event loop; any number of tasks may
add, and any number of workers may ``get``/``done``. The queue starts no task
(delayed keys are released by one clock timer); :func:`run_workers` owns its
worker tasks and never leaves one behind.
"""

from __future__ import annotations

import asyncio
import contextvars
import heapq
import itertools
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, Protocol, TypeVar

from machinery import metrics
from machinery.client.clock import Clock, RealClock, Timer

log = logging.getLogger(__name__)

T = TypeVar("T", bound=Hashable)

#: Whether workers started in this context may drain on shutdown. Leader election sets it, for
#: the leader's work, to "the Lease is still held", so that a lost Lease stops workers at once
#: (another process may already lead) while a SIGTERM lets them finish what they hold.
drain_allowed: contextvars.ContextVar[Callable[[], bool]] = contextvars.ContextVar(
    "drain_allowed", default=lambda: True)


class ShutDown(Exception):
    """The queue is shut down and empty: the worker should return."""


class RateLimiter(Protocol):
    """How long a key should wait before it is retried (client-go's ``TypedRateLimiter``)."""

    def when(self, item: Hashable) -> float: ...

    def forget(self, item: Hashable) -> None: ...

    def num_requeues(self, item: Hashable) -> int: ...


class ItemExponentialFailureRateLimiter:
    """``base * 2**failures`` per key, capped at ``max_delay``."""

    def __init__(self, base_delay: float = 0.005, max_delay: float = 1000.0) -> None:
        self._base = base_delay
        self._max = max_delay
        self._failures: dict[Hashable, int] = {}

    def when(self, item: Hashable) -> float:
        exp = self._failures.get(item, 0)
        self._failures[item] = exp + 1
        # 2**exp overflows nothing in Python, but beyond ~60 doublings the cap has long won.
        return self._max if exp > 60 else min(self._base * 2**exp, self._max)

    def forget(self, item: Hashable) -> None:
        self._failures.pop(item, None)

    def num_requeues(self, item: Hashable) -> int:
        return self._failures.get(item, 0)


class BucketRateLimiter:
    """An overall token bucket: ``qps`` tokens a second, at most ``burst`` saved up.

    Like Go's ``rate.Limiter.Reserve``: every call takes a token, going into debt
    when there is none, and the delay is how long the debt takes to pay off.
    """

    def __init__(self, qps: float = 10.0, burst: int = 100, *, clock: Clock | None = None) -> None:
        if qps <= 0 or burst < 1:
            raise ValueError("a token bucket needs qps > 0 and burst >= 1")
        self._qps = qps
        self._burst = float(burst)
        self._clock = clock or RealClock()
        self._tokens = float(burst)
        self._last: float | None = None

    def when(self, item: Hashable) -> float:
        now = self._clock.now()
        if self._last is not None:
            self._tokens = min(self._burst, self._tokens + (now - self._last) * self._qps)
        self._last = now
        self._tokens -= 1.0
        return 0.0 if self._tokens >= 0 else -self._tokens / self._qps

    def forget(self, item: Hashable) -> None:
        pass

    def num_requeues(self, item: Hashable) -> int:
        return 0


class MaxOfRateLimiter:
    """The longest delay any of the limiters asks for."""

    def __init__(self, *limiters: RateLimiter) -> None:
        if not limiters:
            raise ValueError("MaxOfRateLimiter needs at least one limiter")
        self._limiters = limiters

    def when(self, item: Hashable) -> float:
        # Every limiter must see every call (each keeps its own count), so no short-circuit.
        return max([limiter.when(item) for limiter in self._limiters])

    def forget(self, item: Hashable) -> None:
        for limiter in self._limiters:
            limiter.forget(item)

    def num_requeues(self, item: Hashable) -> int:
        return max(limiter.num_requeues(item) for limiter in self._limiters)


def default_controller_rate_limiter(clock: Clock | None = None) -> MaxOfRateLimiter:
    """client-go's ``DefaultControllerRateLimiter``: per-key 5 ms..1,000 s, overall 10 qps, burst 100."""
    return MaxOfRateLimiter(ItemExponentialFailureRateLimiter(0.005, 1000.0),
                            BucketRateLimiter(10.0, 100, clock=clock))


class WorkQueue(Generic[T]):
    """A deduplicating, per-key exclusive, delaying, rate-limited FIFO of keys.

    ``name`` labels the queue's metrics (``workqueue_depth{name=...}``); an
    unnamed queue exports none.
    """

    def __init__(self, name: str = "", *, rate_limiter: RateLimiter | None = None,
                 clock: Clock | None = None) -> None:
        self.name = name
        self._clock = clock or RealClock()
        self._rate_limiter = rate_limiter or default_controller_rate_limiter(self._clock)
        self._queue: deque[T] = deque()
        self._dirty: set[T] = set()
        self._processing: set[T] = set()
        self._getters: deque[asyncio.Future[None]] = deque()
        self._shutting_down = False
        self._drained: asyncio.Future[None] | None = None
        # Delayed keys: a heap of (ready time, sequence, key), and each key's earliest ready time;
        # heap entries that no longer match ``_ready_at`` are stale and skipped.
        self._waiting: list[tuple[float, int, T]] = []
        self._ready_at: dict[T, float] = {}
        self._seq = itertools.count()
        self._timer: Timer | None = None
        self._timer_at: float | None = None
        self._metrics = name != ""
        if self._metrics:
            self._depth = metrics.WORKQUEUE_DEPTH.labels(name)
            self._adds = metrics.WORKQUEUE_ADDS.labels(name)
            self._retries = metrics.WORKQUEUE_RETRIES.labels(name)

    def __len__(self) -> int:
        """Keys waiting to be handed out (not counting delayed ones)."""
        return len(self._queue)

    @property
    def shutting_down(self) -> bool:
        return self._shutting_down

    def add(self, item: T) -> None:
        if self._shutting_down or item in self._dirty:
            return
        if self._metrics:
            self._adds.inc()
        self._dirty.add(item)
        if item in self._processing:
            return
        self._queue.append(item)
        if self._metrics:
            self._depth.inc()
        self._wake_one()

    def add_after(self, item: T, delay: float) -> None:
        """Add ``item`` once ``delay`` seconds have passed; a key already waiting keeps its earlier time."""
        if self._shutting_down:
            return
        if delay <= 0:
            self.add(item)
            return
        ready = self._clock.now() + delay
        current = self._ready_at.get(item)
        if current is not None and current <= ready:
            return
        self._ready_at[item] = ready
        heapq.heappush(self._waiting, (ready, next(self._seq), item))
        if self._timer_at is None or ready < self._timer_at:
            self._arm(ready)

    def add_rate_limited(self, item: T) -> None:
        if self._metrics:
            self._retries.inc()
        self.add_after(item, self._rate_limiter.when(item))

    def forget(self, item: T) -> None:
        """The key succeeded: its backoff starts over next time."""
        self._rate_limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        return self._rate_limiter.num_requeues(item)

    async def get(self) -> T:
        """The next key, waiting for one; it is the caller's until :meth:`done`.

        Raises :class:`ShutDown` once the queue is shut down and empty.
        """
        while not self._queue:
            if self._shutting_down:
                raise ShutDown
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._getters.append(waiter)
            try:
                await waiter
            except asyncio.CancelledError:
                # A wake-up handed to a getter that is going away must go to another getter.
                if waiter.done() and not waiter.cancelled():
                    self._wake_one()
                else:
                    self._remove_getter(waiter)
                raise
        item = self._queue.popleft()
        if self._metrics:
            self._depth.dec()
        self._processing.add(item)
        self._dirty.discard(item)
        return item

    def done(self, item: T) -> None:
        """The worker is finished with ``item``; if it was added meanwhile, it is queued again."""
        self._processing.discard(item)
        if item in self._dirty:
            self._queue.append(item)
            if self._metrics:
                self._depth.inc()
            self._wake_one()
        if self._drained is not None and not self._processing and not self._drained.done():
            self._drained.set_result(None)

    def shut_down(self) -> None:
        """Refuse new keys; workers get what is still queued, then :class:`ShutDown`."""
        self._shutting_down = True
        self._cancel_timer()
        self._waiting.clear()
        self._ready_at.clear()
        while self._getters:
            waiter = self._getters.popleft()
            if not waiter.done():
                waiter.set_result(None)

    async def shut_down_with_drain(self) -> None:
        """Shut down, then wait until every key handed out has been marked done."""
        self.shut_down()
        if self._processing:
            self._drained = asyncio.get_running_loop().create_future()
            await self._drained

    # --- internals -------------------------------------------------------------------------

    def _wake_one(self) -> None:
        while self._getters:
            waiter = self._getters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    def _remove_getter(self, waiter: asyncio.Future[None]) -> None:
        try:
            self._getters.remove(waiter)
        except ValueError:
            pass

    def _arm(self, when: float) -> None:
        self._cancel_timer()
        self._timer_at = when
        self._timer = self._clock.call_at(when, self._release_due)

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = None
        self._timer_at = None

    def _release_due(self) -> None:
        self._timer = None
        self._timer_at = None
        now = self._clock.now()
        while self._waiting and self._waiting[0][0] <= now:
            ready, _, item = heapq.heappop(self._waiting)
            if self._ready_at.get(item) != ready:
                continue
            del self._ready_at[item]
            self.add(item)
        # Drop stale entries at the head so the timer is armed for a key that is really waiting.
        while self._waiting and self._ready_at.get(self._waiting[0][2]) != self._waiting[0][0]:
            heapq.heappop(self._waiting)
        if self._waiting:
            self._arm(self._waiting[0][0])


async def run_workers(queue: WorkQueue[T], handle: Callable[[T], Awaitable[None]], *, workers: int = 1,
                      drain_timeout: float = 5.0) -> None:
    """Run ``workers`` tasks that each take a key, ``await handle(key)``, and mark it done.

    Runs until cancelled (or until someone else shuts the queue down and it
    empties). On cancellation the queue is shut down, the workers get up to
    ``drain_timeout`` seconds to finish the keys in hand and those still queued
    (unless :data:`drain_allowed` says no: leadership was lost), and are then
    cancelled. ``handle`` should deal with its own errors; one that escapes is
    logged and the worker carries on.
    """
    if workers < 1:
        raise ValueError("workers must be at least 1")
    may_drain = drain_allowed.get()
    label = queue.name or "workqueue"
    tasks = [asyncio.create_task(_work(queue, handle), name=f"{label}-worker-{i}") for i in range(workers)]
    try:
        await asyncio.wait(tasks)
    finally:
        queue.shut_down()
        try:
            if drain_timeout > 0 and may_drain():
                await asyncio.wait(tasks, timeout=drain_timeout)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)


async def _work(queue: WorkQueue[T], handle: Callable[[T], Awaitable[None]]) -> None:
    while True:
        try:
            item = await queue.get()
        except ShutDown:
            return
        started = time.perf_counter()
        try:
            await handle(item)
        except Exception:
            log.exception("%s: handling %r failed", queue.name or "workqueue", item)
        finally:
            queue.done(item)
            if queue.name:
                metrics.WORKQUEUE_WORK_DURATION.labels(queue.name).observe(time.perf_counter() - started)
