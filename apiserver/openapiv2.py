"""The OpenAPI v2 (Swagger 2.0) document kubesim serves at ``/openapi/v2``, converted from its OpenAPI v3 documents.

kube-apiserver still serves one Swagger 2.0 document of its whole API beside
the v3 documents, and kubectl still reads it: ``kubectl explain
--output=plaintext-openapiv2``, and kubectl 1.27 to 1.30 look up how a
built-in kind's lists merge there when ``kubectl apply`` computes a strategic
merge patch. Like kube-apiserver's, the document has every served path with
its ``operationId``, ``x-kubernetes-action`` and
``x-kubernetes-group-version-kind``, and ``definitions`` keyed by Kubernetes'
names (``io.k8s.api.core.v1.Pod``; ``com.example.v1.Widget`` for the kind of a
CustomResourceDefinition in ``example.com``), established CRDs' served
versions included.

There is one source of truth: every group-version's OpenAPI v3 document
(:mod:`apiserver.openapi`), merged and converted, as kube-openapi's builders
make both from the same definitions:

- references point at ``#/definitions/``; a reference that OpenAPI 3.0 wraps
  in an ``allOf`` to keep its description is a plain ``$ref`` beside it again;
- what Swagger 2.0 cannot say is dropped: ``oneOf``, ``anyOf``, ``not``,
  other ``allOf``\\ s, ``nullable``; a built-in union of scalars
  (``IntOrString``, ``Quantity``) is a ``string``, as Kubernetes publishes it;
- ``default`` is dropped everywhere (kube-apiserver prunes defaults from v2);
- a custom resource's schema goes through the rules of kube-apiserver's CRD
  v2 builder (``ToStructuralOpenAPIV2``), which exist so that kubectl's
  client-side validation does not refuse valid objects: a ``nullable`` field
  loses its type, properties and items and is no longer required;
  ``x-kubernetes-preserve-unknown-fields`` loses properties and items (and an
  object type); an array without items loses its type; a kind whose root
  preserves unknown fields is just ``type: object`` and its GVK;
- operations take their parameters inline (a body parameter named ``body``
  for a request body), ``consumes`` and ``produces`` from the v3 media types,
  and ``schemes: [https]``.

The document is built on first use and kept until the registry changes (a
CRD established, changed or removed on this APIServer's own watch), exactly
as the v3 documents are, so every APIServer over one etcd serves a new CRD in
v2 once it serves it at all. Its ETag is the hash of the JSON form, which the
protobuf form shares, as kube-openapi's handler does. Documents are only
read once built, so any thread may read them at any time.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final

import orjson

from apiserver import gnostic, openapi
from apiserver.registry.registry import Registry
from machinery.api import schema

Json = dict[str, Any]

_V3_REF: Final = "#/components/schemas/"
_V2_REF: Final = "#/definitions/"
_GVK: Final = "x-kubernetes-group-version-kind"
_PRESERVE: Final = "x-kubernetes-preserve-unknown-fields"
#: The schema keywords a Swagger 2.0 schema has (besides ``x-`` extensions); the structural schema
#: of a CRD has no others that Swagger 2.0 can say.
_SCHEMA_KEYS: Final = frozenset({
    "$ref", "additionalProperties", "description", "enum", "example", "exclusiveMaximum", "exclusiveMinimum",
    "externalDocs", "format", "items", "maxItems", "maxLength", "maxProperties", "maximum", "minItems",
    "minLength", "minProperties", "minimum", "multipleOf", "pattern", "properties", "required", "title", "type",
    "uniqueItems",
})
_SCALARS: Final = frozenset({"boolean", "integer", "number", "string"})
_SECURITY_DEFINITIONS: Final = {"BearerToken": {
    "description": "Bearer Token authentication", "in": "header", "name": "authorization", "type": "apiKey"}}


@dataclass(frozen=True, slots=True)
class SwaggerDocument:
    """The JSON form and its hash (the ETag of both forms), and when it was built (``Last-Modified``)."""

    document: openapi.Document
    built: datetime.datetime


def document(registry: Registry) -> SwaggerDocument:
    """``GET /openapi/v2``'s JSON form, built from the registry's current v3 documents."""
    def build() -> SwaggerDocument:
        return SwaggerDocument(openapi.Document.of(build_swagger(registry)),
                               datetime.datetime.now(datetime.UTC).replace(microsecond=0))
    doc: SwaggerDocument = registry.memo("openapi-v2", build)
    return doc


def protobuf(registry: Registry, doc: SwaggerDocument) -> bytes:
    """The protobuf form (gnostic's ``openapi.v2.Document``) of ``doc``."""
    def build() -> bytes:
        return gnostic.to_protobuf(orjson.loads(doc.document.body))
    body: bytes = registry.memo(("openapi-v2-protobuf", doc.document.hash), build)
    return body


def build_swagger(registry: Registry) -> Json:
    """The whole Swagger 2.0 document: every group-version's v3 document, merged and converted."""
    paths: dict[str, Json] = {}
    components: dict[str, Json] = {}
    for v3 in openapi.documents(registry).values():
        content = orjson.loads(v3.body)
        paths.update(content["paths"])
        components.update(content["components"]["schemas"])
    return {
        "definitions": {name: _definition(name, value) for name, value in components.items()},
        "info": {"title": "Kubernetes", "version": schema.KUBERNETES_VERSION},
        "paths": {path: _path_item(item) for path, item in paths.items()},
        "security": [{name: []} for name in _SECURITY_DEFINITIONS],
        "securityDefinitions": _SECURITY_DEFINITIONS,
        "swagger": "2.0",
    }


# --- schemas ------------------------------------------------------------------------------------


def _definition(name: str, v3: Json) -> Json:
    if not schema.is_custom(name):
        return _schema(v3, custom=False)
    if v3.get(_PRESERVE) is True and _GVK in v3:
        # A kind that keeps whatever it is given: any property published would make kubectl refuse the others.
        return {"type": "object", _GVK: v3[_GVK]}
    return _schema(v3, custom=True)


def _schema(node: Json, *, custom: bool) -> Json:
    """One OpenAPI 3.0 schema as Swagger 2.0 says it; ``custom`` for a CRD's, with kube-apiserver's CRD rules."""
    if custom:
        node = _crd_rules(node)
    out: Json = {}
    for key, value in node.items():
        if key == "$ref":
            out[key] = _V2_REF + value.removeprefix(_V3_REF)
        elif key == "allOf":
            # OpenAPI 3.0's way to keep a description beside a reference (a CRD's schema has no $ref);
            # other allOfs are value validations, which Swagger 2.0 cannot say.
            if len(value) == 1 and set(value[0]) == {"$ref"}:
                out["$ref"] = _V2_REF + value[0]["$ref"].removeprefix(_V3_REF)
        elif key == "properties":
            out[key] = {prop: _schema(sub, custom=custom) for prop, sub in value.items()}
        elif key == "items" or (key == "additionalProperties" and isinstance(value, dict)):
            out[key] = _schema(value, custom=custom)
        elif key == "default":
            continue
        elif key in _SCHEMA_KEYS or key.startswith("x-"):
            out[key] = value
    if "$ref" in out:
        # kubectl refuses a reference with a type or properties of its own.
        out.pop("type", None)
        out.pop("properties", None)
    elif not custom and "type" not in out:
        branches = {b.get("type") for b in node.get("oneOf") or node.get("anyOf") or ()}
        if branches and branches <= _SCALARS:
            # IntOrString, Quantity: Kubernetes publishes their v2 type as string (OpenAPISchemaType).
            out["type"] = "string" if "string" in branches else branches.pop()
    if not out.get("required", True):
        del out["required"]
    return out


def _crd_rules(node: Json) -> Json:
    """kube-apiserver's ``ToStructuralOpenAPIV2`` for one node of a CRD's schema (children come later)."""
    node = dict(node)
    if node.pop("nullable", False):
        for key in ("type", "items", "properties"):
            node.pop(key, None)
    if node.get(_PRESERVE) is True:
        node.pop("items", None)
        node.pop("properties", None)
    if node.get("type") == "array" and "items" not in node:
        # kubectl cannot read an array without an item schema.
        del node["type"]
    if node.get(_PRESERVE) is True and node.get("type") == "object":
        del node["type"]
    properties = node.get("properties") or {}
    if "required" in node:
        extra = node.get("additionalProperties")
        if isinstance(extra, dict) and extra.get("nullable"):
            del node["required"]
        else:
            node["required"] = [f for f in node["required"] if not (properties.get(f) or {}).get("nullable")]
    return node


# --- paths --------------------------------------------------------------------------------------


def _path_item(item: Json) -> Json:
    out: Json = {}
    for key, value in item.items():
        out[key] = [_parameter(p) for p in value] if key == "parameters" else _operation(value)
    return out


def _parameter(param: Json) -> Json:
    out = {k: v for k, v in param.items() if k != "schema"}
    out.update(_schema(param.get("schema") or {}, custom=False))
    return out


def _media_types(bodies: Iterable[Json]) -> list[str]:
    seen: dict[str, None] = {}
    for body in bodies:
        seen.update(dict.fromkeys(body.get("content") or ()))
    return list(seen)


def _operation(op: Json) -> Json:
    out: Json = {k: v for k, v in op.items() if k not in ("parameters", "requestBody", "responses")}
    params = [_parameter(p) for p in op.get("parameters") or ()]
    request = op.get("requestBody")
    if request is not None:
        body: Json = {"in": "body", "name": "body",
                      "schema": _schema(next(iter(request["content"].values()))["schema"], custom=False)}
        if request.get("required"):
            body["required"] = True
        params.append(body)
    if params:
        out["parameters"] = params
    out["consumes"] = _media_types([request]) if request is not None else ["*/*"]
    responses = op["responses"]
    out["produces"] = _media_types(responses.values())
    out["responses"] = {code: _response(response) for code, response in responses.items()}
    out["schemes"] = ["https"]
    return out


def _response(response: Json) -> Json:
    out: Json = {"description": response["description"]}
    content = response.get("content")
    if content:
        out["schema"] = _schema(next(iter(content.values()))["schema"], custom=False)
    return out
