"""The reflector: list, then watch from the list's resourceVersion, forever.

Three small async generators, stacked (as kopf does):

- :meth:`Reflector.stream` reconnects forever, backing off with jitter
  (800 ms doubling to 30 s, reset after two quiet minutes: client-go's numbers);
- ``_list_and_watch`` lists once, yields a :class:`Listed` marker holding the
  whole list, then watches from the list's resourceVersion, re-watching from the
  last version seen whenever a watch ends (each watch asks for a random
  server-side timeout between 5 and 10 minutes, to spread reconnections);
- ``client.watch`` is one watch request.

Versions, as client-go chooses them: the first list asks for ``resourceVersion=0``
(the APIServer's watch cache), a relist after a failure asks for the last
version seen, and if that version is gone (410) the list is retried at once
with ``resourceVersion=""`` (a consistent read). A watch that answers 410
(compaction) ends the watch and leads to a relist; a refused connection or a
429 backs off and re-watches without relisting; a broken stream re-watches
from the last version seen.

Concurrency: the stream is consumed by one task (the informer's). The version
is updated as each item is yielded, so when the consumer asks for the next item
the previous one has been applied.
"""

from __future__ import annotations

import contextlib
import logging
import random
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Generic, TypeVar

import httpx
from pydantic import BaseModel

from machinery import metrics
from machinery.client.backoff import ExponentialBackoff
from machinery.client.clock import Clock, RealClock
from machinery.client.errors import ApiError, Gone, Timeout, TooManyRequests, UnexpectedResponse
from machinery.client.objects import ObjectList, Transform, TypedResource
from machinery.client.rest import Client
from machinery.client.watch import Bookmark, WatchEvent

log = logging.getLogger(__name__)

M = TypeVar("M", bound=BaseModel)

_PAGE_SIZE = 500
#: A watch that ends sooner than this without a single event counts as a failure (client-go's rule).
_SHORT_WATCH = 1.0


@dataclass(frozen=True, slots=True)
class Listed(Generic[M]):
    """A full list: the state of the world at ``resource_version``; the informer replaces its store with it."""

    items: list[M]
    resource_version: str


Item = Listed[M] | WatchEvent[M] | Bookmark


class Reflector(Generic[M]):
    """Lists and watches one resource (optionally one namespace, filtered by selectors)."""

    def __init__(self, client: Client, resource: TypedResource[M], *, namespace: str | None = None,
                 label_selector: str | None = None, field_selector: str | None = None,
                 min_watch_timeout: float = 300.0, backoff: ExponentialBackoff | None = None,
                 clock: Clock | None = None, transform: Transform | None = None) -> None:
        self._client = client
        self._transform = transform
        self._resource = resource
        self._namespace = namespace
        self._label_selector = label_selector
        self._field_selector = field_selector
        self._min_watch_timeout = min_watch_timeout
        self._clock = clock or RealClock()
        self._backoff = backoff or ExponentialBackoff(0.8, 30.0, factor=2.0, jitter=1.0, reset_after=120.0,
                                                      clock=self._clock)
        self._rv_unavailable = False
        self.name = resource.group_resource + (f" in {namespace}" if namespace else "")
        #: The version of the last list, event or bookmark seen: where the next watch starts.
        self.last_sync_resource_version = ""

    async def stream(self) -> AsyncGenerator[Item[M], None]:
        """Lists and watch events, forever; never raises (failures are logged and retried)."""
        while True:
            try:
                async with contextlib.aclosing(self._list_and_watch()) as items:
                    async for item in items:
                        yield item
            except (ApiError, httpx.TransportError, UnexpectedResponse) as err:
                log.warning("%s: list and watch failed: %s", self.name, _describe(err))
            except Exception:
                log.exception("%s: list and watch failed unexpectedly", self.name)
            await self._clock.sleep(self._backoff.next())

    async def _list_and_watch(self) -> AsyncGenerator[Item[M], None]:
        listed = await self._list()
        self.last_sync_resource_version = listed.resource_version
        yield Listed(listed.items, listed.resource_version)
        while True:
            timeout = int(self._min_watch_timeout * (1.0 + random.random()))
            started = self._clock.now()
            seen = 0
            try:
                async with contextlib.aclosing(self._client.watch(
                        self._resource, namespace=self._namespace, label_selector=self._label_selector,
                        field_selector=self._field_selector, timeout_seconds=timeout,
                        resource_version=self.last_sync_resource_version, transform=self._transform)) as events:
                    async for event in events:
                        seen += 1
                        if event.resource_version:
                            self.last_sync_resource_version = event.resource_version
                        yield event
            except (httpx.ConnectError, TooManyRequests) as err:
                # The server is away or busy: wait, then watch again from where we were.
                log.info("%s: watch failed, backing off: %s", self.name, _describe(err))
                await self._clock.sleep(self._backoff.next())
                continue
            except Gone as err:
                log.info("%s: watch closed (%s); relisting", self.name, err)
                return
            except httpx.TransportError as err:
                # The stream broke (server restarted, connection reset): resume from the last version.
                log.info("%s: watch stream broke (%s); watching again from %s", self.name, _describe(err),
                         self.last_sync_resource_version)
            if seen == 0 and self._clock.now() - started < _SHORT_WATCH:
                raise UnexpectedResponse("very short watch: the watch ended at once without any event")

    async def _list(self) -> ObjectList[M]:
        metrics.INFORMER_LISTS.labels(self._resource.group_resource).inc()
        rv = self._relist_resource_version()
        try:
            result = await self._list_at(rv)
        except (Gone, Timeout) as err:
            if isinstance(err, Timeout) and not err.has_cause("ResourceVersionTooLarge"):
                raise
            # The version is compacted away (or not yet known): read the latest, consistently.
            log.info("%s: list at resourceVersion %r failed (%s); listing the latest", self.name, rv, err)
            self._rv_unavailable = True
            result = await self._list_at("")
        self._rv_unavailable = False
        log.info("%s: listed %d objects at resourceVersion %s", self.name, len(result.items),
                 result.resource_version, extra={"step": 1})
        return result

    async def _list_at(self, rv: str) -> ObjectList[M]:
        # A list at a specific version is served whole from the watch cache (client-go drops the
        # page size there); "0" ignores the limit server-side anyway; "" pages through etcd.
        limit = _PAGE_SIZE if rv in ("", "0") else None
        return await self._client.list(self._resource, namespace=self._namespace,
                                       label_selector=self._label_selector,
                                       field_selector=self._field_selector, resource_version=rv, limit=limit,
                                       transform=self._transform)

    def _relist_resource_version(self) -> str:
        if self._rv_unavailable:
            return ""
        return self.last_sync_resource_version or "0"


def _describe(err: BaseException) -> str:
    return f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
