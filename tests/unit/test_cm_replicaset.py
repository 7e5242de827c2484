"""The ReplicaSet controller over apps/v1 ReplicaSets: the same loop as RCs, with a label selector."""

from __future__ import annotations

import asyncio
import datetime as dt
from typing import Any

from kubernetes.client import V1Pod

from controller_manager.controllers.replicaset import ReplicaSetManager, pods_to_delete
from machinery.api.kinds import PODS, REPLICA_SETS
from machinery.client.objects import decode
from tests.unit.test_cm_fakes import Api, FakeInformers, context, pod, settle

NOW = dt.datetime(2024, 5, 1, 12, 0, 0, tzinfo=dt.UTC)


def rs(replicas: int, **selector: Any) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": "web-abc", "namespace": "ns", "uid": "uid-web-abc", "generation": 1},
            "spec": {"replicas": replicas, "selector": selector or {"matchExpressions": [
                {"key": "app", "operator": "In", "values": ["web"]}]},
                "template": {"metadata": {"labels": {"app": "web"}},
                             "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}


def test_pods_doubled_up_with_sibling_replica_sets_go_first() -> None:
    lonely = decode(V1Pod, pod("lonely", node="n1", status={"phase": "Running"}))
    crowded = decode(V1Pod, pod("crowded", node="n2", status={"phase": "Running"}))
    sibling = decode(V1Pod, pod("sibling", node="n2", status={"phase": "Running"}))
    assert pods_to_delete([lonely, crowded], 1, NOW, related=[lonely, crowded, sibling]) == [crowded]
    assert pods_to_delete([crowded, lonely], 1, NOW, related=[]) == [crowded]


async def test_a_replica_set_creates_owned_pods_and_adopts_by_expression() -> None:
    api, informers = Api(), FakeInformers()
    api.put(REPLICA_SETS, rs(2))
    orphan = api.put(PODS, pod("orphan", labels={"app": "web"}))
    manager = ReplicaSetManager(context(api, informers))
    informers.list(REPLICA_SETS, [api.objects[REPLICA_SETS.path("ns", "web-abc")]])
    informers.list(PODS, [orphan])
    async with informers.running():
        task = asyncio.create_task(manager.run())
        await settle()
        created = [b for _, _, b in api.calls("POST", "/pods")]
        assert len(created) == 1, "the adopted orphan is one of the two"
        assert created[0]["metadata"]["generateName"] == "web-abc-"
        assert created[0]["metadata"]["ownerReferences"] == [
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-abc", "uid": "uid-web-abc",
             "controller": True, "blockOwnerDeletion": True}]
        adopt = [b for _, path, b in api.calls("PATCH") if path.endswith("/orphan")]
        assert adopt and adopt[0]["metadata"]["ownerReferences"][0]["kind"] == "ReplicaSet"
        status = api.calls("PUT", "/replicasets/web-abc/status")[-1][2]["status"]
        assert status["replicas"] == 1 and status["observedGeneration"] == 1
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
