"""The only code in kubesim that talks to etcd.

A thin, typed layer over aetcd's gRPC channel giving the APIServer exactly the
operations kube-apiserver's etcd3 storage uses:

- create is one transaction "create_revision == 0, then put";
- update and delete are "mod_revision == expected, then put/delete, else get",
  so a lost race is answered with the current value in the same round trip;
- ranges read at a fixed revision with a limit, for pagination;
- watches start at a revision and report compaction explicitly.

Values are opaque bytes here; the JSON codec lives in the registry. Every
call has a deadline: when etcd is unreachable a call fails with
:class:`Unavailable` or :class:`StorageTimeout` within ``timeout`` seconds
instead of hanging, and the channel reconnects by itself when etcd returns.

Concurrency: one instance per process, shared by all request handlers; the
gRPC channel multiplexes concurrent calls, and one bidirectional Watch stream
carries every watch (each iterated by its owner), read by a thread of its own
(see :class:`WatchStream`), except watches sent many events: each of those is
a call of its own, read by a thread of its own (see :class:`WatchCalls`).
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import queue
import re
import socket
import sys
import threading
from collections import deque
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import urlsplit

import aetcd
import grpc
import grpc.experimental
from aetcd import rpc

log = logging.getLogger("apiserver.storage")

PUT: Final = 0
DELETE: Final = 1


class StorageError(Exception):
    """Base of every storage failure."""


class KeyExists(StorageError):
    pass


class KeyNotFound(StorageError):
    pass


class RevisionMismatch(StorageError):
    """A guarded write lost: ``current`` is the value now stored (None when the key is gone)."""

    def __init__(self, current: KV | None) -> None:
        super().__init__("revision mismatch")
        self.current = current


class Compacted(StorageError):
    def __init__(self, compact_revision: int, requested: int = 0) -> None:
        super().__init__(f"required revision {requested} has been compacted (compacted to {compact_revision})")
        self.compact_revision = compact_revision
        self.requested = requested


class FutureRevision(StorageError):
    pass


class Unavailable(StorageError):
    """etcd cannot be reached."""


class StorageTimeout(StorageError):
    """etcd did not answer within the deadline."""


class RequestTooLarge(StorageError):
    """etcd refused a request larger than its ``--max-request-bytes`` (or the gRPC message limit)."""


@dataclass(frozen=True, slots=True)
class KV:
    key: str
    value: bytes
    mod_revision: int
    create_revision: int


@dataclass(frozen=True, slots=True)
class WatchEvent:
    type: int  # PUT or DELETE
    kv: KV
    prev: KV | None


@dataclass(frozen=True, slots=True)
class WatchBatch:
    """One etcd watch response: events (possibly none, for a progress notification) and its header revision."""

    events: list[WatchEvent]
    revision: int


def prefix_end(prefix: bytes) -> bytes:
    """The smallest key greater than every key starting with ``prefix`` (etcd's range_end for a prefix)."""
    end = bytearray(prefix)
    for i in range(len(end) - 1, -1, -1):
        if end[i] < 0xFF:
            end[i] += 1
            return bytes(end[: i + 1])
    return b"\0"


def _kv(kv: Any) -> KV:
    return KV(kv.key.decode(), kv.value, kv.mod_revision, kv.create_revision)


def grpc_target(endpoints: list[str]) -> str:
    """A gRPC target for one or several ``http://host:port`` etcd endpoints.

    Several endpoints become gRPC's static ``ipv4:`` address list, which fails
    over between members. That form needs IP addresses: host names (the members
    of a docker-compose project) are resolved once, here; a name that does not
    resolve leaves only the first endpoint used (and a warning says so).
    """
    hosts = []
    for ep in endpoints:
        parts = urlsplit(ep if "//" in ep else f"http://{ep}")
        hosts.append((parts.hostname or "127.0.0.1", parts.port or 2379))
    if len(hosts) == 1:
        h, p = hosts[0]
        return f"{h}:{p}"
    try:
        addresses = [(_ipv4_of(h), p) for h, p in hosts]
    except OSError as e:
        log.warning("several etcd endpoints need IPv4 addresses to fail over (%s); using %s only", e, endpoints[0])
        h, p = hosts[0]
        return f"{h}:{p}"
    return "ipv4:" + ",".join(f"{h}:{p}" for h, p in addresses)


def _ipv4_of(host: str) -> str:
    try:
        return str(ipaddress.IPv4Address(host))
    except ValueError:
        return str(socket.getaddrinfo(host, None, socket.AF_INET, socket.SOCK_STREAM)[0][4][0])


_CHANNEL_OPTIONS: Final = {
    "grpc.keepalive_time_ms": 10_000,
    "grpc.keepalive_timeout_ms": 5_000,
    "grpc.keepalive_permit_without_calls": 1,
    "grpc.http2.max_pings_without_data": 0,
    "grpc.max_receive_message_length": 256 * 1024 * 1024,
    "grpc.max_send_message_length": 16 * 1024 * 1024,
    "grpc.initial_reconnect_backoff_ms": 200,
    "grpc.max_reconnect_backoff_ms": 2_000,
}


class EtcdStorage:
    """Guarded reads and writes, ranges and watches on one etcd cluster."""

    def __init__(self, endpoints: list[str], *, timeout: float = 5.0) -> None:
        self.endpoints = endpoints
        self.timeout = timeout
        target = grpc_target(endpoints)
        host, _, port = target.rpartition(":")
        # aetcd builds its channel target as f"{host}:{port}", which also carries gRPC's
        # "ipv4:a:p1,b:p2" address-list form when split at the last colon.
        self._client = aetcd.Client(host=host, port=int(port), timeout=None, options=dict(_CHANNEL_OPTIONS))
        # Watches are read by threads, over gRPC's blocking API: a channel of their own, whose
        # server-streaming calls are read by the thread that consumes them (see WatchCalls).
        self._watch_channel = grpc.insecure_channel(target, options=[
            *_CHANNEL_OPTIONS.items(), (grpc.experimental.ChannelOptions.SingleThreadedUnaryStream, 1)])
        self._kv: Any = None
        self._lease_stub: Any = None
        self._maintenance: Any = None
        self._watch_stream: WatchStream | None = None
        self._watch_calls: WatchCalls | None = None
        #: etcd's version, once :meth:`check_features` has read it.
        self.version: tuple[int, int, int] | None = None
        #: Whether etcd answers a watch's progress request only after every event up to the revision
        #: it reports (see :func:`reliable_progress_requests`). False until etcd says its version.
        self.progress_requests_reliable = False

    async def connect(self) -> None:
        await self._client.connect()
        self._kv = self._client.kvstub
        self._lease_stub = self._client.leasestub
        self._maintenance = self._client.maintenancestub

    async def close(self) -> None:
        for transport in (self._watch_stream, self._watch_calls):
            if transport is not None:
                transport.close()
        self._watch_channel.close()
        await self._client.close()

    # --- calls with deadlines -------------------------------------------------------------

    async def _call(self, method: Any, request: Any, timeout: float | None = None) -> Any:
        try:
            return await method(request, timeout=timeout or self.timeout)
        except grpc.aio.AioRpcError as e:
            code = e.code()
            if code == grpc.StatusCode.DEADLINE_EXCEEDED:
                raise StorageTimeout(f"etcd did not answer within {timeout or self.timeout}s") from e
            if code == grpc.StatusCode.UNAVAILABLE:
                raise Unavailable(f"etcd is unavailable: {e.details()}") from e
            details = e.details() or ""
            if code == grpc.StatusCode.RESOURCE_EXHAUSTED and "space exceeded" not in details:
                raise RequestTooLarge(details) from e
            if "request is too large" in details:
                raise RequestTooLarge(details) from e
            if "required revision has been compacted" in details:
                raise Compacted(0) from e
            if "required revision is a future revision" in details:
                raise FutureRevision(details) from e
            raise StorageError(f"etcd error {code.name}: {details}") from e

    async def status_revision(self, timeout: float = 1.0) -> int:
        """The cluster's current revision (a cheap read; also a health check)."""
        resp = await self._call(self._kv.Range, rpc.RangeRequest(key=b"\0", limit=1, count_only=True,
                                                                 keys_only=True), timeout)
        return int(resp.header.revision)

    async def check_features(self, timeout: float = 1.0) -> None:
        """Read etcd's version, and from it whether its progress requests can be trusted."""
        resp = await self._call(self._maintenance.Status, rpc.StatusRequest(), timeout)
        version = parse_version(resp.version)
        if version != self.version:
            self.version = version
            self.progress_requests_reliable = reliable_progress_requests(version)
            log.info("etcd %s: %s", resp.version, "consistent reads are served from the watch cache"
                     if self.progress_requests_reliable else
                     "progress requests are not ordered with events (etcd-io/etcd#15220); consistent lists "
                     "read etcd, watch caches advance on etcd's periodic progress notifications")

    async def get(self, key: str) -> KV | None:
        resp = await self._call(self._kv.Range, rpc.RangeRequest(key=key.encode()))
        return _kv(resp.kvs[0]) if resp.kvs else None

    async def create(self, key: str, value: bytes, *, lease: int = 0) -> int:
        """Put ``key`` only if absent; returns the new revision. Raises :class:`KeyExists`."""
        k = key.encode()
        req = rpc.TxnRequest(
            compare=[rpc.Compare(result=rpc.Compare.EQUAL, target=rpc.Compare.CREATE, key=k, create_revision=0)],
            success=[rpc.RequestOp(request_put=rpc.PutRequest(key=k, value=value, lease=lease))],
        )
        resp = await self._call(self._kv.Txn, req)
        if not resp.succeeded:
            raise KeyExists(key)
        return int(resp.header.revision)

    async def update(self, key: str, value: bytes, expected_revision: int, *, lease: int = 0) -> int:
        """Put ``key`` only if its mod_revision is ``expected_revision``; returns the new revision.

        Raises :class:`RevisionMismatch` carrying the current value (or None if the key is gone).
        """
        k = key.encode()
        req = rpc.TxnRequest(
            compare=[rpc.Compare(result=rpc.Compare.EQUAL, target=rpc.Compare.MOD, key=k,
                                 mod_revision=expected_revision)],
            success=[rpc.RequestOp(request_put=rpc.PutRequest(key=k, value=value, lease=lease))],
            failure=[rpc.RequestOp(request_range=rpc.RangeRequest(key=k))],
        )
        resp = await self._call(self._kv.Txn, req)
        if resp.succeeded:
            return int(resp.header.revision)
        kvs = resp.responses[0].response_range.kvs
        raise RevisionMismatch(_kv(kvs[0]) if kvs else None)

    async def delete(self, key: str, expected_revision: int) -> int:
        """Delete ``key`` only if its mod_revision is ``expected_revision``; returns the delete's revision."""
        k = key.encode()
        req = rpc.TxnRequest(
            compare=[rpc.Compare(result=rpc.Compare.EQUAL, target=rpc.Compare.MOD, key=k,
                                 mod_revision=expected_revision)],
            success=[rpc.RequestOp(request_delete_range=rpc.DeleteRangeRequest(key=k))],
            failure=[rpc.RequestOp(request_range=rpc.RangeRequest(key=k))],
        )
        resp = await self._call(self._kv.Txn, req)
        if resp.succeeded:
            return int(resp.header.revision)
        kvs = resp.responses[0].response_range.kvs
        raise RevisionMismatch(_kv(kvs[0]) if kvs else None)

    async def range(self, prefix: str, *, start: str | None = None, limit: int = 0,
                    revision: int = 0) -> tuple[list[KV], int, bool]:
        """Keys under ``prefix`` from ``start`` (inclusive), at ``revision`` (0: latest).

        Returns (kvs, the revision read at, whether more keys follow).
        """
        p = prefix.encode()
        req = rpc.RangeRequest(key=(start or prefix).encode(), range_end=prefix_end(p), limit=limit,
                               revision=revision)
        resp = await self._call(self._kv.Range, req, timeout=max(self.timeout, 30.0))
        return [_kv(kv) for kv in resp.kvs], int(resp.header.revision), bool(resp.more)

    async def count(self, prefix: str, *, start: str | None = None, revision: int = 0) -> int:
        """How many keys under ``prefix`` from ``start`` (inclusive), at ``revision``: etcd counts, nothing is read."""
        p = prefix.encode()
        req = rpc.RangeRequest(key=(start or prefix).encode(), range_end=prefix_end(p), count_only=True,
                               revision=revision)
        resp = await self._call(self._kv.Range, req, timeout=max(self.timeout, 30.0))
        return int(resp.count)

    async def compact(self, revision: int) -> None:
        await self._call(self._kv.Compact, rpc.CompactionRequest(revision=revision, physical=False),
                         timeout=60.0)

    async def claim_compaction(self, key: str, expected_version: int, revision: int) -> tuple[bool, int, int]:
        """The compactors' election: record ``revision`` at ``key`` if its version is ``expected_version``.

        Returns (whether this call won, the key's version now, etcd's revision now). Of several
        APIServers, the one whose claim succeeds is the one that compacts this round, as
        kube-apiserver's compactor does with its ``compact_rev_key``.
        """
        k = key.encode()
        req = rpc.TxnRequest(
            compare=[rpc.Compare(result=rpc.Compare.EQUAL, target=rpc.Compare.VERSION, key=k,
                                 version=expected_version)],
            success=[rpc.RequestOp(request_put=rpc.PutRequest(key=k, value=str(revision).encode()))],
            failure=[rpc.RequestOp(request_range=rpc.RangeRequest(key=k))],
        )
        resp = await self._call(self._kv.Txn, req)
        if resp.succeeded:
            return True, expected_version + 1, int(resp.header.revision)
        kvs = resp.responses[0].response_range.kvs
        return False, int(kvs[0].version) if kvs else 0, int(resp.header.revision)

    async def grant_lease(self, ttl: int) -> int:
        resp = await self._call(self._lease_stub.LeaseGrant, rpc.LeaseGrantRequest(TTL=ttl))
        return int(resp.ID)

    # --- watch ---------------------------------------------------------------------------

    def watch(self, prefix: str, start_revision: int, *, own_call: bool = False) -> Watch:
        """A watch on every key under ``prefix``, from ``start_revision`` (inclusive).

        On this process's one multiplexed stream (:class:`WatchStream`), or with ``own_call``
        on a call of its own (:class:`WatchCalls`): cheaper per event, dearer per idle
        progress notification, so for watches that are sent events more often than etcd
        sends idle ones progress notifications.
        """
        if own_call:
            if self._watch_calls is None:
                self._watch_calls = WatchCalls(self._watch_channel)
            return Watch(self._watch_calls, prefix, start_revision)
        stream = self._watch_stream
        if stream is None or stream.broken:
            stream = self._watch_stream = WatchStream(self._watch_channel,
                                                      trusted=lambda: self.progress_requests_reliable)
        return Watch(stream, prefix, start_revision)


def parse_version(text: str) -> tuple[int, int, int]:
    """``"3.5.1"`` -> ``(3, 5, 1)``; a pre-release or build suffix is ignored."""
    numbers = [int(n) for n in re.findall(r"\d+", text.split("-", 1)[0].split("+", 1)[0])[:3]]
    numbers += [0] * (3 - len(numbers))
    return numbers[0], numbers[1], numbers[2]


def reliable_progress_requests(version: tuple[int, int, int]) -> bool:
    """Whether an etcd of this version sends a requested progress notification only once the watch
    has delivered every event up to the revision it reports.

    Before 3.4.31 and 3.5.13 it answers at once with its current revision, while a newly created
    watch is still catching up or events wait in the stream's buffer (etcd-io/etcd#15220, #17507):
    a cache trusting that would serve a "consistent" list without writes it had not yet seen.
    kube-apiserver checks the same versions before serving consistent reads from its watch cache.
    """
    if version >= (3, 6, 0):
        return True
    if version[:2] == (3, 5):
        return version >= (3, 5, 13)
    if version[:2] == (3, 4):
        return version >= (3, 4, 31)
    return False


#: How long the thread running Python may keep the GIL while another waits for it (Python's
#: default: 5 ms). Every answer from etcd reaches the event loop through a thread that must take the
#: GIL: gRPC's asyncio poller for each call; for the watch stream, gRPC's channel thread and then the
#: reader, in turn, for each response (for a watch on a call of its own, its reader alone). While the
#: loop is busy each of them waited out the whole interval, so the watch stream took in one response
#: per two intervals: under 1,300 Lease
#: renewals a second the caches fell hundreds of milliseconds behind etcd, and a quarter to a half
#: of the updates, read from them, were refused by etcd's revision check and done a second time
#: (4,195-9,169 of 18,000; at 1 ms still 3,162-6,178; none at 0.5 ms or 0.2 ms). The price is a
#: switch per response where there were batches: ~6% more APIServer CPU with 5,000 idle nodes.
GIL_SWITCH_INTERVAL: Final = 0.0002


def hand_over_promptly() -> None:
    """Let gRPC's threads take the GIL within :data:`GIL_SWITCH_INTERVAL` (for the whole process)."""
    sys.setswitchinterval(GIL_SWITCH_INTERVAL)


#: How long the loop lets etcd's periodic progress notifications gather before it takes them (seconds).
#: etcd sends one to every idle watch at each tick (``WATCH_PROGRESS_NOTIFY_INTERVAL``), in a burst; each
#: handed over at once woke the loop once: an idle APIServer's 50 watch caches cost ~4% of a core.
PROGRESS_COALESCING = 0.005


class _HandOver:
    """What the threads reading etcd's watch responses bring to the event loop, taken in one go.

    A reading thread converts each response and appends it, with the watch it is for (None when
    the response names its watch by id), under a lock; the loop takes whatever has arrived in one
    turn and dispatches it in order. A progress notification (no events) wakes the loop only if
    none is waiting yet, and then :data:`PROGRESS_COALESCING` later, so the burst etcd sends its
    idle watches at each tick is taken in one turn (measured with 50 idle watches: ~150 loop
    wake-ups a second and 210-300 µs of CPU per notification before, ~9 and 130-200 µs after);
    anything else (events, a creation, a cancel, an answer to a progress request, an error) is
    taken at once, with whatever came before it.
    """

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._arrived: list[tuple[Watch | None, _Response | StorageError]] = []
        self._handover = threading.Lock()
        self._scheduled = False
        self._deferred = False

    def _hand_over(self, watch: Watch | None, item: _Response | StorageError) -> None:
        prompt = not (isinstance(item, _Response) and item.is_progress)
        with self._handover:
            self._arrived.append((watch, item))
            if self._scheduled or (not prompt and self._deferred):
                return
            if prompt:
                self._scheduled = True
            else:
                self._deferred = True
        try:
            self._loop.call_soon_threadsafe(self._take if prompt else self._take_soon)
        except RuntimeError:
            pass  # the loop is closed: the process is ending

    def _take_soon(self) -> None:
        self._loop.call_later(PROGRESS_COALESCING, self._take)

    def _take(self) -> None:
        with self._handover:
            arrived, self._arrived = self._arrived, []
            self._scheduled = self._deferred = False
        for watch, item in arrived:
            self._dispatch(watch, item)

    def _dispatch(self, watch: Watch | None, item: _Response | StorageError) -> None:
        raise NotImplementedError


def _broken(e: grpc.RpcError, what: str) -> Unavailable:
    code = e.code() if callable(getattr(e, "code", None)) else None
    name = code.name if code is not None else "UNKNOWN"
    details = e.details() if callable(getattr(e, "details", None)) else str(e)
    return Unavailable(f"{what} broke: {name} {details}")


def _apply(watch: Watch, resp: _Response) -> bool:
    """Give ``watch`` what ``resp`` (after its creation) says; False once the watch is over."""
    if resp.compact_revision:
        watch._end(Compacted(resp.compact_revision))
        return False
    if resp.canceled:
        watch._end(Unavailable(f"etcd canceled the watch: {resp.cancel_reason}"))
        return False
    watch._put(WatchBatch(resp.events, resp.revision))
    return True


class WatchCalls(_HandOver):
    """Each watch on a gRPC call of its own, read by a thread of its own: the transport for watches
    sent many events (the watch caches of resources written often, see ``WatchCache``).

    etcd's Watch RPC is bidirectional, but etcd keeps a watch going after the client has sent its
    one create request and closed its side (etcd's gRPC gateway relies on that), so it is called as
    a server-streaming call and read with gRPC's single-threaded streaming option: the reading
    thread itself waits on the call's completion queue, where a bidirectional call is served by
    gRPC's channel thread, which wakes the reader through a condition. One thread and one GIL
    hand-over per response instead of two: measured on 1,500 writes a second under one watch,
    120 µs of CPU per event against 185, and 15% less APIServer CPU per Event create. The prices:
    each idle watch's progress notifications wake a thread of its own at each tick (every watch
    cache of an idle APIServer on its own call: 7.5% of a core against 2.5%), and no progress
    request can be sent on such a call (a watch sent events often needs none). Concurrency: each
    thread only reads, converts and hands over; every watch's state is touched on the loop only.
    """

    def __init__(self, channel: grpc.Channel) -> None:
        super().__init__()
        self._method = channel.unary_stream("/etcdserverpb.Watch/Watch",
                                            request_serializer=rpc.WatchRequest.SerializeToString,
                                            response_deserializer=rpc.WatchResponse.FromString)
        self._calls: dict[Watch, Any] = {}

    def create(self, watch: Watch, prefix: str, start_revision: int) -> None:
        call = self._method(_create_request(prefix, start_revision))
        self._calls[watch] = call
        threading.Thread(target=self._read, args=(watch, call), name="etcd-watch", daemon=True).start()

    def cancel(self, watch: Watch) -> None:
        call = self._calls.pop(watch, None)
        if call is not None:
            call.cancel()

    def request_progress(self) -> None:
        """Not possible on a server-streaming call (the caches wait for etcd's periodic notifications)."""

    def close(self) -> None:
        for call in list(self._calls.values()):
            call.cancel()

    def _read(self, watch: Watch, call: Any) -> None:
        error: StorageError = Unavailable("etcd watch ended")
        try:
            for resp in call:
                self._hand_over(watch, _Response.of(resp))
        except grpc.RpcError as e:
            if call.cancelled():
                return  # canceled by us
            error = _broken(e, "etcd watch")
        except Exception as e:  # the watch is over, whatever broke it: its owner must hear so
            log.exception("etcd watch reader failed")
            error = Unavailable(f"etcd watch reader failed: {e}")
        self._hand_over(watch, error)

    def _dispatch(self, watch: Watch | None, item: _Response | StorageError) -> None:
        assert watch is not None
        if isinstance(item, StorageError):
            self._calls.pop(watch, None)
            watch._end(item)
            return
        if item.created:
            if item.canceled:
                self.cancel(watch)
                watch._end(Unavailable(f"etcd refused the watch: {item.cancel_reason}"))
                return
            if not item.events:
                return
        if not _apply(watch, item):
            self.cancel(watch)


class WatchStream(_HandOver):
    """One gRPC Watch stream carrying every watch of this process, as etcd's clientv3 multiplexes them.

    Each watch on its own bidirectional stream cost the APIServer ~125 µs of CPU per progress
    notification or batch (gRPC's per-call machinery), one stream ~40 µs. etcd answers create
    requests in the order they were sent, each with the id it gave the watch, and never sends a
    watch's events before that answer; every later response names its watch by id, except the
    answer to a progress request (id -1), which concerns them all and is passed on only when
    ``trusted()`` says etcd orders it behind the watches' events. A broken stream ends every watch
    on it with :class:`Unavailable`; the storage opens a new one for the next watch.

    The stream is read by a thread of its own, over gRPC's blocking API. Read on the event loop
    (gRPC's asyncio API), one response cost at least one turn of the loop, and while the
    APIServer served a burst of writes a turn lasted milliseconds: the caches took in 150
    responses a second while etcd committed 1,800, and fell tens of seconds behind (every watcher
    with them). etcd sends a response per revision to a watch that keeps up, so the thread, which
    waits on nothing but the socket and the GIL (taken within :data:`GIL_SWITCH_INTERVAL`), keeps
    up; the loop then applies all it brought per turn (see :class:`_HandOver`).
    """

    def __init__(self, channel: grpc.Channel, *, trusted: Any) -> None:
        super().__init__()
        self._trusted = trusted
        self._requests: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._call = rpc.WatchStub(channel).Watch(self._request_iter())
        self._pending: deque[Watch] = deque()
        self._watches: dict[int, Watch] = {}
        self.broken = False
        self._reader = threading.Thread(target=self._read, name="etcd-watch-stream", daemon=True)
        self._reader.start()

    def _request_iter(self) -> Iterator[Any]:
        while True:
            req = self._requests.get()
            if req is None:
                return
            yield req

    def create(self, watch: Watch, prefix: str, start_revision: int) -> None:
        self._pending.append(watch)
        self._requests.put(_create_request(prefix, start_revision))

    def cancel(self, watch: Watch) -> None:
        """Stop ``watch`` (one still being created is canceled when etcd answers its creation)."""
        if watch.id is not None and self._watches.pop(watch.id, None) is watch and not self.broken:
            self._requests.put(rpc.WatchRequest(cancel_request=rpc.WatchCancelRequest(watch_id=watch.id)))

    def request_progress(self) -> None:
        if not self.broken:
            self._requests.put(rpc.WatchRequest(progress_request=rpc.WatchProgressRequest()))

    def close(self) -> None:
        self._call.cancel()

    def _read(self) -> None:
        error: StorageError = Unavailable("etcd watch stream ended")
        try:
            for resp in self._call:
                self._hand_over(None, _Response.of(resp))
        except grpc.RpcError as e:
            error = _broken(e, "etcd watch stream")
        except Exception as e:  # the stream is over, whatever broke it: its watches must hear so
            log.exception("etcd watch stream reader failed")
            error = Unavailable(f"etcd watch stream reader failed: {e}")
        self._requests.put(None)
        self._hand_over(None, error)

    def _dispatch(self, _watch: Watch | None, item: _Response | StorageError) -> None:
        if isinstance(item, StorageError):
            self._end(item)
            return
        resp = item
        watch_id = resp.watch_id
        if resp.created:
            if not self._pending:
                return
            created = self._pending.popleft()
            if resp.canceled:
                created._end(Unavailable(f"etcd refused the watch: {resp.cancel_reason}"))
                return
            created.id = watch_id
            if created.closed:
                self._requests.put(rpc.WatchRequest(cancel_request=rpc.WatchCancelRequest(watch_id=watch_id)))
                return
            self._watches[watch_id] = created
            if not resp.events:
                return
        elif watch_id == -1:
            # The answer to a progress request: etcd before 3.5.13 may send it ahead of events up to
            # its revision, so it is a promise only from an etcd that orders it behind them.
            if not resp.events and self._trusted():
                batch = WatchBatch([], resp.revision)
                for each in self._watches.values():
                    each._put(batch)
            return
        watch = self._watches.get(watch_id)
        if watch is None:
            return  # canceled by us; etcd had sent this before it saw the cancel
        if not _apply(watch, resp):
            del self._watches[watch_id]

    def _end(self, error: StorageError) -> None:
        self.broken = True
        for watch in [*self._pending, *self._watches.values()]:
            watch._end(error)
        self._pending.clear()
        self._watches.clear()


def _create_request(prefix: str, start_revision: int) -> Any:
    p = prefix.encode()
    return rpc.WatchRequest(create_request=rpc.WatchCreateRequest(
        key=p, range_end=prefix_end(p), start_revision=start_revision, prev_kv=True, progress_notify=True))


@dataclass(frozen=True, slots=True)
class _Response:
    """What the loop needs of one etcd WatchResponse, converted by the reading thread."""

    watch_id: int
    created: bool
    canceled: bool
    cancel_reason: str
    compact_revision: int
    revision: int
    events: list[WatchEvent]

    @property
    def is_progress(self) -> bool:
        """A periodic progress notification: no events, for one watch (not an answer to a progress request)."""
        return not self.events and not self.created and not self.canceled and not self.compact_revision \
            and self.watch_id != -1

    @classmethod
    def of(cls, resp: Any) -> _Response:
        events = [WatchEvent(ev.type, _kv(ev.kv), _kv(ev.prev_kv) if ev.HasField("prev_kv") else None)
                  for ev in resp.events]
        return cls(int(resp.watch_id), bool(resp.created), bool(resp.canceled), str(resp.cancel_reason),
                   int(resp.compact_revision), int(resp.header.revision), events)


class Watch:
    """One etcd watch (on a :class:`WatchCalls` or a :class:`WatchStream`), iterated with ``async for batch in watch``.

    Raises :class:`Compacted` when the start revision is gone, and
    :class:`Unavailable` when the stream breaks. An empty batch is a progress
    notification: every event up to its revision has been delivered. etcd sends
    one periodically (``--experimental-watch-progress-notify-interval``) when the
    watch is idle, and ``request_progress()`` asks for one now (on a
    :class:`WatchStream`, and passed on only from an etcd that orders it behind
    events). ``close()`` ends the iteration.
    """

    def __init__(self, stream: WatchCalls | WatchStream, prefix: str, start_revision: int) -> None:
        self._stream = stream
        self.id: int | None = None
        self.closed = False
        self._queue: asyncio.Queue[WatchBatch | StorageError | None] = asyncio.Queue()
        stream.create(self, prefix, start_revision)

    def _put(self, batch: WatchBatch) -> None:
        if not self.closed:
            self._queue.put_nowait(batch)

    def _end(self, error: StorageError) -> None:
        self._queue.put_nowait(error)

    def request_progress(self) -> None:
        if not self.closed:
            self._stream.request_progress()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._stream.cancel(self)
            self._queue.put_nowait(None)

    def __aiter__(self) -> AsyncIterator[WatchBatch]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[WatchBatch]:
        try:
            while True:
                item = await self._queue.get()
                if item is None or self.closed:
                    return
                if isinstance(item, StorageError):
                    raise item
                yield item
        finally:
            self.close()
