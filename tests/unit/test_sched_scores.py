"""Score plugins and the framework's normalization and weights, with Kubernetes' integer arithmetic."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from kubernetes.client import V1Node, V1Pod

from scheduler.framework.interface import CycleState, Status
from scheduler.framework.runtime import PluginScores
from scheduler.framework.types import PodInfo
from scheduler.plugins.helper import broken_linear, default_normalize_score
from scheduler.plugins.imagelocality import calculate_priority
from tests.unit.test_sched_builders import cache_of, framework_for, node, only_plugins, pod

MB = 1024 * 1024


def scores(plugin: str, the_pod: V1Pod, nodes: Sequence[V1Node], existing: Sequence[V1Pod] = (),
           args: Mapping[str, Any] | None = None) -> tuple[list[int], list[int]]:
    """(raw, normalized) scores of one plugin for these nodes, in order."""
    cache = cache_of(nodes, existing)
    config = only_plugins(plugin)
    if args is not None:
        config["profiles"][0]["pluginConfig"] = [{"name": plugin, "args": dict(args)}]
    fwk = framework_for(cache, config)
    state = CycleState()
    infos = [cache.get(n.metadata.name) for n in nodes]
    assert fwk.run_pre_score(state, PodInfo(the_pod), infos).is_success()
    result = fwk.run_score(state, PodInfo(the_pod), infos)
    assert not isinstance(result, Status), result
    plugin_scores, _ = result
    if not plugin_scores:
        return [], []
    assert plugin_scores[0].plugin == plugin
    return plugin_scores[0].raw, plugin_scores[0].normalized


@pytest.mark.parametrize(("strategy", "the_pod", "expected"), [
    pytest.param({}, pod("p", cpu="1", memory="8Gi"), [75, 87], id="least-allocated"),
    pytest.param({}, pod("p"), [98, 98], id="least-allocated-counts-non-zero-defaults"),
    pytest.param({"type": "MostAllocated"}, pod("p", cpu="1", memory="8Gi"), [25, 12], id="most-allocated"),
    pytest.param({"type": "MostAllocated", "resources": [{"name": "cpu", "weight": 3}, {"name": "memory",
                                                                                            "weight": 1}]},
                 pod("p", cpu="2", memory="8Gi"), [43, 21], id="most-allocated-weighted"),
    pytest.param({"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {
        "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]}},
                 pod("p", cpu="1", memory="8Gi"), [25, 12], id="requested-to-capacity-ratio"),
])
def test_node_resources_fit_scoring(strategy: dict[str, Any], the_pod: V1Pod, expected: list[int]) -> None:
    # n1: 4 cpu / 32Gi, empty; n2: 8 cpu / 64Gi, empty.
    raw, normalized = scores("NodeResourcesFit", the_pod, [node("n1"), node("n2", cpu="8", memory="64Gi")],
                             args={"scoringStrategy": strategy} if strategy else None)
    assert raw == normalized == expected


def test_least_allocated_counts_what_is_on_the_node() -> None:
    existing = [pod("e", node_name="n1", cpu="2", memory="16Gi")]
    raw, _ = scores("NodeResourcesFit", pod("p", cpu="1", memory="8Gi"), [node("n1"), node("n2")], existing)
    # n1: cpu (4-3)/4 = 25, memory (32-24)/32 = 25; n2 as empty: 75.
    assert raw == [25, 75]


def test_balanced_allocation() -> None:
    # cpu 1/4 = 0.25 and memory 16/32 = 0.5: std 0.125, score 87; on n2 both are 0.25: 100.
    raw, _ = scores("NodeResourcesBalancedAllocation", pod("p", cpu="1", memory="16Gi"),
                    [node("n1"), node("n2", memory="64Gi")])
    assert raw == [87, 100]


def test_balanced_allocation_skips_best_effort_pods() -> None:
    cache = cache_of([node("n1")])
    fwk = framework_for(cache, only_plugins("NodeResourcesBalancedAllocation"))
    state = CycleState()
    fwk.run_pre_score(state, PodInfo(pod("best-effort")), cache.node_infos())
    assert state.skip_score_plugins == {"NodeResourcesBalancedAllocation"}


def test_taint_toleration_prefers_fewer_untolerated_prefer_no_schedule_taints() -> None:
    soft = [{"key": f"k{i}", "value": "v", "effect": "PreferNoSchedule"} for i in range(2)]
    nodes = [node("clean"), node("one", taints=soft[:1]), node("two", taints=soft)]
    raw, normalized = scores("TaintToleration", pod("p"), nodes)
    assert raw == [0, 1, 2]
    assert normalized == [100, 50, 0]
    tolerating = pod("t", tolerations=[{"key": "k0", "operator": "Exists", "effect": "PreferNoSchedule"}])
    assert scores("TaintToleration", tolerating, nodes)[0] == [0, 0, 1]


def test_node_affinity_preferred_terms_add_their_weights() -> None:
    preferred = [
        {"weight": 80, "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}},
        {"weight": 20, "preference": {"matchExpressions": [{"key": "disk", "operator": "Exists"}]}},
    ]
    the_pod = pod("p", affinity={"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": preferred}})
    nodes = [node("both", labels={"zone": "a", "disk": "ssd"}), node("zone", labels={"zone": "a"}), node("none")]
    raw, normalized = scores("NodeAffinity", the_pod, nodes)
    assert raw == [100, 80, 0]
    assert normalized == [100, 80, 0]


def test_image_locality_weighs_size_by_spread() -> None:
    nodes = [node("has", images=[(["nginx:1.25"], 500 * MB)]), node("lacks")]
    raw, _ = scores("ImageLocality", pod("p", image="nginx:1.25"), nodes)
    # Half the nodes have it: 250 MB counts, between the 23 MB floor and the 1000 MB ceiling.
    assert raw == [calculate_priority(250 * MB, 1), 0]
    assert raw[0] == 100 * (250 - 23) // (1000 - 23)


def test_image_locality_adds_latest_to_untagged_images() -> None:
    nodes = [node("has", images=[(["nginx:latest"], 900 * MB)]), node("lacks")]
    raw, _ = scores("ImageLocality", pod("p", image="nginx"), nodes)
    assert raw[0] > 0


@pytest.mark.parametrize(("raw", "reverse", "expected"), [
    pytest.param([0, 5, 10], False, [0, 50, 100], id="scaled-to-highest"),
    pytest.param([0, 5, 10], True, [100, 50, 0], id="reversed"),
    pytest.param([0, 0], False, [0, 0], id="all-zero"),
    pytest.param([0, 0], True, [100, 100], id="all-zero-reversed"),
    pytest.param([1, 2, 3], False, [33, 66, 100], id="integer-division"),
])
def test_default_normalize_score(raw: list[int], reverse: bool, expected: list[int]) -> None:
    assert default_normalize_score(raw, reverse=reverse) == expected


@pytest.mark.parametrize(("x", "expected"), [
    pytest.param(0, 10, id="first-point"), pytest.param(50, 5, id="between"), pytest.param(75, 3, id="rounds-down"),
    pytest.param(100, 0, id="last-point"), pytest.param(120, 0, id="beyond"),
])
def test_broken_linear(x: int, expected: int) -> None:
    assert broken_linear([(0, 10), (100, 0)], x) == expected


def test_framework_weighs_normalized_scores() -> None:
    soft = [{"key": "k", "value": "v", "effect": "PreferNoSchedule"}]
    nodes = [node("clean"), node("tainted", taints=soft)]
    cache = cache_of(nodes)
    fwk = framework_for(cache, only_plugins("TaintToleration", "NodeResourcesFit",
                                            weights={"TaintToleration": 3, "NodeResourcesFit": 1}))
    state = CycleState()
    infos = cache.node_infos()
    the_pod = PodInfo(pod("p", cpu="1", memory="8Gi"))
    fwk.run_pre_score(state, the_pod, infos)
    result = fwk.run_score(state, the_pod, infos)
    assert not isinstance(result, Status)
    plugin_scores, totals = result
    by_plugin: dict[str, PluginScores] = {s.plugin: s for s in plugin_scores}
    assert by_plugin["TaintToleration"].weight == 3
    assert by_plugin["TaintToleration"].normalized == [100, 0]
    assert totals == [3 * 100 + 75, 3 * 0 + 75]


def test_a_score_out_of_range_is_an_error() -> None:
    cache = cache_of([node("n1")])
    fwk = framework_for(cache, only_plugins("NodeResourcesFit"))
    fit = fwk.plugins["NodeResourcesFit"]
    fwk._normalizers["NodeResourcesFit"] = lambda state, pod, nodes, raw: [101 for _ in raw]
    state = CycleState()
    the_pod = PodInfo(pod("p", cpu="1"))
    fwk.run_pre_score(state, the_pod, cache.node_infos())
    result = fwk.run_score(state, the_pod, cache.node_infos())
    assert isinstance(result, Status) and result.plugin == fit.name
    assert "returns an invalid score 101" in result.message
