"""Taint-based eviction: which tolerations count, when a Pod goes, and cancellation, on virtual time."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from kubernetes.client import V1Taint, V1Toleration

from controller_manager.controllers.tainteviction import (
    TaintEvictionController,
    TimedEvictions,
    matching_tolerations,
    min_toleration_seconds,
)
from machinery.api.kinds import NODES, PODS, ObjectKey
from machinery.client.clock import FakeClock
from tests.unit.test_cm_fakes import Api, FakeInformers, context, pod, settle

TAINT = V1Taint(key="dedicated", value="gpu", effect="NoExecute")
OTHER = V1Taint(key="maintenance", effect="NoExecute")


def tol(key: str | None = "dedicated", seconds: int | None = None, **fields: Any) -> V1Toleration:
    return V1Toleration(key=key, operator=fields.pop("operator", "Exists"), effect=fields.pop("effect", "NoExecute"),
                        toleration_seconds=seconds, **fields)


@pytest.mark.parametrize(("taints", "tolerations", "tolerated", "used"), [
    pytest.param([TAINT], [], False, [], id="untolerated"),
    pytest.param([TAINT], [tol("dedicated", 5)], True, [tol("dedicated", 5)], id="tolerated"),
    pytest.param([TAINT, OTHER], [tol("dedicated")], False, [], id="one-of-two"),
    pytest.param([TAINT, OTHER], [tol(None, 7), tol("dedicated", 1)], True, [tol(None, 7), tol(None, 7)],
                 id="first-match-per-taint"),
    pytest.param([TAINT], [tol("dedicated", effect="NoSchedule")], False, [], id="other-effect"),
])
def test_matching_tolerations(taints: list[V1Taint], tolerations: list[V1Toleration], tolerated: bool,
                              used: list[V1Toleration]) -> None:
    assert matching_tolerations(taints, tolerations) == (tolerated, used)


@pytest.mark.parametrize(("tolerations", "seconds"), [
    pytest.param([], 0.0, id="none-used"),
    pytest.param([tol(seconds=None)], -1.0, id="forever"),
    pytest.param([tol(seconds=30), tol(seconds=None), tol(seconds=10)], 10.0, id="shortest"),
    pytest.param([tol(seconds=30), tol(seconds=-5)], 0.0, id="negative-is-now"),
])
def test_min_toleration_seconds(tolerations: list[V1Toleration], seconds: float) -> None:
    assert min_toleration_seconds(tolerations) == seconds


def test_timed_evictions_fire_once_and_block_re_adding_until_cancelled() -> None:
    clock = FakeClock()
    fired: list[str] = []
    evictions = TimedEvictions(clock, fired.append)
    key = ObjectKey("ns/p")
    evictions.add(key, 0.0, 5.0)
    evictions.add(key, 0.0, 1.0)
    clock.advance(4.9)
    assert fired == [] and evictions.pending(key) is not None
    clock.advance(0.1)
    assert fired == ["ns/p"] and evictions.fired(key)
    evictions.add(key, 6.0, 6.0)
    clock.advance(10)
    assert fired == ["ns/p"], "an eviction done is not scheduled again"
    assert evictions.cancel(key) is False, "nothing was pending"
    evictions.add(key, 20.0, 21.0)
    assert evictions.cancel(key) is True
    clock.advance(5)
    assert fired == ["ns/p"]


def node(taints: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "uid": "uid-n1"},
            "spec": {"taints": taints}}


def bound(name: str, tolerations: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    body = pod(name, node="n1")
    body["spec"]["tolerations"] = tolerations or []
    return body


class Harness:
    def __init__(self, pods: list[dict[str, Any]]) -> None:
        self.clock = FakeClock()
        self.api = Api()
        for p in pods:
            self.api.put(PODS, p)
        self.informers = FakeInformers()
        self.controller = TaintEvictionController(context(self.api, self.informers, self.clock))
        self.informers.list(NODES, [node([])])
        self.informers.list(PODS, pods)

    def deleted(self) -> list[str]:
        return [path.rsplit("/", 1)[-1] for _, path, _ in self.api.calls("DELETE", "/pods/")]

    def taint(self, *taints: dict[str, Any]) -> None:
        self.informers.event(NODES, "MODIFIED", node(list(taints)))


async def test_pods_are_evicted_at_once_after_their_toleration_or_never() -> None:
    h = Harness([bound("intolerant"), bound("five", [{"key": "dedicated", "operator": "Exists",
                                                       "effect": "NoExecute", "tolerationSeconds": 5}]),
                 bound("forever", [{"key": "dedicated", "operator": "Exists", "effect": "NoExecute"}])])
    async with h.informers.running():
        task = asyncio.create_task(h.controller.run())
        await settle()
        h.taint({"key": "dedicated", "value": "gpu", "effect": "NoExecute"})
        await settle()
        assert h.deleted() == ["intolerant"]
        status_patch = h.api.calls("PATCH", "/pods/intolerant/status")[0][2]
        assert status_patch["status"]["conditions"][0]["reason"] == "DeletionByTaintManager"
        h.clock.advance(4.9)
        await settle()
        assert h.deleted() == ["intolerant"]
        h.clock.advance(0.1)
        await settle()
        assert h.deleted() == ["intolerant", "five"]
        h.clock.advance(1000)
        await settle()
        assert h.deleted() == ["intolerant", "five"]
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_removing_the_taint_cancels_and_a_later_taint_never_postpones() -> None:
    h = Harness([bound("p", [{"key": "dedicated", "operator": "Exists", "effect": "NoExecute",
                              "tolerationSeconds": 3},
                             {"key": "maintenance", "operator": "Exists", "effect": "NoExecute",
                              "tolerationSeconds": 60}])])
    async with h.informers.running():
        task = asyncio.create_task(h.controller.run())
        await settle()
        h.taint({"key": "dedicated", "effect": "NoExecute"})
        await settle()
        h.clock.advance(2)
        h.taint({"key": "dedicated", "effect": "NoExecute"}, {"key": "maintenance", "effect": "NoExecute"})
        await settle()
        h.clock.advance(1)
        await settle()
        assert h.deleted() == ["p"], "the 3 s deadline set first stands"

        h.taint()
        q = bound("q", [{"key": "dedicated", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 3}])
        h.api.put(PODS, q)
        h.informers.event(PODS, "ADDED", q)
        h.taint({"key": "dedicated", "effect": "NoExecute"})
        await settle()
        assert h.controller.evictions.pending(ObjectKey("ns/q")) is not None
        h.clock.advance(2)
        h.taint()
        await settle()
        assert h.controller.evictions.pending(ObjectKey("ns/q")) is None
        h.clock.advance(10)
        await settle()
        assert h.deleted() == ["p"], "the cancelled eviction never happens"
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
