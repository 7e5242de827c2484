"""Two schedulers at once: racing on the same Pods binds each exactly once; with leader election one
schedules and the other takes over when it stops."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from kubesim import procs
from tests import harness

pytestmark = pytest.mark.integration

PODS = 120


@pytest.fixture
def api(fresh_cluster: harness.Cluster) -> Iterator[httpx.Client]:
    with harness.admin_client(fresh_cluster.url, timeout=30) as client:
        yield client


def start_scheduler(cluster: harness.Cluster, *flags: str) -> procs.ManagedProcess:
    port = procs.free_port()
    return cluster.start_component("scheduler", [*cluster.component_args("scheduler"), "--health-port", str(port),
                                                *flags],
                                   ready_url=f"http://{procs.LOOPBACK}:{port}/healthz")


def create_nodes(api: httpx.Client, count: int) -> None:
    resources = {"cpu": "100", "memory": "100Gi", "pods": "500"}
    for i in range(count):
        r = api.post("/api/v1/nodes", json={"metadata": {"name": f"node-{i}"},
                                            "status": {"capacity": resources, "allocatable": resources}})
        assert r.status_code == 201, r.text


def create_pods(api: httpx.Client, prefix: str, count: int) -> None:
    for i in range(count):
        r = api.post("/api/v1/namespaces/default/pods", json={
            "metadata": {"name": f"{prefix}-{i}"},
            "spec": {"containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": "10m"}}}]}})
        assert r.status_code == 201, r.text


def all_bound(api: httpx.Client, prefix: str, count: int) -> bool:
    items = api.get("/api/v1/namespaces/default/pods").json()["items"]
    return sum(1 for p in items if p["metadata"]["name"].startswith(f"{prefix}-") and p["spec"].get("nodeName")) \
        == count


def scheduled_counts(api: httpx.Client) -> dict[str, int]:
    counts: dict[str, int] = {}
    for event in api.get("/api/v1/namespaces/default/events", params={"fieldSelector": "reason=Scheduled"}).json()[
            "items"]:
        name = event["involvedObject"]["name"]
        counts[name] = counts.get(name, 0) + int(event.get("count") or 1)
    return counts


def test_racing_schedulers_bind_each_pod_once(fresh_cluster: harness.Cluster, api: httpx.Client) -> None:
    create_nodes(api, 5)
    first = start_scheduler(fresh_cluster, "--leader-elect=false")
    second = start_scheduler(fresh_cluster, "--leader-elect=false")
    create_pods(api, "race", PODS)
    harness.wait_for(lambda: all_bound(api, "race", PODS), timeout=60, message="every Pod to be bound")
    counts = harness.wait_for(lambda: c if len(c := scheduled_counts(api)) == PODS else None, timeout=30,
                              message="a Scheduled event per Pod")
    assert isinstance(counts, dict) and set(counts.values()) == {1}
    # Both schedulers worked; whichever lost a race dropped the Pod quietly.
    for scheduler in (first, second):
        log = scheduler.log_path.read_text()
        assert "[step 9]" in log and "Traceback" not in log


def test_the_standby_takes_over_when_the_leader_stops(fresh_cluster: harness.Cluster, api: httpx.Client) -> None:
    election = ["--leader-elect-lease-duration=2s", "--leader-elect-renew-deadline=1500ms",
                "--leader-elect-retry-period=200ms"]
    create_nodes(api, 2)
    leader = start_scheduler(fresh_cluster, *election)

    def holder() -> str | None:
        r = api.get("/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-scheduler")
        return r.json()["spec"].get("holderIdentity") if r.status_code == 200 else None
    harness.wait_for(holder, message="a leader")
    standby = start_scheduler(fresh_cluster, *election)
    create_pods(api, "before", 10)
    harness.wait_for(lambda: all_bound(api, "before", 10), timeout=30, message="the leader to schedule")
    assert "[step 9]" not in standby.log_path.read_text()
    leader.stop()
    create_pods(api, "after", 10)
    harness.wait_for(lambda: all_bound(api, "after", 10), timeout=60, message="the standby to take over")
    assert "[step 9]" in standby.log_path.read_text()
