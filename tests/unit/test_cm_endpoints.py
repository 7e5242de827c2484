"""The Endpoints controller's subsets: ready and not-ready addresses, named ports, headless Services."""

from __future__ import annotations

from typing import Any

from kubernetes.client import V1Pod, V1Service

from controller_manager.controllers.endpoints import desired_subsets
from machinery.client.objects import decode


def service(ports: list[dict[str, Any]], **spec: Any) -> V1Service:
    return decode(V1Service, {"metadata": {"name": "web", "namespace": "ns"},
                              "spec": {"selector": {"app": "web"}, "ports": ports, **spec}})


def pod(name: str, ip: str | None, *, ready: bool = True, phase: str = "Running", node: str = "n1",
        ports: list[dict[str, Any]] | None = None, deleting: bool = False, **spec: Any) -> V1Pod:
    meta: dict[str, Any] = {"name": name, "namespace": "ns", "uid": f"uid-{name}", "labels": {"app": "web"}}
    if deleting:
        meta["deletionTimestamp"] = "2024-01-01T00:00:00Z"
    status: dict[str, Any] = {"phase": phase, "conditions": [{"type": "Ready", "status": str(ready)}]}
    if ip:
        status["podIP"] = ip
    return decode(V1Pod, {"metadata": meta, "spec": {"nodeName": node, "containers": [
        {"name": "c", "image": "i", "ports": ports or []}], **spec}, "status": status})


def address(name: str, ip: str, node: str = "n1") -> dict[str, Any]:
    return {"ip": ip, "nodeName": node, "targetRef": {"kind": "Pod", "namespace": "ns", "name": name,
                                                       "uid": f"uid-{name}"}}


def test_ready_pods_are_addresses_and_others_not_ready_and_finished_or_ipless_ones_absent() -> None:
    pods = [pod("a", "10.0.0.2"), pod("b", "10.0.0.1", ready=False), pod("c", None),
            pod("d", "10.0.0.9", phase="Failed"), pod("e", "10.0.0.8", deleting=True)]
    subsets, truncated = desired_subsets(service([{"name": "http", "port": 80, "targetPort": 8080}]), pods)
    assert not truncated
    assert subsets == [{"addresses": [address("a", "10.0.0.2")], "notReadyAddresses": [address("b", "10.0.0.1")],
                        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]}]


def test_a_named_target_port_resolves_per_pod_and_pods_without_it_are_left_out() -> None:
    pods = [pod("a", "10.0.0.1", ports=[{"name": "web", "containerPort": 8080}]),
            pod("b", "10.0.0.2", ports=[{"name": "web", "containerPort": 9090}]), pod("c", "10.0.0.3")]
    subsets, _ = desired_subsets(service([{"port": 80, "targetPort": "web"}]), pods)
    assert subsets == [
        {"addresses": [address("a", "10.0.0.1")], "ports": [{"port": 8080, "protocol": "TCP"}]},
        {"addresses": [address("b", "10.0.0.2")], "ports": [{"port": 9090, "protocol": "TCP"}]}]


def test_a_headless_service_without_ports_lists_addresses_and_publish_not_ready_counts_all_ready() -> None:
    subsets, _ = desired_subsets(service([], clusterIP="None", publishNotReadyAddresses=True),
                                 [pod("a", "10.0.0.1", ready=False, hostname="a", subdomain="web")])
    assert subsets == [{"addresses": [{**address("a", "10.0.0.1"), "hostname": "a"}]}]
