"""The figures of kubesim compare: spread, Gini, fragmentation, differing placements, the deciding plugin."""

from __future__ import annotations

import re
from pathlib import Path

import orjson
import pytest

from kubesim.studies import figures, plots
from kubesim.studies.compare import CompareError, check_profiles_first, table
from kubesim.studies.observe import Placement

CPU = 1000  # one cpu in milli-units
GI = 1024**3 * 1000


def placed(name: str, node: str, owner: str = "ReplicationController/web", cpu: int = CPU // 2) -> Placement:
    return Placement("default", name, owner, node, cpu, GI)


def test_gini_and_spread() -> None:
    assert figures.gini([1, 1, 1, 1]) == 0
    assert figures.gini([0, 0, 0, 4]) == pytest.approx(0.75)
    assert figures.gini([]) == 0 and figures.gini([0, 0]) == 0
    even, packed = figures.spread([0.5] * 4), figures.spread([1, 1, 0, 0])
    assert (even.mean, even.stddev, even.gini) == (0.5, 0.0, 0.0)
    assert packed.mean == 0.5 and packed.stddev == 0.5 and packed.gini == pytest.approx(0.5)


def test_allocation_fragmentation_and_nodes_used() -> None:
    allocatable = {n: {"cpu": 4 * CPU, "memory": 16 * GI, "pods": 110} for n in ("a", "b", "c")}
    pods = [placed(f"p{i}", "a") for i in range(7)] + [placed("q", "b", cpu=3500)]
    assert figures.allocation(pods, allocatable, "cpu") == [0.875, 0.875, 0.0]
    assert figures.median_size(pods) == (500, GI)
    frag = figures.fragmentation(pods, allocatable, figures.median_size(pods))
    # a: 500m free (1 more), b: 500m free (1 more), c: 4 cpus free (8 more).
    assert frag.median_pods_that_fit == 10 and frag.stranded_cpu == 0
    big = figures.fragmentation(pods, allocatable, (1000, GI))
    assert big.median_pods_that_fit == 4 and big.stranded_cpu == pytest.approx(1000 / 5000)
    assert figures.nodes_used(pods) == 2


def test_placements_that_differ_are_matched_by_controller() -> None:
    a = [placed("x1", "n1"), placed("x2", "n2"), placed("solo", "n1", owner="")]
    b = [placed("y1", "n2"), placed("y2", "n2"), placed("solo", "n3", owner="")]
    only_a, only_b = figures.differing(a, b)
    assert {(p.name, p.node) for p in only_a} == {("x1", "n1"), ("solo", "n1")}
    assert {(p.name, p.node) for p in only_b} == {("y1", "n2"), ("solo", "n3")}
    assert figures.differing(a, a) == ([], [])


def score(*nodes: tuple[str, dict[str, int]]) -> str:
    return orjson.dumps({"weights": {}, "skipped": [], "nodes": [
        {"node": n, "total": sum(s.values()), "scores": {p: {"raw": v, "final": v} for p, v in s.items()}}
        for n, s in nodes]}).decode()


def test_the_deciding_plugin() -> None:
    assert figures.decided_by(score(("a", {"Fit": 90, "Taint": 300}), ("b", {"Fit": 40, "Taint": 300}))) == "Fit"
    assert figures.decided_by(score(("a", {"Fit": 50}), ("b", {"Fit": 50}))) == "(a tie, broken at random)"
    assert figures.decided_by(score(("a", {"Fit": 50}))) == figures.ONE_FEASIBLE
    assert figures.decided_by("") == figures.NO_EXPLANATION


def test_a_profile_naming_an_unknown_plugin_stops_the_comparison_before_it_starts(tmp_path: Path) -> None:
    good = tmp_path / "good.yaml"
    good.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n")
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"
                   "- schedulerName: default-scheduler\n  plugins:\n    score: {enabled: [{name: Gravity}]}\n")
    with pytest.raises(CompareError, match=f"profile {bad}: plugin 'Gravity' does not exist"):
        check_profiles_first([good, bad], [])
    assert [p.name for p in check_profiles_first([good, good], [])] == ["good", "good-2"]


def run(name: str, cpu_shares: list[float]) -> dict:
    nodes = [f"n{i}" for i in range(len(cpu_shares))]
    return {"name": name, "scheduled": 3, "pending": 1, "timeline": [{"t": 0, "scheduled": 0, "pending": 2},
                                                                    {"t": 5, "scheduled": 3, "pending": 1}],
            "latency": {"p50": 0.02, "p99": 1.5, "all": [0.01, 0.02, 1.5]}, "preemptions": 0,
            "allocation": {r: {**figures.spread(cpu_shares).as_dict(), "perNode": dict(zip(nodes, cpu_shares))}
                           for r in ("cpu", "memory")},
            "fragmentation": {"medianPodsThatFit": 4, "strandedCpuShare": 0.1}, "nodesUsed": 2, "nodes": 3,
            "replay": {"sent": {"create": 4}, "failed": []}}


def test_the_table_and_the_plots(tmp_path: Path) -> None:
    runs = [run("spread", [0.3, 0.3, 0.3]), run("pack", [0.9, 0.0, 0.0])]
    text = table(runs, [{"between": ["spread", "pack"], "count": 2, "of": 4,
                         "decidedBy": {"spread": {"NodeResourcesFit": 2}, "pack": {}}}])
    assert re.search(r"scheduling latency p50 / p99 +20 ms / 1.50 s +20 ms / 1.50 s", text)
    assert "placements that differ between spread and pack: 2 of 4 Pods" in text
    written = plots.draw(runs, tmp_path)
    assert sorted(p.name for p in written) == sorted(f"{n}.{s}" for n in ("timeline", "allocation", "latency")
                                                     for s in ("png", "svg"))
    assert all(p.stat().st_size > 1000 for p in written)
    assert (tmp_path / "allocation.svg").read_text().startswith("<?xml")
    # Each plot says which profile is which.
    for name in ("timeline", "allocation", "latency"):
        svg = (tmp_path / f"{name}.svg").read_text()
        assert ">spread" in svg and ">pack" in svg, name
