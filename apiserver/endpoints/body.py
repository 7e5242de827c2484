"""Reading a request: its body (one reader for every verb), its write options and its DeleteOptions.

Every body is read through :func:`read_body`, which enforces
``--max-request-bytes`` while reading (413 before the whole body is in
memory); objects are decoded by :func:`decode_object` from JSON, YAML or
Kubernetes protobuf (:mod:`apiserver.codec`), checked against the endpoint's
kind, and checked field by field against the kind's schema per
``fieldValidation``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from starlette.requests import Request

from apiserver import codec, errors
from apiserver.negotiation import BODY_MEDIA_TYPES
from apiserver.registry.store import DeleteOptions, WriteOptions
from apiserver.request import deleteoptions, params

if TYPE_CHECKING:
    from apiserver.endpoints.request import Call

Obj = dict[str, Any]


def truthy(value: str | None) -> bool:
    return value is not None and value.lower() in ("true", "1")


def int_param(request: Request, name: str, default: int | None = None) -> int | None:
    return params.int64_param(request.query_params, name, default)


def write_options(call: Call, *, subresource: str | None = None) -> WriteOptions:
    q = call.query
    dry = q.getlist("dryRun")
    for value in dry:
        if value != "All":
            raise errors.bad_request(f'Invalid dryRun value: "{value}". Valid values: ["All"]')
    manager = q.get("fieldManager") or _manager_from_user_agent(call.request.headers.get("user-agent"))
    return WriteOptions(dry_run=bool(dry), field_manager=manager, subresource=subresource)


def _manager_from_user_agent(agent: str | None) -> str:
    """kube-apiserver's default field manager: the user agent up to its first "/"."""
    if not agent:
        return "unknown"
    return agent.split("/", 1)[0][:128] or "unknown"


def field_validation(call: Call) -> str:
    value = call.query.get("fieldValidation") or "Warn"
    if value not in codec.FIELD_VALIDATION:
        raise errors.bad_request(
            f'fieldValidation parameter unsupported: "{value}". Valid values are "Strict", "Warn" and "Ignore"')
    return value


async def read_body(call: Call, *, required: bool = True, limit: int | None = None) -> bytes:
    """The whole body, refused with 413 past ``--max-request-bytes`` (or ``limit``)."""
    request = call.request
    limit = limit or call.server.settings.max_body_bytes
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
    if required and not body.strip():
        raise errors.bad_request("the request body is empty")
    return body


async def decode_object(call: Call, opts: WriteOptions, *, kind: str | None = None,
                        api_version: str | None = None) -> Obj:
    """The request's object, of the endpoint's kind (or of ``kind``/``api_version`` for a subresource body)."""
    body = await read_body(call)
    mode = field_validation(call)
    ctype = call.request.headers.get("content-type")
    mt = codec.media_type(ctype)
    if mt not in ("", "*/*", "application/x-yaml", "text/yaml", *BODY_MEDIA_TYPES):
        raise errors.unsupported_media_type(mt, list(BODY_MEDIA_TYPES))
    duplicates: list[str] | None = [] if mode != "Ignore" else None
    doc = codec.parse_document(body, ctype, duplicates=duplicates)
    info = call.info
    obj = codec.check_kind(doc, info, kind=kind, api_version=api_version)
    if kind is None:
        codec.check_fields(obj, info, mode, opts.warnings, duplicates=duplicates or ())
    else:
        codec.report_strict_decoding(mode, opts.warnings, duplicates or ())
    return obj


def check_namespace_matches(obj: Obj, call: Call) -> None:
    meta = obj.setdefault("metadata", {})
    ns = meta.get("namespace")
    if call.info.namespaced and ns not in (None, "") and ns != call.namespace:
        raise errors.bad_request("the namespace of the provided object does not match the namespace sent on "
                                 "the request")


def check_name_matches(obj: Obj, call: Call) -> None:
    """A body naming another object than the URL is a 400, as in Kubernetes; a nameless body takes the URL's."""
    meta = obj.setdefault("metadata", {})
    if meta.get("name") not in (None, "") and meta["name"] != call.name:
        raise errors.bad_request(f"the name of the object ({meta['name']}) does not match the name on the URL "
                                 f"({call.name})")
    meta["name"] = call.name


async def delete_options(call: Call) -> DeleteOptions:
    """DeleteOptions from the body (JSON, YAML or protobuf) and the query, as kube-apiserver reads them."""
    q = call.query
    opts = DeleteOptions()
    body = await read_body(call, required=False, limit=1024 * 1024)
    if body.strip():
        opts = deleteoptions.from_document(codec.parse_document(body, call.request.headers.get("content-type")))
    grace = int_param(call.request, "gracePeriodSeconds")
    if grace is not None:
        opts.grace_period_seconds = grace
    if q.get("propagationPolicy"):
        opts.propagation_policy = q["propagationPolicy"]
    elif q.get("orphanDependents") is not None and opts.propagation_policy is None:
        opts.propagation_policy = "Orphan" if truthy(q.get("orphanDependents")) else "Background"
    if opts.propagation_policy not in (None, "Orphan", "Background", "Foreground"):
        raise errors.bad_request(f'Unsupported propagationPolicy "{opts.propagation_policy}": supported values: '
                                 '"Orphan", "Background", "Foreground"')
    if "All" in q.getlist("dryRun"):
        opts.dry_run = True
    return opts


def apply_delete_options(opts: DeleteOptions, doc: Obj) -> None:
    """Fill ``opts`` from a DeleteOptions document (an Eviction's ``deleteOptions``), checked field by field."""
    parsed = deleteoptions.from_document(doc, struct="Eviction.deleteOptions")
    opts.grace_period_seconds = parsed.grace_period_seconds
    opts.propagation_policy = parsed.propagation_policy
    opts.precondition_uid = parsed.precondition_uid
    opts.precondition_rv = parsed.precondition_rv
    opts.dry_run = parsed.dry_run
