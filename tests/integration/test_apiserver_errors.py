"""Every error is a Kubernetes Status with the right code and reason."""

from __future__ import annotations

import httpx
import pytest

from tests.kube import pod

pytestmark = pytest.mark.integration


def assert_status(r: httpx.Response, code: int, reason: str) -> dict:
    assert r.status_code == code, r.text
    body = r.json()
    assert body["kind"] == "Status" and body["apiVersion"] == "v1" and body["status"] == "Failure"
    assert body["code"] == code and body["reason"] == reason, body
    assert "detail" not in body
    return body


@pytest.mark.parametrize("method,path,code,reason", [
    ("GET", "/api/v1/frobs", 404, "NotFound"),
    ("GET", "/api/v2/pods", 404, "NotFound"),
    ("GET", "/apis/nope.example.com/v1/things", 404, "NotFound"),
    ("GET", "/api/v1/namespaces/default/pods/x/bogus", 404, "NotFound"),
    ("PUT", "/api/v1/namespaces/default/pods", 405, "MethodNotAllowed"),
    ("POST", "/api/v1/namespaces/default/pods/x", 405, "MethodNotAllowed"),
    ("DELETE", "/api/v1/namespaces/default/pods/x/status", 405, "MethodNotAllowed"),
    ("DELETE", "/api/v1/namespaces", 405, "MethodNotAllowed"),
], ids=["unknown-resource", "unknown-version", "unknown-group", "unknown-subresource", "put-collection",
        "post-object", "delete-status", "deletecollection-namespaces"])
def test_paths_and_verbs(api: httpx.Client, method: str, path: str, code: int, reason: str) -> None:
    assert_status(api.request(method, path), code, reason)


def test_not_found_message(api: httpx.Client) -> None:
    body = assert_status(api.get("/api/v1/namespaces/default/pods/nope"), 404, "NotFound")
    assert body["message"] == 'pods "nope" not found'
    body = assert_status(api.get("/apis/coordination.k8s.io/v1/namespaces/default/leases/nope"), 404, "NotFound")
    assert body["message"] == 'leases.coordination.k8s.io "nope" not found'
    assert body["details"] == {"name": "nope", "group": "coordination.k8s.io", "kind": "leases"}


def test_malformed_json_is_400(api: httpx.Client) -> None:
    r = api.post("/api/v1/namespaces/default/pods", content=b'{"kind": "Pod", ',
                 headers={"Content-Type": "application/json"})
    assert_status(r, 400, "BadRequest")


def test_body_without_content_type_is_json(api: httpx.Client, namespace: str) -> None:
    import orjson
    r = api.post(f"/api/v1/namespaces/{namespace}/pods", content=orjson.dumps(pod("noct")),
                 headers={"Content-Type": ""})
    assert r.status_code == 201, r.text


def test_yaml_body(api: httpx.Client, namespace: str) -> None:
    doc = b"apiVersion: v1\nkind: Pod\nmetadata:\n  name: fromyaml\nspec:\n  containers:\n  - name: c\n" \
          b"    image: nginx\n    resources:\n      requests:\n        cpu: 1\n"
    r = api.post(f"/api/v1/namespaces/{namespace}/pods", content=doc, headers={"Content-Type": "application/yaml"})
    assert r.status_code == 201, r.text
    # A number written for a Quantity becomes the Quantity string.
    assert r.json()["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "1"


def test_body_too_large_is_413(api: httpx.Client) -> None:
    big = b'{"metadata":{"name":"x","annotations":{"a":"' + b"y" * (4 * 1024 * 1024) + b'"}}}'
    r = api.post("/api/v1/namespaces/default/pods", content=big, headers={"Content-Type": "application/json"})
    assert_status(r, 413, "RequestEntityTooLarge")


def test_wrong_media_type_is_415(api: httpx.Client) -> None:
    r = api.post("/api/v1/namespaces/default/pods", content=b"x", headers={"Content-Type": "text/plain"})
    assert_status(r, 415, "UnsupportedMediaType")
    r = api.patch("/api/v1/namespaces/default/pods/x", content=b"{}", headers={"Content-Type": "application/json"})
    assert_status(r, 415, "UnsupportedMediaType")


def test_kind_and_namespace_mismatches_are_400(api: httpx.Client, namespace: str) -> None:
    body = pod("k")
    body["kind"] = "Node"
    assert_status(api.post(f"/api/v1/namespaces/{namespace}/pods", json=body), 400, "BadRequest")
    body = pod("k")
    body["apiVersion"] = "apps/v1"
    assert_status(api.post(f"/api/v1/namespaces/{namespace}/pods", json=body), 400, "BadRequest")
    body = pod("k")
    body["metadata"]["namespace"] = "other"
    r = assert_status(api.post(f"/api/v1/namespaces/{namespace}/pods", json=body), 400, "BadRequest")
    assert "does not match the namespace" in r["message"]


def test_wrong_type_is_400(api: httpx.Client, namespace: str) -> None:
    body = pod("t")
    body["spec"]["containers"][0]["ports"] = [{"containerPort": "eighty"}]
    r = assert_status(api.post(f"/api/v1/namespaces/{namespace}/pods", json=body), 400, "BadRequest")
    # Worded as Go's decoder words it: the innermost struct, the field path without indices.
    assert r["message"] == ('Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal string into '
                            "Go struct field ContainerPort.spec.containers.ports.containerPort of type int32")


def test_unknown_fields_per_field_validation(api: httpx.Client, namespace: str) -> None:
    base = f"/api/v1/namespaces/{namespace}/pods"
    body = pod("u1")
    body["spec"]["containers"][0]["imagee"] = "typo"
    r = api.post(base, json=body, params={"fieldValidation": "Strict"})
    assert_status(r, 400, "BadRequest")
    assert r.json()["message"] == 'strict decoding error: unknown field "spec.containers[0].imagee"'
    r = api.post(base, json=body)
    assert r.status_code == 201
    assert r.headers.get_list("warning") == ['299 - "unknown field \\"spec.containers[0].imagee\\""']
    assert "imagee" not in r.json()["spec"]["containers"][0]
    body["metadata"]["name"] = "u2"
    r = api.post(base, json=body, params={"fieldValidation": "Ignore"})
    assert r.status_code == 201 and "warning" not in r.headers
    r = api.post(base, json=body, params={"fieldValidation": "Loud"})
    assert_status(r, 400, "BadRequest")


def test_duplicate_fields_are_rejected_when_strict(api: httpx.Client, namespace: str) -> None:
    raw = b'{"apiVersion":"v1","kind":"Pod","metadata":{"name":"d","name":"e"},' \
          b'"spec":{"containers":[{"name":"c","image":"x"}]}}'
    r = api.post(f"/api/v1/namespaces/{namespace}/pods", content=raw, params={"fieldValidation": "Strict"},
                 headers={"Content-Type": "application/json"})
    body = assert_status(r, 400, "BadRequest")
    assert body["message"] == 'strict decoding error: duplicate field "name"'


@pytest.mark.parametrize("params", [{"fieldValidation": "Warn"}, {}], ids=["warn", "default"])
def test_duplicate_fields_are_a_warning_and_the_last_value_is_kept(api: httpx.Client, namespace: str,
                                                                   params: dict[str, str]) -> None:
    """As kube-apiserver: under Warn (the default) a duplicate field is a warning, the request goes on."""
    raw = b'{"apiVersion":"v1","kind":"Pod","metadata":{"name":"d","name":"kept"},' \
          b'"spec":{"containers":[{"name":"c","image":"x","image":"y"}]}}'
    r = api.post(f"/api/v1/namespaces/{namespace}/pods", content=raw, params=params,
                 headers={"Content-Type": "application/json"})
    assert r.status_code == 201, r.text
    assert r.headers.get_list("warning") == ['299 - "duplicate field \\"name\\""',
                                             '299 - "duplicate field \\"image\\""']
    assert r.json()["metadata"]["name"] == "kept" and r.json()["spec"]["containers"][0]["image"] == "y"
    patched = api.patch(f"/api/v1/namespaces/{namespace}/pods/kept", params=params,
                        content=b'{"metadata":{"labels":{"a":"1","a":"2"}}}',
                        headers={"Content-Type": "application/merge-patch+json"})
    assert patched.status_code == 200, patched.text
    assert patched.headers.get_list("warning") == ['299 - "duplicate field \\"a\\""']
    assert patched.json()["metadata"]["labels"] == {"a": "2"}


def test_invalid_object_is_422_with_causes(api: httpx.Client, namespace: str) -> None:
    body = pod("Bad_Name")
    body["spec"]["containers"] = []
    r = api.post(f"/api/v1/namespaces/{namespace}/pods", json=body)
    status = assert_status(r, 422, "Invalid")
    assert status["message"].startswith('Pod "Bad_Name" is invalid: [')
    fields = {c["field"] for c in status["details"]["causes"]}
    assert {"metadata.name", "spec.containers"} <= fields
    assert status["details"]["kind"] == "Pod" and status["details"]["name"] == "Bad_Name"


def test_healthz_livez_readyz_version(api: httpx.Client) -> None:
    for path in ("/healthz", "/livez", "/readyz"):
        r = api.get(path)
        assert r.status_code == 200 and r.text == "ok"
    verbose = api.get("/readyz", params={"verbose": ""}).text
    assert "[+]etcd ok" in verbose
