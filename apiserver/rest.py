"""The REST layer: from an HTTP request to a store call and back, as kube-apiserver's handlers do.

One resolver turns a path under ``/api/v1`` or ``/apis/<group>/<version>``
into (resource, namespace, name, subresource), Kubernetes' RequestInfo; one
dispatcher maps (method, that info) to a verb. Every verb answers JSON (or a
``meta.k8s.io/v1`` Table when asked) and every failure is a Status
(``errors.APIError``).

Watches are streamed from the resource's watch cache: each line is the
pre-encoded ``{"type":...,"object":...}`` the cache built once for all
watchers. A watch ends when its ``timeoutSeconds`` passes, when the client
goes away, or when the cache drops it (too slow, or history lost); its
watcher is unregistered in every case.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Final

import httpx
import orjson
from fastapi import Request
from fastapi.responses import Response, StreamingResponse

from apiserver import codec, errors, managedfields, patch, tables
from apiserver.errors import APIError
from apiserver.registry import namespaces as ns_registry
from apiserver.registry import pods as pod_registry
from apiserver.registry import replicationcontrollers as rc_registry
from apiserver.registry.store import DeleteOptions, Store, WriteOptions, storage_error
from apiserver.server import APIServer
from apiserver.storage.etcd import StorageError
from apiserver.storage.objects import Entry
from apiserver.watchcache import Filter, NotFresh, TooOld, error_line
from machinery.api import kinds
from machinery.api.fields import FieldSelector
from machinery.api.kinds import ResourceInfo
from machinery.api.labels import Selector, SelectorError
from machinery.api.meta import now_time

JSON: Final = "application/json"


@dataclass(slots=True)
class RequestInfo:
    ri: ResourceInfo[Any]
    namespace: str | None
    name: str | None
    subresource: str | None
    watch_path: bool


def resolve(group: str, version: str, path: str) -> RequestInfo:
    """Interpret the path after ``/api/v1/`` or ``/apis/<g>/<v>/`` (kube-apiserver's RequestInfoFactory)."""
    parts = [p for p in path.split("/") if p]
    watch_path = False
    if parts and parts[0] == "watch":
        watch_path = True
        parts = parts[1:]
    namespace: str | None = None
    ns_subresources = {s.name for s in kinds.NAMESPACES.subresources}
    if len(parts) >= 3 and parts[0] == "namespaces" and not (
            group == "" and len(parts) == 3 and parts[2] in ns_subresources):
        # /namespaces/{ns}/{resource}...; but /namespaces/{name}/status and /finalize are the
        # Namespace's own subresources.
        namespace = parts[1]
        parts = parts[2:]
    if not parts or len(parts) > 3:
        raise errors.path_not_found()
    plural = parts[0]
    ri = kinds.lookup(group, version, plural)
    if ri is None:
        if plural == "bindings" and group == "" and namespace and len(parts) == 1:
            return RequestInfo(kinds.PODS, namespace, None, "binding", watch_path)
        raise errors.path_not_found()
    if namespace is not None and not ri.namespaced:
        raise errors.path_not_found()
    name = parts[1] if len(parts) >= 2 else None
    sub = parts[2] if len(parts) == 3 else None
    if sub is not None and sub not in {s.name for s in ri.subresources}:
        raise errors.path_not_found()
    if name is not None and ri.namespaced and namespace is None:
        raise errors.path_not_found()
    return RequestInfo(ri, namespace, name, sub, watch_path)


async def dispatch(request: Request, group: str, version: str, path: str) -> Response:
    server: APIServer = request.app.state.server
    info = resolve(group, version, path)
    method = request.method
    q = request.query_params
    store = server.store(info.ri)
    if method == "GET":
        if info.name is None:
            if info.subresource is not None:
                raise errors.method_not_allowed()
            if info.watch_path or _truthy(q.get("watch")):
                return await watch(request, server, store, info)
            return await list_objects(request, store, info)
        if info.watch_path:
            return await watch(request, server, store, info)
        if info.subresource == "log":
            return await pod_log(request, server, store, info)
        if info.subresource == "scale":
            entry = await store.get(info.namespace, info.name)
            return json_response(rc_registry.scale_of(entry))
        if info.subresource not in (None, "status"):
            raise errors.method_not_allowed()
        entry = await store.get(info.namespace, info.name, resource_version=q.get("resourceVersion"))
        return object_response(request, info.ri, entry)
    if info.watch_path:
        raise errors.method_not_allowed()
    if method == "POST":
        if info.subresource == "binding":
            return await create_binding(request, store, info)
        if info.subresource == "eviction":
            return await create_eviction(request, store, info)
        if info.name is not None:
            raise errors.method_not_allowed()
        return await create(request, store, info)
    if method == "PUT":
        if info.name is None:
            raise errors.method_not_allowed()
        if info.subresource == "scale":
            return await put_scale(request, store, info)
        if info.subresource == "finalize":
            return await finalize_namespace(request, store, info)
        if info.subresource not in (None, "status"):
            raise errors.method_not_allowed()
        return await update(request, store, info)
    if method == "PATCH":
        if info.name is None or info.subresource not in (None, "status", "scale"):
            raise errors.method_not_allowed()
        return await patch_object(request, store, info)
    if method == "DELETE":
        if info.subresource is not None:
            raise errors.method_not_allowed()
        if info.name is None:
            if "deletecollection" not in info.ri.verbs:
                raise errors.method_not_allowed()
            return await delete_collection(request, store, info)
        return await delete(request, store, info)
    raise errors.method_not_allowed()


# --- helpers ----------------------------------------------------------------------------------

def _truthy(value: str | None) -> bool:
    return value is not None and value.lower() in ("true", "1")


def _int_param(request: Request, name: str, default: int | None = None) -> int | None:
    value = request.query_params.get(name)
    if value in (None, ""):
        return default
    try:
        return int(value)
    except ValueError:
        raise errors.bad_request(f'invalid value for {name}: "{value}"') from None


def json_response(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(orjson.dumps(body), status_code=status, media_type=JSON, headers=headers)


def raw_response(raw: bytes, status: int = 200, warnings: list[str] | None = None) -> Response:
    headers = warning_headers(warnings)
    resp = Response(raw, status_code=status, media_type=JSON)
    for k, v in headers:
        resp.headers.append(k, v)
    return resp


def warning_headers(warnings: list[str] | None) -> list[tuple[str, str]]:
    out = []
    for w in warnings or ():
        escaped = w.replace("\\", "\\\\").replace('"', '\\"')
        out.append(("Warning", f'299 - "{escaped}"'))
    return out


def object_response(request: Request, ri: ResourceInfo[Any], entry: Entry, status: int = 200,
                    warnings: list[str] | None = None) -> Response:
    if tables.wants_table(request.headers.get("accept")):
        table = tables.table_for(ri, [entry.obj], include_object=request.query_params.get("includeObject") or
                                 "Metadata", resource_version=str(entry.rv))
        return json_response(table, status)
    return raw_response(entry.raw, status, warnings)


def write_options(request: Request, *, subresource: str | None = None) -> WriteOptions:
    q = request.query_params
    dry = q.getlist("dryRun")
    for value in dry:
        if value != "All":
            raise errors.bad_request(f'Invalid dryRun value: "{value}". Valid values: ["All"]')
    manager = q.get("fieldManager") or _manager_from_user_agent(request.headers.get("user-agent"))
    return WriteOptions(dry_run=bool(dry), field_manager=manager, subresource=subresource)


def _manager_from_user_agent(agent: str | None) -> str:
    """kube-apiserver's default field manager: the user agent up to its first "/"."""
    if not agent:
        return "unknown"
    return agent.split("/", 1)[0][:128] or "unknown"


def field_validation(request: Request) -> str:
    value = request.query_params.get("fieldValidation") or "Warn"
    if value not in codec.FIELD_VALIDATION:
        raise errors.bad_request(
            f'fieldValidation parameter unsupported: "{value}". Valid values are "Strict", "Warn" and "Ignore"')
    return value


async def read_body(request: Request) -> bytes:
    server: APIServer = request.app.state.server
    limit = server.settings.max_body_bytes
    length = request.headers.get("content-length")
    if length is not None and length.isdigit() and int(length) > limit:
        raise errors.too_large(limit)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise errors.too_large(limit)
        chunks.append(chunk)
    body = b"".join(chunks)
    if not body.strip():
        raise errors.bad_request("the request body is empty")
    return body


async def decode_object(request: Request, ri: ResourceInfo[Any], opts: WriteOptions, *,
                        kind: str | None = None, api_version: str | None = None) -> dict[str, Any]:
    body = await read_body(request)
    mode = field_validation(request)
    ctype = request.headers.get("content-type")
    if codec.media_type(ctype) not in ("", "application/json", "application/yaml", "application/x-yaml",
                                       "text/yaml", "*/*", "application/vnd.kubernetes.protobuf"):
        raise errors.unsupported_media_type(codec.media_type(ctype), ["application/json", "application/yaml",
                                                                      "application/vnd.kubernetes.protobuf"])
    doc = codec.parse_document(body, ctype, strict_duplicates=mode != "Ignore")
    obj = codec.check_kind(doc, ri, kind=kind, api_version=api_version)
    if kind is None:
        codec.normalize_quantities(obj, ri)
        codec.check_fields(obj, ri, mode, opts.warnings)
    return obj


def check_namespace_matches(obj: dict[str, Any], info: RequestInfo) -> None:
    meta = obj.setdefault("metadata", {})
    ns = meta.get("namespace")
    if info.ri.namespaced and ns not in (None, "") and ns != info.namespace:
        raise errors.bad_request("the namespace of the provided object does not match the namespace sent on "
                                 "the request")


def selectors(request: Request, store: Store, namespace: str | None) -> Filter:
    q = request.query_params
    try:
        label = Selector.parse(q.get("labelSelector") or "")
    except SelectorError as e:
        raise errors.bad_request(f"unable to parse requirement: {e}") from e
    except ValueError as e:
        raise errors.bad_request(str(e)) from e
    try:
        field = FieldSelector.parse(q.get("fieldSelector") or "")
    except (SelectorError, ValueError) as e:
        raise errors.bad_request(f"invalid field selector: {e}") from e
    for req in field.requirements:
        if not store.strategy.supports_field(req.field):
            raise errors.bad_request(f"field label not supported: {req.field}")
    return Filter(namespace=namespace, label=label, field=field, extractor=store.strategy.fields)


# --- list and get ------------------------------------------------------------------------------

async def list_objects(request: Request, store: Store, info: RequestInfo) -> Response:
    q = request.query_params
    flt = selectors(request, store, info.namespace)
    limit = _int_param(request, "limit", 0) or 0
    rv = q.get("resourceVersion")
    match = q.get("resourceVersionMatch")
    if match not in (None, "", "NotOlderThan", "Exact"):
        raise errors.bad_request(f'resourceVersionMatch "{match}" is not supported')
    if match and not rv:
        raise errors.bad_request("resourceVersionMatch is forbidden unless resourceVersion is provided")
    if rv not in (None, ""):
        try:
            int(rv)
        except ValueError:
            raise errors.bad_request(f'invalid resourceVersion "{rv}"') from None
    result = await store.list(flt, limit=limit, continue_token=q.get("continue") or None,
                              resource_version=rv, exact=match == "Exact")
    ri = info.ri
    if tables.wants_table(request.headers.get("accept")):
        table = tables.table_for(ri, [e.obj for e in result.entries],
                                 include_object=q.get("includeObject") or "Metadata",
                                 resource_version=str(result.resource_version),
                                 continue_token=result.continue_token,
                                 remaining_item_count=result.remaining)
        return json_response(table)
    meta: dict[str, Any] = {"resourceVersion": str(result.resource_version)}
    if result.continue_token:
        meta["continue"] = result.continue_token
    if result.remaining is not None:
        meta["remainingItemCount"] = result.remaining
    head = (b'{"kind":"' + ri.list_kind.encode() + b'","apiVersion":"' + ri.api_version.encode() +
            b'","metadata":' + orjson.dumps(meta) + b',"items":[')
    body = head + b",".join(e.raw for e in result.entries) + b"]}"
    return Response(body, media_type=JSON)


# --- watch -------------------------------------------------------------------------------------

async def watch(request: Request, server: APIServer, store: Store, info: RequestInfo) -> Response:
    q = request.query_params
    flt = selectors(request, store, info.namespace)
    if info.name is not None:
        flt.name = info.name
    rv = q.get("resourceVersion") or ""
    send_initial_param = q.get("sendInitialEvents")
    bookmarks = _truthy(q.get("allowWatchBookmarks"))
    timeout = _int_param(request, "timeoutSeconds")
    if timeout is None:
        base = server.settings.min_request_timeout
        timeout = int(base * (1 + random.random()))
    cache = store.cache
    send_initial = rv in ("", "0")
    since: int | None = None
    if send_initial_param is not None:
        if q.get("resourceVersionMatch") != "NotOlderThan":
            raise errors.invalid(info.ri, "", "sendInitialEvents is forbidden for watch unless "
                                 "resourceVersionMatch is set to NotOlderThan", [])
        send_initial = _truthy(send_initial_param)
    if rv not in ("", "0"):
        try:
            since = int(rv)
        except ValueError:
            raise errors.bad_request(f'invalid resourceVersion "{rv}"') from None
    try:
        await asyncio.wait_for(cache.ready.wait(), 10)
        if since is not None and since > cache.rv:
            await cache.wait_for(since)
        elif send_initial and rv == "":
            await cache.wait_fresh()
    except NotFresh as e:
        raise errors.too_large_resource_version(e.requested, e.current) from e
    except TimeoutError:
        raise errors.timeout("the watch cache is not ready yet") from None
    except StorageError as e:
        raise storage_error(e) from e

    transform = None
    if tables.wants_table(request.headers.get("accept")):
        ri = info.ri
        include = q.get("includeObject") or "Metadata"

        def transform(etype: str, entry: Entry) -> bytes:
            table = tables.table_for(ri, [entry.obj], include_object=include, resource_version=str(entry.rv))
            return b'{"type":"' + etype.encode() + b'","object":' + orjson.dumps(table) + b"}\n"

    try:
        watcher = cache.watch(flt, since=since if not send_initial else None, bookmarks=bookmarks,
                              send_initial=send_initial, transform=transform)
    except TooOld as e:
        line = error_line(410, "Expired", str(e))
        return Response(line, media_type=JSON)

    deadline = time.monotonic() + timeout

    async def stream() -> AsyncIterator[bytes]:
        try:
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return
                try:
                    item = await asyncio.wait_for(watcher.queue.get(), remaining)
                except TimeoutError:
                    return
                if item is None:
                    return
                batch = [item]
                # Send whatever else is already queued in the same chunk.
                while not watcher.queue.empty() and len(batch) < 256:
                    nxt = watcher.queue.get_nowait()
                    if nxt is None:
                        yield b"".join(batch)
                        return
                    batch.append(nxt)
                yield b"".join(batch)
        finally:
            watcher.close()

    return StreamingResponse(stream(), media_type=JSON, headers={"Cache-Control": "no-cache, private"})


# --- create, update, patch -------------------------------------------------------------------------

async def create(request: Request, store: Store, info: RequestInfo) -> Response:
    opts = write_options(request)
    obj = await decode_object(request, info.ri, opts)
    check_namespace_matches(obj, info)
    entry = await store.create(info.namespace, obj, opts)
    return object_response(request, info.ri, entry, 201, opts.warnings)


async def update(request: Request, store: Store, info: RequestInfo) -> Response:
    assert info.name is not None
    opts = write_options(request, subresource=info.subresource)
    obj = await decode_object(request, info.ri, opts)
    check_namespace_matches(obj, info)
    meta = obj.setdefault("metadata", {})
    if meta.get("name") not in (None, "") and meta["name"] != info.name:
        raise errors.bad_request(f"the name of the object ({meta['name']}) does not match the name on the URL "
                                 f"({info.name})")
    meta["name"] = info.name
    wanted = meta.get("resourceVersion") or None

    def replace(_current: dict[str, Any], _entry: Entry) -> dict[str, Any]:
        copy: dict[str, Any] = orjson.loads(orjson.dumps(obj))
        return copy

    def fresh() -> dict[str, Any]:
        copy: dict[str, Any] = orjson.loads(orjson.dumps(obj))
        return copy

    entry, created = await store.update_with(info.namespace, info.name, replace, opts,
                                             expect_rv=lambda _n: wanted, create=fresh)
    return object_response(request, info.ri, entry, 201 if created else 200, opts.warnings)


async def patch_object(request: Request, store: Store, info: RequestInfo) -> Response:
    assert info.name is not None
    ctype = codec.media_type(request.headers.get("content-type"))
    if ctype not in codec.PATCH_TYPES:
        raise errors.unsupported_media_type(ctype, list(codec.PATCH_TYPES))
    opts = write_options(request, subresource=info.subresource)
    mode = field_validation(request)
    body = await read_body(request)
    document = codec.parse_document(body, ctype, strict_duplicates=mode == "Strict")
    ri = info.ri
    if info.subresource == "scale":
        return await patch_scale(request, store, info, ctype, document, opts)
    if ctype == "application/apply-patch+yaml":
        return await apply(request, store, info, document, opts, mode)

    def mutate(current: dict[str, Any], _entry: Entry) -> dict[str, Any]:
        try:
            if ctype == "application/json-patch+json":
                new = patch.apply_json_patch(current, document)
            elif ctype == "application/merge-patch+json":
                new = patch.apply_merge_patch(current, document)
            else:
                new = patch.apply_strategic_merge_patch(current, document, ri.definition)
        except patch.PatchError as e:
            raise APIError(e.code, e.reason, e.message) from e
        new = codec.check_kind(new, ri)
        codec.normalize_quantities(new, ri)
        opts.warnings.clear()
        codec.check_fields(new, ri, mode, opts.warnings)
        return new

    def wanted(new: dict[str, Any]) -> str | None:
        # A resourceVersion written in the patch is a precondition, as in kube-apiserver.
        if isinstance(document, dict):
            rv = (document.get("metadata") or {}).get("resourceVersion")
            return str(rv) if rv else None
        return None

    entry, _ = await store.update_with(info.namespace, info.name, mutate, opts, expect_rv=wanted)
    return object_response(request, ri, entry, 200, opts.warnings)


async def apply(request: Request, store: Store, info: RequestInfo, document: Any, opts: WriteOptions,
                mode: str) -> Response:
    """Server-side apply: create or merge, with field ownership and conflicts."""
    assert info.name is not None
    ri = info.ri
    q = request.query_params
    if not q.get("fieldManager"):
        raise errors.bad_request("PATCH requests with apply content type require fieldManager")
    force = _truthy(q.get("force"))
    applied = codec.check_kind(document, ri)
    check_namespace_matches(applied, info)
    ameta = applied.setdefault("metadata", {})
    if ameta.get("name") not in (None, "") and ameta["name"] != info.name:
        raise errors.bad_request(f"the name of the object ({ameta['name']}) does not match the name on the URL "
                                 f"({info.name})")
    ameta["name"] = info.name
    codec.normalize_quantities(applied, ri)
    codec.check_fields(applied, ri, mode, opts.warnings)
    manager = opts.field_manager
    # Apply records ownership itself; the store must not record an Update on top of it.
    apply_opts = WriteOptions(dry_run=opts.dry_run, field_manager=manager, subresource=info.subresource,
                              warnings=opts.warnings, track_fields=False)

    if info.subresource is None and ri.has_status:
        # Status is reset on spec writes, so an apply of the main resource never owns it
        # (else it would later conflict with the kubelet's and controllers' status writes).
        applied.pop("status", None)

    def merge(live: dict[str, Any] | None) -> dict[str, Any]:
        try:
            return managedfields.server_side_apply(live, applied, definition=ri.definition, manager=manager,
                                                   api_version=ri.api_version, force=force, now=now_time(),
                                                   subresource=info.subresource)
        except managedfields.ApplyConflict as e:
            raise APIError(409, "Conflict", e.message(), {"causes": e.causes()}) from e
        except patch.PatchError as e:
            raise APIError(e.code, e.reason, e.message) from e

    def mutate(current: dict[str, Any], _entry: Entry) -> dict[str, Any]:
        return merge(current)

    wanted = ameta.get("resourceVersion") or None
    entry, created = await store.update_with(info.namespace, info.name, mutate, apply_opts,
                                             expect_rv=lambda _n: wanted, create=lambda: merge(None),
                                             create_on_update=True)
    return object_response(request, ri, entry, 201 if created else 200, opts.warnings)


# --- delete ------------------------------------------------------------------------------------

async def delete_options(request: Request) -> DeleteOptions:
    q = request.query_params
    opts = DeleteOptions()
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > 1024 * 1024:
            raise errors.too_large(1024 * 1024)
    if body.strip():
        doc = codec.parse_document(body, request.headers.get("content-type"))
        if not isinstance(doc, dict):
            raise errors.bad_request("DeleteOptions must be a JSON object")
        if doc.get("kind") not in (None, "", "DeleteOptions"):
            raise errors.bad_request(f"expected DeleteOptions, got {doc.get('kind')}")
        opts.grace_period_seconds = doc.get("gracePeriodSeconds")
        opts.propagation_policy = doc.get("propagationPolicy")
        if doc.get("orphanDependents") is not None and opts.propagation_policy is None:
            opts.propagation_policy = "Orphan" if doc["orphanDependents"] else "Background"
        pre = doc.get("preconditions") or {}
        opts.precondition_uid = pre.get("uid")
        opts.precondition_rv = pre.get("resourceVersion")
        opts.dry_run = "All" in (doc.get("dryRun") or [])
    grace = _int_param(request, "gracePeriodSeconds")
    if grace is not None:
        opts.grace_period_seconds = grace
    if q.get("propagationPolicy"):
        opts.propagation_policy = q["propagationPolicy"]
    elif q.get("orphanDependents") is not None and opts.propagation_policy is None:
        opts.propagation_policy = "Orphan" if _truthy(q.get("orphanDependents")) else "Background"
    if opts.propagation_policy not in (None, "Orphan", "Background", "Foreground"):
        raise errors.bad_request(f'Unsupported propagationPolicy "{opts.propagation_policy}": supported values: '
                                 '"Orphan", "Background", "Foreground"')
    if "All" in q.getlist("dryRun"):
        opts.dry_run = True
    return opts


async def delete(request: Request, store: Store, info: RequestInfo) -> Response:
    assert info.name is not None
    opts = await delete_options(request)
    entry, deleted = await store.delete(info.namespace, info.name, opts)
    if store.strategy.return_deleted_object or not deleted:
        return object_response(request, info.ri, entry, 200)
    uid = (entry.obj.get("metadata") or {}).get("uid")
    details: dict[str, Any] = {"name": info.name, "kind": info.ri.plural, "uid": uid}
    if info.ri.group:
        details["group"] = info.ri.group
    return json_response(errors.success_status(details=details))


async def delete_collection(request: Request, store: Store, info: RequestInfo) -> Response:
    opts = await delete_options(request)
    flt = selectors(request, store, info.namespace)
    result = await store.list(flt)
    deleted: list[bytes] = []
    for entry in result.entries:
        meta = entry.obj.get("metadata") or {}
        try:
            gone, _ = await store.delete(meta.get("namespace"), meta["name"], opts)
        except APIError as e:
            if e.code == 404:
                continue
            raise
        deleted.append(gone.raw)
    ri = info.ri
    body = (b'{"kind":"' + ri.list_kind.encode() + b'","apiVersion":"' + ri.api_version.encode() +
            b'","metadata":{},"items":[' + b",".join(deleted) + b"]}")
    return Response(body, media_type=JSON)


# --- subresources ------------------------------------------------------------------------------

async def create_binding(request: Request, store: Store, info: RequestInfo) -> Response:
    opts = write_options(request, subresource="binding")
    binding = await decode_object(request, info.ri, opts, kind="Binding", api_version="v1")
    name = info.name or (binding.get("metadata") or {}).get("name")
    if not name:
        raise errors.bad_request("a binding must name the pod (metadata.name)")
    if info.name and (binding.get("metadata") or {}).get("name") not in (None, "", info.name):
        raise errors.bad_request("the name of the binding does not match the pod's name in the URL")
    check_namespace_matches(binding, info)
    await pod_registry.bind(store, info.namespace or "", name, binding, opts)
    return json_response(errors.success_status(code=201), 201)


async def create_eviction(request: Request, store: Store, info: RequestInfo) -> Response:
    assert info.name is not None
    opts = write_options(request)
    eviction = await decode_object(request, info.ri, opts, kind="Eviction", api_version="policy/v1")
    options = eviction.get("deleteOptions") or {}
    dopts = DeleteOptions(grace_period_seconds=options.get("gracePeriodSeconds"),
                          propagation_policy=options.get("propagationPolicy"),
                          precondition_uid=(options.get("preconditions") or {}).get("uid"),
                          precondition_rv=(options.get("preconditions") or {}).get("resourceVersion"),
                          dry_run=opts.dry_run)
    await pod_registry.evict(store, info.namespace or "", info.name, dopts, opts)
    return json_response(errors.success_status(code=201), 201)


async def put_scale(request: Request, store: Store, info: RequestInfo) -> Response:
    assert info.name is not None and info.namespace is not None
    opts = write_options(request, subresource="scale")
    scale = await decode_object(request, info.ri, opts, kind="Scale", api_version="autoscaling/v1")
    entry = await rc_registry.update_scale(store, info.namespace, info.name, scale, opts)
    return json_response(rc_registry.scale_of(entry))


async def patch_scale(request: Request, store: Store, info: RequestInfo, ctype: str, document: Any,
                      opts: WriteOptions) -> Response:
    assert info.name is not None and info.namespace is not None
    current = rc_registry.scale_of(await store.get(info.namespace, info.name))
    try:
        if ctype == "application/json-patch+json":
            scale = patch.apply_json_patch(current, document)
        else:
            scale = patch.apply_merge_patch(current, document)
    except patch.PatchError as e:
        raise APIError(e.code, e.reason, e.message) from e
    entry = await rc_registry.update_scale(store, info.namespace, info.name, scale, opts)
    return json_response(rc_registry.scale_of(entry))


async def finalize_namespace(request: Request, store: Store, info: RequestInfo) -> Response:
    assert info.name is not None
    opts = write_options(request, subresource="finalize")
    obj = await decode_object(request, info.ri, opts)
    strategy = store.strategy
    assert isinstance(strategy, ns_registry.NamespaceStrategy)

    def finalize(current: dict[str, Any], _entry: Entry) -> dict[str, Any]:
        strategy.prepare_for_finalize(obj, current)
        return obj

    entry, _ = await store.update_with(None, info.name, finalize, opts)
    return object_response(request, info.ri, entry)


async def pod_log(request: Request, server: APIServer, store: Store, info: RequestInfo) -> Response:
    """pods/log: proxied to the kubelet of the Pod's node, as kube-apiserver does."""
    assert info.name is not None
    q = request.query_params
    pod = (await store.get(info.namespace, info.name)).obj
    spec = pod.get("spec") or {}
    names = [c.get("name") for c in spec.get("containers") or []]
    init_names = [c.get("name") for c in spec.get("initContainers") or []]
    container = q.get("container")
    if not container:
        if len(names) != 1:
            raise errors.bad_request(f"a container name must be specified for pod {info.name}, choose one of: "
                                     f"[{' '.join(str(n) for n in names)}]")
        container = names[0]
    elif container not in names and container not in init_names:
        raise errors.bad_request(f"container {container} is not valid for pod {info.name}")
    node_name = spec.get("nodeName")
    if not node_name:
        raise errors.bad_request(f"pod {info.name} does not have a host assigned")
    node_entry = server.store(kinds.NODES).cache.get(kinds.NODES.etcd_key(None, node_name))
    if node_entry is None:
        raise errors.bad_request(f"node {node_name} for pod {info.name} not found")
    node = node_entry.obj
    status = node.get("status") or {}
    port = ((status.get("daemonEndpoints") or {}).get("kubeletEndpoint") or {}).get("Port")
    address = next((a.get("address") for a in status.get("addresses") or [] if a.get("type") == "InternalIP"),
                   None)
    if not port or not address:
        raise errors.bad_request(f"node {node_name} has no kubelet endpoint")
    params = {k: v for k, v in q.items() if k in ("follow", "tailLines", "timestamps", "previous", "sinceSeconds",
                                                   "limitBytes")}
    url = f"http://{address}:{port}/containerLogs/{info.namespace}/{info.name}/{container}"
    req = server.http.build_request("GET", url, params=params)
    try:
        upstream = await server.http.send(req, stream=True)
    except httpx.HTTPError as e:
        raise errors.APIError(502, "InternalError", f"error trying to reach the kubelet of {node_name}: {e}") \
            from e
    if upstream.status_code != 200:
        text = (await upstream.aread()).decode("utf-8", "replace")
        await upstream.aclose()
        raise errors.APIError(upstream.status_code, "BadRequest" if upstream.status_code < 500 else "InternalError",
                              text.strip() or f"kubelet answered {upstream.status_code}")

    async def relay() -> AsyncIterator[bytes]:
        try:
            async for chunk in upstream.aiter_raw():
                yield chunk
        finally:
            with contextlib.suppress(Exception):
                await upstream.aclose()

    return StreamingResponse(relay(), media_type="text/plain")
