"""``kubesim bench --quick`` runs every scenario to the end and writes its JSON results.

A smoke test: benchmarks never pass or fail on a number, so this only checks
that each scenario completed, measured what it reports, and that the results
file says where it ran.
"""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

import pytest

from kubesim import procs

pytestmark = pytest.mark.integration

SCENARIOS = ["etcd ceiling", "API", "SchedulingBasic", "cluster density", "kubelet_sim (KWOK shape)", "churn"]


@pytest.mark.timeout(400)
def test_quick_bench_completes_and_writes_its_results(tmp_path: Path) -> None:
    results = tmp_path / "results"
    bench = procs.python_module("kubesim", ["bench", "--quick", "--results-dir", str(results)], name="bench",
                                log_path=tmp_path / "bench.log")
    bench.start()
    try:
        assert bench.proc is not None
        code = bench.proc.wait(300)
    except subprocess.TimeoutExpired:
        # SIGINT lets the runner stop each cluster it started before it exits.
        bench.signal(signal.SIGINT)
        bench.proc.wait(30)
        pytest.fail(f"kubesim bench --quick did not finish in 300 s:\n{procs.tail(bench.log_path, 40)}")
    finally:
        bench.stop()
    output = bench.log_path.read_text()
    assert code == 0, procs.tail(bench.log_path, 40)

    [path] = results.glob("*-quick.json")
    assert f"results written to {path}" in output
    doc = json.loads(path.read_text())
    assert doc["quick"] is True
    assert doc["machine"]["cores"] >= 1 and doc["machine"]["versions"]["kubesim"]
    by_name = {r["scenario"]: r for r in doc["results"]}
    assert list(by_name) == SCENARIOS
    assert {name: r["error"] for name, r in by_name.items()} == dict.fromkeys(SCENARIOS)

    def figure(scenario: str, name: str) -> float:
        values = [f["value"] for f in by_name[scenario]["figures"] if f["name"] == name]
        assert values and values[0] is not None, f"{scenario}: no {name!r}"
        return float(values[0])

    ceiling = figure("etcd ceiling", "create-if-absent txn/s")
    for variant in ("basic", "node-affinity", "pod-anti-affinity"):
        assert figure("SchedulingBasic", f"{variant} pods/s") > 0
        # A scheduled Pod costs its create, its binding and its Scheduled Event, at least.
        assert figure("SchedulingBasic", f"{variant} writes per Pod (measured)") >= 3
        assert figure("SchedulingBasic", f"{variant} ceiling pods/s") < ceiling
    assert figure("cluster density", "Pods Running") > 0
    assert figure("cluster density", "startup latency p99") >= figure("cluster density",
                                                                      "startup latency p50")
    assert figure("cluster density", "kubelet_sim peak RSS") > 0
    kwok = "kubelet_sim (KWOK shape)"
    assert figure(kwok, "Pods Running") > 0 and figure(kwok, "heartbeat gap max") >= 10
    assert figure(kwok, "kubelet_sim peak RSS") > 0
    assert figure("churn", "Pods created") == 100
    assert figure("churn", "mutating API p99") > 0
