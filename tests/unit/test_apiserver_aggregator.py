"""The aggregation layer (apiserver.aggregator) in front of a stand-in APIServer, with a real metrics API behind it.

The availability controller's writes to stored APIServices are covered end to end (tests/e2e/test_metrics.py);
here the layer reads backends a stub controller sets, and the pure parts are checked on their own.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import orjson
import pytest
from starlette.types import Receive, Scope, Send

from apiserver.aggregator import availability
from apiserver.aggregator.apiservice import Backend, Unavailable, resolve_backend, with_condition
from apiserver.aggregator.handler import AggregationLayer
from apiserver.registry.apiregistration.apiservices import RESOURCE as APISERVICES
from metrics_server.api import MetricsAPI
from metrics_server.storage import Sample, Storage

LEGACY = {"kind": "APIGroupList", "apiVersion": "v1", "groups": [{"name": "apps", "versions": [], "preferredVersion": {}}]}
AGGREGATED_TYPE = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
AGGREGATED = {"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {},
              "items": [{"metadata": {"name": "apps", "creationTimestamp": None}, "versions": []}]}


async def downstream(scope: Scope, receive: Receive, send: Send) -> None:
    """The APIServer behind the layer: discovery at /apis, 418 for anything else it is asked."""
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            await send({"type": message["type"] + ".complete"})
            if message["type"] == "lifespan.shutdown":
                return
    accept = dict(scope["headers"]).get(b"accept", b"").decode()
    if scope["path"] == "/apis":
        aggregated = "as=APIGroupDiscoveryList" in accept
        body = orjson.dumps(AGGREGATED if aggregated else LEGACY)
        content_type = AGGREGATED_TYPE if aggregated else "application/json"
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", content_type.encode()), (b"etag", b'"inner"')]})
        await send({"type": "http.response.body", "body": body})
        return
    await send({"type": "http.response.start", "status": 418, "headers": []})
    await send({"type": "http.response.body", "body": b"teapot"})


class Lifespan:
    """Runs an ASGI app's lifespan in the background, as uvicorn does."""

    def __init__(self, app: Any) -> None:
        self._queue: asyncio.Queue[dict[str, str]] = asyncio.Queue()
        self._sent: asyncio.Queue[dict[str, str]] = asyncio.Queue()
        self._task = asyncio.create_task(app({"type": "lifespan"}, self._queue.get, self._sent.put))

    async def start(self) -> None:
        await self._queue.put({"type": "lifespan.startup"})
        await self._sent.get()

    async def stop(self) -> None:
        await self._queue.put({"type": "lifespan.shutdown"})
        await self._sent.get()
        await self._task


@pytest.fixture
async def backend() -> AsyncIterator[tuple[MetricsAPI, int]]:
    storage = Storage()
    storage.store("node-1", Sample(100, 10.0, 2**30), {})
    storage.store("node-1", Sample(110, 11.0, 2**30), {})
    api = MetricsAPI(storage, node_labels=lambda _: {}, pod_labels=lambda _: {}, ready=lambda: True)
    port = await api.start("127.0.0.1", 0)
    yield api, port
    await api.close()


class StubController(availability.AvailabilityController):
    """The backends as a test sets them; no APIServer behind."""

    def __init__(self) -> None:
        self.backends: dict[tuple[str, str], Backend] = {}

    async def run(self, http: httpx.AsyncClient) -> None:
        await asyncio.Event().wait()


def metrics_backend(url: str | None, *, available: bool = True, resources: dict[str, Any] | None = None) -> Backend:
    return Backend("v1beta1.metrics.k8s.io", "metrics.k8s.io", "v1beta1", False, url, available, 100, 100, resources)


class FakeRegistry:
    def serves(self, group: str, version: str) -> bool:
        return group == "apps"


class FakeServer:
    registry = FakeRegistry()


@pytest.fixture
async def layer(backend: tuple[MetricsAPI, int]) -> AsyncIterator[tuple[StubController, httpx.AsyncClient]]:
    _, port = backend
    controller = StubController()
    url = f"http://127.0.0.1:{port}"
    async with httpx.AsyncClient() as http:
        checked = await availability.check(http, url, "metrics.k8s.io", "v1beta1")
    assert (checked.available, checked.reason, checked.message) == (True, "Passed", "all checks passed")
    controller.backends = {("metrics.k8s.io", "v1beta1"): metrics_backend(url, resources=dict(checked.resources or {})),
                           ("", "v1"): Backend("v1.", "", "v1", True, None, True)}
    aggregation = AggregationLayer(downstream, FakeServer(), controller=controller)  # type: ignore[arg-type]
    lifespan = Lifespan(aggregation)
    await lifespan.start()
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=aggregation), base_url="http://api") as client:
        yield controller, client
    await lifespan.stop()


async def test_requests_are_proxied_to_the_backend(layer: tuple[StubController, httpx.AsyncClient]) -> None:
    _, client = layer
    response = await client.get("/apis/metrics.k8s.io/v1beta1/nodes")
    assert response.status_code == 200
    assert [i["usage"]["cpu"] for i in response.json()["items"]] == ["100000000n"]
    missing = await client.get("/apis/metrics.k8s.io/v1beta1/nodes/x")
    assert (missing.status_code, missing.json()["reason"]) == (404, "NotFound")
    group = (await client.get("/apis/metrics.k8s.io")).json()
    assert (group["kind"], group["preferredVersion"]["version"]) == ("APIGroup", "v1beta1")
    # What the layer does not own (local APIServices too) goes to the APIServer.
    assert (await client.get("/api/v1/pods")).status_code == 418
    assert (await client.get("/apis/metrics.k8s.io/v2/nodes")).status_code == 418


async def test_discovery_lists_the_aggregated_groups(layer: tuple[StubController, httpx.AsyncClient]) -> None:
    _, client = layer
    legacy = (await client.get("/apis")).json()
    assert [g["name"] for g in legacy["groups"]] == ["apps", "metrics.k8s.io"]
    aggregated = await client.get("/apis", headers={"Accept": AGGREGATED_TYPE})
    assert aggregated.headers["content-type"] == AGGREGATED_TYPE
    items = aggregated.json()["items"]
    metrics = next(i for i in items if i["metadata"]["name"] == "metrics.k8s.io")
    [version] = metrics["versions"]
    assert (version["version"], version["freshness"]) == ("v1beta1", "Current")
    assert {r["resource"]: r["scope"] for r in version["resources"]} == {"nodes": "Cluster", "pods": "Namespaced"}
    etag = aggregated.headers["etag"]
    assert etag != '"inner"'
    cached = await client.get("/apis", headers={"Accept": AGGREGATED_TYPE, "If-None-Match": etag})
    assert cached.status_code == 304


async def test_an_unavailable_backend_answers_503_and_goes_stale(layer: tuple[StubController, httpx.AsyncClient],
                                                                 backend: tuple[MetricsAPI, int]) -> None:
    controller, client = layer
    await backend[0].close()
    url = f"http://127.0.0.1:{backend[1]}"
    async with httpx.AsyncClient() as http:
        checked = await availability.check(http, url, "metrics.k8s.io", "v1beta1")
    assert (checked.available, checked.reason) == (False, "FailedDiscoveryCheck")
    assert checked.message.startswith(f"failing or missing response from {url}/apis/metrics.k8s.io/v1beta1: ")
    old = controller.backends[("metrics.k8s.io", "v1beta1")]
    controller.backends = {("metrics.k8s.io", "v1beta1"): metrics_backend(url, available=False,
                                                                          resources=dict(old.resources or {}))}
    down = await client.get("/apis/metrics.k8s.io/v1beta1/nodes")
    assert (down.status_code, down.json()["message"]) == (503, "service unavailable")
    items = (await client.get("/apis", headers={"Accept": AGGREGATED_TYPE})).json()["items"]
    assert next(i for i in items if i["metadata"]["name"] == "metrics.k8s.io")["versions"][0]["freshness"] == "Stale"
    # An APIService whose Service could not be resolved has no URL: 503 too, and listed in discovery.
    controller.backends = {("metrics.k8s.io", "v1beta1"): metrics_backend(None, available=False)}
    assert (await client.get("/apis/metrics.k8s.io/v1beta1/pods")).status_code == 503
    assert "metrics.k8s.io" in [g["name"] for g in (await client.get("/apis")).json()["groups"]]


SPEC = {"service": {"namespace": "kube-system", "name": "metrics-server", "port": 443},
        "group": "metrics.k8s.io", "version": "v1beta1"}
SERVICE = {"spec": {"ports": [{"name": "https", "port": 443, "targetPort": "https"}]}}
ENDPOINTS = {"subsets": [{"addresses": [{"ip": "10.0.0.7"}], "ports": [{"name": "https", "port": 4443}]}]}


def lookup(obj: dict[str, Any] | None) -> Any:
    return lambda namespace, name: obj if (namespace, name) == ("kube-system", "metrics-server") else None


def test_the_backend_is_found_through_the_services_endpoints() -> None:
    assert resolve_backend(SPEC, lookup(SERVICE), lookup(ENDPOINTS)) == "http://10.0.0.7:4443"
    v6 = {"subsets": [{"addresses": [{"ip": "fd00::7"}], "ports": [{"name": "https", "port": 4443}]}]}
    assert resolve_backend(SPEC, lookup(SERVICE), lookup(v6)) == "http://[fd00::7]:4443"


def test_an_external_name_service_is_its_name_and_the_apiservices_port() -> None:
    external = {"spec": {"type": "ExternalName", "externalName": "localhost."}}
    spec = {**SPEC, "service": {**SPEC["service"], "port": 4443}}  # type: ignore[dict-item]
    assert resolve_backend(spec, lookup(external), lookup(None)) == "http://localhost:4443"


@pytest.mark.parametrize(("service", "endpoints", "reason", "message"), [
    (None, ENDPOINTS, "ServiceNotFound", 'service/metrics-server in "kube-system" is not present'),
    ({"spec": {"ports": [{"name": "https", "port": 8443}]}}, ENDPOINTS, "ServicePortError",
     'service/metrics-server in "kube-system" is not listening on port 443'),
    (SERVICE, None, "EndpointsNotFound", 'cannot find endpoints for service/metrics-server in "kube-system"'),
    (SERVICE, {"subsets": [{"addresses": [], "ports": [{"name": "https", "port": 4443}]}]}, "MissingEndpoints",
     'endpoints for service/metrics-server in "kube-system" have no addresses with port name "https"'),
])
def test_why_a_backend_is_not_found(service: dict[str, Any] | None, endpoints: dict[str, Any] | None, reason: str,
                                    message: str) -> None:
    with pytest.raises(Unavailable) as caught:
        resolve_backend(SPEC, lookup(service), lookup(endpoints))
    assert (caught.value.reason, caught.value.message) == (reason, message)


def test_the_available_condition_keeps_its_transition_time_while_its_status_holds() -> None:
    obj: dict[str, Any] = {"status": {"conditions": [{"type": "Other", "status": "True"}]}}
    with_condition(obj, False, "MissingEndpoints", "none")
    first = obj["status"]["conditions"][-1]
    obj["status"]["conditions"][-1]["lastTransitionTime"] = "2020-01-01T00:00:00Z"
    with_condition(obj, False, "FailedDiscoveryCheck", "down")
    types = [c["type"] for c in obj["status"]["conditions"]]
    assert types == ["Other", "Available"] and first["reason"] == "MissingEndpoints"
    assert obj["status"]["conditions"][-1]["lastTransitionTime"] == "2020-01-01T00:00:00Z"
    with_condition(obj, True, "Passed", "all checks passed")
    assert obj["status"]["conditions"][-1]["lastTransitionTime"] != "2020-01-01T00:00:00Z"


def test_apiservices_print_as_kube_aggregator_does() -> None:
    assert APISERVICES.printer is not None
    now = datetime(2024, 1, 1, 0, 5, 0, tzinfo=UTC)
    created = (now - timedelta(minutes=3)).strftime("%Y-%m-%dT%H:%M:%SZ")
    local = {"metadata": {"name": "v1.apps", "creationTimestamp": created}, "spec": {},
             "status": {"conditions": [{"type": "Available", "status": "True", "reason": "Local"}]}}
    remote = {"metadata": {"name": "v1beta1.metrics.k8s.io", "creationTimestamp": created}, "spec": SPEC,
              "status": {"conditions": [{"type": "Available", "status": "False", "reason": "MissingEndpoints"}]}}
    fresh = {"metadata": {"name": "v1.x.io", "creationTimestamp": created}, "spec": SPEC}
    rows = [APISERVICES.printer.row(o, now).cells for o in (local, remote, fresh)]
    assert rows == [["v1.apps", "Local", "True", "3m"],
                    ["v1beta1.metrics.k8s.io", "kube-system/metrics-server", "False (MissingEndpoints)", "3m"],
                    ["v1.x.io", "kube-system/metrics-server", "Unknown", "3m"]]
