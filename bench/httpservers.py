"""Measure the APIServer's application under uvicorn (what kubesim runs) and under granian.

Issue 18 asks whether another HTTP server on the package index would make the
request path lighter. This serves the same ASGI application (the APIServer's
whole filter chain and handlers, over a real etcd) with each server in turn,
plain HTTP, one process, one event loop (uvloop for both), and drives it with
the bench's keep-alive client: ``--requests`` GETs of one Pod (answered from
the watch cache: mostly the HTTP server's and the filters' work) and
``--requests`` ConfigMap creates (a write to etcd), ``--connections`` at a
time, alternating the servers ``--rounds`` times so that the machine's noise
falls on both. It prints requests per second and the server process's CPU
per request (microseconds, from ``/proc``: the figure the CPU-per-Pod goal
cares about).

Anonymous requests with ``--authorization-mode=AlwaysAllow``: both servers run
exactly the same application; TLS is left out because the APIServer does its
own (``apiserver.serving``) whichever server is underneath.

granian is not a kubesim dependency: ``.venv/bin/pip install granian`` first, then
``.venv/bin/python bench/httpservers.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kubesim import procs
from kubesim.bench.cluster import cpu_seconds
from kubesim.bench.rawhttp import Connection


def make_app() -> object:
    """The factory both servers call in their process: the APIServer as ``python -m apiserver`` builds it."""
    from apiserver.app import asgi_app
    from apiserver.settings import SecuritySettings, Settings

    settings = Settings(etcd_servers=[os.environ["KUBESIM_ETCD"]],
                        disabled_admission_plugins=("ServiceAccount",),
                        security=SecuritySettings(authorization_modes=("AlwaysAllow",)))
    app, _api = asgi_app(settings)
    return app


def _server(kind: str, port: int, etcd: str, log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "KUBESIM_ETCD": etcd, "PYTHONPATH": f"{ROOT}:{ROOT / 'bench'}"}
    if kind == "uvicorn":
        code = ("import uvicorn; uvicorn.run('httpservers:make_app', factory=True, host='127.0.0.1', "
                f"port={port}, loop='uvloop', http='httptools', log_level='warning', access_log=False)")
        cmd = [sys.executable, "-c", code]
    else:
        cmd = [str(Path(sys.executable).with_name("granian")), "--interface", "asgi", "--factory",
               "--host", "127.0.0.1", "--port", str(port), "--workers", "1", "--runtime-threads", "1",
               "--loop", "uvloop", "--http", "1", "--log-level", "warning", "--no-access-log",
               "httpservers:make_app"]
    return subprocess.Popen(cmd, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True)


def _tree_cpu(pid: int) -> float:
    """CPU seconds of ``pid`` and its children (granian serves from a worker process)."""
    total = cpu_seconds(pid)
    for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split():
        total += _tree_cpu(int(child))
    return total


async def _drive(url: str, connections: int, requests: int, op: str, tag: str) -> float:
    conns = [await Connection.open(url) for _ in range(connections)]
    numbers = iter(range(requests))

    async def worker(conn: Connection) -> None:
        for i in numbers:
            if op == "get":
                reply = await conn.request("GET", "/api/v1/namespaces/default/pods/probe")
            else:
                body = orjson.dumps({"metadata": {"name": f"{tag}-{i}"}, "data": {"k": "v"}})
                reply = await conn.request("POST", "/api/v1/namespaces/default/configmaps", body)
            if reply.status not in (200, 201):
                raise RuntimeError(f"{op} answered {reply.status}: {reply.body[:200]!r}")

    started = time.perf_counter()
    await asyncio.gather(*(worker(c) for c in conns))
    elapsed = time.perf_counter() - started
    for c in conns:
        c.close()
    return requests / elapsed


def _wait(url: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if procs.http_ok(f"{url}/readyz"):
            return
        time.sleep(0.2)
    raise RuntimeError(f"{url} never became ready")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--requests", type=int, default=10_000)
    p.add_argument("--connections", type=int, default=32)
    p.add_argument("--rounds", type=int, default=4)
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="kubesim-httpservers-") as tmp:
        work = Path(tmp)
        etcd_port = procs.free_port()
        etcd = procs.etcd_process(work / "etcd", client_port=etcd_port, log_path=work / "etcd.log")
        etcd.start()
        try:
            etcd.wait_ready(30)
            etcd_url = f"http://{procs.LOOPBACK}:{etcd_port}"
            figures: dict[tuple[str, str], list[tuple[float, float]]] = {}
            for r in range(args.rounds):
                for kind in ("uvicorn", "granian") if r % 2 == 0 else ("granian", "uvicorn"):
                    port = procs.free_port()
                    url = f"http://{procs.LOOPBACK}:{port}"
                    server = _server(kind, port, etcd_url, work / f"{kind}.log")
                    try:
                        _wait(url)
                        asyncio.run(_prepare(url))
                        for op in ("get", "create"):
                            before = _tree_cpu(server.pid)
                            rate = asyncio.run(_drive(url, args.connections, args.requests, op, f"{kind}{r}"))
                            cpu = (_tree_cpu(server.pid) - before) / args.requests
                            figures.setdefault((kind, op), []).append((rate, cpu))
                            print(f"round {r + 1} {kind:8} {op:6} {rate:8.0f}/s  {cpu * 1e6:6.0f} us CPU "
                                  "per request", flush=True)
                    finally:
                        server.terminate()
                        server.wait(30)
        finally:
            etcd.stop()
    print()
    for op in ("get", "create"):
        for kind in ("uvicorn", "granian"):
            rates = [f[0] for f in figures[(kind, op)]]
            cpus = [f[1] * 1e6 for f in figures[(kind, op)]]
            print(f"{kind:8} {op:6} median {statistics.median(rates):8.0f}/s  "
                  f"{statistics.median(cpus):6.0f} us CPU per request")
    return 0


async def _prepare(url: str) -> None:
    conn = await Connection.open(url)
    try:
        pod = {"metadata": {"name": "probe"}, "spec": {"containers": [{"name": "c", "image": "pause"}]}}
        for _ in range(100):
            reply = await conn.request("POST", "/api/v1/namespaces/default/pods", orjson.dumps(pod))
            if reply.status in (201, 409):
                return
            # The namespace "default" is made a moment after the APIServer starts.
            await asyncio.sleep(0.1)
        raise RuntimeError(f"creating the probe Pod answered {reply.status}: {reply.body[:200]!r}")
    finally:
        conn.close()


if __name__ == "__main__":
    sys.exit(main())
