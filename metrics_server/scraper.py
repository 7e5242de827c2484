"""The scrape loop: every ``--metric-resolution``, each node's ``/metrics/resource``, all at once.

As metrics-server's ``scraper``: every node the Node informer holds is asked
for its resource metrics at its kubelet (``--kubelet-preferred-address-types``,
InternalIP first, and ``daemonEndpoints.kubeletEndpoint.Port``), at most
``--kubelet-request-concurrency`` at a time, each within
``--kubelet-request-timeout``. A node that does not answer loses its samples
(its NodeMetrics disappear until it answers again), as in metrics-server.

kubelet_sim serves many nodes on one port, so the path names the node
(``/nodes/{name}/metrics/resource``); see :mod:`kubelet_sim.server`.

The cycle's duration is recorded in ``metrics_server_manager_tick_duration_seconds``
and logged, since it bounds how fresh metrics can be (``kubesim bench`` reads it).

Concurrency: one task runs the cycles; each cycle's requests run concurrently.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import httpx
from prometheus_client import Histogram

from metrics_server.storage import PodSamples, Sample, Storage

log = logging.getLogger("metrics_server.scraper")

TICK_DURATION: Final = Histogram(
    "metrics_server_manager_tick_duration_seconds", "The total time spent collecting and storing metrics",
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 15, 30, 60))
SCRAPE_FAILURES: Final = Histogram(
    "metrics_server_kubelet_scrape_failures", "Nodes whose kubelet did not answer in a cycle",
    buckets=(0, 1, 10, 100, 1000, 10000))

_CONTAINER_CPU: Final = "container_cpu_usage_seconds_total"
_CONTAINER_MEMORY: Final = "container_memory_working_set_bytes"
_CONTAINER_START: Final = "container_start_time_seconds"
_NODE_CPU: Final = "node_cpu_usage_seconds_total"
_NODE_MEMORY: Final = "node_memory_working_set_bytes"


@dataclass(frozen=True, slots=True)
class Target:
    node: str
    url: str


def node_target(name: str, addresses: Sequence[tuple[str, str]], port: int | None,
                preferred: Sequence[str]) -> Target | None:
    """Where to scrape a node: its first address of a preferred type, its kubelet port."""
    if not port:
        return None
    by_type: dict[str, str] = {}
    for kind, value in addresses:
        by_type.setdefault(kind, value)
    chosen = next((by_type[t] for t in preferred if t in by_type), None)
    if chosen is None:
        return None
    return Target(name, f"https://{chosen}:{port}/nodes/{name}/metrics/resource")


def _labels(text: str) -> dict[str, str]:
    labels: dict[str, str] = {}
    for part in text.split('",'):
        key, _, value = part.partition('="')
        labels[key.strip().strip(",")] = value.rstrip('"').replace('\\"', '"').replace("\\\\", "\\")
    return labels


def parse_resource_metrics(text: str) -> tuple[Sample | None, PodSamples]:
    """The node's and its containers' samples from the kubelet's ``/metrics/resource`` text.

    The five series metrics-server reads, each line ``name{labels} value timestamp_ms``; other
    series and comments are skipped.
    """
    node_cpu = node_memory = None
    node_time = 0.0
    containers: dict[tuple[str, str, str], dict[str, float]] = {}
    for line in text.splitlines():
        if not line or line[0] == "#":
            continue
        brace = line.find("{")
        if brace >= 0:
            name = line[:brace]
            close = line.rfind("}")
            labels_text, rest = line[brace + 1:close], line[close + 1:]
        else:
            name, _, rest = line.partition(" ")
            labels_text = ""
        if name not in (_CONTAINER_CPU, _CONTAINER_MEMORY, _CONTAINER_START, _NODE_CPU, _NODE_MEMORY):
            continue
        fields = rest.split()
        if not fields:
            continue
        try:
            value = float(fields[0])
            stamp = float(fields[1]) / 1000.0 if len(fields) > 1 else time.time()
        except ValueError:
            continue
        if name == _NODE_CPU:
            node_cpu, node_time = value, stamp
        elif name == _NODE_MEMORY:
            node_memory = value
        else:
            labels = _labels(labels_text)
            key = (labels.get("namespace", ""), labels.get("pod", ""), labels.get("container", ""))
            entry = containers.setdefault(key, {})
            entry[name] = value
            if name == _CONTAINER_CPU:
                entry["time"] = stamp
    node = Sample(node_time, node_cpu, int(node_memory)) if node_cpu is not None and node_memory is not None \
        else None
    pods: PodSamples = {}
    for (namespace, pod, container), entry in containers.items():
        if _CONTAINER_CPU in entry and _CONTAINER_MEMORY in entry:
            pods.setdefault((namespace, pod), {})[container] = Sample(
                entry["time"], entry[_CONTAINER_CPU], int(entry[_CONTAINER_MEMORY]), entry.get(_CONTAINER_START, 0.0))
    return node, pods


class Scraper:
    def __init__(self, http: httpx.AsyncClient, storage: Storage, *, resolution: float, timeout: float,
                 concurrency: int) -> None:
        self._http = http
        self._storage = storage
        self._resolution = resolution
        self._timeout = timeout
        self._concurrency = concurrency
        self.cycles = 0
        self.last_duration = 0.0

    async def cycle(self, targets: Sequence[Target]) -> tuple[int, int]:
        """Scrape every target once; (answered, failed)."""
        started = time.monotonic()
        limit = asyncio.Semaphore(self._concurrency)
        failed = 0

        async def one(target: Target) -> None:
            nonlocal failed
            async with limit:
                try:
                    response = await self._http.get(target.url, timeout=self._timeout)
                    if response.status_code != 200:
                        raise httpx.HTTPStatusError(f"status {response.status_code}", request=response.request,
                                                    response=response)
                    node, pods = parse_resource_metrics(response.text)
                except (httpx.HTTPError, OSError) as err:
                    failed += 1
                    # One line per cycle says why (a refused identity fails every node alike).
                    (log.warning if failed == 1 else log.debug)("failed to scrape node %s: %s", target.node,
                                                                 _reason(err))
                    self._storage.forget(target.node)
                    return
            self._storage.store(target.node, node, pods)

        await asyncio.gather(*(one(t) for t in targets))
        self.last_duration = time.monotonic() - started
        TICK_DURATION.observe(self.last_duration)
        SCRAPE_FAILURES.observe(failed)
        self.cycles += 1
        return len(targets) - failed, failed


def _reason(err: Exception) -> str:
    """What went wrong, with the kubelet's own words for a refusal (``Forbidden (user=..., ...)``)."""
    if isinstance(err, httpx.HTTPStatusError):
        return f"{err.response.status_code}: {err.response.text.strip()[:200]}"
    return str(err) or type(err).__name__
