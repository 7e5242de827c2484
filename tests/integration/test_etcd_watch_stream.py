"""The etcd watch stream keeps reading while the APIServer's event loop is busy.

Read on the event loop, one etcd response cost a turn of the loop; a loop busy serving
writes took in a few hundred responses a second while etcd committed thousands, and the
watch caches (every watcher with them) fell tens of seconds behind. The stream's reader
runs in its own thread, and the loop takes everything that arrived in one turn.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator

import pytest

from apiserver.storage.etcd import EtcdStorage, Watch, WatchStream
from tests import harness

pytestmark = pytest.mark.integration

WRITES = 200


@pytest.fixture(scope="module")
def etcd_url() -> Iterator[str]:
    with harness.etcd_alone("kubesim-watchstream-") as url:
        yield url


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


def test_what_arrived_while_the_loop_was_busy_is_taken_in_one_turn(etcd_url: str) -> None:
    async def scenario() -> None:
        storage = EtcdStorage([etcd_url])
        await storage.connect()
        try:
            prefix = "/busy-loop/"
            watch = storage.watch(prefix, await storage.status_revision() + 1)
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
    # etcd sends every idle watch a progress notification at each tick (250 ms), in a burst: an idle
    # APIServer's 50 watch caches woke its loop ~150 times a second for them. Events stay prompt.
    takes = 0
    take = WatchStream._take

    def counting(stream: WatchStream) -> None:
        nonlocal takes
        takes += 1
        take(stream)
    monkeypatch.setattr(WatchStream, "_take", counting)

    async def scenario() -> None:
        storage = EtcdStorage([etcd_url])
        await storage.connect()
        try:
            start = await storage.status_revision() + 1
            watches = [storage.watch(f"/idle-{i}/", start) for i in range(30)]
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
            await storage.create("/idle-7/a", b"x")
            async with asyncio.timeout(2):
                while not events:
                    await asyncio.sleep(0.001)
            assert events == ["/idle-7/a"]
            for w in watches:
                w.close()
            await asyncio.wait_for(asyncio.gather(*consumers), 5)
        finally:
            await storage.close()
    asyncio.run(scenario())
