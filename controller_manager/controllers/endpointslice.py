"""The EndpointSlice controller: each Service with a selector has EndpointSlices listing its Pods.

Kubernetes' ``pkg/controller/endpointslice``: the Pods a Service selects
(with an IP, not finished; terminating ones too, marked so) become
endpoints of ``discovery.k8s.io/v1`` EndpointSlices labelled
``kubernetes.io/service-name`` and ``endpointslice.kubernetes.io/managed-by:
endpointslice-controller.k8s.io``, owned by the Service (so the garbage
collector removes them with it). Each endpoint has its address, its
conditions (``ready``: serving and not terminating, or always with
``publishNotReadyAddresses``; ``serving``: the Pod's readiness;
``terminating``), ``nodeName``, the node's ``topology.kubernetes.io/zone``,
a ``targetRef`` and its ``hostname`` when the Pod's subdomain is the Service.
Pods whose Service ports resolve alike share slices of at most 100
endpoints (``--max-endpoints-per-slice``).

Reconciling is simpler than Kubernetes' minimal-churn placement: for each
port set, the desired chunks go into the existing slices of that port set in
order (updated only when they differ), extra chunks get new slices, and
slices left over are deleted.

Concurrency: ``concurrent_service_endpoint_syncs`` workers keyed by Service;
handlers only enqueue.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, Final

from kubernetes.client import V1EndpointSlice, V1Pod, V1Service

from controller_manager import endpointutil as eu
from controller_manager.context import ControllerContext
from controller_manager.podcontrol import owner_reference
from controller_manager.podutil import is_pod_ready
from machinery.api.kinds import ENDPOINT_SLICES, NODES, PODS, SERVICES, ObjectKey, split_key
from machinery.api.meta import format_time, utcnow
from machinery.client.errors import ApiError, NotFound
from machinery.client.objects import meta_of, to_wire
from machinery.controller import Controller
from machinery.informer.shared import DeletedFinalStateUnknown
from machinery.informer.store import NAMESPACE_INDEX, index_by_namespace

log = logging.getLogger(__name__)

NAME: Final = "endpointslice-controller"
ALIASES: Final = ("endpointslice",)
MANAGED_BY_LABEL: Final = "endpointslice.kubernetes.io/managed-by"
MANAGED_BY: Final = "endpointslice-controller.k8s.io"
MAX_ENDPOINTS_PER_SLICE: Final = 100
ZONE_LABEL: Final = "topology.kubernetes.io/zone"
SERVICE_INDEX: Final = "service"


def index_by_service(slice_: V1EndpointSlice) -> Sequence[str]:
    meta = meta_of(slice_)
    labels = meta.labels or {}
    if labels.get(MANAGED_BY_LABEL) != MANAGED_BY or eu.SERVICE_NAME_LABEL not in labels:
        return ()
    return (f"{meta.namespace}/{labels[eu.SERVICE_NAME_LABEL]}",)


class EndpointSliceController(Controller):
    """Keeps every selecting Service's EndpointSlices equal to its Pods."""

    def __init__(self, ctx: ControllerContext, *, max_endpoints_per_slice: int = MAX_ENDPOINTS_PER_SLICE) -> None:
        self._services = ctx.informers.informer(SERVICES, indexers={NAMESPACE_INDEX: index_by_namespace})
        self._pods = ctx.informers.informer(PODS, indexers={NAMESPACE_INDEX: index_by_namespace})
        self._nodes = ctx.informers.informer(NODES)
        self._slices = ctx.informers.informer(ENDPOINT_SLICES, indexers={SERVICE_INDEX: index_by_service})
        super().__init__("endpoint_slice", informers=[self._services, self._pods, self._nodes, self._slices],
                         workers=ctx.options.concurrent_service_endpoint_syncs, clock=ctx.clock)
        self._client = ctx.client
        self._is_leading = ctx.is_leading
        self._max = max_endpoints_per_slice
        self._services.add_handler(on_add=self.enqueue, on_update=lambda _o, n: self.enqueue(n),
                                   on_delete=self.enqueue)
        eu.enqueue_services_of_pods(self._pods, self._services, self.enqueue)
        self._slices.add_handler(on_update=lambda _o, n: self._slice_changed(n), on_delete=self._slice_changed)

    def _slice_changed(self, obj: V1EndpointSlice | DeletedFinalStateUnknown[V1EndpointSlice]) -> None:
        slice_ = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        for key in index_by_service(slice_):
            self.queue.add(ObjectKey(key))

    async def sync(self, key: ObjectKey) -> None:
        if not self._is_leading():
            return
        namespace, _name = split_key(key)
        service = self._services.store.get(key)
        existing = self._slices.store.by_index(SERVICE_INDEX, key)
        if service is None:
            # The garbage collector deletes the slices with their owner; nothing to do here.
            return
        selector = eu.service_selector(service)
        if selector is None:
            return
        pods = [p for p in self._pods.store.by_index(NAMESPACE_INDEX, namespace or "")
                if selector.matches(meta_of(p).labels or {})]
        desired = self._desired(service, pods)
        await self._reconcile(service, desired, existing)

    def _desired(self, service: V1Service, pods: Sequence[V1Pod]) -> dict[tuple[Any, ...], list[list[Any]]]:
        """Endpoints by port set, chunked into slices."""
        spec = service.spec
        publish = bool(spec is not None and spec.publish_not_ready_addresses)
        ports = list((spec.ports if spec is not None else None) or ())
        groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
        for pod in sorted(pods, key=lambda p: ((p.status.pod_ip if p.status else "") or "", meta_of(p).name)):
            if not eu.should_pod_be_in_endpoints(pod, include_terminating=True):
                continue
            resolved = []
            for port in ports:
                number = eu.find_port(pod, port)
                if number is None:
                    continue
                entry: dict[str, Any] = {"name": port.name or "", "port": number, "protocol": port.protocol or "TCP"}
                if port.app_protocol:
                    entry["appProtocol"] = port.app_protocol
                resolved.append(entry)
            if ports and not resolved:
                continue
            port_key = tuple(sorted(tuple(sorted(e.items())) for e in resolved))
            groups.setdefault(port_key, []).append(self._endpoint(service, pod, publish))
        return {k: [v[i:i + self._max] for i in range(0, len(v), self._max)] for k, v in groups.items()}

    def _endpoint(self, service: V1Service, pod: V1Pod, publish: bool) -> dict[str, Any]:
        meta = meta_of(pod)
        spec = pod.spec
        serving = is_pod_ready(pod)
        terminating = meta.deletion_timestamp is not None
        endpoint: dict[str, Any] = {
            "addresses": [pod.status.pod_ip if pod.status else ""],
            "conditions": {"ready": publish or (serving and not terminating), "serving": serving,
                           "terminating": terminating},
        }
        if spec is not None and spec.hostname and spec.subdomain == meta_of(service).name:
            endpoint["hostname"] = spec.hostname
        endpoint["targetRef"] = {"kind": "Pod", "namespace": meta.namespace, "name": meta.name, "uid": meta.uid}
        node_name = spec.node_name if spec is not None else None
        if node_name:
            endpoint["nodeName"] = node_name
            node = self._nodes.store.get(node_name)
            zone = (meta_of(node).labels or {}).get(ZONE_LABEL) if node is not None else None
            if zone:
                endpoint["zone"] = zone
        return endpoint

    async def _reconcile(self, service: V1Service, desired: Mapping[tuple[Any, ...], list[list[Any]]],
                         existing: Sequence[V1EndpointSlice]) -> None:
        meta = meta_of(service)
        labels = {k: v for k, v in (meta.labels or {}).items()
                  if k not in (eu.SERVICE_NAME_LABEL, MANAGED_BY_LABEL)}
        labels[eu.SERVICE_NAME_LABEL] = meta.name or ""
        labels[MANAGED_BY_LABEL] = MANAGED_BY
        if eu.is_headless(service):
            labels[eu.HEADLESS_LABEL] = ""
        by_ports: dict[tuple[Any, ...], list[V1EndpointSlice]] = {}
        for slice_ in sorted(existing, key=lambda s: meta_of(s).name or ""):
            wire_ports = [to_wire(p) for p in slice_.ports or ()]
            for p in wire_ports:
                p.setdefault("name", "")
            key = tuple(sorted(tuple(sorted(p.items())) for p in wire_ports))
            by_ports.setdefault(key, []).append(slice_)
        # A Service without Pods still has one slice, empty and without ports (Kubernetes' placeholder).
        wanted: dict[tuple[Any, ...], list[list[Any]]] = dict(desired) or {(): [[]]}
        leftovers: list[V1EndpointSlice] = [s for k, v in by_ports.items() if k not in wanted for s in v]
        for port_key, chunks in wanted.items():
            slices = by_ports.get(port_key, [])
            ports = [dict(items) for items in port_key]
            for i, chunk in enumerate(chunks):
                if i < len(slices):
                    await self._update(slices[i], chunk, labels)
                else:
                    await self._create(service, chunk, ports, labels)
            leftovers.extend(slices[len(chunks):])
        for slice_ in leftovers:
            try:
                await self._client.delete(ENDPOINT_SLICES, meta_of(slice_).name or "",
                                          namespace=meta_of(slice_).namespace)
            except NotFound:
                pass

    async def _create(self, service: V1Service, endpoints: list[Any], ports: list[dict[str, Any]],
                      labels: dict[str, str]) -> None:
        meta = meta_of(service)
        body = {"apiVersion": ENDPOINT_SLICES.api_version, "kind": "EndpointSlice",
                "metadata": {"generateName": f"{meta.name}-", "namespace": meta.namespace, "labels": labels,
                             "annotations": {eu.TRIGGER_TIME_ANNOTATION: format_time(utcnow())},
                             "ownerReferences": [owner_reference(service, SERVICES)]},
                "addressType": "IPv4", "endpoints": endpoints, "ports": ports}
        try:
            await self._client.create(ENDPOINT_SLICES, body)
        except ApiError as err:
            if err.has_cause("NamespaceTerminating"):
                return
            raise

    async def _update(self, slice_: V1EndpointSlice, endpoints: list[Any], labels: dict[str, str]) -> None:
        current = [to_wire(e) for e in slice_.endpoints or ()]
        if current == endpoints and (meta_of(slice_).labels or {}) == labels:
            return
        body = to_wire(slice_)
        body["endpoints"] = endpoints
        body["metadata"]["labels"] = labels
        body["metadata"]["annotations"] = {**(body["metadata"].get("annotations") or {}),
                                           eu.TRIGGER_TIME_ANNOTATION: format_time(utcnow())}
        try:
            await self._client.update(ENDPOINT_SLICES, body)
        except NotFound:
            pass
