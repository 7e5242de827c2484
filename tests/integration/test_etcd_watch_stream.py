"""etcd watches keep being read while the APIServer's event loop is busy, on both transports.

Read on the event loop, one etcd response cost a turn of the loop; a loop busy serving
writes took in a few hundred responses a second while etcd committed thousands, and the
watch caches (every watcher with them) fell tens of seconds behind. Watches are read by
threads (one per watch on :class:`WatchCalls`, one for all on the multiplexed
:class:`WatchStream`), and the loop takes everything that arrived in one turn.
"""

from __future__ import annotations

import asyncio
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from apiserver.storage.etcd import (
    Compacted,
    EtcdStorage,
    Unavailable,
    Watch,
    WatchBatch,
    WatchCalls,
    WatchStream,
    _HandOver,
)
from tests import harness

pytestmark = pytest.mark.integration

WRITES = 200


@pytest.fixture(scope="module")
def etcd_url() -> Iterator[str]:
    with harness.etcd_alone("kubesim-watchstream-") as url:
        yield url


@pytest.fixture(params=["calls", "stream"])
def transport(request: pytest.FixtureRequest) -> str:
    """Each watch on a call of its own (for watches sent many events), or every watch on one stream."""
    return str(request.param)


def watch_on(storage: EtcdStorage, transport: str, prefix: str, start_revision: int) -> Watch:
    watch = storage.watch(prefix, start_revision, own_call=transport == "calls")
    assert isinstance(watch._stream, WatchCalls if transport == "calls" else WatchStream)
    return watch


async def next_events(watch: Watch) -> WatchBatch:
    """The watch's next batch of events, past any progress notification, within 5 s."""
    async with asyncio.timeout(5):
        async for batch in watch:
            if batch.events:
                return batch
    raise AssertionError("the watch ended without events")


def _watch_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("etcd-watch")]


def _write_from_another_thread(url: str, prefix: str) -> None:
    """``WRITES`` creates, one revision each, by a client with a loop of its own."""
    async def write() -> None:
        storage = EtcdStorage([url])
        await storage.connect()
        try:
            for i in range(WRITES):
                await storage.create(f"{prefix}{i}", b"x")
        finally:
            await storage.close()
    asyncio.run(write())


def test_what_arrived_while_the_loop_was_busy_is_taken_in_one_turn(etcd_url: str, transport: str) -> None:
    async def scenario() -> None:
        storage = EtcdStorage([etcd_url])
        await storage.connect()
        try:
            prefix = f"/busy-loop-{transport}/"
            watch = watch_on(storage, transport, prefix, await storage.status_revision() + 1)
            events: list[int] = []

            async def consume() -> None:
                async for batch in watch:
                    events.extend(ev.kv.mod_revision for ev in batch.events)

            consumer = asyncio.create_task(consume())
            await asyncio.sleep(0.5)  # the watch is created
            # The loop is blocked (as by a burst of requests) while etcd commits every write and
            # sends them; then it gets three turns.
            writer = threading.Thread(target=_write_from_another_thread, args=(etcd_url, prefix))
            writer.start()
            writer.join()  # the loop stays blocked meanwhile
            time.sleep(0.5)  # noqa: ASYNC251 - the point: the loop is blocked while the thread reads
            for _ in range(3):
                await asyncio.sleep(0)
            assert len(events) == WRITES, f"{len(events)} of {WRITES} events after three turns of the loop"
            assert events == sorted(events) and len(set(events)) == WRITES
            watch.close()
            await asyncio.wait_for(consumer, 5)
        finally:
            await storage.close()
    asyncio.run(scenario())


def test_a_stream_that_breaks_ends_its_watches_and_the_next_watch_opens_a_new_one(etcd_url: str) -> None:
    async def scenario() -> None:
        storage = EtcdStorage([etcd_url])
        await storage.connect()
        try:
            first = storage.watch("/broken/", await storage.status_revision() + 1)
            await asyncio.sleep(0.3)
            stream = storage._watch_stream
            assert stream is not None
            stream.close()  # as a broken connection ends the call
            with pytest.raises(Exception, match="etcd watch stream"):
                async with asyncio.timeout(5):
                    async for _ in first:
                        pass
            assert stream.broken
            second = storage.watch("/broken/", await storage.status_revision() + 1)
            assert storage._watch_stream is not stream
            await storage.create("/broken/a", b"x")
            async with asyncio.timeout(5):
                batch = await anext(aiter(second))
            assert [ev.kv.key for ev in batch.events] == ["/broken/a"]
            second.close()
        finally:
            await storage.close()
    asyncio.run(scenario())


def test_the_progress_notifications_of_idle_watches_wake_the_loop_once_per_burst(
        etcd_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # etcd sends every idle watch on a stream a progress notification at each tick (250 ms), in a
    # burst: an idle APIServer's 50 watch caches woke its loop ~150 times a second for them. Events
    # stay prompt. (Each call of its own ticks at its own phase: those are for busy watches.)
    transport = "stream"
    takes = 0
    take = _HandOver._take

    def counting(stream: _HandOver) -> None:
        nonlocal takes
        takes += 1
        take(stream)
    monkeypatch.setattr(_HandOver, "_take", counting)

    async def scenario() -> None:
        storage = EtcdStorage([etcd_url])
        await storage.connect()
        try:
            start = await storage.status_revision() + 1
            watches = [watch_on(storage, transport, f"/idle-{transport}-{i}/", start) for i in range(30)]
            progress: list[int] = []
            events: list[str] = []

            async def consume(watch: Watch) -> None:
                async for batch in watch:
                    if batch.events:
                        events.extend(ev.kv.key for ev in batch.events)
                    else:
                        progress.append(batch.revision)

            consumers = [asyncio.create_task(consume(w)) for w in watches]
            await asyncio.sleep(0.5)  # the watches are created
            nonlocal takes
            takes, progress[:] = 0, []
            await asyncio.sleep(2.5)
            notified, woken = len(progress), takes
            assert notified >= 30 * 4, f"{notified} progress notifications to 30 idle watches in 2.5 s"
            assert woken <= notified / 6, f"{woken} loop wake-ups for {notified} progress notifications"
            # An event is taken at once, after the notifications that came before it.
            await storage.create(f"/idle-{transport}-7/a", b"x")
            async with asyncio.timeout(2):
                while not events:
                    await asyncio.sleep(0.001)
            assert events == [f"/idle-{transport}-7/a"]
            for w in watches:
                w.close()
            await asyncio.wait_for(asyncio.gather(*consumers), 5)
        finally:
            await storage.close()
    asyncio.run(scenario())


def test_a_watch_on_a_call_of_its_own_ends_with_its_thread_and_alone(etcd_url: str) -> None:
    """Closing a watch cancels its call and its reading thread ends (a cache relists many times in a
    process's life); the other watches go on."""
    async def scenario() -> None:
        storage = EtcdStorage([etcd_url])
        await storage.connect()
        try:
            before = len(_watch_threads())
            start = await storage.status_revision() + 1
            watches = [storage.watch(f"/own-call-{i}/", start, own_call=True) for i in range(20)]
            await asyncio.sleep(0.3)
            assert len(_watch_threads()) == before + 20
            for w in watches[1:]:
                w.close()
            async with asyncio.timeout(5):
                while len(_watch_threads()) > before + 1:
                    await asyncio.sleep(0.05)
            await storage.create("/own-call-0/a", b"x")
            assert [ev.kv.key for ev in (await next_events(watches[0])).events] == ["/own-call-0/a"]
            watches[0].close()
        finally:
            await storage.close()
    asyncio.run(scenario())


def test_a_watch_on_a_call_of_its_own_ends_when_etcd_goes_and_the_next_one_works_when_it_is_back() -> None:
    async def scenario() -> None:
        with tempfile.TemporaryDirectory(prefix="kubesim-watchcall-") as tmp:
            etcd = harness.start_etcd(Path(tmp))
            storage = EtcdStorage([etcd.url], timeout=2.0)
            try:
                await storage.connect()
                watch = storage.watch("/gone/", await storage.status_revision() + 1, own_call=True)
                await asyncio.sleep(0.3)
                etcd.process.stop()
                with pytest.raises(Unavailable, match="etcd watch broke: UNAVAILABLE"):
                    async with asyncio.timeout(10):
                        async for _ in watch:
                            pass
                etcd.process.start()
                etcd.process.wait_ready(30)
                again = storage.watch("/gone/", await storage.status_revision() + 1, own_call=True)
                await storage.create("/gone/a", b"x")
                assert [ev.kv.key for ev in (await next_events(again)).events] == ["/gone/a"]
                again.close()
            finally:
                await storage.close()
                etcd.process.stop()
    asyncio.run(scenario())


def test_a_watch_on_a_call_of_its_own_from_a_compacted_revision_is_told_so(etcd_url: str) -> None:
    async def scenario() -> None:
        storage = EtcdStorage([etcd_url])
        await storage.connect()
        try:
            first = await storage.create("/compacted-call/a", b"x")
            await storage.create("/compacted-call/b", b"x")
            latest = await storage.status_revision()
            await storage.compact(latest)
            watch = storage.watch("/compacted-call/", first, own_call=True)
            with pytest.raises(Compacted):
                async with asyncio.timeout(5):
                    async for _ in watch:
                        pass
        finally:
            await storage.close()
    asyncio.run(scenario())
