"""The node lifecycle controller: zones, disruption, condition taints, token buckets, and health on virtual time."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from kubernetes.client import V1Node

from controller_manager.controllers.nodelifecycle import (
    NodeLifecycleController,
    TokenBucket,
    ZoneTainter,
    compute_zone_state,
    condition_taints,
    silence_conditions,
    zone_key,
)
from machinery.api.kinds import LEASES, NODES, PODS
from machinery.api.meta import format_micro_time, format_time, utcnow
from machinery.client.clock import FakeClock
from machinery.client.objects import decode
from tests.unit.test_cm_fakes import Api, FakeInformers, context, pod, settle


def node(name: str = "n1", *, labels: dict[str, str] | None = None, conditions: dict[str, str] | None = None,
         unschedulable: bool = False, taints: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    now = format_time(utcnow())
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "uid": f"uid-{name}", "labels": labels or {},
                         "creationTimestamp": now},
            "spec": {"unschedulable": unschedulable, "taints": taints or []},
            "status": {"conditions": [{"type": t, "status": s, "lastHeartbeatTime": now, "lastTransitionTime": now}
                                      for t, s in (conditions or {}).items()]}}


@pytest.mark.parametrize(("labels", "key"), [
    pytest.param({}, "", id="none"),
    pytest.param({"topology.kubernetes.io/zone": "a", "topology.kubernetes.io/region": "r"}, "r:\x00:a",
                 id="stable"),
    pytest.param({"failure-domain.beta.kubernetes.io/zone": "b"}, ":\x00:b", id="beta-zone-only"),
])
def test_zone_key(labels: dict[str, str], key: str) -> None:
    assert zone_key(decode(V1Node, node(labels=labels))) == key


@pytest.mark.parametrize(("statuses", "expected"), [
    pytest.param(["True", "True", "False"], (1, "Normal"), id="one-down"),
    pytest.param(["False", None, "Unknown"], (3, "FullDisruption"), id="none-ready"),
    pytest.param(["True", "False", "False", "Unknown"], (3, "PartialDisruption"), id="most-down"),
    pytest.param(["True", "False", "False"], (2, "Normal"), id="two-down-is-never-partial"),
    pytest.param(["True"] * 3 + ["False"] * 3, (3, "Normal"), id="half-is-below-55-percent"),
    pytest.param([], (0, "Normal"), id="empty"),
])
def test_compute_zone_state(statuses: list[str | None], expected: tuple[int, str]) -> None:
    assert compute_zone_state(statuses, 0.55) == expected


def test_condition_taints() -> None:
    sick = decode(V1Node, node(conditions={"Ready": "False", "MemoryPressure": "True", "DiskPressure": "False"},
                               unschedulable=True))
    assert condition_taints(sick) == [
        {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"},
        {"key": "node.kubernetes.io/memory-pressure", "effect": "NoSchedule"},
        {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]
    assert condition_taints(decode(V1Node, node(conditions={"Ready": "Unknown"}))) == [
        {"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule"}]


def test_silence_conditions_marks_known_ones_unknown_and_adds_missing_ones() -> None:
    conditions = [{"type": "Ready", "status": "True", "lastHeartbeatTime": "T0", "lastTransitionTime": "T0"},
                  {"type": "NetworkUnavailable", "status": "False"}]
    created = utcnow()
    result = silence_conditions(conditions, created, "NOW")
    by_type = {c["type"]: c for c in result}
    assert by_type["Ready"] == {"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown",
                                "message": "Kubelet stopped posting node status.", "lastHeartbeatTime": "T0",
                                "lastTransitionTime": "NOW"}
    assert by_type["MemoryPressure"]["reason"] == "NodeStatusNeverUpdated"
    assert by_type["MemoryPressure"]["lastHeartbeatTime"] == format_time(created)
    assert by_type["NetworkUnavailable"] == {"type": "NetworkUnavailable", "status": "False"}
    assert conditions[0]["status"] == "True", "the input is not modified"


def test_token_bucket_and_zone_tainter() -> None:
    bucket = TokenBucket(0.5, 1, now=0.0)
    assert bucket.try_accept(0.0)
    assert not bucket.try_accept(1.0)
    assert bucket.next_token_at(1.0) == pytest.approx(2.0)
    assert bucket.try_accept(2.0)
    assert TokenBucket(0.0, 1, now=0.0).next_token_at(0.0) is None

    tainter = ZoneTainter(TokenBucket(1.0, 1, now=0.0))
    assert tainter.add("n1", 0.0) and not tainter.add("n1", 1.0)
    del tainter.queue["n1"]
    assert not tainter.add("n1", 2.0), "processed nodes stay known until removed"
    assert tainter.remove("n1") and tainter.add("n1", 3.0)
    tainter.limiter.try_accept(3.0)
    tainter.swap_limiter(2.0, 3.0)
    assert not tainter.limiter.try_accept(3.0), "a saturated limiter is swapped for a drained one"


def lease(name: str) -> dict[str, Any]:
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": name, "namespace": "kube-node-lease"},
            "spec": {"holderIdentity": name, "renewTime": format_micro_time(utcnow())}}


async def test_a_node_whose_lease_stops_is_marked_unknown_then_tainted() -> None:
    clock = FakeClock()
    api = Api()
    informers = FakeInformers()
    nodes = [node(f"n{i}", conditions={"Ready": "True"}) for i in range(3)]
    for n in nodes:
        api.put(NODES, n)
    controller = NodeLifecycleController(context(api, informers, clock, node_monitor_period=1.0,
                                                 node_monitor_grace_period=3.0))
    informers.list(NODES, nodes)
    informers.list(LEASES, [lease(n["metadata"]["name"]) for n in nodes])
    ready_pod = pod("p", node="n0", status={"phase": "Running", "conditions": [
        {"type": "Ready", "status": "True", "lastTransitionTime": format_time(utcnow())}]})
    api.put(PODS, ready_pod)
    informers.list(PODS, [ready_pod])
    async with informers.running():
        task = asyncio.create_task(controller.run())
        await settle()
        for second in range(1, 5):
            for name in ("n1", "n2"):
                informers.event(LEASES, "MODIFIED", lease(name))
            clock.advance(1.0)
            await settle()
            if second < 4:
                assert api.calls("PUT", "/nodes/n0/status") == [], f"still within the grace period at {second}s"
        written = api.calls("PUT", "/nodes/n0/status")[0][2]
        ready = next(c for c in written["status"]["conditions"] if c["type"] == "Ready")
        assert (ready["status"], ready["reason"]) == ("Unknown", "NodeStatusUnknown")
        assert api.calls("PUT", "/nodes/n1/status") == []
        marked = api.calls("PUT", "/pods/p/status")[0][2]
        assert next(c for c in marked["status"]["conditions"] if c["type"] == "Ready")["status"] == "False"

        # The write comes back through the watch; the next pass queues the node, and it is tainted.
        informers.event(NODES, "MODIFIED", api.objects[NODES.path(None, "n0")])
        informers.event(LEASES, "MODIFIED", lease("n1"))
        informers.event(LEASES, "MODIFIED", lease("n2"))
        clock.advance(1.0)
        await settle()
        taint_patches = [body for _, path, body in api.calls("PATCH", "/nodes/n0") if "taints" in body["spec"]]
        taints = {(t["key"], t["effect"]) for p in taint_patches for t in p["spec"]["taints"] or ()}
        assert ("node.kubernetes.io/unreachable", "NoExecute") in taints
        assert ("node.kubernetes.io/unreachable", "NoSchedule") in taints
        assert all(p["metadata"]["resourceVersion"] for p in taint_patches), "taint patches are guarded"
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
