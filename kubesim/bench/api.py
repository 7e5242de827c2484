"""Scenario 2, the API: creates, updates, gets and lists per second, and watch delivery latency.

Requests go through kubesim's raw HTTP client over keep-alive connections (64
in flight), so the APIServer, not the load generator, is what is measured.
Watch latency is measured from the start of each create to its arrival at
each of W watchers (100, then 1,000), all in one namespace; it therefore
includes the write itself.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Awaitable, Callable

import orjson

from kubesim.bench.rawhttp import Connection, open_watch, watch_lines
from kubesim.bench.results import ScenarioResult, percentile

Progress = Callable[[str], None]
NS = "bench-api"
CONCURRENCY = 64


def _pod(name: str) -> bytes:
    return orjson.dumps({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": "bench"}},
        "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.9",
                                 "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}})


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

    async def watch() -> None:
        path = f"/api/v1/namespaces/{NS}/pods?watch=true&resourceVersion={rv}&labelSelector=app%3D{tag}"
        async for now, line in watch_lines(await open_watch(url, path)):
            m = pattern.search(line)
            if m is None:
                continue
            arrivals.append(now - sent[m.group(1).decode()])
            remaining[0] -= 1
            if remaining[0] <= 0:
                done.set()
                return

    tasks = [asyncio.create_task(watch()) for _ in range(watchers)]
    await asyncio.sleep(1.0 + watchers / 500)  # let every watch be registered
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


async def run(url: str, *, quick: bool, progress: Progress) -> ScenarioResult:
    n = 2_000 if quick else 20_000
    result = ScenarioResult("API")
    started = time.perf_counter()
    conn = await Connection.open(url)
    await conn.request("POST", "/api/v1/namespaces", orjson.dumps({"metadata": {"name": NS}}))
    conn.close()
    tag = f"b{int(time.time())}"

    async def create(c: Connection, i: int) -> None:
        r = await c.request("POST", f"/api/v1/namespaces/{NS}/pods?fieldValidation=Ignore", _pod(f"{tag}-{i}"))
        if r.status != 201:
            raise RuntimeError(f"create answered {r.status}: {r.body[:200]!r}")

    progress(f"API: {n} creates")
    rate, lat = await _run_ops(url, n, create)
    result.add("creates/s", rate, "/s")
    result.add("create p50", percentile(lat, 50), "s")
    result.add("create p99", percentile(lat, 99), "s", "Kubernetes SLO: mutating calls p99 <= 1 s")

    async def update(c: Connection, i: int) -> None:
        path = f"/api/v1/namespaces/{NS}/pods/{tag}-{i}"
        patch = b'{"metadata":{"labels":{"touched":"yes"}}}'
        r = await c.request("PATCH", path, patch, "application/merge-patch+json")
        if r.status != 200:
            raise RuntimeError(f"patch answered {r.status}")

    progress(f"API: {n} updates")
    rate, lat = await _run_ops(url, n, update)
    result.add("updates/s (merge patch)", rate, "/s")
    result.add("update p99", percentile(lat, 99), "s", "Kubernetes SLO: mutating calls p99 <= 1 s")

    async def get(c: Connection, i: int) -> None:
        r = await c.request("GET", f"/api/v1/namespaces/{NS}/pods/{tag}-{i}")
        if r.status != 200:
            raise RuntimeError(f"get answered {r.status}")

    progress(f"API: {n} gets")
    rate, lat = await _run_ops(url, n, get)
    result.add("gets/s", rate, "/s")
    result.add("get p99", percentile(lat, 99), "s")

    lists = 50 if quick else 200

    async def list_pods(c: Connection, i: int) -> None:
        r = await c.request("GET", f"/api/v1/namespaces/{NS}/pods?limit=500")
        if r.status != 200:
            raise RuntimeError(f"list answered {r.status}")

    progress(f"API: {lists} lists of 500 pods")
    rate, lat = await _run_ops(url, lists, list_pods)
    result.add("lists/s (500 pods per page)", rate, "/s")
    result.add("list p99", percentile(lat, 99), "s")

    for watchers in (100, 1_000):
        progress(f"API: watch latency with {watchers} watchers")
        arrivals = await _watch_latency(url, watchers, 20 if quick else 50, f"w{watchers}")
        result.add(f"watch latency p50 ({watchers} watchers)", percentile(arrivals, 50), "s")
        result.add(f"watch latency p99 ({watchers} watchers)", percentile(arrivals, 99), "s")
    result.seconds = time.perf_counter() - started
    return result
