"""The watch cache: one etcd watch per resource, fanned out to every HTTP watcher.

As kube-apiserver's cacher does, each resource keeps

- the current state (every object, decoded once, and its JSON encoded once),
- a bounded window of recent events, so that a watch can resume from any
  resourceVersion still inside the window (older ones get ``410 Expired``),
- the set of live watchers, each with a bounded queue.

An event from etcd is decoded and encoded once; every watcher receives the
same pre-encoded line (``{"type":...,"object":...}\\n``), so a thousand
watchers cost one decode, one encode and a thousand queue puts.

Concurrency rules: everything here runs on the APIServer's single event loop.
State, window and watcher set are mutated only by the cache's own task
(``run``) between awaits, so a watcher registered in one synchronous block
sees a consistent snapshot followed by exactly the events after it. A watcher
whose queue is full is ended with a 410 ERROR event and dropped; it never
makes the cache (or the other watchers) wait.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import logging
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Final, Literal

import orjson

from apiserver.metrics import WATCH_FANOUT_CPU
from apiserver.storage.etcd import (
    DELETE,
    Compacted,
    EtcdStorage,
    StorageError,
    Unavailable,
    WatchBatch,
)
from apiserver.storage.objects import Entry, at_revision, decode
from machinery.api.kinds import ResourceInfo

log = logging.getLogger("apiserver.watchcache")

EventType = Literal["ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"]

#: Entries of this APIServer's own writes kept until their watch events arrive.
_OWN_WRITES_MAX: Final = 4096

#: Queue length after which a watcher is considered too slow and ended with 410.
DEFAULT_WATCHER_QUEUE: Final = 10_000

#: How often etcd is asked for a progress notification while a request waits for a revision.
_PROGRESS_REQUEST_INTERVAL: Final = 0.1

#: A cache's etcd watch moves to a call of its own (``EtcdStorage.watch(own_call=True)``, cheaper per
#: event) when its resource is written at least this often (events a second, over ``TRAFFIC_WINDOW``),
#: and back to the shared stream (cheaper per idle progress notification, of which etcd sends 4 a second)
#: once it has been written less than ``QUIET_EVENTS_PER_SECOND`` for ``QUIET_SECONDS``.
BUSY_EVENTS_PER_SECOND: Final = 10.0
QUIET_EVENTS_PER_SECOND: Final = 2.0
QUIET_SECONDS: Final = 30.0
TRAFFIC_WINDOW: Final = 2.0


@dataclass(slots=True)
class CacheEvent:
    """A change of one object at one revision, with its previous state when it had one."""

    type: Literal["ADDED", "MODIFIED", "DELETED"]
    rv: int
    entry: Entry          # the new state (for DELETED: the last state, stamped with the delete's revision)
    prev: Entry | None    # the state before (None for ADDED)
    _lines: dict[tuple[str, bool], bytes] = field(default_factory=dict)

    def line(self, etype: str, use_prev: bool = False) -> bytes:
        """The encoded watch line for this event as ``etype``, built once and shared by every watcher."""
        cached = self._lines.get((etype, use_prev))
        if cached is None:
            if use_prev and self.prev is not None:
                raw = at_revision(self.prev, self.rv).raw
            else:
                raw = self.entry.raw
            cached = b'{"type":"' + etype.encode() + b'","object":' + raw + b"}\n"
            self._lines[(etype, use_prev)] = cached
        return cached


class Filter:
    """Namespace, label and field conditions of one watch or list."""

    __slots__ = ("extractor", "field", "key_prefix", "label", "name", "namespace")

    def __init__(self, *, namespace: str | None, key_prefix: str | None = None, label: Any = None,
                 field: Any = None, extractor: Callable[[dict[str, Any]], dict[str, str]] | None = None,
                 name: str | None = None) -> None:
        """``key_prefix`` is the namespace's etcd prefix (``/registry/services/specs/default/``): a
        resource's etcd name may hold a slash, so a key alone does not say where its namespace is."""
        self.namespace = namespace or None
        if self.namespace is not None and key_prefix is None:
            raise ValueError("a namespace filter needs the namespace's key prefix")
        self.key_prefix = key_prefix if self.namespace is not None else None
        self.label = label if label is not None and not label.empty() else None
        self.field = field if field is not None and not field.empty() else None
        self.extractor = extractor
        self.name = name

    def matches(self, entry: Entry) -> bool:
        if self.key_prefix is not None and not entry.key.startswith(self.key_prefix):
            return False
        if self.name is not None and entry.name != self.name:
            return False
        if self.label is not None and not self.label.matches(entry.labels):
            return False
        return self.field is None or self.extractor is None or self.field.matches(entry.fields(self.extractor))

    @property
    def trivial(self) -> bool:
        return self.label is None and self.field is None and self.name is None


class Watcher:
    """One HTTP watch: a bounded queue of encoded lines, fed by the cache."""

    def __init__(self, cache: WatchCache, flt: Filter, *, bookmarks: bool, max_queue: int,
                 transform: Callable[[str, Entry], bytes] | None = None,
                 bookmark_kind: tuple[str, str] | None = None) -> None:
        self.cache = cache
        self.filter = flt
        self.bookmarks = bookmarks
        #: (apiVersion, kind) of bookmark objects when the watch's objects are converted (PartialObjectMetadata).
        self.bookmark_kind = bookmark_kind or (cache.ri.api_version, cache.ri.kind)
        self.queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        self.max_queue = max_queue
        self.transform = transform
        self.closed = False
        self.last_rv = 0

    def _put(self, line: bytes) -> None:
        if self.closed:
            return
        if self.queue.qsize() >= self.max_queue:
            # Too far behind: drop what is queued (the client will not see it anyway once
            # it gets the 410) and end the stream, so memory stays bounded.
            while not self.queue.empty():
                self.queue.get_nowait()
            self.queue.put_nowait(error_line(410, "Expired",
                                             "watch stream fell too far behind; resourceVersion expired"))
            self.close()
            return
        self.queue.put_nowait(line)

    def deliver(self, ev: CacheEvent) -> None:
        flt = self.filter
        if flt.key_prefix is not None and not ev.entry.key.startswith(flt.key_prefix):
            return
        if flt.trivial:
            etype: str = ev.type
            use_prev = ev.type == "DELETED"
        else:
            new_ok = ev.type != "DELETED" and flt.matches(ev.entry)
            old_ok = ev.prev is not None and flt.matches(ev.prev)
            if new_ok and old_ok:
                etype, use_prev = "MODIFIED", False
            elif new_ok:
                etype, use_prev = "ADDED", False
            elif old_ok:
                # The object stopped matching (or was deleted): a DELETED carrying its last
                # matching state, stamped with this event's revision, as kube-apiserver sends.
                etype, use_prev = "DELETED", True
            else:
                return
        self.last_rv = ev.rv
        if self.transform is not None:
            entry = at_revision(ev.prev, ev.rv) if use_prev and ev.prev is not None else ev.entry
            self._put(self.transform(etype, entry))
        else:
            self._put(ev.line(etype, use_prev))

    def bookmark(self, rv: int, *, initial_events_end: bool = False) -> None:
        if not self.bookmarks or self.closed:
            return
        meta: dict[str, Any] = {"resourceVersion": str(rv)}
        if initial_events_end:
            meta["annotations"] = {"k8s.io/initial-events-end": "true"}
        obj = {"kind": self.bookmark_kind[1], "apiVersion": self.bookmark_kind[0], "metadata": meta}
        self.last_rv = rv
        self._put(b'{"type":"BOOKMARK","object":' + orjson.dumps(obj) + b"}\n")

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.queue.put_nowait(None)
            self.cache.watchers.discard(self)


def error_line(code: int, reason: str, message: str) -> bytes:
    status = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
              "message": message, "reason": reason, "code": code}
    return b'{"type":"ERROR","object":' + orjson.dumps(status) + b"}\n"


class TooOld(Exception):
    def __init__(self, requested: int, oldest: int) -> None:
        super().__init__(f"too old resource version: {requested} ({oldest})")
        self.requested = requested
        self.oldest = oldest


class NotFresh(Exception):
    """The cache did not reach the requested revision in time."""

    def __init__(self, requested: int, current: int) -> None:
        super().__init__(f"Too large resource version: {requested}, current: {current}")
        self.requested = requested
        self.current = current


class CacheNotReady(Unavailable):
    """The cache has not listed etcd yet (etcd unreachable at start, or relisting): answered 503."""


class CacheClosed(Exception):
    """The cache was stopped for good (its resource is no longer served): nothing will reach it again."""


class WatchCache:
    """The cached state and recent history of one resource, kept current by one etcd watch."""

    def __init__(self, ri: ResourceInfo[Any], storage: EtcdStorage, *, capacity: int = 10_000,
                 max_watcher_queue: int = DEFAULT_WATCHER_QUEUE,
                 field_extractor: Callable[[dict[str, Any]], dict[str, str]] | None = None) -> None:
        self.ri = ri
        self.storage = storage
        self.prefix = ri.etcd_prefix()
        self.capacity = capacity
        self.max_watcher_queue = max_watcher_queue
        self.field_extractor = field_extractor
        self.state: dict[str, Entry] = {}
        self._sorted_keys: list[str] | None = None
        #: How many of ``state``'s objects each namespace holds (namespaced resources only).
        self._per_namespace: Counter[str] = Counter()
        self.window: deque[CacheEvent] = deque()
        self.window_rvs: deque[int] = deque()
        #: The oldest revision a watch may resume from: events after it are all in the window.
        self.oldest_rv = 0
        self.rv = 0
        self.ready = asyncio.Event()
        self.watchers: set[Watcher] = set()
        self._advanced = asyncio.Condition()
        self._watch: Any = None
        #: Entries this APIServer wrote, by key, until their watch event arrives.
        self._own_writes: dict[str, Entry] = {}
        #: Requests waiting for the cache to reach a revision, and the one task asking etcd for progress.
        self._waiting = 0
        self._progress_task: asyncio.Task[None] | None = None
        #: Progress requests sent to etcd so far (for tests and debugging).
        self.progress_requests = 0
        #: Set by :meth:`close`: the resource is no longer served (its CustomResourceDefinition went).
        self.closed = False
        self._closed = asyncio.Event()
        #: Whether the etcd watch is on a call of its own (the resource is written often), and the
        #: events counted since ``_counted_since`` to decide it (see :data:`BUSY_EVENTS_PER_SECOND`).
        self.own_call = False
        self._counted = 0
        self._counted_since = time.monotonic()
        self._quiet_for = 0.0
        self._closing: asyncio.Task[None] | None = None

    # --- keeping the cache current ---------------------------------------------------------

    async def run(self) -> None:
        """List, then watch from the list's revision; relist when the watch cannot resume. Forever."""
        backoff = 0.1
        reconnecting = False
        while True:
            try:
                if self.ready.is_set() and reconnecting:
                    # etcd may have come back without revisions it had applied (and this cache had
                    # seen) when it crashed: a cache ahead of etcd would serve ghosts. Relist then.
                    current = await self.storage.status_revision()
                    if current < self.rv:
                        log.warning("%s: etcd is at revision %d, behind the cache's %d; relisting",
                                    self.ri.plural, current, self.rv)
                        self.ready.clear()
                reconnecting = False
                if not self.ready.is_set():
                    await self._relist()
                await self._watch_from(self.rv + 1)
                backoff = 0.1
            except Compacted:
                log.warning("%s: watch start revision %d compacted; relisting", self.ri.plural, self.rv + 1)
                self.ready.clear()
            except (Unavailable, StorageError) as e:
                log.warning("%s: etcd watch interrupted (%s); retrying in %.1fs", self.ri.plural, e, backoff)
                reconnecting = True
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 2.0)

    async def _relist(self) -> None:
        state: dict[str, Entry] = {}
        start: str | None = None
        revision = 0
        while True:
            kvs, rev, more = await self.storage.range(self.prefix, start=start, limit=10_000, revision=revision)
            revision = rev
            for kv in kvs:
                state[kv.key] = decode(kv)
            if not more or not kvs:
                break
            start = kvs[-1].key + "\0"
        had_state = self.ready.is_set() or self.state
        self.state = state
        self._sorted_keys = None
        self._per_namespace = Counter(map(self._namespace_of, state)) if self.ri.namespaced else Counter()
        self.window.clear()
        self.window_rvs.clear()
        self.rv = revision
        self.oldest_rv = revision
        if had_state:
            # History is lost: every watcher must start over (their clients relist on 410
            # if their resourceVersion is now too old, or resume if it is not).
            for w in list(self.watchers):
                w.close()
        self.ready.set()
        log.info("%s: cache listed %d objects at revision %d", self.ri.plural, len(state), revision)
        await self._notify()

    async def _watch_from(self, start: int) -> None:
        self._watch = self.storage.watch(self.prefix, start, own_call=self.own_call)
        try:
            async for batch in self._watch:
                self._apply(batch)
                await self._notify()
        finally:
            self._watch.close()
            self._watch = None

    def remember(self, entry: Entry) -> None:
        """Keep an entry this process just wrote, so that its watch event needs no decoding.

        The entry's bytes are exactly what the event will carry (the same stored value, the
        same revision); its decoded object saves every selector-filtered watcher a decode.
        An event that came in before the write's answer (the watch is read by a thread of its
        own) has nothing left to save: such an entry is not kept, or it would stay until evicted.
        Bounded: if events are lost (a relist), the oldest entries are forgotten.
        """
        if self.ready.is_set() and entry.rv <= self.rv:
            if entry.rv > self.oldest_rv:
                i = bisect.bisect_left(self.window_rvs, entry.rv)
                if i == len(self.window_rvs) or self.window_rvs[i] != entry.rv:
                    # The cache is past this write's revision without having seen it: etcd went back
                    # (it lost revisions in a crash that this cache had seen). Relist.
                    log.warning("%s: a write at revision %d that the cache (at %d) never saw; relisting",
                                self.ri.plural, entry.rv, self.rv)
                    self.relist()
            return
        self._own_writes[entry.key] = entry
        if len(self._own_writes) > _OWN_WRITES_MAX:
            del self._own_writes[next(iter(self._own_writes))]

    @property
    def own_writes_pending(self) -> int:
        """How many of this process's writes are kept for watch events yet to come (for tests and debugging)."""
        return len(self._own_writes)

    def request_progress(self) -> None:
        if self._watch is not None:
            self._watch.request_progress()

    def _apply(self, batch: WatchBatch) -> None:
        started = time.thread_time()
        try:
            self._apply_events(batch)
            self._count(len(batch.events))
        finally:
            WATCH_FANOUT_CPU.labels(self.ri.group_resource).inc(time.thread_time() - started)

    def _count(self, events: int) -> None:
        """Count the events applied; move the watch between the shared stream and a call of its own
        when the resource's write rate says so (see :data:`BUSY_EVENTS_PER_SECOND`).

        Called for every batch, progress notifications included (etcd sends an idle watch 4 a
        second), so the rate is judged at least that often. A move closes the watch; :meth:`run`
        resumes from the revision after the last one applied, on the other transport: whatever the
        old watch had not yet handed over is sent again by etcd, nothing is applied twice.
        """
        self._counted += events
        now = time.monotonic()
        elapsed = now - self._counted_since
        if elapsed < TRAFFIC_WINDOW:
            return
        rate = self._counted / elapsed
        self._counted, self._counted_since = 0, now
        if not self.own_call:
            if rate >= BUSY_EVENTS_PER_SECOND:
                self._move_watch(True, rate)
            return
        self._quiet_for = self._quiet_for + elapsed if rate < QUIET_EVENTS_PER_SECOND else 0.0
        if self._quiet_for >= QUIET_SECONDS:
            self._move_watch(False, rate)

    def _move_watch(self, own_call: bool, rate: float) -> None:
        self.own_call = own_call
        self._quiet_for = 0.0
        log.info("%s: etcd watch moves %s (%.0f events/s)", self.ri.plural,
                 "to a call of its own" if own_call else "back to the shared stream", rate)
        if self._watch is not None:
            self._watch.close()

    def _apply_events(self, batch: WatchBatch) -> None:
        for ev in batch.events:
            key = ev.kv.key
            prev = self.state.get(key)
            if ev.type == DELETE:
                if prev is None:
                    continue
                del self.state[key]
                self._sorted_keys = None
                if self.ri.namespaced:
                    namespace = self._namespace_of(key)
                    if self._per_namespace[namespace] > 1:
                        self._per_namespace[namespace] -= 1
                    else:
                        del self._per_namespace[namespace]
                rv = ev.kv.mod_revision
                cev = CacheEvent("DELETED", rv, self._compact(at_revision(prev, rv)), self._compact(prev))
            else:
                # An object this APIServer just wrote arrives already decoded (see remember()).
                own = self._own_writes.pop(key, None)
                entry = own if own is not None and own.rv == ev.kv.mod_revision else decode(ev.kv)
                rv = entry.rv
                # Even the current state is kept as JSON: a parsed object is 5 to 10 times bigger,
                # and only updates and Tables read it (they parse it again, for ~20 µs).
                self.state[key] = self._compact(entry)
                if prev is None:
                    self._sorted_keys = None
                    if self.ri.namespaced:
                        self._per_namespace[self._namespace_of(key)] += 1
                    cev = CacheEvent("ADDED", rv, entry, None)
                else:
                    cev = CacheEvent("MODIFIED", rv, entry, self._compact(prev))
            self._record(cev)
            for w in tuple(self.watchers):
                if w.last_rv < rv:
                    w.deliver(cev)
            self.rv = rv
        if not batch.events and batch.revision > self.rv:
            # A progress notification: everything up to this revision has been delivered.
            self.rv = batch.revision

    def _compact(self, entry: Entry) -> Entry:
        """An entry as the cache keeps it: without its parsed object, its labels and fields computed."""
        if self.field_extractor is not None:
            entry.fields(self.field_extractor)
        entry.compact()
        return entry

    def _record(self, ev: CacheEvent) -> None:
        self.window.append(ev)
        self.window_rvs.append(ev.rv)
        while len(self.window) > self.capacity:
            dropped = self.window.popleft()
            self.window_rvs.popleft()
            self.oldest_rv = dropped.rv

    async def _notify(self) -> None:
        async with self._advanced:
            self._advanced.notify_all()

    async def wait_for(self, rv: int, timeout: float = 3.0, *, current: int | None = None) -> None:
        """Wait until the cache has applied every event up to ``rv``, for at most ``timeout`` seconds.

        The wait is this request's own: it ends at its own deadline whatever other
        requests wait for. A revision beyond etcd's current one (``current``, asked
        when not given) can never be reached and fails at once. The cache reaches a
        revision by the watch's events or by a progress notification. etcd sends
        those periodically to an idle watch; with an etcd whose answers to progress
        requests are ordered behind events, one progress requester also asks every
        100 ms while any request waits (kube-apiserver's
        ``conditionalProgressRequester``), however many wait: waiters never ask etcd
        themselves, so they cannot flood the watch stream with progress responses.
        """
        if self.ready.is_set() and self.rv >= rv:
            return
        if self.closed:
            raise CacheClosed(self.ri.plural)
        deadline = time.monotonic() + timeout
        try:
            await asyncio.wait_for(self.wait_ready(), timeout)
        except TimeoutError:
            raise CacheNotReady(f"storage is (re)initializing: the {self.ri.plural} cache has not listed "
                                "etcd yet") from None
        if self.rv >= rv:
            return
        if current is None:
            current = await self.storage.status_revision()
        if rv > current:
            raise NotFresh(rv, self.rv)
        self._waiting += 1
        if self.storage.progress_requests_reliable and (self._progress_task is None or self._progress_task.done()):
            self._progress_task = asyncio.create_task(self._request_progress_while_waiting(),
                                                      name=f"watchcache-progress-{self.ri.plural}")
        try:
            async with self._advanced:
                while self.rv < rv:
                    if self.closed:
                        raise CacheClosed(self.ri.plural)
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        raise NotFresh(rv, self.rv)
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._advanced.wait(), remaining)
        finally:
            self._waiting -= 1

    async def wait_ready(self) -> None:
        """Wait until the cache has listed etcd; raise :class:`CacheClosed` if it is closed meanwhile."""
        if self.ready.is_set():
            return
        if self.closed:
            raise CacheClosed(self.ri.plural)
        ready = asyncio.ensure_future(self.ready.wait())
        closed = asyncio.ensure_future(self._closed.wait())
        try:
            await asyncio.wait({ready, closed}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            ready.cancel()
            closed.cancel()
        if not self.ready.is_set():
            raise CacheClosed(self.ri.plural)

    async def _request_progress_while_waiting(self) -> None:
        while self._waiting > 0:
            self.request_progress()
            self.progress_requests += 1
            await asyncio.sleep(_PROGRESS_REQUEST_INTERVAL)

    async def wait_fresh(self, timeout: float = 3.0) -> None:
        """Wait until the cache reflects everything etcd holds now (a consistent read from the cache).

        Without ordered progress requests (see ``EtcdStorage.progress_requests_reliable``) this
        lasts until etcd's next periodic progress notification or an event of this resource.
        """
        current = await self.storage.status_revision()
        await self.wait_for(current, timeout, current=current)

    def relist(self) -> None:
        """Drop the cache's state and watch: ``run`` lists etcd again and watchers start over."""
        self.ready.clear()
        if self._watch is not None:
            self._watch.close()

    # --- reading ------------------------------------------------------------------------------

    def get(self, key: str) -> Entry | None:
        return self.state.get(key)

    def count(self, namespace: str | None = None) -> int:
        """How many objects the cache holds, in all or in one namespace (counted as they come and go)."""
        if namespace and self.ri.namespaced:
            return self._per_namespace.get(namespace, 0)
        return len(self.state)

    def _namespace_of(self, key: str) -> str:
        return key[len(self.prefix):].partition("/")[0]

    def sorted_entries(self, namespace: str | None = None) -> Iterable[Entry]:
        if self._sorted_keys is None:
            self._sorted_keys = sorted(self.state)
        keys = self._sorted_keys
        if namespace:
            prefix = self.ri.etcd_prefix(namespace)
            lo = bisect.bisect_left(keys, prefix)
            hi = bisect.bisect_left(keys, prefix[:-1] + "0")  # "/" + 1 == "0"
            keys = keys[lo:hi]
        state = self.state
        return (state[k] for k in keys)

    def list(self, flt: Filter) -> list[Entry]:
        return [e for e in self.sorted_entries(flt.namespace) if flt.trivial or flt.matches(e)]

    # --- watching -----------------------------------------------------------------------------

    def watch(self, flt: Filter, *, since: int | None, bookmarks: bool, send_initial: bool,
              transform: Callable[[str, Entry], bytes] | None = None,
              bookmark_kind: tuple[str, str] | None = None) -> Watcher:
        """Register a watcher.

        ``since=None`` starts from the current state, sending it first as synthetic
        ADDED events when ``send_initial``; ``since=N`` replays the window's events after
        N. Raises :class:`TooOld` when N is older than the window.
        """
        w = Watcher(self, flt, bookmarks=bookmarks, max_queue=self.max_watcher_queue, transform=transform,
                    bookmark_kind=bookmark_kind)
        if self.closed:
            w.close()  # the resource is gone: the watch ends at once, and its client relists
            return w
        if since is None or send_initial:
            if send_initial:
                for entry in self.list(flt):
                    w._put(transform("ADDED", entry) if transform else
                           b'{"type":"ADDED","object":' + entry.raw + b"}\n")
            w.last_rv = self.rv
            if send_initial:
                w.bookmark(self.rv, initial_events_end=True)
        else:
            if since < self.oldest_rv:
                raise TooOld(since, self.oldest_rv + 1)
            start = bisect.bisect_right(self.window_rvs, since)
            for i in range(start, len(self.window)):
                w.deliver(self.window[i])
            w.last_rv = max(since, self.rv)
        self.watchers.add(w)
        return w

    def send_bookmarks(self) -> None:
        for w in tuple(self.watchers):
            if w.bookmarks and w.queue.qsize() == 0:
                w.bookmark(self.rv)

    def close_all(self) -> None:
        for w in tuple(self.watchers):
            w.close()

    def close(self) -> None:
        """Stop for good (the resource is no longer served): every watch ends, every wait for it fails.

        Requests already waiting for a revision get :class:`CacheClosed` at once instead of
        timing out; the caller's ``run`` task is cancelled by whoever closes the cache.
        """
        self.closed = True
        self._closed.set()
        self.close_all()
        with contextlib.suppress(RuntimeError):  # no running loop: nobody can be waiting
            self._closing = asyncio.get_running_loop().create_task(self._notify())
