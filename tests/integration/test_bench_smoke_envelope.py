"""``kubesim bench --smoke --scenario envelope``: a cluster filled, held and measured, to the end."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.benchrun import run_smoke

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ENVELOPE = "scalability envelope"


@pytest.mark.timeout(300)
def test_smoke_envelope_scenario_completes(tmp_path: Path) -> None:
    figure = run_smoke(tmp_path, ["envelope"], [ENVELOPE], wait=240)
    assert figure(ENVELOPE, "nodes Ready") > 0 and figure(ENVELOPE, "all Pods Running") > 0
    assert figure(ENVELOPE, "held") >= 12
    # Every probe patch was sent and came back through the cluster-wide watch; no node missed a heartbeat.
    sent = figure(ENVELOPE, "watch probes sent")
    assert sent >= 60
    assert figure(ENVELOPE, "watch probes delivered") >= sent - 1
    assert 0 < figure(ENVELOPE, "watch delivery p50") <= figure(ENVELOPE, "watch delivery p99")
    assert figure(ENVELOPE, "heartbeat renewals seen while holding") > 0
    assert figure(ENVELOPE, "nodes ever not Ready while holding") == 0
    # Lists of every Pod, both kinds, each holding all 60.
    assert figure(ENVELOPE, "list of every Pod (consistent), slowest") > 0
    assert figure(ENVELOPE, "list of every Pod (resourceVersion=0), slowest") > 0
    assert figure(ENVELOPE, "Pods in each list, fewest") == 60
    assert figure(ENVELOPE, "apiserver peak RSS") > 0
    assert figure(ENVELOPE, "apiserver CPU while holding") > 0
