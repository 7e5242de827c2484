"""Faults under load, one short round: every process killed once, etcd paused, nothing lost or bound twice.

See :mod:`tests.chaos` for the campaign; ``make chaos`` runs the long one
(``tests/e2e/test_chaos.py``). The round prints its report: the time from each
fault until ``/readyz``, the first write, the first binding and the first Pod
Running again.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from tests import chaos

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

KILLED = ("apiserver", "etcd", "scheduler", "controller-manager", "kubelet")


def test_every_process_killed_under_load_recovers_without_losing_anything(tmp_path: Path) -> None:
    with chaos.campaign(tmp_path, rate=5, low=10, high=20) as (cluster, _load, report):
        time.sleep(3)
        for name in KILLED:
            killed_at = time.monotonic()
            cluster.signal(name, signal.SIGKILL)
            report.recoveries.append(chaos.measure_recovery(cluster.url, f"kill -9 {name}", killed_at))
            time.sleep(2)
        # A leader that releases its Lease on SIGTERM is replaced at once (compare kill -9 above).
        at = time.monotonic()
        cluster.signal("scheduler", signal.SIGTERM)
        report.recoveries.append(chaos.measure_recovery(cluster.url, "SIGTERM scheduler", at))
        stopped_at = time.monotonic()
        cluster.signal("etcd", signal.SIGSTOP)
        time.sleep(8)
        cluster.signal("etcd", signal.SIGCONT)
        report.recoveries.append(chaos.measure_recovery(cluster.url, "etcd stopped 8s", stopped_at))
    print(report.text())
    assert not report.lost, report.lost
    assert not report.bound_twice, report.bound_twice
    assert all(r.first_running is not None for r in report.recoveries), report.text()
    for name in KILLED:
        assert report.restarts[name] >= 1, report.restarts
    assert report.creates_acknowledged > 20
