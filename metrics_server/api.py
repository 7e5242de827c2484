"""metrics-server's HTTP API: ``metrics.k8s.io/v1beta1`` NodeMetrics and PodMetrics, and discovery.

Paths (what the APIServer's aggregation layer forwards, unchanged):

- ``/apis``, ``/apis/metrics.k8s.io``, ``/apis/metrics.k8s.io/v1beta1``:
  APIGroupList, APIGroup, APIResourceList (``nodes`` and ``pods``, get and list);
- ``/apis/metrics.k8s.io/v1beta1/nodes[/{name}]``, ``.../pods``,
  ``.../namespaces/{ns}/pods[/{name}]``, with ``labelSelector``: the objects
  metrics-server serves (cpu in nanocores, memory in Ki, the sample's
  ``timestamp`` and ``window``, the node's or Pod's labels; ``creationTimestamp``
  is now, as metrics-server sets it);
- errors as Kubernetes Status bodies: ``nodemetrics.metrics.k8s.io "x" not
  found`` (404), a bad label selector (400);
- ``/healthz``, ``/livez``, ``/readyz`` (ready after a first scrape).

HTTP/1.1 with keep-alive on asyncio streams: the aggregator keeps its
connections open, and the API needs nothing a framework would add.

Concurrency: one task per connection (:class:`~machinery.httpstream.listener.Listener`),
reading the storage and the informer caches without awaiting in between;
:meth:`MetricsAPI.close` ends the keep-alive connections still open.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from collections.abc import Callable, Mapping
from typing import Any, Final
from urllib.parse import unquote

import orjson

from machinery.api.labels import Selector, SelectorError
from machinery.api.meta import format_time
from machinery.api.quantity import format_quantity
from machinery.httpstream.http1 import HeadError, read_request_head, simple_response
from machinery.httpstream.listener import Listener
from metrics_server.storage import Storage, Usage

log = logging.getLogger("metrics_server.api")

GROUP: Final = "metrics.k8s.io"
VERSION: Final = "v1beta1"
GROUP_VERSION: Final = f"{GROUP}/{VERSION}"
_KEEP_ALIVE: Final = 120.0

RESOURCES: Final = [
    {"name": "nodes", "singularName": "", "namespaced": False, "kind": "NodeMetrics", "verbs": ["get", "list"]},
    {"name": "pods", "singularName": "", "namespaced": True, "kind": "PodMetrics", "verbs": ["get", "list"]},
]

Json = dict[str, Any]
#: (name, labels) of the objects the informers know, by key (``name`` or ``namespace/name``).
LabelsOf = Callable[[str], Mapping[str, str] | None]


def _status(code: int, reason: str, message: str, details: Json | None = None) -> Json:
    status: Json = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
                    "reason": reason, "code": code}
    if details:
        status["details"] = details
    return status


def go_duration(seconds: float) -> str:
    """Go's Duration.String() to milliseconds (``15.012s``, ``1m0.5s``)."""
    millis = round(seconds * 1000)
    minutes, millis = divmod(millis, 60_000)
    whole, frac = divmod(millis, 1000)
    text = f"{whole}.{frac:03d}".rstrip("0").rstrip(".") + "s"
    return f"{minutes}m{text}" if minutes else text


def cpu_quantity(nano_cores: int) -> str:
    return f"{max(nano_cores, 0)}n"


def memory_quantity(memory: int) -> str:
    """metrics-server's BinarySI quantity of a working set (page-aligned sizes print in ``Ki``)."""
    if memory > 0 and memory % 1024 == 0:
        return f"{memory // 1024}Ki"
    return format_quantity(max(memory, 0) * 1000, "memory")


def _stamp(seconds: float) -> str:
    return format_time(dt.datetime.fromtimestamp(seconds, dt.UTC))


class MetricsAPI:
    def __init__(self, storage: Storage, *, node_labels: LabelsOf, pod_labels: LabelsOf,
                 ready: Callable[[], bool]) -> None:
        self._storage = storage
        self._node_labels = node_labels
        self._pod_labels = pod_labels
        self._ready = ready
        self._listener = Listener(self._serve)

    async def start(self, host: str, port: int) -> int:
        bound = await self._listener.start(host, port)
        log.info("serving %s on http://%s:%d", GROUP_VERSION, host, bound)
        return bound

    async def close(self) -> None:
        await self._listener.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                try:
                    head = await read_request_head(reader, timeout=_KEEP_ALIVE)
                except (HeadError, TimeoutError):
                    return
                length = int(head.headers.get("content-length") or 0)
                if length:
                    await reader.readexactly(min(length, 1 << 20))
                code, body, content_type = self.answer(head.method, head.path, dict(head.query()))
                close = (head.headers.get("connection") or "").lower() == "close" or head.version == "HTTP/1.0"
                writer.write(simple_response(code, body, content_type=content_type, close=close))
                await writer.drain()
                if close:
                    return
        except (ConnectionError, asyncio.IncompleteReadError):
            pass

    # --- routing ------------------------------------------------------------------------------------

    def answer(self, method: str, path: str, query: Mapping[str, str]) -> tuple[int, bytes, str]:
        try:
            code, body = self._route(method, [unquote(p) for p in path.strip("/").split("/") if p], query)
        except SelectorError as err:
            code, body = 400, _status(400, "BadRequest", f"unable to parse requirement: {err}")
        if isinstance(body, bytes):
            return code, body, "text/plain; charset=utf-8"
        return code, orjson.dumps(body), "application/json"

    def _route(self, method: str, parts: list[str], query: Mapping[str, str]) -> tuple[int, Json | bytes]:
        if parts in (["healthz"], ["livez"]):
            return 200, b"ok"
        if parts == ["readyz"]:
            return (200, b"ok") if self._ready() else (500, b"readyz check failed: metric-storage-ready")
        if method != "GET":
            return 405, _status(405, "MethodNotAllowed", "the server does not allow this method on the requested "
                                                         "resource")
        if parts == ["apis"]:
            return 200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": [self._group()]}
        if parts == ["apis", GROUP]:
            return 200, {"kind": "APIGroup", "apiVersion": "v1", **self._group()}
        if parts == ["apis", GROUP, VERSION]:
            return 200, {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": GROUP_VERSION,
                         "resources": RESOURCES}
        if parts[:3] != ["apis", GROUP, VERSION]:
            return 404, _status(404, "NotFound", "the server could not find the requested resource")
        rest = parts[3:]
        selector = Selector.parse(query.get("labelSelector", ""))
        if rest == ["nodes"]:
            return 200, self._list("NodeMetricsList", self._nodes(selector))
        if len(rest) == 2 and rest[0] == "nodes":
            item = self._node(rest[1])
            if item is None:
                return 404, self._not_found("nodemetrics", rest[1])
            return 200, item
        if rest == ["pods"]:
            return 200, self._list("PodMetricsList", self._pods(None, selector))
        if len(rest) == 3 and rest[0] == "namespaces" and rest[2] == "pods":
            return 200, self._list("PodMetricsList", self._pods(rest[1], selector))
        if len(rest) == 4 and rest[0] == "namespaces" and rest[2] == "pods":
            item = self._pod(rest[1], rest[3])
            if item is None:
                return 404, self._not_found("podmetrics", rest[3])
            return 200, item
        return 404, _status(404, "NotFound", "the server could not find the requested resource")

    @staticmethod
    def _group() -> Json:
        version = {"groupVersion": GROUP_VERSION, "version": VERSION}
        return {"name": GROUP, "versions": [version], "preferredVersion": version}

    @staticmethod
    def _list(kind: str, items: list[Json]) -> Json:
        return {"kind": kind, "apiVersion": GROUP_VERSION, "metadata": {}, "items": items}

    @staticmethod
    def _not_found(resource: str, name: str) -> Json:
        return _status(404, "NotFound", f'{resource}.{GROUP} "{name}" not found',
                       {"name": name, "group": GROUP, "kind": resource})

    # --- objects ------------------------------------------------------------------------------------

    def _node_item(self, name: str, usage: Usage, labels: Mapping[str, str]) -> Json:
        return {"kind": "NodeMetrics", "apiVersion": GROUP_VERSION,
                "metadata": {"name": name, "creationTimestamp": _stamp(usage.timestamp), "labels": dict(labels)},
                "timestamp": _stamp(usage.timestamp), "window": go_duration(usage.window),
                "usage": {"cpu": cpu_quantity(usage.nano_cores), "memory": memory_quantity(usage.memory)}}

    def _node(self, name: str) -> Json | None:
        labels = self._node_labels(name)
        usage = self._storage.node_usage(name)
        if labels is None or usage is None:
            return None
        return self._node_item(name, usage, labels)

    def _nodes(self, selector: Selector) -> list[Json]:
        items = []
        for name in sorted(self._storage.nodes):
            labels = self._node_labels(name)
            usage = self._storage.node_usage(name)
            if labels is not None and usage is not None and selector.matches(labels):
                items.append(self._node_item(name, usage, labels))
        return items

    def _pod_item(self, namespace: str, name: str, usages: Mapping[str, Usage], labels: Mapping[str, str]) -> Json:
        latest = max(usages.values(), key=lambda u: u.timestamp)
        return {"kind": "PodMetrics", "apiVersion": GROUP_VERSION,
                "metadata": {"name": name, "namespace": namespace, "creationTimestamp": _stamp(latest.timestamp),
                             "labels": dict(labels)},
                "timestamp": _stamp(latest.timestamp), "window": go_duration(latest.window),
                "containers": [{"name": c, "usage": {"cpu": cpu_quantity(u.nano_cores),
                                                      "memory": memory_quantity(u.memory)}}
                               for c, u in sorted(usages.items())]}

    def _pod(self, namespace: str, name: str) -> Json | None:
        labels = self._pod_labels(f"{namespace}/{name}")
        usages = self._storage.pod_usage(namespace, name)
        if labels is None or usages is None:
            return None
        return self._pod_item(namespace, name, usages, labels)

    def _pods(self, namespace: str | None, selector: Selector) -> list[Json]:
        items = []
        for ns, name in sorted(self._storage.pods):
            if namespace is not None and ns != namespace:
                continue
            labels = self._pod_labels(f"{ns}/{name}")
            usages = self._storage.pod_usage(ns, name)
            if labels is not None and usages is not None and selector.matches(labels):
                items.append(self._pod_item(ns, name, usages, labels))
        return items
