"""client-go's EventCorrelator: similar Events merged, and each object's Events rate-limited per source.

Two of its three parts live here (the third, writing a repeated Event as a
``count`` increment, is the recorder's own, in :mod:`machinery.events`):

- **aggregation** (``EventAggregator``): Events of one source about one
  object with the same type and reason but different messages are similar.
  Once 10 distinct messages have been seen within 10 minutes, further similar
  Events are written as one Event whose message reads ``(combined from
  similar events): <the latest message>`` and whose count grows, instead of a
  new Event each;
- **the spam filter** (``EventSourceObjectSpamFilter``): each (source, object)
  pair has a token bucket of 25 Events, refilled at one per 5 minutes; an
  Event beyond it is dropped.

With these, a process hosting thousands of simulated kubelets writes what as
many kubelets would, no more: each node is its own source, with its own
buckets.

Pure bookkeeping, bounded (least recently used entries are forgotten); owned
by the recorder's caller task, no locking.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Final

#: client-go's defaults.
MAX_SIMILAR: Final = 10
MAX_INTERVAL_SECONDS: Final = 600.0
SPAM_BURST: Final = 25
SPAM_QPS: Final = 1.0 / 300.0
CACHE_SIZE: Final = 4096
COMBINED_PREFIX: Final = "(combined from similar events): "

#: The Event's source and object and its type and reason: what similar Events share.
AggregateKey = tuple[str, ...]
#: The Event's source and object: what one spam bucket covers.
SourceObjectKey = tuple[str, ...]


@dataclass(slots=True)
class _Aggregate:
    messages: set[str] = field(default_factory=set)
    last: float = 0.0


@dataclass(slots=True)
class _Bucket:
    tokens: float
    at: float


class EventCorrelator:
    """Decides, for each Event a component reports, whether and under what message it is written."""

    def __init__(self, *, max_similar: int = MAX_SIMILAR, max_interval: float = MAX_INTERVAL_SECONDS,
                 burst: int = SPAM_BURST, qps: float = SPAM_QPS, cache_size: int = CACHE_SIZE) -> None:
        self.max_similar = max_similar
        self.max_interval = max_interval
        self.burst = burst
        self.qps = qps
        self.cache_size = cache_size
        self._aggregates: OrderedDict[AggregateKey, _Aggregate] = OrderedDict()
        self._buckets: OrderedDict[SourceObjectKey, _Bucket] = OrderedDict()

    def allow(self, source_object: SourceObjectKey, now: float) -> bool:
        """The spam filter: take one token from the (source, object) bucket, or refuse."""
        bucket = self._buckets.get(source_object)
        if bucket is None:
            bucket = self._buckets[source_object] = _Bucket(float(self.burst), now)
        else:
            bucket.tokens = min(float(self.burst), bucket.tokens + (now - bucket.at) * self.qps)
            bucket.at = now
            self._buckets.move_to_end(source_object)
        self._trim(self._buckets)
        if bucket.tokens < 1.0:
            return False
        bucket.tokens -= 1.0
        return True

    def aggregate(self, key: AggregateKey, message: str, now: float) -> tuple[str, bool]:
        """The message to write, and whether it is the combined one (then the Event is one per ``key``)."""
        record = self._aggregates.get(key)
        if record is None or now - record.last > self.max_interval:
            record = self._aggregates[key] = _Aggregate()
        else:
            self._aggregates.move_to_end(key)
        self._trim(self._aggregates)
        record.last = now
        record.messages.add(message)
        if len(record.messages) < self.max_similar:
            return message, False
        return COMBINED_PREFIX + message, True

    def _trim(self, cache: OrderedDict[tuple[str, ...], Any]) -> None:
        while len(cache) > self.cache_size:
            cache.popitem(last=False)
