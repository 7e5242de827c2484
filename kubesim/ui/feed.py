"""The UI server's view of the cluster: list and watch Nodes and Pods, and send the page what changed.

The UI is a client of the APIServer like every other component: two
list-then-watch loops (Nodes, Pods) keep a :class:`~kubesim.ui.model.ClusterModel`,
as an informer would, but on raw JSON because the page needs only a summary
of each object. A watch that ends is resumed from the last resourceVersion
seen; a ``410 Gone`` (history compacted) or an ERROR event leads to a relist;
an APIServer that cannot be reached is retried with backoff (0.5 s doubling to
5 s) while the page shows a banner (``status`` messages).

Every 250 ms the summaries that changed are sent, in one ``delta`` message,
to every page subscribed (server-sent events); a page that subscribes first
gets a ``snapshot``. A page that cannot keep up (its queue holds 200 messages)
is dropped; its EventSource reconnects and starts again from a snapshot.
The scheduler's queues (active, backoff, unschedulable, gated), when its
``/debug/queue`` endpoint is known, are polled every second.

Concurrency: everything runs on the UI server's event loop; the model is
changed only by the watch tasks, between awaits.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import AsyncIterator
from typing import Any, Final

import httpx
import orjson

from kubesim.ui.model import ClusterModel

log = logging.getLogger("kubesim.ui")

_BATCH_SECONDS: Final = 0.25
_QUEUE_POLL_SECONDS: Final = 1.0
_MAX_PENDING: Final = 200
_BACKOFF_START: Final = 0.5
_BACKOFF_MAX: Final = 5.0
#: The resources the cluster view follows.
WATCHED: Final = {"nodes": "/api/v1/nodes", "pods": "/api/v1/pods"}

Message = dict[str, Any]


class _Relist(Exception):
    """The watch cannot resume (410, or an ERROR event): list again."""


class Feed:
    def __init__(self, http: httpx.AsyncClient, *, scheduler_url: str | None = None) -> None:
        self.http = http
        self.scheduler_url = scheduler_url.rstrip("/") if scheduler_url else None
        self.model = ClusterModel()
        self.connected = False
        self.synced: set[str] = set()
        self.error = ""
        self._subscribers: set[asyncio.Queue[Message | None]] = set()
        self._events: deque[float] = deque()
        self._status_changed = True

    # --- for the page ------------------------------------------------------------------------------

    @property
    def events_per_second(self) -> float:
        now = time.monotonic()
        while self._events and now - self._events[0] > 5.0:
            self._events.popleft()
        return round(len(self._events) / 5.0, 1)

    def status(self) -> Message:
        return {"type": "status", "connected": self.connected, "synced": sorted(self.synced),
                "error": self.error, "eventsPerSecond": self.events_per_second}

    async def subscribe(self) -> AsyncIterator[Message]:
        """The messages one page receives: a snapshot, then deltas and status changes."""
        queue: asyncio.Queue[Message | None] = asyncio.Queue()
        queue.put_nowait(self.status())
        queue.put_nowait({"type": "snapshot", **self.model.snapshot()})
        self._subscribers.add(queue)
        try:
            while True:
                message = await queue.get()
                if message is None:
                    return
                yield message
        finally:
            self._subscribers.discard(queue)

    def _publish(self, message: Message) -> None:
        for queue in list(self._subscribers):
            if queue.qsize() >= _MAX_PENDING:
                # Too slow: end its stream; the browser reconnects and gets a fresh snapshot.
                self._subscribers.discard(queue)
                queue.put_nowait(None)
            else:
                queue.put_nowait(message)

    def close(self) -> None:
        for queue in list(self._subscribers):
            queue.put_nowait(None)
        self._subscribers.clear()

    # --- tasks -------------------------------------------------------------------------------------

    async def run(self) -> None:
        async with asyncio.TaskGroup() as group:
            for kind, path in WATCHED.items():
                group.create_task(self._follow(kind, path), name=f"ui-watch-{kind}")
            group.create_task(self._flush(), name="ui-flush")
            if self.scheduler_url:
                group.create_task(self._poll_queues(), name="ui-queues")

    def _set_connected(self, connected: bool, error: str = "") -> None:
        if connected != self.connected or error != self.error:
            self.connected, self.error = connected, error
            self._status_changed = True

    async def _follow(self, kind: str, path: str) -> None:
        backoff = _BACKOFF_START
        while True:
            try:
                rv = await self._list(kind, path)
                self.synced.add(kind)
                self._set_connected(True)
                backoff = _BACKOFF_START
                while True:
                    rv = await self._watch(kind, path, rv)
            except _Relist:
                continue
            except (httpx.HTTPError, OSError, ValueError) as err:
                self._set_connected(False, f"cannot reach the APIServer: {err or type(err).__name__}")
                log.info("watch of %s failed (%s); retrying in %.1fs", kind, err, backoff)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, _BACKOFF_MAX)

    async def _list(self, kind: str, path: str) -> str:
        response = await self.http.get(path)
        if response.status_code != 200:
            raise httpx.HTTPStatusError(f"list of {kind} answered {response.status_code}",
                                        request=response.request, response=response)
        body = orjson.loads(response.content)
        self.model.replace(kind, body.get("items") or [])
        return str(body["metadata"]["resourceVersion"])

    async def _watch(self, kind: str, path: str, rv: str) -> str:
        params = {"watch": "true", "resourceVersion": rv, "allowWatchBookmarks": "true", "timeoutSeconds": "300"}
        async with self.http.stream("GET", path, params=params, timeout=httpx.Timeout(10.0, read=330.0)) as resp:
            if resp.status_code == 410:
                raise _Relist
            if resp.status_code != 200:
                raise httpx.HTTPStatusError(f"watch of {kind} answered {resp.status_code}", request=resp.request,
                                            response=resp)
            self._set_connected(True)
            async for line in resp.aiter_lines():
                if not line.strip():
                    continue
                event = orjson.loads(line)
                etype, obj = event.get("type"), event.get("object") or {}
                if etype == "ERROR":
                    raise _Relist
                rv = str((obj.get("metadata") or {}).get("resourceVersion") or rv)
                if etype == "BOOKMARK":
                    continue
                self._events.append(time.monotonic())
                self.model.apply(kind, str(etype), obj)
        return rv

    async def _flush(self) -> None:
        last_status = 0.0
        while True:
            await asyncio.sleep(_BATCH_SECONDS)
            changes = self.model.take_changes()
            if changes is not None:
                self._publish({"type": "delta", **changes})
            now = time.monotonic()
            if self._status_changed or now - last_status >= 1.0:
                self._status_changed = False
                last_status = now
                self._publish(self.status())

    async def _poll_queues(self) -> None:
        assert self.scheduler_url is not None
        while True:
            with contextlib.suppress(httpx.HTTPError, ValueError):
                response = await self.http.get(f"{self.scheduler_url}/debug/queue", timeout=2.0)
                if response.status_code == 200:
                    lanes = orjson.loads(response.content)
                    self.model.set_queues({key: lane for lane, keys in lanes.items() for key in keys})
            await asyncio.sleep(_QUEUE_POLL_SECONDS)
