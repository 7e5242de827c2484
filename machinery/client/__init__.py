"""kubesim's client-go: the typed async client every component uses to talk to the APIServer.

The public surface, in one import::

    from machinery.client import Client, config_from_flags, NotFound, Conflict, retry_on_conflict

- :class:`Client` (``get``, ``list``, ``watch``, ``create``, ``update``,
  ``update_status``, ``patch``, ``delete``, ``bind``), :class:`PatchType`;
- connection settings: :class:`ClientConfig`, :func:`config_from_flags`,
  :func:`load_kubeconfig`;
- errors typed by Status reason (:class:`ApiError` and its subclasses), plus
  :data:`TransportError` for a server that cannot be reached;
- watch values: :class:`WatchEvent`, :class:`Bookmark`; lists: :class:`ObjectList`;
- :func:`retry_on_conflict`.
"""

from __future__ import annotations

import httpx

from machinery.client.config import ClientConfig, ConfigError, config_from_flags, load_kubeconfig
from machinery.client.errors import (
    AlreadyExists,
    ApiError,
    BadRequest,
    Conflict,
    Expired,
    Forbidden,
    Gone,
    InternalError,
    Invalid,
    MethodNotAllowed,
    NotAcceptable,
    NotFound,
    RequestEntityTooLarge,
    ServerTimeout,
    ServiceUnavailable,
    Timeout,
    TooManyRequests,
    Unauthorized,
    UnexpectedResponse,
    UnsupportedMediaType,
)
from machinery.client.objects import ObjectList, TypedResource, key_of, meta_of
from machinery.client.rest import Body, Client, PatchType, PropagationPolicy
from machinery.client.retry import retry_on_conflict
from machinery.client.watch import Bookmark, EventType, WatchEvent

#: The server could not be reached, or the connection broke (httpx's own exception).
TransportError = httpx.TransportError

__all__ = [
    "AlreadyExists", "ApiError", "BadRequest", "Body", "Bookmark", "Client", "ClientConfig", "ConfigError",
    "Conflict", "EventType", "Expired", "Forbidden", "Gone", "InternalError", "Invalid", "MethodNotAllowed",
    "NotAcceptable", "NotFound", "ObjectList", "PatchType", "PropagationPolicy", "RequestEntityTooLarge",
    "ServerTimeout", "ServiceUnavailable", "Timeout", "TooManyRequests", "TransportError", "TypedResource",
    "Unauthorized", "UnexpectedResponse", "UnsupportedMediaType", "WatchEvent", "config_from_flags",
    "key_of", "load_kubeconfig", "meta_of", "retry_on_conflict",
]
