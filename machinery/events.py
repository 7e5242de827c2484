"""The event recorder: core/v1 Events about objects, aggregated and written in the background.

Components report what they did ("Scheduled", "SuccessfulCreate", "Pulled")
with :meth:`EventRecorder.event`, which never blocks and never fails: it only
notes the event in a bounded in-memory table; background writers send it to
the APIServer. As client-go's recorder does:

- an event repeated with the same source, involved object, type, reason and
  message is not written again: the Event already written gets ``count``
  incremented and ``lastTimestamp`` moved (a strategic merge patch), and if it
  has expired meanwhile it is created anew under the same name;
- a new Event is named ``<object name>.<unix nanoseconds in hex>``, lives in
  the object's namespace (``default`` for cluster-scoped objects), and carries
  ``source``, ``reportingComponent`` and ``reportingInstance``;
- an Event the server rejects is dropped; one that cannot be sent because the
  server is unreachable, or answers 503, 504 or 429 (etcd down, a timeout,
  overload: client-go's REST client retries those before its recorder sees
  them), is retried with backoff, a bounded number of times (12, as
  client-go's ``maxTriesPerEvent``).

Before that, client-go's EventCorrelator (:mod:`machinery.eventcorrelation`)
merges similar Events (the same source, object, type and reason with ten
different messages in ten minutes become one ``(combined from similar
events)`` Event) and rate-limits each source's Events about each object (a
bucket of 25, one more every five minutes); what it refuses is dropped and
counted.

Repeats that happen before the first write are folded together before anything
is sent, which is where aggregation saves writes under load. The pending table
is bounded per source (1,000, client-go's per-broadcaster queue, so a process
hosting thousands of simulated kubelets holds what as many kubelets would) and
in all; beyond either, new events are dropped and counted
(``kubesim_events_dropped_total``): a component is never stalled by its events.
How many wait to be written is ``kubesim_events_pending``.

Concurrency: ``event()`` runs on the caller's task, synchronously; writes run on
the broadcaster's worker tasks (:meth:`EventBroadcaster.run`), :data:`WORKERS` of
them: in Kubernetes every kubelet writes its own Events, so a process hosting
thousands of nodes must have many writes in flight for its Events to arrive when
theirs would. With 4, a loaded APIServer taking ~0.1 s per write, the churn bench
(1,000 nodes, 6,000 Pods in a minute) ended with 20,194 Events still pending:
minutes late, and lost when the process stopped. The work queue
guarantees one aggregation key is written by one worker at a time, so counts
never race.
"""

from __future__ import annotations

import logging
import socket
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Final, Literal

import httpx
from kubernetes.client import V1ObjectReference
from pydantic import BaseModel

from machinery import metrics
from machinery.api.kinds import EVENTS, for_model
from machinery.api.meta import format_micro_time, format_time, utcnow
from machinery.api.names import is_dns1123_subdomain
from machinery.client.clock import Clock
from machinery.client.errors import (
    AlreadyExists,
    ApiError,
    NotFound,
    ServiceUnavailable,
    Timeout,
    TooManyRequests,
)
from machinery.client.objects import meta_of
from machinery.client.rest import Client, PatchType
from machinery.eventcorrelation import EventCorrelator
from machinery.workqueue import ItemExponentialFailureRateLimiter, WorkQueue, run_workers

log = logging.getLogger(__name__)

EventType = Literal["Normal", "Warning"]
NORMAL: Final = "Normal"
WARNING: Final = "Warning"

#: source.component, source.host, involvedObject (kind, namespace, name, fieldPath, uid, apiVersion),
#: type, reason, message: client-go's ``getEventKey``.
_Key = tuple[str, str, str, str, str, str, str, str, str, str, str]


@dataclass(slots=True)
class _Pending:
    """Occurrences of one event not yet written."""

    namespace: str
    involved: dict[str, Any]
    component: str
    host: str
    type: str
    reason: str
    message: str
    count: int
    first: str
    last: str
    #: MicroTime of the first occurrence: what ``kubesim trace`` orders the flow's steps by.
    event_time: str


@dataclass(frozen=True, slots=True)
class _Written:
    """What the server holds for an aggregation key: the Event's name, count and first time."""

    name: str
    count: int
    first: str


def reference_to(obj: BaseModel | V1ObjectReference) -> V1ObjectReference:
    """An ObjectReference to an API object (kind and apiVersion from the resource table)."""
    if isinstance(obj, V1ObjectReference):
        return obj
    resource = for_model(type(obj))
    if resource is None:
        raise ValueError(f"{type(obj).__name__} is not a kind kubesim serves")
    meta = getattr(obj, "metadata", None)
    if meta is None or not meta.name:
        raise ValueError(f"{type(obj).__name__} without metadata.name cannot be referenced")
    return V1ObjectReference(kind=resource.kind, api_version=resource.api_version, name=meta.name,
                             namespace=meta.namespace if resource.namespaced else None, uid=meta.uid,
                             resource_version=meta.resource_version)


class EventRecorder:
    """Records Events from one source (``component``, and ``host`` for per-node components)."""

    def __init__(self, broadcaster: EventBroadcaster, component: str, host: str = "") -> None:
        self._broadcaster = broadcaster
        self.component = component
        self.host = host

    def event(self, obj: BaseModel | V1ObjectReference, type: EventType, reason: str, message: str) -> None:
        """Note an Event about ``obj``; returns at once, the write happens in the background."""
        try:
            ref = reference_to(obj)
        except ValueError as err:
            log.error("could not construct reference, will not report event %s %s: %s", reason, message, err)
            return
        self._broadcaster._record(ref, self.component, self.host, type, reason, message)


#: Event writes in flight at once per process (see the module's docstring).
WORKERS: Final = 32


class EventBroadcaster:
    """The process's Event writer: a bounded table of pending Events and the tasks that send them.

    One per process; :meth:`recorder` hands out cheap per-source recorders.
    """

    def __init__(self, client: Client, *, max_pending: int = 65536, max_pending_per_source: int = 1000,
                 workers: int = WORKERS, max_tries: int = 12, cache_size: int = 4096, clock: Clock | None = None,
                 correlator: EventCorrelator | None = None) -> None:
        self._client = client
        self._max_pending = max_pending
        self._max_pending_per_source = max_pending_per_source
        self._per_source: dict[tuple[str, str], int] = {}
        self._clock = clock
        self._correlator = correlator or EventCorrelator()
        self._workers = workers
        self._max_tries = max_tries
        self._cache_size = cache_size
        self._pending: dict[_Key, _Pending] = {}
        self._written: OrderedDict[_Key, _Written] = OrderedDict()
        self._queue: WorkQueue[_Key] = WorkQueue(
            "events", rate_limiter=ItemExponentialFailureRateLimiter(0.5, 10.0), clock=clock)
        #: Events not written (queue full, rejected by the server, out of retries).
        self.dropped = 0
        #: Events the spam filter refused (as client-go's would have).
        self.filtered = 0
        self._dropped_full = 0

    def recorder(self, component: str, host: str = "") -> EventRecorder:
        return EventRecorder(self, component, host)

    async def run(self) -> None:
        """Write Events until cancelled; then flush what is pending for up to two seconds."""
        await run_workers(self._queue, self._write_key, workers=self._workers, drain_timeout=2.0)

    def _record(self, ref: V1ObjectReference, component: str, host: str, type: str, reason: str,
                message: str) -> None:
        source_object = (component, host, ref.kind or "", ref.namespace or "", ref.name or "",
                         ref.field_path or "", ref.uid or "", ref.api_version or "")
        log.debug("event %s %s/%s %s: %s", type, ref.kind, ref.name, reason, message)
        clock_now = self._clock.now() if self._clock is not None else time.monotonic()
        if not self._correlator.allow(source_object, clock_now):
            self._drop("spam", reason, message)
            return
        message, combined = self._correlator.aggregate((*source_object, type, reason), message, clock_now)
        # A combined Event is one per source, object, type and reason: its message is the latest one.
        key: _Key = (*source_object, type, reason, "" if combined else message)
        at = utcnow()
        now = format_time(at)
        pending = self._pending.get(key)
        if pending is not None:
            pending.count += 1
            pending.last = now
            pending.message = message
            return
        if self._queue.shutting_down:
            self._drop("shutting_down", reason, message)
            return
        source = (component, host)
        if len(self._pending) >= self._max_pending or \
                self._per_source.get(source, 0) >= self._max_pending_per_source:
            self._drop("queue_full", reason, message)
            return
        self._per_source[source] = self._per_source.get(source, 0) + 1
        metrics.EVENTS_PENDING.inc()
        self._pending[key] = _Pending(
            namespace=ref.namespace or "default",
            involved=ref.model_dump(by_alias=True, exclude_none=True, mode="json"),
            component=component, host=host, type=type, reason=reason, message=message,
            count=1, first=now, last=now, event_time=format_micro_time(at))
        self._queue.add(key)

    async def _write_key(self, key: _Key) -> None:
        pending = self._pending.pop(key, None)
        if pending is None:
            return
        metrics.EVENTS_PENDING.dec()
        self._release(pending)
        try:
            await self._write(key, pending)
        except (httpx.TransportError, ServiceUnavailable, Timeout, TooManyRequests) as err:
            # The server could not take it now (unreachable, etcd down, overloaded): keep trying,
            # as client-go does for errors that are not the server's verdict on the Event.
            if self._queue.num_requeues(key) + 1 >= self._max_tries:
                log.error("unable to write event %s (retry limit exceeded): %s", pending.reason, err)
                self._queue.forget(key)
                self._drop("retries", pending.reason, pending.message)
                return
            log.warning("unable to write event %s (may retry): %s", pending.reason, err)
            self._requeue(key, pending)
            return
        except AlreadyExists as err:
            log.debug("server rejected event %s (will not retry): %s", pending.reason, err)
            self._drop("rejected", pending.reason, pending.message)
        except ApiError as err:
            log.error("server rejected event %s (will not retry): %s", pending.reason, err)
            self._drop("rejected", pending.reason, pending.message)
        self._queue.forget(key)

    async def _write(self, key: _Key, pending: _Pending) -> None:
        seen = self._written.get(key)
        if seen is not None:
            count = seen.count + pending.count
            try:
                patched = await self._client.patch(
                    EVENTS, seen.name, {"count": count, "lastTimestamp": pending.last, "message": pending.message},
                    namespace=pending.namespace, patch_type=PatchType.STRATEGIC_MERGE)
            except NotFound:
                # The Event expired (TTL) or was deleted: write it again under the same name.
                await self._create(key, pending, seen.name, count, seen.first)
            else:
                self._remember(key, _Written(seen.name, getattr(patched, "count", None) or count, seen.first))
            return
        await self._create(key, pending, _event_name(pending.involved.get("name", "")), pending.count,
                           pending.first)

    async def _create(self, key: _Key, pending: _Pending, name: str, count: int, first: str) -> None:
        body = {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": name, "namespace": pending.namespace},
            "involvedObject": pending.involved,
            "reason": pending.reason, "message": pending.message, "type": pending.type,
            "source": {k: v for k, v in (("component", pending.component), ("host", pending.host)) if v},
            "firstTimestamp": first, "lastTimestamp": pending.last, "count": count,
            # As events.k8s.io recorders do: a precise eventTime, and then Kubernetes requires the
            # reporting controller, instance and action as well.
            "eventTime": pending.event_time, "action": pending.reason,
            "reportingComponent": pending.component, "reportingInstance": pending.host or _INSTANCE,
        }
        created = await self._client.create(EVENTS, body)
        self._remember(key, _Written(meta_of(created).name or name, getattr(created, "count", None) or count,
                                     first))

    def _remember(self, key: _Key, written: _Written) -> None:
        self._written[key] = written
        self._written.move_to_end(key)
        while len(self._written) > self._cache_size:
            self._written.popitem(last=False)

    def _release(self, pending: _Pending) -> None:
        source = (pending.component, pending.host)
        left = self._per_source.get(source, 0) - 1
        if left > 0:
            self._per_source[source] = left
        else:
            self._per_source.pop(source, None)

    def _requeue(self, key: _Key, pending: _Pending) -> None:
        newer = self._pending.get(key)
        if newer is None:
            metrics.EVENTS_PENDING.inc()
            self._pending[key] = pending
            source = (pending.component, pending.host)
            self._per_source[source] = self._per_source.get(source, 0) + 1
        else:
            newer.count += pending.count
            newer.first = pending.first
            newer.event_time = pending.event_time
        self._queue.add_rate_limited(key)

    def _drop(self, why: str, reason: str, message: str) -> None:
        metrics.EVENTS_DROPPED.labels(why).inc()
        if why == "spam":
            # The spam filter's refusals are Kubernetes' intent, not a loss: counted apart.
            self.filtered += 1
            return
        self.dropped += 1
        # One line for the first drop and one per thousand after: an overloaded recorder must not
        # also flood the log.
        if why != "queue_full":
            return
        self._dropped_full += 1
        if self._dropped_full == 1 or self._dropped_full % 1000 == 0:
            log.warning("too many pending events, dropped event %s: %s (%d dropped so far)",
                        reason, message, self._dropped_full)


#: reportingInstance for components not tied to a node: this host, as Kubernetes' recorders name it.
_INSTANCE: Final = socket.gethostname() or "localhost"


def _event_name(ref_name: str) -> str:
    """client-go's ``GenerateEventName``: ``<name>.<ns in hex>``, or a UUID when that is not a valid name."""
    name = f"{ref_name}.{time.time_ns():x}"
    if is_dns1123_subdomain(name):
        return str(uuid.uuid4())
    return name
