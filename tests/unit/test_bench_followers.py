"""The bench's watch followers: a watch the APIServer ends stops the wait instead of running out its timeout."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from kubesim.bench import measure
from kubesim.bench.measure import PodTimes


def test_a_dropped_watch_ends_the_wait_with_its_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    async def dropped(_url: str, _path: str, _rv: str) -> AsyncIterator[tuple[float, dict[str, Any]]]:
        yield 1.0, {"type": "ADDED", "object": {"metadata": {"name": "p"}, "spec": {}, "status": {}}}
        raise RuntimeError("watch of pods ended: watch stream fell too far behind; resourceVersion expired")
    monkeypatch.setattr(measure, "_watch", dropped)

    async def scenario() -> None:
        pods = PodTimes()
        follower = asyncio.create_task(pods.follow("https://127.0.0.1:1", "density", "1"))
        with pytest.raises(RuntimeError, match="the bench's watch ended: .*fell too far behind"):
            await pods.until(lambda: len(pods.deleted) >= 1, timeout=30, alive=lambda: None)
        assert pods.seen.keys() == {"p"}
        await asyncio.gather(follower, return_exceptions=True)
    asyncio.run(asyncio.wait_for(scenario(), 10))


def test_a_watch_that_fell_too_far_behind_is_replaced_by_a_list(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 410 ends the stream, as kube-apiserver ends a watcher too far behind: a list says what was missed."""
    calls: list[str] = []

    async def watch(_url: str, _path: str, rv: str) -> AsyncIterator[tuple[float, dict[str, Any]]]:
        calls.append(rv)
        if rv == "1":
            for name in ("a", "b"):
                yield 1.0, {"type": "ADDED", "object": {"metadata": {"name": name}, "spec": {"nodeName": "n"},
                                                        "status": {"phase": "Running"}}}
            raise measure.WatchExpired("watch of pods expired: watch stream fell too far behind")
        yield 3.0, {"type": "DELETED", "object": {"metadata": {"name": "b"}, "spec": {}, "status": {}}}
        await asyncio.Event().wait()

    async def listed(_pool: Any, method: str, path: str, body: Any = None) -> tuple[bytes, float]:
        assert (method, path) == ("GET", "/api/v1/namespaces/density/pods")
        listing = {"metadata": {"resourceVersion": "9"},
                   "items": [{"metadata": {"name": "b"}, "spec": {}, "status": {"phase": "Running"}}]}
        return json.dumps(listing).encode(), 0.001
    monkeypatch.setattr(measure, "_watch", watch)
    monkeypatch.setattr(measure.Pool, "call", listed)

    async def scenario() -> None:
        pods = PodTimes()
        follower = asyncio.create_task(pods.follow("https://127.0.0.1:1", "density", "1"))
        await pods.until(lambda: len(pods.deleted) >= 2, timeout=5, alive=lambda: None)
        assert calls == ["1", "9"] and pods.relists == 1 and pods.ended is None
        assert set(pods.deleted) == {"a", "b"} and pods.deleted["b"] == 3.0
        follower.cancel()
        await asyncio.gather(follower, return_exceptions=True)
    asyncio.run(asyncio.wait_for(scenario(), 10))


def test_a_watch_silent_past_the_stall_is_checked_by_a_list(monkeypatch: pytest.MonkeyPatch) -> None:
    """A DELETED that never arrives is found by a list and counted in ``missed``, instead of a wait without end."""
    async def watch(_url: str, _path: str, _rv: str) -> AsyncIterator[tuple[float, dict[str, Any]]]:
        for name in ("a", "b"):
            yield 1.0, {"type": "ADDED", "object": {"metadata": {"name": name}, "spec": {}, "status": {}}}
        yield 2.0, {"type": "DELETED", "object": {"metadata": {"name": "a"}, "spec": {}, "status": {}}}
        await asyncio.Event().wait()  # b's DELETED is lost

    async def listed(_pool: Any, method: str, path: str, body: Any = None) -> tuple[bytes, float]:
        return json.dumps({"metadata": {"resourceVersion": "9"}, "items": []}).encode(), 0.001
    monkeypatch.setattr(measure, "_watch", watch)
    monkeypatch.setattr(measure.Pool, "call", listed)

    async def scenario() -> None:
        pods = PodTimes()
        follower = asyncio.create_task(pods.follow("https://127.0.0.1:1", "density", "1"))
        await pods.until(lambda: len(pods.deleted) >= 2, timeout=8, alive=lambda: None, stall=1.0)
        assert set(pods.deleted) == {"a", "b"} and pods.missed == 1 and pods.deleted["a"] == 2.0
        follower.cancel()
        await asyncio.gather(follower, return_exceptions=True)
    asyncio.run(asyncio.wait_for(scenario(), 10))
