"""``/healthz``, ``/livez`` and ``/readyz``, in kube-apiserver's plain-text form, and ``/metrics``.

``/livez`` only says the process serves. ``/healthz`` and ``/readyz`` also
check etcd (probed every second in the background, so these endpoints never
wait on etcd) and that the default RBAC roles exist (``poststarthook/rbac/bootstrap-roles``),
and, for ``/readyz``, that every watch cache has its initial list.
``?verbose`` lists each check as kube-apiserver does (``[+]etcd ok``).
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import PlainTextResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from apiserver.server import APIServer

router = APIRouter()


def _report(request: Request, checks: list[tuple[str, bool]]) -> PlainTextResponse:
    ok = all(passed for _, passed in checks)
    if "verbose" in request.query_params:
        lines = [f"[{'+' if passed else '-'}]{name} {'ok' if passed else 'failed: reason withheld'}"
                 for name, passed in checks]
        lines.append(f"{request.url.path[1:]} check {'passed' if ok else 'failed'}")
        body = "\n".join(lines) + "\n"
    else:
        body = "ok" if ok else "\n".join(f"[-]{n} failed: reason withheld" for n, p in checks if not p) + \
            f"\n{request.url.path[1:]} check failed\n"
    return PlainTextResponse(body, status_code=200 if ok else 500)


@router.get("/livez", include_in_schema=False)
async def livez(request: Request) -> PlainTextResponse:
    return _report(request, [("ping", True)])


@router.get("/healthz", include_in_schema=False)
async def healthz(request: Request) -> PlainTextResponse:
    server: APIServer = request.app.state.server
    return _report(request, [("ping", True), ("etcd", server.etcd_ok),
                             ("poststarthook/rbac/bootstrap-roles", server.rbac_bootstrapped.is_set())])


@router.get("/readyz", include_in_schema=False)
async def readyz(request: Request) -> PlainTextResponse:
    server: APIServer = request.app.state.server
    caches = all(c.ready.is_set() for c in server.caches.values())
    return _report(request, [("ping", True), ("etcd", server.etcd_ok), ("informer-sync", caches),
                             ("poststarthook/rbac/bootstrap-roles", server.rbac_bootstrapped.is_set()),
                             ("shutdown", not server.stopping.is_set())])


@router.get("/metrics", include_in_schema=False)
async def metrics() -> Response:
    """The Prometheus exposition of the process's metrics (``apiserver/metrics.py``), as kube-apiserver serves."""
    return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)
