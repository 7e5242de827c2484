"""The scheduling queue on virtual time: ordering, backoff, unschedulable Pods, events, gates, nominations."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from machinery.client.clock import FakeClock
from scheduler.framework.interface import SUCCESS, ActionType, ClusterEvent, Code, EventResource, Status
from scheduler.framework.types import PodInfo
from scheduler.plugins.queuesort import PrioritySort
from scheduler.queue import QueuedPodInfo, SchedulingQueue
from tests.unit.test_sched_builders import pod

NODE_ADD = ClusterEvent(EventResource.NODE, ActionType.ADD, "NodeAdd")
POD_DELETE = ClusterEvent(EventResource.POD, ActionType.DELETE, "AssignedPodDelete")


def gate(p: PodInfo) -> Status:
    gates = p.pod.spec.scheduling_gates if p.pod.spec else None
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "gated") if gates else SUCCESS


def only_node_events(qpi: QueuedPodInfo, event: ClusterEvent) -> bool:
    return event.resource is EventResource.NODE


def make_queue(clock: FakeClock) -> SchedulingQueue:
    return SchedulingQueue(PrioritySort().less, pre_enqueue=gate, interest=only_node_events, clock=clock)


def info(name: str, priority: int = 0, **spec: Any) -> PodInfo:
    return PodInfo(pod(name, priority=priority, **spec))


async def test_higher_priority_first_then_first_in() -> None:
    clock = FakeClock(100.0)
    queue = make_queue(clock)
    for name, priority in (("low-early", 1), ("high", 10), ("low-late", 1)):
        queue.add(info(name, priority))
        clock.advance(1)
    order = [(await queue.pop()).pod_info.name for _ in range(3)]
    assert order == ["high", "low-early", "low-late"]


async def test_pop_waits_for_a_pod() -> None:
    queue = make_queue(FakeClock())
    waiter = asyncio.create_task(queue.pop())
    await asyncio.sleep(0)
    assert not waiter.done()
    queue.add(info("p"))
    qpi = await asyncio.wait_for(waiter, 1)
    assert qpi.pod_info.name == "p" and qpi.attempts == 1


@pytest.mark.parametrize(("attempts", "backoff"), [
    pytest.param(1, 1.0, id="first-failure-1s"), pytest.param(2, 2.0, id="second-2s"),
    pytest.param(4, 8.0, id="fourth-8s"), pytest.param(5, 10.0, id="capped-at-10s"),
    pytest.param(30, 10.0, id="still-capped"),
])
async def test_backoff_doubles_from_1s_to_10s(attempts: int, backoff: float) -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    queue.add(info("p"))
    qpi = await queue.pop()
    qpi.attempts = attempts
    queue.add_backoff(qpi)
    assert queue.counts()["backoff"] == 1
    clock.advance(backoff - 0.01)
    assert queue.counts()["active"] == 0
    clock.advance(0.01)
    assert queue.counts() == {"active": 1, "backoff": 0, "unschedulable": 0, "gated": 0}
    assert (await queue.pop()).attempts == attempts + 1


async def test_an_error_backs_off_instead_of_waiting_for_events() -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    queue.add(info("p"))
    queue.add_unschedulable(await queue.pop(), ())
    assert queue.counts()["backoff"] == 1


async def test_unschedulable_pods_move_on_events_their_plugins_care_about() -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    queue.add(info("p"))
    queue.add_unschedulable(await queue.pop(), {"NodeResourcesFit"})
    assert queue.counts()["unschedulable"] == 1
    assert queue.move_all(POD_DELETE) == 0
    clock.advance(5)
    assert queue.move_all(NODE_ADD) == 1
    assert (await queue.pop()).pod_info.name == "p"


async def test_a_pod_moved_while_backing_off_waits_out_its_backoff() -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    queue.add(info("p"))
    queue.add_unschedulable(await queue.pop(), {"NodeResourcesFit"})
    queue.move_all(NODE_ADD)
    assert queue.counts()["backoff"] == 1
    clock.advance(1)
    assert queue.counts()["active"] == 1


async def test_unschedulable_pods_are_retried_after_five_minutes_anyway() -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    queue.add(info("p"))
    queue.add_unschedulable(await queue.pop(), {"NodeResourcesFit"})
    clock.advance(299)
    assert queue.counts()["unschedulable"] == 1
    clock.advance(1)
    assert queue.counts()["active"] == 1


async def test_gated_pods_wait_for_their_gates_to_go() -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    gated = info("p", schedulingGates=[{"name": "example.com/wait"}])
    queue.add(gated)
    assert queue.counts()["gated"] == 1
    queue.move_all(NODE_ADD)
    clock.advance(600)
    assert queue.counts()["gated"] == 1
    queue.update(info("p"))
    assert (await queue.pop()).pod_info.name == "p"


async def test_an_updated_unschedulable_pod_is_retried_but_not_on_status_changes() -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    queue.add(info("p"))
    queue.add_unschedulable(await queue.pop(), {"NodeResourcesFit"})
    clock.advance(20)
    queue.update(info("p"), changed=False)
    assert queue.counts()["unschedulable"] == 1
    queue.update(info("p", cpu="1"), changed=True)
    assert queue.counts()["active"] == 1


async def test_delete_removes_a_pod_from_any_queue() -> None:
    clock = FakeClock()
    queue = make_queue(clock)
    for name in ("a", "b", "c"):
        queue.add(info(name))
    b = info("b")
    queue.delete(b.uid)
    assert [(await queue.pop()).pod_info.name for _ in range(2)] == ["a", "c"]
    assert queue.counts()["active"] == 0


async def test_nominated_pods_are_tracked_per_node() -> None:
    queue = make_queue(FakeClock())
    a, b = info("a"), info("b")
    queue.add_nominated_pod(a, "n1")
    queue.add_nominated_pod(b, "n1")
    queue.add_nominated_pod(b, "n2")
    assert [p.name for p in queue.nominated_pods_for_node("n1")] == ["a"]
    assert set(queue.nominated_node_names()) == {"n1", "n2"}
    queue.delete(a.uid)
    queue.add_nominated_pod(b, "")
    assert not queue.nominated_node_names()


async def test_close_wakes_a_waiting_pop() -> None:
    queue = make_queue(FakeClock())
    waiter = asyncio.create_task(queue.pop())
    await asyncio.sleep(0)
    queue.close()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(waiter, 1)
