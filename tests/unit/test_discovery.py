"""Discovery and /version, through the router alone (no etcd): legacy and aggregated documents."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import AsyncIterator
from typing import Any

import httpx
import orjson
import pytest
from fastapi import FastAPI, Request, Response

from apiserver.errors import APIError
from apiserver.registry.groups import builtin_resources
from apiserver.registry.registry import Registry
from apiserver.routers import discovery
from machinery.api import kinds, schema

REGISTRY = Registry(builtin_resources())

V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
V2BETA1 = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
# What kubectl 1.30+ and 1.27/1.28 send to /api and /apis.
KUBECTL_ACCEPT = f"{V2},{V2BETA1},application/json"
KUBECTL_127_ACCEPT = f"{V2BETA1},application/json"
NOT_FOUND = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
             "message": "the server could not find the requested resource", "reason": "NotFound",
             "details": {}, "code": 404}


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    app = FastAPI()

    @app.exception_handler(APIError)
    async def status(_request: Request, exc: APIError) -> Response:
        return Response(orjson.dumps(exc.status()), status_code=exc.code, media_type="application/json")

    app.include_router(discovery.router)

    class Server:
        registry = REGISTRY

    app.state.server = Server()
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://kubesim:6443") as c:
        yield c


def served_groups() -> list[str]:
    return list(dict.fromkeys(g for g, _ in REGISTRY.group_versions() if g))


def expected_entries(group: str, version: str) -> dict[str, dict[str, Any]]:
    """What Kubernetes lists for a group-version, from the resource table."""
    entries: dict[str, dict[str, Any]] = {}
    for resource in REGISTRY.resources():
        ri = resource.info
        if (ri.group, ri.version) != (group, version):
            continue
        gvk = f"{ri.group}/{ri.version}/{ri.kind}".encode()
        entry: dict[str, Any] = {"name": ri.plural, "singularName": ri.singular, "namespaced": ri.namespaced,
                                 "kind": ri.kind, "verbs": sorted(ri.verbs)}
        if resource.stored:
            entry["storageVersionHash"] = base64.b64encode(hashlib.sha256(gvk).digest()[:8]).decode()
        if ri.short_names:
            entry["shortNames"] = list(ri.short_names)
        if ri.categories:
            entry["categories"] = list(ri.categories)
        entries[ri.plural] = entry
        for sub in ri.subresources:
            sub_entry: dict[str, Any] = {"name": f"{ri.plural}/{sub.name}", "singularName": "",
                                         "namespaced": ri.namespaced, "kind": sub.kind, "verbs": sorted(sub.verbs)}
            if sub.group:
                sub_entry |= {"group": sub.group, "version": sub.version}
            entries[sub_entry["name"]] = sub_entry
    return entries


async def test_version(client: httpx.AsyncClient) -> None:
    r = await client.get("/version")
    assert r.status_code == 200
    info = r.json()
    required = schema.definition("io.k8s.apimachinery.pkg.version.Info")["required"]
    assert set(info) == set(required)
    assert (info["major"], info["minor"]) == ("1", "32")
    assert info["gitVersion"] == "v1.32.0+kubesim"
    assert all(isinstance(v, str) for v in info.values())


async def test_core_api_versions_legacy(client: httpx.AsyncClient) -> None:
    r = await client.get("/api", headers={"Accept": "application/json"})
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    assert r.json() == {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [
        {"clientCIDR": "0.0.0.0/0", "serverAddress": "kubesim:6443"}]}


async def test_core_resource_list_has_every_resource_and_subresource(client: httpx.AsyncClient) -> None:
    body = (await client.get("/api/v1")).json()
    assert body["kind"] == "APIResourceList" and body["groupVersion"] == "v1"
    # Kubernetes writes the core lists without an apiVersion.
    assert "apiVersion" not in body
    names = [e["name"] for e in body["resources"]]
    assert names == sorted(names)
    assert {e["name"]: e for e in body["resources"]} == expected_entries("", "v1")


@pytest.mark.parametrize("name, group, version, kind, verbs", [
    pytest.param("pods/eviction", "policy", "v1", "Eviction", ["create"], id="eviction"),
    pytest.param("replicationcontrollers/scale", "autoscaling", "v1", "Scale", ["get", "patch", "update"],
                 id="scale"),
    pytest.param("pods/binding", None, None, "Binding", ["create"], id="binding"),
    pytest.param("pods/log", None, None, "Pod", ["get"], id="log"),
    pytest.param("pods/status", None, None, "Pod", ["get", "patch", "update"], id="status"),
    pytest.param("namespaces/finalize", None, None, "Namespace", ["update"], id="finalize"),
])
async def test_core_subresources(client: httpx.AsyncClient, name: str, group: str | None, version: str | None,
                                 kind: str, verbs: list[str]) -> None:
    entries = {e["name"]: e for e in (await client.get("/api/v1")).json()["resources"]}
    entry = entries[name]
    assert (entry.get("group"), entry.get("version"), entry["kind"], entry["verbs"]) == (group, version, kind,
                                                                                       verbs)
    assert entry["singularName"] == "" and "storageVersionHash" not in entry


async def test_pods_in_category_all_with_short_name(client: httpx.AsyncClient) -> None:
    entries = {e["name"]: e for e in (await client.get("/api/v1")).json()["resources"]}
    assert entries["pods"]["shortNames"] == ["po"] and entries["pods"]["categories"] == ["all"]
    assert entries["replicationcontrollers"]["categories"] == ["all"]
    assert entries["pods"]["storageVersionHash"] == "xPOwRZ+Yhw8="  # kube-apiserver's value


async def test_group_list_legacy(client: httpx.AsyncClient) -> None:
    body = (await client.get("/apis", headers={"Accept": "application/json"})).json()
    assert body["kind"] == "APIGroupList" and body["apiVersion"] == "v1"
    names = [g["name"] for g in body["groups"]]
    # kube-aggregator's priorities order them, as `kubectl get --raw /apis` shows on Kubernetes 1.32.
    assert names == ["apiregistration.k8s.io", "apps", "events.k8s.io", "authentication.k8s.io",
                     "authorization.k8s.io", "autoscaling", "batch", "certificates.k8s.io", "networking.k8s.io",
                     "policy", "rbac.authorization.k8s.io", "storage.k8s.io", "admissionregistration.k8s.io",
                     "apiextensions.k8s.io", "scheduling.k8s.io", "coordination.k8s.io", "node.k8s.io",
                     "discovery.k8s.io", "flowcontrol.apiserver.k8s.io"]
    assert set(names) == {ri.group for ri in kinds.RESOURCES if ri.group}
    autoscaling = next(g for g in body["groups"] if g["name"] == "autoscaling")
    assert [v["version"] for v in autoscaling["versions"]] == ["v2", "v1"]
    for group in body["groups"]:
        assert group["preferredVersion"] == group["versions"][0]
        assert group["versions"][0]["groupVersion"] == f"{group['name']}/{group['versions'][0]['version']}"


@pytest.mark.parametrize("group, version", [
    pytest.param(g, v, id=f"{g}/{v}") for g, v in REGISTRY.group_versions() if g
])
async def test_group_and_group_version(client: httpx.AsyncClient, group: str, version: str) -> None:
    body = (await client.get(f"/apis/{group}")).json()
    assert body["kind"] == "APIGroup" and body["apiVersion"] == "v1" and body["name"] == group
    assert {"groupVersion": f"{group}/{version}", "version": version} in body["versions"]
    resources = (await client.get(f"/apis/{group}/{version}")).json()
    assert resources["kind"] == "APIResourceList" and resources["apiVersion"] == "v1"
    assert resources["groupVersion"] == f"{group}/{version}"
    assert {e["name"]: e for e in resources["resources"]} == expected_entries(group, version)


@pytest.mark.parametrize("path", [
    pytest.param("/apis/example.com", id="unknown-group"),
    pytest.param("/apis/example.com/v1", id="unknown-group-version"),
    pytest.param("/apis/coordination.k8s.io/v1beta1", id="unknown-version"),
    pytest.param("/api/v2", id="unknown-core-version"),
])
async def test_unknown_groups_are_kubernetes_not_found(client: httpx.AsyncClient, path: str) -> None:
    r = await client.get(path)
    assert r.status_code == 404
    assert r.json() == NOT_FOUND


@pytest.mark.parametrize("accept, version", [
    pytest.param(KUBECTL_ACCEPT, "v2", id="kubectl-1.30+"),
    pytest.param(KUBECTL_127_ACCEPT, "v2beta1", id="kubectl-1.27"),
    pytest.param(V2, "v2", id="v2-only"),
    pytest.param(f"application/json;q=0.9,{V2BETA1}", "v2beta1", id="by-quality"),
    pytest.param("application/json", None, id="legacy"),
    pytest.param(None, None, id="no-accept"),
    pytest.param("application/json;g=apidiscovery.k8s.io;v=v3;as=APIGroupDiscoveryList,application/json", None,
                 id="unknown-discovery-version-falls-back"),
])
@pytest.mark.parametrize("path", ["/api", "/apis"])
async def test_aggregated_negotiation(client: httpx.AsyncClient, path: str, accept: str | None,
                                      version: str | None) -> None:
    r = await client.get(path, headers={"Accept": accept} if accept else {})
    assert r.status_code == 200
    assert r.headers["vary"] == "Accept"
    if version is None:
        assert r.headers["content-type"] == "application/json"
        assert r.json()["kind"] in ("APIVersions", "APIGroupList")
    else:
        assert r.headers["content-type"] == (
            f"application/json;g=apidiscovery.k8s.io;v={version};as=APIGroupDiscoveryList")
        body = r.json()
        assert body["kind"] == "APIGroupDiscoveryList"
        assert body["apiVersion"] == f"apidiscovery.k8s.io/{version}"


async def test_unacceptable_discovery_media_type(client: httpx.AsyncClient) -> None:
    r = await client.get("/apis", headers={"Accept": "text/html"})
    assert r.status_code == 406
    assert r.json()["reason"] == "NotAcceptable"


async def test_aggregated_core_document(client: httpx.AsyncClient) -> None:
    body = (await client.get("/api", headers={"Accept": V2})).json()
    assert [item["metadata"] for item in body["items"]] == [{"creationTimestamp": None}]
    [v1] = body["items"][0]["versions"]
    assert v1["version"] == "v1" and v1["freshness"] == "Current"
    resources = {r["resource"]: r for r in v1["resources"]}
    legacy = expected_entries("", "v1")
    assert set(resources) == {name for name in legacy if "/" not in name}
    pods = resources["pods"]
    assert pods["responseKind"] == {"group": "", "version": "v1", "kind": "Pod"}
    assert pods["scope"] == "Namespaced" and pods["singularResource"] == "pod"
    assert pods["shortNames"] == ["po"] and pods["categories"] == ["all"]
    subs = {s["subresource"]: s for s in pods["subresources"]}
    assert set(subs) == {s.name for s in kinds.PODS.subresources}
    assert subs["eviction"]["responseKind"] == {"group": "policy", "version": "v1", "kind": "Eviction"}
    assert subs["binding"]["responseKind"] == {"group": "", "version": "v1", "kind": "Binding"}
    assert resources["nodes"]["scope"] == "Cluster"
    rc_subs = {s["subresource"]: s for s in resources["replicationcontrollers"]["subresources"]}
    assert rc_subs["scale"]["responseKind"] == {"group": "autoscaling", "version": "v1", "kind": "Scale"}
    assert resources["bindings"]["verbs"] == ["create"] and "subresources" not in resources["bindings"]


async def test_aggregated_groups_document(client: httpx.AsyncClient) -> None:
    body = (await client.get("/apis", headers={"Accept": V2})).json()
    assert [item["metadata"] for item in body["items"]] == [
        {"name": g, "creationTimestamp": None} for g in served_groups()]
    by_group = {item["metadata"]["name"]: item["versions"] for item in body["items"]}
    assert [v["version"] for v in by_group["autoscaling"]] == ["v2", "v1"]
    [lease] = by_group["coordination.k8s.io"][0]["resources"]
    assert lease["resource"] == "leases"
    assert lease["responseKind"] == {"group": "coordination.k8s.io", "version": "v1", "kind": "Lease"}


async def test_aggregated_etag_and_not_modified(client: httpx.AsyncClient) -> None:
    first = await client.get("/apis", headers={"Accept": V2})
    etag = first.headers["etag"]
    assert etag == f'"{hashlib.sha512(first.content).hexdigest().upper()}"'
    assert first.headers["cache-control"] == "public"
    again = await client.get("/apis", headers={"Accept": V2, "If-None-Match": etag})
    assert again.status_code == 304 and again.content == b""
    stale = await client.get("/apis", headers={"Accept": V2, "If-None-Match": '"0"'})
    assert stale.status_code == 200 and stale.content == first.content
    # The two apidiscovery versions are different documents, so they have different tags.
    other = await client.get("/apis", headers={"Accept": V2BETA1})
    assert other.headers["etag"] != etag
