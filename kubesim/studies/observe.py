"""Watching a cluster during a replay: when it has settled, and what a study measures.

One :class:`Observer` per cluster keeps informers on Pods, Nodes and the
workload kinds the cluster serves, and from their events:

- **settled** (:meth:`Observer.settled`): every Pod that is not finished is
  bound or marked ``PodScheduled=False``, none is terminating, every
  ReplicationController, ReplicaSet, Deployment and StatefulSet has as many
  replicas as it asks for and has seen its latest generation, and (when the
  scheduler's ``/metrics`` is known) no Pod waits in its active or backoff
  queue. A deterministic replay waits for this between two steps;
- **scheduling latency**: from the moment a Pod is first seen unbound to the
  moment it is seen bound (both through this watch, so both profiles of a
  comparison are measured the same way);
- **preemptions**: Pods seen with ``DisruptionTarget`` reason ``PreemptionByScheduler``;
- **samples** of how many Pods are scheduled and pending, at trace times;
- the **final placements**, each Pod with its node, owner, requests and the
  scheduler's score explanation.

Concurrency: one event loop; informer handlers and the replay's checks run
on it, between awaits.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

import httpx

from kubesim.studies import api
from kubesim.studies.objects import controller_of
from machinery.api.quantity import node_allocatable, pod_requests
from machinery.client import Client
from machinery.informer import DeletedFinalStateUnknown, InformerFactory, SharedInformer

_WORKLOADS: Final = ("ReplicationController", "ReplicaSet.apps", "Deployment.apps", "StatefulSet.apps")
_FINISHED: Final = ("Succeeded", "Failed")
PREEMPTION_BY_SCHEDULER: Final = "PreemptionByScheduler"


@dataclass(frozen=True, slots=True)
class Sample:
    t: float
    scheduled: int
    pending: int


@dataclass(frozen=True, slots=True)
class Placement:
    """A Pod at the end of a run."""

    namespace: str
    name: str
    #: ``Kind/name`` of its controller, or "" for a Pod of its own.
    owner: str
    node: str
    cpu: int
    memory: int
    score_result: str = ""
    filter_result: str = ""


@dataclass
class Observations:
    samples: list[Sample] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    preempted: set[str] = field(default_factory=set)


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    meta: dict[str, Any] = obj.get("metadata") or {}
    return meta


def _scheduled_false(pod: dict[str, Any]) -> bool:
    return any(c.get("type") == "PodScheduled" and c.get("status") == "False"
               for c in (pod.get("status") or {}).get("conditions") or ())


class Observer:
    """Informers on one cluster, and what they tell (see the module docstring)."""

    def __init__(self, client: Client, *, scheduler_metrics: str | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._client = client
        self._metrics_url = scheduler_metrics
        self._clock = clock
        self._factory = InformerFactory(client)
        self._pods: SharedInformer[api.RawObject] | None = None
        self._nodes: SharedInformer[api.RawObject] | None = None
        self._workloads: list[SharedInformer[api.RawObject]] = []
        self._seen_unbound: dict[str, float] = {}
        self._bound: set[str] = set()
        self.observations = Observations()
        self._task: asyncio.Task[None] | None = None
        self._http: httpx.AsyncClient | None = None

    async def start(self) -> None:
        discovery = await api.discover(self._client)
        served = discovery.by_group_kind()
        self._pods = self._factory.informer(served["Pod"].info)
        self._nodes = self._factory.informer(served["Node"].info)
        self._workloads = [self._factory.informer(served[k].info) for k in _WORKLOADS if k in served]
        self._pods.add_handler(on_add=self._on_pod, on_update=lambda _old, new: self._on_pod(new),
                               on_delete=self._on_pod_deleted)
        self._task = asyncio.create_task(self._factory.run(), name="observer-informers")
        self._http = httpx.AsyncClient(timeout=5.0)
        await asyncio.wait_for(self._factory.wait_for_cache_sync(), 60)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        if self._http is not None:
            await self._http.aclose()

    # --- events ------------------------------------------------------------------------------------

    def _on_pod(self, obj: api.RawObject) -> None:
        pod = obj.wire
        uid = str(_meta(pod).get("uid") or "")
        now = self._clock()
        if (pod.get("spec") or {}).get("nodeName"):
            if uid not in self._bound:
                self._bound.add(uid)
                first = self._seen_unbound.pop(uid, None)
                if first is not None:
                    self.observations.latencies.append(now - first)
        else:
            self._seen_unbound.setdefault(uid, now)
        for condition in (pod.get("status") or {}).get("conditions") or ():
            if condition.get("type") == "DisruptionTarget" and condition.get("reason") == PREEMPTION_BY_SCHEDULER:
                self.observations.preempted.add(uid)

    def _on_pod_deleted(self, obj: api.RawObject | DeletedFinalStateUnknown[api.RawObject]) -> None:
        raw = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        uid = str(_meta(raw.wire).get("uid") or "")
        self._seen_unbound.pop(uid, None)

    # --- reading -----------------------------------------------------------------------------------

    def pods(self) -> list[dict[str, Any]]:
        return [p.wire for p in self._pods.store.list()] if self._pods is not None else []

    def nodes(self) -> list[dict[str, Any]]:
        return [n.wire for n in self._nodes.store.list()] if self._nodes is not None else []

    def sample(self, t: float) -> Sample:
        scheduled = pending = 0
        for pod in self.pods():
            if (pod.get("status") or {}).get("phase") in _FINISHED or _meta(pod).get("deletionTimestamp"):
                continue
            if (pod.get("spec") or {}).get("nodeName"):
                scheduled += 1
            else:
                pending += 1
        sample = Sample(t, scheduled, pending)
        self.observations.samples.append(sample)
        return sample

    async def settled(self) -> bool:
        for pod in self.pods():
            meta, spec = _meta(pod), pod.get("spec") or {}
            if meta.get("deletionTimestamp"):
                return False
            if (pod.get("status") or {}).get("phase") in _FINISHED:
                continue
            if not spec.get("nodeName") and not _scheduled_false(pod):
                return False
        for informer in self._workloads:
            for item in informer.store.list():
                obj = item.wire
                spec, status = obj.get("spec") or {}, obj.get("status") or {}
                wanted = spec.get("replicas", 1)
                if status.get("observedGeneration", 0) < _meta(obj).get("generation", 0):
                    return False
                if status.get("replicas", 0) != wanted:
                    return False
        return await self._queue_empty()

    async def _queue_empty(self) -> bool:
        if self._metrics_url is None or self._http is None:
            return True
        try:
            text = (await self._http.get(self._metrics_url)).text
        except httpx.HTTPError:
            return True
        for line in text.splitlines():
            if line.startswith("scheduler_pending_pods{") and ('queue="active"' in line or 'queue="backoff"' in line):
                with contextlib.suppress(ValueError):
                    if float(line.rsplit(" ", 1)[1]) > 0:
                        return False
        return True

    async def wait_settled(self, *, timeout: float = 120.0, interval: float = 0.05, stable: int = 3) -> bool:
        """Until :meth:`settled` holds ``stable`` checks in a row (events may still be on their way)."""
        deadline = self._clock() + timeout
        streak = 0
        while self._clock() < deadline:
            streak = streak + 1 if await self.settled() else 0
            if streak >= stable:
                return True
            await asyncio.sleep(interval)
        return False

    def placements(self) -> list[Placement]:
        out: list[Placement] = []
        for pod in self.pods():
            meta, spec = _meta(pod), pod.get("spec") or {}
            if (pod.get("status") or {}).get("phase") in _FINISHED or meta.get("deletionTimestamp"):
                continue
            owner = controller_of(pod)
            requests = pod_requests(pod, non_zero=False)
            annotations = meta.get("annotations") or {}
            out.append(Placement(str(meta.get("namespace") or ""), str(meta.get("name") or ""),
                                 f"{owner.get('kind')}/{owner.get('name')}" if owner else "",
                                 str(spec.get("nodeName") or ""), requests.get("cpu", 0), requests.get("memory", 0),
                                 str(annotations.get("kubesim.io/score-result") or ""),
                                 str(annotations.get("kubesim.io/filter-result") or "")))
        return sorted(out, key=lambda p: (p.namespace, p.owner, p.name))

    def allocatable(self) -> dict[str, dict[str, int]]:
        """Each node's allocatable cpu and memory (milli-units)."""
        out: dict[str, dict[str, int]] = {}
        for node in self.nodes():
            alloc = node_allocatable(node)
            out[str(_meta(node).get("name"))] = {"cpu": alloc.get("cpu", 0), "memory": alloc.get("memory", 0),
                                                 "pods": alloc.get("pods", 0) // 1000}
        return out
