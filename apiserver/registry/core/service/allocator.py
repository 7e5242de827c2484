"""A bitmap of allocated offsets, kept in one etcd key and changed by guarded writes.

:class:`Bitmap` is Kubernetes' ``AllocationBitmap`` with the random scan
strategy "with offset": a dynamic allocation starts at a random place in the
upper part of the range ``[offset, size)`` and only falls back to the lower
part ``[0, offset)`` when the upper one is full, so that the lower part stays
free for values users ask for (the ``kubernetes`` Service's ``10.96.0.1``,
a fixed NodePort).

:class:`EtcdRange` keeps a Bitmap in etcd as a ``RangeAllocation`` object
(``{"range": "10.96.0.0/12", "data": <base64 of the big-endian bitmap>}``,
as Go's ``big.Int.Bytes()`` writes it). Every change reads the key and
writes it back guarded by the read's ``mod_revision`` (a compare-and-swap in
one transaction); a lost race is retried with the value etcd returned. Two
APIServers therefore never hand out the same offset, and nothing is lost on
a restart. When the key is missing (first start) or holds another range (the
flag changed), the bitmap is rebuilt from the objects that hold offsets,
which the caller supplies.

Concurrency: an EtcdRange keeps no state between calls except its settings;
any number of tasks may call it at once.
"""

from __future__ import annotations

import base64
import random
from collections.abc import Awaitable, Callable, Iterable, Iterator
from typing import Final, TypeVar

import orjson

from apiserver import errors
from apiserver.registry.store import storage_error
from apiserver.storage.etcd import EtcdStorage, KeyExists, RevisionMismatch, StorageError

T = TypeVar("T")

_ATTEMPTS: Final = 64


class Bitmap:
    """Allocated offsets in ``[0, size)``: bit ``i`` of a little-endian byte array, set when ``i`` is taken."""

    __slots__ = ("buf", "count", "offset", "size")

    def __init__(self, size: int, offset: int = 0) -> None:
        self.size = max(size, 0)
        self.offset = offset if 0 <= offset < self.size else 0
        self.buf = bytearray((self.size + 7) // 8)
        self.count = 0

    def has(self, i: int) -> bool:
        return 0 <= i < self.size and bool(self.buf[i >> 3] >> (i & 7) & 1)

    def allocate(self, i: int) -> bool:
        """Mark ``i``; False when it was already marked (or is outside the range)."""
        if not 0 <= i < self.size or self.has(i):
            return False
        self.buf[i >> 3] |= 1 << (i & 7)
        self.count += 1
        return True

    def release(self, i: int) -> None:
        if self.has(i):
            self.buf[i >> 3] &= ~(1 << (i & 7)) & 0xFF
            self.count -= 1

    def free(self) -> int:
        return self.size - self.count

    def next_free(self, rng: random.Random) -> int | None:
        """A free offset, preferring ``[offset, size)`` from a random start (``randomScanStrategyWithOffset``)."""
        if self.count >= self.size:
            return None
        for low, high in ((self.offset, self.size), (0, self.offset)):
            width = high - low
            if width <= 0:
                continue
            start = rng.randrange(width)
            for k in range(width):
                i = low + (start + k) % width
                if not self.buf[i >> 3] >> (i & 7) & 1:
                    return i
        return None

    def to_bytes(self) -> bytes:
        """Go's ``big.Int.Bytes()`` of the bitmap: big-endian, without leading zero bytes."""
        return bytes(reversed(self.buf)).lstrip(b"\0")

    @classmethod
    def from_bytes(cls, size: int, offset: int, data: bytes) -> Bitmap:
        """The bitmap ``to_bytes`` wrote; bits beyond ``size`` are dropped."""
        bitmap = cls(size, offset)
        little = bytes(reversed(data))[:len(bitmap.buf)]
        bitmap.buf[:len(little)] = little
        if size % 8 and bitmap.buf:
            bitmap.buf[-1] &= (1 << (size % 8)) - 1
        bitmap.count = sum(byte.bit_count() for byte in bitmap.buf)
        return bitmap

    def __iter__(self) -> Iterator[int]:
        for index, byte in enumerate(self.buf):
            while byte:
                low = byte & -byte
                yield index * 8 + low.bit_length() - 1
                byte ^= low


class EtcdRange:
    """A :class:`Bitmap` of ``size`` offsets stored under ``key`` for the range written as ``range_spec``."""

    def __init__(self, storage: EtcdStorage, key: str, range_spec: str, size: int, offset: int,
                 rebuild: Callable[[], Awaitable[Iterable[int]]], *, rng: random.Random | None = None) -> None:
        self.storage = storage
        self.key = key
        self.range_spec = range_spec
        self.size = size
        self.offset = offset
        self.rebuild = rebuild
        self.rng = rng or random.Random()

    def _encode(self, bitmap: Bitmap) -> bytes:
        return orjson.dumps({"kind": "RangeAllocation", "apiVersion": "v1",
                             "metadata": {"name": "", "creationTimestamp": None},
                             "range": self.range_spec, "data": base64.b64encode(bitmap.to_bytes()).decode()})

    def _decode(self, raw: bytes) -> Bitmap | None:
        """The stored bitmap, or None when the key holds another range (or is unreadable)."""
        try:
            doc = orjson.loads(raw)
            if doc.get("range") != self.range_spec:
                return None
            return Bitmap.from_bytes(self.size, self.offset, base64.b64decode(doc.get("data") or ""))
        except (orjson.JSONDecodeError, ValueError, AttributeError):
            return None

    async def _fresh(self) -> Bitmap:
        bitmap = Bitmap(self.size, self.offset)
        for i in await self.rebuild():
            if 0 <= i < self.size:
                bitmap.allocate(i)
        return bitmap

    async def update(self, change: Callable[[Bitmap], tuple[T, bool]]) -> T:
        """Apply ``change`` to the stored bitmap and write it back guarded; returns ``change``'s result.

        ``change`` returns (result, whether the bitmap changed); nothing is
        written when it did not change.
        """
        try:
            kv = await self.storage.get(self.key)
            for _ in range(_ATTEMPTS):
                bitmap = self._decode(kv.value) if kv is not None else None
                rebuilt = bitmap is None
                if bitmap is None:
                    bitmap = await self._fresh()
                result, changed = change(bitmap)
                if not changed and not rebuilt:
                    return result
                try:
                    if kv is None:
                        await self.storage.create(self.key, self._encode(bitmap))
                    else:
                        await self.storage.update(self.key, self._encode(bitmap), kv.mod_revision)
                    return result
                except KeyExists:
                    kv = await self.storage.get(self.key)
                except RevisionMismatch as lost:
                    kv = lost.current
        except StorageError as e:
            raise storage_error(e) from e
        raise errors.internal_error(f"too many concurrent allocations in {self.key}; please try again")

    async def read(self) -> Bitmap:
        """The bitmap as stored now (rebuilt, not written, when the key is missing or for another range)."""
        try:
            kv = await self.storage.get(self.key)
        except StorageError as e:
            raise storage_error(e) from e
        bitmap = self._decode(kv.value) if kv is not None else None
        return bitmap if bitmap is not None else await self._fresh()

    async def allocate(self, i: int) -> bool:
        """Mark ``i``; False when it is taken."""
        return await self.update(lambda b: (ok := b.allocate(i), ok))

    async def allocate_next(self) -> int | None:
        """Mark and return a free offset; None when the range is full."""
        def take(b: Bitmap) -> tuple[int | None, bool]:
            i = b.next_free(self.rng)
            if i is None:
                return None, False
            b.allocate(i)
            return i, True
        return await self.update(take)

    async def release(self, offsets: Iterable[int]) -> None:
        wanted = list(offsets)
        if not wanted:
            return

        def free(b: Bitmap) -> tuple[None, bool]:
            before = b.count
            for i in wanted:
                b.release(i)
            return None, b.count != before
        await self.update(free)

    async def has(self, i: int) -> bool:
        return (await self.read()).has(i)
