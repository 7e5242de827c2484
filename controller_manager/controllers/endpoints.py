"""The Endpoints controller: each Service with a selector has an Endpoints of the same name listing its Pods.

Kubernetes' ``pkg/controller/endpoint``: for every Service with a selector,
the Pods it selects that should be in endpoints (an IP, not finished, not
terminating) become addresses (``ip``, ``nodeName``, a ``targetRef`` to the
Pod, ``hostname`` when the Pod's subdomain is the Service), under
``addresses`` when ready (or ``publishNotReadyAddresses``) and
``notReadyAddresses`` otherwise. Each Service port resolves its
``targetPort`` on each Pod (by number, or by container port name); Pods with
the same ports share a subset, as ``RepackSubsets`` packs them. A headless
Service without ports gets addresses without ports. Endpoints carry the
Service's labels (plus ``service.kubernetes.io/headless``) and are written
only when they change; over 1,000 addresses they are truncated and annotated
``endpoints.kubernetes.io/over-capacity: truncated``. The Endpoints of a
deleted Service are deleted; a Service without a selector is left to whoever
writes its Endpoints.

Concurrency: ``concurrent_endpoint_syncs`` workers keyed by Service; handlers
only enqueue the Services a Pod (before and after a change) matches.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, Final

from kubernetes.client import V1Endpoints, V1Pod, V1Service

from controller_manager import endpointutil as eu
from controller_manager.context import ControllerContext
from controller_manager.podutil import is_pod_ready
from machinery.api.kinds import ENDPOINTS, PODS, SERVICES, ObjectKey, split_key
from machinery.api.meta import format_time, utcnow
from machinery.client.errors import ApiError, NotFound
from machinery.client.objects import key_of, meta_of, to_wire
from machinery.controller import Controller
from machinery.informer.shared import DeletedFinalStateUnknown
from machinery.informer.store import NAMESPACE_INDEX, index_by_namespace

log = logging.getLogger(__name__)

NAME: Final = "endpoints-controller"
ALIASES: Final = ("endpoint",)
MAX_CAPACITY: Final = 1000
OVER_CAPACITY_ANNOTATION: Final = "endpoints.kubernetes.io/over-capacity"


class EndpointsController(Controller):
    """Keeps every selecting Service's Endpoints equal to its Pods."""

    def __init__(self, ctx: ControllerContext) -> None:
        self._services = ctx.informers.informer(SERVICES, indexers={NAMESPACE_INDEX: index_by_namespace})
        self._pods = ctx.informers.informer(PODS, indexers={NAMESPACE_INDEX: index_by_namespace})
        self._endpoints = ctx.informers.informer(ENDPOINTS)
        super().__init__("endpoint", informers=[self._services, self._pods, self._endpoints],
                         workers=ctx.options.concurrent_endpoint_syncs, clock=ctx.clock)
        self._client = ctx.client
        self._is_leading = ctx.is_leading
        self._services.add_handler(on_add=self.enqueue, on_update=lambda _o, n: self.enqueue(n),
                                   on_delete=self.enqueue)
        eu.enqueue_services_of_pods(self._pods, self._services, self.enqueue)
        self._endpoints.add_handler(on_delete=self._endpoints_deleted)

    def _endpoints_deleted(self, obj: V1Endpoints | DeletedFinalStateUnknown[V1Endpoints]) -> None:
        endpoints = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        self.queue.add(key_of(endpoints))

    async def sync(self, key: ObjectKey) -> None:
        if not self._is_leading():
            return
        namespace, name = split_key(key)
        service = self._services.store.get(key)
        current = self._endpoints.store.get(key)
        if service is None:
            if current is not None:
                try:
                    await self._client.delete(ENDPOINTS, name, namespace=namespace)
                except NotFound:
                    pass
            return
        selector = eu.service_selector(service)
        if selector is None:
            return
        pods = [p for p in self._pods.store.by_index(NAMESPACE_INDEX, namespace or "")
                if selector.matches(meta_of(p).labels or {})]
        subsets, truncated = desired_subsets(service, pods)
        labels = dict(meta_of(service).labels or {})
        if eu.is_headless(service):
            labels[eu.HEADLESS_LABEL] = ""
        if current is not None and _subsets_of(current) == subsets and (meta_of(current).labels or {}) == labels \
                and ((meta_of(current).annotations or {}).get(OVER_CAPACITY_ANNOTATION) == "truncated") == truncated:
            return
        annotations: dict[str, str] = {} if current is None else {
            k: v for k, v in (meta_of(current).annotations or {}).items() if k != OVER_CAPACITY_ANNOTATION}
        annotations[eu.TRIGGER_TIME_ANNOTATION] = format_time(utcnow())
        if truncated:
            annotations[OVER_CAPACITY_ANNOTATION] = "truncated"
        try:
            if current is None:
                await self._client.create(ENDPOINTS, {
                    "apiVersion": "v1", "kind": "Endpoints",
                    "metadata": {"name": name, "namespace": namespace, "labels": labels,
                                 "annotations": annotations},
                    "subsets": subsets})
            else:
                body = to_wire(current)
                body["metadata"]["labels"] = labels
                body["metadata"]["annotations"] = annotations
                body["subsets"] = subsets
                await self._client.update(ENDPOINTS, body)
        except ApiError as err:
            if err.has_cause("NamespaceTerminating"):
                return
            raise


def desired_subsets(service: V1Service, pods: Sequence[V1Pod]) -> tuple[list[dict[str, Any]], bool]:
    """The Service's subsets from these Pods, packed by port set and sorted; and whether it was truncated."""
    spec = service.spec
    publish = bool(spec is not None and spec.publish_not_ready_addresses)
    ports = list((spec.ports if spec is not None else None) or ())
    by_ports: dict[tuple[tuple[Any, ...], ...], dict[str, list[dict[str, Any]]]] = {}
    service_name = meta_of(service).name
    count = 0
    truncated = False
    for pod in sorted(pods, key=lambda p: (p.status.pod_ip if p.status else "") or ""):
        if not eu.should_pod_be_in_endpoints(pod, include_terminating=False):
            continue
        address = _address(pod, service_name)
        if ports:
            resolved = []
            for port in ports:
                number = eu.find_port(pod, port)
                if number is None:
                    continue
                entry: dict[str, Any] = {"port": number, "protocol": port.protocol or "TCP"}
                if port.name:
                    entry["name"] = port.name
                if port.app_protocol:
                    entry["appProtocol"] = port.app_protocol
                resolved.append(entry)
            if not resolved:
                continue
            port_key = tuple(sorted(tuple(sorted(e.items())) for e in resolved))
        elif eu.is_headless(service):
            port_key = ()
        else:
            continue
        if count >= MAX_CAPACITY:
            truncated = True
            continue
        count += 1
        group = by_ports.setdefault(port_key, {"addresses": [], "notReadyAddresses": []})
        ready = publish or is_pod_ready(pod)
        group["addresses" if ready else "notReadyAddresses"].append(address)
    subsets = []
    for port_key in sorted(by_ports):
        group = by_ports[port_key]
        subset: dict[str, Any] = {k: v for k, v in group.items() if v}
        if port_key:
            subset["ports"] = [dict(items) for items in port_key]
        subsets.append(subset)
    return subsets, truncated


def _address(pod: V1Pod, service_name: str | None) -> dict[str, Any]:
    meta = meta_of(pod)
    spec = pod.spec
    address: dict[str, Any] = {"ip": pod.status.pod_ip if pod.status else None}
    if spec is not None and spec.hostname and spec.subdomain == service_name:
        address["hostname"] = spec.hostname
    if spec is not None and spec.node_name:
        address["nodeName"] = spec.node_name
    address["targetRef"] = {"kind": "Pod", "namespace": meta.namespace, "name": meta.name, "uid": meta.uid}
    return address


def _subsets_of(endpoints: V1Endpoints) -> list[Mapping[str, Any]]:
    return [to_wire(s) for s in endpoints.subsets or ()]
