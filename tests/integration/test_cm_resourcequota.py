"""ResourceQuota and LimitRange against a real APIServer and the ResourceQuota controller."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from kubesim import procs
from tests import harness, kube
from tests.integration.test_cm_support import get, must_get, start_controller_manager, wait_until

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def controller_manager(cluster: harness.Cluster) -> Iterator[procs.ManagedProcess]:
    proc = start_controller_manager(cluster, "--controllers=resourcequota", name="cm-quota")
    yield proc
    proc.stop()


def create_quota(api: httpx.Client, namespace: str, hard: dict[str, str], name: str = "q") -> dict[str, Any]:
    r = api.post(f"/api/v1/namespaces/{namespace}/resourcequotas",
                 json={"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": name},
                       "spec": {"hard": hard}})
    assert r.status_code == 201, r.text
    path = f"/api/v1/namespaces/{namespace}/resourcequotas/{name}"
    wait_until(lambda: (must_get(api, path).get("status") or {}).get("hard") == hard, message="quota counted")
    return must_get(api, path)


def sized(name: str, cpu: str | None = "100m", memory: str | None = "64Mi") -> dict[str, Any]:
    body = kube.pod(name)
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v}
    body["spec"]["containers"][0]["resources"] = {"requests": requests, "limits": requests}
    return body


def test_a_create_over_quota_is_refused_with_kubernetes_message(api: httpx.Client, namespace: str,
                                                                controller_manager: procs.ManagedProcess) -> None:
    create_quota(api, namespace, {"pods": "2", "count/configmaps": "1"})
    for name in ("a", "b"):
        assert api.post(f"/api/v1/namespaces/{namespace}/pods", json=kube.pod(name)).status_code == 201
    r = api.post(f"/api/v1/namespaces/{namespace}/pods", json=kube.pod("c"))
    assert r.status_code == 403, r.text
    assert r.json()["reason"] == "Forbidden"
    assert r.json()["message"] == ('pods "c" is forbidden: exceeded quota: q, requested: pods=1, used: pods=2, '
                                   "limited: pods=2")
    path = f"/api/v1/namespaces/{namespace}/resourcequotas/q"
    # Admission charged both Pods; the controller's recount may lag a moment behind it.
    wait_until(lambda: must_get(api, path)["status"]["used"]["pods"] == "2", message="usage of both Pods")
    # Deleting a Pod frees its place once the controller recounts.
    assert api.delete(f"/api/v1/namespaces/{namespace}/pods/a").status_code == 200
    wait_until(lambda: must_get(api, path)["status"]["used"]["pods"] == "1", message="usage replenished")
    assert api.post(f"/api/v1/namespaces/{namespace}/pods", json=kube.pod("c")).status_code == 201
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "one"}}
    assert api.post(f"/api/v1/namespaces/{namespace}/configmaps", json=cm).status_code == 201
    r = api.post(f"/api/v1/namespaces/{namespace}/configmaps", json={**cm, "metadata": {"name": "two"}})
    assert r.status_code == 403
    assert "exceeded quota: q, requested: count/configmaps=1, used: count/configmaps=1" in r.json()["message"]


def test_compute_quota_sums_requests_and_wants_them_specified(api: httpx.Client, namespace: str,
                                                              controller_manager: procs.ManagedProcess) -> None:
    create_quota(api, namespace, {"requests.cpu": "250m", "limits.memory": "128Mi"})
    assert api.post(f"/api/v1/namespaces/{namespace}/pods", json=sized("a")).status_code == 201
    r = api.post(f"/api/v1/namespaces/{namespace}/pods", json=sized("b", cpu="200m"))
    assert r.status_code == 403
    assert r.json()["message"] == ('pods "b" is forbidden: exceeded quota: q, requested: requests.cpu=200m, '
                                   "used: requests.cpu=100m, limited: requests.cpu=250m")
    r = api.post(f"/api/v1/namespaces/{namespace}/pods", json=kube.pod("bare"))
    assert r.status_code == 403
    assert r.json()["message"] == ('pods "bare" is forbidden: failed quota: q: must specify limits.memory for: c; '
                                   "requests.cpu for: c")


def test_limit_ranges_default_and_bound_containers(api: httpx.Client, namespace: str) -> None:
    r = api.post(f"/api/v1/namespaces/{namespace}/limitranges", json={
        "apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "lr"},
        "spec": {"limits": [{"type": "Container", "default": {"cpu": "500m"}, "defaultRequest": {"cpu": "200m"},
                             "max": {"cpu": "1"}, "min": {"cpu": "100m"}}]}})
    assert r.status_code == 201, r.text
    wait_until(lambda: get(api, f"/api/v1/namespaces/{namespace}/limitranges/lr"), message="limit range")
    r = api.post(f"/api/v1/namespaces/{namespace}/pods", json=kube.pod("p"))
    assert r.status_code == 201, r.text
    pod = r.json()
    assert pod["spec"]["containers"][0]["resources"] == {"limits": {"cpu": "500m"}, "requests": {"cpu": "200m"}}
    assert pod["metadata"]["annotations"]["kubernetes.io/limit-ranger"] == (
        "LimitRanger plugin set: cpu request for container c; cpu limit for container c")
    big = sized("big", cpu="2", memory=None)
    r = api.post(f"/api/v1/namespaces/{namespace}/pods", json=big)
    assert r.status_code == 403
    assert r.json()["message"] == 'pods "big" is forbidden: maximum cpu usage per Container is 1, but limit is 2'
