"""kubesim replay against a real APIServer: the --from/--to window and its pacing; objects carried across clusters.

No controllers run here: the actions are ConfigMaps and Jobs, which the
APIServer alone accepts or refuses.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import httpx
import pytest

from kubesim.studies import api as study_api
from kubesim.studies.actions import client_actions
from kubesim.studies.objects import portable
from kubesim.studies.replay import Replayer
from kubesim.studies.traceformat import Record
from machinery.client import ClientConfig
from tests import harness

pytestmark = pytest.mark.integration


def configmap(namespace: str, name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace},
            "data": {"at": name}}


def replay(config: ClientConfig, records: list[Record], **options: Any) -> Any:
    async def run() -> Any:
        async with study_api.client(config, "test-replay") as client:
            return await Replayer(client, **options).run([], client_actions(records))
    return asyncio.run(run())


def names(api: httpx.Client, namespace: str) -> set[str]:
    return {c["metadata"]["name"] for c in api.get(f"/api/v1/namespaces/{namespace}/configmaps").json()["items"]
            if c["metadata"]["name"].startswith("at-")}


def test_from_sends_what_came_before_at_once_and_to_stops_there(cluster: harness.Cluster, api: httpx.Client,
                                                                 namespace: str) -> None:
    records = [Record(i, float(t), "ADDED", configmap(namespace, f"at-{t}")) for i, t in enumerate((1, 2, 12, 22, 40),
                                                                                                    start=1)]
    report = replay(cluster.config(), records, speed=10.0, start=2.0, end=22.0)
    assert names(api, namespace) == {"at-1", "at-2", "at-12", "at-22"}
    assert report.sent == {"create": 4} and not report.failed
    # The window 2s..22s of trace at 10 times real speed: about 2 seconds of wall time, on the clock.
    assert report.trace_seconds == 20.0 and report.wall_seconds >= 1.9


def test_a_job_recorded_on_one_cluster_is_created_on_another(api: httpx.Client, namespace: str) -> None:
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "pi", "namespace": namespace},
           "spec": {"template": {"spec": {"restartPolicy": "Never",
                                          "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}}}}
    r = api.post(f"/apis/batch/v1/namespaces/{namespace}/jobs", json=job)
    assert r.status_code == 201, r.text
    recorded = portable(r.json())
    assert api.delete(f"/apis/batch/v1/namespaces/{namespace}/jobs/pi",
                      params={"propagationPolicy": "Background"}).status_code == 200
    harness.wait_for(lambda: api.get(f"/apis/batch/v1/namespaces/{namespace}/jobs/pi").status_code == 404,
                     timeout=30, message="the first Job gone")
    # The same Job again, as a replay or a snapshot load creates it: the APIServer gives it a selector of its own.
    again = api.post(f"/apis/batch/v1/namespaces/{namespace}/jobs", json=recorded)
    assert again.status_code == 201, again.text
    assert again.json()["metadata"]["uid"] != r.json()["metadata"]["uid"]
    assert again.json()["spec"]["selector"]["matchLabels"] == {
        "batch.kubernetes.io/controller-uid": again.json()["metadata"]["uid"]}


def test_a_pod_sent_right_after_its_namespace_waits_for_the_namespaces_service_account() -> None:
    """ServiceAccount admission refuses Pods until ``default`` exists; the replay waits as a client must."""
    with harness.cluster(service_accounts=True) as c, c.client(timeout=30) as api:
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "early", "namespace": "lab"},
               "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}}
        records = [Record(1, 0.0, "ADDED", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "lab"}}),
                   Record(2, 0.01, "ADDED", pod)]

        def service_account_controller() -> None:  # none runs here: play its part, late
            harness.wait_for(lambda: api.get("/api/v1/namespaces/lab").status_code == 200, timeout=30,
                             message="the replayed Namespace")
            time.sleep(1.0)
            assert api.post("/api/v1/namespaces/lab/serviceaccounts",
                            json={"metadata": {"name": "default"}}).status_code == 201
        late = threading.Thread(target=service_account_controller)
        late.start()
        try:
            report = replay(c.config(), records, speed=1.0)
        finally:
            late.join()
        assert not report.failed and report.sent == {"create": 2}
        assert api.get("/api/v1/namespaces/lab/pods/early").json()["spec"]["serviceAccountName"] == "default"


def test_an_object_is_never_sent_before_its_namespace(cluster: harness.Cluster, api: httpx.Client) -> None:
    """A replay running behind sends actions on different objects together, but not ahead of their Namespace."""
    records: list[Record] = []
    names = [f"ns-order-{i}" for i in range(20)]
    for name in names:
        records.append(Record(len(records) + 1, 0.0, "ADDED",
                              {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}))
        records.append(Record(len(records) + 1, 0.0, "ADDED", configmap(name, "at-0")))
    try:
        report = replay(cluster.config(), records, speed=1e9, parallel=64)
        assert not report.failed and report.sent == {"create": 40}
    finally:
        for name in names:
            api.delete(f"/api/v1/namespaces/{name}")
