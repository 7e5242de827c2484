"""Writing an answer: objects as stored bytes, Tables when asked, other versions converted, warnings.

An object read from etcd or the watch cache is served from its bytes as
stored (no re-encoding) unless the client asked for a Table, or the
resource is another version of the stored one (``events.k8s.io/v1`` Events,
``autoscaling/v1`` HPAs), whose converter then rewrites it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, Final

import orjson
from starlette.responses import Response, StreamingResponse

from apiserver import errors, negotiation, printers
from apiserver.request import warning
from apiserver.storage.objects import Entry

if TYPE_CHECKING:
    from apiserver.endpoints.request import Call
    from apiserver.registry.resource import Resource

JSON: Final = "application/json"


def json_response(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(orjson.dumps(body), status_code=status, media_type=JSON, headers=headers)


def raw_response(raw: bytes, status: int = 200, warnings: list[str] | None = None) -> Response:
    resp = Response(raw, status_code=status, media_type=JSON)
    for k, v in warning_headers(warnings):
        resp.headers.append(k, v)
    return resp


def warning_headers(warnings: list[str] | None) -> list[tuple[str, str]]:
    return [("Warning", value) for w in warnings or () if (value := warning.header_value(w)) is not None]


def served_object(resource: Resource, entry: Entry) -> dict[str, Any]:
    """The object as this resource's version shows it."""
    if resource.converter is None:
        return entry.obj
    return resource.converter.from_storage(orjson.loads(entry.raw))


def served_bytes(resource: Resource, entry: Entry) -> bytes:
    """The JSON of the object as this resource's version shows it (the stored bytes when the same)."""
    if resource.converter is None:
        return entry.raw
    return orjson.dumps(served_object(resource, entry))


def wants_table(call: Call) -> bool:
    return negotiation.wants_table(call.request.headers.get("accept"))


def wants_metadata(call: Call) -> negotiation.GroupVersionKind | None:
    """``PartialObjectMetadata(List)`` asked for (metadata-only clients), in ``meta.k8s.io`` v1 or v1beta1."""
    return negotiation.wants_metadata(call.request.headers.get("accept"))


def partial_object(obj: dict[str, Any], version: str) -> dict[str, Any]:
    """An object as ``PartialObjectMetadata``: its metadata only (``meta.AsPartialObjectMetadata``)."""
    return {"kind": "PartialObjectMetadata", "apiVersion": f"{negotiation.META_GROUP}/{version}",
            "metadata": obj.get("metadata") or {}}


def _not_a_list(asked: str, call: Call, is_list: bool) -> errors.APIError:
    what = call.info.list_kind if is_list else call.info.kind
    return errors.APIError(406, "NotAcceptable", f"you requested {asked}, but the requested object is "
                                                 f"{'a list' if is_list else 'not a list'} ({what})")


def partial_object_bytes(call: Call, entry: Entry, gvk: negotiation.GroupVersionKind) -> bytes:
    if gvk.kind != "PartialObjectMetadata":
        raise _not_a_list(gvk.kind, call, is_list=False)
    return orjson.dumps(partial_object(entry.obj, gvk.version))


def partial_list_bytes(call: Call, entries: list[Entry], meta: dict[str, Any],
                       gvk: negotiation.GroupVersionKind) -> bytes:
    if gvk.kind != "PartialObjectMetadataList":
        raise _not_a_list(gvk.kind, call, is_list=True)
    return orjson.dumps({"kind": "PartialObjectMetadataList", "apiVersion": f"{negotiation.META_GROUP}/{gvk.version}",
                         "metadata": meta, "items": [partial_object(e.obj, gvk.version) for e in entries]})


def table(call: Call, entries: list[Entry], **kwargs: Any) -> dict[str, Any]:
    """The Table of ``entries``: rows from the stored form, objects in the served form."""
    resource = call.resource
    embedded = [served_object(resource, e) for e in entries] if resource.converter is not None else None
    return printers.table_for(resource.printer, [e.obj for e in entries],
                              include_object=call.query.get("includeObject") or "Metadata",
                              embedded=embedded, **kwargs)


def object_response(call: Call, entry: Entry, status: int = 200, warnings: list[str] | None = None) -> Response:
    if wants_table(call):
        return json_response(table(call, [entry], resource_version=str(entry.rv)), status)
    partial = wants_metadata(call)
    if partial is not None:
        return raw_response(partial_object_bytes(call, entry, partial), status, warnings)
    return raw_response(served_bytes(call.resource, entry), status, warnings)


def list_body(resource: Resource, items: list[bytes], meta: dict[str, Any]) -> bytes:
    return _list_head(resource, meta) + b",".join(items) + b"]}"


def _list_head(resource: Resource, meta: dict[str, Any]) -> bytes:
    info = resource.info
    return (b'{"kind":"' + info.list_kind.encode() + b'","apiVersion":"' + info.api_version.encode() +
            b'","metadata":' + orjson.dumps(meta) + b',"items":[')


#: A list of more items than this is sent in pieces of this many, the event loop free between them.
#: Built and sent whole, a list of 150,000 Pods (375 MB of JSON, then as much again encrypted) held
#: the APIServer's loop, and every request and watch with it, for seconds: node heartbeats came 20 s
#: late and watch events 9 s late while such lists were served.
LIST_PIECE_ITEMS: Final = 1000


def list_response(resource: Resource, entries: list[Entry], meta: dict[str, Any]) -> Response:
    """A list of ``entries`` in ``resource``'s version: one body, or for a long list a chunked stream of the
    same bytes (as kube-apiserver streams the encoding of large collections)."""
    if len(entries) <= LIST_PIECE_ITEMS:
        return Response(list_body(resource, [served_bytes(resource, e) for e in entries], meta), media_type=JSON)
    return StreamingResponse(_list_pieces(resource, entries, meta), media_type=JSON)


async def _list_pieces(resource: Resource, entries: list[Entry], meta: dict[str, Any]) -> AsyncIterator[bytes]:
    separator = b""
    for start in range(0, len(entries), LIST_PIECE_ITEMS):
        piece = b",".join([served_bytes(resource, e) for e in entries[start:start + LIST_PIECE_ITEMS]])
        yield (_list_head(resource, meta) if start == 0 else separator) + piece
        separator = b","
        # Sending does not wait unless the client is behind: let the loop serve everyone else.
        await asyncio.sleep(0)
    yield b"]}"
