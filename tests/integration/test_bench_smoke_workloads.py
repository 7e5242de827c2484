"""``kubesim bench --smoke``: cluster density with Deployments and a rolling update, to the end."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.benchrun import run_smoke

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.mark.timeout(600)
def test_smoke_workload_scenarios_complete(tmp_path: Path) -> None:
    deployments = "cluster density (Deployments)"
    figure = run_smoke(tmp_path, ["density-deployments", "rollout"],
                       ["etcd ceiling", deployments, "rolling update"], wait=500)
    assert figure(deployments, "Pods Running") > 0 and figure(deployments, "all Pods deleted") > 0
    assert figure("rolling update", "rolling update complete") > 0
    assert figure("rolling update", "replace writes per Pod (measured)") >= 3
