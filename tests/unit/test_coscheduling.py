"""The Coscheduling example plugin: gang rules alone, then gangs through the scheduler (all or nothing)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from machinery.client.clock import FakeClock
from scheduler.framework.interface import Code
from scheduler.framework.types import PodInfo
from scheduler_plugins.coscheduling import PLUGINS, POD_GROUP_LABEL, PODGROUPS, PodGroup, crd_manifest
from scheduler_plugins.coscheduling.manager import PodGroupManager
from tests.unit.test_sched_builders import cache_of, node, pod
from tests.unit.test_sched_extension_points import StudyHarness

PROFILE: dict[str, Any] = {
    "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
    "profiles": [{"schedulerName": "default-scheduler",
                  "plugins": {"multiPoint": {"enabled": [{"name": "Coscheduling"}]},
                              "queueSort": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]}},
                  "pluginConfig": [{"name": "Coscheduling", "args": {"permitWaitingTimeSeconds": 10}}]}]}


def group(name: str, min_member: int, **spec: Any) -> PodGroup:
    return PodGroup.model_validate({"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
                                    "metadata": {"name": name, "namespace": "default"},
                                    "spec": {"minMember": min_member, **spec}})


def member(name: str, group_name: str = "g", cpu: str = "1", **kwargs: Any) -> Any:
    return pod(name, cpu=cpu, labels={POD_GROUP_LABEL: group_name}, **kwargs)


# --- the rules ------------------------------------------------------------------------------------------


def manager(groups: dict[str, PodGroup], members: list[Any], nodes: list[Any], bound: list[Any] = (),
            backoff: float = 0, now: list[float] | None = None) -> PodGroupManager:
    clock = now if now is not None else [0.0]
    return PodGroupManager(get_group=lambda ns, n: groups.get(n), members=lambda ns, n: [
        m for m in members if m.metadata.labels.get(POD_GROUP_LABEL) == n],
        snapshot=cache_of(nodes, list(bound)), now=lambda: clock[0], permit_timeout=60, backoff=backoff)


@pytest.mark.parametrize(("groups", "pods", "code", "message"), [
    pytest.param({}, [pod("plain")], Code.SKIP, "", id="no-group"),
    pytest.param({}, [member("a")], Code.UNSCHEDULABLE, "PodGroup default/g not found", id="group-missing"),
    pytest.param({"g": group("g", 3)}, [member("a"), member("b")], Code.UNSCHEDULABLE,
                 "pre-filter pod a cannot find enough sibling pods, current pods number: 2, minMember of group: 3",
                 id="too-few-siblings"),
    pytest.param({"g": group("g", 2)}, [member("a"), member("b")], Code.SUCCESS, "", id="enough"),
    pytest.param({"g": group("g", 2, minResources={"cpu": "9"})}, [member("a"), member("b")], Code.UNSCHEDULABLE,
                 "resource gap: cpu: 1000", id="min-resources"),
])
def test_pre_filter(groups: dict[str, PodGroup], pods: list[Any], code: Code, message: str) -> None:
    m = manager(groups, pods, [node("n1", cpu="4"), node("n2", cpu="4")])
    status = m.pre_filter(PodInfo(pods[0]))
    assert (status.code, status.message) == (code, message)


def test_the_groups_own_pods_count_as_free_for_min_resources() -> None:
    placed = member("a", node_name="n1", cpu="4")
    m = manager({"g": group("g", 2, minResources={"cpu": "8"})}, [placed, member("b")], [node("n1", cpu="4"),
                node("n2", cpu="4")], bound=[placed])
    assert m.pre_filter(PodInfo(member("b"))).is_success()


def test_a_group_that_failed_backs_off() -> None:
    now = [100.0]
    m = manager({"g": group("g", 1)}, [member("a")], [node("n1")], backoff=5, now=now)
    m.back_off("default/g")
    assert m.pre_filter(PodInfo(member("a"))).message == "podGroup default/g failed recently"
    now[0] = 106.0
    assert m.pre_filter(PodInfo(member("a"))).is_success()


def test_permit_waits_until_min_member_are_placed() -> None:
    bound = [member("a", node_name="n1")]
    m = manager({"g": group("g", 3, scheduleTimeoutSeconds=7)}, [], [node("n1")], bound=bound)
    verdict = m.permit(PodInfo(member("b")))
    assert (verdict.status.code, verdict.timeout, verdict.activate_siblings) == (Code.WAIT, 7.0, True)
    m2 = manager({"g": group("g", 1)}, [], [node("n1")], bound=bound)
    assert m2.permit(PodInfo(member("b"))).status.is_success()
    m3 = manager({}, [], [node("n1")])
    assert m3.permit(PodInfo(member("b"))).status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert m3.permit(PodInfo(pod("plain"))).status.is_success()


@pytest.mark.parametrize(("min_member", "placed", "reject"), [
    pytest.param(3, 1, True, id="far-from-quorum"),
    pytest.param(3, 3, False, id="quorum-reached"),
    pytest.param(20, 18, False, id="within-10-percent"),
])
def test_post_filter_gives_back_the_places_unless_the_gang_is_nearly_there(min_member: int, placed: int,
                                                                           reject: bool) -> None:
    bound = [member(f"m{i}", node_name="n1", cpu="10m") for i in range(placed)]
    m = manager({"g": group("g", min_member)}, [], [node("n1")], bound=bound)
    assert m.should_reject_group(PodInfo(member("late"))) == ("default/g", reject)


def test_the_crd_describes_podgroups() -> None:
    crd = crd_manifest()
    assert crd["metadata"]["name"] == f"{PODGROUPS.plural}.{PODGROUPS.group}"
    [version] = crd["spec"]["versions"]
    assert version["name"] == PODGROUPS.version and version["subresources"] == {"status": {}}
    assert version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["minMember"]["minimum"] == 1


# --- through the scheduler -------------------------------------------------------------------------------


def gang(nodes: list[Any], min_member: int, members: int, clock: Any = None) -> StudyHarness:
    h = StudyHarness(PROFILE, PLUGINS, clock=clock)
    for n in nodes:
        h.scheduler._on_node_add(n)
    h.informers.informer(PODGROUPS).store.upsert("default/g", group("g", min_member))
    for i in range(members):
        h.add_pod(member(f"g-{i}"))
    return h


async def test_a_gang_that_fits_is_bound_all_together() -> None:
    h = gang([node("n1", cpu="2"), node("n2", cpu="2")], 3, 3)
    for _ in range(2):
        assert await h.cycle()
        await asyncio.sleep(0)
        assert h.bindings() == []
    assert await h.cycle()
    await h.settle()
    assert sorted(h.bindings()) == ["g-0", "g-1", "g-2"]


async def test_a_gang_that_does_not_fit_binds_none_of_its_pods() -> None:
    h = gang([node("n1", cpu="2")], 3, 3)
    assert await h.cycle()
    assert await h.cycle()
    assert not await h.cycle()
    await h.settle()
    assert h.bindings() == []
    assert h.scheduler.cache.get("n1").req_cpu == 0
    messages = [e[3] for e in h.events.recorded if e[2] == "FailedScheduling"]
    assert any("PodGroup default/g gets rejected due to Pod g-2 is unschedulable even after PostFilter" in m
               for m in messages)
    assert sum("optimistic rejection in PostFilter" in m for m in messages) == 2


async def test_waiting_members_give_their_places_back_after_the_timeout() -> None:
    clock = FakeClock()
    h = gang([node("n1", cpu="8")], 3, 3, clock=clock)
    assert await h.cycle()
    assert await h.cycle()
    await asyncio.sleep(0)
    clock.advance(10.5)
    await h.settle()
    assert h.bindings() == []
    assert h.scheduler.cache.get("n1").req_cpu == 0
    messages = [e[3] for e in h.events.recorded if e[2] == "FailedScheduling"]
    assert "rejected due to timeout after waiting 10s at plugin Coscheduling" in messages


async def test_members_queue_together() -> None:
    h = StudyHarness(PROFILE, PLUGINS)
    h.informers.informer(PODGROUPS).store.upsert("default/g", group("g", 2))
    for p in (pod("a"), member("g-0"), pod("b"), member("g-1"), pod("c")):
        h.add_pod(p)
    order = [(await h.scheduler.queue.pop()).pod_info.name for _ in range(5)]
    assert abs(order.index("g-0") - order.index("g-1")) == 1
