"""``kubesim bench --smoke``: the streaming (exec, idle sessions, port-forward) and metrics-server scenarios, to the end."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.benchrun import run_smoke

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.mark.timeout(600)
def test_smoke_streaming_and_metrics_scenarios_complete(tmp_path: Path) -> None:
    streaming, metrics = "exec and port-forward through the APIServer", "metrics-server over 5 nodes"
    figure = run_smoke(tmp_path, ["streaming", "metrics"], [streaming, metrics], wait=500)
    for transport in ("websocket", "spdy"):
        assert 0 < figure(streaming, f"exec round trip p50 ({transport})") <= figure(
            streaming, f"exec round trip p99 ({transport})")
    assert figure(streaming, "exec round trip p99 with 5 idle sessions") > 0
    assert figure(streaming, "Lease renewal lateness with 5 idle sessions") >= 0
    assert figure(streaming, "port-forward throughput (SPDY)") > 0
    assert figure(metrics, "nodes answered per cycle") == 5
    assert figure(metrics, "scrape cycle (first)") > 0
