"""The scheduler's orchestration without a server: informer handlers, cycles, binding, failures, preemption.

Informer events are fed to the handlers directly; the APIServer is an
``httpx.MockTransport`` that records every request; Events are captured.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from typing import Any

import httpx
import orjson
import pytest
from kubernetes.client import V1Node, V1Pod

from machinery.api import PODS
from machinery.client import Client, ClientConfig
from machinery.informer import InformerFactory
from scheduler import explain
from scheduler.profile import default_config
from scheduler.scheduler import Scheduler
from tests.unit.test_sched_builders import node, pod


class Recorder:
    def __init__(self, events: list[tuple[str, str, str, str]], component: str) -> None:
        self._events = events
        self.component = component

    def event(self, obj: Any, type: str, reason: str, message: str) -> None:
        self._events.append((obj.metadata.name, type, reason, message))


class Events:
    """Stands in for the EventBroadcaster: records (object name, type, reason, message)."""

    def __init__(self) -> None:
        self.recorded: list[tuple[str, str, str, str]] = []

    def recorder(self, component: str, host: str = "") -> Recorder:
        return Recorder(self.recorded, component)


class Harness:
    def __init__(self, answer: Callable[[httpx.Request], httpx.Response] | None = None) -> None:
        self.requests: list[httpx.Request] = []
        self._answer = answer or default_answer
        self.client = Client(ClientConfig("http://api"), transport=httpx.MockTransport(self._handle))
        self.informers = InformerFactory(self.client)
        self.events = Events()
        self.scheduler = Scheduler(client=self.client, informers=self.informers, events=self.events,  # type: ignore[arg-type]
                                   config=default_config(), rng=random.Random(1))
        self.pods = self.informers.informer(PODS, field_selector="status.phase!=Succeeded,status.phase!=Failed")

    def _handle(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return self._answer(request)

    def add_node(self, n: V1Node) -> None:
        self.scheduler._on_node_add(n)

    def add_pod(self, p: V1Pod) -> None:
        self.pods.store.upsert(f"{p.metadata.namespace}/{p.metadata.name}", p)
        self.scheduler._on_pod_add(p)

    def update_pod(self, old: V1Pod, new: V1Pod) -> None:
        self.pods.store.upsert(f"{new.metadata.namespace}/{new.metadata.name}", new)
        self.scheduler._on_pod_update(old, new)

    async def cycle(self) -> bool:
        """Schedule the next Pod, then let its background work finish."""
        qpi = await asyncio.wait_for(self.scheduler.queue.pop(), 1)
        started = self.scheduler.schedule_one(qpi)
        await self.settle()
        return started

    async def settle(self) -> None:
        while self.scheduler._tasks:
            await asyncio.gather(*self.scheduler._tasks)

    def sent(self, method: str, path_end: str) -> list[dict[str, Any]]:
        return [orjson.loads(r.content) for r in self.requests
                if r.method == method and r.url.path.endswith(path_end)]


def default_answer(request: httpx.Request) -> httpx.Response:
    """What the APIServer answers: the Pod for a patch, a success Status for the rest."""
    if request.method == "PATCH":
        name = request.url.path.split("/")[6]
        return httpx.Response(200, json={"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}})
    return httpx.Response(201, json={"kind": "Status", "status": "Success"})


def bound(p: V1Pod, node_name: str) -> V1Pod:
    return p.model_copy(update={"spec": p.spec.model_copy(update={"node_name": node_name})})


async def test_a_scheduled_pod_is_bound_with_its_explanation() -> None:
    h = Harness()
    h.add_node(node("n1"))
    p = pod("web", cpu="1")
    h.add_pod(p)
    assert await h.cycle()
    [binding] = h.sent("POST", "/pods/web/binding")
    assert binding["metadata"]["uid"] == p.metadata.uid
    assert binding["target"] == {"apiVersion": "v1", "kind": "Node", "name": "n1"}
    assert binding["metadata"]["annotations"][explain.SELECTED_NODE] == "n1"
    assert set(binding["metadata"]["annotations"]) == {explain.FILTER_RESULT, explain.SCORE_RESULT,
                                                       explain.SELECTED_NODE}
    assert h.events.recorded == [("web", "Normal", "Scheduled", "Successfully assigned default/web to n1")]
    assert h.scheduler.cache.is_assumed(p.metadata.uid)
    h.update_pod(p, bound(p, "n1"))
    assert not h.scheduler.cache.is_assumed(p.metadata.uid)
    assert h.scheduler.cache.get("n1").req_cpu == 1000


async def test_an_unschedulable_pod_gets_its_condition_event_and_explanation() -> None:
    h = Harness()
    h.add_node(node("n1", cpu="1"))
    h.add_pod(pod("big", cpu="2"))
    assert not await h.cycle()
    message = "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: " \
              "1 Preemption is not helpful for scheduling."
    assert h.events.recorded == [("big", "Warning", "FailedScheduling", message)]
    [status] = h.sent("PATCH", "/big/status")
    [condition] = status["status"]["conditions"]
    assert (condition["type"], condition["status"], condition["reason"], condition["message"]) == (
        "PodScheduled", "False", "Unschedulable", message)
    [meta] = [body for body in h.sent("PATCH", "/big") if "metadata" in body]
    assert orjson.loads(meta["metadata"]["annotations"][explain.FILTER_RESULT])["rejected"][0]["count"] == 1
    assert h.scheduler.queue.counts()["unschedulable"] == 1
    # A bigger node may help: the Pod goes back to the queue (after its backoff).
    h.add_node(node("n2", cpu="4"))
    assert h.scheduler.queue.counts()["unschedulable"] == 0


async def test_the_same_failure_is_not_written_twice() -> None:
    h = Harness()
    h.add_node(node("n1", cpu="1"))
    p = pod("big", cpu="2")
    h.add_pod(p)
    await h.cycle()
    # The Pod as the APIServer now holds it: with the condition and the explanation.
    body = p.model_dump(by_alias=True, exclude_none=True, mode="json")
    body["status"] = {"conditions": h.sent("PATCH", "/big/status")[0]["status"]["conditions"]}
    body["metadata"]["annotations"] = next(b for b in h.sent("PATCH", "/big") if "metadata" in b)["metadata"][
        "annotations"]
    now = V1Pod.model_validate(body)
    h.update_pod(p, now)
    qpi = h.scheduler.queue.get(p.metadata.uid)
    h.scheduler.queue.delete(p.metadata.uid)
    before = len(h.requests)
    h.scheduler.schedule_one(qpi)
    await h.settle()
    assert len(h.requests) == before, "nothing changed, so nothing is written"
    assert [e[2] for e in h.events.recorded] == ["FailedScheduling", "FailedScheduling"]


@pytest.mark.parametrize(("code", "requeued"), [
    pytest.param(409, False, id="conflict-drops-the-pod"),
    pytest.param(404, False, id="not-found-drops-the-pod"),
    pytest.param(500, True, id="server-error-retries-with-backoff"),
])
async def test_failed_bindings(code: int, requeued: bool) -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/binding"):
            return httpx.Response(code, json={"kind": "Status", "status": "Failure", "code": code,
                                              "reason": {409: "Conflict", 404: "NotFound"}.get(code, "InternalError"),
                                              "message": "nope"})
        return httpx.Response(200, json={})
    h = Harness(answer)
    h.add_node(node("n1"))
    p = pod("web", cpu="1")
    h.add_pod(p)
    assert await h.cycle()
    assert not h.scheduler.cache.is_assumed(p.metadata.uid)
    assert h.scheduler.cache.get("n1").req_cpu == 0
    assert (h.scheduler.queue.counts()["backoff"] == 1) is requeued
    assert not any(e[2] == "Scheduled" for e in h.events.recorded)


async def test_updates_of_a_pod_being_bound_do_not_requeue_it() -> None:
    h = Harness()
    h.add_node(node("n1"))
    p = pod("web", cpu="1")
    h.add_pod(p)
    qpi = await h.scheduler.queue.pop()
    h.scheduler.schedule_one(qpi)
    h.update_pod(p, p.model_copy(update={"metadata": p.metadata.model_copy(update={"labels": {"x": "y"}})}))
    assert p.metadata.uid not in h.scheduler.queue
    await h.settle()


async def test_a_pod_bound_by_someone_else_leaves_the_queue() -> None:
    h = Harness()
    h.add_node(node("n1"))
    p = pod("web", cpu="1")
    h.add_pod(p)
    h.update_pod(p, bound(p, "n1"))
    assert p.metadata.uid not in h.scheduler.queue
    assert h.scheduler.cache.get("n1").req_cpu == 1000


async def test_node_heartbeats_do_not_move_unschedulable_pods() -> None:
    h = Harness()
    n1 = node("n1", cpu="1")
    h.add_node(n1)
    h.add_pod(pod("big", cpu="2"))
    await h.cycle()
    heartbeat = n1.model_copy(update={"metadata": n1.metadata.model_copy(update={"resource_version": "9"})})
    h.scheduler._on_node_update(n1, heartbeat)
    assert h.scheduler.queue.counts()["unschedulable"] == 1
    grown = node("n1", cpu="4")
    h.scheduler._on_node_update(heartbeat, grown)
    assert h.scheduler.queue.counts()["unschedulable"] == 0


async def test_pods_of_other_schedulers_are_ignored() -> None:
    h = Harness()
    h.add_node(node("n1"))
    h.add_pod(pod("mine"))
    h.add_pod(pod("theirs", schedulerName="other-scheduler"))
    assert h.scheduler.queue.counts()["active"] == 1


async def test_preemption_evicts_the_victims_and_nominates_the_node() -> None:
    h = Harness()
    h.add_node(node("n1", cpu="2"))
    victim = pod("victim", cpu="2", priority=1, node_name="n1")
    h.scheduler._on_pod_add(victim)
    h.add_pod(pod("vip", cpu="2", priority=1000))
    assert not await h.cycle()
    disruption = h.sent("PATCH", "/victim/status")[0]["status"]["conditions"][0]
    assert (disruption["type"], disruption["reason"]) == ("DisruptionTarget", "PreemptionByScheduler")
    assert [r.url.path for r in h.requests if r.method == "DELETE"] == ["/api/v1/namespaces/default/pods/victim"]
    assert ("victim", "Normal", "Preempted", "Preempted by pod uid-default-vip on node n1") in h.events.recorded
    vip_status = h.sent("PATCH", "/vip/status")[0]["status"]
    assert vip_status["nominatedNodeName"] == "n1"
    assert [p.name for p in h.scheduler.queue.nominated_pods_for_node("n1")] == ["vip"]
    # The victim's deletion moves the preemptor back, and the nominated node is tried first.
    h.scheduler._on_pod_delete(victim)
    assert h.scheduler.queue.counts()["unschedulable"] == 0
