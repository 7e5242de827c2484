"""Kubernetes' media-type negotiation: which clause of an Accept header a request is answered with.

kube-apiserver picks the response's media type and the conversion a client
asked for (``as=Table;g=meta.k8s.io;v=v1``, ``as=APIGroupDiscoveryList``)
with goautoneg's ordering plus its own ``as``/``g``/``v`` parameters. Resource
endpoints, discovery and OpenAPI all answer through :func:`negotiate`.

Pure functions; no state.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, NamedTuple


class GroupVersionKind(NamedTuple):
    group: str
    version: str
    kind: str


META_GROUP: Final = "meta.k8s.io"
_META_VERSIONS: Final = ("v1", "v1beta1")
TABLE_KINDS: Final = frozenset(GroupVersionKind(META_GROUP, v, "Table") for v in _META_VERSIONS)
#: What a resource endpoint may convert its answer to (kube-apiserver's RequestScope).
REST_CONVERSIONS: Final = TABLE_KINDS | frozenset(
    GroupVersionKind(META_GROUP, v, k)
    for v in _META_VERSIONS for k in ("PartialObjectMetadata", "PartialObjectMetadataList")
)
#: The ``application/*`` subtypes kubesim can write (kube-apiserver also writes protobuf and CBOR).
SERIALIZED_SUBTYPES: Final = ("json", "yaml")
#: The media types a request body may have (besides the patch types), one list for every reader.
BODY_MEDIA_TYPES: Final = ("application/json", "application/yaml", "application/vnd.kubernetes.protobuf")


# --- Accept negotiation -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MediaRange:
    """One clause of an Accept header."""

    type: str
    subtype: str
    params: Mapping[str, str]
    q: float


@dataclass(frozen=True, slots=True)
class Negotiated:
    """The clause a request was answered with: its subtype and the conversion it asked for, if any."""

    subtype: str
    convert: GroupVersionKind | None


def parse_accept(header: str) -> list[MediaRange]:
    """An Accept header's clauses, best first, as goautoneg orders them.

    Higher ``q`` first; at equal ``q``, a concrete type before ``*`` and a
    concrete subtype before ``*``; otherwise the header's own order.
    Malformed clauses are skipped, as Kubernetes skips them.
    """
    clauses: list[MediaRange] = []
    for part in header.split(","):
        media_range, *raw_params = part.strip().split(";")
        pieces = media_range.split("/")
        mtype = pieces[0].strip()
        if len(pieces) == 1 and mtype == "*":
            subtype = "*"
        elif len(pieces) == 2:
            subtype = pieces[1].strip()
        else:
            continue
        params: dict[str, str] = {}
        q = 1.0
        for raw in raw_params:
            key, sep, value = raw.partition("=")
            if not sep:
                continue
            key = key.strip()
            if key == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
            else:
                params[key] = value.strip()
        clauses.append(MediaRange(mtype, subtype, params, q))
    # A stable sort on this key keeps the header order between equals, which is what
    # goautoneg's insertion sort does for headers of a realistic size.
    clauses.sort(key=lambda c: (-c.q, c.type == "*", c.subtype == "*"))
    return clauses


def negotiate(accept: str | None, *, subtypes: Sequence[str],
              conversions: Collection[GroupVersionKind]) -> Negotiated | None:
    """Kubernetes' ``NegotiateMediaTypeOptions`` for ``application/<subtype>`` endpoints.

    The first clause (in :func:`parse_accept` order) that names a served
    subtype and whose ``as``/``g``/``v`` parameters, if any, name one of
    ``conversions`` wins. ``None`` means nothing is acceptable (406); an
    empty or missing header means the first of ``subtypes``, with no conversion.
    """
    if not accept:
        return Negotiated(subtypes[0], None)
    for clause in parse_accept(accept):
        if clause.type not in ("application", "*") or (clause.type == "*" and clause.subtype != "*"):
            continue
        for subtype in subtypes:
            if clause.subtype not in (subtype, "*"):
                continue
            result = _accept_params(clause.params, subtype, conversions)
            if result is not None:
                return result
    return None


def _accept_params(params: Mapping[str, str], subtype: str,
                   conversions: Collection[GroupVersionKind]) -> Negotiated | None:
    # Parameters Kubernetes does not know are ignored; the ones it knows can make a clause unacceptable.
    # Only JSON has a streaming (watch) form, and no endpoint lets a client pick the server version.
    stream = params.get("stream")
    if (stream and (stream != "watch" or subtype != "json")) or params.get("sv"):
        return None
    if not {"as", "g", "v"} & params.keys():
        return Negotiated(subtype, None)
    convert = GroupVersionKind(params.get("g", ""), params.get("v", ""), params.get("as", ""))
    return Negotiated(subtype, convert) if convert in conversions else None


def wants_metadata(accept: str | None) -> GroupVersionKind | None:
    """The ``PartialObjectMetadata`` or ``PartialObjectMetadataList`` kind an Accept header asks for, if any.

    What client-go's metadata client (the garbage collector's, controller-runtime's metadata-only
    watches) sends: ``application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1``.
    """
    chosen = negotiate(accept, subtypes=SERIALIZED_SUBTYPES, conversions=REST_CONVERSIONS)
    if chosen is None or chosen.convert is None or chosen.convert.kind not in _PARTIAL_KINDS:
        return None
    return chosen.convert


_PARTIAL_KINDS: Final = ("PartialObjectMetadata", "PartialObjectMetadataList")


def wants_table(accept: str | None) -> bool:
    """Whether a resource request's Accept header is answered with a Table.

    True when the clause Kubernetes would pick asks for ``as=Table`` in
    ``meta.k8s.io`` ``v1`` or ``v1beta1``, e.g. what kubectl sends:
    ``application/json;as=Table;v=v1;g=meta.k8s.io,application/json``.
    """
    chosen = negotiate(accept, subtypes=SERIALIZED_SUBTYPES, conversions=REST_CONVERSIONS)
    return chosen is not None and chosen.convert in TABLE_KINDS
