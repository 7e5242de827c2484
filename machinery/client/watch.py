"""Watch events and the decoding of a watch stream.

A watch answer is newline-delimited JSON, ``{"type": ..., "object": {...}}``
per line, arriving in HTTP chunks that need not line up with the lines.
:func:`split_lines` re-cuts the chunks into lines and :func:`decode_event`
turns each line into a typed value:

- ``ADDED``/``MODIFIED``/``DELETED`` become :class:`WatchEvent` with the model;
- ``BOOKMARK`` becomes :class:`Bookmark`, which carries only the
  resourceVersion (a bookmark's object is a bare shell that would not pass the
  model's validation for every kind);
- ``ERROR`` raises the Status as its typed exception (``Expired`` for 410), which
  ends the watch as the server does.

Pure functions; a stream is consumed by one task.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

import orjson
from kubernetes.client import V1Status
from pydantic import BaseModel, ValidationError

from machinery.client.errors import UnexpectedResponse, error_from_status
from machinery.client.objects import Transform, decode

M = TypeVar("M", bound=BaseModel)

EventType = Literal["ADDED", "MODIFIED", "DELETED"]
_EVENT_TYPES: frozenset[str] = frozenset({"ADDED", "MODIFIED", "DELETED"})


@dataclass(frozen=True, slots=True)
class WatchEvent(Generic[M]):
    type: EventType
    object: M
    #: ``object.metadata.resourceVersion``, read once while decoding.
    resource_version: str


@dataclass(frozen=True, slots=True)
class Bookmark:
    """The server's "you are up to date until here" marker."""

    resource_version: str


async def split_lines(chunks: AsyncIterable[bytes]) -> AsyncIterator[bytes]:
    """Non-empty lines of a byte stream, however its chunks cut them."""
    pending = b""
    async for chunk in chunks:
        if b"\n" not in chunk:
            pending += chunk
            continue
        first, *middle, last = chunk.split(b"\n")
        line = pending + first
        if line.strip():
            yield line
        for line in middle:
            if line.strip():
                yield line
        pending = last
    if pending.strip():
        yield pending


def decode_event(model: type[M], line: bytes, transform: Transform | None = None) -> WatchEvent[M] | Bookmark:
    """One watch line as a typed event (its object through ``transform`` first); an ``ERROR`` line raises
    its Status."""
    try:
        raw: Any = orjson.loads(line)
    except orjson.JSONDecodeError as err:
        raise UnexpectedResponse(f"watch stream sent invalid JSON: {err}: {line[:200]!r}") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("object"), dict):
        raise UnexpectedResponse(f"watch stream sent a line that is not an event: {line[:200]!r}")
    etype, obj = raw.get("type"), raw["object"]
    if etype in _EVENT_TYPES:
        rv = (obj.get("metadata") or {}).get("resourceVersion") or ""
        return WatchEvent(etype, decode(model, obj, transform), rv)
    if etype == "BOOKMARK":
        return Bookmark((obj.get("metadata") or {}).get("resourceVersion") or "")
    if etype == "ERROR":
        try:
            status = V1Status.model_validate(obj)
        except ValidationError:
            raise UnexpectedResponse(f"watch stream sent an ERROR that is not a Status: {obj!r}") from None
        raise error_from_status(status)
    raise UnexpectedResponse(f"watch stream sent an event of unknown type {etype!r}")
