"""The OpenAPI v2 (Swagger 2.0) document, converted from the v3 ones, its protobuf form, and the router serving it."""

from __future__ import annotations

import datetime
import gzip
from collections.abc import AsyncIterator, Iterator
from email.utils import format_datetime
from typing import Any

import httpx
import jsonschema_rs
import orjson
import pytest
import yaml
from fastapi import FastAPI, Request, Response
from schemathesis.specs.openapi.definitions import SWAGGER_20

from apiserver import gnostic, openapi, openapiv2
from apiserver.apiextensions import customresource
from apiserver.errors import APIError
from apiserver.registry.groups import builtin_resources
from apiserver.registry.registry import Registry
from apiserver.routers import openapi as openapi_router
from machinery.api import schema as defs
from tests.crds import widget_crd

Doc = dict[str, Any]
PROTOBUF = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
PROTOBUF_DEPRECATED = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
GROUP = "v2test.example.com"
WIDGET = "com.example.v2test.v1.Widget"
OPEN = "com.example.v2test.v1.Open"

# A schema with one property for each rule of kube-apiserver's CRD v2 builder.
RULES_SCHEMA: Doc = {
    "type": "object",
    "properties": {"spec": {
        "type": "object",
        "description": "The spec.",
        "required": ["keep", "maybe"],
        "properties": {
            "keep": {"type": "string", "description": "Kept.", "default": "x", "enum": ["x", "y"]},
            "maybe": {"type": "object", "nullable": True, "properties": {"a": {"type": "string"}}},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                     "properties": {"n": {"type": "integer"}}},
            "freeList": {"type": "array", "x-kubernetes-preserve-unknown-fields": True,
                         "items": {"type": "string"}},
            "port": {"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}, {"type": "string"}]},
            "checked": {"type": "string", "allOf": [{"pattern": "^a"}], "oneOf": [{"minLength": 1}],
                        "not": {"enum": ["b"]}},
            "nullableValues": {"type": "object", "required": ["k"],
                               "additionalProperties": {"type": "string", "nullable": True}},
            "sized": {"type": "integer", "format": "int32", "minimum": 1, "maximum": 10,
                      "x-kubernetes-validations": [{"rule": "self > 0"}]},
        },
    }},
}


def _crd(kind: str, plural: str, schema: Doc, *, served_versions: tuple[str, ...] = ("v1",)) -> Doc:
    crd = widget_crd(GROUP, plural=plural, kind=kind, short_names=())
    crd["spec"]["versions"] = [
        {"name": v, "served": True, "storage": i == 0, "schema": {"openAPIV3Schema": schema},
         "subresources": {"status": {}}} for i, v in enumerate(served_versions)]
    return crd


CRDS = (_crd("Widget", "widgets", RULES_SCHEMA, served_versions=("v1", "v2")),
        _crd("Open", "opens", {"type": "object", "x-kubernetes-preserve-unknown-fields": True}))


@pytest.fixture(scope="module")
def registry() -> Iterator[Registry]:
    """The built-in resources plus two CRDs (their definitions published as the CRD controller does)."""
    reg = Registry(builtin_resources())
    for crd in CRDS:
        defs.set_custom_definitions(crd["metadata"]["name"], customresource.definitions(crd))
        for resource in customresource.resources_for(crd):
            reg.add(resource)
    yield reg
    for crd in CRDS:
        defs.set_custom_definitions(crd["metadata"]["name"], {})


@pytest.fixture(scope="module")
def swagger(registry: Registry) -> Doc:
    doc: Doc = orjson.loads(openapiv2.document(registry).document.body)
    return doc


def v3_documents(registry: Registry) -> list[Doc]:
    return [orjson.loads(d.body) for d in openapi.documents(registry).values()]


def refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                yield value
            elif key != "properties":
                yield from refs(value)
            else:
                for prop in value.values():
                    yield from refs(prop)
    elif isinstance(node, list):
        for value in node:
            yield from refs(value)


def keys(node: Any) -> Iterator[str]:
    """Every key of a document, except the names of properties and of definitions."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("properties", "definitions", "paths"):
                for sub in value.values():
                    yield from keys(sub)
            else:
                yield key
                yield from keys(value)
    elif isinstance(node, list):
        for value in node:
            yield from keys(value)


# --- the document -------------------------------------------------------------------------------


def test_the_document_is_valid_swagger_2(swagger: Doc) -> None:
    # The Swagger 2.0 meta-schema: no oneOf, anyOf or nullable left, every parameter and response well formed.
    jsonschema_rs.Draft4Validator(SWAGGER_20).validate(swagger)
    assert swagger["swagger"] == "2.0" and swagger["info"] == {"title": "Kubernetes", "version": "v1.32.0"}
    assert swagger["securityDefinitions"]["BearerToken"]["in"] == "header"


def test_it_has_every_v3_path_and_definition(registry: Registry, swagger: Doc) -> None:
    paths: set[str] = set()
    schemas: set[str] = set()
    for doc in v3_documents(registry):
        paths |= set(doc["paths"])
        schemas |= set(doc["components"]["schemas"])
    assert set(swagger["paths"]) == paths
    assert set(swagger["definitions"]) == schemas
    assert {"io.k8s.api.core.v1.Pod", "io.k8s.api.apps.v1.Deployment", WIDGET, WIDGET + "List",
            "com.example.v2test.v2.Widget", OPEN} <= schemas
    for ref in refs(swagger):
        assert ref.startswith("#/definitions/") and ref.removeprefix("#/definitions/") in swagger["definitions"], ref
    # What OpenAPI 3.0 says and Swagger 2.0 cannot (property names, such as JSONSchemaProps' "oneOf", aside).
    assert not {"oneOf", "anyOf", "not", "nullable", "default", "requestBody", "content"} & set(keys(swagger))


def test_builtin_definitions_as_kubernetes_publishes_them(swagger: Doc) -> None:
    definitions = swagger["definitions"]
    pod = definitions["io.k8s.api.core.v1.Pod"]
    assert pod["x-kubernetes-group-version-kind"] == [{"group": "", "kind": "Pod", "version": "v1"}]
    # Swagger 2.0 keeps a reference's siblings: no allOf around it.
    assert set(pod["properties"]["spec"]) == {"$ref", "description"}
    assert pod["properties"]["spec"]["$ref"] == "#/definitions/io.k8s.api.core.v1.PodSpec"
    containers = definitions["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
    assert containers["items"] == {"$ref": "#/definitions/io.k8s.api.core.v1.Container"}
    assert (containers["x-kubernetes-patch-merge-key"], containers["x-kubernetes-patch-strategy"]) == (
        "name", "merge")
    assert definitions["io.k8s.apimachinery.pkg.util.intstr.IntOrString"] == {"format": "int-or-string",
                                                                             "type": "string"}
    assert definitions["io.k8s.apimachinery.pkg.api.resource.Quantity"] == {"type": "string"}
    assert definitions["io.k8s.apimachinery.pkg.apis.meta.v1.Time"]["format"] == "date-time"


def test_operations_as_kubernetes_publishes_them(swagger: Doc) -> None:
    pod = swagger["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]
    assert [(p["name"], p["in"], p["type"], p.get("required")) for p in pod["parameters"]] == [
        ("name", "path", "string", True), ("namespace", "path", "string", True), ("pretty", "query", "string", None)]
    put = pod["put"]
    assert (put["operationId"], put["x-kubernetes-action"], put["tags"]) == ("replaceCoreV1NamespacedPod", "put",
                                                                             ["core_v1"])
    assert put["x-kubernetes-group-version-kind"] == {"group": "", "kind": "Pod", "version": "v1"}
    assert put["consumes"] == ["*/*"] and put["schemes"] == ["https"]
    assert put["produces"] == ["application/json", "application/yaml"]
    body = next(p for p in put["parameters"] if p["in"] == "body")
    assert body == {"in": "body", "name": "body", "required": True,
                    "schema": {"$ref": "#/definitions/io.k8s.api.core.v1.Pod"}}
    assert put["responses"]["201"] == {"description": "Created",
                                       "schema": {"$ref": "#/definitions/io.k8s.api.core.v1.Pod"}}
    patch = pod["patch"]
    assert "application/strategic-merge-patch+json" in patch["consumes"]
    assert "fieldValidation" in {p["name"] for p in patch["parameters"]}
    delete_body = next(p for p in pod["delete"]["parameters"] if p["in"] == "body")
    assert "required" not in delete_body
    listing = swagger["paths"]["/api/v1/namespaces/{namespace}/pods"]["get"]
    assert "application/json;stream=watch" in listing["produces"] and "parameters" in listing
    log = swagger["paths"]["/api/v1/namespaces/{namespace}/pods/{name}/log"]["get"]
    assert log["responses"]["200"]["schema"] == {"type": "string"} and "text/plain" in log["produces"]


def test_every_v3_operation_keeps_its_action_and_gvk(registry: Registry, swagger: Doc) -> None:
    for doc in v3_documents(registry):
        for path, item in doc["paths"].items():
            for method, op in item.items():
                if method == "parameters":
                    continue
                v2 = swagger["paths"][path][method]
                for key in ("operationId", "x-kubernetes-action", "x-kubernetes-group-version-kind", "tags"):
                    assert v2.get(key) == op.get(key), (path, method, key)


# --- custom resources ---------------------------------------------------------------------------


def test_a_crd_is_published_under_its_reversed_group_in_every_served_version(swagger: Doc) -> None:
    for version in ("v1", "v2"):
        name = f"com.example.v2test.{version}.Widget"
        widget = swagger["definitions"][name]
        assert widget["x-kubernetes-group-version-kind"] == [{"group": GROUP, "kind": "Widget", "version": version}]
        assert widget["properties"]["metadata"] == {
            "$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
            "description": widget["properties"]["metadata"]["description"]}
        listed = swagger["definitions"][name + "List"]
        assert listed["properties"]["items"]["items"] == {"$ref": f"#/definitions/{name}"}
        assert listed["x-kubernetes-group-version-kind"][0]["kind"] == "WidgetList"
        item = swagger["paths"][f"/apis/{GROUP}/{version}/namespaces/{{namespace}}/widgets/{{name}}"]
        assert item["get"]["x-kubernetes-group-version-kind"] == {"group": GROUP, "kind": "Widget",
                                                                  "version": version}
        assert f"/apis/{GROUP}/{version}/namespaces/{{namespace}}/widgets/{{name}}/status" in swagger["paths"]


@pytest.mark.parametrize("prop, expected", [
    pytest.param("keep", {"type": "string", "description": "Kept.", "enum": ["x", "y"]}, id="default-pruned"),
    pytest.param("maybe", {}, id="nullable-loses-type-and-properties"),
    pytest.param("free", {"x-kubernetes-preserve-unknown-fields": True}, id="preserve-unknown-object"),
    pytest.param("freeList", {"x-kubernetes-preserve-unknown-fields": True}, id="preserve-unknown-array"),
    pytest.param("port", {"x-kubernetes-int-or-string": True}, id="int-or-string-without-anyOf"),
    pytest.param("checked", {"type": "string"}, id="junctors-dropped"),
    pytest.param("nullableValues", {"type": "object", "additionalProperties": {}}, id="nullable-values-not-required"),
    pytest.param("sized", {"type": "integer", "format": "int32", "minimum": 1, "maximum": 10,
                           "x-kubernetes-validations": [{"rule": "self > 0"}]}, id="validations-kept"),
])
def test_crd_schemas_follow_kube_apiservers_v2_rules(swagger: Doc, prop: str, expected: Doc) -> None:
    spec = swagger["definitions"][WIDGET]["properties"]["spec"]
    assert spec["properties"][prop] == expected


def test_a_nullable_field_is_not_required(swagger: Doc) -> None:
    spec = swagger["definitions"][WIDGET]["properties"]["spec"]
    assert spec["required"] == ["keep"] and spec["description"] == "The spec."


def test_a_kind_that_preserves_unknown_fields_is_only_an_object(swagger: Doc) -> None:
    assert swagger["definitions"][OPEN] == {
        "type": "object", "x-kubernetes-group-version-kind": [{"group": GROUP, "kind": "Open", "version": "v1"}]}


def test_a_removed_crd_leaves_the_document() -> None:
    reg = Registry(builtin_resources())
    crd = _crd("Gadget", "gadgets", RULES_SCHEMA)
    name = "com.example.v2test.v1.Gadget"
    defs.set_custom_definitions(crd["metadata"]["name"], customresource.definitions(crd))
    try:
        resources = customresource.resources_for(crd)
        for resource in resources:
            reg.add(resource)
        before = openapiv2.document(reg)
        assert name in orjson.loads(before.document.body)["definitions"]
    finally:
        defs.set_custom_definitions(crd["metadata"]["name"], {})
    for resource in resources:
        reg.remove(resource.info)
    after = openapiv2.document(reg)
    assert after.document.hash != before.document.hash
    doc = orjson.loads(after.document.body)
    assert name not in doc["definitions"] and not [p for p in doc["paths"] if GROUP in p]


# --- the protobuf form --------------------------------------------------------------------------


def _named(entries: Any, name: str) -> Any:
    return next(e.value for e in entries if e.name == name)


def _extensions(message: Any) -> dict[str, Any]:
    return {e.name: yaml.safe_load(e.value.yaml) for e in message.vendor_extension}


def test_the_protobuf_form_is_gnostics_document(registry: Registry, swagger: Doc) -> None:
    doc = gnostic.from_protobuf(openapiv2.protobuf(registry, openapiv2.document(registry)))
    assert doc.swagger == "2.0" and doc.info.title == "Kubernetes"  # type: ignore[attr-defined]
    definitions = doc.definitions.additional_properties  # type: ignore[attr-defined]
    assert [d.name for d in definitions] == sorted(swagger["definitions"])
    pod = _named(definitions, "io.k8s.api.core.v1.Pod")
    assert list(pod.type.value) == ["object"]
    assert _extensions(pod)["x-kubernetes-group-version-kind"] == [{"group": "", "kind": "Pod", "version": "v1"}]
    spec = _named(pod.properties.additional_properties, "spec")
    assert spec._ref == "#/definitions/io.k8s.api.core.v1.PodSpec" and spec.description
    containers = _named(_named(definitions, "io.k8s.api.core.v1.PodSpec").properties.additional_properties,
                        "containers")
    assert containers.items.schema[0]._ref == "#/definitions/io.k8s.api.core.v1.Container"
    assert _extensions(containers)["x-kubernetes-patch-merge-key"] == "name"
    labels = _named(_named(definitions, "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")
                    .properties.additional_properties, "labels")
    assert list(labels.additional_properties.schema.type.value) == ["string"]
    widget_spec = _named(_named(definitions, WIDGET).properties.additional_properties, "spec")
    color = _named(widget_spec.properties.additional_properties, "keep")
    assert [yaml.safe_load(e.yaml) for e in color.enum] == ["x", "y"] and list(widget_spec.required) == ["keep"]


def test_the_protobuf_form_has_the_paths_with_their_unions(registry: Registry) -> None:
    doc: Any = gnostic.from_protobuf(openapiv2.protobuf(registry, openapiv2.document(registry)))
    item = _named(doc.paths.path, "/api/v1/namespaces/{namespace}/pods/{name}")
    assert [p.parameter.non_body_parameter.path_parameter_sub_schema.name for p in item.parameters][:2] == [
        "name", "namespace"]
    patch = item.patch
    assert _extensions(patch) == {"x-kubernetes-action": "patch",
                                  "x-kubernetes-group-version-kind": {"group": "", "kind": "Pod", "version": "v1"}}
    queries = [p.parameter.non_body_parameter.query_parameter_sub_schema.name for p in patch.parameters
               if p.parameter.HasField("non_body_parameter")]
    assert "fieldValidation" in queries  # what kubectl's v2 query-parameter verifier looks for
    body = next(p.parameter.body_parameter for p in patch.parameters if p.parameter.HasField("body_parameter"))
    assert body.name == "body" and body.required
    ok = _named(patch.responses.response_code, "200").response
    assert ok.description == "OK" and ok.schema.schema._ref == "#/definitions/io.k8s.api.core.v1.Pod"
    assert doc.security_definitions.additional_properties[0].value.api_key_security.name == "authorization"


# --- the router ---------------------------------------------------------------------------------


@pytest.fixture
async def client(registry: Registry) -> AsyncIterator[httpx.AsyncClient]:
    app = FastAPI()

    @app.exception_handler(APIError)
    async def status(_request: Request, exc: APIError) -> Response:
        return Response(orjson.dumps(exc.status()), status_code=exc.code, media_type="application/json")

    app.include_router(openapi_router.router)

    class Server:
        pass

    server = Server()
    server.registry = registry  # type: ignore[attr-defined]
    app.state.server = server
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app), base_url="http://kubesim") as c:
        yield c


@pytest.mark.parametrize("accept, content_type", [
    pytest.param(None, "application/json", id="no-accept"),
    pytest.param("*/*", "application/json", id="anything"),
    pytest.param("application/json", "application/json", id="json"),
    pytest.param(PROTOBUF_DEPRECATED, PROTOBUF, id="kubectl"),
    pytest.param(PROTOBUF, PROTOBUF, id="current-spelling"),
    pytest.param(f"application/json;q=0.5, {PROTOBUF}", PROTOBUF, id="by-quality"),
])
async def test_v2_is_served_as_json_or_protobuf(client: httpx.AsyncClient, registry: Registry,
                                                accept: str | None, content_type: str) -> None:
    r = await client.get("/openapi/v2", headers={"Accept": accept} if accept else {})
    assert r.status_code == 200 and r.headers["content-type"] == content_type
    swagger = openapiv2.document(registry)
    expected = swagger.document.body if content_type == "application/json" else openapiv2.protobuf(registry, swagger)
    assert r.content == expected
    # One ETag for both forms (the hash of the JSON), as kube-openapi's handler has it.
    assert r.headers["etag"] == f'"{swagger.document.hash}"' and "Accept" in r.headers["vary"]
    assert r.headers["last-modified"].endswith(" GMT")


async def test_v2_refuses_what_it_cannot_write(client: httpx.AsyncClient) -> None:
    r = await client.get("/openapi/v2", headers={"Accept": "application/yaml"})
    assert r.status_code == 406 and r.json()["reason"] == "NotAcceptable"


async def test_v2_revalidates_with_its_etag_or_date(client: httpx.AsyncClient) -> None:
    first = await client.get("/openapi/v2", headers={"Accept": PROTOBUF_DEPRECATED})
    etag = first.headers["etag"]
    for accept in (PROTOBUF_DEPRECATED, "application/json"):
        again = await client.get("/openapi/v2", headers={"Accept": accept, "If-None-Match": etag})
        assert again.status_code == 304 and again.content == b"" and again.headers["etag"] == etag
    assert (await client.get("/openapi/v2", headers={"If-None-Match": '"other"'})).status_code == 200
    since = first.headers["last-modified"]
    assert (await client.get("/openapi/v2", headers={"If-Modified-Since": since})).status_code == 304
    earlier = format_datetime(datetime.datetime(2000, 1, 1, tzinfo=datetime.UTC), usegmt=True)
    assert (await client.get("/openapi/v2", headers={"If-Modified-Since": earlier})).status_code == 200
    assert (await client.get("/openapi/v2", headers={"If-Modified-Since": "yesterday"})).status_code == 200


async def test_v2_is_gzipped_for_clients_that_take_it(client: httpx.AsyncClient, registry: Registry) -> None:
    swagger = openapiv2.document(registry)
    async with client.stream("GET", "/openapi/v2", headers={"Accept-Encoding": "gzip"}) as r:
        raw = b"".join([chunk async for chunk in r.aiter_raw()])
    assert r.headers["content-encoding"] == "gzip" and gzip.decompress(raw) == swagger.document.body
    async with client.stream("GET", "/openapi/v2", headers={"Accept-Encoding": "gzip;q=0, identity"}) as r:
        raw = b"".join([chunk async for chunk in r.aiter_raw()])
    assert "content-encoding" not in r.headers and raw == swagger.document.body
