"""How objects are stored in etcd, and the shared, read-only form the APIServer serves them in.

Stored form: the object's JSON without ``metadata.resourceVersion`` (etcd's
mod_revision is the truth), written with ``apiVersion``, ``kind`` and
``metadata`` first. That fixed head lets a read splice
``"resourceVersion":"N"`` in front of the metadata's first key instead of
decoding and re-encoding the whole object: a list of 500 Pods or an event fanned
out to a thousand watchers is then served from bytes as etcd returned them.
Values not in that form (written by someone else) are decoded and re-encoded.

An :class:`Entry` is one object at one revision: its JSON bytes (what clients
get) and, decoded on first use, its dict. Entries are shared by every reader
and never mutated; writers work on copies (``orjson.loads(entry.raw)``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import orjson

from apiserver.storage.etcd import KV

Obj = dict[str, Any]

_META: Final = b',"metadata":{'
_HEAD_MAX: Final = 160


def encode(obj: Obj) -> bytes:
    """The stored form of ``obj``: head first (apiVersion, kind, metadata), no resourceVersion."""
    meta = obj.get("metadata") or {}
    if "resourceVersion" in meta:
        meta = {k: v for k, v in meta.items() if k != "resourceVersion"}
    head = {"apiVersion": obj.get("apiVersion", ""), "kind": obj.get("kind", ""), "metadata": meta}
    head.update((k, v) for k, v in obj.items() if k not in head)
    return orjson.dumps(head)


def with_revision(stored: bytes, rv: int) -> bytes:
    """``stored`` with ``metadata.resourceVersion`` set to ``rv``, spliced in when the head allows."""
    if stored.startswith(b'{"apiVersion":'):
        i = stored.find(_META, 0, _HEAD_MAX)
        # The head is '{"apiVersion":"..","kind":".."': no other "{" before the metadata.
        if i > 0 and stored.find(b"{", 1, i) < 0:
            j = i + len(_META)
            sep = b"" if stored[j:j + 1] == b"}" else b","
            return stored[:j] + b'"resourceVersion":"' + str(rv).encode() + b'"' + sep + stored[j:]
    obj = orjson.loads(stored)
    obj.setdefault("metadata", {})["resourceVersion"] = str(rv)
    return orjson.dumps(obj)


class Entry:
    """One object at one revision: JSON bytes (resourceVersion included) and, lazily, its dict.

    Labels and selectable fields are computed on first use and kept.
    """

    __slots__ = ("_fields", "_labels", "_obj", "key", "raw", "rv")

    def __init__(self, key: str, raw: bytes, rv: int, obj: Obj | None = None) -> None:
        self.key = key
        self.raw = raw
        self.rv = rv
        self._obj = obj
        self._fields: dict[str, str] | None = None
        self._labels: dict[str, str] | None = None

    @property
    def obj(self) -> Obj:
        if self._obj is None:
            self._obj = orjson.loads(self.raw)
        return self._obj

    @property
    def name(self) -> str:
        return self.key.rsplit("/", 1)[-1]

    @property
    def labels(self) -> dict[str, str]:
        if self._labels is None:
            self._labels = self.obj.get("metadata", {}).get("labels") or {}
        return self._labels

    def compact(self) -> None:
        """Drop the parsed object (it is 5 to 10 times the JSON), keeping the labels watch filters read.

        The watch cache calls it on every entry it keeps (the current state and
        the window of recent events): with thousands of objects, what it holds
        must stay small. The object is parsed again when something needs it.
        """
        if self._obj is not None:
            self.labels  # noqa: B018 - computed while the object is at hand
            self._obj = None

    def fields(self, extractor: Callable[[Obj], dict[str, str]]) -> dict[str, str]:
        if self._fields is None:
            self._fields = extractor(self.obj)
        return self._fields


def decode(kv: KV) -> Entry:
    """The Entry of an etcd key-value, at its mod revision."""
    return Entry(kv.key, with_revision(kv.value, kv.mod_revision), kv.mod_revision)


def at_revision(entry: Entry, rv: int) -> Entry:
    """``entry``'s object with resourceVersion ``rv`` (a DELETED event carries the delete's revision)."""
    obj = dict(entry.obj)
    obj["metadata"] = {**obj.get("metadata", {}), "resourceVersion": str(rv)}
    return Entry(entry.key, orjson.dumps(obj), rv, obj)


def stamp(key: str, obj: Obj, stored: bytes, rv: int) -> Entry:
    """The Entry of an object just written as ``stored`` at revision ``rv`` (no re-encoding)."""
    obj.setdefault("metadata", {})["resourceVersion"] = str(rv)
    return Entry(key, with_revision(stored, rv), rv, obj)
