"""Serves the OpenAPI documents: ``/openapi/v3`` (index and one document per group-version) and ``/openapi/v2``.

The documents themselves are built by :mod:`apiserver.openapi`; this router
only speaks HTTP the way kube-openapi's handler does: the index points at each
document with ``?hash=<sha512>``; a request carrying the current hash gets
``Cache-Control: public, immutable`` (clients keep it forever), a stale hash a
301 to the current one, and an ``If-None-Match`` on the ETag a 304.

Handlers only read immutable, per-process caches, so they may run concurrently.
They are plain functions, which FastAPI runs in its thread pool: the first
request builds the documents (most of a second for ``api/v1``), and that must
not stall the event loop that serves watches.
"""

from __future__ import annotations

import datetime
from email.utils import format_datetime
from typing import Final

from fastapi import APIRouter, Request, Response
from fastapi.responses import RedirectResponse

from apiserver import errors, openapi
from apiserver.tables import negotiate

router = APIRouter(tags=["openapi"])

# kubectl 1.27 and 1.28 read the v2 document as protobuf (asking with the older "@" spelling).
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


@router.get("/openapi/v3")
def get_openapi_v3_index(request: Request) -> Response:
    return _serve(request, openapi.index())


@router.get("/openapi/v3/{path:path}")
def get_openapi_v3_document(path: str, request: Request) -> Response:
    document = openapi.documents().get(path)
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
async def get_openapi_v2(request: Request) -> Response:
    """An empty OpenAPI v2 document, in protobuf: an empty message is a valid, empty ``Document``.

    kubectl 1.27 and 1.28 fetch it on every ``explain``, ``create`` and
    ``apply``; finding no definitions there they use the v3 documents, and
    since those declare ``fieldValidation`` they let the server validate.
    kube-apiserver also serves the v2 document as JSON; kubesim does not.
    """
    if negotiate(request.headers.get("accept"), subtypes=(_V2_PROTOBUF, _V2_PROTOBUF_DEPRECATED),
                 conversions=()) is None:
        raise errors.not_acceptable([f"application/{_V2_PROTOBUF}"])
    return Response(b"", media_type=f"application/{_V2_PROTOBUF}", headers={"Vary": "Accept"})
