"""Status -> exception mapping, as apimachinery's errors package classifies them."""

from __future__ import annotations

import orjson
import pytest
from kubernetes.client import V1Status

from machinery.client import errors as e


def status(code: int, reason: str | None, message: str = "m", **details: object) -> V1Status:
    return V1Status.model_validate({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code,
                                    "reason": reason, "message": message, "details": details or None})


@pytest.mark.parametrize(("code", "reason", "cls"), [
    pytest.param(404, "NotFound", e.NotFound, id="not-found"),
    pytest.param(409, "AlreadyExists", e.AlreadyExists, id="already-exists"),
    pytest.param(409, "Conflict", e.Conflict, id="conflict"),
    pytest.param(422, "Invalid", e.Invalid, id="invalid"),
    pytest.param(410, "Expired", e.Expired, id="expired"),
    pytest.param(410, "Gone", e.Gone, id="gone"),
    pytest.param(403, "Forbidden", e.Forbidden, id="forbidden"),
    pytest.param(401, "Unauthorized", e.Unauthorized, id="unauthorized"),
    pytest.param(400, "BadRequest", e.BadRequest, id="bad-request"),
    pytest.param(405, "MethodNotAllowed", e.MethodNotAllowed, id="method-not-allowed"),
    pytest.param(500, "ServerTimeout", e.ServerTimeout, id="server-timeout"),
    pytest.param(504, "Timeout", e.Timeout, id="timeout"),
    pytest.param(429, "TooManyRequests", e.TooManyRequests, id="too-many-requests"),
    pytest.param(500, "InternalError", e.InternalError, id="internal-error"),
    pytest.param(503, "ServiceUnavailable", e.ServiceUnavailable, id="service-unavailable"),
    pytest.param(413, "RequestEntityTooLarge", e.RequestEntityTooLarge, id="too-large"),
    pytest.param(415, "UnsupportedMediaType", e.UnsupportedMediaType, id="unsupported-media"),
    pytest.param(404, None, e.NotFound, id="unknown-reason-falls-back-to-code-404"),
    pytest.param(409, "SomethingNew", e.Conflict, id="unknown-reason-falls-back-to-code-409"),
    pytest.param(500, "StoreReadError", e.ApiError, id="known-reason-without-class-is-not-reclassified"),
    pytest.param(418, None, e.ApiError, id="unknown-code"),
])
def test_error_from_status(code: int, reason: str | None, cls: type[e.ApiError]) -> None:
    err = e.error_from_status(status(code, reason, "the message"))
    assert type(err) is cls
    assert err.code == code
    assert str(err) == "the message"
    assert err.status.reason == reason


def test_expired_is_caught_as_gone_but_conflict_is_not_already_exists() -> None:
    assert isinstance(e.error_from_status(status(410, "Expired")), e.Gone)
    assert not isinstance(e.error_from_status(status(409, "Conflict")), e.AlreadyExists)
    assert not isinstance(e.error_from_status(status(409, "AlreadyExists")), e.Conflict)


def test_error_from_response_uses_the_status_body() -> None:
    body = orjson.dumps({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                         "message": 'pods "web" not found', "reason": "NotFound",
                         "details": {"name": "web", "kind": "pods"}, "code": 404})
    err = e.error_from_response(404, body, method="GET", group_resource="pods", name="web")
    assert isinstance(err, e.NotFound)
    assert str(err) == 'pods "web" not found'
    assert err.status.details is not None and err.status.details.name == "web"


def test_error_from_response_tolerates_unknown_status_fields() -> None:
    body = orjson.dumps({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Conflict",
                         "message": "conflict", "code": 409, "someNewField": 1})
    assert isinstance(e.error_from_response(409, body, method="PUT"), e.Conflict)


@pytest.mark.parametrize(("code", "method", "body", "cls", "message"), [
    pytest.param(404, "GET", b"404 page not found", e.NotFound,
                 "the server could not find the requested resource (get pods web)", id="plain-404"),
    pytest.param(409, "POST", b"", e.AlreadyExists, "the server reported a conflict (post pods web)",
                 id="post-409-is-already-exists"),
    pytest.param(409, "PUT", b"", e.Conflict, "the server reported a conflict (put pods web)",
                 id="put-409-is-conflict"),
    pytest.param(403, "GET", b"forbidden: user x", e.Forbidden, "forbidden: user x (get pods web)",
                 id="forbidden-keeps-server-message"),
    pytest.param(502, "GET", b"bad gateway", e.InternalError,
                 'an error on the server ("bad gateway") has prevented the request from succeeding (get pods web)',
                 id="5xx-is-internal-error"),
    pytest.param(418, "GET", b"teapot", e.ApiError,
                 "the server responded with the status code 418 but did not return more information "
                 "(get pods web)", id="unknown-4xx"),
])
def test_error_from_response_without_a_status(code: int, method: str, body: bytes, cls: type[e.ApiError],
                                              message: str) -> None:
    err = e.error_from_response(code, body, method=method, group_resource="pods", name="web")
    assert type(err) is cls
    assert str(err) == message
    assert err.code == code


def test_retry_after_and_causes() -> None:
    err = e.error_from_status(status(504, "Timeout", retryAfterSeconds=3,
                                     causes=[{"reason": "ResourceVersionTooLarge", "message": "x"}]))
    assert err.retry_after_seconds == 3
    assert err.has_cause("ResourceVersionTooLarge")
    assert not err.has_cause("FieldValueInvalid")
    assert e.error_from_response(429, b"slow down", method="GET", retry_after=7).retry_after_seconds == 7
