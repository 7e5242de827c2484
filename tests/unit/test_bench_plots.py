"""kubesim bench's pictures: a scenario with curves, latencies or CPU figures gets a PNG and an SVG."""

from __future__ import annotations

from pathlib import Path

from kubesim.bench.plots import plot
from kubesim.bench.results import ScenarioResult


def test_a_scenario_with_data_is_drawn_and_one_without_is_not(tmp_path: Path) -> None:
    result = ScenarioResult("cluster density")
    result.add_series("Running", {f"p{i}": 10.0 + i / 10 for i in range(3000)}, 10.0)
    assert 1000 <= len(result.series["Running"]) <= 1002 and result.series["Running"][-1] == (299.9, 3000.0)
    result.samples["startup latency"] = [0.5, 1.0, 2.0]
    result.add("apiserver CPU per Pod", 0.002, "s")
    result.add("etcd CPU per Pod", 0.001, "s")
    result.add("control-plane CPU per Pod", 0.004, "s")
    written = plot(result, tmp_path, "2026-12-01")
    assert sorted(p.name for p in written) == ["2026-12-01-cluster-density.png", "2026-12-01-cluster-density.svg"]
    assert written[0].read_bytes().startswith(b"\x89PNG") and b"<svg" in written[1].read_bytes()
    assert plot(ScenarioResult("etcd ceiling"), tmp_path, "x") == []
    failed = ScenarioResult("broken", error="boom")
    failed.samples["x"] = [1.0]
    assert plot(failed, tmp_path, "x") == []
