"""Leader election decisions on virtual time, against an in-memory Lease API."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Any

import httpx
import pytest

from machinery.api.kinds import EVENTS, LEASES
from machinery.api.meta import parse_time
from machinery.client.clock import FakeClock
from machinery.events import EventBroadcaster
from machinery.leaderelection import LeaderElectionConfig, LeaderElector, LeadershipLost
from machinery.workqueue import WorkQueue, run_workers
from tests.unit.test_client_fakeapi import FakeApi


async def settle() -> None:
    for _ in range(60):
        await asyncio.sleep(0)


async def advance(clock: FakeClock, seconds: float, step: float = 0.1) -> None:
    await settle()
    for _ in range(round(seconds / step)):
        clock.advance(step)
        await settle()


class Candidate:
    """One elector whose work records when it runs and when it was stopped."""

    def __init__(self, api: FakeApi, clock: FakeClock, identity: str, **config: Any) -> None:
        self.config = LeaderElectionConfig(name="kube-scheduler", identity=identity, **config)
        self.client = api.client()
        self.elector = LeaderElector(self.client, self.config, clock=clock)
        self.clock = clock
        self.started_at: float | None = None
        self.stopped = asyncio.Event()
        self.finish = asyncio.Event()
        self.task: asyncio.Task[None] | None = None

    async def work(self) -> None:
        self.started_at = self.clock.now()
        try:
            await self.finish.wait()
        finally:
            self.stopped.set()

    def start(self) -> Candidate:
        self.task = asyncio.create_task(self.elector.run(self.work))
        return self

    @property
    def leading(self) -> bool:
        return self.started_at is not None and not self.stopped.is_set()

    async def kill(self) -> None:
        """Die without releasing, as SIGKILL would."""
        object.__setattr__(self.config, "release_on_cancel", False)
        assert self.task is not None
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)


@pytest.fixture
async def env() -> AsyncGenerator[tuple[FakeApi, FakeClock, list[Candidate]], None]:
    api, clock, candidates = FakeApi(), FakeClock(), []
    yield api, clock, candidates
    for c in candidates:
        if c.task is not None:
            c.task.cancel()
            await asyncio.gather(c.task, return_exceptions=True)
        await c.client.aclose()


def lease(api: FakeApi) -> dict[str, Any]:
    obj = api.get(LEASES, "kube-scheduler", "kube-system")
    assert obj is not None
    return obj["spec"]


async def test_first_candidate_creates_the_lease_and_leads(env) -> None:
    api, clock, candidates = env
    a = Candidate(api, clock, "a").start()
    candidates.append(a)
    await settle()
    assert a.leading and a.elector.is_leader
    spec = lease(api)
    assert spec["holderIdentity"] == "a"
    assert spec["leaseDurationSeconds"] == 15
    assert spec["leaseTransitions"] == 0
    assert spec["acquireTime"] == spec["renewTime"]
    assert spec["renewTime"].endswith("Z") and len(spec["renewTime"].split(".")[1]) == 7, "MicroTime"


async def test_leader_renews_every_retry_period_keeping_acquire_time(env) -> None:
    api, clock, candidates = env
    a = Candidate(api, clock, "a").start()
    candidates.append(a)
    await settle()
    first = lease(api)
    puts_before = sum(r.method == "PUT" for r in api.requests)
    await advance(clock, 6.1)
    renewed = lease(api)
    assert sum(r.method == "PUT" for r in api.requests) - puts_before == 3
    assert renewed["acquireTime"] == first["acquireTime"]
    assert parse_time(renewed["renewTime"]) >= parse_time(first["renewTime"])
    assert renewed["leaseTransitions"] == 0


async def test_standby_takes_over_only_after_the_lease_expires_by_its_own_clock(env) -> None:
    api, clock, candidates = env
    a = Candidate(api, clock, "a").start()
    candidates.append(a)
    await settle()
    b = Candidate(api, clock, "b").start()
    candidates.append(b)
    await advance(clock, 30.0)
    assert a.leading and not b.leading, "a renewing leader is never displaced"
    await a.kill()
    killed_at = clock.now()
    last_renew_seen = clock.now()  # b polls every 2-4.4 s, so it saw a's last renewal at most 4.4 s ago
    await advance(clock, 25.0)
    assert b.leading
    assert b.started_at is not None
    assert b.started_at - killed_at >= 15.0 - 4.4, "b waited a full lease duration after the last change it saw"
    assert b.started_at - last_renew_seen <= 15.0 + 2 * 4.4
    spec = lease(api)
    assert spec["holderIdentity"] == "b" and spec["leaseTransitions"] == 1


async def test_leader_that_cannot_renew_stops_its_work_before_the_lease_expires(env) -> None:
    api, clock, candidates = env
    a = Candidate(api, clock, "a").start()
    candidates.append(a)
    await settle()
    renewed_at = clock.now()

    def unreachable(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    api.hooks.append(unreachable)
    await advance(clock, 12.0)
    assert a.stopped.is_set(), "the work is cancelled when renewal fails"
    assert a.task is not None and a.task.done()
    with pytest.raises(LeadershipLost):
        a.task.result()
    # The work stopped within the renew deadline (10 s) of the last renewal, well before the
    # 15 s a standby waits.
    assert clock.now() - renewed_at <= 12.0


async def test_leader_steps_down_at_once_when_another_holds_the_lease(env) -> None:
    api, clock, candidates = env
    a = Candidate(api, clock, "a").start()
    candidates.append(a)
    await settle()
    obj = api.get(LEASES, "kube-scheduler", "kube-system")
    api.put(LEASES, {**obj, "spec": {**obj["spec"], "holderIdentity": "intruder"}})
    await advance(clock, 2.2)
    assert a.stopped.is_set()
    with pytest.raises(LeadershipLost):
        a.task.result()
    assert lease(api)["holderIdentity"] == "intruder", "a loser does not release someone else's lease"


async def test_cancelling_the_leader_releases_the_lease_for_a_fast_handover(env) -> None:
    api, clock, candidates = env
    a = Candidate(api, clock, "a").start()
    candidates.append(a)
    await settle()
    b = Candidate(api, clock, "b").start()
    candidates.append(b)
    await advance(clock, 5.0)
    a.task.cancel()
    await asyncio.gather(a.task, return_exceptions=True)
    assert a.stopped.is_set()
    spec = lease(api)
    assert "holderIdentity" not in spec and spec["leaseDurationSeconds"] == 1
    released_at = clock.now()
    await advance(clock, 5.0)
    assert b.leading and b.started_at - released_at <= 4.5


async def test_work_that_returns_releases_the_lease(env) -> None:
    api, clock, candidates = env
    a = Candidate(api, clock, "a").start()
    candidates.append(a)
    await settle()
    a.finish.set()
    await settle()
    assert a.task.done() and a.task.exception() is None
    assert "holderIdentity" not in lease(api)


async def test_two_candidates_racing_to_create_the_lease_elect_one(env) -> None:
    api, clock, candidates = env
    a, b = Candidate(api, clock, "a"), Candidate(api, clock, "b")
    candidates += [a.start(), b.start()]
    await advance(clock, 10.0)
    assert [a.leading, b.leading].count(True) == 1
    assert lease(api)["holderIdentity"] == ("a" if a.leading else "b")


async def test_became_leader_event_on_the_lease(env) -> None:
    api, clock, candidates = env
    broadcaster = EventBroadcaster(api.client(), clock=clock)
    writer = asyncio.create_task(broadcaster.run())
    a = Candidate(api, clock, "a")
    a.elector = LeaderElector(a.client, a.config, clock=clock,
                              recorder=broadcaster.recorder("kube-scheduler"))
    candidates.append(a.start())
    await settle()
    writer.cancel()
    await asyncio.gather(writer, return_exceptions=True)
    [event] = api.of(EVENTS)
    assert event["reason"] == "LeaderElection" and event["message"] == "a became leader"
    assert event["involvedObject"]["kind"] == "Lease" and event["metadata"]["namespace"] == "kube-system"


@pytest.mark.parametrize(("overrides", "message"), [
    pytest.param({"lease_duration": 10, "renew_deadline": 10}, "leaseDuration must be greater than renewDeadline",
                 id="duration-not-above-deadline"),
    pytest.param({"renew_deadline": 2.4, "retry_period": 2}, "renewDeadline must be greater than retryPeriod",
                 id="deadline-within-jittered-retry"),
    pytest.param({"lease_duration": 0.5, "renew_deadline": 0.3, "retry_period": 0.1}, "at least one second",
                 id="sub-second-lease"),
    pytest.param({"identity": ""}, "non-empty identity", id="no-identity"),
])
def test_config_validation(overrides: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        LeaderElectionConfig(**{"name": "x", "identity": "me", **overrides})


async def test_is_leading_turns_false_after_a_pause_before_the_renewal_loop_runs(env) -> None:
    api, clock, candidates = env
    a = Candidate(api, clock, "a").start()
    candidates.append(a)
    await settle()
    assert a.elector.is_leading
    clock.advance(10.5)  # a pause: time jumps past the renew deadline with no task having run
    assert a.elector.is_leader, "the record still names a ..."
    assert not a.elector.is_leading, "... but its work must not act any more"


async def test_lost_lease_stops_worker_pools_without_draining(env) -> None:
    api, clock, candidates = env
    queue: WorkQueue[str] = WorkQueue()
    handled: list[str] = []
    in_flight = asyncio.Event()

    async def handle(key: str) -> None:
        in_flight.set()
        await asyncio.Event().wait()  # a sync that would run on forever if allowed to drain
        handled.append(key)

    async def work() -> None:
        await run_workers(queue, handle, workers=1, drain_timeout=3600)

    a = Candidate(api, clock, "a")
    a.work = work  # type: ignore[method-assign]
    candidates.append(a.start())
    await settle()
    queue.add("k")
    await in_flight.wait()

    def unreachable(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    api.hooks.append(unreachable)
    await advance(clock, 12.0)
    assert a.task.done(), "the pool was cancelled at once, not drained for an hour"
    with pytest.raises(LeadershipLost):
        a.task.result()
    assert handled == []


async def test_cancelled_leader_lets_worker_pools_drain_before_releasing(env) -> None:
    api, clock, candidates = env
    queue: WorkQueue[str] = WorkQueue()
    finish = asyncio.Event()
    handled: list[str] = []

    async def handle(key: str) -> None:
        await finish.wait()
        handled.append(key)

    async def work() -> None:
        await run_workers(queue, handle, workers=1, drain_timeout=3600)

    a = Candidate(api, clock, "a")
    a.work = work  # type: ignore[method-assign]
    candidates.append(a.start())
    await settle()
    queue.add("k")
    await settle()
    a.task.cancel()
    await settle()
    assert not a.task.done(), "the in-flight sync may finish"
    assert lease(api)["holderIdentity"] == "a", "the lease is released only after the drain"
    finish.set()
    await asyncio.gather(a.task, return_exceptions=True)
    assert handled == ["k"]
    assert "holderIdentity" not in lease(api)
