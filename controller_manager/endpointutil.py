"""What the Endpoints and EndpointSlice controllers share (``pkg/controller/util/endpoint``).

- which Pods belong in a Service's endpoints (``ShouldPodBeInEndpoints``): an
  IP, not finished (a Failed Pod, or a Succeeded one that will not restart),
  and, unless the caller keeps terminating endpoints, not being deleted;
- a Service port's ``targetPort`` resolved against a Pod (``FindPort``): a
  number as it is, a name looked up among the Pod's container ports with the
  same protocol;
- the Services whose selector matches a Pod, and a Service's selector;
- which Services a Pod's change concerns (``GetServicesToUpdateOnPodChange``),
  and the Pod handlers both controllers register to enqueue them
  (:func:`enqueue_services_of_pods`).

Pure functions, but for :func:`enqueue_services_of_pods`, whose handlers run
on the informer's task and only enqueue, as every controller's handlers do.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final

from kubernetes.client import V1Pod, V1Service

from machinery.api.labels import Selector, selector_from_set
from machinery.client.objects import key_of, meta_of
from machinery.informer.shared import DeletedFinalStateUnknown, SharedInformer
from machinery.informer.store import NAMESPACE_INDEX

#: The label EndpointSlices name their Service with.
SERVICE_NAME_LABEL: Final = "kubernetes.io/service-name"
HEADLESS_LABEL: Final = "service.kubernetes.io/headless"
TRIGGER_TIME_ANNOTATION: Final = "endpoints.kubernetes.io/last-change-trigger-time"


def service_selector(service: V1Service) -> Selector | None:
    """The Service's selector; None for a Service without one (its endpoints are someone else's)."""
    selector = service.spec.selector if service.spec is not None else None
    if not selector:
        return None
    return selector_from_set(selector)


def is_headless(service: V1Service) -> bool:
    return service.spec is not None and service.spec.cluster_ip == "None"


def should_pod_be_in_endpoints(pod: V1Pod, *, include_terminating: bool) -> bool:
    status = pod.status
    phase = status.phase if status is not None else None
    restart = pod.spec.restart_policy if pod.spec is not None else None
    if phase == "Failed":
        return False
    if phase == "Succeeded" and restart != "Always":
        return False
    if not (status is not None and status.pod_ip):
        return False
    return include_terminating or meta_of(pod).deletion_timestamp is None


def find_port(pod: V1Pod, service_port: Any) -> int | None:
    """``podutil.FindPort``: the container port a Service port targets on this Pod, or None."""
    target = service_port.target_port if service_port.target_port is not None else service_port.port
    protocol = service_port.protocol or "TCP"
    if isinstance(target, int):
        return target
    text = str(target)
    if text.isdigit():
        return int(text)
    for container in (pod.spec.containers if pod.spec is not None else None) or ():
        for port in container.ports or ():
            if port.name == text and (port.protocol or "TCP") == protocol:
                return int(port.container_port)
    return None


def services_for_pod(services: Iterable[V1Service], pod: V1Pod) -> list[V1Service]:
    labels: Mapping[str, str] = meta_of(pod).labels or {}
    result = []
    for service in services:
        selector = service_selector(service)
        if selector is not None and selector.matches(labels):
            result.append(service)
    return result


def services_to_update_on_pod_change(services: Sequence[V1Service], old: V1Pod, new: V1Pod) -> list[V1Service]:
    """``GetServicesToUpdateOnPodChange``: the Services an updated Pod is, or was, an endpoint of.

    A resync (the same resourceVersion) concerns none; otherwise the Services selecting the Pod
    now, and, when its labels changed, also those that selected it before (it has left them).
    """
    if meta_of(old).resource_version == meta_of(new).resource_version:
        return []
    result = services_for_pod(services, new)
    if (meta_of(old).labels or {}) != (meta_of(new).labels or {}):
        now = {key_of(s) for s in result}
        result += [s for s in services_for_pod(services, old) if key_of(s) not in now]
    return result


def enqueue_services_of_pods(pods: SharedInformer[V1Pod], services: SharedInformer[V1Service],
                             enqueue: Callable[[V1Service], None]) -> None:
    """Register on ``pods`` the handlers of both endpoints controllers: a Pod added, updated or deleted
    enqueues the Services (from ``services``, indexed by namespace) whose endpoints it may change."""

    def in_namespace(pod: V1Pod) -> Sequence[V1Service]:
        return services.store.by_index(NAMESPACE_INDEX, meta_of(pod).namespace or "")

    def changed(pod: V1Pod) -> None:
        for service in services_for_pod(in_namespace(pod), pod):
            enqueue(service)

    def updated(old: V1Pod, new: V1Pod) -> None:
        for service in services_to_update_on_pod_change(in_namespace(new), old, new):
            enqueue(service)

    def deleted(obj: V1Pod | DeletedFinalStateUnknown[V1Pod]) -> None:
        changed(obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj)

    pods.add_handler(on_add=changed, on_update=updated, on_delete=deleted)
