"""Two leader-election candidates as real processes: SIGKILL the leader, the standby takes over in time.

This module is also the candidate: ``python -m tests.integration.test_leaderelection_failover``
runs :func:`machinery.process.run` with a work loop that, while it holds the
Lease, logs ``working <identity>`` five times a second; it logs only while it
believes its lease valid, so overlapping lines from two candidates would mean
two leaders at once.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import re
import signal
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from kubesim import procs
from machinery import process
from machinery.api.meta import parse_time
from tests import harness

pytestmark = pytest.mark.integration

LEASE_DURATION, RENEW_DEADLINE, RETRY_PERIOD = 4.0, 3.0, 0.5


log = logging.getLogger("candidate")


async def candidate_main(rt: process.Runtime) -> None:
    log.info("candidate identity %s", rt.identity)

    async def work() -> None:
        while True:
            if rt.is_leading:
                log.info("working %s %.3f", rt.identity, time.time())
            await asyncio.sleep(0.2)

    await rt.lead(work)


Start = Callable[..., tuple[procs.ManagedProcess, str]]


@pytest.fixture
def start(cluster: harness.Cluster) -> Iterator[Start]:
    """Starts a candidate process (stopped by pid at teardown); returns it and its identity."""
    started: list[procs.ManagedProcess] = []

    def start_candidate(lease: str, name: str, *extra: str) -> tuple[procs.ManagedProcess, str]:
        port = procs.free_port()
        proc = procs.python_module(
            "tests.integration.test_leaderelection_failover",
            ["--kubeconfig", str(cluster.kubeconfig()), "--health-port", str(port), f"--leader-elect-resource-name={lease}",
             f"--leader-elect-lease-duration={LEASE_DURATION}s",
             f"--leader-elect-renew-deadline={RENEW_DEADLINE}s",
             f"--leader-elect-retry-period={int(RETRY_PERIOD * 1000)}ms", *extra],
            name=name, log_path=cluster.workdir / "logs" / f"{name}-{lease}.log",
            ready_url=f"http://127.0.0.1:{port}/healthz")
        started.append(proc)
        proc.start().wait_ready(30)
        match = harness.wait_for(lambda: re.search(r"candidate identity (\S+)", proc.log_path.read_text()),
                                 message=f"{name} to log its identity")
        assert isinstance(match, re.Match)
        return proc, match.group(1)

    yield start_candidate
    for proc in started:
        proc.stop()


def lease_spec(api: httpx.Client, name: str, namespace: str = "kube-system") -> dict[str, Any]:
    r = api.get(f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}")
    return r.json().get("spec", {}) if r.status_code == 200 else {}


def work_times(log: Path, identity: str) -> list[float]:
    return [float(t) for t in re.findall(rf"working {re.escape(identity)} (\d+\.\d+)", log.read_text())]


def test_standby_takes_over_after_the_leader_is_killed(api: httpx.Client, start: Start) -> None:
    lease = f"itest-{uuid.uuid4().hex[:8]}"
    a, a_id = start(lease, "candidate-a")
    harness.wait_for(lambda: lease_spec(api, lease).get("holderIdentity") == a_id, timeout=15,
                     message="a to lead")
    b, b_id = start(lease, "candidate-b")
    time.sleep(LEASE_DURATION * 1.5)  # b must stay a follower for longer than a lease duration
    assert lease_spec(api, lease)["holderIdentity"] == a_id
    assert work_times(b.log_path, b_id) == []

    a.kill()
    killed_at = time.time()
    a_last = lease_spec(api, lease)
    assert a_last["holderIdentity"] == a_id
    harness.wait_for(lambda: lease_spec(api, lease).get("holderIdentity") == b_id,
                     timeout=LEASE_DURATION + 4 * RETRY_PERIOD + 5, message="b to take over")
    took_over_at = time.time()
    b_spec = lease_spec(api, lease)

    # Within the lease duration (plus the standby's jittered polling) of the kill ...
    assert took_over_at - killed_at <= LEASE_DURATION + 2 * 1.2 * RETRY_PERIOD + 2.0
    # ... and never while a's last renewal was still valid.
    acquired = parse_time(b_spec["acquireTime"])
    a_renewed = parse_time(a_last["renewTime"])
    assert acquired is not None and a_renewed is not None
    assert acquired - a_renewed >= dt.timedelta(seconds=LEASE_DURATION)
    assert b_spec["leaseTransitions"] == a_last["leaseTransitions"] + 1
    harness.wait_for(lambda: work_times(b.log_path, b_id), timeout=5, message="b to work")
    assert max(work_times(a.log_path, a_id)) < min(work_times(b.log_path, b_id))

    # SIGTERM: b stops working, releases the lease and exits 0 within a few seconds.
    b.signal(signal.SIGTERM)
    assert b.proc is not None
    assert b.proc.wait(10) == 0
    released = lease_spec(api, lease)
    assert "holderIdentity" not in released and released["leaseDurationSeconds"] == 1


def test_a_paused_leader_loses_the_lease_stops_and_exits_1(api: httpx.Client, start: Start) -> None:
    lease = f"itest-{uuid.uuid4().hex[:8]}"
    a, a_id = start(lease, "paused-a")
    harness.wait_for(lambda: lease_spec(api, lease).get("holderIdentity") == a_id, timeout=15,
                     message="a to lead")
    b, b_id = start(lease, "paused-b")
    a.signal(signal.SIGSTOP)
    try:
        harness.wait_for(lambda: lease_spec(api, lease).get("holderIdentity") == b_id,
                         timeout=LEASE_DURATION + 10, message="b to take over from the paused a")
        harness.wait_for(lambda: work_times(b.log_path, b_id), timeout=5, message="b to work")
    finally:
        a.signal(signal.SIGCONT)
    assert a.proc is not None
    assert a.proc.wait(15) == 1
    assert "leaderelection lost" in a.log_path.read_text()
    # a never worked while b did: every line a wrote predates b's first.
    assert max(work_times(a.log_path, a_id)) < min(work_times(b.log_path, b_id))
    assert lease_spec(api, lease)["holderIdentity"] == b_id


def test_a_deleted_lease_is_created_again_by_its_leader(api: httpx.Client, start: Start) -> None:
    lease = f"itest-{uuid.uuid4().hex[:8]}"
    a, a_id = start(lease, "deleted-a")
    harness.wait_for(lambda: lease_spec(api, lease).get("holderIdentity") == a_id, timeout=15,
                     message="a to lead")
    for _ in range(3):
        r = api.delete(f"/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/{lease}")
        assert r.status_code == 200
        harness.wait_for(lambda: lease_spec(api, lease).get("holderIdentity") == a_id, timeout=RENEW_DEADLINE,
                         message="a to create its Lease again")
    assert a.alive()
    before = len(work_times(a.log_path, a_id))
    harness.wait_for(lambda: len(work_times(a.log_path, a_id)) > before + 3, timeout=5, message="a to go on")


def test_a_missing_lease_namespace_is_waited_for_not_fatal(api: httpx.Client, start: Start) -> None:
    lease, namespace = f"itest-{uuid.uuid4().hex[:8]}", f"le-{uuid.uuid4().hex[:8]}"
    a, a_id = start(lease, "nsless-a", f"--leader-elect-resource-namespace={namespace}")
    harness.wait_for(lambda: "not found" in a.log_path.read_text(), timeout=10,
                     message="a to say what is missing")
    time.sleep(LEASE_DURATION)
    assert a.alive() and work_times(a.log_path, a_id) == []
    assert api.post("/api/v1/namespaces", json={"metadata": {"name": namespace}}).status_code == 201
    harness.wait_for(lambda: lease_spec(api, lease, namespace).get("holderIdentity") == a_id,
                     timeout=LEASE_DURATION + 5, message="a to lead once the namespace exists")
    harness.wait_for(lambda: work_times(a.log_path, a_id), timeout=5, message="a to work")
    api.delete(f"/api/v1/namespaces/{namespace}")


if __name__ == "__main__":
    sys.exit(process.run("leader-candidate", candidate_main, lease_name="itest-lease"))
