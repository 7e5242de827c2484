"""The disruption controller: each PodDisruptionBudget's status, which the eviction API obeys.

Kubernetes' ``pkg/controller/disruption``: for every PDB, the Pods its
selector matches in its namespace, and

- **expectedPods**: with ``minAvailable`` as a number, the Pods there are;
  otherwise (``maxUnavailable``, or a percentage) the ``replicas`` of their
  controllers: a ReplicaSet (or the Deployment controlling it), an RC, a
  StatefulSet;
- **desiredHealthy**: ``minAvailable`` (a percentage of expectedPods rounds
  up), or expectedPods minus ``maxUnavailable`` (rounded up too);
- **currentHealthy**: the Ready Pods not being deleted and not in
  ``status.disruptedPods`` (Pods the eviction API let go less than 2 minutes
  ago, still on their way out);
- **disruptionsAllowed** = max(currentHealthy - desiredHealthy, 0), and the
  condition ``DisruptionAllowed`` (SufficientPods / InsufficientPods, SyncFailed
  when a controller's scale cannot be read).

The status is written only when it changed; entries of ``disruptedPods``
older than 2 minutes are dropped.

Concurrency: 5 workers keyed by PDB; handlers enqueue the PDBs a Pod matches.
"""

from __future__ import annotations

import datetime as dt
import logging
import math
from collections.abc import Sequence
from typing import Any, Final

from kubernetes.client import V1Pod, V1PodDisruptionBudget

from controller_manager.context import ControllerContext
from controller_manager.deploymentutil import scaled_value
from controller_manager.podutil import controller_of, is_pod_ready
from machinery.api.kinds import (
    DEPLOYMENTS,
    POD_DISRUPTION_BUDGETS,
    PODS,
    REPLICA_SETS,
    REPLICATION_CONTROLLERS,
    STATEFUL_SETS,
    ObjectKey,
    object_key,
)
from machinery.api.labels import Selector
from machinery.api.meta import format_time, parse_time, utcnow
from machinery.client.objects import key_of, meta_of, to_wire
from machinery.controller import Controller
from machinery.informer.shared import DeletedFinalStateUnknown
from machinery.informer.store import NAMESPACE_INDEX, index_by_namespace

log = logging.getLogger(__name__)

NAME: Final = "disruption-controller"
ALIASES: Final = ("disruption",)
DISRUPTION_ALLOWED: Final = "DisruptionAllowed"
#: How long an evicted Pod stays in ``disruptedPods`` (``DeletionTimeout``).
DELETION_TIMEOUT: Final = 120.0


class DisruptionController(Controller):
    def __init__(self, ctx: ControllerContext) -> None:
        self._pdbs = ctx.informers.informer(POD_DISRUPTION_BUDGETS, indexers={NAMESPACE_INDEX: index_by_namespace})
        self._pods = ctx.informers.informer(PODS, indexers={NAMESPACE_INDEX: index_by_namespace})
        self._rss = ctx.informers.informer(REPLICA_SETS)
        self._rcs = ctx.informers.informer(REPLICATION_CONTROLLERS)
        self._deployments = ctx.informers.informer(DEPLOYMENTS)
        self._sets = ctx.informers.informer(STATEFUL_SETS)
        super().__init__("disruption", informers=[self._pdbs, self._pods, self._rss, self._rcs, self._deployments,
                                                  self._sets], workers=5, clock=ctx.clock)
        self._client = ctx.client
        self._is_leading = ctx.is_leading
        self._pdbs.add_handler(on_add=self.enqueue, on_update=lambda _o, n: self.enqueue(n))
        self._pods.add_handler(on_add=self._pod_changed, on_update=self._pod_updated, on_delete=self._pod_deleted)

    def _pod_changed(self, pod: V1Pod) -> None:
        labels = meta_of(pod).labels or {}
        for pdb in self._pdbs.store.by_index(NAMESPACE_INDEX, meta_of(pod).namespace or ""):
            selector = _selector(pdb)
            if not selector.empty() and selector.matches(labels):
                self.enqueue(pdb)

    def _pod_updated(self, old: V1Pod, new: V1Pod) -> None:
        if meta_of(old).resource_version != meta_of(new).resource_version:
            self._pod_changed(new)
            if (meta_of(old).labels or {}) != (meta_of(new).labels or {}):
                self._pod_changed(old)

    def _pod_deleted(self, obj: V1Pod | DeletedFinalStateUnknown[V1Pod]) -> None:
        self._pod_changed(obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj)

    async def sync(self, key: ObjectKey) -> None:
        pdb = self._pdbs.store.get(key)
        if pdb is None or not self._is_leading():
            return
        now = utcnow()
        selector = _selector(pdb)
        pods = [] if selector.empty() else [
            p for p in self._pods.store.by_index(NAMESPACE_INDEX, meta_of(pdb).namespace or "")
            if selector.matches(meta_of(p).labels or {})]
        disrupted = self._live_disruptions(pdb, pods, now)
        try:
            expected, desired = self._expected_and_desired(pdb, pods)
        except LookupError as err:
            await self._write(pdb, _failed_status(pdb, str(err), now))
            return
        healthy = sum(1 for p in pods if is_pod_ready(p) and meta_of(p).deletion_timestamp is None
                      and meta_of(p).name not in disrupted)
        allowed = max(healthy - desired, 0) if expected > 0 or desired == 0 else 0
        if not pods:
            allowed = 0
        status: dict[str, Any] = {"observedGeneration": meta_of(pdb).generation, "currentHealthy": healthy,
                                  "desiredHealthy": desired, "expectedPods": expected,
                                  "disruptionsAllowed": allowed}
        if disrupted:
            status["disruptedPods"] = disrupted
        reason, cstatus = ("SufficientPods", "True") if allowed > 0 else ("InsufficientPods", "False")
        status["conditions"] = _conditions(pdb, cstatus, reason, "", now)
        await self._write(pdb, status)
        if disrupted:
            # Look again when the oldest disruption expires, in case its Pod never goes.
            oldest = min(parse_time(t) or now for t in disrupted.values())
            self.queue.add_after(key, max((oldest - now).total_seconds() + DELETION_TIMEOUT, 1.0))

    def _live_disruptions(self, pdb: V1PodDisruptionBudget, pods: Sequence[V1Pod], now: dt.datetime,
                          ) -> dict[str, str]:
        """``disruptedPods`` without entries past the timeout or for Pods already gone or being deleted."""
        recorded = (pdb.status.disrupted_pods if pdb.status is not None else None) or {}
        by_name = {meta_of(p).name: p for p in pods}
        live: dict[str, str] = {}
        for name, when in recorded.items():
            pod = by_name.get(name)
            stamp = parse_time(when)
            if pod is None or meta_of(pod).deletion_timestamp is not None or stamp is None:
                continue
            if (now - stamp).total_seconds() > DELETION_TIMEOUT:
                log.info("pdb %s: pod %s was expected to be deleted but it has not been", key_of(pdb), name)
                continue
            live[name] = format_time(stamp)
        return live

    def _expected_and_desired(self, pdb: V1PodDisruptionBudget, pods: Sequence[V1Pod]) -> tuple[int, int]:
        spec = pdb.spec
        min_available = spec.min_available if spec is not None else None
        max_unavailable = spec.max_unavailable if spec is not None else None
        if max_unavailable is not None:
            expected = self._controllers_scale(pods)
            return expected, max(expected - scaled_value(max_unavailable, expected, round_up=True), 0)
        if min_available is None:
            return len(pods), 0
        if isinstance(min_available, int) or not str(min_available).endswith("%"):
            return len(pods), scaled_value(min_available, len(pods), round_up=True)
        expected = self._controllers_scale(pods)
        percent = int(str(min_available)[:-1])
        return expected, math.ceil(percent * expected / 100)

    def _controllers_scale(self, pods: Sequence[V1Pod]) -> int:
        """The sum of ``replicas`` over the Pods' controllers (``getExpectedScale``)."""
        seen: dict[str, int] = {}
        for pod in pods:
            ref = controller_of(meta_of(pod))
            if ref is None:
                raise LookupError(f"found no controller ref for pod {meta_of(pod).name!r}")
            namespace = meta_of(pod).namespace
            owner: Any = None
            if ref.kind == REPLICA_SETS.kind:
                owner = self._rss.store.get(object_key(namespace, ref.name))
                parent = controller_of(meta_of(owner)) if owner is not None else None
                if parent is not None and parent.kind == DEPLOYMENTS.kind:
                    owner = self._deployments.store.get(object_key(namespace, parent.name)) or owner
            elif ref.kind == REPLICATION_CONTROLLERS.kind:
                owner = self._rcs.store.get(object_key(namespace, ref.name))
            elif ref.kind == STATEFUL_SETS.kind:
                owner = self._sets.store.get(object_key(namespace, ref.name))
            if owner is None:
                raise LookupError(f"found no controllers for pod {meta_of(pod).name!r}")
            replicas = owner.spec.replicas if owner.spec is not None else None
            seen[meta_of(owner).uid or ""] = 1 if replicas is None else replicas
        return sum(seen.values())

    async def _write(self, pdb: V1PodDisruptionBudget, status: dict[str, Any]) -> None:
        current = to_wire(pdb.status) if pdb.status is not None else {}
        if _comparable(current) == _comparable(status):
            return
        body = to_wire(pdb)
        body["status"] = status
        await self._client.update_status(POD_DISRUPTION_BUDGETS, body)


def _selector(pdb: V1PodDisruptionBudget) -> Selector:
    selector = pdb.spec.selector if pdb.spec is not None else None
    return Selector.from_label_selector(selector) if selector is not None else Selector.nothing()


def _conditions(pdb: V1PodDisruptionBudget, status: str, reason: str, message: str,
                now: dt.datetime) -> list[dict[str, Any]]:
    current = [to_wire(c) for c in (pdb.status.conditions if pdb.status is not None else None) or ()]
    old = next((c for c in current if c.get("type") == DISRUPTION_ALLOWED), None)
    transition = old["lastTransitionTime"] if old is not None and old.get("status") == status else format_time(now)
    condition = {"type": DISRUPTION_ALLOWED, "status": status, "reason": reason, "message": message,
                 "lastTransitionTime": transition, "observedGeneration": meta_of(pdb).generation}
    return [c for c in current if c.get("type") != DISRUPTION_ALLOWED] + [condition]


def _failed_status(pdb: V1PodDisruptionBudget, message: str, now: dt.datetime) -> dict[str, Any]:
    current = to_wire(pdb.status) if pdb.status is not None else {}
    return {**current, "observedGeneration": meta_of(pdb).generation, "disruptionsAllowed": 0,
            "currentHealthy": current.get("currentHealthy", 0), "desiredHealthy": current.get("desiredHealthy", 0),
            "expectedPods": current.get("expectedPods", 0),
            "conditions": _conditions(pdb, "False", "SyncFailed", message, now)}


def _comparable(status: dict[str, Any]) -> dict[str, Any]:
    """The status without condition times, which change nothing by themselves."""
    result = dict(status)
    result["conditions"] = [{k: v for k, v in c.items() if k != "lastTransitionTime"}
                            for c in status.get("conditions") or ()]
    return result
