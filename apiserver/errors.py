"""Kubernetes ``Status`` errors: the only error shape the APIServer ever sends.

Handlers raise :class:`APIError`; the app's exception handlers turn it (and
anything unexpected) into a ``meta/v1`` Status body with the matching HTTP
code, so kubectl prints ``Error from server (NotFound): pods "x" not found``
and no FastAPI ``{"detail": ...}`` body can reach a client.

The constructors below word their messages as kube-apiserver does
(``k8s.io/apimachinery/pkg/api/errors``), because clients and users match on
them.
"""

from __future__ import annotations

from typing import Any

import orjson
from starlette.responses import Response

from machinery.api.kinds import ResourceInfo


class APIError(Exception):
    """An error answered as a Status with ``code`` and ``reason``."""

    def __init__(self, code: int, reason: str, message: str, details: dict[str, Any] | None = None,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.headers = headers

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details is not None:
            body["details"] = self.details
        return body


def status_response(err: APIError) -> Response:
    """The HTTP answer of an error: its Status body, code and headers."""
    resp = Response(orjson.dumps(err.status()), status_code=err.code, media_type="application/json")
    for k, v in (err.headers or {}).items():
        resp.headers[k] = v
    return resp


def success_status(*, code: int = 200, details: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                            "code": code}
    if details is not None:
        body["details"] = details
    return body


def _details(ri: ResourceInfo[Any] | None, name: str | None, **extra: Any) -> dict[str, Any]:
    details: dict[str, Any] = {}
    if name:
        details["name"] = name
    if ri is not None:
        if ri.group:
            details["group"] = ri.group
        details["kind"] = ri.plural
    details.update(extra)
    return details


def _qualified(ri: ResourceInfo[Any]) -> str:
    return ri.group_resource


def not_found(ri: ResourceInfo[Any], name: str) -> APIError:
    return APIError(404, "NotFound", f'{_qualified(ri)} "{name}" not found', _details(ri, name))


def namespace_not_found(namespace: str) -> APIError:
    return APIError(404, "NotFound", f'namespaces "{namespace}" not found',
                    {"name": namespace, "kind": "namespaces"})


def already_exists(ri: ResourceInfo[Any], name: str) -> APIError:
    return APIError(409, "AlreadyExists", f'{_qualified(ri)} "{name}" already exists', _details(ri, name))


def conflict(ri: ResourceInfo[Any], name: str, why: str) -> APIError:
    return APIError(409, "Conflict", f'Operation cannot be fulfilled on {_qualified(ri)} "{name}": {why}',
                    _details(ri, name))


OBJECT_MODIFIED = "the object has been modified; please apply your changes to the latest version and try again"


def stale(ri: ResourceInfo[Any], name: str) -> APIError:
    return conflict(ri, name, OBJECT_MODIFIED)


def invalid(ri: ResourceInfo[Any], name: str, message: str, causes: list[dict[str, Any]]) -> APIError:
    details: dict[str, Any] = {"name": name, "kind": ri.kind, "causes": causes}
    if ri.group:
        details["group"] = ri.group
    return APIError(422, "Invalid", message, details)


def bad_request(message: str) -> APIError:
    return APIError(400, "BadRequest", message)


def forbidden(ri: ResourceInfo[Any], name: str, why: str) -> APIError:
    return APIError(403, "Forbidden", f'{_qualified(ri)} "{name}" is forbidden: {why}', _details(ri, name))


def namespace_terminating(ri: ResourceInfo[Any], name: str, namespace: str) -> APIError:
    err = forbidden(ri, name, f"unable to create new content in namespace {namespace} "
                              "because it is being terminated")
    err.details = {**(err.details or {}), "causes": [{
        "reason": "NamespaceTerminating",
        "message": f"namespace {namespace} is being terminated",
        "field": "metadata.namespace",
    }]}
    return err


def method_not_allowed() -> APIError:
    return APIError(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")


def path_not_found() -> APIError:
    return APIError(404, "NotFound", "the server could not find the requested resource", {})


def unsupported_media_type(content_type: str, accepted: list[str]) -> APIError:
    return APIError(415, "UnsupportedMediaType",
                    f"the body of the request was in an unknown format - accepted media types include: "
                    f"{', '.join(accepted)}", {"causes": [{"message": content_type}]} if content_type else None)


def not_acceptable(accepted: list[str]) -> APIError:
    return APIError(406, "NotAcceptable",
                    f"only the following media types are accepted: {', '.join(accepted)}")


def too_large(limit: int) -> APIError:
    return APIError(413, "RequestEntityTooLarge", f"Request entity too large: limit is {limit}")


def expired(message: str) -> APIError:
    return APIError(410, "Expired", message)


def too_old_resource_version(requested: int, oldest: int) -> APIError:
    return expired(f"too old resource version: {requested} ({oldest})")


def gone(message: str) -> APIError:
    return APIError(410, "Gone", message)


def service_unavailable(message: str) -> APIError:
    return APIError(503, "ServiceUnavailable", message, headers={"Retry-After": "1"})


def timeout(message: str, retry_after: int = 1) -> APIError:
    return APIError(504, "Timeout", message, {"retryAfterSeconds": retry_after},
                    headers={"Retry-After": str(retry_after)})


def too_large_resource_version(requested: int, current: int) -> APIError:
    return APIError(504, "Timeout",
                    f"Too large resource version: {requested}, current: {current}",
                    {"causes": [{"reason": "ResourceVersionTooLarge",
                                 "message": "Too large resource version"}],
                     "retryAfterSeconds": 1},
                    headers={"Retry-After": "1"})


def internal_error(message: str) -> APIError:
    return APIError(500, "InternalError", f"Internal error occurred: {message}",
                    {"causes": [{"message": message}]})
