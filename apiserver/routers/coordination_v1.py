"""The ``coordination.k8s.io/v1`` group: Leases, for node heartbeats and leader election."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from apiserver import rest

router = APIRouter()

_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]


@router.api_route("/apis/coordination.k8s.io/v1/{path:path}", methods=_METHODS, include_in_schema=False)
async def coordination_v1(request: Request, path: str) -> Response:
    return await rest.dispatch(request, "coordination.k8s.io", "v1", path)
