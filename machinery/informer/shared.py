"""Shared informers: one list+watch per resource per process, one cache, many handlers.

A :class:`SharedInformer` consumes its reflector's stream and keeps a
:class:`~machinery.informer.store.Store` equal to the server's state, calling
every registered handler on each change:

- a watch ADDED or MODIFIED calls ``on_add`` if the key is new, else ``on_update(old, new)``;
- a watch DELETED calls ``on_delete`` with the object's final state;
- a (re)list is compared with the store: new keys call ``on_add``, changed
  resourceVersions call ``on_update``, and keys that vanished while the watch
  was down call ``on_delete`` with a :class:`DeletedFinalStateUnknown`
  tombstone holding the last state known.

Handlers are plain functions, called on the informer's task right after the
store changed, so a handler reading the store sees the change. They must be
quick (the controllers' handlers only enqueue keys); one that raises is logged
and does not stop the informer or the other handlers. A handler added after
the informer has objects first gets ``on_add`` for each of them.

:class:`InformerFactory` hands out one informer per (resource, namespace,
selectors) and runs them all as named, supervised tasks of one task group.

Concurrency: the informer's task is the only writer of its store; everything
runs on the event loop's thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast

from pydantic import BaseModel

from machinery.api.kinds import ObjectKey
from machinery.client.clock import Clock
from machinery.client.objects import Transform, TypedResource, key_of, resource_version_of
from machinery.client.rest import Client
from machinery.client.watch import Bookmark, WatchEvent
from machinery.informer.reflector import Item, Listed, Reflector
from machinery.informer.store import IndexFunc, Store

log = logging.getLogger(__name__)

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True, slots=True)
class DeletedFinalStateUnknown(Generic[M]):
    """An object that was deleted while the watch was down: ``obj`` is the last state seen."""

    key: ObjectKey
    obj: M


OnAdd = Callable[[M], None]
OnUpdate = Callable[[M, M], None]
OnDelete = Callable[[M | DeletedFinalStateUnknown[M]], None]


@dataclass(frozen=True, slots=True)
class _Handler(Generic[M]):
    on_add: OnAdd[M] | None
    on_update: OnUpdate[M] | None
    on_delete: OnDelete[M] | None


class SharedInformer(Generic[M]):
    """A cache of one resource kept in sync by list+watch, with change handlers.

    Get one from :meth:`InformerFactory.informer` so the process shares it.
    """

    def __init__(self, client: Client, resource: TypedResource[M], *, namespace: str | None = None,
                 label_selector: str | None = None, field_selector: str | None = None,
                 indexers: Mapping[str, IndexFunc[M]] | None = None, clock: Clock | None = None,
                 reflector: Reflector[M] | None = None, transform: Transform | None = None) -> None:
        self.resource = resource
        self.store: Store[M] = Store(indexers)
        self._reflector = reflector or Reflector(client, resource, namespace=namespace,
                                                 label_selector=label_selector,
                                                 field_selector=field_selector, clock=clock, transform=transform)
        self._handlers: list[_Handler[M]] = []
        self._synced = asyncio.Event()

    @property
    def has_synced(self) -> bool:
        """True once the first full list is in the store (and its handlers were called)."""
        return self._synced.is_set()

    async def wait_synced(self) -> None:
        await self._synced.wait()

    @property
    def last_sync_resource_version(self) -> str:
        return self._reflector.last_sync_resource_version

    def add_indexers(self, indexers: Mapping[str, IndexFunc[M]]) -> None:
        self.store.add_indexers(indexers)

    def add_handler(self, *, on_add: OnAdd[M] | None = None, on_update: OnUpdate[M] | None = None,
                    on_delete: OnDelete[M] | None = None) -> None:
        """Register handlers; if the store already holds objects, ``on_add`` is called for each now."""
        handler = _Handler(on_add, on_update, on_delete)
        self._handlers.append(handler)
        if on_add is not None:
            for obj in self.store.list():
                self._call(on_add, obj)

    async def run(self) -> None:
        """Keep the store in sync until cancelled."""
        log.info("starting informer for %s", self._reflector.name, extra={"step": 1})
        async with contextlib.aclosing(self._reflector.stream()) as stream:
            async for item in stream:
                self._apply(item)

    # --- applying the stream -----------------------------------------------------------------

    def _apply(self, item: Item[M]) -> None:
        if isinstance(item, WatchEvent):
            self._apply_event(item)
        elif isinstance(item, Listed):
            self._replace(item.items)
            self._synced.set()
        else:
            assert isinstance(item, Bookmark)

    def _apply_event(self, event: WatchEvent[M]) -> None:
        obj = event.object
        key = key_of(obj)
        if event.type == "DELETED":
            if self.store.delete(key) is not None:
                self._notify_delete(obj)
            return
        old = self.store.upsert(key, obj)
        if old is None:
            self._notify_add(obj)
        else:
            self._notify_update(old, obj)

    def _replace(self, items: list[M]) -> None:
        listed: set[ObjectKey] = set()
        for obj in items:
            key = key_of(obj)
            listed.add(key)
            old = self.store.get(key)
            if old is not None and resource_version_of(old) == resource_version_of(obj):
                continue
            self.store.upsert(key, obj)
            if old is None:
                self._notify_add(obj)
            else:
                self._notify_update(old, obj)
        for key in self.store.list_keys():
            if key not in listed:
                last = self.store.delete(key)
                if last is not None:
                    self._notify_delete(DeletedFinalStateUnknown(key, last))

    def _notify_add(self, obj: M) -> None:
        for h in self._handlers:
            if h.on_add is not None:
                self._call(h.on_add, obj)

    def _notify_update(self, old: M, new: M) -> None:
        for h in self._handlers:
            if h.on_update is not None:
                self._call(h.on_update, old, new)

    def _notify_delete(self, obj: M | DeletedFinalStateUnknown[M]) -> None:
        for h in self._handlers:
            if h.on_delete is not None:
                self._call(h.on_delete, obj)

    def _call(self, fn: Callable[..., None], *args: Any) -> None:
        try:
            fn(*args)
        except Exception:
            log.exception("%s: event handler %s failed", self._reflector.name, getattr(fn, "__qualname__", fn))


_InformerKey = tuple[str, str, str | None, str | None, str | None]


class InformerFactory:
    """One shared informer per (resource, namespace, selectors) in the process, run together.

    Informers asked for while :meth:`run` is running start at once; the others
    start when it does.
    """

    def __init__(self, client: Client, *, clock: Clock | None = None, transform: Transform | None = None) -> None:
        self._client = client
        self._clock = clock
        #: What every informer does to each object before decoding it (``WithTransform``).
        self._transform = transform
        self._informers: dict[_InformerKey, SharedInformer[Any]] = {}
        self._group: asyncio.TaskGroup | None = None

    def informer(self, resource: TypedResource[M], *, namespace: str | None = None,
                 label_selector: str | None = None, field_selector: str | None = None,
                 indexers: Mapping[str, IndexFunc[M]] | None = None) -> SharedInformer[M]:
        """The shared informer for this resource; ``indexers`` are added to it if missing."""
        key = (resource.api_version, resource.plural, namespace, label_selector, field_selector)
        informer = cast("SharedInformer[M] | None", self._informers.get(key))
        if informer is None:
            informer = SharedInformer(self._client, resource, namespace=namespace,
                                      label_selector=label_selector, field_selector=field_selector,
                                      clock=self._clock, transform=self._transform)
            self._informers[key] = informer
            if self._group is not None:
                self._start(informer)
        if indexers:
            missing = {n: f for n, f in indexers.items() if not informer.store.has_index(n)}
            informer.add_indexers(missing)
        return informer

    def existing(self, resource: TypedResource[Any]) -> SharedInformer[Any] | None:
        """The informer of the whole resource (no namespace or selectors) if one was asked for already."""
        return self._informers.get((resource.api_version, resource.plural, None, None, None))

    @property
    def has_synced(self) -> bool:
        return all(i.has_synced for i in self._informers.values())

    async def wait_for_cache_sync(self) -> None:
        """Wait until every informer asked for so far has synced."""
        for informer in list(self._informers.values()):
            await informer.wait_synced()

    async def run(self) -> None:
        """Run every informer until cancelled; an informer's crash cancels the others and propagates."""
        if self._group is not None:
            raise RuntimeError("InformerFactory.run is already running")
        try:
            async with asyncio.TaskGroup() as group:
                self._group = group
                for informer in self._informers.values():
                    self._start(informer)
                # The group lives until cancelled, even when no informer was asked for yet.
                await asyncio.Event().wait()
        finally:
            self._group = None

    def _start(self, informer: SharedInformer[Any]) -> None:
        assert self._group is not None
        resource = informer.resource
        self._group.create_task(informer.run(), name=f"informer-{resource.group_resource}")
