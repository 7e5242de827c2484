"""The reflector's list/watch/relist decisions, against a scripted APIServer on virtual time."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Callable

import httpx
import orjson
import pytest

from machinery.api.kinds import PODS
from machinery.client import Bookmark, Client, ClientConfig, WatchEvent
from machinery.client.clock import FakeClock
from machinery.client.objects import Transform, strip_managed_fields
from machinery.informer import Listed, Reflector

Answer = Callable[[httpx.Request], httpx.Response]


def pod(name: str, rv: str) -> dict[str, object]:
    return {"metadata": {"name": name, "namespace": "ns", "resourceVersion": rv},
            "spec": {"containers": [{"name": "c", "image": "i"}]}}


def list_answer(rv: str, *names: str) -> Answer:
    return lambda r: httpx.Response(200, json={"kind": "PodList", "metadata": {"resourceVersion": rv},
                                               "items": [pod(n, rv) for n in names]})


def watch_answer(*events: tuple[str, dict[str, object]]) -> Answer:
    body = b"".join(orjson.dumps({"type": t, "object": o}) + b"\n" for t, o in events)
    return lambda r: httpx.Response(200, content=body)


def status(code: int, reason: str) -> dict[str, object]:
    return {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code, "reason": reason,
            "message": reason}


def refused(request: httpx.Request) -> httpx.Response:
    raise httpx.ConnectError("connection refused", request=request)


class Server:
    """Answers list and watch requests from two scripts; records what was asked."""

    def __init__(self, lists: list[Answer], watches: list[Answer]) -> None:
        self.lists, self.watches = lists, watches
        self.requests: list[tuple[str, dict[str, str]]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        params = dict(request.url.params)
        kind = "watch" if params.pop("watch", None) else "list"
        self.requests.append((kind, params))
        script = self.watches if kind == "watch" else self.lists
        if not script:
            return httpx.Response(200, content=_hang())
        return script.pop(0)(request)


async def _hang() -> AsyncGenerator[bytes, None]:
    await asyncio.Event().wait()
    yield b""


async def take(server: Server, n: int, clock: FakeClock,
               transform: Transform | None = None) -> tuple[list[object], Reflector]:
    """The first ``n`` items of a reflector's stream, advancing virtual time while it waits."""
    async with Client(ClientConfig("http://api"), transport=httpx.MockTransport(server)) as client:
        reflector = Reflector(client, PODS, clock=clock, transform=transform)
        items: list[object] = []

        async def consume() -> None:
            async with contextlib.aclosing(reflector.stream()) as stream:
                async for item in stream:
                    items.append(item)
                    if len(items) == n:
                        return

        task = asyncio.create_task(consume())
        for _ in range(2000):
            if task.done():
                break
            await asyncio.sleep(0)
            clock.advance(0.5)
        assert task.done(), f"stream stalled after {items!r}; requests: {server.requests}"
        task.result()
        return items, reflector


def describe(items: list[object]) -> list[str]:
    out = []
    for item in items:
        if isinstance(item, Listed):
            out.append(f"listed@{item.resource_version}:{','.join(p.metadata.name for p in item.items)}")
        elif isinstance(item, WatchEvent):
            out.append(f"{item.type}:{item.object.metadata.name}@{item.resource_version}")
        elif isinstance(item, Bookmark):
            out.append(f"bookmark@{item.resource_version}")
    return out


async def test_lists_from_the_watch_cache_then_watches_from_the_list_version() -> None:
    server = Server([list_answer("10", "a")],
                    [watch_answer(("ADDED", pod("b", "11")), ("BOOKMARK", {"metadata": {"resourceVersion": "15"}}))])
    items, reflector = await take(server, 3, FakeClock())
    assert describe(items) == ["listed@10:a", "ADDED:b@11", "bookmark@15"]
    assert reflector.last_sync_resource_version == "15"
    (_, list_params), (_, watch_params) = server.requests[:2]
    assert list_params == {"resourceVersion": "0", "limit": "500"}
    timeout = int(watch_params.pop("timeoutSeconds"))
    assert 300 <= timeout < 600
    assert watch_params == {"resourceVersion": "10", "allowWatchBookmarks": "true"}


async def test_a_watch_that_ends_is_resumed_from_the_last_version_without_relisting() -> None:
    server = Server([list_answer("10")],
                    [watch_answer(("ADDED", pod("a", "11"))), watch_answer(("MODIFIED", pod("a", "12")))])
    items, _ = await take(server, 3, FakeClock())
    assert describe(items) == ["listed@10:", "ADDED:a@11", "MODIFIED:a@12"]
    assert [(k, p.get("resourceVersion")) for k, p in server.requests[:3]] == [
        ("list", "0"), ("watch", "10"), ("watch", "11")]


async def test_watch_410_relists_at_the_last_version_seen() -> None:
    server = Server([list_answer("10"), list_answer("20", "a")],
                    [watch_answer(("ADDED", pod("a", "11")), ("ERROR", status(410, "Expired")))])
    items, _ = await take(server, 3, FakeClock())
    assert describe(items) == ["listed@10:", "ADDED:a@11", "listed@20:a"]
    relist = [p for k, p in server.requests if k == "list"][1]
    assert relist == {"resourceVersion": "11"}, "a relist at a known version is served whole from the cache"


async def test_watch_410_before_the_stream_relists_too() -> None:
    server = Server([list_answer("10"), list_answer("20")],
                    [lambda r: httpx.Response(410, json=status(410, "Gone"))])
    items, _ = await take(server, 2, FakeClock())
    assert describe(items) == ["listed@10:", "listed@20:"]


async def test_list_410_retries_at_once_with_a_consistent_read() -> None:
    server = Server([list_answer("10"), lambda r: httpx.Response(410, json=status(410, "Expired")),
                     list_answer("30", "x")],
                    [watch_answer(("ERROR", status(410, "Expired")))])
    items, _ = await take(server, 2, FakeClock())
    assert describe(items) == ["listed@10:", "listed@30:x"]
    lists = [p for k, p in server.requests if k == "list"]
    assert lists[1:] == [{"resourceVersion": "10"}, {"resourceVersion": "", "limit": "500"}]


async def test_refused_watch_backs_off_and_resumes_without_relisting() -> None:
    clock = FakeClock()
    server = Server([list_answer("10")], [refused, refused, watch_answer(("ADDED", pod("a", "11")))])
    items, _ = await take(server, 2, clock)
    assert describe(items) == ["listed@10:", "ADDED:a@11"]
    assert [k for k, _ in server.requests] == ["list", "watch", "watch", "watch"]
    assert all(p["resourceVersion"] == "10" for k, p in server.requests if k == "watch")
    assert clock.now() >= 0.8 + 1.6, "two backoffs of at least 800 ms and 1.6 s"


async def test_refused_list_backs_off_and_lists_again() -> None:
    server = Server([refused, refused, list_answer("10", "a")], [])
    items, _ = await take(server, 1, FakeClock())
    assert describe(items) == ["listed@10:a"]
    assert [k for k, _ in server.requests[:3]] == ["list", "list", "list"]


async def test_a_broken_stream_resumes_from_the_last_event() -> None:
    def broken(request: httpx.Request) -> httpx.Response:
        async def body() -> AsyncGenerator[bytes, None]:
            yield orjson.dumps({"type": "ADDED", "object": pod("a", "11")}) + b"\n"
            raise httpx.RemoteProtocolError("peer closed connection without sending complete message body")
        return httpx.Response(200, content=body())

    server = Server([list_answer("10")], [broken, watch_answer(("MODIFIED", pod("a", "12")))])
    items, _ = await take(server, 3, FakeClock())
    assert describe(items) == ["listed@10:", "ADDED:a@11", "MODIFIED:a@12"]
    assert [p.get("resourceVersion") for k, p in server.requests if k == "watch"][:2] == ["10", "11"]


async def test_a_very_short_empty_watch_counts_as_a_failure_and_relists() -> None:
    server = Server([list_answer("10"), list_answer("12")], [watch_answer()])
    items, _ = await take(server, 2, FakeClock())
    assert describe(items) == ["listed@10:", "listed@12:"]


@pytest.mark.parametrize("bad", [
    pytest.param(lambda r: httpx.Response(500, json=status(500, "InternalError")), id="internal-error"),
    pytest.param(lambda r: httpx.Response(200, content=b"{not json\n"), id="garbage-stream"),
])
async def test_other_watch_failures_relist_after_backoff(bad: Answer) -> None:
    server = Server([list_answer("10"), list_answer("11")], [bad])
    items, _ = await take(server, 2, FakeClock())
    assert describe(items) == ["listed@10:", "listed@11:"]


@pytest.mark.parametrize("transform", [None, strip_managed_fields], ids=["as-sent", "stripped"])
async def test_a_transform_sees_every_listed_and_watched_object_before_it_is_decoded(
        transform: Transform | None) -> None:
    """kube-scheduler's and kube-controller-manager's informers drop managedFields (client-go's
    TransformStripManagedFields); here before decoding, so the model never holds them."""
    fields = [{"manager": "m", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1",
               "fieldsV1": {"f:spec": {}}}]

    def managed(name: str, rv: str) -> dict[str, object]:
        obj = pod(name, rv)
        obj["metadata"] = {**obj["metadata"], "managedFields": fields}  # type: ignore[dict-item]
        return obj

    server = Server([lambda r: httpx.Response(200, json={"kind": "PodList", "metadata": {"resourceVersion": "10"},
                                                         "items": [managed("a", "10")]})],
                    [watch_answer(("ADDED", managed("b", "11")))])
    items, _ = await take(server, 2, FakeClock(), transform)
    listed, added = items
    assert isinstance(listed, Listed) and isinstance(added, WatchEvent)
    kept = [p.metadata.managed_fields for p in (*listed.items, added.object)]
    if transform is None:
        assert all(k is not None and k[0].manager == "m" for k in kept)
    else:
        assert kept == [None, None]
