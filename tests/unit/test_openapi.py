"""The OpenAPI v3 documents (built from the resource table) and the router that serves them."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import orjson
import pytest
from fastapi import FastAPI, Request, Response

from apiserver import openapi
from apiserver.errors import APIError
from apiserver.registry.groups import builtin_resources
from apiserver.registry.registry import Registry
from apiserver.routers import openapi as openapi_router
from machinery.api import kinds

REGISTRY = Registry(builtin_resources())

Doc = dict[str, Any]
WRITE_METHODS = ("post", "put", "patch")
# Named without building the documents, so that collecting these tests stays instant.
DOCUMENT_PATHS = [openapi.document_path(g, v) for g, v in REGISTRY.group_versions()]


def document(group: str, version: str) -> Doc:
    parsed: Doc = orjson.loads(openapi.documents(REGISTRY)[openapi.document_path(group, version)].body)
    return parsed


def all_documents() -> Iterator[tuple[str, Doc]]:
    for path, doc in openapi.documents(REGISTRY).items():
        yield path, orjson.loads(doc.body)


def operations(doc: Doc) -> Iterator[tuple[str, str, Doc, list[Doc]]]:
    """``(path, method, operation, parameters)``, the parameters including the path-level ones."""
    for path, item in doc["paths"].items():
        for method, op in item.items():
            if method != "parameters":
                yield path, method, op, [*item.get("parameters", []), *op.get("parameters", [])]


def refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            # JSONSchemaProps (a CRD's schema) has a property named "$ref": a schema, not a reference.
            if key == "$ref" and isinstance(value, str):
                yield value
            else:
                yield from refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from refs(value)


# --- the documents ------------------------------------------------------------------------------


def test_index_lists_every_served_group_version_with_its_hash() -> None:
    index = orjson.loads(openapi.index(REGISTRY).body)
    expected = {openapi.document_path(g, v) for g, v in REGISTRY.group_versions()}
    assert set(index["paths"]) == expected
    assert {"api/v1", "apis/apps/v1", "apis/autoscaling/v1", "apis/autoscaling/v2", "apis/batch/v1"} <= expected
    for path, entry in index["paths"].items():
        body = openapi.documents(REGISTRY)[path].body
        assert entry["serverRelativeURL"] == f"/openapi/v3/{path}?hash={hashlib.sha512(body).hexdigest().upper()}"


def expected_operations(ri: kinds.ResourceInfo) -> list[tuple[str, str, str]]:
    """``(path, method, x-kubernetes-action)`` Kubernetes publishes for a resource's verbs."""
    collection = ri.path("{namespace}") if ri.namespaced else ri.path()
    item = collection + "/{name}"
    watch = collection.replace(ri.api_prefix, ri.api_prefix + "/watch", 1)
    verbs = set(ri.verbs)
    ops = []
    if "list" in verbs:
        ops.append((collection, "get", "list"))
        if ri.namespaced:
            ops.append((f"{ri.api_prefix}/{ri.plural}", "get", "list"))
    for verb, method, action, path in [("create", "post", "post", collection),
                                       ("deletecollection", "delete", "deletecollection", collection),
                                       ("get", "get", "get", item), ("update", "put", "put", item),
                                       ("patch", "patch", "patch", item), ("delete", "delete", "delete", item)]:
        if verb in verbs:
            ops.append((path, method, action))
    if "watch" in verbs:
        ops += [(watch, "get", "watchlist"), (watch + "/{name}", "get", "watch")]
        if ri.namespaced:
            ops.append((f"{ri.api_prefix}/watch/{ri.plural}", "get", "watchlist"))
    verb_methods = {"get": "get", "update": "put", "patch": "patch", "create": "post", "delete": "delete"}
    for sub in ri.subresources:
        for verb in sub.verbs:
            method = verb_methods[verb]
            # exec, attach, portforward and proxy are "connect" operations, as kube-openapi names them.
            action = "connect" if sub.kind.endswith("Options") else method
            ops.append((f"{item}/{sub.name}", method, action))
    return ops


@pytest.mark.parametrize("ri", [pytest.param(ri, id=f"{ri.group_resource}/{ri.version}") for ri in kinds.RESOURCES])
def test_every_operation_of_every_resource_has_its_gvk(ri: kinds.ResourceInfo) -> None:
    doc = document(ri.group, ri.version)
    for path, method, action in expected_operations(ri):
        op = doc["paths"][path][method]
        assert op["x-kubernetes-action"] == action, (path, method)
        gvk = op["x-kubernetes-group-version-kind"]
        sub = next((s for s in ri.subresources if path.endswith("/" + s.name)), None)
        if sub is None:
            assert gvk == {"group": ri.group, "version": ri.version, "kind": ri.kind}
        else:
            assert gvk == {"group": sub.group or ri.group, "version": sub.version or ri.version, "kind": sub.kind}
    published = {(p, m) for p, m, _op, _params in operations(doc) if resource_of(ri.api_prefix, p) == ri.plural}
    assert published == {(p, m) for p, m, _a in expected_operations(ri)}


def resource_of(prefix: str, path: str) -> str:
    """The resource a REST path addresses (``pods`` for ``/api/v1/watch/namespaces/{namespace}/pods``)."""
    relative = path.removeprefix(prefix + "/").removeprefix("watch/")
    return relative.removeprefix("namespaces/{namespace}/").split("/")[0]


@pytest.mark.parametrize("path, method, operation_id", [
    pytest.param("/api/v1/namespaces/{namespace}/pods", "get", "listCoreV1NamespacedPod", id="list"),
    pytest.param("/api/v1/pods", "get", "listCoreV1PodForAllNamespaces", id="list-all-namespaces"),
    pytest.param("/api/v1/nodes/{name}", "patch", "patchCoreV1Node", id="cluster-scoped"),
    pytest.param("/api/v1/namespaces/{namespace}/replicationcontrollers", "delete",
                 "deleteCoreV1CollectionNamespacedReplicationController", id="deletecollection"),
    pytest.param("/api/v1/namespaces/{namespace}/pods/{name}/status", "put", "replaceCoreV1NamespacedPodStatus",
                 id="status"),
    pytest.param("/api/v1/namespaces/{namespace}/pods/{name}/eviction", "post",
                 "createCoreV1NamespacedPodEviction", id="eviction"),
    pytest.param("/api/v1/namespaces/{name}/finalize", "put", "replaceCoreV1NamespaceFinalize", id="finalize"),
    pytest.param("/api/v1/watch/namespaces/{namespace}/events", "get", "watchCoreV1NamespacedEventList",
                 id="watchlist"),
    pytest.param("/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}", "get",
                 "readCoordinationV1NamespacedLease", id="lease"),
    pytest.param("/apis/coordination.k8s.io/v1/watch/leases", "get",
                 "watchCoordinationV1LeaseListForAllNamespaces", id="lease-watch-all"),
    pytest.param("/apis/policy/v1/", "get", "getPolicyV1APIResources", id="resource-list"),
])
def test_operation_ids_follow_kubernetes(path: str, method: str, operation_id: str) -> None:
    docs = dict(all_documents())
    found = [doc["paths"][path][method]["operationId"] for doc in docs.values() if path in doc["paths"]]
    assert found == [operation_id]


def test_operation_ids_are_unique() -> None:
    ids = [op["operationId"] for _p, doc in all_documents() for _path, _m, op, _ in operations(doc)]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("path", DOCUMENT_PATHS)
def test_no_reference_dangles_and_no_json_schema_2020_remains(path: str) -> None:
    doc = dict(all_documents())[path]
    schemas = doc["components"]["schemas"]
    for ref in refs(doc):
        assert ref.startswith("#/components/schemas/"), ref
        assert ref.removeprefix("#/components/schemas/") in schemas, ref
    text = openapi.documents(REGISTRY)[path].body.decode()
    assert "$defs" not in text and '"null"' not in text
    # Every schema is reachable: nothing is published that no operation uses.
    reachable = set()
    pending = [r.rsplit("/", 1)[-1] for r in refs(doc["paths"])]
    while pending:
        name = pending.pop()
        if name not in reachable:
            reachable.add(name)
            pending += [r.rsplit("/", 1)[-1] for r in refs(schemas[name])]
    assert reachable == set(schemas)


@pytest.mark.parametrize("path", DOCUMENT_PATHS)
def test_writes_declare_field_validation_dry_run_and_field_manager(path: str) -> None:
    doc = dict(all_documents())[path]
    for op_path, method, op, params in operations(doc):
        # Connecting to exec, attach, portforward or proxy writes nothing.
        if method in WRITE_METHODS and op.get("x-kubernetes-action") != "connect":
            names = {p["name"] for p in params}
            assert {"fieldValidation", "dryRun", "fieldManager"} <= names, (op_path, method)
        if method == "patch" and op.get("x-kubernetes-action") != "connect":
            # kubectl looks at the PATCH operation's own parameters, not the path's.
            assert "fieldValidation" in {p["name"] for p in op["parameters"]}, op_path
            assert "application/strategic-merge-patch+json" in op["requestBody"]["content"]


def test_list_and_delete_parameters() -> None:
    doc = document("", "v1")
    pods = doc["paths"]["/api/v1/namespaces/{namespace}/pods"]
    assert [(p["name"], p["in"]) for p in pods["parameters"]] == [("namespace", "path"), ("pretty", "query")]
    assert [p["name"] for p in pods["get"]["parameters"]] == [
        "allowWatchBookmarks", "continue", "fieldSelector", "labelSelector", "limit", "resourceVersion",
        "resourceVersionMatch", "sendInitialEvents", "timeoutSeconds", "watch"]
    delete = doc["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]["delete"]
    assert [(p["name"], p["schema"]["type"]) for p in delete["parameters"]] == [
        ("dryRun", "string"), ("gracePeriodSeconds", "integer"),
        ("ignoreStoreReadErrorWithClusterBreakingPotential", "boolean"), ("orphanDependents", "boolean"),
        ("propagationPolicy", "string")]
    # Deleting a pod answers with the pod; other kinds answer with a Status.
    assert delete["responses"]["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/io.k8s.api.core.v1.Pod"}
    node_delete = doc["paths"]["/api/v1/nodes/{name}"]["delete"]
    assert node_delete["responses"]["202"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.Status"}
    # A path with a single operation carries all parameters itself, as Kubernetes lays it out.
    eviction = doc["paths"]["/api/v1/namespaces/{namespace}/pods/{name}/eviction"]
    assert [p["name"] for p in eviction["parameters"]] == [
        "dryRun", "fieldManager", "fieldValidation", "name", "namespace", "pretty"]
    assert "parameters" not in eviction["post"]


def test_pod_log_is_text() -> None:
    log = document("", "v1")["paths"]["/api/v1/namespaces/{namespace}/pods/{name}/log"]
    assert set(log) == {"get", "parameters"}
    assert log["get"]["responses"]["200"]["content"]["text/plain"]["schema"] == {"type": "string"}
    assert {"container", "follow", "previous", "tailLines", "timestamps"} <= {p["name"] for p in log["parameters"]}


def test_schemas_are_converted_to_openapi_3() -> None:
    schemas = document("", "v1")["components"]["schemas"]
    pod = schemas["io.k8s.api.core.v1.Pod"]
    assert pod["type"] == "object"
    assert pod["x-kubernetes-group-version-kind"] == [{"group": "", "kind": "Pod", "version": "v1"}]
    # A reference with siblings keeps them next to an allOf, as Kubernetes writes it.
    assert pod["properties"]["spec"]["allOf"] == [{"$ref": "#/components/schemas/io.k8s.api.core.v1.PodSpec"}]
    assert pod["properties"]["spec"]["description"]
    assert "enum" not in pod["properties"]["apiVersion"] and "enum" not in pod["properties"]["kind"]
    containers = schemas["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
    assert containers["type"] == "array"
    assert containers["items"] == {"$ref": "#/components/schemas/io.k8s.api.core.v1.Container"}
    assert (containers["x-kubernetes-patch-merge-key"], containers["x-kubernetes-patch-strategy"]) == (
        "name", "merge")
    assert containers["x-kubernetes-list-map-keys"] == ["name"]
    assert schemas["io.k8s.apimachinery.pkg.util.intstr.IntOrString"] == {
        "format": "int-or-string", "oneOf": [{"type": "string"}, {"type": "integer"}]}
    assert schemas["io.k8s.apimachinery.pkg.apis.meta.v1.Time"]["format"] == "date-time"
    assert "required" in schemas["io.k8s.api.core.v1.Container"]
    for name in ("io.k8s.apimachinery.pkg.apis.meta.v1.Status", "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions",
                 "io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent", "io.k8s.apimachinery.pkg.apis.meta.v1.Patch",
                 "io.k8s.apimachinery.pkg.apis.meta.v1.APIResourceList", "io.k8s.api.policy.v1.Eviction",
                 "io.k8s.api.autoscaling.v1.Scale", "io.k8s.api.core.v1.Binding"):
        assert name in schemas


def test_document_envelope() -> None:
    doc = document("coordination.k8s.io", "v1")
    assert doc["openapi"] == "3.0.0" and doc["info"]["title"] == "Kubernetes"
    ops = list(operations(doc))
    assert {op["tags"][0] for _p, _m, op, _ in ops} == {"coordination_v1"}


# --- the router ---------------------------------------------------------------------------------


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    app = FastAPI()

    @app.exception_handler(APIError)
    async def status(_request: Request, exc: APIError) -> Response:
        return Response(orjson.dumps(exc.status()), status_code=exc.code, media_type="application/json")

    app.include_router(openapi_router.router)

    class Server:
        registry = REGISTRY

    app.state.server = Server()
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://kubesim") as c:
        yield c


async def test_index_is_served_with_an_etag(client: httpx.AsyncClient) -> None:
    r = await client.get("/openapi/v3")
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    assert r.content == openapi.index(REGISTRY).body
    assert r.headers["etag"] == f'"{openapi.index(REGISTRY).hash}"'
    again = await client.get("/openapi/v3", headers={"If-None-Match": r.headers["etag"]})
    assert again.status_code == 304


async def test_document_by_hash_is_immutable(client: httpx.AsyncClient) -> None:
    url = orjson.loads((await client.get("/openapi/v3")).content)["paths"]["api/v1"]["serverRelativeURL"]
    r = await client.get(url, headers={"Accept": "application/json"})
    assert r.status_code == 200 and r.content == openapi.documents(REGISTRY)["api/v1"].body
    assert r.headers["cache-control"] == "public, immutable"
    assert r.headers["expires"].endswith(" GMT")
    assert r.headers["vary"] == "Accept"
    assert r.headers["etag"] == f'"{openapi.documents(REGISTRY)["api/v1"].hash}"'


async def test_document_without_hash_revalidates(client: httpx.AsyncClient) -> None:
    r = await client.get("/openapi/v3/apis/coordination.k8s.io/v1")
    assert r.status_code == 200 and "cache-control" not in r.headers
    for header in (r.headers["etag"], f'W/{r.headers["etag"]}', f'"x", {r.headers["etag"]}', "*"):
        again = await client.get("/openapi/v3/apis/coordination.k8s.io/v1", headers={"If-None-Match": header})
        assert again.status_code == 304, header
    assert (await client.get("/openapi/v3/apis/coordination.k8s.io/v1",
                             headers={"If-None-Match": '"other"'})).status_code == 200


async def test_stale_hash_redirects_to_the_current_one(client: httpx.AsyncClient) -> None:
    r = await client.get("/openapi/v3/api/v1?hash=0123")
    assert r.status_code == 301
    assert r.headers["location"] == f"/openapi/v3/api/v1?hash={openapi.documents(REGISTRY)['api/v1'].hash}"


@pytest.mark.parametrize("path, accept, status", [
    pytest.param("/openapi/v3/apis/example.com/v1", "application/json", 404, id="unknown-group-version"),
    pytest.param("/openapi/v3/api/v1", "application/com.github.proto-openapi.spec.v3.v1.0+protobuf", 406,
                 id="protobuf-not-served"),
    pytest.param("/openapi/v3/api/v1", "*/*", 200, id="anything"),
])
async def test_document_errors(client: httpx.AsyncClient, path: str, accept: str, status: int) -> None:
    r = await client.get(path, headers={"Accept": accept})
    assert r.status_code == status
    if status != 200:
        assert r.json()["kind"] == "Status" and r.json()["code"] == status
