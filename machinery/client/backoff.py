"""Jittered exponential backoff, as ``k8s.io/apimachinery/pkg/util/wait`` computes it.

The reflector, leader election, the event writer and ``retry_on_conflict`` all
wait between attempts. Kubernetes spreads those waits with jitter so that a
thousand clients that lost the APIServer at the same moment do not all come
back at the same moment; this module is the one place that arithmetic lives.

Not shared between tasks: each waiting loop owns its own backoff object.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from machinery.client.clock import Clock, RealClock


def jitter(duration: float, max_factor: float, rand: Callable[[], float] = random.random) -> float:
    """``wait.Jitter``: a duration between ``duration`` and ``duration * (1 + max_factor)``.

    A ``max_factor`` of zero or less means 1.0, as in Kubernetes.
    """
    if max_factor <= 0.0:
        max_factor = 1.0
    return duration + rand() * max_factor * duration


class ExponentialBackoff:
    """``wait.Backoff`` stepped forever, with the reflector's reset after a quiet spell.

    Each :meth:`next` returns the current delay (jittered when ``jitter`` > 0)
    and multiplies the base by ``factor`` up to ``cap``; the jitter is applied
    after the cap, so with ``jitter=1.0`` delays settle in ``[cap, 2*cap)``, as
    client-go's do. When ``reset_after`` seconds pass without a call, the next
    delay starts again from ``initial``.
    """

    def __init__(self, initial: float, cap: float, *, factor: float = 2.0, jitter: float = 0.0,
                 reset_after: float | None = None, clock: Clock | None = None,
                 rand: Callable[[], float] = random.random) -> None:
        if initial <= 0 or cap < initial or factor < 1.0:
            raise ValueError("backoff needs 0 < initial <= cap and factor >= 1")
        self._initial = initial
        self._cap = cap
        self._factor = factor
        self._jitter = jitter
        self._reset_after = reset_after
        self._clock = clock or RealClock()
        self._rand = rand
        self._current = initial
        self._last: float | None = None

    def next(self) -> float:
        now = self._clock.now()
        if self._reset_after is not None and self._last is not None and now - self._last > self._reset_after:
            self._current = self._initial
        self._last = now
        delay = self._current
        self._current = min(self._current * self._factor, self._cap)
        return jitter(delay, self._jitter, self._rand) if self._jitter > 0 else delay

    def reset(self) -> None:
        self._current = self._initial
        self._last = None
