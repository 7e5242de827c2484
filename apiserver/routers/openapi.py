"""Serves the OpenAPI documents: ``/openapi/v3`` (index and one document per group-version) and ``/openapi/v2``.

The documents themselves are built by :mod:`apiserver.openapi` (v3) and
:mod:`apiserver.openapiv2` (v2, from the v3 ones); this router only speaks HTTP
the way kube-openapi's handlers do: the v3 index points at each document with
``?hash=<sha512>``; a request carrying the current hash gets ``Cache-Control:
public, immutable`` (clients keep it forever), a stale hash a 301 to the
current one, and an ``If-None-Match`` on the ETag a 304. The v2 document is
JSON or protobuf by the Accept header, and gzipped for clients that take it.

Handlers only read immutable, per-process caches, so they may run concurrently.
They are plain functions, which FastAPI runs in its thread pool: the first
request builds the documents (most of a second for ``api/v1``), and that must
not stall the event loop that serves watches.
"""

from __future__ import annotations

import datetime
import gzip
from email.utils import format_datetime, parsedate_to_datetime
from typing import Final

from fastapi import APIRouter, Request, Response
from fastapi.responses import RedirectResponse

from apiserver import errors, openapi, openapiv2
from apiserver.negotiation import negotiate
from apiserver.registry.registry import Registry

router = APIRouter(tags=["openapi"])

# kubectl reads the v2 document as protobuf only (asking with the older "@" spelling).
_V2_PROTOBUF: Final = "com.github.proto-openapi.spec.v2.v1.0+protobuf"
_V2_PROTOBUF_DEPRECATED: Final = "com.github.proto-openapi.spec.v2@v1.0+protobuf"
# A document fetched by its hash never changes; kube-openapi lets clients keep it for a year.
_IMMUTABLE_FOR: Final = datetime.timedelta(days=365)


def _etag_matches(if_none_match: str | None, etag: str) -> bool:
    """Whether an If-None-Match header names ``etag`` (weakly, as HTTP compares for GET)."""
    if not if_none_match:
        return False
    candidates = [c.strip().removeprefix("W/") for c in if_none_match.split(",")]
    return "*" in candidates or etag in candidates


def _serve(request: Request, document: openapi.Document, *, immutable: bool = False) -> Response:
    headers = {"ETag": f'"{document.hash}"', "Vary": "Accept"}
    if immutable:
        expires = datetime.datetime.now(datetime.UTC) + _IMMUTABLE_FOR
        headers["Cache-Control"] = "public, immutable"
        headers["Expires"] = format_datetime(expires, usegmt=True)
    if _etag_matches(request.headers.get("if-none-match"), headers["ETag"]):
        return Response(status_code=304, headers=headers)
    return Response(document.body, media_type="application/json", headers=headers)


def _registry(request: Request) -> Registry:
    registry: Registry = request.app.state.server.registry
    return registry


@router.get("/openapi/v3")
def get_openapi_v3_index(request: Request) -> Response:
    return _serve(request, openapi.index(_registry(request)))


@router.get("/openapi/v3/{path:path}")
def get_openapi_v3_document(path: str, request: Request) -> Response:
    document = openapi.document(_registry(request), path)
    if document is None:
        raise errors.path_not_found()
    # kubesim writes the documents as JSON only; kube-openapi can also write protobuf.
    if negotiate(request.headers.get("accept"), subtypes=("json",), conversions=()) is None:
        raise errors.not_acceptable(["application/json"])
    wanted = request.query_params.get("hash")
    if wanted and wanted != document.hash:
        return RedirectResponse(f"/openapi/v3/{path}?hash={document.hash}", status_code=301)
    return _serve(request, document, immutable=bool(wanted))


@router.get("/openapi/v2")
def get_openapi_v2(request: Request) -> Response:
    """The Swagger 2.0 document of the whole API, in JSON or in gnostic's protobuf, as kube-openapi serves it.

    kubectl asks for protobuf (``...spec.v2@v1.0+protobuf`` from every
    version 1.27 to 1.33) and reads nothing else; ``*/*`` or no Accept header
    gets JSON. Both forms share one ETag (the JSON's hash, with ``Vary:
    Accept``); ``If-None-Match`` and ``If-Modified-Since`` answer 304, and a
    client that accepts gzip gets the body gzipped, as kube-openapi's handler
    does.
    """
    negotiated = negotiate(request.headers.get("accept"),
                           subtypes=("json", _V2_PROTOBUF_DEPRECATED, _V2_PROTOBUF), conversions=())
    if negotiated is None:
        raise errors.not_acceptable(["application/json", f"application/{_V2_PROTOBUF}"])
    registry = _registry(request)
    swagger = openapiv2.document(registry)
    headers = {"ETag": f'"{swagger.document.hash}"', "Vary": "Accept, Accept-Encoding",
               "Last-Modified": format_datetime(swagger.built, usegmt=True)}
    if_none_match = request.headers.get("if-none-match")
    if _etag_matches(if_none_match, headers["ETag"]) or (
            not if_none_match and _not_modified_since(request.headers.get("if-modified-since"), swagger.built)):
        # Go's ServeContent leaves Last-Modified out of a 304 that has an ETag.
        del headers["Last-Modified"]
        return Response(status_code=304, headers=headers)
    if negotiated.subtype == "json":
        body, media_type = swagger.document.body, "application/json"
    else:
        body, media_type = openapiv2.protobuf(registry, swagger), f"application/{_V2_PROTOBUF}"
    if _accepts_gzip(request.headers.get("accept-encoding")):
        body = registry.memo(("openapi-v2-gzip", media_type, swagger.document.hash), lambda: gzip.compress(body, 6))
        headers["Content-Encoding"] = "gzip"
    return Response(body, media_type=media_type, headers=headers)


def _not_modified_since(header: str | None, built: datetime.datetime) -> bool:
    """Whether If-Modified-Since is at or after ``built`` (an unreadable date is ignored, as Go ignores it)."""
    if not header:
        return False
    try:
        since = parsedate_to_datetime(header)
    except (TypeError, ValueError):
        return False
    return since.tzinfo is not None and built <= since


def _accepts_gzip(header: str | None) -> bool:
    """Whether Accept-Encoding allows gzip (``gzip`` or ``*`` without ``q=0``), as gziphandler reads it."""
    for clause in (header or "").split(","):
        coding, _, params = clause.strip().partition(";")
        if coding.strip().lower() not in ("gzip", "*"):
            continue
        q = params.strip().removeprefix("q=") if params.strip().startswith("q=") else "1"
        try:
            return float(q) > 0
        except ValueError:
            return False
    return False
