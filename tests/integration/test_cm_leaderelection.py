"""Two controller-managers: only the Lease holder acts; kill -9 it and the other takes over in time."""

from __future__ import annotations

import time

import pytest

from tests import kube
from tests.integration.test_cm_support import list_pods, start_controller_manager, unique, wait_until

pytestmark = pytest.mark.integration

LEASE_DURATION, RENEW_DEADLINE, RETRY_PERIOD = 4.0, 3.0, 0.5


def test_only_the_leader_acts_and_a_standby_takes_over(cluster, api, namespace):
    lease = unique("kube-controller-manager")
    flags = [f"--leader-elect-resource-name={lease}", f"--leader-elect-lease-duration={LEASE_DURATION}s",
             f"--leader-elect-renew-deadline={RENEW_DEADLINE}s",
             f"--leader-elect-retry-period={int(RETRY_PERIOD * 1000)}ms"]
    first = start_controller_manager(cluster, *flags, name="cm-first", leader_elect=True)
    wait_until(lambda: "successfully acquired lease" in first.log_path.read_text(), message="a leader")
    second = start_controller_manager(cluster, *flags, name="cm-second", leader_elect=True)
    try:
        assert api.post(f"/api/v1/namespaces/{namespace}/replicationcontrollers",
                        json=kube.rc("one", 2)).status_code == 201
        wait_until(lambda: len(list_pods(api, namespace)) == 2, message="the leader's replicas")
        assert "[step 6]" in first.log_path.read_text()
        assert "[step 6]" not in second.log_path.read_text(), "the standby does nothing"
        assert "successfully acquired lease" not in second.log_path.read_text()

        first.kill()
        killed = time.monotonic()
        wait_until(lambda: "successfully acquired lease" in second.log_path.read_text(), timeout=15,
                   message="the standby to take over")
        took = time.monotonic() - killed
        assert took <= LEASE_DURATION + 2 * RETRY_PERIOD + 1.0, f"took over after {took:.1f}s"
        assert api.post(f"/api/v1/namespaces/{namespace}/replicationcontrollers",
                        json=kube.rc("two", 2)).status_code == 201
        wait_until(lambda: len(list_pods(api, namespace)) == 4, message="the new leader's replicas")
        assert "[step 6]" in second.log_path.read_text()
    finally:
        first.stop()
        second.stop()
