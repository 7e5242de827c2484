"""The core group (``/api/v1``): every path below it goes through the generic REST dispatcher."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from apiserver import rest

router = APIRouter()

_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]


@router.api_route("/api/v1/{path:path}", methods=_METHODS, include_in_schema=False)
async def core_v1(request: Request, path: str) -> Response:
    return await rest.dispatch(request, "", "v1", path)
