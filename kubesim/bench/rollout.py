"""Scenario: a rolling update of one large Deployment (maxSurge 25%, maxUnavailable 25%).

In one cluster (etcd, the APIServer, the controller-manager, the scheduler and
one kubelet_sim): ``nodes`` nodes, then a Deployment of ``replicas`` Pods is
created and waited for (every replica available); then its image is changed
and the rollout timed, from the update to the Deployment reporting every
replica updated and available for the new generation (what ``kubectl rollout
status`` waits for). The writes of the rollout are read from etcd's history
and set beside the ceiling, as the other scenarios do.

Concurrency: one event loop; the Deployment is polled twice a second (the
bench's own load stays negligible beside the rollout's).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any, Final

import orjson

from kubesim.bench.cluster import BenchCluster
from kubesim.bench.measure import (
    RSS_GOALS,
    Pool,
    Progress,
    add_pod_rate,
    add_process_figures,
    count_writes,
    etcd_revision,
    every_second,
    start_component,
    start_nodes,
)
from kubesim.bench.results import ScenarioResult

NAMESPACE: Final = "rollout"
NAME: Final = "web"
_TIMEOUT: Final = 1800.0
_PATH: Final = f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments/{NAME}"


@dataclass(frozen=True)
class Sizes:
    nodes: int = 500
    replicas: int = 1000


def run(c: BenchCluster, sizes: Sizes = Sizes(), *, ceiling: float | None, progress: Progress) -> ScenarioResult:
    metrics = [start_component(c, "controller-manager", "controller_manager"),
               start_component(c, "scheduler", "scheduler")]
    result = ScenarioResult("rolling update")
    asyncio.run(_phases(c, metrics, sizes, result, ceiling, progress))
    add_process_figures(result, c, goals=RSS_GOALS)
    return result


def _deployment(replicas: int, image: str) -> dict[str, Any]:
    labels = {"app": NAME}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": NAME},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "strategy": {"type": "RollingUpdate",
                                  "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
                     "template": {"metadata": {"labels": labels}, "spec": {"containers": [
                         {"name": "c", "image": image,
                          "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]}}}}


async def _state(pool: Pool) -> dict[str, Any]:
    body, _ = await pool.call("GET", _PATH)
    state: dict[str, Any] = orjson.loads(body)
    return state


def _complete(d: dict[str, Any], replicas: int) -> bool:
    status = d.get("status") or {}
    return (status.get("observedGeneration", 0) >= d["metadata"].get("generation", 1)
            and status.get("updatedReplicas") == replicas and status.get("replicas") == replicas
            and status.get("availableReplicas") == replicas)


async def _wait(pool: Pool, replicas: int, progress: Progress, what: str) -> None:
    deadline = time.monotonic() + _TIMEOUT
    last: dict[str, Any] = {}

    def line() -> str:
        status = last.get("status") or {}
        return (f"{what}: updated {status.get('updatedReplicas', 0)}, available "
                f"{status.get('availableReplicas', 0)}, total {status.get('replicas', 0)} of {replicas}")
    async with every_second(progress, line):
        while time.monotonic() < deadline:
            last = await _state(pool)
            if _complete(last, replicas):
                return
            await asyncio.sleep(0.5)
    raise TimeoutError(f"{what} did not complete in {_TIMEOUT:g}s")


async def _phases(c: BenchCluster, metrics: list[str], sizes: Sizes, result: ScenarioResult,
                  ceiling: float | None, progress: Progress) -> None:
    pool = Pool(c.url)
    try:
        await pool.call("POST", "/api/v1/namespaces", {"metadata": {"name": NAMESPACE}})
        progress(f"rolling update: {sizes.nodes} nodes")
        ready = await start_nodes(c, pool, sizes.nodes, progress=progress, label="rolling update",
                                  timeout=_TIMEOUT)
        metrics.extend(ready.metrics)
        result.add("nodes Ready", ready.seconds, "s")
        started = time.perf_counter()
        await pool.call("POST", f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments",
                        _deployment(sizes.replicas, "registry.k8s.io/pause:3.9"))
        await _wait(pool, sizes.replicas, progress, "rollout of the first revision")
        result.add("Deployment available", time.perf_counter() - started, "s",
                   f"{sizes.replicas} replicas created through a ReplicaSet")
        current = await _state(pool)
        current["spec"]["template"]["spec"]["containers"][0]["image"] = "registry.k8s.io/pause:3.10"
        first = etcd_revision(c.etcd_url)
        started = time.perf_counter()
        await pool.call("PUT", _PATH, current)
        await _wait(pool, sizes.replicas, progress, "rolling update")
        seconds = time.perf_counter() - started
        await asyncio.sleep(2.0)
        writes = await count_writes(c.etcd_url, first, etcd_revision(c.etcd_url), NAMESPACE)
    finally:
        pool.close()
    result.add("rolling update complete", seconds, "s",
               f"{sizes.replicas} replicas replaced, maxSurge 25%, maxUnavailable 25%")
    add_pod_rate(result, "replace", sizes.replicas / seconds, writes, sizes.replicas, ceiling)
