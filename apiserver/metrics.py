"""The APIServer's ``/metrics``: requests by kind, and the CPU each kind of request costs.

kube-apiserver counts its requests (``apiserver_request_total`` by verb,
group, resource, subresource and code); kubesim does the same, and also
measures where its one core goes, because that is what bounds its speed:

- ``kubesim_apiserver_request_cpu_seconds_total``: the CPU the request's own
  code used, from routing to the last byte of its answer, by verb, group,
  resource and subresource. It is measured precisely despite the event loop
  interleaving requests: :func:`cpu_timed` adds up the thread CPU time of each
  step of the request's coroutine, and only those;
- ``apiserver_watch_cache_consistent_read_total``: consistent lists served
  from the watch cache (kube-apiserver's own counter);
- ``kubesim_apiserver_watch_fanout_cpu_seconds_total``: the watch caches'
  work of applying etcd's events and queueing them for every watcher, by
  resource (the watchers' own streaming is counted as their ``watch`` requests).

What neither counts (the HTTP server's parsing, the gRPC client's own work,
garbage collection) is the process's CPU minus their sum: the benchmarks read
it from /proc.

Counters only; everything runs on the APIServer's event loop.
"""

from __future__ import annotations

import time
from collections.abc import Coroutine, Generator
from typing import Any, Final, TypeVar

from prometheus_client import Counter

T = TypeVar("T")

REQUESTS: Final = Counter("apiserver_request_total", "Requests served, by verb, resource and answer code.",
                          ["verb", "group", "resource", "subresource", "code"])
REQUEST_CPU: Final = Counter("kubesim_apiserver_request_cpu_seconds_total",
                             "CPU seconds the requests' own code used, from routing to the last byte sent.",
                             ["verb", "group", "resource", "subresource"])
WATCH_FANOUT_CPU: Final = Counter("kubesim_apiserver_watch_fanout_cpu_seconds_total",
                                  "CPU seconds the watch caches spent applying etcd's events and queueing them "
                                  "for their watchers.", ["resource"])
#: kube-apiserver 1.32's counter of consistent lists served from the watch cache: ``resource`` is the
#: resource's etcd prefix (``/pods``), ``fallback`` says the cache did not catch up in time and etcd answered.
CONSISTENT_READS: Final = Counter("apiserver_watch_cache_consistent_read", "Counter for consistent reads from cache.",
                                  ["resource", "success", "fallback"])


class CPUTimer:
    """Thread CPU seconds, summed over the steps of the coroutines run through :meth:`run`.

    With a ``counter`` (a Prometheus counter child), the seconds are added to it as they accrue, at
    least every 10 ms of CPU, so that a request that lasts (a watch) shows its cost while it runs.
    """

    __slots__ = ("counter", "flushed", "seconds")

    def __init__(self) -> None:
        self.seconds = 0.0
        self.flushed = 0.0
        self.counter: Any = None

    async def run(self, coro: Coroutine[Any, Any, T]) -> T:
        result: T = await _Stepped(coro, self)
        return result

    def flush(self) -> None:
        if self.counter is not None and self.seconds > self.flushed:
            self.counter.inc(self.seconds - self.flushed)
            self.flushed = self.seconds


class _Stepped:
    """An awaitable that runs a coroutine step by step, timing each step on the thread's CPU clock."""

    __slots__ = ("coro", "timer")

    def __init__(self, coro: Coroutine[Any, Any, Any], timer: CPUTimer) -> None:
        self.coro = coro
        self.timer = timer

    def __await__(self) -> Generator[Any, Any, Any]:
        coro, timer, clock = self.coro, self.timer, time.thread_time
        value: Any = None
        error: BaseException | None = None
        while True:
            started = clock()
            try:
                yielded = coro.throw(error) if error is not None else coro.send(value)
            except StopIteration as done:
                timer.seconds += clock() - started
                return done.value
            except BaseException:
                timer.seconds += clock() - started
                raise
            timer.seconds += clock() - started
            if timer.seconds - timer.flushed > 0.01:
                timer.flush()
            try:
                value, error = (yield yielded), None
            except BaseException as e:  # noqa: BLE001 - thrown in (a cancellation): the coroutine gets it
                value, error = None, e


def record(timer: CPUTimer, verb: str, group: str, resource: str, subresource: str, code: int) -> None:
    """Count one finished request, and the CPU its timer has not yet added."""
    REQUESTS.labels(verb, group, resource, subresource, str(code)).inc()
    if timer.counter is None:
        timer.counter = REQUEST_CPU.labels(verb, group, resource, subresource)
    timer.flush()
