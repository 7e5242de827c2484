"""A controller-manager that restarts in the middle of a scale-up resumes without duplicates.

The first controller-manager is stopped while a Deployment's ReplicaSet and a
StatefulSet are creating their Pods; the second lists what exists and
finishes. A watch counts every Pod ever created: exactly the replicas wanted,
no more (expectations and ordinal names make the second controller act on
what the first did). No scheduler or kubelet runs: the Pods stay Pending,
which is all counting needs.
"""

from __future__ import annotations

import signal

import httpx
import pytest

from tests import harness, kube
from tests.integration.test_cm_support import list_pods, start_controller_manager, wait_until

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def deployment(name: str, replicas: int) -> dict[str, object]:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}


def statefulset(name: str, replicas: int) -> dict[str, object]:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": name},
            "spec": {"replicas": replicas, "podManagementPolicy": "Parallel", "serviceName": name,
                     "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}


def test_a_restart_mid_scale_up_creates_no_duplicates(cluster: harness.Cluster, api: httpx.Client,
                                                      namespace: str) -> None:
    replicas = 60
    first = start_controller_manager(cluster, "--controllers=deployment,replicaset,statefulset", name="cm-first")
    with kube.WatchReader(cluster.url, f"/api/v1/namespaces/{namespace}/pods",
                          params={"watch": "true", "resourceVersion": "0"}) as watch:
        for body, path in ((deployment("web", replicas), "deployments"), (statefulset("db", replicas),
                                                                         "statefulsets")):
            r = api.post(f"/apis/apps/v1/namespaces/{namespace}/{path}", json=body)
            assert r.status_code == 201, r.text
        wait_until(lambda: len(list_pods(api, namespace)) >= 10, message="the first Pods")
        # A crash, not a shutdown: whatever was in flight is cut off.
        first.signal(signal.SIGKILL)
        first.stop()
        assert len(list_pods(api, namespace)) < 2 * replicas, "the restart happens mid-way"
        second = start_controller_manager(cluster, "--controllers=deployment,replicaset,statefulset",
                                          name="cm-second")
        try:
            wait_until(lambda: len(list_pods(api, namespace, "app=web")) == replicas
                       and len(list_pods(api, namespace, "app=db")) == replicas, timeout=60,
                       message="every replica")
            added = watch.wait_until(lambda events: len({e["object"]["metadata"]["name"] for e in events
                                                         if e["type"] == "ADDED"}) >= 2 * replicas)
        finally:
            second.stop()
    created = {e["object"]["metadata"]["name"] for e in added if e["type"] == "ADDED"}
    assert len(created) == 2 * replicas, "no Pod was created twice for the same replica"
    assert sorted(n for n in created if n.startswith("db-")) == sorted(f"db-{i}" for i in range(replicas))
    rss = api.get(f"/apis/apps/v1/namespaces/{namespace}/replicasets").json()["items"]
    assert len(rss) == 1, "one ReplicaSet for one template, across the restart"
