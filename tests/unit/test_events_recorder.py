"""The event recorder: Event fields, aggregation into count/lastTimestamp, bounds, retries."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Any

import httpx
import orjson
import pytest
from kubernetes.client import V1Node, V1ObjectMeta, V1ObjectReference, V1Pod, V1Scale

from machinery.api.kinds import EVENTS
from machinery.client.clock import FakeClock
from machinery.events import NORMAL, WARNING, WORKERS, EventBroadcaster, reference_to
from tests.unit.test_client_fakeapi import FakeApi


def web_pod() -> V1Pod:
    return V1Pod(metadata=V1ObjectMeta(name="web-1", namespace="prod", uid="pod-uid", resource_version="7"))


async def settle() -> None:
    for _ in range(60):
        await asyncio.sleep(0)


class Env:
    def __init__(self, **options: Any) -> None:
        self.api = FakeApi()
        self.clock = FakeClock()
        self.client = self.api.client()
        # The recorder's own retries are under test, not the client's (which honour Retry-After first).
        self.client.max_retries = 0
        self.broadcaster = EventBroadcaster(self.client, clock=self.clock, **options)
        self.recorder = self.broadcaster.recorder("default-scheduler")
        self.task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self.task = asyncio.create_task(self.broadcaster.run())

    def events(self) -> list[dict[str, Any]]:
        return self.api.of(EVENTS)

    def writes(self) -> list[str]:
        return [r.method for r in self.api.requests]


@pytest.fixture
async def env() -> AsyncGenerator[Env, None]:
    e = Env()
    yield e
    if e.task is not None:
        e.task.cancel()
        await asyncio.gather(e.task, return_exceptions=True)
    await e.client.aclose()


async def test_event_is_written_with_kubernetes_fields(env: Env) -> None:
    env.start()
    env.recorder.event(web_pod(), NORMAL, "Scheduled", "Successfully assigned prod/web-1 to node-2")
    await settle()
    [event] = env.events()
    assert event["metadata"]["namespace"] == "prod"
    assert event["metadata"]["name"].startswith("web-1.")
    int(event["metadata"]["name"].split(".", 1)[1], 16)  # unix nanoseconds in hex
    assert event["involvedObject"] == {"kind": "Pod", "apiVersion": "v1", "name": "web-1", "namespace": "prod",
                                       "uid": "pod-uid", "resourceVersion": "7"}
    assert (event["type"], event["reason"], event["count"]) == ("Normal", "Scheduled", 1)
    assert event["message"] == "Successfully assigned prod/web-1 to node-2"
    assert event["source"] == {"component": "default-scheduler"}
    assert event["reportingComponent"] == "default-scheduler"
    assert event["firstTimestamp"] == event["lastTimestamp"]
    assert event["firstTimestamp"].endswith("Z")


async def test_a_repeated_event_increments_count_instead_of_writing_a_new_object(env: Env) -> None:
    env.start()
    env.recorder.event(web_pod(), WARNING, "FailedScheduling", "0/3 nodes are available")
    await settle()
    env.recorder.event(web_pod(), WARNING, "FailedScheduling", "0/3 nodes are available")
    await settle()
    [event] = env.events()
    assert event["count"] == 2
    patch = env.api.requests[-1]
    assert patch.method == "PATCH"
    assert patch.headers["Content-Type"] == "application/strategic-merge-patch+json"
    assert patch.url.path == f"/api/v1/namespaces/prod/events/{event['metadata']['name']}"
    assert set(orjson.loads(patch.content)) == {"count", "lastTimestamp", "message"}


async def test_repeats_before_the_first_write_fold_into_one_create(env: Env) -> None:
    for _ in range(5):
        env.recorder.event(web_pod(), NORMAL, "Pulled", "image pulled")
    env.start()
    await settle()
    [event] = env.events()
    assert event["count"] == 5
    assert env.writes() == ["POST"]


@pytest.mark.parametrize("change", [
    pytest.param({"reason": "Other"}, id="reason"),
    pytest.param({"message": "different"}, id="message"),
    pytest.param({"type": WARNING}, id="type"),
])
async def test_events_differing_in_key_fields_are_separate(env: Env, change: dict[str, str]) -> None:
    env.start()
    base = {"type": NORMAL, "reason": "Pulled", "message": "image pulled"}
    env.recorder.event(web_pod(), **base)  # type: ignore[arg-type]
    env.recorder.event(web_pod(), **{**base, **change})  # type: ignore[arg-type]
    await settle()
    assert len(env.events()) == 2


async def test_another_source_is_another_event(env: Env) -> None:
    env.start()
    env.broadcaster.recorder("kubelet", host="node-1").event(web_pod(), NORMAL, "Pulled", "image pulled")
    env.recorder.event(web_pod(), NORMAL, "Pulled", "image pulled")
    await settle()
    assert sorted(e["source"].get("host", "") for e in env.events()) == ["", "node-1"]


async def test_cluster_scoped_objects_get_events_in_default(env: Env) -> None:
    env.start()
    env.recorder.event(V1Node(metadata=V1ObjectMeta(name="node-1", uid="n-uid")), NORMAL, "RegisteredNode", "hi")
    await settle()
    [event] = env.events()
    assert event["metadata"]["namespace"] == "default"
    assert "namespace" not in event["involvedObject"]
    assert event["involvedObject"]["kind"] == "Node"


async def test_expired_event_is_recreated_with_the_running_count(env: Env) -> None:
    env.start()
    env.recorder.event(web_pod(), NORMAL, "Pulled", "image pulled")
    await settle()
    [first] = env.events()
    env.api.objects.clear()  # the Event's TTL ran out
    env.recorder.event(web_pod(), NORMAL, "Pulled", "image pulled")
    await settle()
    [again] = env.events()
    assert again["metadata"]["name"] == first["metadata"]["name"]
    assert again["count"] == 2
    assert env.writes() == ["POST", "PATCH", "POST"]


async def test_full_table_drops_and_counts_without_blocking(env: Env) -> None:
    small = Env(max_pending=2)
    for i in range(3):
        small.recorder.event(web_pod(), NORMAL, "R", f"message {i}")
    small.recorder.event(web_pod(), NORMAL, "R", "message 0")  # a repeat still aggregates
    assert small.broadcaster.dropped == 1
    small.start()
    await settle()
    assert sorted((e["message"], e["count"]) for e in small.events()) == [("message 0", 2), ("message 1", 1)]
    small.task.cancel()
    await asyncio.gather(small.task, return_exceptions=True)
    await small.client.aclose()


async def test_rejected_event_is_dropped_not_retried(env: Env) -> None:
    def reject(request: httpx.Request) -> httpx.Response:
        return httpx.Response(422, json={"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                         "reason": "Invalid", "code": 422, "message": "Event is invalid"})

    env.api.hooks.append(reject)
    env.start()
    env.recorder.event(web_pod(), NORMAL, "R", "m")
    await settle()
    env.clock.advance(60)
    await settle()
    assert env.writes() == ["POST"]
    assert env.broadcaster.dropped == 1


async def test_unreachable_server_is_retried_with_backoff(env: Env) -> None:
    failures = [True, True]

    def flaky(request: httpx.Request) -> httpx.Response | None:
        if failures:
            failures.pop()
            raise httpx.ConnectError("connection refused", request=request)
        return None

    env.api.hooks.append(flaky)
    env.start()
    env.recorder.event(web_pod(), NORMAL, "R", "m")
    await settle()
    assert env.events() == []
    env.clock.advance(0.5)
    await settle()
    assert env.events() == [], "the second try waits twice as long"
    env.clock.advance(1.0)
    await settle()
    [event] = env.events()
    assert event["count"] == 1


@pytest.mark.parametrize(("code", "reason"), [
    pytest.param(503, "ServiceUnavailable", id="etcd-down"),
    pytest.param(504, "Timeout", id="etcd-timeout"),
    pytest.param(429, "TooManyRequests", id="overloaded"),
])
async def test_an_unavailable_server_is_retried_not_dropped(env: Env, code: int, reason: str) -> None:
    failures = [True, True, True]

    def unavailable(request: httpx.Request) -> httpx.Response | None:
        if failures:
            failures.pop()
            return httpx.Response(code, headers={"Retry-After": "1"}, json={
                "kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": reason, "code": code,
                "message": "etcd is unavailable: etcd is unavailable: failed to connect"})
        return None

    env.api.hooks.append(unavailable)
    env.start()
    env.recorder.event(web_pod(), NORMAL, "Started", "Started container c")
    for _ in range(6):
        await settle()
        env.clock.advance(10)
    await settle()
    [event] = env.events()
    assert event["reason"] == "Started"
    assert env.broadcaster.dropped == 0
    assert env.writes() == ["POST"] * 4


async def test_unreachable_server_gives_up_after_max_tries() -> None:
    env = Env(max_tries=3)

    def down(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    env.api.hooks.append(down)
    env.start()
    env.recorder.event(web_pod(), NORMAL, "R", "m")
    for _ in range(10):
        await settle()
        env.clock.advance(20)
    assert len(env.api.requests) == 3
    assert env.broadcaster.dropped == 1
    env.task.cancel()
    await asyncio.gather(env.task, return_exceptions=True)
    await env.client.aclose()


def test_reference_to_objects_and_references() -> None:
    ref = reference_to(web_pod())
    assert (ref.kind, ref.api_version, ref.namespace, ref.name, ref.uid) == ("Pod", "v1", "prod", "web-1", "pod-uid")
    given = V1ObjectReference(kind="Pod", name="x", namespace="y")
    assert reference_to(given) is given
    with pytest.raises(ValueError, match="not a kind kubesim serves"):
        # A Scale is only ever a subresource's body, never an object of its own.
        reference_to(V1Scale(metadata=V1ObjectMeta(name="b")))


async def test_an_object_that_cannot_be_referenced_is_logged_not_raised(
        env: Env, caplog: pytest.LogCaptureFixture) -> None:
    env.recorder.event(V1Pod(metadata=V1ObjectMeta(namespace="x")), NORMAL, "R", "m")
    assert "will not report event" in caplog.text
    assert env.broadcaster._pending == {}


async def test_similar_events_are_combined_after_ten_messages(env: Env) -> None:
    env.start()
    for i in range(12):
        env.recorder.event(web_pod(), WARNING, "FailedScheduling", f"0/{i} nodes are available")
        await settle()
    events = env.events()
    # Nine Events of their own, then one combined Event that the later ones count on.
    assert len(events) == 10
    combined = [e for e in events if e["message"].startswith("(combined from similar events): ")]
    assert len(combined) == 1
    assert combined[0]["count"] == 3 and combined[0]["message"].endswith("0/11 nodes are available")


async def test_the_spam_filter_keeps_25_events_per_object_and_source(env: Env) -> None:
    env.start()
    for i in range(30):
        env.recorder.event(web_pod(), NORMAL, f"Reason{i}", "same message")
    await settle()
    assert len(env.events()) == 25
    assert (env.broadcaster.filtered, env.broadcaster.dropped) == (5, 0)
    # Another source has its own bucket; tokens come back at one per five minutes.
    env.broadcaster.recorder("kubelet", "node-1").event(web_pod(), NORMAL, "Pulled", "pulled")
    env.clock.advance(300)
    env.recorder.event(web_pod(), NORMAL, "Late", "after five minutes")
    await settle()
    assert len(env.events()) == 27


async def test_each_source_holds_its_own_thousand_pending_events() -> None:
    small = Env(max_pending=100, max_pending_per_source=3)
    for i in range(5):
        small.recorder.event(V1Pod(metadata=V1ObjectMeta(name=f"p{i}", namespace="prod")), NORMAL, "A", "a")
    # The first source is full, but another one still has room.
    small.broadcaster.recorder("kubelet", "node-1").event(web_pod(), NORMAL, "Pulled", "pulled")
    assert small.broadcaster.dropped == 2
    small.start()
    await settle()
    assert len(small.events()) == 4
    assert small.task is not None
    small.task.cancel()
    await asyncio.gather(small.task, return_exceptions=True)
    await small.client.aclose()


async def test_events_of_many_sources_are_written_concurrently(env: Env) -> None:
    """A kubelet_sim of many nodes writes their Events side by side, as that many kubelets would."""
    in_flight = most = 0
    gate = asyncio.Event()
    create = env.client.create

    async def slow_create(*args: Any, **kwargs: Any) -> Any:
        nonlocal in_flight, most
        in_flight += 1
        most = max(most, in_flight)
        try:
            await gate.wait()
            return await create(*args, **kwargs)
        finally:
            in_flight -= 1

    env.client.create = slow_create  # type: ignore[method-assign]
    for i in range(WORKERS + 10):
        pod = V1Pod(metadata=V1ObjectMeta(name=f"web-{i}", namespace="prod", uid=f"uid-{i}"))
        env.broadcaster.recorder("kubelet", f"node-{i}").event(pod, NORMAL, "Started", "Started container c")
    env.start()
    await settle()
    # 32 at once: at a tenth of a second per write under load, 320 Events a second (4 gave 40).
    assert most == WORKERS >= 32
    gate.set()
    await settle()
    assert len(env.events()) == WORKERS + 10


async def test_pending_events_are_counted_until_written(env: Env) -> None:
    """``kubesim_events_pending`` says how far the recorder is behind: what the bench reads at a phase's end."""
    from machinery import metrics

    before = metrics.EVENTS_PENDING._value.get()
    for i in range(3):
        env.recorder.event(V1Pod(metadata=V1ObjectMeta(name=f"web-{i}", namespace="prod")), NORMAL, "A", "a")
    env.recorder.event(V1Pod(metadata=V1ObjectMeta(name="web-0", namespace="prod")), NORMAL, "A", "a")
    assert metrics.EVENTS_PENDING._value.get() - before == 3
    env.start()
    await settle()
    assert len(env.events()) == 3
    assert metrics.EVENTS_PENDING._value.get() == before
