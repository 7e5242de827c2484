"""Helpers shared by the controller-manager's integration tests (this module holds no tests).

- :func:`start_controller_manager` runs ``python -m controller_manager`` against a
  cluster (stopped by pid with the cluster's other components);
- Pod, Node and Lease builders and status writers that stand in for the
  scheduler and the kubelets, which these tests do not run;
- :class:`Heartbeats`, a thread renewing node Leases as kubelets would.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterable
from typing import Any, Self

import httpx

from kubesim import procs
from machinery.api.meta import format_micro_time, format_time, utcnow
from tests import harness


def start_controller_manager(cluster: harness.Cluster, *args: str, name: str = "controller-manager",
                             leader_elect: bool = False) -> procs.ManagedProcess:
    """A controller-manager process on ``cluster`` under its own identity, ready once /healthz answers."""
    port = procs.free_port()
    argv = [*cluster.component_args("controller-manager"), "--health-port", str(port), "-v", "4"]
    if not leader_elect:
        argv.append("--leader-elect=false")
    return cluster.start_component("controller_manager", [*argv, *args], name=name,
                                   ready_url=f"http://127.0.0.1:{port}/healthz")


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def list_pods(api: httpx.Client, namespace: str, selector: str | None = None) -> list[dict[str, Any]]:
    params = {"labelSelector": selector} if selector else None
    r = api.get(f"/api/v1/namespaces/{namespace}/pods", params=params)
    r.raise_for_status()
    items: list[dict[str, Any]] = r.json()["items"]
    return items


def active(pods: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Pods the replication manager counts: not terminating, not finished."""
    return [p for p in pods if not p["metadata"].get("deletionTimestamp")
            and p.get("status", {}).get("phase") not in ("Succeeded", "Failed")]


def get(api: httpx.Client, path: str) -> dict[str, Any] | None:
    r = api.get(path)
    if r.status_code == 404:
        return None
    r.raise_for_status()
    obj: dict[str, Any] = r.json()
    return obj


def must_get(api: httpx.Client, path: str) -> dict[str, Any]:
    obj = get(api, path)
    assert obj is not None, f"{path} does not exist"
    return obj


def events(api: httpx.Client, namespace: str, reason: str | None = None) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = api.get(f"/api/v1/namespaces/{namespace}/events").json()["items"]
    return [e for e in items if reason is None or e["reason"] == reason]


def set_pod_status(api: httpx.Client, namespace: str, name: str, *, phase: str = "Running",
                   ready: bool = True) -> dict[str, Any]:
    """Write a Pod's status as its kubelet would (phase, and the Ready condition)."""
    now = format_time(utcnow())
    status = {"phase": phase, "conditions": [
        {"type": "Ready", "status": "True" if ready else "False", "lastTransitionTime": now},
        {"type": "PodScheduled", "status": "True", "lastTransitionTime": now}]}
    r = api.patch(f"/api/v1/namespaces/{namespace}/pods/{name}/status", json={"status": status},
                  headers={"Content-Type": "application/strategic-merge-patch+json"})
    r.raise_for_status()
    pod: dict[str, Any] = r.json()
    return pod


def bind(api: httpx.Client, namespace: str, name: str, node: str) -> None:
    r = api.post(f"/api/v1/namespaces/{namespace}/pods/{name}/binding",
                 json={"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
                       "target": {"apiVersion": "v1", "kind": "Node", "name": node}})
    assert r.status_code == 201, r.text


def create_node(api: httpx.Client, name: str, *, ready: str | None = "True",
                labels: dict[str, str] | None = None) -> dict[str, Any]:
    """A Node as a kubelet registers it: with a Ready condition (unless ``ready`` is None) and a Lease."""
    r = api.post("/api/v1/nodes", json={"apiVersion": "v1", "kind": "Node",
                                        "metadata": {"name": name, "labels": labels or {}}})
    assert r.status_code == 201, r.text
    if ready is not None:
        post_node_status(api, name, ready)
    r = api.post("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", json={
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": name, "ownerReferences": [
            {"apiVersion": "v1", "kind": "Node", "name": name, "uid": r.json()["metadata"]["uid"]}]},
        "spec": {"holderIdentity": name, "leaseDurationSeconds": 40, "renewTime": format_micro_time(utcnow())}})
    assert r.status_code == 201, r.text
    return must_get(api, f"/api/v1/nodes/{name}")


def post_node_status(api: httpx.Client, name: str, ready: str) -> None:
    """The kubelet's status update: the Ready condition with a fresh heartbeat."""
    node = must_get(api, f"/api/v1/nodes/{name}")
    now = format_time(utcnow())
    old = next((c for c in node.get("status", {}).get("conditions") or () if c["type"] == "Ready"), None)
    transition = old["lastTransitionTime"] if old is not None and old["status"] == ready else now
    node.setdefault("status", {})["conditions"] = [
        {"type": "Ready", "status": ready, "reason": "KubeletReady" if ready == "True" else "KubeletNotReady",
         "message": "kubelet is posting ready status", "lastHeartbeatTime": now,
         "lastTransitionTime": transition}]
    r = api.put(f"/api/v1/nodes/{name}/status", json=node)
    assert r.status_code == 200, r.text


def renew_lease(api: httpx.Client, name: str) -> None:
    path = f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{name}"
    r = api.patch(path, json={"spec": {"renewTime": format_micro_time(utcnow())}},
                  headers={"Content-Type": "application/merge-patch+json"})
    r.raise_for_status()


def delete_nodes(api: httpx.Client, names: Iterable[str]) -> None:
    for name in names:
        api.delete(f"/api/v1/nodes/{name}")
        api.delete(f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{name}")


def node_taints(api: httpx.Client, name: str) -> set[tuple[str, str]]:
    node = must_get(api, f"/api/v1/nodes/{name}")
    return {(t["key"], t["effect"]) for t in node.get("spec", {}).get("taints") or ()}


class Heartbeats:
    """Renews the Leases of some nodes every ``interval`` seconds from a thread, as their kubelets would."""

    def __init__(self, base_url: str, nodes: Iterable[str], interval: float = 0.5) -> None:
        self.nodes = set(nodes)
        self._interval = interval
        self._stop = threading.Event()
        self._client = harness.admin_client(base_url, timeout=10)
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)
        self._client.close()

    def _run(self) -> None:
        while not self._stop.is_set():
            for name in list(self.nodes):
                try:
                    renew_lease(self._client, name)
                except httpx.HTTPError:
                    pass
            self._stop.wait(self._interval)


def wait_until(predicate: Any, timeout: float = 20.0, message: str = "condition") -> Any:
    return harness.wait_for(predicate, timeout=timeout, interval=0.1, message=message)
