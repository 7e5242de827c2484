"""The bench's count of a phase's writes, replayed from a real etcd's history (kubesim/bench/measure.py)."""

from __future__ import annotations

import asyncio

import pytest
from aetcd import Client

from kubesim.bench import measure
from tests import harness

pytestmark = pytest.mark.integration


async def _write(url: str) -> tuple[int, int]:
    host, port = url.removeprefix("http://").split(":")
    async with Client(host=host, port=int(port)) as client:
        first = (await client.put(b"/registry/pods/ns/a", b"1")).header.revision
        await client.put(b"/registry/events/ns/a.1", b"1")
        await client.put(b"/registry/leases/kube-node-lease/n1", b"1")
        last = (await client.put(b"/registry/pods/ns/a", b"2")).header.revision
    return first - 1, last


def test_writes_are_counted_by_resource_in_the_namespace() -> None:
    with harness.etcd_alone() as url:
        after, upto = asyncio.run(_write(url))
        writes = asyncio.run(measure.count_writes(url, after, upto, "ns"))
    assert (writes.total, dict(writes.own or {}), writes.background) == (4, {"pods": 2, "events": 1}, 1)
    assert writes.breakdown(1) == "pods 2.00 + events 1.00"


def test_a_replay_past_its_time_leaves_the_writes_uncounted_instead_of_failing(monkeypatch: pytest.MonkeyPatch) -> None:
    """A long phase on 5,000 nodes is hundreds of thousands of revisions: its other figures must stand."""
    monkeypatch.setattr(measure, "_REPLAY_TIMEOUT", 0.0)
    with harness.etcd_alone() as url:
        after, upto = asyncio.run(_write(url))
        writes = asyncio.run(measure.count_writes(url, after, upto, "ns"))
    assert writes.own is None and writes.per_pod(10) is None
    assert writes.breakdown(10) == "not counted: replaying the history took over 0 s: 4 writes in all"
