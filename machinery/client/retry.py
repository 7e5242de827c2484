"""``retry_on_conflict``: client-go's ``retry.RetryOnConflict`` for read-modify-write loops.

An update guarded by resourceVersion fails with 409 Conflict when someone else
wrote first. The fix is always the same: read again, apply the change again,
write again, a few times, with a short jittered pause so that two writers do
not collide forever. The function passed in must do the whole read-modify-write.

No shared state: each call owns its backoff.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from machinery.client.backoff import ExponentialBackoff
from machinery.client.clock import Clock, RealClock
from machinery.client.errors import Conflict

T = TypeVar("T")


async def retry_on_conflict(fn: Callable[[], Awaitable[T]], *, steps: int = 5, initial: float = 0.01,
                            factor: float = 1.0, jitter: float = 0.1, clock: Clock | None = None) -> T:
    """Run ``fn`` until it does not raise :class:`Conflict`, at most ``steps`` times.

    The defaults are client-go's ``retry.DefaultRetry`` (5 steps, 10 ms, factor
    1.0, jitter 0.1). The last Conflict is re-raised when every step conflicted;
    any other exception propagates at once.

    >>> async def bump() -> V1Pod:
    ...     pod = await client.get(PODS, "web", namespace="default")
    ...     labels = dict(pod.metadata.labels or {}, tier="front")
    ...     return await client.update(PODS, pod.model_copy(update={"metadata": ...}))
    >>> await retry_on_conflict(bump)
    """
    if steps < 1:
        raise ValueError("steps must be at least 1")
    clock = clock or RealClock()
    backoff = ExponentialBackoff(initial, max(initial, initial * factor ** steps), factor=factor,
                                 jitter=jitter, clock=clock)
    for attempt in range(1, steps + 1):
        try:
            return await fn()
        except Conflict:
            if attempt == steps:
                raise
        await clock.sleep(backoff.next())
    raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises
