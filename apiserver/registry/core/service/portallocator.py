"""NodePorts from a port range (``--service-node-port-range``), kept in etcd (``portallocator.PortAllocator``).

The lower part of the range (``min(max(16, size/32), 128)`` ports) is left
to ports users ask for. A dry run of "any port" answers a dummy port past the
default range (32769, 32770, ...) and a requested port is only checked
against what is taken, as kube-apiserver's dry-run port operations do.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterable
from typing import Final

from apiserver.registry.core.service.allocator import EtcdRange
from apiserver.registry.core.service.ipallocator import AlreadyAllocated, NotInRange, RangeFull
from apiserver.storage.etcd import EtcdStorage

_RANGE: Final = re.compile(r"^(\d+)(?:-(\d+)|\+(\d+))?$")


def parse_port_range(text: str) -> tuple[int, int]:
    """``net.ParsePortRange``: ``30000-32767`` (or ``30000+2767``, or one port) as (base, size)."""
    match = _RANGE.match(text.strip())
    if match is None:
        raise ValueError(f"unable to parse port range: {text}")
    base = int(match.group(1))
    if match.group(2) is not None:
        high = int(match.group(2))
    elif match.group(3) is not None:
        high = base + int(match.group(3))
    else:
        high = base
    if not 0 <= base <= 65535 or not base <= high <= 65535:
        raise ValueError(f"range {text!r} is not valid: ports must be in 0-65535 and in ascending order")
    return base, high - base + 1


def range_offset(size: int) -> int:
    """``calculateRangeOffset`` of a port range."""
    if size <= 16:
        return 0
    return min(max(16, size // 32), 128)


class PortRange:
    """The NodePorts of one range, allocated in etcd under ``key``."""

    def __init__(self, text: str, storage: EtcdStorage, key: str,
                 in_use: Callable[[], Awaitable[Iterable[int]]]) -> None:
        self.base, self.size = parse_port_range(text)
        self.spec = f"{self.base}-{self.base + self.size - 1}"

        async def offsets() -> list[int]:
            return [port - self.base for port in await in_use() if self.contains(port)]

        self.store = EtcdRange(storage, key, self.spec, self.size, range_offset(self.size), offsets)

    def contains(self, port: int) -> bool:
        return self.base <= port < self.base + self.size

    async def allocate(self, port: int, *, dry_run: bool = False) -> None:
        if dry_run:
            if self.contains(port) and await self.store.has(port - self.base):
                raise AlreadyAllocated("port")
            return
        if not self.contains(port):
            raise NotInRange(f"provided port is not in the valid range. The range of valid ports is {self.spec}")
        if not await self.store.allocate(port - self.base):
            raise AlreadyAllocated("port")

    async def allocate_next(self) -> int:
        offset = await self.store.allocate_next()
        if offset is None:
            raise RangeFull()
        return self.base + offset

    async def release(self, ports: Iterable[int]) -> None:
        await self.store.release(port - self.base for port in ports if self.contains(port))
