"""What a Service create or update allocates and releases: ClusterIPs per IP family, NodePorts, a health-check port.

This follows ``pkg/registry/core/service/storage/alloc.go`` of Kubernetes 1.32:

- :meth:`Allocators.init_ip_family_fields` infers ``ipFamilyPolicy`` and
  ``ipFamilies`` (SingleStack and the cluster's first family unless told
  otherwise; a headless Service without selector gets RequireDualStack) and
  checks them against the families the cluster serves; this is visible in a
  dry run too;
- :meth:`Allocators.allocate_create` and :meth:`Allocators.allocate_update`
  reserve what the Service needs (the ClusterIPs it names or any free ones,
  its NodePorts, a ``healthCheckNodePort`` for LoadBalancers with
  ``externalTrafficPolicy: Local``) and return a :class:`Transaction` that the
  write commits (releasing what the update gave up) or reverts (releasing
  what was reserved);
- :meth:`Allocators.release_all` frees everything a deleted Service held.

A requested address or port that is taken or outside its range is a 422 on
``spec.clusterIPs`` or ``spec.ports[i].nodePort`` with Kubernetes' message; a
full range is a 500, as kube-apiserver answers.

Concurrency: Allocators hold only configuration; every reservation is a
guarded write in etcd (:mod:`.allocator`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Final

from apiserver import errors
from apiserver.errors import APIError
from apiserver.registry.core.service.ipallocator import IPV4, IPV6, AllocationError, IPRange, family_of
from apiserver.registry.core.service.portallocator import PortRange
from apiserver.validation.field import FieldError, Path, invalid_message
from apiserver.validation.service import validate_service_cluster_ips_related_fields
from machinery.api import kinds

Obj = dict[str, Any]

NONE: Final = "None"
SINGLE_STACK: Final = "SingleStack"
PREFER_DUAL_STACK: Final = "PreferDualStack"
REQUIRE_DUAL_STACK: Final = "RequireDualStack"
_SPEC: Final = Path("spec")
#: The first dummy port a dry run answers (kube-apiserver's portallocator operation).
_DRY_RUN_PORT: Final = 32768


def _spec(svc: Obj) -> Obj:
    spec = svc.get("spec")
    if not isinstance(spec, dict):
        spec = svc["spec"] = {}
    return spec


def _invalid(svc: Obj, errs: list[FieldError]) -> APIError:
    name = (svc.get("metadata") or {}).get("name") or ""
    return errors.invalid(kinds.SERVICES, name, invalid_message("Service", name, errs), [e.cause() for e in errs])


def needs_cluster_ip(svc: Obj) -> bool:
    return _spec(svc).get("type") != "ExternalName"


def needs_node_port(svc: Obj) -> bool:
    return _spec(svc).get("type") in ("NodePort", "LoadBalancer")


def needs_health_check(svc: Obj) -> bool:
    """``NeedsHealthCheck``: a LoadBalancer that keeps traffic on the node it arrives at."""
    spec = _spec(svc)
    return spec.get("type") == "LoadBalancer" and spec.get("externalTrafficPolicy") == "Local"


def should_allocate_node_ports(svc: Obj) -> bool:
    spec = _spec(svc)
    if spec.get("type") == "NodePort":
        return True
    if spec.get("type") == "LoadBalancer":
        return spec.get("allocateLoadBalancerNodePorts") is not False
    return False


def cluster_ips(svc: Obj) -> list[str]:
    return [str(ip) for ip in _spec(svc).get("clusterIPs") or []]


def ip_families(svc: Obj) -> list[str]:
    return [str(f) for f in _spec(svc).get("ipFamilies") or []]


def is_headless(svc: Obj) -> bool:
    return cluster_ips(svc) == [NONE]


def node_ports(svc: Obj) -> list[int]:
    """``collectServiceNodePorts``: the NodePorts of the ports (the health-check port is apart)."""
    return [int(p["nodePort"]) for p in _spec(svc).get("ports") or [] if isinstance(p, dict) and p.get("nodePort")]


def _set(spec: Obj, key: str, value: Any) -> None:
    """Set a field, or remove it when the value is what Go omits (nil, empty)."""
    if value in (None, "", [], 0):
        spec.pop(key, None)
    else:
        spec[key] = value


class Transaction:
    """What one write reserved and will give up: reverted when the write fails, committed when it succeeds."""

    def __init__(self, allocators: Allocators, *, dry_run: bool) -> None:
        self.allocators = allocators
        self.dry_run = dry_run
        self.ips: list[tuple[str, str]] = []
        self.ports: list[int] = []
        self.release_ips: list[tuple[str, str]] = []
        self.release_ports: list[int] = []

    async def allocate_ip(self, family: str, ip: str) -> None:
        await self.allocators.ranges[family].allocate(ip, dry_run=self.dry_run)
        self.ips.append((family, ip))

    async def allocate_next_ip(self, family: str) -> str:
        ip = await self.allocators.ranges[family].allocate_next(dry_run=self.dry_run)
        self.ips.append((family, ip))
        return ip

    async def allocate_port(self, port: int) -> None:
        if self.dry_run and port in self.ports:
            from apiserver.registry.core.service.ipallocator import AlreadyAllocated
            raise AlreadyAllocated("port")
        await self.allocators.node_ports.allocate(port, dry_run=self.dry_run)
        self.ports.append(port)

    async def allocate_next_port(self) -> int:
        if self.dry_run:
            port = max(self.ports, default=_DRY_RUN_PORT) + 1
        else:
            port = await self.allocators.node_ports.allocate_next()
        self.ports.append(port)
        return port

    async def commit(self) -> None:
        if self.dry_run:
            return
        await self.allocators.release_ips(self.release_ips)
        await self.allocators.node_ports.release(self.release_ports)

    async def revert(self) -> None:
        if self.dry_run:
            return
        await self.allocators.release_ips(self.ips)
        await self.allocators.node_ports.release(self.ports)


class Allocators:
    """The cluster's ClusterIP ranges (one per family, the first is the default) and its NodePort range."""

    def __init__(self, ranges: list[IPRange], node_ports: PortRange) -> None:
        self.ranges = {r.family: r for r in ranges}
        self.default_family = ranges[0].family
        self.node_ports = node_ports

    async def release_ips(self, ips: Iterable[tuple[str, str]]) -> None:
        by_family: dict[str, list[str]] = {}
        for family, ip in ips:
            if family in self.ranges and ip not in ("", NONE):
                by_family.setdefault(family, []).append(ip)
        for family, items in by_family.items():
            await self.ranges[family].release(items)

    # --- IP families ----------------------------------------------------------------------------

    def init_ip_family_fields(self, svc: Obj, old: Obj | None) -> None:
        """``initIPFamilyFields``: infer the policy and families, and check them against the cluster."""
        spec = _spec(svc)
        if spec.get("type") == "ExternalName":
            return
        if _matching_prefer_dual_stack(svc, old):
            return
        if spec.get("ipFamilyPolicy") is None:
            old_policy = _spec(old).get("ipFamilyPolicy") if old is not None else None
            if old_policy is not None:
                spec["ipFamilyPolicy"] = old_policy
            elif spec.get("clusterIP") == NONE and not spec.get("selector"):
                spec["ipFamilyPolicy"] = REQUIRE_DUAL_STACK
            else:
                spec["ipFamilyPolicy"] = SINGLE_STACK
        errs = validate_service_cluster_ips_related_fields(svc)
        if errs:
            raise _invalid(svc, errs)
        policy = spec["ipFamilyPolicy"]
        policy_path = _SPEC.child("ipFamilyPolicy")
        if old is not None:
            if policy == SINGLE_STACK:
                # Single-stack is clear intent: drop what the primary family does not need.
                if _same(cluster_ips(old), cluster_ips(svc)) and len(cluster_ips(svc)) > 1:
                    spec["clusterIPs"] = cluster_ips(svc)[:1]
                if _same(ip_families(old), ip_families(svc)) and len(ip_families(svc)) > 1:
                    spec["ipFamilies"] = ip_families(svc)[:1]
            else:
                if cluster_ips(svc) and len(cluster_ips(svc)) < len(cluster_ips(old)):
                    errs.append(FieldError.invalid(policy_path, policy,
                                                   "must be 'SingleStack' to release the secondary cluster IP"))
                if ip_families(svc) and len(ip_families(svc)) < len(ip_families(old)):
                    errs.append(FieldError.invalid(policy_path, policy,
                                                   "must be 'SingleStack' to release the secondary IP family"))
        if policy == SINGLE_STACK:
            if len(cluster_ips(svc)) == 2:
                errs.append(FieldError.invalid(policy_path, policy, "must be 'RequireDualStack' or "
                                                                    "'PreferDualStack' when multiple cluster IPs are "
                                                                    "specified"))
            if len(ip_families(svc)) == 2:
                errs.append(FieldError.invalid(policy_path, policy, "must be 'RequireDualStack' or "
                                                                    "'PreferDualStack' when multiple IP families are "
                                                                    "specified"))
        families = ip_families(svc)
        for i, ip in enumerate(cluster_ips(svc)):
            if ip == NONE:
                break
            family = family_of(ip)
            if i >= len(families):
                if family not in self.ranges:
                    errs.append(FieldError.invalid(_SPEC.child("clusterIPs").index(i), cluster_ips(svc),
                                                   f"{family} is not configured on this cluster"))
                else:
                    families.append(family)
        if errs:
            raise _invalid(svc, errs)
        if spec.get("clusterIP") == NONE and not spec.get("selector"):
            # Headless and selectorless: any families the user wants, even on a single-stack cluster.
            if not families:
                families = [self.default_family]
            if len(families) < 2 and policy != SINGLE_STACK:
                families.append(IPV6 if families[0] == IPV4 else IPV4)
            spec["ipFamilies"] = families
            return
        if policy == REQUIRE_DUAL_STACK and len(self.ranges) < 2:
            errs.append(FieldError.invalid(policy_path, policy, "this cluster is not configured for dual-stack "
                                                                "services"))
        for i, family in enumerate(families):
            if family not in self.ranges:
                errs.append(FieldError.invalid(_SPEC.child("ipFamilies").index(i), family,
                                               "not configured on this cluster"))
        if errs:
            raise _invalid(svc, errs)
        if not families:
            families = [self.default_family]
        if policy != SINGLE_STACK and len(families) == 1 and len(self.ranges) == 2:
            families.append(IPV6 if families[0] == IPV4 else IPV4)
        spec["ipFamilies"] = families

    # --- ClusterIPs -----------------------------------------------------------------------------

    async def _alloc_ips(self, svc: Obj, wanted: dict[str, str], txn: Transaction) -> dict[str, str]:
        """``allocIPs``: the named IP of each family, or any free one."""
        allocated: dict[str, str] = {}
        for family, ip in wanted.items():
            if not ip:
                try:
                    allocated[family] = await txn.allocate_next_ip(family)
                except AllocationError as e:
                    raise errors.internal_error(f"failed to allocate a serviceIP: {e}") from e
                continue
            try:
                await txn.allocate_ip(family, ip)
            except AllocationError as e:
                raise _invalid(svc, [FieldError.invalid(_SPEC.child("clusterIPs"), cluster_ips(svc),
                                                        f"failed to allocate IP {ip}: {e}")]) from e
            allocated[family] = ip
        return allocated

    async def _alloc_cluster_ips(self, svc: Obj, txn: Transaction) -> None:
        """``allocClusterIPs``: every family of the Service gets its IP, in the order of ``ipFamilies``."""
        spec = _spec(svc)
        if not needs_cluster_ip(svc) or is_headless(svc):
            return
        ips = cluster_ips(svc)
        families = ip_families(svc)
        while len(ips) < len(families):
            ips.append("")
        wanted = {family: ips[i] for i, family in enumerate(families)}
        allocated = await self._alloc_ips(svc, wanted, txn)
        for i, family in enumerate(families):
            if family in allocated:
                ips[i] = allocated[family]
        spec["clusterIPs"] = ips
        if ips:
            spec["clusterIP"] = ips[0]

    # --- NodePorts ------------------------------------------------------------------------------

    async def _next_port(self, txn: Transaction) -> int:
        try:
            return await txn.allocate_next_port()
        except AllocationError as e:
            raise errors.internal_error(f"failed to allocate a nodePort: {e}") from e

    async def _port(self, svc: Obj, txn: Transaction, port: int, index: int) -> None:
        try:
            await txn.allocate_port(port)
        except AllocationError as e:
            raise _invalid(svc, [FieldError.invalid(_SPEC.child("ports").index(index).child("nodePort"), port,
                                                    str(e))]) from e

    async def _init_node_ports(self, svc: Obj, txn: Transaction) -> None:
        """``initNodePorts``: ports that share a port number share their NodePort."""
        ports = [p for p in _spec(svc).get("ports") or [] if isinstance(p, dict)]
        by_port: dict[int, int] = {}
        for i, port in enumerate(ports):
            node_port = int(port.get("nodePort") or 0)
            if node_port == 0 and not should_allocate_node_ports(svc):
                continue
            number = int(port.get("port") or 0)
            shared = by_port.get(number, 0)
            if shared == 0:
                requested = next((int(p["nodePort"]) for p in ports[i:]
                                  if int(p.get("port") or 0) == number and p.get("nodePort")), 0)
                if requested:
                    await self._port(svc, txn, requested, i)
                    port["nodePort"] = by_port[number] = requested
                else:
                    port["nodePort"] = by_port[number] = await self._next_port(txn)
            elif node_port != shared:
                if node_port == 0:
                    port["nodePort"] = shared
                else:
                    await self._port(svc, txn, node_port, i)

    async def _alloc_health_check_port(self, svc: Obj, txn: Transaction) -> None:
        spec = _spec(svc)
        wanted = int(spec.get("healthCheckNodePort") or 0)
        try:
            if wanted:
                await txn.allocate_port(wanted)
            else:
                spec["healthCheckNodePort"] = await txn.allocate_next_port()
        except AllocationError as e:
            what = f"requested HealthCheck NodePort {wanted}" if wanted else "a HealthCheck NodePort 0"
            raise errors.internal_error(f"failed to allocate {what}: {e}") from e

    # --- create, update, delete -------------------------------------------------------------------

    async def _guarded(self, txn: Transaction, work: Callable[[], Awaitable[None]]) -> Transaction:
        try:
            await work()
        except BaseException:
            await txn.revert()
            raise
        return txn

    async def allocate_create(self, svc: Obj, *, dry_run: bool) -> Transaction:
        """``allocateCreate``: families, ClusterIPs, then NodePorts and a health-check port."""
        self.init_ip_family_fields(svc, None)
        txn = Transaction(self, dry_run=dry_run)

        async def work() -> None:
            await self._alloc_cluster_ips(svc, txn)
            if needs_node_port(svc):
                await self._init_node_ports(svc, txn)
            if needs_health_check(svc):
                await self._alloc_health_check_port(svc, txn)
        return await self._guarded(txn, work)

    async def allocate_update(self, svc: Obj, old: Obj, *, dry_run: bool) -> Transaction:
        """``allocateUpdate``: what a type change, an upgrade to dual-stack or new ports need, and what goes."""
        self.init_ip_family_fields(svc, old)
        txn = Transaction(self, dry_run=dry_run)

        async def work() -> None:
            await self._update_cluster_ips(svc, old, txn)
            await self._update_node_ports(svc, old, txn)
        return await self._guarded(txn, work)

    async def _update_cluster_ips(self, svc: Obj, old: Obj, txn: Transaction) -> None:
        if _matching_prefer_dual_stack(svc, old):
            return
        if not needs_cluster_ip(old) and needs_cluster_ip(svc):
            await self._alloc_cluster_ips(svc, txn)
            return
        if is_headless(old):
            return
        if needs_cluster_ip(old) and not needs_cluster_ip(svc):
            txn.release_ips += list(zip(ip_families(old), cluster_ips(old), strict=False))
            return
        old_families, families = ip_families(old), ip_families(svc)
        if len(old_families) == 1 and len(families) == 2:
            spec = _spec(svc)
            ips = cluster_ips(svc)
            if len(ips) < 2:
                ips.append("")
            allocated = await self._alloc_ips(svc, {families[1]: ips[1]}, txn)
            ips[1] = allocated[families[1]]
            spec["clusterIPs"] = ips
        elif len(old_families) == 2 and len(families) == 1:
            old_ips = cluster_ips(old)
            if len(old_ips) > 1:
                txn.release_ips.append((old_families[1], old_ips[1]))

    async def _update_node_ports(self, svc: Obj, old: Obj, txn: Transaction) -> None:
        spec = _spec(svc)
        if needs_node_port(old) and spec.get("type") in ("ExternalName", "ClusterIP"):
            txn.release_ports += node_ports(old)
        if needs_node_port(svc):
            old_ports = node_ports(old)
            taken: set[int] = set()
            new_ports: list[tuple[str, int]] = []
            for i, port in enumerate(p for p in spec.get("ports") or [] if isinstance(p, dict)):
                node_port = int(port.get("nodePort") or 0)
                if node_port == 0 and not should_allocate_node_ports(svc):
                    continue
                if node_port:
                    if node_port not in old_ports and node_port not in taken:
                        await self._port(svc, txn, node_port, i)
                        taken.add(node_port)
                else:
                    node_port = port["nodePort"] = await self._next_port(txn)
                key = (str(port.get("protocol") or "TCP"), node_port)
                if key in new_ports:
                    raise errors.internal_error(f"duplicate nodePort: {{{key[0]} {key[1]}}}")
                new_ports.append(key)
            current = node_ports(svc)
            txn.release_ports += [p for p in old_ports if p not in current]
        had, has = needs_health_check(old), needs_health_check(svc)
        if not had and has:
            await self._alloc_health_check_port(svc, txn)
        elif had and not has and _spec(old).get("healthCheckNodePort"):
            txn.release_ports.append(int(_spec(old)["healthCheckNodePort"]))

    async def release_all(self, svc: Obj) -> None:
        """``releaseAllocatedResources``: the ClusterIPs, NodePorts and health-check port a deleted Service held."""
        if needs_cluster_ip(svc) and not is_headless(svc):
            families = ip_families(svc) or [family_of(ip) for ip in cluster_ips(svc)]
            await self.release_ips(zip(families, cluster_ips(svc), strict=False))
        ports = node_ports(svc)
        if needs_health_check(svc) and _spec(svc).get("healthCheckNodePort"):
            ports.append(int(_spec(svc)["healthCheckNodePort"]))
        await self.node_ports.release(ports)


def _same(a: list[str], b: list[str]) -> bool:
    return a == b


def _matching_prefer_dual_stack(svc: Obj, old: Obj | None) -> bool:
    """``isMatchingPreferDualStackClusterIPFields``: a PreferDualStack Service left as it was."""
    if old is None:
        return False
    spec, old_spec = _spec(svc), _spec(old)
    if spec.get("ipFamilyPolicy") is None or old_spec.get("type") != spec.get("type"):
        return False
    if spec.get("type") not in ("ClusterIP", "NodePort", "LoadBalancer"):
        return False
    if spec.get("ipFamilyPolicy") != PREFER_DUAL_STACK or old_spec.get("ipFamilyPolicy") != PREFER_DUAL_STACK:
        return False
    return spec.get("clusterIP") == old_spec.get("clusterIP") and cluster_ips(svc) == cluster_ips(old) and \
        ip_families(svc) == ip_families(old)
