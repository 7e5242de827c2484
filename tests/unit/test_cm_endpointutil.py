"""What the Endpoints and EndpointSlice controllers share: which Services a Pod's change concerns.

Both controllers register the same Pod handlers (:func:`enqueue_services_of_pods`);
these tests feed them through scripted informers and check which Services they
enqueue, as ``GetServicesToUpdateOnPodChange`` decides in Kubernetes.
"""

from __future__ import annotations

from typing import Any

from kubernetes.client import V1Pod, V1Service

from controller_manager import endpointutil as eu
from machinery.api.kinds import PODS, SERVICES
from machinery.client.objects import decode, meta_of
from machinery.informer.store import NAMESPACE_INDEX, index_by_namespace
from tests.unit.test_cm_fakes import FakeInformers, pod, settle


def service(name: str, *, namespace: str = "ns", **selector: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": namespace},
            "spec": {"selector": selector or None, "ports": [{"port": 80}]}}


def decoded(obj: dict[str, Any], resource_version: str) -> V1Pod:
    obj["metadata"]["resourceVersion"] = resource_version
    return decode(V1Pod, obj)


def names(services: list[V1Service]) -> list[str]:
    return [meta_of(s).name or "" for s in services]


SERVICES_IN_NS = [decode(V1Service, service("web", app="web")), decode(V1Service, service("db", app="db")),
                  decode(V1Service, service("manual"))]


def test_a_resync_concerns_no_service() -> None:
    old = decoded(pod("p", labels={"app": "web"}), "5")
    assert eu.services_to_update_on_pod_change(SERVICES_IN_NS, old, old) == []


def test_a_status_change_concerns_the_services_selecting_the_pod() -> None:
    old, new = decoded(pod("p", labels={"app": "web"}), "5"), decoded(pod("p", labels={"app": "web"}), "6")
    assert names(eu.services_to_update_on_pod_change(SERVICES_IN_NS, old, new)) == ["web"]


def test_a_relabelled_pod_concerns_the_services_it_joins_and_those_it_leaves() -> None:
    old, new = decoded(pod("p", labels={"app": "web"}), "5"), decoded(pod("p", labels={"app": "db"}), "6")
    assert names(eu.services_to_update_on_pod_change(SERVICES_IN_NS, old, new)) == ["db", "web"]


async def test_the_pod_handlers_enqueue_the_services_of_the_pods_namespace() -> None:
    informers = FakeInformers()
    services = informers.informer(SERVICES, indexers={NAMESPACE_INDEX: index_by_namespace})
    pods = informers.informer(PODS, indexers={NAMESPACE_INDEX: index_by_namespace})
    queued: list[str] = []
    eu.enqueue_services_of_pods(pods, services, lambda s: queued.append(f"{meta_of(s).namespace}/{meta_of(s).name}"))
    informers.list(SERVICES, [service("web", app="web"), service("db", app="db"),
                              service("web", namespace="other", app="web")])
    informers.list(PODS, [])
    async with informers.running():
        await settle()
        informers.event(PODS, "ADDED", pod("p", labels={"app": "web"}))
        await settle()
        assert queued == ["ns/web"]
        informers.event(PODS, "MODIFIED", pod("p", labels={"app": "db"}))
        await settle()
        assert queued == ["ns/web", "ns/db", "ns/web"]
        informers.event(PODS, "DELETED", pod("p", labels={"app": "db"}))
        await settle()
        assert queued == ["ns/web", "ns/db", "ns/web", "ns/db"]
