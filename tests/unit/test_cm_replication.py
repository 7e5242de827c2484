"""The replication manager: which Pods go first, slow start, status, templates, and its sync loop.

The sync loop runs against scripted informers and an in-memory API
(:mod:`tests.unit.test_cm_fakes`), so a test decides when each watch event
arrives: exactly what expectations are about.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from typing import Any

import pytest
from kubernetes.client import V1Pod, V1ReplicationController, V1Status

from controller_manager.controllers.replication import (
    ReplicationManager,
    calculate_status,
    pod_from_template,
    pod_prefix,
    pods_to_delete,
    slow_start_batch,
)
from machinery.api.kinds import PODS, REPLICATION_CONTROLLERS
from machinery.api.meta import format_time, utcnow
from machinery.client.errors import InternalError
from machinery.client.objects import decode
from tests.unit.test_cm_fakes import Api, FakeInformers, context, pod, settle, status

NOW = dt.datetime(2024, 5, 1, 12, 0, 0, tzinfo=dt.UTC)


def ts(seconds_ago: float) -> str:
    return format_time(NOW - dt.timedelta(seconds=seconds_ago))


def candidate(name: str, *, node: str | None = "n1", phase: str = "Running", ready_for: float | None = None,
              cost: int | None = None, restarts: int = 0, age: float | None = 1000.0, uid: str | None = None,
              labels: dict[str, str] | None = None) -> V1Pod:
    conditions = []
    if ready_for is not None:
        conditions.append({"type": "Ready", "status": "True", "lastTransitionTime": ts(ready_for)})
    body = pod(name, node=node, labels=labels, status={
        "phase": phase, "conditions": conditions,
        "containerStatuses": [{"name": "c", "image": "i", "imageID": "", "ready": ready_for is not None,
                               "restartCount": restarts}]})
    meta = body["metadata"]
    if uid is not None:
        meta["uid"] = uid
    if age is not None:
        meta["creationTimestamp"] = ts(age)
    if cost is not None:
        meta["annotations"] = {"controller.kubernetes.io/pod-deletion-cost": str(cost)}
    return decode(V1Pod, body)


@pytest.mark.parametrize(("first", "second"), [
    pytest.param(candidate("a", node=None, phase="Pending"), candidate("b"), id="unscheduled-first"),
    pytest.param(candidate("a", phase="Pending"), candidate("b"), id="pending-before-running"),
    pytest.param(candidate("a", phase="Unknown"), candidate("b"), id="unknown-before-running"),
    pytest.param(candidate("a"), candidate("b", ready_for=100), id="not-ready-first"),
    pytest.param(candidate("a", ready_for=100, cost=-5), candidate("b", ready_for=100), id="lower-cost-first"),
    pytest.param(candidate("a", ready_for=100, cost=10), candidate("b", ready_for=100, cost=100),
                 id="lower-positive-cost-first"),
    pytest.param(candidate("a", ready_for=10), candidate("b", ready_for=1000), id="recently-ready-first"),
    pytest.param(candidate("a", restarts=3), candidate("b", restarts=1), id="more-restarts-first"),
    pytest.param(candidate("a", age=10), candidate("b", age=1000), id="newer-first"),
    pytest.param(candidate("a", age=None), candidate("b", age=10), id="no-creation-time-first"),
    # 100 s and 101 s old fall in the same power-of-two bucket: the uid decides.
    pytest.param(candidate("a", age=101, uid="uid-1"), candidate("b", age=100, uid="uid-2"),
                 id="same-log-bucket-by-uid"),
])
def test_pods_to_delete_ranks_as_kubernetes(first: V1Pod, second: V1Pod) -> None:
    assert pods_to_delete([second, first], 1, NOW) == [first]
    assert pods_to_delete([first, second], 1, NOW) == [first]


def test_pods_to_delete_takes_everything_when_asked_for_more() -> None:
    pods = [candidate("a"), candidate("b")]
    assert pods_to_delete(pods, 5, NOW) == pods


async def test_slow_start_batches_double_and_stop_at_the_first_failing_batch() -> None:
    in_flight, seen = 0, []
    failing_from = 5

    async def create() -> None:
        nonlocal in_flight
        in_flight += 1
        seen.append(in_flight)
        call = len(seen)
        await asyncio.sleep(0)
        in_flight -= 1
        if call >= failing_from:
            raise InternalError(V1Status(code=500, message="boom"))

    # Batches of 1, 2 and 4 are sent; the third holds the failures, so nothing after it is.
    successes, error = await slow_start_batch(20, 1, create)
    assert seen == [1, 1, 2, 1, 2, 3, 4]
    assert successes == 4
    assert isinstance(error, InternalError)


async def test_slow_start_sends_everything_when_all_succeed_and_stops_when_told() -> None:
    calls = 0

    async def create() -> None:
        nonlocal calls
        calls += 1

    assert await slow_start_batch(10, 1, create) == (10, None)
    assert calls == 10
    assert await slow_start_batch(10, 1, create, lambda: calls < 13) == (3, None)


def rc_model(replicas: int = 3, min_ready: int = 0, conditions: list[dict[str, Any]] | None = None,
             **meta: Any) -> V1ReplicationController:
    return decode(V1ReplicationController, rc(replicas, min_ready=min_ready, conditions=conditions, **meta))


def rc(replicas: int = 3, *, min_ready: int = 0, conditions: list[dict[str, Any]] | None = None,
       generation: int = 1, **meta: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "v1", "kind": "ReplicationController",
        "metadata": {"name": "web", "namespace": "ns", "uid": "uid-web", "generation": generation, **meta},
        "spec": {"replicas": replicas, "minReadySeconds": min_ready, "selector": {"app": "web"},
                 "template": {"metadata": {"labels": {"app": "web", "tier": "fe"},
                                           "annotations": {"note": "x"}, "finalizers": ["example.com/f"]},
                              "spec": {"containers": [{"name": "c", "image": "nginx"}]}}},
        "status": {"replicas": 0}}
    if conditions:
        body["status"]["conditions"] = conditions
    return body


def test_status_counts_labeled_ready_and_available_replicas() -> None:
    full = {"app": "web", "tier": "fe"}
    pods = [candidate("a", labels=full, ready_for=30), candidate("b", labels=full, ready_for=5),
            candidate("c", labels={"app": "web"}), candidate("d", labels=full)]
    assert calculate_status(rc_model(4, min_ready=10), pods, None, NOW) == {
        "replicas": 4, "fullyLabeledReplicas": 3, "readyReplicas": 2, "availableReplicas": 1}


def test_status_replica_failure_condition_comes_and_goes() -> None:
    error = InternalError(V1Status(code=500, message="pods is forbidden"))
    failed = calculate_status(rc_model(3), [], error, NOW)
    assert failed["conditions"] == [{"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate",
                                     "message": "pods is forbidden", "lastTransitionTime": format_time(NOW)}]
    # Still failing later: the condition already there is kept as it is.
    still = calculate_status(rc_model(3, conditions=failed["conditions"]), [], error, NOW + dt.timedelta(1))
    assert still["conditions"] == failed["conditions"]
    assert "conditions" not in calculate_status(rc_model(3, conditions=failed["conditions"]), [], None, NOW)


@pytest.mark.parametrize(("name", "prefix"), [
    pytest.param("web", "web-", id="short"),
    pytest.param("a" * 252, "a" * 252 + "-", id="longest-with-dash"),
    pytest.param("a" * 253, "a" * 253, id="too-long-for-a-dash"),
])
def test_pod_prefix(name: str, prefix: str) -> None:
    assert pod_prefix(name) == prefix


def test_pod_from_template_copies_metadata_and_spec_and_sets_the_controller() -> None:
    body = pod_from_template(rc_model())
    assert body["metadata"] == {
        "generateName": "web-", "namespace": "ns", "labels": {"app": "web", "tier": "fe"},
        "annotations": {"note": "x"}, "finalizers": ["example.com/f"],
        "ownerReferences": [{"apiVersion": "v1", "kind": "ReplicationController", "name": "web",
                             "uid": "uid-web", "controller": True, "blockOwnerDeletion": True}]}
    assert body["spec"]["containers"][0]["image"] == "nginx"


# --- the sync loop -----------------------------------------------------------------------------

OWNER = {"apiVersion": "v1", "kind": "ReplicationController", "name": "web", "uid": "uid-web",
         "controller": True, "blockOwnerDeletion": True}


class Harness:
    def __init__(self, replicas: int, pods: list[dict[str, Any]] | None = None, burst: int = 500) -> None:
        self.api = Api()
        self.informers = FakeInformers()
        self.rc = self.api.put(REPLICATION_CONTROLLERS, rc(replicas))
        self.manager = ReplicationManager(context(self.api, self.informers), burst_replicas=burst)
        self.informers.list(REPLICATION_CONTROLLERS, [self.rc])
        self.informers.list(PODS, pods or [])

    def created(self) -> list[dict[str, Any]]:
        """The Pods the manager created (the API answered 201), in order."""
        return [body for _, _, body in self.api.calls("POST", "/pods") if body["metadata"].get("name")]

    def observe_created(self, count: int | None = None) -> None:
        """Let the watch deliver the ADDED events of Pods the manager created."""
        for body in self.created()[:count]:
            self.informers.event(PODS, "ADDED", self.api.objects[PODS.path("ns", body["metadata"]["name"])])

    def last_status(self) -> dict[str, Any]:
        status_writes = self.api.calls("PUT", "/status")
        assert status_writes, "no status was written"
        result: dict[str, Any] = status_writes[-1][2]["status"]
        return result


async def run(harness: Harness) -> asyncio.Task[None]:
    task = asyncio.create_task(harness.manager.run())
    await settle()
    return task


async def stop(task: asyncio.Task[None]) -> None:
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def test_no_replica_is_created_twice_while_the_watch_lags() -> None:
    h = Harness(3)
    async with h.informers.running():
        task = await run(h)
        assert len(h.created()) == 3
        # The RC changes (its status write comes back) but the Pods' ADDED events do not: nothing more.
        h.informers.event(REPLICATION_CONTROLLERS, "MODIFIED", h.api.objects[REPLICATION_CONTROLLERS.path("ns", "web")])
        await settle()
        h.observe_created(2)
        await settle()
        assert len(h.created()) == 3
        assert h.manager.expectations.satisfied("ns/web") is False
        h.observe_created()
        await settle()
        assert len(h.created()) == 3
        assert h.manager.expectations.satisfied("ns/web")
        assert h.last_status()["replicas"] == 3
        # A replica deleted by someone else is replaced.
        gone = h.created()[0]["metadata"]["name"]
        h.informers.event(PODS, "DELETED", h.api.objects[PODS.path("ns", gone)])
        await settle()
        assert len(h.created()) == 4
        await stop(task)


async def test_creations_are_capped_per_sync() -> None:
    h = Harness(7, burst=5)
    async with h.informers.running():
        task = await run(h)
        assert len(h.created()) == 5
        h.observe_created()
        await settle()
        assert len(h.created()) == 7
        await stop(task)


async def test_a_failing_batch_stops_the_slow_start_and_sets_replica_failure() -> None:
    h = Harness(10)
    h.api.rules.append(lambda r: status(500, "InternalError", "etcd is sad")
                       if r.method == "POST" and len(h.api.calls("POST")) > 3 else None)
    async with h.informers.running():
        task = await run(h)
        assert len(h.api.calls("POST")) == 7, "batches of 1, 2 and 4; the third failed"
        assert h.last_status()["conditions"][0] | {"lastTransitionTime": ""} == {
            "type": "ReplicaFailure", "status": "True", "reason": "FailedCreate", "message": "etcd is sad",
            "lastTransitionTime": ""}
        # The creations that failed or were never sent are not waited for: once the three are seen, it retries.
        h.observe_created()
        await settle()
        assert h.manager.expectations.satisfied("ns/web")
        await stop(task)


async def test_scale_down_deletes_the_newest_and_counts_each_deletion_once() -> None:
    # Ages of 3,000, 2,000 and 1,000 s lie in different powers of two: newest first, not by uid.
    pods = [pod(f"p{i}", labels={"app": "web"}, owners=[OWNER],
                creationTimestamp=format_time(utcnow() - dt.timedelta(seconds=1000 * (3 - i))))
            for i in range(3)]
    for body in pods:
        body["status"] = {"phase": "Running"}
        body["spec"]["nodeName"] = "n1"
    h = Harness(1, pods)
    async with h.informers.running():
        task = await run(h)
        deleted = sorted(path.rsplit("/", 1)[-1] for _, path, _ in h.api.calls("DELETE"))
        assert deleted == ["p1", "p2"], "the two newest go"
        # Graceful deletion: first the deletionTimestamp, then the final DELETED: one observation each.
        for name in deleted:
            h.informers.event(PODS, "MODIFIED", pods[int(name[1])] | {
                "metadata": {**pods[int(name[1])]["metadata"], "deletionTimestamp": format_time(NOW)}})
        await settle()
        assert h.manager.expectations.satisfied("ns/web")
        for name in deleted:
            h.informers.event(PODS, "DELETED", pods[int(name[1])])
        await settle()
        assert len(h.api.calls("DELETE")) == 2
        assert h.api.calls("POST") == []
        await stop(task)


async def test_orphans_are_adopted_and_non_matching_pods_released() -> None:
    orphan = pod("orphan", labels={"app": "web"})
    stray = pod("stray", labels={"app": "other"}, owners=[OWNER])
    h = Harness(1, [orphan, stray])
    h.api.put(PODS, orphan)
    h.api.put(PODS, stray)
    async with h.informers.running():
        task = await run(h)
        patches = {path.rsplit("/", 1)[-1]: body for _, path, body in h.api.calls("PATCH")}
        assert patches["orphan"] == {"metadata": {"ownerReferences": [OWNER], "uid": "uid-orphan"}}
        assert patches["stray"] == {"metadata": {"ownerReferences": [{"$patch": "delete", "uid": "uid-web"}],
                                                 "uid": "uid-stray"}}
        assert h.api.calls("GET", "/replicationcontrollers/web"), "the RC is re-read before adopting"
        assert h.api.calls("POST") == [], "the adopted orphan is the one replica"
        await stop(task)


async def test_terminating_namespace_creations_are_neither_retried_nor_reported() -> None:
    h = Harness(2)
    h.api.rules.append(lambda r: status(403, "Forbidden", "namespace ns is being terminated",
                                        [{"reason": "NamespaceTerminating", "message": "m",
                                          "field": "metadata.namespace"}]) if r.method == "POST" else None)
    async with h.informers.running():
        task = await run(h)
        assert len(h.api.calls("POST")) == 2
        assert "conditions" not in h.last_status()
        await stop(task)


async def test_sync_of_a_deleted_rc_forgets_its_expectations() -> None:
    h = Harness(0)
    h.manager.expectations.expect_creations("ns/gone", 3)
    await h.manager.sync("ns/gone")  # type: ignore[arg-type]
    assert h.manager.expectations.satisfied("ns/gone")
