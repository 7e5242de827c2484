"""The controller base: informer handlers enqueue keys, workers run ``sync(key)``.

Every Kubernetes controller has the same skeleton, and so do kubesim's:

- informer handlers only compute the object's key and :meth:`Controller.enqueue` it;
- ``workers`` tasks each take a key from the :class:`~machinery.workqueue.WorkQueue`
  (which never hands one key to two workers), run :meth:`Controller.sync`
  against the informers' caches, then ``forget`` the key on success or
  ``add_rate_limited`` it on failure (5 ms doubling to 1,000 s per key, with an
  overall token bucket) and log the error;
- workers start only after every informer the controller reads has synced, so
  ``sync`` never acts on a half-filled cache.

``sync`` must be idempotent: a key is synced again after every change and after
every failure, and it must read the current state rather than trust the event
that enqueued it.

Concurrency: up to ``workers`` syncs run at once, never two for the same key.
:meth:`Controller.run` owns the worker tasks; cancelling it lets syncs in
progress finish (for a few seconds at most) and then cancels them.
"""

from __future__ import annotations

import abc
import logging
from collections.abc import Sequence
from typing import Any

import httpx
from pydantic import BaseModel

from machinery.api.kinds import ObjectKey
from machinery.client.clock import Clock
from machinery.client.errors import ApiError
from machinery.client.objects import key_of
from machinery.informer.shared import DeletedFinalStateUnknown, SharedInformer
from machinery.workqueue import WorkQueue, run_workers

log = logging.getLogger(__name__)


class Controller(abc.ABC):
    """Subclass it, wire informer handlers to :meth:`enqueue`, implement :meth:`sync`, await :meth:`run`.

    >>> class ReplicationManager(Controller):
    ...     def __init__(self, factory: InformerFactory, client: Client) -> None:
    ...         rcs = factory.informer(REPLICATION_CONTROLLERS)
    ...         super().__init__("replicationmanager", informers=[rcs], workers=5)
    ...         rcs.add_handler(on_add=self.enqueue, on_update=lambda old, new: self.enqueue(new),
    ...                         on_delete=self.enqueue)
    ...     async def sync(self, key: ObjectKey) -> None: ...
    """

    def __init__(self, name: str, *, informers: Sequence[SharedInformer[Any]] = (), workers: int = 1,
                 drain_timeout: float = 3.0, clock: Clock | None = None) -> None:
        self.name = name
        self.queue: WorkQueue[ObjectKey] = WorkQueue(name, clock=clock)
        self._informers = tuple(informers)
        self._workers = workers
        self._drain_timeout = drain_timeout

    @abc.abstractmethod
    async def sync(self, key: ObjectKey) -> None:
        """Bring the world in line with the object at ``key`` (which may no longer exist)."""

    def enqueue(self, obj: BaseModel | DeletedFinalStateUnknown[Any]) -> None:
        """Queue the key of an object or of a deletion tombstone (usable directly as a handler)."""
        self.queue.add(obj.key if isinstance(obj, DeletedFinalStateUnknown) else key_of(obj))

    async def run(self) -> None:
        """Wait for the informers to sync, then run the workers until cancelled."""
        for informer in self._informers:
            await informer.wait_synced()
        log.info("%s: caches synced, starting %d workers", self.name, self._workers)
        await run_workers(self.queue, self._process, workers=self._workers, drain_timeout=self._drain_timeout)

    async def _process(self, key: ObjectKey) -> None:
        try:
            await self.sync(key)
        except (ApiError, httpx.TransportError) as err:
            log.warning("%s: error syncing %s, requeuing: %s", self.name, key, err)
            self.queue.add_rate_limited(key)
        except Exception:
            log.exception("%s: error syncing %s, requeuing", self.name, key)
            self.queue.add_rate_limited(key)
        else:
            self.queue.forget(key)
