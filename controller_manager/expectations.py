"""Expectations: the creations and deletions a controller made that its informer has not seen yet.

A controller that creates three Pods learns of them only when their ADDED
events come back through the watch. Until then its cache still shows too few
Pods, and a second sync would create three more. Kubernetes' answer
(``ControllerExpectations`` and ``UIDTrackingControllerExpectations`` in
``pkg/controller/controller_utils.go``) is kept here:

- before writing, the controller records how many creations (or which Pods'
  deletions) it expects; each informer event for one of them lowers the count;
- a sync acts only when its expectations are *satisfied*: fulfilled (nothing
  outstanding), expired (5 minutes passed, so a lost event cannot wedge the
  controller forever), or absent (a new controller, or one whose expectations
  were deleted with it);
- deletions are tracked by Pod key, so that the update that sets a Pod's
  deletionTimestamp and its final DELETED event count once, not twice.

Concurrency: one event loop; informer handlers lower expectations and workers
raise them, never across an await, so no lock is needed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from machinery.client.clock import Clock, RealClock

#: How long expectations are trusted before a sync proceeds anyway (``ExpectationsTimeout``).
EXPECTATIONS_TIMEOUT = 300.0


@dataclass(slots=True)
class _Expected:
    adds: int
    dels: int
    set_at: float


class Expectations:
    """Outstanding creations (a count) and deletions (Pod keys) per controller key."""

    def __init__(self, *, clock: Clock | None = None, timeout: float = EXPECTATIONS_TIMEOUT) -> None:
        self._clock = clock or RealClock()
        self._timeout = timeout
        self._expected: dict[str, _Expected] = {}
        self._deleting: dict[str, set[str]] = {}

    def satisfied(self, key: str) -> bool:
        """Whether the controller may act: nothing outstanding, expired, or never set."""
        expected = self._expected.get(key)
        if expected is None:
            return True
        if expected.adds <= 0 and expected.dels <= 0:
            return True
        return self._clock.now() - expected.set_at > self._timeout

    def expect_creations(self, key: str, count: int) -> None:
        self._expected[key] = _Expected(count, 0, self._clock.now())

    def expect_deletions(self, key: str, pod_keys: Iterable[str]) -> None:
        keys = set(pod_keys)
        self._deleting[key] = keys
        self._expected[key] = _Expected(0, len(keys), self._clock.now())

    def creation_observed(self, key: str) -> None:
        expected = self._expected.get(key)
        if expected is not None:
            expected.adds -= 1

    def deletion_observed(self, key: str, pod_key: str) -> None:
        """A deletion of ``pod_key`` was seen (or will never be): counted once per Pod."""
        deleting = self._deleting.get(key)
        if deleting is None or pod_key not in deleting:
            return
        deleting.discard(pod_key)
        expected = self._expected.get(key)
        if expected is not None:
            expected.dels -= 1

    def delete(self, key: str) -> None:
        """Forget a controller (it was deleted): a new one of the same name starts clean."""
        self._expected.pop(key, None)
        self._deleting.pop(key, None)
