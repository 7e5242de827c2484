"""Permit, PreBind and PostBind, waiting Pods, and plugins that raise at any extension point.

The scheduler runs against an ``httpx.MockTransport`` APIServer, as in
``test_sched_scheduler``; plugins are registered the way an out-of-tree
module registers them (a registry of name -> factory).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Mapping
from typing import Any

import httpx
import pytest

from machinery.api import PODS
from machinery.client import Client, ClientConfig
from machinery.client.clock import FakeClock
from machinery.informer import InformerFactory
from scheduler.framework.interface import SUCCESS, Code, CycleState, Handle, Status
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.framework.waiting_pods import WaitingPod, WaitingPods
from scheduler.plugins.registry import IN_TREE
from scheduler.profile import parse_config
from scheduler.scheduler import Scheduler
from tests.unit.test_sched_builders import node, pod
from tests.unit.test_sched_scheduler import Events, default_answer


def config(**plugins: Any) -> dict[str, Any]:
    """The default profile plus ``plugins`` (extension point -> list of names)."""
    return {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
            "profiles": [{"schedulerName": "default-scheduler",
                          "plugins": {point: {"enabled": [{"name": n} for n in names]}
                                      for point, names in plugins.items()}}]}


class StudyHarness:
    """A Scheduler with extra plugins, a recording fake APIServer and captured Events."""

    def __init__(self, cfg: Mapping[str, Any], extra: Mapping[str, Callable[..., Any]],
                 answer: Callable[[httpx.Request], httpx.Response] = default_answer,
                 max_inflight_bindings: int = 64, clock: Any = None) -> None:
        self.requests: list[httpx.Request] = []
        self._answer = answer
        self.client = Client(ClientConfig("http://api"), transport=httpx.MockTransport(self._handle))
        self.informers = InformerFactory(self.client)
        self.events = Events()
        self.scheduler = Scheduler(client=self.client, informers=self.informers, events=self.events,  # type: ignore[arg-type]
                                   config=parse_config(cfg), rng=random.Random(1), registry={**IN_TREE, **extra},
                                   max_inflight_bindings=max_inflight_bindings, clock=clock)
        self.pods = self.informers.informer(PODS, field_selector="status.phase!=Succeeded,status.phase!=Failed")

    def _handle(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return self._answer(request)

    def add_pod(self, p: Any) -> None:
        self.pods.store.upsert(f"{p.metadata.namespace}/{p.metadata.name}", p)
        self.scheduler._on_pod_add(p)

    async def cycle(self) -> bool:
        qpi = await asyncio.wait_for(self.scheduler.queue.pop(), 1)
        return self.scheduler.schedule_one(qpi)

    async def settle(self) -> None:
        while self.scheduler._tasks:
            await asyncio.gather(*self.scheduler._tasks)

    def bindings(self) -> list[str]:
        return [r.url.path.split("/")[6] for r in self.requests
                if r.method == "POST" and r.url.path.endswith("/binding")]


# --- WaitingPod -----------------------------------------------------------------------------------------


async def test_a_waiting_pod_goes_once_every_plugin_allows_it() -> None:
    clock = FakeClock()
    waiting = WaitingPod(PodInfo(pod("p")), {"A": 10, "B": 10}, clock=clock)
    assert waiting.pending_plugins() == ["A", "B"]
    waiting.allow("A")
    assert not waiting.done
    waiting.allow("B")
    assert await waiting.wait() is SUCCESS
    assert clock.pending_timers == 0


async def test_a_rejection_ends_the_wait_with_the_plugin_and_its_message() -> None:
    waiting = WaitingPod(PodInfo(pod("p")), {"A": 10, "B": 10}, clock=FakeClock())
    task = asyncio.create_task(waiting.wait())
    await asyncio.sleep(0)
    waiting.reject("B", "the gang broke up")
    status = await task
    assert (status.code, status.plugin, status.message) == (Code.UNSCHEDULABLE, "B", "the gang broke up")
    waiting.allow("A")
    assert (await waiting.wait()).code is Code.UNSCHEDULABLE


async def test_a_timeout_is_a_rejection_by_that_plugin() -> None:
    clock = FakeClock()
    waiting = WaitingPod(PodInfo(pod("p")), {"Gang": 10, "Other": 20}, clock=clock)
    clock.advance(9.9)
    assert not waiting.done
    clock.advance(0.2)
    status = await waiting.wait()
    assert status.plugin == "Gang"
    assert status.message == "rejected due to timeout after waiting 10s at plugin Gang"


def test_timeouts_are_capped_at_fifteen_minutes() -> None:
    clock = FakeClock()
    waiting = WaitingPod(PodInfo(pod("p")), {"A": 3600}, clock=clock)
    clock.advance(15 * 60 + 1)
    assert waiting.done


def test_the_map_iterates_over_a_copy() -> None:
    pods = WaitingPods(FakeClock())
    for name in ("a", "b"):
        pods.add(PodInfo(pod(name)), {"X": 5})
    for waiting in pods:
        pods.remove(waiting.pod.uid)
    assert len(pods) == 0


# --- Permit in the scheduler ------------------------------------------------------------------------------


class Gate:
    """A Permit plugin that holds every Pod until the test lets it go."""

    name = "Gate"

    def __init__(self, handle: Handle) -> None:
        self.handle = handle

    def permit(self, state: CycleState, p: PodInfo, node_name: str) -> tuple[Status, float]:
        return Status(Code.WAIT), 30.0

    def release(self, name: str) -> None:
        self.handle.iterate_over_waiting_pods(
            lambda waiting: waiting.allow(self.name) if waiting.pod.name == name else None)


def gate_harness(**kwargs: Any) -> tuple[StudyHarness, list[Gate]]:
    made: list[Gate] = []

    def factory(args: Any, handle: Handle) -> Gate:
        made.append(Gate(handle))
        return made[-1]
    h = StudyHarness(config(permit=["Gate"]), {"Gate": factory}, **kwargs)
    return h, made


async def test_a_pod_held_at_permit_is_bound_only_when_allowed() -> None:
    h, gates = gate_harness()
    h.scheduler._on_node_add(node("n1"))
    h.add_pod(pod("p", cpu="1"))
    assert await h.cycle()
    await asyncio.sleep(0.01)
    assert h.bindings() == []
    # Held, the Pod stays assumed: the next cycle counts its cpu.
    assert h.scheduler.cache.get("n1").req_cpu == 1000
    gates[-1].release("p")
    await h.settle()
    assert h.bindings() == ["p"]


async def test_a_rejected_pod_gives_its_place_back_and_is_unschedulable() -> None:
    h, _gates = gate_harness()
    h.scheduler._on_node_add(node("n1"))
    h.add_pod(pod("p", cpu="1"))
    assert await h.cycle()
    fwk = h.scheduler.frameworks["default-scheduler"]
    assert fwk.reject_waiting_pod(h.pods.store.get("default/p").metadata.uid)
    await h.settle()
    assert h.bindings() == []
    assert h.scheduler.cache.get("n1").req_cpu == 0
    assert h.scheduler.queue.counts()["unschedulable"] == 1
    assert [e[2] for e in h.events.recorded] == ["FailedScheduling"]


async def test_waiting_pods_do_not_hold_binding_slots() -> None:
    # One binding slot, taken before each cycle as the scheduling loop takes it: if a waiting Pod
    # held it, the second Pod could never be scheduled.
    h, gates = gate_harness(max_inflight_bindings=1)
    h.scheduler._on_node_add(node("n1"))
    for name in ("a", "b", "c"):
        h.add_pod(pod(name, cpu="100m"))
    for _ in range(3):
        await asyncio.wait_for(h.scheduler._slots.acquire(), 1)
        assert await h.cycle()
        await asyncio.sleep(0)
    assert len(h.scheduler.frameworks["default-scheduler"].waiting_pods) == 3
    for name in ("a", "b", "c"):
        gates[-1].release(name)
    await h.settle()
    assert sorted(h.bindings()) == ["a", "b", "c"]


class Recording:
    """PreBind and PostBind that record what they saw, and a PreBind that can refuse."""

    name = "Recording"

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str]] = []
        self.refuse = False

    async def pre_bind(self, state: CycleState, p: PodInfo, node_name: str) -> Status:
        self.seen.append(("preBind", p.name, node_name))
        return Status(Code.UNSCHEDULABLE, "volume not ready") if self.refuse else Status()

    def post_bind(self, state: CycleState, p: PodInfo, node_name: str) -> None:
        self.seen.append(("postBind", p.name, node_name))


async def test_pre_bind_runs_before_binding_and_post_bind_after() -> None:
    plugin = Recording()
    h = StudyHarness(config(preBind=["Recording"], postBind=["Recording"]), {"Recording": lambda a, h: plugin})
    h.scheduler._on_node_add(node("n1"))
    h.add_pod(pod("p"))
    assert await h.cycle()
    await h.settle()
    assert plugin.seen == [("preBind", "p", "n1"), ("postBind", "p", "n1")]
    assert h.bindings() == ["p"]
    plugin.refuse = True
    h.add_pod(pod("q"))
    assert await h.cycle()
    await h.settle()
    assert h.bindings() == ["p"]
    assert h.events.recorded[-1][1:3] == ("Warning", "FailedScheduling")
    assert h.events.recorded[-1][3] == "volume not ready"


# --- plugins that raise ------------------------------------------------------------------------------------


class Boom(Exception):
    pass


class Raising:
    """Every extension point, each raising when its name is the one under test."""

    name = "Raising"

    def __init__(self, point: str) -> None:
        self.point = point

    def _maybe(self, point: str) -> None:
        if point == self.point:
            raise Boom(f"bug in {point}")

    def pre_enqueue(self, p: PodInfo) -> Status:
        self._maybe("preEnqueue")
        return Status()

    def pre_filter(self, state: CycleState, p: PodInfo, nodes: Any) -> tuple[None, Status]:
        self._maybe("preFilter")
        return None, Status()

    def pre_filter_extensions(self) -> None:
        return None

    def filter(self, state: CycleState, p: PodInfo, n: NodeInfo) -> Status:
        self._maybe("filter")
        return Status()

    def pre_score(self, state: CycleState, p: PodInfo, nodes: Any) -> Status:
        self._maybe("preScore")
        return Status()

    def score(self, state: CycleState, p: PodInfo, nodes: Any) -> list[int]:
        self._maybe("score")
        return [0] * len(nodes)

    def reserve(self, state: CycleState, p: PodInfo, node_name: str) -> Status:
        self._maybe("reserve")
        return Status()

    def unreserve(self, state: CycleState, p: PodInfo, node_name: str) -> None:
        self._maybe("unreserve")

    def permit(self, state: CycleState, p: PodInfo, node_name: str) -> tuple[Status, float]:
        self._maybe("permit")
        return Status(), 0.0

    async def pre_bind(self, state: CycleState, p: PodInfo, node_name: str) -> Status:
        self._maybe("preBind")
        return Status()

    async def bind(self, state: CycleState, p: PodInfo, node_name: str, annotations: Any) -> Status:
        self._maybe("bind")
        return Status(Code.SKIP)

    def post_bind(self, state: CycleState, p: PodInfo, node_name: str) -> None:
        self._maybe("postBind")


POINTS = ("preEnqueue", "preFilter", "filter", "preScore", "score", "reserve", "permit", "preBind", "bind")


@pytest.mark.parametrize("point", POINTS)
async def test_a_plugin_that_raises_is_an_error_status_for_that_pod(point: str) -> None:
    cfg = config(**{p: ["Raising"] for p in (*POINTS, "postBind")})
    cfg["profiles"][0]["plugins"]["bind"] = {"enabled": [{"name": "Raising"}, {"name": "DefaultBinder"}],
                                             "disabled": [{"name": "*"}]}
    h = StudyHarness(cfg, {"Raising": lambda args, handle: Raising(point)})
    for n in ("n1", "n2"):
        h.scheduler._on_node_add(node(n))
    h.add_pod(pod("bad"))
    if point == "preEnqueue":
        # A PreEnqueue error keeps the Pod out of activeQ, as a gate would.
        assert h.scheduler.queue.counts()["gated"] == 1
        return
    await h.cycle()
    await h.settle()
    assert h.bindings() == []
    [event] = h.events.recorded
    assert event[1:3] == ("Warning", "FailedScheduling")
    assert f"Boom: bug in {point}" in event[3]
    # An error, not a rejection: the Pod is retried after its backoff, and the scheduler goes on.
    assert h.scheduler.queue.counts()["backoff"] == 1
    assert h.scheduler.cache.get("n1").req_cpu == 0 and h.scheduler.cache.get("n2").req_cpu == 0


async def test_a_post_bind_that_raises_changes_nothing() -> None:
    h = StudyHarness(config(postBind=["Raising"]), {"Raising": lambda args, handle: Raising("postBind")})
    h.scheduler._on_node_add(node("n1"))
    h.add_pod(pod("p"))
    assert await h.cycle()
    await h.settle()
    assert h.bindings() == ["p"]


def test_a_factory_that_raises_is_a_profile_error() -> None:
    from scheduler.framework.runtime import FrameworkError
    from scheduler.scheduler import check_profiles

    def broken(args: Any, handle: Handle) -> Any:
        raise RuntimeError("cannot start")
    with pytest.raises(FrameworkError, match="initializing plugin 'Broken': RuntimeError: cannot start"):
        check_profiles(parse_config(config(filter=["Broken"])), {**IN_TREE, "Broken": broken})


async def test_a_queue_sort_that_raises_falls_back_to_arrival_order() -> None:
    class BadSort:
        name = "BadSort"

        def less(self, a: Any, b: Any) -> bool:
            raise Boom("no order")
    cfg = config(queueSort=["BadSort"])
    cfg["profiles"][0]["plugins"]["queueSort"]["disabled"] = [{"name": "*"}]
    h = StudyHarness(cfg, {"BadSort": lambda args, handle: BadSort()})
    for i in range(3):
        h.add_pod(pod(f"p{i}"))
    assert h.scheduler.queue.counts()["active"] == 3
    assert [(await h.scheduler.queue.pop()).pod_info.name for _ in range(3)] == ["p0", "p1", "p2"]
