"""Scenario: 5,000 simulated nodes, each with its own identity, from start to Ready; and against no security.

Each node is ``system:node:<name>`` (its bearer token from the cluster's token
file), so every Node registration, Lease renewal and status write passes the
Node authorizer and NodeRestriction. The same start is measured through
``--insecure-port`` (no TLS, no authentication, no authorization) in a second
cluster of the same run. Also measured, for the record of why nodes have
tokens: how long signing one client certificate per node would take.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable
from importlib import resources

import yaml

from kubelet_sim.profile import DEFAULT_PROFILE
from kubesim import procs
from kubesim.bench.cluster import BenchCluster, cluster
from kubesim.bench.measure import Pool, ReadyNodes, check_alive, every_second, list_revision
from kubesim.bench.results import ScenarioResult
from kubesim.bench.sizes import Size, pick
from machinery import pki

Progress = Callable[[str], None]
_TIMEOUT = 600.0


def _start_kubelets(c: BenchCluster, nodes: int, *, secure: bool) -> None:
    profile = yaml.safe_load(resources.files("kubelet_sim").joinpath(DEFAULT_PROFILE).read_text())
    path = c.workdir / "identities-profile.yaml"
    path.write_text(yaml.safe_dump(profile))
    connection = c.component_flags("kubelet") if secure else ["--master", str(c.insecure_url)]
    c.start_component("kubelet_sim", "kubelet_sim",
                      [*connection, "--nodes", str(nodes), "--node-profile", str(path), "--health-port",
                       str(procs.free_port())])


async def _nodes_ready(c: BenchCluster, nodes: int, *, secure: bool, progress: Progress) -> float:
    pool = Pool(c.url)
    ready = ReadyNodes()
    watch = asyncio.create_task(ready.follow(c.url, await list_revision(pool, "/api/v1/nodes")),
                                name="bench-nodes")
    label = "with identities" if secure else "insecure port"
    try:
        started = time.perf_counter()
        _start_kubelets(c, nodes, secure=secure)
        async with every_second(progress, lambda: f"identities ({label}): nodes Ready {len(ready.ready)}/{nodes}"):
            await ready.until(lambda: len(ready.ready) >= nodes, timeout=_TIMEOUT,
                              alive=functools.partial(check_alive, c))
        return time.perf_counter() - started
    finally:
        watch.cancel()
        await asyncio.gather(watch, return_exceptions=True)
        pool.close()


def _sign_certificates(count: int) -> float:
    ca_cert, ca_key = pki.new_ca()
    started = time.perf_counter()
    for i in range(count):
        pki.sign(ca_cert, ca_key, common_name=f"system:node:node-{i}", organizations=("system:nodes",),
                 client=True)
    return time.perf_counter() - started


def run(*, size: Size, progress: Progress) -> ScenarioResult:
    nodes = pick(size, full=5_000, quick=200, smoke=10)
    result = ScenarioResult("node identities")
    progress(f"identities: {nodes} nodes, each system:node:<name> with its own token")
    with cluster() as c:
        secure = asyncio.run(_nodes_ready(c, nodes, secure=True, progress=progress))
        c.sample()
        result.add("nodes Ready, one identity each", secure, "s",
                   f"{nodes} nodes through the Node authorizer and NodeRestriction; KWOK: 5,000 in < 60 s")
        result.add("apiserver peak RSS (identities)", c.peak_rss.get("apiserver"), "bytes")
    progress(f"identities: the same {nodes} nodes through --insecure-port")
    with cluster(insecure_port=True) as c:
        insecure = asyncio.run(_nodes_ready(c, nodes, secure=False, progress=progress))
        result.add("nodes Ready, insecure port", insecure, "s", "no TLS, authentication or authorization")
    result.add("node start-up with identities vs insecure port", 100 * insecure / secure, "%",
               "time without security as a share of the time with it; goal >= 85%")
    signing = _sign_certificates(nodes)
    result.add(f"signing {nodes} node client certificates instead", signing, "s",
               "ECDSA P-256, one process; tokens cost nothing to make, and need no connection per node")
    return result
