"""Scenario 2, the API: creates, updates, gets and lists per second, and watch delivery latency.

Requests go through kubesim's raw HTTP client over keep-alive connections (64
in flight), so the APIServer, not the load generator, is what is measured.
Watch latency is measured from the start of each create to its arrival at
each of W watchers (100, then 1,000), all in one namespace; it therefore
includes the write itself.

The same creates, updates, gets and lists run on ConfigMaps and Deployments,
each kind in a namespace of its own, in :data:`ROUNDS` rounds alternating with
the Pods' of the same operation, so that the cost of the registration
(strategies, defaulting, validation, printers of the kind) shows beside the
Pods' figures under the same load; each is also given as a share of the Pod figure of
the same run (issue 12's goal: none below 90 %). A Deployment's pod template
is the same as the bench Pod's spec; a ConfigMap holds about the same bytes.

The figures are what a client bound to ``cluster-admin`` by RBAC gets over
HTTPS with its client certificate (TLS, x509 authentication, RBAC
authorization). Given the ``--insecure-port`` too, the same run measures each
Pod figure again through it (plain HTTP, neither), in the same alternating
rounds, so that what security costs is read in one run
on one machine (issue 17's goal: none below 85 %).
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final

import orjson

from kubesim.bench.rawhttp import Connection, open_watch, watch_lines
from kubesim.bench.results import ScenarioResult, percentile
from kubesim.bench.sizes import Size, pick

Progress = Callable[[str], None]
NS = "bench-api"
CONCURRENCY = 64
INSECURE = " (insecure port)"
#: Rounds each secure/insecure comparison is split into, alternating between the two ports.
ROUNDS = 8


_POD_SPEC: Final = {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.9",
                                     "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}


def _pod(name: str) -> bytes:
    return orjson.dumps({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": "bench"}},
        "spec": _POD_SPEC})


def _configmap(name: str) -> bytes:
    return orjson.dumps({
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": {"app": "bench"}},
        "data": {"image": "registry.k8s.io/pause:3.9", "cpu": "100m", "memory": "64Mi"}})


def _deployment(name: str) -> bytes:
    labels = {"app": "bench", "bench/name": name}
    return orjson.dumps({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "labels": {"app": "bench"}},
        "spec": {"replicas": 0, "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels}, "spec": _POD_SPEC}}})


@dataclass(frozen=True)
class _Kind:
    """One kind whose creates, updates, gets and lists are measured: its collection path and a body maker."""

    name: str
    namespace: str
    collection: str
    body: Callable[[str], bytes]


_KINDS: Final = (
    _Kind("Pod", NS, f"/api/v1/namespaces/{NS}/pods", _pod),
    _Kind("ConfigMap", "bench-api-configmaps", "/api/v1/namespaces/bench-api-configmaps/configmaps", _configmap),
    _Kind("Deployment", "bench-api-deployments", "/apis/apps/v1/namespaces/bench-api-deployments/deployments",
          _deployment),
)


async def _run_ops(url: str, count: int, op: Callable[[Connection, int], Awaitable[None]]) -> tuple[float, list[float]]:
    conns = [await Connection.open(url) for _ in range(CONCURRENCY)]
    todo = list(range(count - 1, -1, -1))
    latencies: list[float] = []

    async def worker(conn: Connection) -> None:
        while todo:
            i = todo.pop()
            t = time.perf_counter()
            await op(conn, i)
            latencies.append(time.perf_counter() - t)

    started = time.perf_counter()
    await asyncio.gather(*(worker(c) for c in conns))
    elapsed = time.perf_counter() - started
    for c in conns:
        c.close()
    return count / elapsed, latencies


async def _watch_latency(url: str, watchers: int, events: int, tag: str) -> list[float]:
    setup = await Connection.open(url)
    rv = orjson.loads((await setup.request("GET", f"/api/v1/namespaces/{NS}/pods?limit=1")).body)["metadata"][
        "resourceVersion"]
    sent: dict[str, float] = {}
    arrivals: list[float] = []
    pattern = re.compile(rb'"name":"(' + tag.encode() + rb'-\d+)"')
    done = asyncio.Event()
    remaining = [watchers * events]
    path = f"/api/v1/namespaces/{NS}/pods?watch=true&resourceVersion={rv}&labelSelector=app%3D{tag}"
    # Every watch is open (its connection made, TLS handshake included, and its head read) before the
    # first event is sent: what is measured is delivery, not connecting.
    streams = await asyncio.gather(*(open_watch(url, path) for _ in range(watchers)))

    async def watch(conn: Connection) -> None:
        async for now, line in watch_lines(conn):
            m = pattern.search(line)
            if m is None:
                continue
            arrivals.append(now - sent[m.group(1).decode()])
            remaining[0] -= 1
            if remaining[0] <= 0:
                done.set()
                return

    tasks = [asyncio.create_task(watch(conn)) for conn in streams]
    for i in range(events):
        name = f"{tag}-{i}"
        body = orjson.loads(_pod(name))
        body["metadata"]["labels"] = {"app": tag}
        sent[name] = time.perf_counter()
        await setup.request("POST", f"/api/v1/namespaces/{NS}/pods?fieldValidation=Ignore", orjson.dumps(body))
        await asyncio.sleep(0.02)
    try:
        await asyncio.wait_for(done.wait(), 60)
    except TimeoutError:
        pass
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    setup.close()
    return arrivals


async def _op(url: str, op: str, kind: _Kind, tag: str, count: int, start: int = 0) -> tuple[float, list[float]]:
    """``count`` creates, merge-patch updates, gets or lists of 500 of one kind, from object ``start`` on."""
    collection = kind.collection

    async def call(c: Connection, j: int) -> None:
        i = start + j
        if op == "create":
            r = await c.request("POST", f"{collection}?fieldValidation=Ignore", kind.body(f"{tag}-{i}"))
        elif op == "update":
            r = await c.request("PATCH", f"{collection}/{tag}-{i}", b'{"metadata":{"labels":{"touched":"yes"}}}',
                                "application/merge-patch+json")
        elif op == "get":
            r = await c.request("GET", f"{collection}/{tag}-{i}")
        else:
            r = await c.request("GET", f"{collection}?limit=500")
        if r.status != (201 if op == "create" else 200):
            raise RuntimeError(f"{kind.name} {op} answered {r.status}: {r.body[:200]!r}")

    return await _run_ops(url, count, call)


async def _interleaved(op: str, runs: list[tuple[tuple[str, str], str, _Kind, str]],
                       count: int) -> dict[tuple[str, str], tuple[float, list[float]]]:
    """``count`` operations for each of ``runs`` ((key, url, kind, tag)), in :data:`ROUNDS` rounds, each round
    running every one of them in turn, so that a change of the machine's load mid-way falls on all alike.

    Each run works on its own objects (its kind's namespace, its tag). Connections are opened before the
    clock starts, so TLS handshakes are not counted (clients keep their connections). Returns key ->
    (operations per second over the run's own time, latencies).
    """
    seconds = {key: 0.0 for key, *_ in runs}
    latencies: dict[tuple[str, str], list[float]] = {key: [] for key, *_ in runs}
    for r in range(ROUNDS):
        share = range(r * count // ROUNDS, (r + 1) * count // ROUNDS)
        if not share:  # fewer operations than rounds
            continue
        for key, target, kind, tag in runs:
            rate, lat = await _op(target, op, kind, tag, len(share), share.start)
            seconds[key] += len(share) / rate
            latencies[key].extend(lat)
    return {key: (count / seconds[key], latencies[key]) for key in seconds}


#: Each Pod operation's rate label, and the name of its p99 figure.
_LABELS: Final = {"create": ("creates/s", "create p99"), "update": ("updates/s (merge patch)", "update p99"),
                  "get": ("gets/s", "get p99"), "list": ("lists/s (500 pods per page)", "list p99")}


async def run(url: str, *, size: Size, progress: Progress, insecure_url: str | None = None) -> ScenarioResult:
    """The API figures at ``url``; with ``insecure_url`` the Pods' also through ``--insecure-port``, in the same run."""
    n = pick(size, full=20_000, quick=2_000, smoke=100)
    # A list of 500 takes ~10 ms: 1,000 of them (250 per round and port) keep each round several seconds long,
    # so that the secure/insecure ratio is not decided by how the last few of a burst of 64 finish.
    lists = pick(size, full=1_000, quick=200, smoke=3)
    watcher_counts = pick(size, full=(100, 1_000), quick=(100, 1_000), smoke=(5, 20))
    watch_events = pick(size, full=50, quick=20, smoke=3)
    result = ScenarioResult("API")
    started = time.perf_counter()
    conn = await Connection.open(url)
    for kind in _KINDS:
        await conn.request("POST", "/api/v1/namespaces", orjson.dumps({"metadata": {"name": kind.namespace}}))
    conn.close()
    stamp = int(time.time())
    tag, insecure_tag = f"b{stamp}", f"i{stamp}"

    # Each operation runs on every kind (and Pods on both ports) in alternating rounds, so that the kinds and
    # ports are compared under the same load (the machine is shared) and with the same number of objects.
    figures: dict[tuple[str, str], tuple[float, list[float]]] = {}
    insecure: dict[str, tuple[float, list[float]]] = {}
    for op in ("create", "update", "get", "list"):
        count = lists if op == "list" else n
        runs = [(("Pod", INSECURE), insecure_url, _KINDS[0], insecure_tag)] if insecure_url else []
        runs += [((kind.name, ""), url, kind, tag) for kind in _KINDS]
        progress(f"API: {count} {op}s" + (" of 500" if op == "list" else "") + " of each kind"
                 + (", Pods on each port" if insecure_url else "") + f", in {ROUNDS} alternating rounds")
        for (name, port), value in (await _interleaved(op, runs, count)).items():
            if port:
                insecure[op] = value
            else:
                figures[(name, op)] = value

    rate, lat = figures[("Pod", "create")]
    result.add("creates/s", rate, "/s")
    result.add("create p50", percentile(lat, 50), "s")
    result.add("create p99", percentile(lat, 99), "s", "Kubernetes SLO: mutating calls p99 <= 1 s")
    rate, lat = figures[("Pod", "update")]
    result.add("updates/s (merge patch)", rate, "/s")
    result.add("update p99", percentile(lat, 99), "s", "Kubernetes SLO: mutating calls p99 <= 1 s")
    rate, lat = figures[("Pod", "get")]
    result.add("gets/s", rate, "/s")
    result.add("get p99", percentile(lat, 99), "s")
    rate, lat = figures[("Pod", "list")]
    result.add("lists/s (500 pods per page)", rate, "/s")
    result.add("list p99", percentile(lat, 99), "s")
    for op, (rate_label, p99_label) in _LABELS.items():
        if op not in insecure:
            continue
        rate, lat = insecure[op]
        result.add(rate_label + INSECURE, rate, "/s")
        result.add(p99_label + INSECURE, percentile(lat, 99), "s")
        result.add(f"{rate_label}, TLS+authn+authz vs insecure port", 100 * figures[("Pod", op)][0] / rate, "%",
                   "goal >= 85%")

    targets = [("", url, "")] + ([(INSECURE, insecure_url, "i")] if insecure_url else [])
    for watchers in watcher_counts:
        for suffix, target, prefix in targets:
            progress(f"API: watch latency with {watchers} watchers{suffix}")
            arrivals = await _watch_latency(target, watchers, watch_events, f"{prefix}w{watchers}")
            result.add(f"watch latency p50 ({watchers} watchers){suffix}", percentile(arrivals, 50), "s")
            result.add(f"watch latency p99 ({watchers} watchers){suffix}", percentile(arrivals, 99), "s")

    for kind in _KINDS[1:]:
        for op, label in (("create", "creates/s"), ("update", "updates/s (merge patch)"), ("get", "gets/s"),
                          ("list", "lists/s (500 per page)")):
            rate, lat = figures[(kind.name, op)]
            pod_rate = figures[("Pod", op)][0]
            result.add(f"{kind.name} {label}", rate, "/s",
                       f"{100 * rate / pod_rate:.0f}% of Pods' (goal >= 90%)" if pod_rate else "")
            result.add(f"{kind.name} {op} p99", percentile(lat, 99), "s")
    result.seconds = time.perf_counter() - started
    return result
