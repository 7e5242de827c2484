"""The scheduler benchmark, in the shape of kube-scheduler's scheduler_perf ``SchedulingBasic``.

:func:`scheduling_basic` runs against a cluster someone else started (etcd,
the APIServer and a scheduler; ``kubesim bench`` starts them):

1. creates ``nodes`` Node objects directly (no kubelets, as scheduler_perf
   does): 4 cpu, 32Gi, 110 pods each, Ready;
2. creates ``existing_pods`` Pods already bound round-robin (``spec.nodeName``);
3. watches the namespace, then creates ``pods`` Pods for the scheduler
   (100m cpu, 500Mi, as scheduler_perf's ``pod-default.yaml``), 64 creates in
   flight, and waits until the watch has seen every one bound;
4. returns the figures: pods/s from the first create to the last binding,
   the steady rate between 10% and 90% bound, and per-Pod latency from its
   create to its binding (p50, p99).

Variants, as scheduler_perf's: ``node-affinity`` (nodes labelled
``topology.kubernetes.io/zone: zone1``, Pods requiring zone1 or zone2) and
``pod-anti-affinity`` (Pods repel each other per hostname: one per node).

The load generator uses the benchmarks' raw HTTP client and reads the watch
as bytes, so that it costs the shared CPUs as little as possible.

``python -m scheduler.bench --nodes N --pods M`` starts its own throwaway
cluster and scheduler and prints the figures with each process's CPU time.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
import uuid
from collections.abc import Callable
from typing import Any, Final, Literal

import orjson

from kubesim.bench.rawhttp import Connection, open_watch, watch_lines
from kubesim.bench.results import percentile

Variant = Literal["basic", "node-affinity", "pod-anti-affinity"]
VARIANTS: Final = ("basic", "node-affinity", "pod-anti-affinity")
Progress = Callable[[dict[str, Any]], None]

_CONCURRENCY: Final = 64
_STALL_TIMEOUT: Final = 120.0
_ZONE: Final = "topology.kubernetes.io/zone"


def _node(name: str, variant: str) -> bytes:
    labels = {"kubernetes.io/hostname": name}
    if variant == "node-affinity":
        labels[_ZONE] = "zone1"
    resources = {"pods": "110", "cpu": "4", "memory": "32Gi"}
    return orjson.dumps({
        "apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
        "status": {"capacity": resources, "allocatable": resources,
                   "conditions": [{"type": "Ready", "status": "True"}], "phase": "Running"}})


def _pod(name: str, variant: str, *, node: str | None = None, measured: bool = False) -> bytes:
    requests = {"cpu": "100m", "memory": "500Mi"}
    spec: dict[str, Any] = {"containers": [{
        "name": "pause", "image": "registry.k8s.io/pause:3.10", "ports": [{"containerPort": 80}],
        "resources": {"requests": requests, "limits": requests}}]}
    labels = {"bench": "measured" if measured else "existing"}
    if node is not None:
        spec["nodeName"] = node
    if variant == "node-affinity":
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [
                {"key": _ZONE, "operator": "In", "values": ["zone1", "zone2"]}]}]}}}
    elif variant == "pod-anti-affinity":
        labels["color"] = "green"
        spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
            "labelSelector": {"matchLabels": {"color": "green"}}, "topologyKey": "kubernetes.io/hostname"}]}}
    return orjson.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels},
                         "spec": spec})


async def _create_all(url: str, path: Callable[[int], str], body: Callable[[int], bytes], count: int,
                      sent: dict[int, float] | None = None, on_progress: Callable[[int], None] | None = None) -> None:
    conns = [await Connection.open(url) for _ in range(min(_CONCURRENCY, max(count, 1)))]
    todo = list(range(count - 1, -1, -1))
    done = [0]

    async def worker(conn: Connection) -> None:
        while todo:
            i = todo.pop()
            data = body(i)
            if sent is not None:
                sent[i] = time.perf_counter()
            reply = await conn.request("POST", path(i), data)
            if reply.status != 201:
                raise RuntimeError(f"create answered {reply.status}: {reply.body[:300]!r}")
            done[0] += 1
            if on_progress is not None and done[0] % 1000 == 0:
                on_progress(done[0])

    try:
        await asyncio.gather(*(worker(c) for c in conns))
    finally:
        for c in conns:
            c.close()


async def scheduling_basic(api_url: str, *, nodes: int, existing_pods: int, pods: int, variant: Variant = "basic",
                           progress: Progress | None = None) -> dict[str, Any]:
    """Create the nodes and Pods, and measure how fast the running scheduler binds the Pods (see the module)."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}: use one of {', '.join(VARIANTS)}")
    if nodes < 1 or pods < 1 or existing_pods < 0:
        raise ValueError("nodes and pods must be at least 1, existing_pods at least 0")

    def say(**fields: Any) -> None:
        if progress is not None:
            progress(fields)

    run = uuid.uuid4().hex[:6]
    ns = f"sched-perf-{run}"
    setup = await Connection.open(api_url)
    try:
        reply = await setup.request("POST", "/api/v1/namespaces", orjson.dumps({"metadata": {"name": ns}}))
        if reply.status != 201:
            raise RuntimeError(f"creating namespace {ns} answered {reply.status}: {reply.body[:300]!r}")
        node_names = [f"sched-perf-{run}-{i}" for i in range(nodes)]
        started = time.perf_counter()
        await _create_all(api_url, lambda i: "/api/v1/nodes", lambda i: _node(node_names[i], variant), nodes,
                          on_progress=lambda n: say(phase="nodes", created=n, total=nodes))
        say(phase="nodes", created=nodes, total=nodes, seconds=round(time.perf_counter() - started, 1))
        pods_path = f"/api/v1/namespaces/{ns}/pods"
        await _create_all(api_url, lambda i: pods_path,
                          lambda i: _pod(f"existing-{i}", variant, node=node_names[i % nodes]), existing_pods,
                          on_progress=lambda n: say(phase="existing pods", created=n, total=existing_pods))
        reply = await setup.request("GET", f"{pods_path}?limit=1")
        rv = orjson.loads(reply.body)["metadata"]["resourceVersion"]
    finally:
        setup.close()

    sent: dict[int, float] = {}
    bound: dict[int, float] = {}
    all_bound = asyncio.Event()
    # Open before the first create: a watch that connects late, behind thousands of creates, could
    # find its resourceVersion gone from the watch cache's window (410).
    path = f"{pods_path}?watch=true&resourceVersion={rv}&labelSelector=bench%3Dmeasured"
    conn = await open_watch(api_url, path)
    watch = asyncio.create_task(_watch_bindings(conn, bound, pods, all_bound), name="bench-watch")
    say(phase="measure", pods=pods)
    first_create = time.perf_counter()
    creating = asyncio.create_task(_create_all(
        api_url, lambda i: pods_path, lambda i: _pod(f"pod-{i}", variant, measured=True), pods, sent,
        on_progress=lambda n: say(phase="measure", created=n, bound=len(bound))), name="bench-create")
    try:
        await creating
        created_at = time.perf_counter()
        last_count, last_change = -1, time.perf_counter()
        while not all_bound.is_set():
            if watch.done():
                watch.result()
                raise RuntimeError("the watch of the benchmark's Pods ended early")
            if len(bound) != last_count:
                last_count, last_change = len(bound), time.perf_counter()
                say(phase="measure", created=pods, bound=last_count)
            elif time.perf_counter() - last_change > _STALL_TIMEOUT:
                break
            try:
                await asyncio.wait_for(all_bound.wait(), 2.0)
            except TimeoutError:
                pass
    finally:
        watch.cancel()
        await asyncio.gather(watch, return_exceptions=True)
    return _figures(nodes, existing_pods, pods, variant, sent, bound, first_create, created_at)


async def _watch_bindings(conn: Connection, bound: dict[int, float], total: int, done: asyncio.Event) -> None:
    async for now, line in watch_lines(conn):
        if line.startswith(b'{"type":"ERROR"'):
            raise RuntimeError(f"the watch of the benchmark's Pods ended: {line[:300]!r}")
        if b'"nodeName"' not in line:
            continue
        obj = orjson.loads(line)["object"]
        index = int(obj["metadata"]["name"].rpartition("-")[2])
        if obj["spec"].get("nodeName") and index not in bound:
            bound[index] = now
            if len(bound) >= total:
                done.set()
                return


def _figures(nodes: int, existing: int, pods: int, variant: str, sent: dict[int, float], bound: dict[int, float],
             first_create: float, created_at: float) -> dict[str, Any]:
    latencies = [bound[i] - sent[i] for i in bound if i in sent]
    times = sorted(bound.values())
    elapsed = (times[-1] - first_create) if times else None
    steady = None
    if len(times) >= 10:
        lo, hi = times[len(times) // 10], times[len(times) * 9 // 10]
        if hi > lo:
            steady = (len(times) * 9 // 10 - len(times) // 10) / (hi - lo)
    return {
        "variant": variant, "nodes": nodes, "existing_pods": existing, "pods": pods, "bound": len(bound),
        "seconds": round(elapsed, 2) if elapsed else None,
        "pods_per_second": round(len(bound) / elapsed, 1) if elapsed else None,
        "steady_pods_per_second": round(steady, 1) if steady else None,
        "creates_per_second": round(pods / (created_at - first_create), 1) if created_at > first_create else None,
        "latency_p50_seconds": _round(percentile(latencies, 50)),
        "latency_p99_seconds": _round(percentile(latencies, 99)),
    }


def _round(value: float | None) -> float | None:
    return round(value, 3) if value is not None else None


def _main(argv: list[str] | None = None) -> int:
    from kubesim import procs
    from kubesim.bench.cluster import cluster

    parser = argparse.ArgumentParser(prog="python -m scheduler.bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--existing-pods", type=int, default=1000)
    parser.add_argument("--pods", type=int, default=10000)
    parser.add_argument("--variant", choices=VARIANTS, default="basic")
    parser.add_argument("--scheduler-arg", action="append", default=[], metavar="ARG",
                        help="an extra flag for the scheduler (repeatable), e.g. --scheduler-arg=--config=FILE")
    args = parser.parse_args(argv)
    with cluster() as c:
        health = procs.free_port()
        c.start_component("scheduler", "scheduler",
                          [*c.component_flags("scheduler"), "--health-port", str(health), "--leader-elect=false",
                           *args.scheduler_arg], ready_url=f"http://{procs.LOOPBACK}:{health}/readyz")
        measured_from: dict[str, float] = {}

        def progress(fields: dict[str, Any]) -> None:
            print(f"[bench {time.strftime('%H:%M:%S')}] {fields}", flush=True)
            if fields.get("phase") == "measure" and "pods" in fields:
                # CPU is counted from here: what scheduling the measured Pods costs each process.
                measured_from.update(c.cpu())

        figures = asyncio.run(scheduling_basic(c.url, nodes=args.nodes, existing_pods=args.existing_pods,
                                               pods=args.pods, variant=args.variant, progress=progress))
        after = c.cpu()
        c.sample()
        figures["cpu_ms_per_pod"] = {name: round((after[name] - measured_from.get(name, 0)) * 1000 / args.pods, 2)
                                     for name in after}
        figures["peak_rss_mib"] = {name: rss // (1 << 20) for name, rss in c.peak_rss.items()}
    print(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(_main())
