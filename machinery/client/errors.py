"""API errors as exceptions typed by the Status ``reason``, as apimachinery's ``StatusError``.

Every non-2xx answer from the APIServer carries a ``metav1.Status``; callers
branch on its reason ("is it NotFound? a Conflict?"), so each reason gets its
own exception class and ``except NotFound:`` reads like client-go's
``apierrors.IsNotFound(err)``. As there, a Status whose reason kubesim does not
know is classified by its HTTP code, and an answer that is not a Status at all
gets the generic message client-go would give for that code.

Connection failures are not API errors: they surface as
:class:`httpx.TransportError` (re-exported as ``machinery.client.TransportError``).

Pure data; no state.
"""

from __future__ import annotations

from typing import Any, ClassVar

import orjson
from kubernetes.client import V1Status, V1StatusDetails
from pydantic import ValidationError


class UnexpectedResponse(Exception):
    """The server answered with something that is neither the expected object nor a Status."""


class ApiError(Exception):
    """A request the APIServer refused; ``status`` is its ``metav1.Status``."""

    #: The Status reason this class stands for ("" for an unknown reason).
    reason: ClassVar[str] = ""

    def __init__(self, status: V1Status) -> None:
        super().__init__(status.message or f"the server responded with the status code {status.code}")
        self.status = status

    @property
    def code(self) -> int:
        return self.status.code or 0

    @property
    def retry_after_seconds(self) -> int | None:
        details = self.status.details
        return details.retry_after_seconds if details is not None else None

    def has_cause(self, cause_type: str) -> bool:
        """Whether ``details.causes`` holds a cause of this type (apimachinery's ``HasStatusCause``)."""
        details = self.status.details
        return any(c.reason == cause_type for c in (details.causes or ())) if details else False


class BadRequest(ApiError):
    reason = "BadRequest"


class Unauthorized(ApiError):
    reason = "Unauthorized"


class Forbidden(ApiError):
    reason = "Forbidden"


class NotFound(ApiError):
    reason = "NotFound"


class MethodNotAllowed(ApiError):
    reason = "MethodNotAllowed"


class NotAcceptable(ApiError):
    reason = "NotAcceptable"


class AlreadyExists(ApiError):
    reason = "AlreadyExists"


class Conflict(ApiError):
    reason = "Conflict"


class Gone(ApiError):
    """410. :class:`Expired` derives from it, so ``except Gone`` catches both kinds of 410."""

    reason = "Gone"


class Expired(Gone):
    """The resourceVersion asked for has been compacted away: relist."""

    reason = "Expired"


class RequestEntityTooLarge(ApiError):
    reason = "RequestEntityTooLarge"


class UnsupportedMediaType(ApiError):
    reason = "UnsupportedMediaType"


class Invalid(ApiError):
    reason = "Invalid"


class TooManyRequests(ApiError):
    reason = "TooManyRequests"


class InternalError(ApiError):
    reason = "InternalError"


class ServerTimeout(ApiError):
    reason = "ServerTimeout"


class ServiceUnavailable(ApiError):
    reason = "ServiceUnavailable"


class Timeout(ApiError):
    reason = "Timeout"


_ERRORS: tuple[type[ApiError], ...] = (
    BadRequest, Unauthorized, Forbidden, NotFound, MethodNotAllowed, NotAcceptable, AlreadyExists,
    Conflict, Gone, Expired, RequestEntityTooLarge, UnsupportedMediaType, Invalid, TooManyRequests,
    InternalError, ServerTimeout, ServiceUnavailable, Timeout,
)
_BY_REASON: dict[str, type[ApiError]] = {cls.reason: cls for cls in _ERRORS}
#: Reasons apimachinery knows without kubesim having a class for them; they are never reclassified by code.
_OTHER_KNOWN_REASONS = frozenset({"StoreReadError"})
_BY_CODE: dict[int, type[ApiError]] = {
    400: BadRequest, 401: Unauthorized, 403: Forbidden, 404: NotFound, 405: MethodNotAllowed,
    406: NotAcceptable, 409: Conflict, 410: Gone, 413: RequestEntityTooLarge,
    415: UnsupportedMediaType, 422: Invalid, 429: TooManyRequests, 500: InternalError,
    503: ServiceUnavailable, 504: Timeout,
}

#: client-go's messages for an error answer that carries no Status (``NewGenericServerResponse``).
_GENERIC: dict[int, tuple[str, str | None]] = {
    400: ("BadRequest", "the server rejected our request for an unknown reason"),
    401: ("Unauthorized", "the server has asked for the client to provide credentials"),
    403: ("Forbidden", None),
    404: ("NotFound", "the server could not find the requested resource"),
    405: ("MethodNotAllowed", "the server does not allow this method on the requested resource"),
    406: ("NotAcceptable", "the server was unable to respond with a content type that the client supports"),
    409: ("Conflict", "the server reported a conflict"),
    415: ("UnsupportedMediaType", None),
    422: ("Invalid", "the server rejected our request due to an error in our request"),
    429: ("TooManyRequests",
          "the server has received too many requests and has asked us to try again later"),
    503: ("ServiceUnavailable", "the server is currently unable to handle the request"),
    504: ("Timeout", ("the server was unable to return a response in the time allotted, "
                      "but may still be processing the request")),
}


def error_from_status(status: V1Status) -> ApiError:
    """The exception for a Status: by reason, or by code when the reason is unknown."""
    reason = status.reason or ""
    cls = _BY_REASON.get(reason)
    if cls is None:
        cls = ApiError if reason in _OTHER_KNOWN_REASONS else _BY_CODE.get(status.code or 0, ApiError)
    return cls(status)


def error_from_response(code: int, body: bytes, *, method: str, group_resource: str = "",
                        name: str = "", retry_after: int | None = None) -> ApiError:
    """The exception for an error answer: its Status if it sent one, else client-go's generic one."""
    status = _status_from_body(body)
    if status is not None:
        return error_from_status(status)
    server_message = body.decode("utf-8", "replace").strip()
    reason, message = _GENERIC.get(code, ("", None))
    if code == 409 and method == "POST":
        reason = "AlreadyExists"
    if message is None:
        message = server_message
    if not reason:
        if code >= 500:
            reason = "InternalError"
            message = f'an error on the server ("{server_message}") has prevented the request from succeeding'
        else:
            message = f"the server responded with the status code {code} but did not return more information"
    if group_resource:
        message += f" ({method.lower()} {group_resource}{' ' + name if name else ''})"
    details = V1StatusDetails(kind=group_resource.partition(".")[0] or None,
                              group=group_resource.partition(".")[2] or None, name=name or None,
                              retry_after_seconds=retry_after)
    return error_from_status(V1Status(kind="Status", api_version="v1", status="Failure", code=code,
                                      reason=reason or None, message=message, details=details))


def _status_from_body(body: bytes) -> V1Status | None:
    try:
        data: Any = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(data, dict) or data.get("kind") != "Status":
        return None
    try:
        return V1Status.model_validate(_known_fields(data))
    except ValidationError:
        return None


def _known_fields(data: dict[str, Any]) -> dict[str, Any]:
    """A Status with only the fields the model knows (a newer server may send more)."""
    return {k: v for k, v in data.items() if k in _STATUS_KEYS}


_STATUS_KEYS = frozenset({"apiVersion", "kind", "metadata", "status", "message", "reason", "details", "code"})
