"""``kubesim bench --smoke`` runs the etcd, API, scheduling and density scenarios to the end.

A smoke test: benchmarks never pass or fail on a number, so this only checks
that each scenario completed, measured what it reports, and that the results
file says where it ran. The other scenarios have their own files
(``test_bench_smoke_workloads.py``, ``test_bench_smoke_scale.py``,
``test_bench_smoke_crd.py``) so that pytest-xdist runs them on different workers.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.benchrun import run_smoke

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.mark.timeout(600)
def test_smoke_bench_completes_and_writes_its_results(tmp_path: Path) -> None:
    figure = run_smoke(tmp_path, ["etcd", "api", "scheduling", "density"],
                       ["etcd ceiling", "API", "SchedulingBasic", "cluster density"], wait=500)
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
    # The figure the performance issue is judged by, and its parts.
    assert figure("cluster density", "CPU per Pod, control plane / etcd") > 0
    assert figure("cluster density", "apiserver Pod create CPU per Pod") > 0
    # Security's cost: each API figure through the secure port and the insecure one, in the same run.
    for name in ("creates/s", "updates/s (merge patch)", "gets/s", "lists/s (500 pods per page)"):
        assert figure("API", name) > 0 and figure("API", f"{name} (insecure port)") > 0
        assert figure("API", f"{name}, TLS+authn+authz vs insecure port") > 0
