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
gRPC channel multiplexes concurrent calls. Watch streams are independent
bidirectional calls owned by whoever iterates them.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import urlsplit

import aetcd
import grpc
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
    over between members; that form needs IP addresses, so with host names only
    the first endpoint is used (and a warning says so).
    """
    hosts = []
    for ep in endpoints:
        parts = urlsplit(ep if "//" in ep else f"http://{ep}")
        hosts.append((parts.hostname or "127.0.0.1", parts.port or 2379))
    if len(hosts) == 1:
        h, p = hosts[0]
        return f"{h}:{p}"
    try:
        for h, _ in hosts:
            ipaddress.IPv4Address(h)
    except ValueError:
        log.warning("several etcd endpoints need IPv4 addresses to fail over; using %s only", endpoints[0])
        h, p = hosts[0]
        return f"{h}:{p}"
    return "ipv4:" + ",".join(f"{h}:{p}" for h, p in hosts)


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
        self._kv: Any = None
        self._watch_stub: Any = None
        self._lease_stub: Any = None
        self._maintenance: Any = None

    async def connect(self) -> None:
        await self._client.connect()
        self._kv = self._client.kvstub
        self._watch_stub = rpc.WatchStub(self._client.channel)
        self._lease_stub = self._client.leasestub
        self._maintenance = self._client.maintenancestub

    async def close(self) -> None:
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

    async def grant_lease(self, ttl: int) -> int:
        resp = await self._call(self._lease_stub.LeaseGrant, rpc.LeaseGrantRequest(TTL=ttl))
        return int(resp.ID)

    # --- watch ---------------------------------------------------------------------------

    def watch(self, prefix: str, start_revision: int) -> Watch:
        """A watch on every key under ``prefix``, from ``start_revision`` (inclusive)."""
        return Watch(self._watch_stub, prefix, start_revision)


class Watch:
    """One etcd watch stream, iterated with ``async for batch in watch``.

    Raises :class:`Compacted` when the start revision is gone, and
    :class:`Unavailable` when the stream breaks. ``request_progress()`` asks etcd
    to confirm, with an empty batch, the revision up to which everything has
    been delivered.
    """

    def __init__(self, stub: Any, prefix: str, start_revision: int) -> None:
        p = prefix.encode()
        self._requests: asyncio.Queue[Any] = asyncio.Queue()
        self._requests.put_nowait(rpc.WatchRequest(create_request=rpc.WatchCreateRequest(
            key=p, range_end=prefix_end(p), start_revision=start_revision, prev_kv=True,
            progress_notify=True)))
        self._call = stub.Watch(self._request_iter())
        self._closed = False

    async def _request_iter(self) -> AsyncIterator[Any]:
        while True:
            req = await self._requests.get()
            if req is None:
                return
            yield req

    def request_progress(self) -> None:
        if not self._closed:
            self._requests.put_nowait(rpc.WatchRequest(progress_request=rpc.WatchProgressRequest()))

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._requests.put_nowait(None)
            self._call.cancel()

    def __aiter__(self) -> AsyncIterator[WatchBatch]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[WatchBatch]:
        try:
            async for resp in self._call:
                if resp.compact_revision:
                    raise Compacted(int(resp.compact_revision))
                if resp.canceled:
                    raise Unavailable(f"etcd canceled the watch: {resp.cancel_reason}")
                if resp.created and not resp.events:
                    continue
                events = [
                    WatchEvent(ev.type, _kv(ev.kv), _kv(ev.prev_kv) if ev.HasField("prev_kv") else None)
                    for ev in resp.events
                ]
                yield WatchBatch(events, int(resp.header.revision))
            ended_by_us = self._closed
        except grpc.aio.AioRpcError as e:
            if self._closed:
                return
            raise Unavailable(f"etcd watch stream broke: {e.code().name} {e.details()}") from e
        finally:
            self.close()
        if not ended_by_us:
            raise Unavailable("etcd watch stream ended")
