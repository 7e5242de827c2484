"""Pods held at Permit, as ``framework/runtime/waiting_pods_map.go``.

A Permit plugin that answers WAIT (Coscheduling, waiting for the rest of a
gang) holds the Pod after its scheduling cycle: the Pod stays assumed on its
node, and its binding cycle waits on :meth:`WaitingPod.wait` until every
plugin that asked it to wait has called :meth:`WaitingPod.allow`, or one
calls :meth:`WaitingPod.reject`, or a plugin's timeout runs out (a rejection
by that plugin: ``rejected due to timeout after waiting 10s at plugin X``).

A Permit timeout is capped at :data:`MAX_TIMEOUT` (15 minutes), as in Kubernetes.

Concurrency: used from the event loop's thread only. Timers come from a
:class:`~machinery.client.clock.Clock`, so tests run on virtual time; the
outcome is an :class:`asyncio.Future` made when the first waiter asks for it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping
from typing import Final

from machinery.client.clock import Clock, RealClock, Timer
from scheduler.framework.interface import SUCCESS, Code, Status
from scheduler.framework.types import PodInfo

#: The longest a Permit plugin may make a Pod wait (``maxTimeout``).
MAX_TIMEOUT: Final = 15 * 60.0


class WaitingPod:
    """One Pod waiting at Permit, and the plugins it waits for."""

    def __init__(self, pod: PodInfo, timeouts: Mapping[str, float], *, clock: Clock) -> None:
        self._pod = pod
        self._clock = clock
        self._outcome: Status | None = None
        self._future: asyncio.Future[Status] | None = None
        self._timers: dict[str, Timer] = {}
        now = clock.now()
        for plugin, seconds in timeouts.items():
            wait = min(max(seconds, 0.0), MAX_TIMEOUT)
            self._timers[plugin] = clock.call_at(now + wait, lambda p=plugin, w=wait: self.reject(  # type: ignore[misc]
                p, f"rejected due to timeout after waiting {_seconds(w)} at plugin {p}"))

    @property
    def pod(self) -> PodInfo:
        return self._pod

    @property
    def done(self) -> bool:
        return self._outcome is not None

    def pending_plugins(self) -> list[str]:
        return sorted(self._timers)

    def allow(self, plugin: str) -> None:
        timer = self._timers.pop(plugin, None)
        if timer is not None:
            timer.cancel()
        if not self._timers and self._outcome is None:
            self._finish(SUCCESS)

    def reject(self, plugin: str, message: str = "") -> None:
        if self._outcome is not None:
            return
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        self._finish(Status(Code.UNSCHEDULABLE, message or f"rejected by {plugin} at Permit", plugin=plugin))

    async def wait(self) -> Status:
        """The outcome: SUCCESS once allowed, else the rejection (plugin and message)."""
        if self._outcome is not None:
            return self._outcome
        if self._future is None:
            self._future = asyncio.get_running_loop().create_future()
        return await asyncio.shield(self._future)

    def _finish(self, outcome: Status) -> None:
        self._outcome = outcome
        if self._future is not None and not self._future.done():
            self._future.set_result(outcome)


class WaitingPods:
    """The waiting Pods of one framework, by uid."""

    def __init__(self, clock: Clock | None = None) -> None:
        self._clock = clock or RealClock()
        self._pods: dict[str, WaitingPod] = {}

    def add(self, pod: PodInfo, timeouts: Mapping[str, float]) -> WaitingPod:
        waiting = WaitingPod(pod, timeouts, clock=self._clock)
        self._pods[pod.uid] = waiting
        return waiting

    def get(self, uid: str) -> WaitingPod | None:
        return self._pods.get(uid)

    def remove(self, uid: str) -> WaitingPod | None:
        return self._pods.pop(uid, None)

    def __iter__(self) -> Iterator[WaitingPod]:
        # A callback may allow or reject Pods (and so end their waits) while we iterate.
        return iter(list(self._pods.values()))

    def __len__(self) -> int:
        return len(self._pods)


def _seconds(value: float) -> str:
    """A duration as Go prints one (``10s``, ``1.5s``, ``2m0s``)."""
    if value >= 60:
        minutes, rest = divmod(value, 60)
        return f"{int(minutes)}m{rest:g}s"
    return f"{value:g}s"
