"""The generic verbs of every stored resource: get, list, watch, create, update, patch, delete.

This is kube-apiserver's ``endpoints/handlers`` in small: each function takes a
resolved :class:`~apiserver.endpoints.request.Call`, reads the request, calls
the generic store and writes the answer (JSON, or a ``meta.k8s.io/v1`` Table
when asked). Every failure is an :class:`~apiserver.errors.APIError`, which the
front turns into a Status. Subresources that write the object with other
rules pass their strategy (``update(call, strategy=StatusStrategy(...))``).

Watches are streamed from the resource's watch cache: each line is the
pre-encoded ``{"type":...,"object":...}`` the cache built once for all
watchers (rewritten per watcher only for Tables and for resources served in
another version than stored). A watch ends when its ``timeoutSeconds``
passes, when the client goes away, or when the cache drops it (too slow, or
history lost); its watcher is unregistered in every case.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import orjson
from starlette.responses import Response, StreamingResponse

from apiserver import codec, errors, managedfields, patch
from apiserver.endpoints import body
from apiserver.endpoints.request import Call
from apiserver.endpoints.responses import (
    JSON,
    json_response,
    list_body,
    list_response,
    object_response,
    partial_list_bytes,
    partial_object,
    raw_response,
    served_bytes,
    table,
    wants_metadata,
    wants_table,
)
from apiserver.errors import APIError
from apiserver.registry.store import Store, WriteOptions, storage_error
from apiserver.registry.strategy import Strategy
from apiserver.request import params
from apiserver.storage.etcd import StorageError
from apiserver.storage.objects import Entry
from apiserver.watchcache import CacheClosed, Filter, NotFresh, TooOld, error_line
from machinery.api.fields import FieldSelector
from machinery.api.labels import Selector, SelectorError
from machinery.api.meta import now_time

Obj = dict[str, Any]


def _store(call: Call, strategy: Strategy | None) -> Store:
    store = call.store
    return store if strategy is None else store.using(strategy)


def _to_storage(call: Call, obj: Obj) -> Obj:
    converter = call.resource.converter
    return obj if converter is None else converter.to_storage(obj)


def selectors(call: Call, store: Store) -> Filter:
    q = call.query
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
    return store.namespace_filter(call.namespace, label=label, field=field, extractor=store.strategy.fields)


# --- get and list -------------------------------------------------------------------------------

async def get(call: Call) -> Response:
    assert call.name is not None
    entry = await call.store.get(call.namespace, call.name, resource_version=call.query.get("resourceVersion"))
    return object_response(call, entry)


async def list_objects(call: Call) -> Response:
    q = call.query
    store = call.store
    flt = selectors(call, store)
    limit = body.int_param(call.request, "limit", 0) or 0
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
    resource = call.resource
    if wants_table(call):
        return json_response(table(call, result.entries, resource_version=str(result.resource_version),
                                   continue_token=result.continue_token, remaining_item_count=result.remaining))
    meta: dict[str, Any] = {"resourceVersion": str(result.resource_version)}
    if result.continue_token:
        meta["continue"] = result.continue_token
    if result.remaining is not None:
        meta["remainingItemCount"] = result.remaining
    partial = wants_metadata(call)
    if partial is not None:
        return Response(partial_list_bytes(call, result.entries, meta, partial), media_type=JSON)
    return list_response(resource, result.entries, meta)


# --- watch ----------------------------------------------------------------------------------------

async def watch(call: Call) -> Response:
    q = call.query
    server = call.server
    store = call.store
    flt = selectors(call, store)
    if call.name is not None:
        flt.name = call.name
    rv = q.get("resourceVersion") or ""
    send_initial_param = q.get("sendInitialEvents")
    bookmarks = body.truthy(q.get("allowWatchBookmarks"))
    timeout = params.watch_timeout(body.int_param(call.request, "timeoutSeconds"), server.settings.min_request_timeout)
    cache = store.cache
    send_initial = rv in ("", "0")
    since: int | None = None
    if send_initial_param is not None:
        if q.get("resourceVersionMatch") != "NotOlderThan":
            raise errors.invalid(call.info, "", "sendInitialEvents is forbidden for watch unless "
                                 "resourceVersionMatch is set to NotOlderThan", [])
        send_initial = body.truthy(send_initial_param)
    if rv not in ("", "0"):
        try:
            since = int(rv)
        except ValueError:
            raise errors.bad_request(f'invalid resourceVersion "{rv}"') from None
    try:
        await asyncio.wait_for(cache.wait_ready(), 10)
        if since is not None and since > cache.rv:
            await cache.wait_for(since)
        elif send_initial and rv == "":
            try:
                await cache.wait_fresh(timeout=1.0 if send_initial_param is None else 3.0)
            except NotFresh:
                # "Start at most recent": without a progress notification in time, the cache's
                # state is the most recent this APIServer knows (kube-apiserver's watch cache
                # answers an unversioned watch from its state without waiting at all).
                if send_initial_param is not None:
                    raise
    except CacheClosed:
        pass  # the resource stopped being served (its CRD went): the watch below ends at once
    except NotFresh as e:
        raise errors.too_large_resource_version(e.requested, e.current) from e
    except TimeoutError:
        raise errors.timeout("the watch cache is not ready yet") from None
    except StorageError as e:
        raise storage_error(e) from e

    resource = call.resource
    transform: Callable[[str, Entry], bytes] | None = None
    partial = wants_metadata(call)
    bookmark_kind: tuple[str, str] | None = None
    if partial is not None:
        if partial.kind != "PartialObjectMetadata":
            raise errors.APIError(406, "NotAcceptable", f"you requested {partial.kind}, but the requested object is "
                                                        f"not a list ({call.info.kind})")
        version = partial.version
        bookmark_kind = (f"{partial.group}/{version}", partial.kind)

        def transform(etype: str, entry: Entry) -> bytes:
            return b'{"type":"' + etype.encode() + b'","object":' + orjson.dumps(
                partial_object(entry.obj, version)) + b"}\n"
    elif wants_table(call):
        def transform(etype: str, entry: Entry) -> bytes:
            rows = table(call, [entry], resource_version=str(entry.rv))
            return b'{"type":"' + etype.encode() + b'","object":' + orjson.dumps(rows) + b"}\n"
    elif resource.converter is not None:
        def transform(etype: str, entry: Entry) -> bytes:
            return b'{"type":"' + etype.encode() + b'","object":' + served_bytes(resource, entry) + b"}\n"

    try:
        watcher = cache.watch(flt, since=since if not send_initial else None, bookmarks=bookmarks,
                              send_initial=send_initial, transform=transform, bookmark_kind=bookmark_kind)
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


# --- create, update, patch ------------------------------------------------------------------------

async def create(call: Call) -> Response:
    opts = body.write_options(call)
    obj = await body.decode_object(call, opts)
    body.check_namespace_matches(obj, call)
    obj = _to_storage(call, obj)
    entry = await call.store.create(call.namespace, obj, opts, admission=call.admission(dry_run=opts.dry_run))
    return object_response(call, entry, 201, opts.warnings)


async def update(call: Call, *, strategy: Strategy | None = None) -> Response:
    """PUT of the object or of a subresource written with ``strategy`` (``/status``)."""
    assert call.name is not None
    opts = body.write_options(call, subresource=call.subresource)
    obj = await body.decode_object(call, opts)
    body.check_namespace_matches(obj, call)
    body.check_name_matches(obj, call)
    wanted = obj["metadata"].get("resourceVersion") or None
    obj = _to_storage(call, obj)

    def fresh() -> Obj:
        copy: Obj = orjson.loads(orjson.dumps(obj))
        return copy

    store = _store(call, strategy)
    entry, created = await store.update_with(call.namespace, call.name, lambda _current, _entry: fresh(), opts,
                                             expect_rv=lambda _n: wanted, create=fresh,
                                             admission=call.admission(dry_run=opts.dry_run))
    return object_response(call, entry, 201 if created else 200, opts.warnings)


async def patch_object(call: Call, *, strategy: Strategy | None = None) -> Response:
    """PATCH of the object or of a subresource written with ``strategy``: JSON, merge, strategic, apply."""
    assert call.name is not None
    ctype = codec.media_type(call.request.headers.get("content-type"))
    if ctype not in call.resource.patch_types:
        raise errors.unsupported_media_type(ctype, list(call.resource.patch_types))
    opts = body.write_options(call, subresource=call.subresource)
    mode = body.field_validation(call)
    raw = await body.read_body(call)
    duplicates: list[str] | None = [] if mode != "Ignore" else None
    document = codec.parse_document(raw, ctype, duplicates=duplicates)
    if ctype == "application/apply-patch+yaml":
        return await apply(call, document, opts, mode, strategy=strategy)
    resource = call.resource
    info = call.info

    def mutate(current: Obj, _entry: Entry) -> Obj:
        served = resource.converter.from_storage(current) if resource.converter is not None else current
        try:
            if ctype == "application/json-patch+json":
                new = patch.apply_json_patch(served, document)
            elif ctype == "application/merge-patch+json":
                new = patch.apply_merge_patch(served, document)
            else:
                new = patch.apply_strategic_merge_patch(served, document, info.definition)
        except patch.PatchError as e:
            raise APIError(e.code, e.reason, e.message) from e
        new = codec.check_kind(new, info)
        opts.warnings.clear()
        codec.check_fields(new, info, mode, opts.warnings, duplicates=duplicates or ())
        return _to_storage(call, new)

    def wanted(_new: Obj) -> str | None:
        # A resourceVersion written in the patch is a precondition, as in kube-apiserver.
        if isinstance(document, dict):
            rv = (document.get("metadata") or {}).get("resourceVersion")
            return str(rv) if rv else None
        return None

    store = _store(call, strategy)
    entry, _ = await store.update_with(call.namespace, call.name, mutate, opts, expect_rv=wanted,
                                       admission=call.admission(dry_run=opts.dry_run))
    return object_response(call, entry, 200, opts.warnings)


async def apply(call: Call, document: Any, opts: WriteOptions, mode: str, *,
                strategy: Strategy | None = None) -> Response:
    """Server-side apply: create or merge, with field ownership and conflicts."""
    assert call.name is not None
    info = call.info
    resource = call.resource
    q = call.query
    if not q.get("fieldManager"):
        raise errors.bad_request("PATCH requests with apply content type require fieldManager")
    force = body.truthy(q.get("force"))
    applied = codec.check_kind(document, info)
    body.check_namespace_matches(applied, call)
    body.check_name_matches(applied, call)
    codec.check_fields(applied, info, mode, opts.warnings)
    manager = opts.field_manager
    # Apply records ownership itself; the store must not record an Update on top of it.
    apply_opts = WriteOptions(dry_run=opts.dry_run, field_manager=manager, subresource=call.subresource,
                              warnings=opts.warnings, track_fields=False)
    if call.subresource is None and info.has_status:
        # Status is reset on spec writes, so an apply of the main resource never owns it
        # (else it would later conflict with the kubelet's and controllers' status writes).
        applied.pop("status", None)

    def merge(live: Obj | None) -> Obj:
        served = live
        if live is not None and resource.converter is not None:
            served = resource.converter.from_storage(live)
        try:
            merged = managedfields.server_side_apply(served, applied, definition=info.definition, manager=manager,
                                                     api_version=info.api_version, force=force, now=now_time(),
                                                     subresource=call.subresource)
        except managedfields.ApplyConflict as e:
            raise APIError(409, "Conflict", e.message(), {"causes": e.causes()}) from e
        except patch.PatchError as e:
            raise APIError(e.code, e.reason, e.message) from e
        return _to_storage(call, merged)

    wanted = applied["metadata"].get("resourceVersion") or None
    store = _store(call, strategy)
    entry, created = await store.update_with(call.namespace, call.name, lambda current, _e: merge(current),
                                             apply_opts, expect_rv=lambda _n: wanted, create=lambda: merge(None),
                                             create_on_update=True, admission=call.admission(dry_run=opts.dry_run))
    return object_response(call, entry, 201 if created else 200, opts.warnings)


# --- delete ---------------------------------------------------------------------------------------

async def delete(call: Call) -> Response:
    assert call.name is not None
    opts = await body.delete_options(call)
    store = call.store
    entry, deleted = await store.delete(call.namespace, call.name, opts,
                                        admission=call.admission(dry_run=opts.dry_run))
    warnings = store.strategy.warnings_on_delete(opts.propagation_policy)
    if store.strategy.return_deleted_object or not deleted:
        return object_response(call, entry, 200, warnings)
    uid = (entry.obj.get("metadata") or {}).get("uid")
    details: dict[str, Any] = {"name": call.name, "kind": call.info.plural, "uid": uid}
    if call.info.group:
        details["group"] = call.info.group
    return raw_response(orjson.dumps(errors.success_status(details=details)), 200, warnings)


async def delete_collection(call: Call) -> Response:
    opts = await body.delete_options(call)
    store = call.store
    flt = selectors(call, store)
    result = await store.list(flt)
    deleted: list[bytes] = []
    admission = call.admission(dry_run=opts.dry_run)
    for entry in result.entries:
        meta = entry.obj.get("metadata") or {}
        try:
            gone, _ = await store.delete(meta.get("namespace"), meta["name"], opts, admission=admission)
        except APIError as e:
            if e.code == 404:
                continue
            raise
        deleted.append(served_bytes(call.resource, gone))
    return raw_response(list_body(call.resource, deleted, {}), 200,
                        store.strategy.warnings_on_delete(opts.propagation_policy))
