"""The informer's cache: a dict of objects by key plus named indexes, on the event loop's thread.

client-go's ``ThreadSafeStore`` needs locks because informers and workers run
on goroutines; here everything runs on one event loop, so the store is a plain
``dict`` and index dicts, with no locks and no copies: readers get the very
objects the informer decoded and must not modify them (the models are built
anew for every change, never mutated in place).

An index function maps an object to the values it is indexed under (a Pod to
its ``spec.nodeName``, any object to its owners' uids); :meth:`Store.by_index`
answers "which objects have this value" in one dict lookup.

Concurrency: only the informer task writes; anyone on the loop may read
between two awaits and sees a consistent state.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Mapping, Sequence
from typing import Generic, TypeVar

from pydantic import BaseModel

from machinery.api.kinds import ObjectKey
from machinery.client.objects import meta_of

M = TypeVar("M", bound=BaseModel)

#: The values an object is indexed under (possibly none).
IndexFunc = Callable[[M], Sequence[str]]

NAMESPACE_INDEX = "namespace"
NODE_NAME_INDEX = "spec.nodeName"
OWNER_UID_INDEX = "ownerUID"


def index_by_namespace(obj: BaseModel) -> Sequence[str]:
    """client-go's ``MetaNamespaceIndexFunc``."""
    namespace = meta_of(obj).namespace
    return (namespace,) if namespace else ()


def index_by_owner_uid(obj: BaseModel) -> Sequence[str]:
    """The uids of every owner (the garbage collector's and controllers' "who owns this")."""
    refs = meta_of(obj).owner_references
    return tuple(ref.uid for ref in refs) if refs else ()


def index_pod_by_node_name(pod: BaseModel) -> Sequence[str]:
    """A Pod's ``spec.nodeName``; unscheduled Pods are in no bucket.

    Typed for any model so that it fits an informer of any declared model type.
    """
    node: str | None = getattr(getattr(pod, "spec", None), "node_name", None)
    return (node,) if node else ()


class Store(Generic[M]):
    """Objects by ``namespace/name`` key, with indexes kept up to date on every write."""

    def __init__(self, indexers: Mapping[str, IndexFunc[M]] | None = None) -> None:
        self._items: dict[ObjectKey, M] = {}
        self._indexers: dict[str, IndexFunc[M]] = {}
        self._indices: dict[str, dict[str, set[ObjectKey]]] = {}
        if indexers:
            self.add_indexers(indexers)

    # --- reads -----------------------------------------------------------------------------

    def get(self, key: ObjectKey | str) -> M | None:
        return self._items.get(ObjectKey(key))

    def list(self) -> list[M]:
        return list(self._items.values())

    def list_keys(self) -> builtins.list[ObjectKey]:
        return list(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def by_index(self, index_name: str, value: str) -> builtins.list[M]:
        """Objects indexed under ``value`` (``by_index(NODE_NAME_INDEX, "node-1")``)."""
        return [self._items[k] for k in self._index(index_name).get(value, ())]

    def index_keys(self, index_name: str, value: str) -> builtins.list[ObjectKey]:
        return list(self._index(index_name).get(value, ()))

    def has_index(self, index_name: str) -> bool:
        return index_name in self._indexers

    def index_values(self, index_name: str) -> builtins.list[str]:
        """Every value some object is indexed under."""
        return list(self._index(index_name))

    # --- writes (the informer's) -----------------------------------------------------------

    def add_indexers(self, indexers: Mapping[str, IndexFunc[M]]) -> None:
        """Add indexes, built at once from the objects already held."""
        for name, fn in indexers.items():
            if name in self._indexers:
                raise ValueError(f"indexer {name!r} already exists")
            self._indexers[name] = fn
            index: dict[str, set[ObjectKey]] = {}
            for key, obj in self._items.items():
                for value in fn(obj):
                    index.setdefault(value, set()).add(key)
            self._indices[name] = index

    def upsert(self, key: ObjectKey, obj: M) -> M | None:
        """Store ``obj`` under ``key``; returns the object it replaced, if any."""
        old = self._items.get(key)
        self._items[key] = obj
        if self._indexers:
            self._reindex(key, old, obj)
        return old

    def delete(self, key: ObjectKey) -> M | None:
        """Remove ``key``; returns the object removed, if any."""
        old = self._items.pop(key, None)
        if old is not None and self._indexers:
            self._reindex(key, old, None)
        return old

    def _index(self, name: str) -> dict[str, set[ObjectKey]]:
        try:
            return self._indices[name]
        except KeyError:
            raise KeyError(f"no index named {name!r}") from None

    def _reindex(self, key: ObjectKey, old: M | None, new: M | None) -> None:
        for name, fn in self._indexers.items():
            old_values = fn(old) if old is not None else ()
            new_values = fn(new) if new is not None else ()
            if old_values == new_values:
                continue
            index = self._indices[name]
            for value in old_values:
                bucket = index.get(value)
                if bucket is not None:
                    bucket.discard(key)
                    if not bucket:
                        del index[value]
            for value in new_values:
                index.setdefault(value, set()).add(key)
