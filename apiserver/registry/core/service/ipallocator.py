"""ClusterIPs from a CIDR (``--service-cluster-ip-range``), kept in etcd (Kubernetes' ``ipallocator.Range``).

Offset 0 is the network address plus one; the network address itself, and
for IPv4 the broadcast address, are never handed out. An IPv6 range is
capped at 65536 addresses, since the bitmap holds one bit per address. The
lower part of the range (``min(max(16, size/16), 256)`` addresses) is left to
IPs users ask for; dynamic allocation takes from the rest first.

A dry run checks a requested IP against the range only and answers the
network address for "any IP", as kube-apiserver does, without writing.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Awaitable, Callable, Iterable
from typing import Final

from apiserver.registry.core.service.allocator import EtcdRange
from apiserver.storage.etcd import EtcdStorage
from apiserver.validation.common import parse_ip

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

IPV4: Final = "IPv4"
IPV6: Final = "IPv6"
#: kube-apiserver refuses larger service ranges: 2^20 addresses at most.
MAX_CIDR_BITS: Final = 20


class AllocationError(Exception):
    """An allocation that cannot be made; the message is Kubernetes' (``range is full``)."""


class RangeFull(AllocationError):
    def __init__(self) -> None:
        super().__init__("range is full")


class AlreadyAllocated(AllocationError):
    def __init__(self, what: str = "IP") -> None:
        super().__init__(f"provided {what} is already allocated")


class NotInRange(AllocationError):
    pass


def parse_service_cidrs(text: str) -> list[IPNetwork]:
    """``--service-cluster-ip-range``: one CIDR, or one per family; raises ValueError with the reason."""
    cidrs: list[IPNetwork] = []
    for part in (p.strip() for p in text.split(",") if p.strip()):
        try:
            cidr = ipaddress.ip_network(part, strict=False)
        except ValueError as e:
            raise ValueError(f"invalid CIDR {part!r}: {e}") from e
        if cidr.max_prefixlen - cidr.prefixlen > MAX_CIDR_BITS:
            raise ValueError(f"specified --service-cluster-ip-range is too large; for {cidr.max_prefixlen}-bit "
                             f"addresses, the mask must be >= {cidr.max_prefixlen - MAX_CIDR_BITS}")
        cidrs.append(cidr)
    if not cidrs:
        raise ValueError("--service-cluster-ip-range must name at least one CIDR")
    if len(cidrs) > 2 or (len(cidrs) == 2 and cidrs[0].version == cidrs[1].version):
        raise ValueError("--service-cluster-ip-range may hold one CIDR, or one of each IP family")
    return cidrs


def family_of(ip: str) -> str:
    parsed = parse_ip(ip)
    return IPV6 if parsed is not None and parsed.version == 6 else IPV4


def range_offset(cidr: IPNetwork) -> int:
    """``calculateRangeOffset``: how many addresses at the start are kept for static allocation."""
    size = cidr.num_addresses
    if size <= 16:
        return 0
    return min(max(16, size // 16), 256)


class IPRange:
    """The ClusterIPs of one CIDR, allocated in etcd under ``key``."""

    def __init__(self, cidr: IPNetwork, storage: EtcdStorage, key: str,
                 in_use: Callable[[], Awaitable[Iterable[str]]]) -> None:
        self.cidr = cidr
        self.family = IPV6 if cidr.version == 6 else IPV4
        self.base = int(cidr.network_address) + 1
        size = cidr.num_addresses - 1
        if cidr.version == 4:
            size -= 1  # no broadcast address
        size = min(size, 65536) if cidr.version == 6 else size
        self.size = max(size, 0)

        async def offsets() -> list[int]:
            found = (self.offset_of(ip) for ip in await in_use())
            return [i for i in found if i is not None]

        self.store = EtcdRange(storage, key, str(cidr), self.size, range_offset(cidr), offsets)

    def offset_of(self, ip: str) -> int | None:
        """The offset of ``ip`` in the range, or None when it is not in it (``contains``)."""
        parsed = parse_ip(ip)
        if parsed is None or parsed.version != self.cidr.version or parsed not in self.cidr:
            return None
        offset = int(parsed) - self.base
        return offset if 0 <= offset < self.size else None

    def ip_at(self, offset: int) -> str:
        return str(ipaddress.ip_address(self.base + offset))

    def _not_in_range(self, ip: str) -> NotInRange:
        parsed = parse_ip(ip)
        shown = str(parsed) if parsed is not None else ip
        return NotInRange(f"the provided IP ({shown}) is not in the valid range. The range of valid IPs is "
                          f"{self.cidr}")

    async def allocate(self, ip: str, *, dry_run: bool = False) -> None:
        offset = self.offset_of(ip)
        if offset is None:
            raise self._not_in_range(ip)
        if dry_run:
            return
        if not await self.store.allocate(offset):
            raise AlreadyAllocated()

    async def allocate_next(self, *, dry_run: bool = False) -> str:
        if dry_run:
            return str(self.cidr.network_address)
        offset = await self.store.allocate_next()
        if offset is None:
            raise RangeFull()
        return self.ip_at(offset)

    async def release(self, ips: Iterable[str]) -> None:
        offsets = [o for o in (self.offset_of(ip) for ip in ips) if o is not None]
        await self.store.release(offsets)

    async def has(self, ip: str) -> bool:
        offset = self.offset_of(ip)
        return offset is not None and await self.store.has(offset)
