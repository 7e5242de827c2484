"""The namespace controller: empties a namespace being deleted, then lets it go.

A deleted Namespace stays ``Terminating`` while ``spec.finalizers`` holds
``kubernetes``. This controller (``pkg/controller/namespace``) then:

1. deletes every namespaced resource in it, one by one with Background
   propagation; the resources are found through discovery at each sync, as
   Kubernetes does, so custom resources a CRD added are emptied too (a group
   that fails discovery sets ``NamespaceDeletionDiscoveryFailure`` and the
   sync is retried);
2. lists what remains and reports it in the Namespace's status conditions
   (``NamespaceContentRemaining``: "Some resources are remaining: pods. has 2
   resource instances", ``NamespaceFinalizersRemaining``...), exactly as
   Kubernetes words them;
3. while something remains, looks again after half the longest grace period
   of the Pods still there (plus a second), or with back-off when nothing
   explains what remains;
4. once it is empty, removes ``kubernetes`` through ``/finalize``; the
   APIServer then deletes the Namespace.

Concurrency: ``concurrent_namespace_syncs`` workers, never two on the same
namespace. Every decision reads the APIServer, not a cache: a namespace is
deleted rarely and must never be finalized while content remains.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import httpx
from kubernetes.client import V1Namespace

from controller_manager.context import ControllerContext
from machinery import discovery
from machinery.api.kinds import NAMESPACES, PODS, RESOURCES, ResourceInfo
from machinery.api.meta import format_time, utcnow
from machinery.api.unstructured import metadata_only
from machinery.client.errors import ApiError, MethodNotAllowed, NotFound
from machinery.client.objects import meta_of, to_wire
from machinery.client.rest import Client
from machinery.workqueue import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    WorkQueue,
    run_workers,
)

log = logging.getLogger(__name__)

NAME: Final = "namespace-controller"
ALIASES: Final = ("namespace",)
FINALIZER: Final = "kubernetes"
#: The wait assumed for content whose finalizers must first run (``finalizerEstimateSeconds``).
FINALIZER_ESTIMATE_SECONDS: Final = 15

#: The built-in namespaced resources a namespace can hold, in discovery order (before discovery answers).
NAMESPACED: Final[tuple[ResourceInfo[Any], ...]] = tuple(
    r for r in RESOURCES if r.namespaced and "delete" in r.verbs)

#: The status conditions this controller maintains, and their wording when all is well.
_OK_CONDITIONS: Final = {
    "NamespaceDeletionDiscoveryFailure": ("ResourcesDiscovered", "All resources successfully discovered"),
    "NamespaceDeletionGroupVersionParsingFailure": ("ParsedGroupVersions",
                                                    "All legacy kube types successfully parsed"),
    "NamespaceDeletionContentFailure": ("ContentDeleted",
                                        "All content successfully deleted, may be waiting on finalization"),
    "NamespaceContentRemaining": ("ContentRemoved", "All content successfully removed"),
    "NamespaceFinalizersRemaining": ("ContentHasNoFinalizers", "All content-preserving finalizers finished"),
}


@dataclass(slots=True)
class DeletionReport:
    """What one pass over a namespace's content found."""

    estimate: int = 0
    remaining: dict[str, int] = field(default_factory=dict)
    finalizers: Counter[str] = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)
    #: Group versions discovery could not read ("metrics.k8s.io/v1beta1": the error).
    discovery_failures: dict[str, str] = field(default_factory=dict)

    def conditions(self) -> dict[str, tuple[str, str, str]]:
        """The condition each type should show: (status, reason, message), Kubernetes' words."""
        result = {ctype: ("False", reason, message) for ctype, (reason, message) in _OK_CONDITIONS.items()}
        if self.discovery_failures:
            failing = ", ".join(f"{gv}: {err}" for gv, err in sorted(self.discovery_failures.items()))
            result["NamespaceDeletionDiscoveryFailure"] = (
                "True", "DiscoveryFailed",
                f"Discovery failed for some groups, {len(self.discovery_failures)} failing: {failing}")
        if self.errors:
            failures = ", ".join(sorted(self.errors))
            result["NamespaceDeletionContentFailure"] = (
                "True", "ContentDeletionFailed",
                f"Failed to delete all resource types, {len(self.errors)} remaining: {failures}")
        if self.remaining:
            listed = sorted(f"{resource} has {count} resource instances"
                            for resource, count in self.remaining.items())
            result["NamespaceContentRemaining"] = (
                "True", "SomeResourcesRemain", f"Some resources are remaining: {', '.join(listed)}")
        if self.finalizers:
            listed = sorted(f"{name} in {count} resource instances"
                            for name, count in self.finalizers.items())
            result["NamespaceFinalizersRemaining"] = (
                "True", "SomeFinalizersRemain",
                f"Some content in the namespace has finalizers remaining: {', '.join(listed)}")
        return result


class NamespaceController:
    """Deletes the content of terminating namespaces and finalizes them."""

    def __init__(self, ctx: ControllerContext) -> None:
        self._namespaces = ctx.informers.informer(NAMESPACES)
        self._client = ctx.client
        self._is_leading = ctx.is_leading
        self._workers = ctx.options.concurrent_namespace_syncs
        # Namespaces are retried at least every minute, sooner than other controllers' 1,000 s cap.
        self.queue: WorkQueue[str] = WorkQueue("namespace", clock=ctx.clock, rate_limiter=MaxOfRateLimiter(
            ItemExponentialFailureRateLimiter(0.005, 60.0), BucketRateLimiter(10.0, 100, clock=ctx.clock)))
        self._namespaces.add_handler(on_add=self._changed, on_update=lambda _old, new: self._changed(new))

    async def run(self) -> None:
        await self._namespaces.wait_synced()
        log.info("%s: caches synced, starting %d workers", NAME, self._workers)
        await run_workers(self.queue, self._process, workers=self._workers)

    def _changed(self, namespace: V1Namespace) -> None:
        meta = meta_of(namespace)
        if meta.deletion_timestamp is not None:
            self.queue.add(meta.name or "")

    async def _process(self, name: str) -> None:
        """Sync one namespace: forget it when done, look again while content remains, back off on errors."""
        try:
            wait = await self.sync(name)
        except (ApiError, httpx.TransportError, NamespaceContentError) as err:
            log.warning("deletion of namespace %s failed, will retry: %s", name, err)
            self.queue.add_rate_limited(name)
            return
        self.queue.forget(name)
        if wait is not None:
            log.debug("namespace %s: content remains, looking again in %gs", name, wait)
            self.queue.add_after(name, wait)

    async def sync(self, name: str) -> float | None:
        """Empty and finalize the namespace if it is being deleted; seconds until the next look, if needed."""
        if not self._is_leading():
            return None
        try:
            namespace = await self._client.get(NAMESPACES, name)
        except NotFound:
            return None
        meta = meta_of(namespace)
        if meta.deletion_timestamp is None:
            return None
        if namespace.status is None or namespace.status.phase != "Terminating":
            wire = to_wire(namespace)
            wire["status"] = {**wire.get("status", {}), "phase": "Terminating"}
            namespace = await self._client.update_status(NAMESPACES, wire)
        found = await discovery.discover(self._client)
        resources = discovery.with_verbs([r for r in found.preferred_resources() if r.namespaced],
                                         "delete", "list")
        report = await delete_all_content(self._client, name, meta.deletion_timestamp, resources)
        report.discovery_failures = found.failed
        await self._update_conditions(namespace, report)
        if report.errors or report.discovery_failures:
            raise NamespaceContentError("; ".join(report.errors + list(report.discovery_failures.values())))
        if report.estimate > 0:
            return float(report.estimate // 2 + 1)
        await self._finalize(namespace)
        return None

    async def _finalize(self, namespace: V1Namespace) -> None:
        """Remove our finalizer from ``spec.finalizers`` through ``/finalize``."""
        wire = to_wire(namespace)
        spec = wire.setdefault("spec", {})
        spec["finalizers"] = sorted({f for f in spec.get("finalizers") or () if f != FINALIZER})
        try:
            # The typed client has no method for namespaces/finalize (client-go's Finalize); its PUT helper
            # is the one that knows how to address a subresource.
            await self._client.update(NAMESPACES, wire, subresource="finalize")
        except NotFound:
            return
        log.info("namespace %s is empty: removed its %r finalizer", meta_of(namespace).name, FINALIZER)

    async def _update_conditions(self, namespace: V1Namespace, report: DeletionReport) -> None:
        wire = to_wire(namespace)
        status = wire.setdefault("status", {})
        conditions: list[dict[str, Any]] = list(status.get("conditions") or ())
        changed = False
        now = format_time(utcnow())
        for ctype, (cstatus, reason, message) in report.conditions().items():
            old = next((c for c in conditions if c.get("type") == ctype), None)
            if old is None:
                conditions.append({"type": ctype, "status": cstatus, "lastTransitionTime": now,
                                   "reason": reason, "message": message})
                changed = True
            elif (old.get("status"), old.get("reason"), old.get("message")) != (cstatus, reason, message):
                if old.get("status") != cstatus:
                    old["lastTransitionTime"] = now
                old.update(status=cstatus, reason=reason, message=message)
                changed = True
        if not changed:
            return
        status["conditions"] = conditions
        try:
            await self._client.update_status(NAMESPACES, wire)
        except ApiError as err:
            log.warning("couldn't update status condition for namespace %s: %s", meta_of(namespace).name, err)


class NamespaceContentError(Exception):
    """Some content of a terminating namespace could not be deleted, or remains unexplained (retried)."""


async def delete_all_content(client: Client, namespace: str, deleted_at: dt.datetime,
                             resources: Sequence[ResourceInfo[Any]] = NAMESPACED) -> DeletionReport:
    """Delete everything in the namespace; report what remains (``deleteAllContent``)."""
    report = DeletionReport()
    for resource in map(metadata_only, resources):
        try:
            estimate = await _estimate_graceful_termination(client, resource, namespace, deleted_at)
            await _delete_each_item(client, resource, namespace)
            items = (await client.list(resource, namespace=namespace)).items
        except (ApiError, httpx.TransportError) as err:
            report.errors.append(str(err))
            continue
        if not items:
            continue
        report.remaining[f"{resource.plural}.{resource.group}"] = len(items)
        finalizers = Counter(f for item in items for f in meta_of(item).finalizers or ())
        report.finalizers.update(finalizers)
        if estimate:
            report.estimate = max(report.estimate, estimate)
        elif finalizers:
            report.estimate = max(report.estimate, FINALIZER_ESTIMATE_SECONDS)
        else:
            report.errors.append(f"unexpected items still remain in namespace: {namespace} for gvr: "
                                 f"{resource.group}/{resource.version}, Resource={resource.plural}")
    return report


async def _delete_each_item(client: Client, resource: ResourceInfo[Any], namespace: str) -> None:
    """Delete every object of one resource with Background propagation (``deleteEachItem``).

    Kubernetes first tries ``deletecollection``; the typed client does not
    offer it, so every object is deleted on its own, a batch at a time.
    """
    items = (await client.list(resource, namespace=namespace)).items
    for start in range(0, len(items), _DELETE_BATCH):
        results = await asyncio.gather(*(
            client.delete(resource, meta_of(item).name or "", namespace=namespace,
                          propagation_policy="Background")
            for item in items[start:start + _DELETE_BATCH]), return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException) and not isinstance(result, NotFound | MethodNotAllowed):
                raise result


#: Deletions in flight at once: enough to keep the APIServer busy without crowding the client.
_DELETE_BATCH: Final = 32


async def _estimate_graceful_termination(client: Client, resource: ResourceInfo[Any], namespace: str,
                                         deleted_at: dt.datetime) -> int:
    """How long the namespace's Pods may still take to go: their longest grace period, unless already past."""
    if (resource.group, resource.plural) != ("", PODS.plural):
        return 0
    estimate = 0
    for pod in (await client.list(PODS, namespace=namespace)).items:
        phase = pod.status.phase if pod.status is not None else None
        grace = pod.spec.termination_grace_period_seconds if pod.spec is not None else None
        if phase not in ("Succeeded", "Failed") and grace is not None:
            estimate = max(estimate, grace)
    if utcnow() - deleted_at >= dt.timedelta(seconds=estimate):
        return 0
    return estimate
