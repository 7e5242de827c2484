"""Simulated resource usage (kubelet_sim.usage) and the kubelet's stats formats (kubelet_sim.stats)."""

from __future__ import annotations

import pytest

from kubelet_sim.stats import ContainerSample, NodeSample, PodSample, _number, resource_metrics, summary
from kubelet_sim.usage import PAGE_SIZE, UsageError, UsageProfile, at, container_usage, parse_curve
from metrics_server.scraper import parse_resource_metrics


@pytest.mark.parametrize(("text", "cpu", "curve"), [
    pytest.param("250m", True, ((0.0, 250.0),), id="cpu-constant"),
    pytest.param("1", True, ((0.0, 1000.0),), id="one-core"),
    pytest.param("128Mi", False, ((0.0, 128 * 2**20),), id="memory-constant"),
    pytest.param("60:800m, 0:100m", True, ((0.0, 100.0), (60.0, 800.0)), id="curve-sorted"),
    pytest.param("10s:1Gi", False, ((10.0, 2**30),), id="seconds-suffix"),
])
def test_parse_curve(text: str, cpu: bool, curve: tuple[tuple[float, float], ...]) -> None:
    assert parse_curve(text, cpu=cpu) == curve


@pytest.mark.parametrize("text", ["lots", "0:-1", "x:100m", "-5:100m"])
def test_bad_curves_are_errors(text: str) -> None:
    with pytest.raises(UsageError):
        parse_curve(text, cpu=True)


def test_curves_are_linear_between_points_and_flat_outside() -> None:
    curve = ((10.0, 100.0), (20.0, 300.0))
    assert [at(curve, t) for t in (0, 10, 15, 20, 99)] == [100.0, 100.0, 200.0, 300.0, 300.0]


def test_usage_from_requests_with_floors_and_annotations() -> None:
    profile = UsageProfile(noise=0.0)
    default, problems = container_usage({}, "app", {"cpu": 400, "memory": 100 * 2**20 * 1000}, profile,
                                        container_id="c1", started=0.0)
    assert problems == [] and default.cpu_millicores(5) == 200.0
    assert default.memory_bytes(5) == (60 * 2**20) // PAGE_SIZE * PAGE_SIZE
    floor, _ = container_usage({}, "app", {}, profile, container_id="c2", started=0.0)
    assert floor.cpu_millicores(5) == 5.0 and floor.memory_bytes(5) == 16 * 2**20
    annotated, problems = container_usage({"kubesim.io/cpu-usage": "2", "kubesim.io/memory-usage.app": "nope"},
                                          "app", {}, profile, container_id="c3", started=0.0)
    assert annotated.cpu_millicores(1) == 2000.0
    # The bad per-container memory annotation is reported and the profile's default used instead.
    assert len(problems) == 1 and problems[0].startswith('annotation kubesim.io/memory-usage.app: invalid usage "nope"')
    assert annotated.memory_bytes(1) == 16 * 2**20


def test_the_cpu_counter_integrates_the_rate_and_never_goes_back() -> None:
    usage, _ = container_usage({"kubesim.io/cpu-usage": "0:0,10:1"}, "app", {}, UsageProfile(noise=0.0),
                               container_id="c", started=100.0)
    # A ramp from 0 to 1 core over 10 s: 0.25 core on average over its first 5 s, 0.5 over all of it.
    assert usage.sample(105.0)[0] == pytest.approx(1.25)
    assert usage.sample(110.0)[0] == pytest.approx(5.0)
    assert usage.sample(112.0)[0] == pytest.approx(7.0)
    assert usage.sample(111.0)[0] == pytest.approx(7.0)


def test_noise_is_bounded_and_deterministic() -> None:
    profile = UsageProfile(noise=0.1)
    a, _ = container_usage({"kubesim.io/cpu-usage": "1"}, "app", {}, profile, container_id="same", started=0.0)
    b, _ = container_usage({"kubesim.io/cpu-usage": "1"}, "app", {}, profile, container_id="same", started=0.0)
    values = [a.cpu_millicores(t) for t in range(0, 300, 7)]
    assert values == [b.cpu_millicores(t) for t in range(0, 300, 7)]
    assert all(900 <= v <= 1100 for v in values) and len(set(values)) > 5


@pytest.mark.parametrize(("value", "text"), [
    pytest.param(0, "0", id="zero"), pytest.param(0.337132, "0.337132", id="fraction"),
    pytest.param(14024704, "1.4024704e+07", id="large"), pytest.param(123456, "123456", id="below-1e6"),
    pytest.param(1.7e9, "1.7e+09", id="start-time"), pytest.param(1e-5, "1e-05", id="small"),
])
def test_numbers_are_printed_as_go_prints_them(value: float, text: str) -> None:
    assert _number(value) == text


def _sample() -> NodeSample:
    container = ContainerSample("app", 1_700_000_000.5, 12.5, 250_000_000, 64 * 2**20)
    pod = PodSample("shop", "web-1", "uid-1", 1_700_000_000.0, (container,))
    return NodeSample("node-1", 1_700_000_100.0, 1_699_999_000.0, 50.0, 350_000_000, 600 * 2**20, 16 * 2**30, (pod,))


def test_resource_metrics_round_trip_through_metrics_servers_parser() -> None:
    text = resource_metrics(_sample())
    assert 'container_cpu_usage_seconds_total{container="app",namespace="shop",pod="web-1"} 12.5 1700000100000' \
        in text
    assert "# TYPE node_cpu_usage_seconds_total counter" in text and text.endswith("resource_scrape_error 0\n")
    node, pods = parse_resource_metrics(text)
    assert node is not None and (node.cpu, node.memory, node.timestamp) == (50.0, 600 * 2**20, 1_700_000_100.0)
    [sample] = pods[("shop", "web-1")].values()
    assert (sample.cpu, sample.memory, sample.start_time) == (12.5, 64 * 2**20, 1_700_000_000.5)


def test_summary_has_statsapis_shape() -> None:
    document = summary(_sample())
    node = document["node"]
    assert node["nodeName"] == "node-1"
    assert node["cpu"] == {"time": "2023-11-14T22:15:00Z", "usageNanoCores": 350_000_000,
                           "usageCoreNanoSeconds": 50_000_000_000}
    assert node["memory"]["availableBytes"] == 16 * 2**30 - 600 * 2**20
    [pod] = document["pods"]
    assert pod["podRef"] == {"name": "web-1", "namespace": "shop", "uid": "uid-1"}
    assert pod["containers"][0]["memory"]["workingSetBytes"] == 64 * 2**20
