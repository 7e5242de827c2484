"""metrics-server's storage (rates and windows) and its API (metrics.k8s.io objects, discovery, errors)."""

from __future__ import annotations

import orjson
import pytest

from metrics_server.api import MetricsAPI, go_duration, memory_quantity
from metrics_server.scraper import node_target
from metrics_server.storage import Sample, Storage, Usage, rate


@pytest.mark.parametrize(("latest", "previous", "expected"), [
    pytest.param(Sample(110, 12.0, 5), Sample(100, 10.0, 4), Usage(110, 10, 200_000_000, 5), id="two-samples"),
    pytest.param(Sample(110, 1.0, 5, start_time=105), None, Usage(110, 5, 200_000_000, 5), id="from-start"),
    pytest.param(Sample(110, 1.0, 5, start_time=105), Sample(100, 9.0, 4, start_time=50),
                 Usage(110, 5, 200_000_000, 5), id="restarted"),
    pytest.param(Sample(110, 1.0, 5), None, None, id="one-sample-no-start"),
])
def test_rates(latest: Sample, previous: Sample | None, expected: Usage | None) -> None:
    assert rate(latest, previous) == expected


def test_a_nodes_scrape_replaces_its_pods() -> None:
    storage = Storage()
    storage.store("n1", Sample(100, 1.0, 10), {("ns", "a"): {"c": Sample(100, 1.0, 1, 50)},
                                              ("ns", "b"): {"c": Sample(100, 1.0, 1, 50)}})
    storage.store("n1", Sample(110, 2.0, 10), {("ns", "a"): {"c": Sample(110, 2.0, 2, 50)}})
    assert set(storage.pods) == {("ns", "a")}
    assert storage.pod_usage("ns", "a") == {"c": Usage(110, 10, 100_000_000, 2)}
    storage.forget("n1")
    assert storage.pods == {} and storage.node_usage("n1") is None


def test_a_pod_needs_every_containers_usage() -> None:
    storage = Storage()
    storage.store("n1", None, {("ns", "a"): {"ok": Sample(100, 1.0, 1, 90), "new": Sample(100, 1.0, 1)}})
    assert storage.pod_usage("ns", "a") is None


def _api() -> MetricsAPI:
    storage = Storage()
    storage.store("node-1", Sample(100, 10.0, 2**30), {("shop", "web"): {"app": Sample(100, 1.0, 8192, 95)}})
    storage.store("node-1", Sample(115.012, 13.0, 2**30), {("shop", "web"): {"app": Sample(115.012, 2.0, 8192, 95)}})
    labels = {"node-1": {"zone": "a"}, "shop/web": {"app": "web"}}
    return MetricsAPI(storage, node_labels=labels.get, pod_labels=labels.get, ready=lambda: True)


def _get(api: MetricsAPI, path: str, query: dict[str, str] | None = None) -> tuple[int, dict]:
    code, body, content_type = api.answer("GET", path, query or {})
    assert content_type == "application/json"
    return code, orjson.loads(body)


def test_node_metrics() -> None:
    code, body = _get(_api(), "/apis/metrics.k8s.io/v1beta1/nodes", {"labelSelector": "zone=a"})
    assert code == 200 and body["kind"] == "NodeMetricsList"
    [item] = body["items"]
    assert item["metadata"]["name"] == "node-1" and item["metadata"]["labels"] == {"zone": "a"}
    assert item["window"] == "15.012s"
    assert item["usage"] == {"cpu": "199840127n", "memory": "1048576Ki"}
    assert _get(_api(), "/apis/metrics.k8s.io/v1beta1/nodes", {"labelSelector": "zone=b"})[1]["items"] == []


def test_pod_metrics_by_namespace_and_name() -> None:
    api = _api()
    code, body = _get(api, "/apis/metrics.k8s.io/v1beta1/namespaces/shop/pods/web")
    assert code == 200 and body["kind"] == "PodMetrics"
    assert body["containers"] == [{"name": "app", "usage": {"cpu": "66613375n", "memory": "8Ki"}}]
    assert [i["metadata"]["name"] for i in _get(api, "/apis/metrics.k8s.io/v1beta1/pods")[1]["items"]] == ["web"]
    assert _get(api, "/apis/metrics.k8s.io/v1beta1/namespaces/other/pods")[1]["items"] == []


@pytest.mark.parametrize(("path", "query", "code", "message"), [
    pytest.param("/apis/metrics.k8s.io/v1beta1/nodes/nope", {}, 404, 'nodemetrics.metrics.k8s.io "nope" not found',
                 id="missing-node"),
    pytest.param("/apis/metrics.k8s.io/v1beta1/namespaces/shop/pods/nope", {}, 404,
                 'podmetrics.metrics.k8s.io "nope" not found', id="missing-pod"),
    pytest.param("/apis/metrics.k8s.io/v1beta1/nodes", {"labelSelector": "a in b"}, 400, None, id="bad-selector"),
    pytest.param("/apis/metrics.k8s.io/v1beta1/services", {}, 404,
                 "the server could not find the requested resource", id="unknown-resource"),
])
def test_errors_are_statuses(path: str, query: dict[str, str], code: int, message: str | None) -> None:
    got, body = _get(_api(), path, query)
    assert (got, body["kind"], body["code"]) == (code, "Status", code)
    if message is not None:
        assert body["message"] == message


def test_discovery_documents() -> None:
    api = _api()
    resources = _get(api, "/apis/metrics.k8s.io/v1beta1")[1]
    assert [(r["name"], r["kind"], r["namespaced"]) for r in resources["resources"]] == [
        ("nodes", "NodeMetrics", False), ("pods", "PodMetrics", True)]
    assert _get(api, "/apis")[1]["groups"][0]["preferredVersion"]["groupVersion"] == "metrics.k8s.io/v1beta1"


@pytest.mark.parametrize(("seconds", "text"), [(15.012, "15.012s"), (20.0, "20s"), (60.5, "1m0.5s")])
def test_windows_are_go_durations(seconds: float, text: str) -> None:
    assert go_duration(seconds) == text


def test_quantities() -> None:
    assert memory_quantity(1442012 * 1024) == "1442012Ki"
    assert memory_quantity(1000) == "1k"


def test_targets_follow_the_preferred_address_types() -> None:
    addresses = [("Hostname", "node-1"), ("InternalIP", "10.0.0.5")]
    target = node_target("node-1", addresses, 10250, ["InternalIP", "Hostname"])
    assert target is not None and target.url == "https://10.0.0.5:10250/nodes/node-1/metrics/resource"
    assert node_target("node-1", addresses, None, ["InternalIP"]) is None
    assert node_target("node-1", addresses, 10250, ["ExternalIP"]) is None


def test_registration_objects_name_the_port_served() -> None:
    from metrics_server import register

    *rbac, service, apiservice = (obj for _, obj in register.objects("localhost", 4443))
    assert rbac == [obj for _, obj in register.rbac_objects()]
    # An ExternalName Service: kube-aggregator resolves it to externalName:<the APIService's port>.
    assert service["spec"] == {"type": "ExternalName", "externalName": "localhost",
                               "ports": [{"name": "https", "port": 4443, "protocol": "TCP"}]}
    assert apiservice["metadata"]["name"] == "v1beta1.metrics.k8s.io"
    assert apiservice["spec"]["service"] == {"name": "metrics-server", "namespace": "kube-system", "port": 4443}
    assert register.advertise_address("127.0.0.1") == "localhost"
    assert register.advertise_address("10.1.2.3") == "10.1.2.3"
    assert register.advertise_address("metrics-server") == "metrics-server"
    assert register.advertise_address("0.0.0.0") not in ("", "0.0.0.0")


def test_the_manifest_gives_metrics_server_kubernetes_roles_and_aggregates_the_reader() -> None:
    """As metrics-server's components.yaml: system:metrics-server bound to its ServiceAccount, and
    system:aggregated-metrics-reader aggregated into view, edit and admin."""
    from metrics_server import register

    by_name = {(obj["kind"], obj["metadata"]["name"]): obj for _, obj in register.rbac_objects()}
    reader = by_name["ClusterRole", "system:aggregated-metrics-reader"]
    for role in ("view", "edit", "admin"):
        assert reader["metadata"]["labels"][f"rbac.authorization.k8s.io/aggregate-to-{role}"] == "true"
    assert reader["rules"] == [{"apiGroups": ["metrics.k8s.io"], "resources": ["pods", "nodes"],
                                "verbs": ["get", "list", "watch"]}]
    server = by_name["ClusterRole", "system:metrics-server"]
    assert {"apiGroups": [""], "resources": ["nodes/metrics"], "verbs": ["get"]} in server["rules"]
    assert {"apiGroups": [""], "resources": ["pods", "nodes"], "verbs": ["get", "list", "watch"]} in server["rules"]
    binding = by_name["ClusterRoleBinding", "system:metrics-server"]
    assert binding["roleRef"]["name"] == "system:metrics-server"
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "metrics-server", "namespace": "kube-system"}]
    assert ("ServiceAccount", "metrics-server") in by_name
