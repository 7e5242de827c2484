"""The framework and the algorithm: profiles, extension point expansion, weights, the FailedScheduling
message, how many nodes a cycle visits, round robin, tie-breaking and nominated Pods."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest
from kubernetes.client import V1PodStatus

from scheduler.framework.diagnosis import Diagnosis, FitError, fit_error_message, truncate_message
from scheduler.framework.interface import Code, CycleState, Status
from scheduler.framework.runtime import FrameworkError
from scheduler.framework.types import PodInfo
from scheduler.schedule_one import ScheduleResult, num_feasible_nodes_to_find, select_host
from tests.unit.test_sched_builders import (
    FakeCluster,
    algorithm,
    cache_of,
    framework_for,
    node,
    only_plugins,
    pod,
)

CONFIG = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}


def diagnosis(statuses: dict[str, Status], pre_filter: Status | None = None, post: str = "") -> Diagnosis:
    d = Diagnosis()
    d.node_to_status.statuses.update(statuses)
    if pre_filter is not None:
        d.node_to_status.absent = pre_filter
        d.pre_filter_msg = pre_filter.message
    d.post_filter_msg = post
    return d


CPU = Status(Code.UNSCHEDULABLE, "Insufficient cpu", plugin="NodeResourcesFit")
TAINT = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "node(s) had untolerated taint {dedicated: gpu}",
               plugin="TaintToleration")


@pytest.mark.parametrize(("num_nodes", "d", "expected"), [
    pytest.param(5, diagnosis({"n1": CPU, "n2": CPU, "n3": TAINT, "n4": TAINT, "n5": TAINT}),
                 "0/5 nodes are available: 2 Insufficient cpu, 3 node(s) had untolerated taint {dedicated: gpu}.",
                 id="counted-and-sorted"),
    pytest.param(12, diagnosis({f"n{i}": CPU for i in range(10)} | {"x": TAINT, "y": TAINT}),
                 "0/12 nodes are available: 10 Insufficient cpu, 2 node(s) had untolerated taint {dedicated: gpu}.",
                 id="sorted-as-strings-10-before-2"),
    pytest.param(2, diagnosis({"n1": Status(Code.UNSCHEDULABLE, "Insufficient cpu", "Insufficient memory")}),
                 "0/2 nodes are available: 1 Insufficient cpu, 1 Insufficient memory.", id="every-reason-counts"),
    pytest.param(3, diagnosis({}, pre_filter=Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                                                    "pod affinity terms conflict")),
                 "0/3 nodes are available: pod affinity terms conflict.", id="pre-filter-message-replaces"),
    pytest.param(3, diagnosis({"n1": CPU, "n2": CPU, "n3": CPU},
                              post="preemption: 0/3 nodes are available: 3 No preemption victims found for "
                                   "incoming pod."),
                 "0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: "
                 "3 No preemption victims found for incoming pod.", id="post-filter-message-follows"),
])
def test_fit_error_message(num_nodes: int, d: Diagnosis, expected: str) -> None:
    assert fit_error_message(num_nodes, d) == expected


def test_long_messages_are_cut_for_events() -> None:
    cut = truncate_message("x" * 2000)
    assert len(cut) == 1024 and cut.endswith(" ...")
    assert truncate_message("short") == "short"


@pytest.mark.parametrize(("percentage", "nodes", "expected"), [
    pytest.param(0, 50, 50, id="small-clusters-check-every-node"),
    pytest.param(0, 100, 100, id="never-fewer-than-100"),
    pytest.param(0, 1000, 420, id="adaptive-42-percent"),
    pytest.param(0, 5000, 500, id="adaptive-10-percent"),
    pytest.param(0, 10000, 500, id="adaptive-floor-5-percent"),
    pytest.param(20, 5000, 1000, id="configured"),
    pytest.param(1, 5000, 100, id="configured-but-at-least-100"),
    pytest.param(100, 5000, 5000, id="all"),
])
def test_num_feasible_nodes_to_find(percentage: int, nodes: int, expected: int) -> None:
    assert num_feasible_nodes_to_find(percentage, nodes) == expected


def test_a_cycle_stops_after_enough_feasible_nodes_and_the_next_starts_after_them() -> None:
    cache = cache_of([node(f"n{i:04}") for i in range(1000)])
    fwk = framework_for(cache)
    algo = algorithm(cache, percentage=10)
    first = algo.schedule_pod(fwk, CycleState(), PodInfo(pod("a", cpu="100m")))
    assert isinstance(first, ScheduleResult)
    assert (first.evaluated_nodes, first.feasible_nodes) == (100, 100)
    assert algo.next_start_node_index == 100
    algo.schedule_pod(fwk, CycleState(), PodInfo(pod("b", cpu="100m")))
    assert algo.next_start_node_index == 200


def test_the_cycle_reads_on_past_rejected_nodes() -> None:
    nodes = [node(f"full{i:03}", cpu="1") for i in range(150)] + [node(f"free{i:03}") for i in range(150)]
    cache = cache_of(nodes)
    algo = algorithm(cache, percentage=10)
    result = algo.schedule_pod(framework_for(cache), CycleState(), PodInfo(pod("p", cpu="2")))
    assert isinstance(result, ScheduleResult)
    assert result.feasible_nodes == 100
    assert result.evaluated_nodes == 250
    assert result.suggested_host.startswith("free")


def test_the_highest_total_wins() -> None:
    existing = [pod(f"e{i}", node_name="busy", cpu="3") for i in range(1)]
    cache = cache_of([node("busy"), node("idle")], existing)
    result = algorithm(cache).schedule_pod(framework_for(cache), CycleState(), PodInfo(pod("p", cpu="500m")))
    assert isinstance(result, ScheduleResult)
    assert result.suggested_host == "idle"
    assert [n.name for n in result.top] == ["idle", "busy"]
    assert result.top[0].total > result.top[1].total


def test_ties_are_broken_uniformly() -> None:
    rng = random.Random(7)
    picks = Counter(select_host([5, 9, 9, 1, 9, 9], rng)[0] for _ in range(4000))
    assert set(picks) == {1, 2, 4, 5}
    assert all(900 <= count <= 1100 for count in picks.values()), picks


def test_select_host_reports_the_chosen_node_first() -> None:
    chosen, top = select_host([5, 9, 7, 9], random.Random(1))
    assert chosen in (1, 3)
    assert top[0] == chosen and len(top) == 3 and set(top) <= {1, 2, 3}


def test_equal_nodes_fill_evenly() -> None:
    cache = cache_of([node(f"n{i}") for i in range(4)])
    fwk = framework_for(cache)
    algo = algorithm(cache, seed=3)
    for i in range(40):
        info = PodInfo(pod(f"p{i}", cpu="100m", memory="100Mi"))
        result = algo.schedule_pod(fwk, CycleState(), info)
        assert isinstance(result, ScheduleResult)
        cache.assume_pod(info, result.suggested_host)
    assert sorted(len(cache.get(f"n{i}").pods) for i in range(4)) == [10, 10, 10, 10]


def test_no_nodes_at_all() -> None:
    cache = cache_of([])
    result = algorithm(cache).schedule_pod(framework_for(cache), CycleState(), PodInfo(pod("p")))
    assert isinstance(result, Status)
    assert result.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert result.message == "no nodes available to schedule pods"


def test_fit_error_names_each_nodes_first_rejecting_plugin() -> None:
    taint = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]
    nodes = [node("small1", cpu="1"), node("small2", cpu="1")] + [node(f"gpu{i}", cpu="1", taints=taint)
                                                                  for i in range(3)]
    cache = cache_of(nodes)
    result = algorithm(cache).schedule_pod(framework_for(cache), CycleState(), PodInfo(pod("p", cpu="2")))
    assert isinstance(result, FitError)
    # TaintToleration runs before NodeResourcesFit: the tainted nodes report their taint only.
    assert result.message == ("0/5 nodes are available: 2 Insufficient cpu, "
                              "3 node(s) had untolerated taint {dedicated: gpu}.")
    assert result.diagnosis.unschedulable_plugins == {"NodeResourcesFit", "TaintToleration"}


def test_nominated_node_is_tried_first() -> None:
    cache = cache_of([node(f"n{i}") for i in range(200)])
    the_pod = pod("p", cpu="1")
    the_pod.status = V1PodStatus(nominated_node_name="n150")
    result = algorithm(cache).schedule_pod(framework_for(cache), CycleState(), PodInfo(the_pod))
    assert isinstance(result, ScheduleResult)
    assert (result.suggested_host, result.evaluated_nodes) == ("n150", 1)


def test_higher_priority_nominated_pods_keep_their_room() -> None:
    cache = cache_of([node("n1", cpu="2")])
    cluster = FakeCluster(cache)
    fwk = cluster.framework(only_plugins("NodeResourcesFit"))
    cluster.nominated["n1"] = [PodInfo(pod("important", cpu="1500m", priority=100))]
    low, high = PodInfo(pod("low", cpu="1", priority=1)), PodInfo(pod("high", cpu="1", priority=1000))
    assert fwk.run_filter_with_nominated_pods(CycleState(), low, cache.get("n1")).reasons == ("Insufficient cpu",)
    assert fwk.run_filter_with_nominated_pods(CycleState(), high, cache.get("n1")).is_success()
    passed, rejected, _ = fwk.filter_nodes(CycleState(), low, [cache.get("n1")])
    assert not passed and rejected[0][1].reasons == ("Insufficient cpu",)


def profile_config(plugins: dict[str, Any], **profile: Any) -> dict[str, Any]:
    return dict(CONFIG, profiles=[{"schedulerName": "default-scheduler", "plugins": plugins, **profile}])


def test_default_profile_matches_kubernetes() -> None:
    fwk = framework_for(cache_of([]))
    points = fwk.list_plugins()
    assert points["filter"] == ["NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity", "NodePorts",
                                "NodeResourcesFit", "VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding",
                                "PodTopologySpread", "InterPodAffinity"]
    assert points["reserve"] == ["VolumeBinding"]
    assert points["preBind"] == ["VolumeBinding"]
    assert fwk.score_weights == {"TaintToleration": 3, "NodeAffinity": 2, "NodeResourcesFit": 1,
                                 "PodTopologySpread": 2, "InterPodAffinity": 2,
                                 "NodeResourcesBalancedAllocation": 1, "ImageLocality": 1}
    assert points["postFilter"] == ["DefaultPreemption"]
    assert points["bind"] == ["DefaultBinder"]


def test_explicit_configuration_overrides_multi_point() -> None:
    fwk = framework_for(cache_of([]), profile_config({
        "multiPoint": {"disabled": [{"name": "ImageLocality"}]},
        "score": {"enabled": [{"name": "NodeResourcesBalancedAllocation", "weight": 7}],
                  "disabled": [{"name": "TaintToleration"}]},
    }))
    score = fwk.list_plugins()["score"]
    # The re-configured plugin comes first, then the other multiPoint plugins.
    assert score[0] == "NodeResourcesBalancedAllocation(7)"
    assert not any(s.startswith(("ImageLocality", "TaintToleration")) for s in score)
    # Disabled for Score only: TaintToleration still filters.
    assert "TaintToleration" in fwk.list_plugins()["filter"]


@pytest.mark.parametrize(("plugins", "message"), [
    pytest.param({"multiPoint": {"enabled": [{"name": "NoSuchPlugin"}]}}, "plugin 'NoSuchPlugin' does not exist",
                 id="unknown-plugin"),
    pytest.param({"filter": {"enabled": [{"name": "DefaultBinder"}]}},
                 "plugin 'DefaultBinder' does not extend FilterPlugin plugin", id="wrong-extension-point"),
    pytest.param({"queueSort": {"disabled": [{"name": "*"}]}},
                 "only one queue sort plugin required for profile with scheduler name 'default-scheduler', "
                 "but got 0", id="no-queue-sort"),
    pytest.param({"bind": {"disabled": [{"name": "*"}]}},
                 "at least one bind plugin is needed for profile with scheduler name 'default-scheduler'",
                 id="no-binder"),
])
def test_bad_profiles_are_refused(plugins: dict[str, Any], message: str) -> None:
    with pytest.raises(FrameworkError, match="^" + message.replace("(", r"\(").replace(")", r"\)") + "$"):
        framework_for(cache_of([]), profile_config(plugins))


def test_bad_plugin_args_name_the_plugin() -> None:
    config = profile_config({}, pluginConfig=[{"name": "NodeResourcesFit", "args": {"scoringStrategy": {
        "type": "Fastest"}}}])
    with pytest.raises(FrameworkError, match="initializing plugin 'NodeResourcesFit': scoringStrategy.type: "
                                             "Unsupported value"):
        framework_for(cache_of([]), config)


def test_a_plugin_that_raises_gives_an_error_status() -> None:
    cache = cache_of([node("n1")])
    fwk = framework_for(cache, only_plugins("NodeResourcesFit"))

    def broken(*args: Any) -> Status:
        raise RuntimeError("boom")

    fwk.plugins["NodeResourcesFit"].filter = broken  # type: ignore[method-assign]
    status = fwk.run_filter(CycleState(), PodInfo(pod("p")), cache.get("n1"))
    assert status.code is Code.ERROR and status.plugin == "NodeResourcesFit"
    assert "RuntimeError: boom" in status.message
