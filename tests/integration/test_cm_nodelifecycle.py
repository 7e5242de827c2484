"""The node lifecycle controller against a real APIServer, with the test renewing node Leases as kubelets would.

A private cluster: the controller counts every node of the cluster when it
decides whether a zone is disrupted, so no other test's nodes may be around.
Periods are shortened through the controller's own flags (monitor every
second, a node silent for 3 s is unreachable).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests import harness, kube
from tests.integration.test_cm_support import (
    Heartbeats,
    create_node,
    delete_nodes,
    events,
    must_get,
    node_taints,
    post_node_status,
    set_pod_status,
    start_controller_manager,
    unique,
    wait_until,
)

pytestmark = pytest.mark.integration

UNREACHABLE = "node.kubernetes.io/unreachable"
NOT_READY = "node.kubernetes.io/not-ready"


@pytest.fixture(scope="module")
def private_cluster() -> Iterator[harness.Cluster]:
    with harness.cluster() as cluster:
        start_controller_manager(cluster, "--node-monitor-period=1s", "--node-monitor-grace-period=3s",
                                 name="cm-nodelifecycle")
        yield cluster


@pytest.fixture
def api(private_cluster: harness.Cluster) -> Iterator[httpx.Client]:
    with harness.admin_client(private_cluster.url, timeout=30) as client:
        yield client


@pytest.fixture
def nodes(api: httpx.Client) -> Iterator[list[str]]:
    names = [unique(f"node-{i}") for i in range(3)]
    for name in names:
        create_node(api, name)
    yield names
    delete_nodes(api, names)


def ready_condition(api: httpx.Client, node: str) -> dict[str, Any]:
    obj = must_get(api, f"/api/v1/nodes/{node}")
    return next(c for c in obj["status"]["conditions"] if c["type"] == "Ready")


def running_pod(api: httpx.Client, name: str, node: str, tolerations: list[dict[str, Any]] | None = None) -> None:
    r = api.post("/api/v1/namespaces/default/pods", json=kube.pod(name, node=node, tolerations=tolerations or []))
    assert r.status_code == 201, r.text
    set_pod_status(api, "default", name, ready=True)


def pod_state(api: httpx.Client, name: str) -> tuple[bool, str]:
    """(terminating, Ready condition status) of a Pod in the default namespace."""
    pod = must_get(api, f"/api/v1/namespaces/default/pods/{name}")
    ready = next(c["status"] for c in pod["status"]["conditions"] if c["type"] == "Ready")
    return bool(pod["metadata"].get("deletionTimestamp")), ready


def test_a_silent_node_becomes_unreachable_and_its_pods_are_evicted(private_cluster, api, nodes):
    silent, *healthy = nodes
    # The APIServer adds the 300 s default tolerations to the first Pod; the second tolerates 2 s only.
    default_pod, short_pod = unique("default"), unique("short")
    running_pod(api, default_pod, silent)
    running_pod(api, short_pod, silent, [{"key": UNREACHABLE, "operator": "Exists", "effect": "NoExecute",
                                          "tolerationSeconds": 2}])
    created = must_get(api, f"/api/v1/namespaces/default/pods/{default_pod}")
    assert {"key": UNREACHABLE, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300} in \
        created["spec"]["tolerations"]
    try:
        with Heartbeats(private_cluster.url, healthy):
            condition = wait_until(lambda: (c if (c := ready_condition(api, silent))["status"] == "Unknown" else None),
                                   timeout=15, message="the silent node to be marked Unknown")
            assert (condition["reason"], condition["message"]) == (
                "NodeStatusUnknown", "Kubelet stopped posting node status.")
            wait_until(lambda: {(UNREACHABLE, "NoSchedule"), (UNREACHABLE, "NoExecute")} <= node_taints(api, silent),
                       timeout=10, message="the unreachable taints")
            tainted = time.monotonic()
            assert all(ready_condition(api, n)["status"] == "True" for n in healthy)
            assert all(not node_taints(api, n) for n in healthy)
            wait_until(lambda: pod_state(api, default_pod) == (False, "False"), message="Pods marked not ready")
            wait_until(lambda: pod_state(api, short_pod)[0], timeout=10, message="the 2 s Pod evicted")
            assert time.monotonic() - tainted < 4
            time.sleep(2.0)
            assert pod_state(api, default_pod)[0] is False, "the default toleration lasts 300 s"
            assert any(e["message"] == f"Node {silent} status is now: NodeNotReady"
                       for e in events(api, "default", "NodeNotReady"))

            # The kubelet comes back: it posts Ready and renews its Lease again; the taints go.
            post_node_status(api, silent, "True")
            with Heartbeats(private_cluster.url, [silent]):
                wait_until(lambda: not node_taints(api, silent), timeout=10, message="the taints to go")
                assert pod_state(api, default_pod)[0] is False
    finally:
        for pod in (default_pod, short_pod):
            api.request("DELETE", f"/api/v1/namespaces/default/pods/{pod}", json={"gracePeriodSeconds": 0})


def test_a_node_reporting_not_ready_is_tainted_not_ready(private_cluster, api, nodes):
    sick = nodes[0]
    with Heartbeats(private_cluster.url, nodes):
        post_node_status(api, sick, "False")
        wait_until(lambda: {(NOT_READY, "NoSchedule"), (NOT_READY, "NoExecute")} <= node_taints(api, sick),
                   timeout=10, message="the not-ready taints")
        assert (UNREACHABLE, "NoExecute") not in node_taints(api, sick)
        post_node_status(api, sick, "True")
        wait_until(lambda: not node_taints(api, sick), timeout=10, message="the taints to go")


def test_when_every_node_is_silent_no_node_is_tainted_no_execute(private_cluster, api, nodes):
    """Kubernetes' "master disruption mode": the controller assumes it is the one cut off."""
    wait_until(lambda: all(ready_condition(api, n)["status"] == "Unknown" for n in nodes), timeout=15,
               message="every node Unknown")
    wait_until(lambda: all((UNREACHABLE, "NoSchedule") in node_taints(api, n) for n in nodes), timeout=10,
               message="the NoSchedule taints")
    time.sleep(2.5)
    assert all((UNREACHABLE, "NoExecute") not in node_taints(api, n) for n in nodes)
