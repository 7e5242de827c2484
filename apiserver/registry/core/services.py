"""core/v1 Services: ClusterIPs and NodePorts allocated in etcd, Kubernetes' defaulting, validation and columns.

What a write does, in kube-apiserver's order (``pkg/registry/core/service``):

1. before the strategy runs (:meth:`ServiceStrategy.begin_create` /
   ``begin_update``): the Service is defaulted (type ClusterIP, TCP ports
   whose targetPort is the port, affinity None, internalTrafficPolicy
   Cluster...), ``clusterIP``/``clusterIPs`` brought in step, values the
   client left out of an update kept, IP families inferred, and ClusterIPs
   and NodePorts reserved (:mod:`.service.alloc`);
2. the strategy: status reset on create (``loadBalancer: {}``, as Go writes
   an empty status), fields the new type does not use dropped on update,
   validation (``spec.clusterIPs[0]: may not change once set`` makes the
   ClusterIP immutable);
3. the write commits the reservation, or it is released when the write fails.

A deleted Service gives back what it held and takes its Endpoints with it,
as kube-apiserver does. Services can be selected by ``spec.clusterIP`` and
``spec.type``.

Concurrency: the allocators are built once per APIServer from its settings
and keep no state of their own; every reservation is a guarded etcd write.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Iterator
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar, Final

import orjson

from apiserver import errors, printers
from apiserver.printers import Column, Printer, Row, since
from apiserver.registry.core import connect
from apiserver.registry.core.service import fields
from apiserver.registry.core.service.alloc import Allocators, Transaction, cluster_ips, ip_families
from apiserver.registry.core.service.ipallocator import IPRange, family_of, parse_service_cidrs
from apiserver.registry.core.service.portallocator import PortRange
from apiserver.registry.core.service.repair import INTERVAL, Repair
from apiserver.registry.generic import StatusREST
from apiserver.registry.resource import Resource
from apiserver.registry.store import DeleteOptions, storage_error
from apiserver.registry.strategy import FinishFunc, Obj, StatusStrategy, Strategy
from apiserver.storage.etcd import StorageError
from apiserver.validation import defaults
from apiserver.validation import service as validation
from apiserver.validation.field import FieldError
from machinery.api import kinds, labels

if TYPE_CHECKING:
    from apiserver.registry.store import StoreContext

log = logging.getLogger("apiserver.services")

#: Where the allocation bitmaps live, as kube-apiserver keys them.
CLUSTER_IPS_KEY: Final = "/registry/ranges/serviceips"
SECONDARY_CLUSTER_IPS_KEY: Final = "/registry/ranges/secondaryserviceips"
NODE_PORTS_KEY: Final = "/registry/ranges/servicenodeports"

_BY_SERVER: weakref.WeakKeyDictionary[Any, Allocators] = weakref.WeakKeyDictionary()


async def stored_services(ctx: StoreContext) -> list[Obj]:
    """Every Service as etcd has it now (what the allocators are rebuilt and repaired from)."""
    prefix = kinds.SERVICES.etcd_prefix()
    found: list[Obj] = []
    start: str | None = None
    try:
        while True:
            kvs, _rev, more = await ctx.storage.range(prefix, start=start, limit=1000)
            for kv in kvs:
                try:
                    found.append(orjson.loads(kv.value))
                except orjson.JSONDecodeError:
                    log.warning("skipping an unreadable Service at %s", kv.key)
            if not more or not kvs:
                return found
            start = kvs[-1].key + "\0"
    except StorageError as e:
        raise storage_error(e) from e


def held_ips(services: list[Obj], family: str) -> Iterator[str]:
    for svc in services:
        for i, ip in enumerate(cluster_ips(svc)):
            families = ip_families(svc)
            if ip not in ("", "None") and (families[i] if i < len(families) else family_of(ip)) == family:
                yield ip


def held_node_ports(services: list[Obj]) -> Iterator[int]:
    for svc in services:
        spec = svc.get("spec") or {}
        for port in spec.get("ports") or []:
            if isinstance(port, dict) and port.get("nodePort"):
                yield int(port["nodePort"])
        if spec.get("healthCheckNodePort"):
            yield int(spec["healthCheckNodePort"])


def allocators(ctx: StoreContext) -> Allocators:
    """The APIServer's allocators, built from its settings on first use."""
    found = _BY_SERVER.get(ctx)
    if found is not None:
        return found
    settings = ctx.settings
    ranges: list[IPRange] = []
    for i, cidr in enumerate(parse_service_cidrs(settings.service_cluster_ip_range)):
        family = "IPv6" if cidr.version == 6 else "IPv4"

        async def ips(family: str = family) -> list[str]:
            return list(held_ips(await stored_services(ctx), family))

        ranges.append(IPRange(cidr, ctx.storage, CLUSTER_IPS_KEY if i == 0 else SECONDARY_CLUSTER_IPS_KEY, ips))

    async def ports() -> list[int]:
        return list(held_node_ports(await stored_services(ctx)))

    made = Allocators(ranges, PortRange(settings.service_node_port_range, ctx.storage, NODE_PORTS_KEY, ports))
    _BY_SERVER[ctx] = made
    return made


async def repair(ctx: StoreContext, *, interval: float = INTERVAL) -> None:
    """Repair the allocation bitmaps from the Services now, then every ``interval`` seconds, forever."""
    found = allocators(ctx)
    ip_repairs = [(Repair(r.store, f"ClusterIPs {r.cidr}"), r) for r in found.ranges.values()]
    ports = found.node_ports
    port_repair = Repair(ports.store, f"NodePorts {ports.spec}")
    while True:
        try:
            services = await stored_services(ctx)
            for ip_repair, ip_range in ip_repairs:
                offsets = (ip_range.offset_of(ip) for ip in held_ips(services, ip_range.family))
                await ip_repair.run_once(o for o in offsets if o is not None)
            await port_repair.run_once(p - ports.base for p in held_node_ports(services) if ports.contains(p))
        except errors.APIError as e:
            log.warning("repairing the Service allocations failed, trying again later: %s", e.message)
        await asyncio.sleep(interval)


def _finish(txn: Transaction) -> FinishFunc:
    async def finish(ok: bool) -> None:
        if ok:
            await txn.commit()
        else:
            await txn.revert()
    return finish


def _drop_external_name_fields(svc: Obj) -> None:
    # kube-apiserver defaulted internalTrafficPolicy for ExternalName Services once, and drops it
    # when reading them; kubesim drops it when writing, so that reads show the same.
    spec = svc.get("spec") or {}
    if spec.get("type") == "ExternalName":
        spec.pop("internalTrafficPolicy", None)


class ServiceStrategy(Strategy):
    """The create and update rules of Services."""

    allow_create_on_update = True
    selectable_fields: ClassVar[tuple[str, ...]] = ("spec.clusterIP", "spec.type")

    async def begin_create(self, ctx: StoreContext, obj: Obj, *, dry_run: bool) -> FinishFunc:
        defaults.default_service(obj)
        fields.normalize_cluster_ips(obj, None)
        return _finish(await allocators(ctx).allocate_create(obj, dry_run=dry_run))

    async def begin_update(self, ctx: StoreContext, new: Obj, old: Obj, *, dry_run: bool) -> FinishFunc:
        defaults.default_service(new)
        fields.patch_allocated_values(new, old)
        fields.normalize_cluster_ips(new, old)
        return _finish(await allocators(ctx).allocate_update(new, old, dry_run=dry_run))

    async def after_delete(self, ctx: StoreContext, obj: Obj) -> None:
        meta = obj.get("metadata") or {}
        # kube-apiserver deletes the Service's Endpoints with it, lest a new Service of the
        # same name be sent to the old endpoints before the endpoints controller catches up.
        try:
            await ctx.store(kinds.ENDPOINTS).delete(meta.get("namespace"), meta.get("name") or "", DeleteOptions())
        except errors.APIError as e:
            if e.reason != "NotFound":
                log.warning("deleting the Endpoints of Service %s/%s failed: %s", meta.get("namespace"),
                            meta.get("name"), e.message)
        await allocators(ctx).release_all(obj)

    def prepare_for_create(self, obj: Obj) -> None:
        obj["status"] = {"loadBalancer": {}}
        _drop_external_name_fields(obj)

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        super().prepare_for_update(new, old)
        fields.drop_type_dependent_fields(new, old)
        _drop_external_name_fields(new)

    def default(self, obj: Obj) -> None:
        defaults.default_service(obj)

    def validate(self, obj: Obj) -> list[FieldError]:
        return validation.validate_service(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_service_update(new, old)

    def warnings_on_create(self, obj: Obj) -> list[str]:
        return validation.service_warnings(obj)

    def warnings_on_update(self, new: Obj, old: Obj) -> list[str]:
        return validation.service_warnings(new)


class ServiceStatusStrategy(StatusStrategy):
    """``services/status``: the load balancer's ingress points, VIPs unless said otherwise."""

    def default(self, obj: Obj) -> None:
        defaults.default_service_status(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_service_status_update(new, old)


_STRATEGY: Final = ServiceStrategy()

# --- printer ------------------------------------------------------------------------------------

_SPEC = "io.k8s.api.core.v1.ServiceSpec"
COLUMNS: Final = (
    printers.NAME,
    Column("Type", "string", (_SPEC, "type")),
    Column("Cluster-IP", "string", (_SPEC, "clusterIP")),
    Column("External-IP", "string", (_SPEC, "externalIPs")),
    Column("Port(s)", "string", (_SPEC, "ports")),
    printers.AGE,
    Column("Selector", "string", (_SPEC, "selector"), 1),
)
#: How much of a LoadBalancer's addresses fits the column (``loadBalancerWidth``).
_LOAD_BALANCER_WIDTH: Final = 16


def _load_balancer_addresses(svc: Obj) -> str:
    """``loadBalancerStatusStringer``: the ingress IPs (or hostnames), sorted, cut to 16 characters."""
    found = set()
    for ingress in ((svc.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []:
        if ingress.get("ip"):
            found.add(ingress["ip"])
        elif ingress.get("hostname"):
            found.add(ingress["hostname"])
    text = ",".join(sorted(found))
    if len(text) > _LOAD_BALANCER_WIDTH:
        text = text[:_LOAD_BALANCER_WIDTH - 3] + "..."
    return text


def external_ip(svc: Obj) -> str:
    """``getServiceExternalIP``: what reaches the Service from outside, by type."""
    spec = svc.get("spec") or {}
    external = [str(ip) for ip in spec.get("externalIPs") or []]
    kind = spec.get("type")
    if kind in ("ClusterIP", "NodePort"):
        return ",".join(external) if external else "<none>"
    if kind == "LoadBalancer":
        balancer = _load_balancer_addresses(svc)
        if external:
            return ",".join((balancer.split(",") if balancer else []) + external)
        return balancer or "<pending>"
    if kind == "ExternalName":
        return str(spec.get("externalName") or "")
    return "<unknown>"


def port_string(ports: list[Obj]) -> str:
    """``makePortString``: ``80/TCP,443:30443/TCP``."""
    pieces = []
    for port in ports:
        protocol = port.get("protocol") or ""
        if port.get("nodePort"):
            pieces.append(f"{port.get('port', 0)}:{port['nodePort']}/{protocol}")
        else:
            pieces.append(f"{port.get('port', 0)}/{protocol}")
    return ",".join(pieces)


def _row(svc: Obj, now: datetime) -> Row:
    metadata: Obj = svc.get("metadata") or {}
    spec: Obj = svc.get("spec") or {}
    ips = spec.get("clusterIPs") or []
    return Row([
        metadata.get("name", ""), spec.get("type") or "", ips[0] if ips else "<none>", external_ip(svc),
        port_string([p for p in spec.get("ports") or [] if isinstance(p, dict)]) or "<none>",
        since(metadata.get("creationTimestamp"), now),
        labels.format_selector(spec.get("selector") or {}) or "<none>",
    ])


PRINTER: Final = Printer(COLUMNS, _row)

RESOURCE: Final = Resource(
    info=kinds.SERVICES,
    strategy=_STRATEGY,
    subresources={
        "status": StatusREST(ServiceStatusStrategy(_STRATEGY)),
        "proxy": connect.ServiceProxyREST(),
    },
    printer=PRINTER,
)
