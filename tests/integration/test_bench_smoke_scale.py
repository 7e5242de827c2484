"""``kubesim bench --smoke``: scale-out over two APIServers, the KWOK shape, churn and node identities, to the end."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.benchrun import run_smoke

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SCALEOUT = "cluster density, 2 APIServers, 2 kubelet shards"
KWOK = "kubelet_sim (KWOK shape)"


@pytest.mark.timeout(600)
def test_smoke_scale_scenarios_complete(tmp_path: Path) -> None:
    figure = run_smoke(tmp_path, ["scaleout", "kwok", "churn", "identities"],
                       ["etcd ceiling", SCALEOUT, KWOK, "churn", "node identities"], wait=500)
    # The density scenario spread over two APIServers and two kubelet_sim shards: every one of them worked.
    assert figure(SCALEOUT, "Pods Running") > 0
    for name in ("apiserver-1", "apiserver-2", "kubelet_sim-1", "kubelet_sim-2"):
        assert figure(SCALEOUT, f"{name} CPU per Pod") > 0
    assert figure(KWOK, "Pods Running") > 0 and figure(KWOK, "heartbeat gap max") >= 10
    assert figure(KWOK, "kubelet_sim peak RSS") > 0
    assert figure("churn", "Pods created") == 20
    assert figure("churn", "mutating API p99") > 0
    # Nodes with an identity each (5,000 at full size), and the same nodes without.
    assert figure("node identities", "nodes Ready, one identity each") > 0
    assert figure("node identities", "nodes Ready, insecure port") > 0
