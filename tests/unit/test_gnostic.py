"""Swagger 2.0 documents in gnostic's protobuf form: each union decided as gnostic's compiler decides it."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from apiserver import gnostic

Doc = dict[str, Any]

DOCUMENT: Doc = {
    "swagger": "2.0",
    "info": {"title": "T", "version": "v1", "x-note": "info extension"},
    "paths": {
        "/things/{name}": {
            "parameters": [{"in": "path", "name": "name", "required": True, "type": "string", "uniqueItems": True},
                           {"$ref": "#/parameters/pretty"}],
            "put": {
                "operationId": "replaceThing", "consumes": ["*/*"], "produces": ["application/json"],
                "schemes": ["https"], "tags": ["things"],
                "parameters": [
                    {"in": "body", "name": "body", "required": True, "schema": {"$ref": "#/definitions/Thing"}},
                    {"in": "query", "name": "dryRun", "type": "string"},
                    {"in": "header", "name": "X-Trace", "type": "string"},
                    {"in": "formData", "name": "f", "type": "integer", "minimum": 2},
                ],
                "responses": {"200": {"description": "OK", "schema": {"$ref": "#/definitions/Thing"}},
                              "404": {"$ref": "#/responses/missing"},
                              "299": {"description": "A file", "schema": {"type": "file"}}},
                "x-kubernetes-action": "put",
                "x-kubernetes-group-version-kind": {"group": "", "kind": "Thing", "version": "v1"},
            },
        },
        "x-paths-note": 1,
    },
    "definitions": {
        "Thing": {
            "type": "object", "required": ["spec"], "description": "A thing.",
            "properties": {
                "spec": {"$ref": "#/definitions/Spec", "description": "beside the reference"},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "open": {"type": "object", "additionalProperties": True},
                "tuple": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}]},
                "either": {"type": ["string", "integer"]},
                "mode": {"type": "string", "enum": ["a", "b"], "default": "a", "example": "b"},
                "ratio": {"type": "number", "maximum": 3, "exclusiveMaximum": True, "multipleOf": 0.5},
            },
            "x-kubernetes-group-version-kind": [{"group": "", "kind": "Thing", "version": "v1"}],
        },
        "Spec": {"type": "object", "properties": {}},
    },
    "parameters": {"pretty": {"in": "query", "name": "pretty", "type": "string"}},
    "responses": {"missing": {"description": "Not found"}},
    "securityDefinitions": {"BearerToken": {"type": "apiKey", "in": "header", "name": "authorization"},
                            "Basic": {"type": "basic"},
                            "OAuth": {"type": "oauth2", "flow": "implicit", "authorizationUrl": "https://a",
                                      "scopes": {"read": "Read things"}}},
    "security": [{"BearerToken": []}],
}


def _named(entries: Any, name: str) -> Any:
    return next(e.value for e in entries if e.name == name)


def _extensions(message: Any) -> dict[str, Any]:
    return {e.name: yaml.safe_load(e.value.yaml) for e in message.vendor_extension}


@pytest.fixture(scope="module")
def doc() -> Any:
    return gnostic.from_protobuf(gnostic.to_protobuf(DOCUMENT))


def test_document_fields_and_extensions(doc: Any) -> None:
    assert (doc.swagger, doc.info.title, doc.info.version) == ("2.0", "T", "v1")
    assert _extensions(doc.info) == {"x-note": "info extension"}
    assert _extensions(doc.paths) == {"x-paths-note": 1}
    assert [p.name for p in doc.paths.path] == ["/things/{name}"]


def test_parameters_are_decided_by_where_they_are(doc: Any) -> None:
    item = _named(doc.paths.path, "/things/{name}")
    path_param, ref = item.parameters
    assert path_param.parameter.non_body_parameter.path_parameter_sub_schema.name == "name"
    assert path_param.parameter.non_body_parameter.path_parameter_sub_schema.required
    assert ref.json_reference._ref == "#/parameters/pretty"
    params = [p.parameter for p in item.put.parameters]
    assert params[0].body_parameter.schema._ref == "#/definitions/Thing" and params[0].body_parameter.required
    assert params[1].non_body_parameter.query_parameter_sub_schema.name == "dryRun"
    assert params[2].non_body_parameter.header_parameter_sub_schema.name == "X-Trace"
    assert params[3].non_body_parameter.form_data_parameter_sub_schema.minimum == 2.0
    assert _named(doc.parameters.additional_properties, "pretty").non_body_parameter.HasField(
        "query_parameter_sub_schema")


def test_operations_and_responses(doc: Any) -> None:
    put = _named(doc.paths.path, "/things/{name}").put
    assert (put.operation_id, list(put.consumes), list(put.schemes)) == ("replaceThing", ["*/*"], ["https"])
    assert _extensions(put) == {"x-kubernetes-action": "put",
                                "x-kubernetes-group-version-kind": {"group": "", "kind": "Thing", "version": "v1"}}
    codes = put.responses.response_code
    assert [c.name for c in codes] == ["200", "299", "404"]
    assert _named(codes, "200").response.schema.schema._ref == "#/definitions/Thing"
    assert _named(codes, "299").response.schema.file_schema.type == "file"
    assert _named(codes, "404").json_reference._ref == "#/responses/missing"
    assert _named(doc.responses.additional_properties, "missing").description == "Not found"


def test_schemas(doc: Any) -> None:
    thing = _named(doc.definitions.additional_properties, "Thing")
    assert list(thing.type.value) == ["object"] and list(thing.required) == ["spec"]
    assert _extensions(thing)["x-kubernetes-group-version-kind"] == [{"group": "", "kind": "Thing", "version": "v1"}]
    props = thing.properties.additional_properties
    # Properties keep the JSON's sorted order.
    assert [p.name for p in props] == sorted(DOCUMENT["definitions"]["Thing"]["properties"])
    spec = _named(props, "spec")
    assert (spec._ref, spec.description, len(spec.type.value)) == ("#/definitions/Spec", "beside the reference", 0)
    assert list(_named(props, "labels").additional_properties.schema.type.value) == ["string"]
    assert _named(props, "open").additional_properties.boolean is True
    assert [list(s.type.value) for s in _named(props, "tuple").items.schema] == [["string"], ["integer"]]
    assert list(_named(props, "either").type.value) == ["string", "integer"]
    mode = _named(props, "mode")
    assert [yaml.safe_load(e.yaml) for e in mode.enum] == ["a", "b"]
    assert yaml.safe_load(mode.default.yaml) == "a" and yaml.safe_load(mode.example.yaml) == "b"
    ratio = _named(props, "ratio")
    assert (ratio.maximum, ratio.exclusive_maximum, ratio.multiple_of) == (3.0, True, 0.5)
    # An object with no properties still has them (kubectl tells an object from a map by it).
    assert _named(doc.definitions.additional_properties, "Spec").HasField("properties")


def test_security(doc: Any) -> None:
    schemes = doc.security_definitions.additional_properties
    assert _named(schemes, "BearerToken").api_key_security.name == "authorization"
    assert _named(schemes, "Basic").HasField("basic_authentication_security")
    oauth = _named(schemes, "OAuth").oauth2_implicit_security
    assert oauth.authorization_url == "https://a" and oauth.scopes.additional_properties[0].value == "Read things"
    requirement = doc.security[0].additional_properties[0]
    assert requirement.name == "BearerToken" and list(requirement.value.value) == []


@pytest.mark.parametrize("document, error", [
    pytest.param({"swagger": "2.0", "nullable": True}, ValueError, id="unknown-key"),
    pytest.param({"definitions": {"X": {"oneOf": []}}}, ValueError, id="openapi-3-keyword"),
    pytest.param({"info": "Kubernetes"}, TypeError, id="wrong-shape"),
    pytest.param({"paths": {"/x": {"get": {"parameters": [{"in": "cookie", "name": "c"}]}}}}, ValueError,
                 id="parameter-location"),
    pytest.param({"securityDefinitions": {"S": {"type": "oauth2", "flow": "device"}}}, ValueError,
                 id="security-flow"),
])
def test_what_swagger_2_cannot_say_is_a_bug_not_a_document(document: Doc, error: type[Exception]) -> None:
    with pytest.raises(error):
        gnostic.to_protobuf(document)
