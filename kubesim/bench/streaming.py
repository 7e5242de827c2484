"""The streaming and metrics scenarios of ``kubesim bench``.

**streaming**: one simulated node and one Pod; everything goes through the
APIServer, as kubectl's would:

- *exec round trip*: ``echo hi`` run to its end (upgrade, streams, output,
  exit Status, close), one after the other, over WebSocket (v5.channel.k8s.io,
  what kubectl 1.30+ speaks) and over SPDY/3.1 (older kubectls); p50 and p99;
- the same over WebSocket while :data:`IDLE_SESSIONS` other exec sessions sit
  open and idle, with the nodes' Lease renewals watched meanwhile (idle
  sessions must not stall heartbeats);
- *port-forward throughput*: one forwarded connection over SPDY reading
  ``GET /bytes/N`` from the simulated runtime's built-in listener, in MB/s.

**metrics**: kubelet_sim with 5,000 nodes and 10,000 Pods already bound (the
KWOK-shaped scenario's sizes), then metrics-server scraping all of them: the
duration of a full scrape cycle (every node's ``/metrics/resource`` fetched,
parsed and stored), from metrics-server's own log.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import ssl
import time
from collections.abc import Callable
from typing import Any, Final

import httpx

from kubelet_sim import bench as kubelet_bench
from kubesim import procs
from kubesim.bench.cluster import BenchCluster
from kubesim.bench.measure import check_alive
from kubesim.bench.results import ScenarioResult, percentile
from kubesim.bench.sizes import Size, pick
from machinery.httpstream.client import SpdyPortForwarder, exec_spdy, exec_websocket, upgrade

Progress = Callable[[str], None]
NAMESPACE: Final = "default"
POD: Final = "bench-stream"
IDLE_SESSIONS: Final = 1000


def _pod(node: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": POD},
            "spec": {"nodeName": node, "containers": [{"name": "app", "image": "nginx",
                                                       "ports": [{"containerPort": 80}]}]}}


def _exec_url(base: str) -> str:
    return (f"{base}/api/v1/namespaces/{NAMESPACE}/pods/{POD}/exec?command=echo&command=hi"
            "&stdout=true&stderr=true")


async def _round_trips(url: str, count: int, transport: str, tls: ssl.SSLContext | None) -> list[float]:
    times = []
    for _ in range(count):
        started = time.perf_counter()
        result = await (exec_websocket(url, tls=tls) if transport == "websocket" else exec_spdy(url, tls=tls))
        times.append(time.perf_counter() - started)
        if result.stdout != b"hi\n" or result.exit_code != 0:
            raise RuntimeError(f"exec answered {result!r}")
    return times


async def _idle_sessions(url: str, count: int, tls: ssl.SSLContext | None) -> list[Any]:
    sleeper = url.replace("command=echo&command=hi", "command=sleep&command=3600")
    sessions = []
    for start in range(0, count, 50):
        sessions += await asyncio.gather(*(upgrade(sleeper, kind="websocket", protocols=("v5.channel.k8s.io",), tls=tls)
                                           for _ in range(min(50, count - start))))
    return sessions


async def _lease_lateness(base: str, seconds: float, interval: float, tls: ssl.SSLContext | None) -> float | None:
    """The largest gap between two renewals of a node Lease seen in ``seconds``, minus the interval."""
    last: dict[str, float] = {}
    worst = 0.0
    async with httpx.AsyncClient(base_url=base, verify=tls or True,
                                 timeout=httpx.Timeout(10, read=seconds + 30)) as http:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                async with http.stream("GET", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases",
                                       params={"watch": "true"}) as response:
                    async for line in response.aiter_lines():
                        if '"MODIFIED"' not in line:
                            continue
                        name = re.search(r'"name":"([^"]+)"', line)
                        if name is None:
                            continue
                        now = time.monotonic()
                        if name.group(1) in last:
                            worst = max(worst, now - last[name.group(1)] - interval)
                        last[name.group(1)] = now
    return worst if last else None


async def _throughput(base: str, size: int, tls: ssl.SSLContext | None) -> float:
    forwarder = await SpdyPortForwarder.connect(f"{base}/api/v1/namespaces/{NAMESPACE}/pods/{POD}/portforward",
                                                tls=tls)
    try:
        data, _error = await forwarder.open(80)
        started = time.perf_counter()
        await data.write(f"GET /bytes/{size} HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n".encode())
        received = 0
        while chunk := await data.read():
            received += len(chunk)
        took = time.perf_counter() - started
    finally:
        await forwarder.close()
    if received < size:
        raise RuntimeError(f"port-forward delivered {received} of {size} bytes")
    return size / took / 1e6


def run_streaming(c: BenchCluster, *, size: Size, progress: Progress) -> ScenarioResult:
    result = ScenarioResult("exec and port-forward through the APIServer")
    health = procs.free_port()
    c.start_component("kubelet_sim", "kubelet_sim", [*c.component_flags("kubelet"), "--master", str(c.url),
                                                     "--nodes", "1", "--health-port", str(health),
                                                     "--node-lease-renew-interval=2s"],
                      ready_url=f"http://{procs.LOOPBACK}:{health}/readyz")
    with httpx.Client(base_url=c.url, verify=c.url.tls or True, timeout=30) as api:
        node = api.get("/api/v1/nodes").json()["items"][0]["metadata"]["name"]
        assert api.post(f"/api/v1/namespaces/{NAMESPACE}/pods", json=_pod(node)).status_code == 201
        deadline = time.monotonic() + 60
        while api.get(f"/api/v1/namespaces/{NAMESPACE}/pods/{POD}").json().get("status", {}).get("phase") != \
                "Running":
            if time.monotonic() > deadline:
                raise RuntimeError("the bench Pod did not start")
            time.sleep(0.2)
    count = pick(size, full=300, quick=30, smoke=3)
    idle = pick(size, full=IDLE_SESSIONS, quick=100, smoke=5)
    forwarded = pick(size, full=512, quick=32, smoke=1) * 1_000_000
    url = _exec_url(c.url)
    tls = c.url.tls

    async def measure() -> None:
        for transport in ("websocket", "spdy"):
            progress(f"exec round trips over {transport}: {count}")
            times = await _round_trips(url, count, transport, tls)
            result.add(f"exec round trip p50 ({transport})", percentile(times, 50), "s")
            result.add(f"exec round trip p99 ({transport})", percentile(times, 99), "s")
        progress(f"{idle} idle exec sessions, then round trips and Lease renewals")
        sessions = await _idle_sessions(url, idle, tls)
        try:
            lateness = asyncio.create_task(_lease_lateness(c.url, 8.0, 2.0, tls))
            times = await _round_trips(url, count, "websocket", tls)
            result.add(f"exec round trip p99 with {idle} idle sessions", percentile(times, 99), "s")
            result.add(f"Lease renewal lateness with {idle} idle sessions", await lateness, "s",
                       "renewals every 2 s; 0 is on time")
        finally:
            for session in sessions:
                session.writer.close()
        progress(f"port-forward: {forwarded // 1_000_000} MB through the APIServer")
        result.add("port-forward throughput (SPDY)", await _throughput(c.url, forwarded, tls), "MB/s")

    asyncio.run(measure())
    check_alive(c)
    return result


_SCRAPED: Final = re.compile(r"scraped (\d+) nodes in ([0-9.]+)s \((\d+) did not answer\)")


def run_metrics(c: BenchCluster, *, size: Size, progress: Progress) -> ScenarioResult:
    nodes, pods = pick(size, full=(5000, 10_000), quick=(100, 200), smoke=(5, 10))
    resolution = pick(size, full="15s", quick="15s", smoke="5s")
    result = ScenarioResult(f"metrics-server over {nodes} nodes")
    from kubesim.bench.measure import start_kubelets
    start_kubelets(c, nodes)
    progress(f"kubelet_sim: {nodes} nodes, then {pods} Pods created already bound")
    asyncio.run(kubelet_bench.density(c.config(), nodes=nodes, pods=pods, progress=progress))
    health = procs.free_port()
    # --register-apiservice writes the manifest's RBAC (as kubesim up has it do): metrics-server is its
    # ServiceAccount, which may read nodes and Pods only through system:metrics-server.
    metrics = c.start_component("metrics-server", "metrics_server",
                                [*c.component_flags("metrics-server"), "--master", str(c.url),
                                 "--health-port", str(health), f"--metric-resolution={resolution}",
                                 "--register-apiservice"],
                                ready_url=f"http://{procs.LOOPBACK}:{health}/readyz", timeout=300)
    progress("metrics-server: waiting for three scrape cycles")
    cycles: list[tuple[int, float, int]] = []
    deadline = time.monotonic() + 180
    while len(cycles) < 3 and time.monotonic() < deadline:
        time.sleep(1)
        cycles = [(int(a), float(b), int(f)) for a, b, f in _SCRAPED.findall(metrics.log_path.read_text())]
        check_alive(c)
    if len(cycles) < 3:
        text = procs.tail(metrics.log_path, 5)
        raise RuntimeError(f"metrics-server logged {len(cycles)} scrape cycles:\n{text}")
    durations = [d for _, d, _ in cycles]
    result.add("scrape cycle (first)", durations[0], "s", f"every node's /metrics/resource, {pods} Pods")
    result.add("scrape cycle (median of the next)", percentile(durations[1:], 50), "s",
               f"every {resolution} (metrics-server's default is 15 s)")
    result.add("nodes answered per cycle", min(a for a, _, _ in cycles), "", f"of {nodes}")
    c.sample()
    result.add("metrics-server peak RSS", c.peak_rss.get("metrics-server"), "bytes")
    return result
