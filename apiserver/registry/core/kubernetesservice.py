"""The ``kubernetes`` Service in ``default``, with its Endpoints and EndpointSlice, pointing at the APIServer.

kube-apiserver's bootstrap controllers (``kubernetesservice`` and the
endpoint reconciler) make every cluster reachable from inside at
``kubernetes.default``: a ClusterIP Service holding the first address of the
service range (``10.96.0.1``), port 443 named ``https``, whose Endpoints and
EndpointSlice list the APIServer's advertised address and port. Clients such
as ``kubectl cluster-info`` look for it. :func:`ensure` creates them at the
first start and brings the endpoints up to date on every later one (the
most recently started APIServer is the one listed; kube-apiserver lists
every live one, which one port per address cannot express here).

kubesim serves on loopback, an address Kubernetes refuses in Endpoints and
EndpointSlices; the APIServer writes its own address past that one rule (and
only for these objects).
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any, Final

from apiserver import errors
from apiserver.registry.core.service.ipallocator import parse_service_cidrs
from apiserver.registry.store import WriteOptions
from apiserver.registry.strategy import Obj, Strategy
from apiserver.validation.field import FieldError
from machinery.api import kinds

if TYPE_CHECKING:
    from apiserver.registry.store import Store, StoreContext

NAME: Final = "kubernetes"
NAMESPACE: Final = "default"
SERVICE_PORT: Final = 443
_MANAGER: Final = "kube-apiserver"
_LOOPBACK: Final = "may not be in the loopback range"


def _own_address(base: Strategy, address: str) -> Strategy:
    """``base`` with its validation blind to ``address`` being loopback, and to nothing else."""

    def keep(errs: list[FieldError]) -> list[FieldError]:
        return [e for e in errs if not (e.bad_value == address and e.detail.startswith(_LOOPBACK))]

    class OwnAddress(type(base)):  # type: ignore[misc]
        def validate(self, obj: Obj) -> list[FieldError]:
            return keep(super().validate(obj))

        def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
            return keep(super().validate_update(new, old))

    strategy = copy.copy(base)
    strategy.__class__ = OwnAddress
    return strategy


def service(cluster_ip: str, target_port: int) -> Obj:
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": NAME, "namespace": NAMESPACE,
                         "labels": {"component": "apiserver", "provider": "kubernetes"}},
            "spec": {"type": "ClusterIP", "clusterIP": cluster_ip, "clusterIPs": [cluster_ip],
                     "ipFamilyPolicy": "SingleStack", "sessionAffinity": "None",
                     "ports": [{"name": "https", "port": SERVICE_PORT, "protocol": "TCP",
                                "targetPort": target_port}]}}


def endpoints(address: str, port: int) -> Obj:
    return {"apiVersion": "v1", "kind": "Endpoints",
            # The reconciler writes the EndpointSlice itself: the mirroring controller must skip these.
            "metadata": {"name": NAME, "namespace": NAMESPACE,
                         "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"}},
            "subsets": [{"addresses": [{"ip": address}], "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}]}


def endpoint_slice(address: str, port: int) -> Obj:
    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": NAME, "namespace": NAMESPACE, "labels": {"kubernetes.io/service-name": NAME}},
            "addressType": "IPv6" if ":" in address else "IPv4",
            "endpoints": [{"addresses": [address], "conditions": {"ready": True}}],
            "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}


async def _put(store: Store, obj: Obj, same: Any) -> None:
    """Update the stored object when ``same(stored)`` is false, or create ``obj`` when there is none.

    The stored one is looked at first, as kube-apiserver's controller GETs before it
    creates: a create of the Service would first try to allocate its ClusterIP, which
    the stored Service holds, and fail as Invalid rather than AlreadyExists.
    """
    meta = obj["metadata"]

    def update(current: Obj, _entry: Any) -> Obj:
        if same(current):
            return current
        merged = copy.deepcopy(obj)
        merged["metadata"] = {**current.get("metadata", {}), "labels": {
            **(current.get("metadata", {}).get("labels") or {}), **meta["labels"]}}
        return merged

    try:
        await store.update_with(meta["namespace"], meta["name"], update, WriteOptions(field_manager=_MANAGER))
        return
    except errors.APIError as e:
        if e.reason != "NotFound":
            raise
    # Another APIServer creating it meanwhile gives AlreadyExists: the caller tries again (and updates).
    await store.create(meta["namespace"], copy.deepcopy(obj), WriteOptions(field_manager=_MANAGER))


async def ensure(ctx: StoreContext) -> None:
    """Create or update the ``kubernetes`` Service, Endpoints and EndpointSlice for this APIServer."""
    settings = ctx.settings
    if not settings.advertise_port:
        return
    address, port = settings.advertise_address, settings.advertise_port
    first_ip = str(parse_service_cidrs(settings.service_cluster_ip_range)[0].network_address + 1)
    svc = service(first_ip, port)

    def service_current(current: Obj) -> bool:
        ports = (current.get("spec") or {}).get("ports") or []
        return [(p.get("name"), p.get("port"), p.get("targetPort")) for p in ports] == [("https", SERVICE_PORT, port)]

    def keep_allocated(current: Obj) -> bool:
        # An update keeps the allocated ClusterIP: only the ports are brought up to date.
        if not service_current(current):
            svc["spec"]["clusterIP"] = (current.get("spec") or {}).get("clusterIP") or first_ip
            svc["spec"]["clusterIPs"] = (current.get("spec") or {}).get("clusterIPs") or [first_ip]
            return False
        return True

    await _put(ctx.store(kinds.SERVICES), svc, keep_allocated)
    ep = endpoints(address, port)
    await _put(ctx.store(kinds.ENDPOINTS).using(_own_address(ctx.store(kinds.ENDPOINTS).strategy, address)), ep,
               lambda current: current.get("subsets") == ep["subsets"])
    slice_ = endpoint_slice(address, port)
    slices = ctx.store(kinds.ENDPOINT_SLICES)
    await _put(slices.using(_own_address(slices.strategy, address)), slice_,
               lambda current: current.get("endpoints") == slice_["endpoints"] and
               current.get("ports") == slice_["ports"])
