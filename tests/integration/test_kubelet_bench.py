"""The density benchmark at toy size: it runs end to end and reports every figure.

``make bench`` runs it at 5,000 nodes and 10,000 Pods.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from kubelet_sim.bench import density
from tests import harness
from tests.integration.test_kubelet_nodes import start_kubelet_sim

pytestmark = pytest.mark.integration


def test_density_reports_its_figures(fresh_cluster: harness.Cluster, tmp_path: Path) -> None:
    sim = start_kubelet_sim(fresh_cluster, tmp_path, nodes=4)
    try:
        figures = asyncio.run(density(fresh_cluster.config(), nodes=4, pods=12, kubelet_pid=sim.process.pid,
                                      renew_interval=1.0, timeout=120))
    finally:
        sim.process.stop()
    assert (figures["nodes"], figures["pods"], figures["nodes_not_ready"]) == (4, 12, 0)
    assert figures["pods_started_per_second"] > 0 and figures["nodes_ready_seconds"] >= 0
    # Four nodes renewing every second for at least the settling time after the Pods.
    assert figures["heartbeat_renewals"] >= 4
    assert 0 <= figures["heartbeat_lateness_p99_seconds"] <= figures["heartbeat_lateness_max_seconds"] < 5
    assert 30 < figures["kubelet_peak_rss_mib"] < 512
