"""The UI server: the page, its live feed, and the API requests the page makes, passed to the APIServer.

A FastAPI app in its own process (``python -m kubesim.ui``, started by
``kubesim up``), a client of the APIServer like every other component:

- ``/`` and ``/static/`` serve the page, built in the package (no build step);
- ``/ui/events`` streams the cluster view (server-sent events from
  :class:`~kubesim.ui.feed.Feed`): a snapshot of every Node and Pod summary,
  then what changed, four times a second, and the connection status;
- ``/k8s/api/...`` and ``/k8s/apis/...`` pass the page's API requests to the
  APIServer unchanged (method, query, body, Accept and Content-Type), with the
  UI's credentials: the page reads any object, lists any kind (as a server-side
  Table), and acts (create, scale, delete, cordon, taint) exactly as kubectl
  does, through the API; nothing else is reachable through it;
- ``/ui/pods/NS/NAME`` answers the 13 steps of one Pod (``kubesim trace``) and
  the scheduler's decision (the ``kubesim.io/*`` annotations, parsed);
- ``/ui/apply`` creates the objects of a YAML document, as ``kubectl create -f -``;
- ``/ui/nodes/NAME/stop|start`` is ``kubesim node stop|start``.

Concurrency: one event loop; the feed's tasks run beside the requests; the
trace, which reads the API synchronously, runs in the thread pool.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import asdict
from importlib import resources
from typing import Any, Final
from urllib.parse import quote

import httpx
import orjson
import yaml
from fastapi import FastAPI, Request
from fastapi.responses import FileResponse, JSONResponse, Response, StreamingResponse
from fastapi.staticfiles import StaticFiles

from kubesim import trace
from kubesim.ui.feed import Feed
from machinery.client.config import ClientConfig

#: The page's version: the README's screenshots record the version they were taken of.
UI_VERSION: Final = "1"
_STATIC = resources.files("kubesim.ui") / "static"
_PASSED_HEADERS: Final = ("accept", "content-type")
_ANNOTATIONS: Final = {"filter": "kubesim.io/filter-result", "score": "kubesim.io/score-result"}


def http_client(config: ClientConfig, **kwargs: Any) -> httpx.AsyncClient:
    """An httpx client of the APIServer with the kubeconfig's credentials (CA, client certificate or token)."""
    options = config.httpx_options()
    headers = {"User-Agent": "kubesim-ui", **options["headers"]}
    return httpx.AsyncClient(base_url=options["base_url"], verify=options["verify"], headers=headers, **kwargs)


def create_app(config: ClientConfig, *, scheduler_url: str | None = None) -> FastAPI:
    http = http_client(config, timeout=httpx.Timeout(30.0, read=None),
                       limits=httpx.Limits(max_connections=200, max_keepalive_connections=20))
    feed = Feed(http, scheduler_url=scheduler_url)
    tasks: list[asyncio.Task[None]] = []

    @contextlib.asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        tasks.append(asyncio.create_task(feed.run(), name="ui-feed"))
        try:
            yield
        finally:
            feed.close()
            for task in tasks:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
            await http.aclose()

    app = FastAPI(title="kubesim ui", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)
    app.state.feed = feed
    app.mount("/static", StaticFiles(directory=str(_STATIC)), name="static")

    @app.get("/", include_in_schema=False)
    async def index() -> FileResponse:
        return FileResponse(str(_STATIC / "index.html"), headers={"Cache-Control": "no-cache"})

    @app.get("/readyz", include_in_schema=False)
    async def readyz() -> Response:
        ok = feed.synced >= {"nodes", "pods"}
        return Response("ok" if ok else "not synced", status_code=200 if ok else 503)

    @app.get("/ui/info")
    async def info() -> JSONResponse:
        version: dict[str, Any] = {}
        with contextlib.suppress(httpx.HTTPError, ValueError):
            version = (await http.get("/version", timeout=5.0)).json()
        return JSONResponse({"server": config.server, "uiVersion": UI_VERSION, "version": version,
                             "scheduler": bool(scheduler_url)})

    @app.get("/ui/events")
    async def events(request: Request) -> StreamingResponse:
        async def stream() -> AsyncIterator[bytes]:
            # A comment first, so that the browser's EventSource opens at once.
            yield b": kubesim\n\n"
            async for message in feed.subscribe():
                if await request.is_disconnected():
                    return
                yield b"event: " + message["type"].encode() + b"\ndata: " + orjson.dumps(message) + b"\n\n"
        return StreamingResponse(stream(), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})

    @app.api_route("/k8s/{path:path}", methods=["GET", "POST", "PUT", "PATCH", "DELETE"])
    async def proxy(path: str, request: Request) -> Response:
        if not (path.startswith(("api/", "apis/")) or path in ("api", "apis")):
            return JSONResponse({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 404,
                                 "reason": "NotFound", "message": "only /api and /apis are served here"},
                                status_code=404)
        headers = {k: v for k, v in request.headers.items() if k in _PASSED_HEADERS}
        body = await request.body()
        upstream = http.build_request(request.method, "/" + path, params=request.query_params, headers=headers,
                                      content=body or None)
        try:
            response = await http.send(upstream, stream=True)
        except httpx.HTTPError as err:
            return JSONResponse({"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 503,
                                 "reason": "ServiceUnavailable",
                                 "message": f"the APIServer cannot be reached: {err}"}, status_code=503)

        async def relay() -> AsyncIterator[bytes]:
            try:
                async for chunk in response.aiter_raw():
                    yield chunk
            except httpx.HTTPError:
                return
            finally:
                await response.aclose()
        passed = {k: v for k, v in response.headers.items() if k.lower() in ("content-type", "warning")}
        return StreamingResponse(relay(), status_code=response.status_code, headers=passed)

    @app.get("/ui/pods/{namespace}/{name}")
    def pod_details(namespace: str, name: str) -> JSONResponse:
        options = config.httpx_options()
        headers = {"User-Agent": "kubesim-ui", **options["headers"]}
        with httpx.Client(base_url=options["base_url"], verify=options["verify"], headers=headers,
                          timeout=httpx.Timeout(10.0, read=10.0)) as api:
            try:
                steps, title = trace.build(api, namespace, name)
            except LookupError as err:
                return JSONResponse({"message": str(err)}, status_code=404)
            pod = api.get(f"/api/v1/namespaces/{namespace}/pods/{name}").json()
        annotations = (pod.get("metadata") or {}).get("annotations") or {}
        decision: dict[str, Any] = {"selected": annotations.get("kubesim.io/selected-node")}
        for key, annotation in _ANNOTATIONS.items():
            with contextlib.suppress(ValueError, TypeError):
                decision[key] = orjson.loads(annotations.get(annotation) or "null")
        return JSONResponse({"title": title, "steps": [asdict(s) for s in steps], "decision": decision})

    @app.post("/ui/apply")
    async def apply(request: Request) -> JSONResponse:
        text = (await request.body()).decode("utf-8", "replace")
        namespace = request.query_params.get("namespace") or "default"
        return JSONResponse(await create_from_yaml(http, text, namespace))

    @app.post("/ui/nodes/{name}/{action}")
    async def node_action(name: str, action: str) -> JSONResponse:
        if action not in ("stop", "start"):
            return JSONResponse({"message": f"unknown action {action}: stop or start"}, status_code=400)
        # As `kubesim node` does: through the APIServer's nodes/proxy, to the kubelet hosting the node.
        answer = await http.post(f"/api/v1/nodes/{quote(name, safe='')}/proxy/{action}")
        if answer.status_code != 200:
            try:
                body = answer.json()
            except ValueError:
                body = None
            message = body.get("message") if isinstance(body, dict) and body.get("kind") == "Status" else None
            return JSONResponse({"message": message or f"the kubelet of node {name} answered "
                                                        f"{answer.status_code}: {answer.text.strip()}"},
                                status_code=answer.status_code)
        # What `kubesim node stop|start` prints.
        return JSONResponse({"message": f"node/{name} {'stopped' if action == 'stop' else 'started'}",
                             "command": f"kubesim node {action} {name}"})

    return app


async def create_from_yaml(http: httpx.AsyncClient, text: str, namespace: str) -> dict[str, Any]:
    """Create every object of a YAML document, as ``kubectl create -f -`` does, each through the API.

    Returns ``{"results": [{"object": "kind/name", "code": ..., "message": ...}], "command": ...}``;
    a document that does not parse is reported with the parser's message and nothing is created.
    """
    command = f"kubectl create -n {namespace} -f -"
    try:
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError as err:
        return {"command": command, "error": f"error parsing the YAML: {err}", "results": []}
    if not docs or not all(isinstance(d, dict) for d in docs):
        return {"command": command, "error": "the YAML holds no object (a mapping with apiVersion and kind)",
                "results": []}
    resources = await _resource_map(http)
    results = []
    for doc in docs:
        api_version, kind = str(doc.get("apiVersion") or ""), str(doc.get("kind") or "")
        name = str((doc.get("metadata") or {}).get("name") or (doc.get("metadata") or {}).get("generateName") or "")
        target = resources.get((api_version, kind))
        label = f"{kind.lower()}/{name}" if kind else name
        if target is None:
            results.append({"object": label, "code": 404, "message": f'no matches for kind "{kind}" in version '
                                                                     f'"{api_version}"'})
            continue
        plural, namespaced = target
        prefix = f"/apis/{api_version}" if "/" in api_version else f"/api/{api_version}"
        ns = (doc.get("metadata") or {}).get("namespace") or namespace
        path = f"{prefix}/namespaces/{ns}/{plural}" if namespaced else f"{prefix}/{plural}"
        response = await http.post(path, content=orjson.dumps(doc), headers={"Content-Type": "application/json"})
        body = response.json() if response.headers.get("content-type", "").startswith("application/json") else {}
        if response.status_code in (200, 201):
            created = (body.get("metadata") or {}).get("name") or name
            results.append({"object": f"{kind.lower()}/{created}", "code": response.status_code,
                            "message": f"{kind.lower()}/{created} created"})
        else:
            results.append({"object": label, "code": response.status_code,
                            "message": body.get("message") or response.text})
    return {"command": command, "results": results}


async def _resource_map(http: httpx.AsyncClient) -> dict[tuple[str, str], tuple[str, bool]]:
    """(apiVersion, kind) -> (plural, namespaced), from the APIServer's discovery."""
    out: dict[tuple[str, str], tuple[str, bool]] = {}
    versions = [("v1", "/api/v1")]
    groups = (await http.get("/apis")).json()
    for group in groups.get("groups") or ():
        for v in group.get("versions") or ():
            versions.append((v["groupVersion"], f"/apis/{v['groupVersion']}"))
    for api_version, path in versions:
        with contextlib.suppress(httpx.HTTPError, ValueError):
            listing = (await http.get(path)).json()
            for r in listing.get("resources") or ():
                if "/" not in r["name"]:
                    out[(api_version, r["kind"])] = (r["name"], bool(r["namespaced"]))
    return out
