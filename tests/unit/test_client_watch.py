"""Watch-stream decoding: chunk re-cutting, typed events, bookmarks, ERROR events, unknown fields."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator

import httpx
import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from kubernetes.client import V1Pod

from machinery.api.kinds import EVENTS, PODS
from machinery.client import Bookmark, Client, ClientConfig, Expired, UnexpectedResponse, WatchEvent
from machinery.client.watch import decode_event, split_lines


def pod(name: str, rv: str, **spec: object) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "ns", "resourceVersion": rv},
            "spec": {"containers": [{"name": "c", "image": "i"}], **spec}}


def line(etype: str, obj: dict[str, object]) -> bytes:
    return orjson.dumps({"type": etype, "object": obj}) + b"\n"


async def chunks_of(data: bytes, cuts: list[int]) -> AsyncIterator[bytes]:
    last = 0
    for cut in sorted(set(cuts)):
        if 0 < cut < len(data):
            yield data[last:cut]
            last = cut
    yield data[last:]


async def collect(agen: AsyncIterator[bytes]) -> list[bytes]:
    return [x async for x in agen]


@given(st.lists(st.integers(min_value=0, max_value=400), max_size=30))
async def test_split_lines_is_independent_of_chunking(cuts: list[int]) -> None:
    stream = line("ADDED", pod("a", "1")) + b"\n" + line("MODIFIED", pod("b", "2")) + line("DELETED", pod("c", "3"))
    lines = await collect(split_lines(chunks_of(stream, cuts)))
    assert [orjson.loads(x)["object"]["metadata"]["name"] for x in lines] == ["a", "b", "c"]


async def test_split_lines_keeps_a_trailing_line_without_newline() -> None:
    assert await collect(split_lines(chunks_of(b'{"a":1}\n{"b":2}', [3]))) == [b'{"a":1}', b'{"b":2}']


@pytest.mark.parametrize(("etype", "expected_type"), [
    pytest.param("ADDED", "ADDED", id="added"),
    pytest.param("MODIFIED", "MODIFIED", id="modified"),
    pytest.param("DELETED", "DELETED", id="deleted"),
])
def test_decode_object_events(etype: str, expected_type: str) -> None:
    event = decode_event(V1Pod, line(etype, pod("web", "42", nodeName="n1")))
    assert isinstance(event, WatchEvent)
    assert event.type == expected_type
    assert isinstance(event.object, V1Pod)
    assert event.object.spec.node_name == "n1"
    assert event.resource_version == "42"


def test_decode_bookmark_needs_no_valid_object() -> None:
    # An Event's model requires involvedObject, which a bookmark's shell lacks.
    bookmark = {"kind": "Event", "apiVersion": "v1",
                "metadata": {"resourceVersion": "77", "annotations": {"k8s.io/initial-events-end": "true"}}}
    assert decode_event(EVENTS.model, line("BOOKMARK", bookmark)) == Bookmark("77")


def test_decode_error_event_raises_its_status() -> None:
    status = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 410, "reason": "Expired",
              "message": "too old resource version: 5 (100)"}
    with pytest.raises(Expired, match="too old resource version"):
        decode_event(V1Pod, line("ERROR", status))


@pytest.mark.parametrize("raw", [
    pytest.param(b"not json", id="not-json"),
    pytest.param(b"[1, 2]", id="not-an-object"),
    pytest.param(b'{"type": "ADDED"}', id="no-object"),
    pytest.param(b'{"type": "SURPRISE", "object": {}}', id="unknown-type"),
    pytest.param(b'{"type": "ERROR", "object": {"code": "x"}}', id="error-without-status"),
    pytest.param(b'{"type": "ADDED", "object": {"metadata": {"name": 5}}}', id="invalid-object"),
])
def test_decode_rejects_garbage_clearly(raw: bytes) -> None:
    with pytest.raises(UnexpectedResponse):
        decode_event(V1Pod, raw)


def test_unknown_fields_are_dropped_and_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    obj = pod("web", "1")
    obj["metadata"]["futureField"] = "x"  # type: ignore[index]
    obj["spec"]["containers"][0]["newKnob"] = True  # type: ignore[index]
    with caplog.at_level(logging.WARNING):
        first = decode_event(V1Pod, line("ADDED", obj))
        second = decode_event(V1Pod, line("ADDED", obj))
    assert isinstance(first, WatchEvent) and isinstance(second, WatchEvent)
    assert first.object.metadata.name == "web"
    messages = [r.getMessage() for r in caplog.records]
    assert sum("metadata.futureField" in m for m in messages) == 1
    assert sum("spec.containers.*.newKnob" in m for m in messages) == 1


async def test_client_watch_streams_typed_events_from_chunks() -> None:
    body = (line("ADDED", pod("a", "11")) + line("BOOKMARK", {"kind": "Pod", "metadata": {"resourceVersion": "12"}})
            + line("MODIFIED", pod("a", "13")))
    seen_requests: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen_requests.append(request)
        return httpx.Response(200, content=chunks_of(body, [5, 50, 51, 200]))

    async with (Client(ClientConfig("http://api"), transport=httpx.MockTransport(handler)) as client,
                contextlib.aclosing(client.watch(PODS, namespace="ns", resource_version="10",
                                                 label_selector="app=web", timeout_seconds=300)) as events):
        got = [e async for e in events]
    assert [(type(e).__name__, e.resource_version) for e in got] == [
        ("WatchEvent", "11"), ("Bookmark", "12"), ("WatchEvent", "13")]
    request = seen_requests[0]
    assert request.url.path == "/api/v1/namespaces/ns/pods"
    assert dict(request.url.params) == {"watch": "true", "resourceVersion": "10", "labelSelector": "app=web",
                                        "allowWatchBookmarks": "true", "timeoutSeconds": "300"}


async def test_client_watch_raises_410_sent_before_the_stream() -> None:
    status = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 410, "reason": "Expired",
              "message": "too old resource version: 1 (50)"}

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(410, json=status)

    async with Client(ClientConfig("http://api"), transport=httpx.MockTransport(handler)) as client:
        with pytest.raises(Expired):
            async with contextlib.aclosing(client.watch(PODS, resource_version="1")) as events:
                async for _ in events:
                    pass
