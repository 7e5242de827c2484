"""The long campaign of ``make chaos``: faults under a heavier load, several rounds, and a printed report.

Skipped unless pytest gets ``--chaos``. The load is issue 16's: an RC scaled
between 20 and 60 replicas and 10 Pods/s created and deleted. Faults, in
rounds: SIGKILL of each process, SIGTERM of the scheduler (a leader that
releases its Lease, as ReleaseOnCancel does) beside SIGKILL of it (a leader
that cannot), SIGSTOP of the scheduler past its lease, and etcd stopped for
30 s. The same assertions as the short round, then the report.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from tests import chaos

pytestmark = [pytest.mark.e2e, pytest.mark.chaos]

ROUNDS = int(os.environ.get("KUBESIM_CHAOS_ROUNDS", "2"))
KILLED = ("apiserver", "etcd", "scheduler", "controller-manager", "kubelet")


def test_long_campaign_of_faults_under_load(tmp_path: Path) -> None:
    with chaos.campaign(tmp_path, rate=10, low=20, high=60) as (cluster, _load, report):
        time.sleep(10)
        for round_no in range(1, ROUNDS + 1):
            for name in KILLED:
                at = time.monotonic()
                cluster.signal(name, signal.SIGKILL)
                report.recoveries.append(chaos.measure_recovery(cluster.url, f"r{round_no} kill -9 {name}", at))
                time.sleep(10)
            at = time.monotonic()
            cluster.signal("scheduler", signal.SIGTERM)
            report.recoveries.append(chaos.measure_recovery(cluster.url, f"r{round_no} SIGTERM scheduler", at))
            time.sleep(5)
            at = time.monotonic()
            cluster.signal("scheduler", signal.SIGSTOP)
            time.sleep(20)  # past its 15 s lease: it must stop acting, then exit and be restarted
            cluster.signal("scheduler", signal.SIGCONT)
            report.recoveries.append(chaos.measure_recovery(cluster.url, f"r{round_no} SIGSTOP sched 20s", at))
            time.sleep(5)
            at = time.monotonic()
            cluster.signal("etcd", signal.SIGSTOP)
            time.sleep(30)
            cluster.signal("etcd", signal.SIGCONT)
            report.recoveries.append(chaos.measure_recovery(cluster.url, f"r{round_no} etcd stopped 30s", at))
            time.sleep(10)
    print(report.text())
    assert not report.lost, report.lost
    assert not report.bound_twice, report.bound_twice
    assert all(r.first_running is not None for r in report.recoveries), report.text()
