"""DefaultPreemption: eligibility, minimal victims, the choice among candidate nodes, and its messages."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

import pytest
from kubernetes.client import V1Pod, V1PodCondition, V1PodStatus

from scheduler.framework.interface import Code, CycleState
from scheduler.framework.types import PodInfo
from scheduler.plugins.defaultpreemption import Candidate, DefaultPreemption, select_candidate
from scheduler.schedule_one import ScheduleResult
from tests.unit.test_sched_builders import FakeCluster, algorithm, cache_of, node, pod


def preempt(the_pod: V1Pod, existing: Sequence[V1Pod], nodes: int = 1,
            cpu: str = "4") -> tuple[FakeCluster, str | None, str]:
    """Run a cycle for ``the_pod``; (cluster, nominated node or None, PostFilter message)."""
    cache = cache_of([node(f"n{i}", cpu=cpu) for i in range(1, nodes + 1)], existing)
    cluster = FakeCluster(cache)
    fwk = cluster.framework()
    state = CycleState()
    info = PodInfo(the_pod)
    fit = algorithm(cache).schedule_pod(fwk, state, info)
    assert not isinstance(fit, ScheduleResult)
    result, status = fwk.run_post_filter(state, info, fit.diagnosis.node_to_status)
    return cluster, result.nominated_node_name if result is not None else None, status.message


def victim(name: str, cpu: str, priority: int, node_name: str = "n1", started: int = 0) -> V1Pod:
    p = pod(name, cpu=cpu, priority=priority, node_name=node_name)
    p.status = V1PodStatus(start_time=dt.datetime(2024, 1, 1, tzinfo=dt.UTC) + dt.timedelta(minutes=started))
    return p


def test_victims_are_the_least_important_that_free_enough_room() -> None:
    existing = [victim("a", "1", 1), victim("b", "1", 2), victim("c", "2", 3)]
    cluster, nominated, message = preempt(pod("p", cpu="2", priority=10), existing)
    assert (nominated, message) == ("n1", "")
    # Reprieve goes most important first: c keeps its place, b and a make the room.
    assert cluster.preempted == [("default/p", "n1", ["default/b", "default/a"])]


def test_equal_or_higher_priority_pods_are_never_victims() -> None:
    existing = [victim("same", "2", 10), victim("low", "2", 1)]
    cluster, nominated, _ = preempt(pod("p", cpu="2", priority=10), existing)
    assert nominated == "n1"
    assert cluster.preempted[0][2] == ["default/low"]


def test_no_lower_priority_pods() -> None:
    cluster, nominated, message = preempt(pod("p", cpu="2", priority=10), [victim("v", "4", 10)])
    assert message == "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    assert nominated == "" and not cluster.preempted


def test_removing_every_victim_is_not_enough() -> None:
    _, _, message = preempt(pod("p", cpu="3", priority=10), [victim("v", "2", 1), victim("w", "2", 20)])
    assert message == "preemption: 0/1 nodes are available: 1 Insufficient cpu."


def test_unresolvable_nodes_are_not_helped() -> None:
    _, _, message = preempt(pod("p", cpu="8", priority=10), [victim("v", "1", 1)])
    assert message == "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."


def test_preemption_policy_never() -> None:
    cluster, nominated, message = preempt(pod("p", cpu="2", priority=10, preemptionPolicy="Never"),
                                          [victim("v", "4", 1)])
    assert message == "preemption: not eligible due to preemptionPolicy=Never."
    assert nominated is None and not cluster.preempted


def test_not_again_while_its_victims_are_terminating() -> None:
    terminating = victim("v", "4", 1)
    terminating.metadata.deletion_timestamp = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    terminating.status = V1PodStatus(conditions=[V1PodCondition(type="DisruptionTarget", status="True",
                                                                reason="PreemptionByScheduler")])
    the_pod = pod("p", cpu="2", priority=10)
    the_pod.status = V1PodStatus(nominated_node_name="n1")
    _, _, message = preempt(the_pod, [terminating])
    assert message == "preemption: not eligible due to a terminating pod on the nominated node."


def candidate(node_name: str, *victims: tuple[int, int]) -> Candidate:
    """A candidate whose victims have these (priority, start minute), most important first."""
    return Candidate(node_name, [PodInfo(victim(f"{node_name}-{i}", "1", prio, node_name, started))
                                 for i, (prio, started) in enumerate(victims)])


@pytest.mark.parametrize(("candidates", "expected"), [
    pytest.param([candidate("n1", (5, 0)), candidate("n2", (1, 0), (1, 0))], "n2",
                 id="lowest-highest-priority-victim"),
    pytest.param([candidate("n1", (5, 0), (4, 0)), candidate("n2", (5, 0), (1, 0))], "n2",
                 id="lowest-sum-of-priorities"),
    pytest.param([candidate("n1", (5, 0), (5, 0)), candidate("n2", (5, 0), (5, 0)), candidate("n3", (5, 0))], "n3",
                 id="fewest-victims"),
    pytest.param([candidate("n1", (5, 0)), candidate("n2", (5, 30))], "n2",
                 id="latest-started-highest-priority-victim"),
    pytest.param([candidate("n1", (5, 0)), candidate("n2", (5, 0))], "n1", id="first-when-all-equal"),
])
def test_choice_of_node(candidates: list[Candidate], expected: str) -> None:
    assert select_candidate(candidates).node == expected


def test_picks_the_node_with_the_cheapest_victims() -> None:
    existing = [victim("important", "4", 50, "n1"), victim("cheap", "4", 1, "n2")]
    cluster, nominated, _ = preempt(pod("p", cpu="2", priority=100), existing, nodes=2)
    assert nominated == "n2"
    assert cluster.preempted == [("default/p", "n2", ["default/cheap"])]


def test_dry_run_leaves_the_cache_alone() -> None:
    cache = cache_of([node("n1")], [victim("v", "4", 1)])
    fwk = FakeCluster(cache).framework()
    plugin = fwk.plugins["DefaultPreemption"]
    assert isinstance(plugin, DefaultPreemption)
    state, the_pod = CycleState(), PodInfo(pod("p", cpu="2", priority=5))
    fwk.run_pre_filter(state, the_pod, cache.node_infos())
    victims, status = plugin.select_victims(state, the_pod, cache.get("n1").clone())
    assert status.code is Code.SUCCESS and [v.name for v in victims] == ["v"]
    assert len(cache.get("n1").pods) == 1 and cache.get("n1").free_cpu == 0
