"""ResourceQuota: a create that would take a namespace over one of its quotas is refused.

As Kubernetes' ``plugin/pkg/admission/resourcequota``, last in the chain:
for each ResourceQuota of the namespace whose scopes select the new object,
the object's cost (:mod:`machinery.quota`) is added to the quota's usage; if
any resource would exceed ``spec.hard`` the request gets Kubernetes' 403
("exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2"). A
quota the controller has not counted yet refuses with "status unknown for
quota" (once the cache has caught up with etcd: it may not have seen the
count yet), and a Pod that sets no request or limit a quota constrains gets
"failed quota: q: must specify limits.cpu for: app".

Usage is the larger, resource by resource, of the quota's ``status.used``
and the live objects in the watch cache, so a quota is enforced even before
the controller's next recount. An admitted create records its cost in the
quota's ``status.used`` at once (a write guarded by the quota's
resourceVersion, as Kubernetes' quota accessor does), so concurrent creates
cannot both take the last unit: a write that finds the quota changed waits for
the cache to catch up with etcd and judges again, and after five such
conflicts the create fails with the conflict rather than pass unchecked. The
ResourceQuota controller later recounts from the objects, correcting for
creates that failed after admission.

A namespace whose cached quotas are none is looked up in etcd (at most every
30 s per namespace, as Kubernetes' accessor does its live lookups), so that
a quota created a moment before is not missed while the cache catches up.

Dry runs check but record nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Mapping
from typing import Any, Final

from apiserver import errors
from apiserver.admission.chain import Attributes, Plugin
from apiserver.registry.store import WriteOptions
from apiserver.watchcache import CacheClosed, CacheNotReady, NotFresh
from machinery import quota
from machinery.api import kinds
from machinery.api.quantity import milli_value

#: Times a quota's status write is retried when another admission updated it first.
_ATTEMPTS: Final = 5
#: How long a live lookup of a namespace's quotas is trusted, and how many namespaces' are kept.
_LIVE_TTL: Final = 30.0
_LIVE_MAX: Final = 10_000


class _StatusUnknown(Exception):
    """A quota the controller has not counted yet, as far as the cache knows: ``error`` is the answer."""

    def __init__(self, error: errors.APIError) -> None:
        super().__init__(error.message)
        self.error = error


class ResourceQuota(Plugin):
    name = "ResourceQuota"
    operations = frozenset({"CREATE"})

    def __init__(self) -> None:
        # One namespace's quota writes at a time: they conflict with each other anyway.
        self._locks: dict[str, asyncio.Lock] = {}
        # namespace -> (when etcd was asked, whether it holds quotas there): the live lookups.
        self._live: dict[str, tuple[float, bool]] = {}

    async def _quotas_in_etcd(self, store: Any, namespace: str) -> bool:
        """Whether etcd holds quotas of a namespace where the cache holds none, asked at most every
        :data:`_LIVE_TTL` seconds per namespace (Kubernetes' quota accessor keeps such live lookups in
        an LRU cache for 30 s, so that a quota created just before a Pod is not missed)."""
        now = time.monotonic()
        known = self._live.get(namespace)
        if known is not None and now - known[0] < _LIVE_TTL:
            return known[1]
        try:
            listed = await store.list(store.namespace_filter(namespace))
        except errors.APIError:
            return False
        found = bool(listed.entries)
        if len(self._live) >= _LIVE_MAX:
            self._live.clear()
        self._live[namespace] = (now, found)
        return found

    def handles(self, attrs: Attributes) -> bool:
        return (super().handles(attrs) and attrs.resource.namespaced and not attrs.subresource
                and attrs.namespace is not None and attrs.object is not None)

    async def validate(self, attrs: Attributes) -> None:
        namespace = attrs.namespace or ""
        store = attrs.context.store(kinds.RESOURCE_QUOTAS)
        if not any(True for _ in store.cache.sorted_entries(namespace)):
            if not await self._quotas_in_etcd(store, namespace):
                return
            # A quota written a moment ago that the cache has not seen yet: judge on it once the cache has.
            with contextlib.suppress(NotFresh, CacheClosed, CacheNotReady):
                await store.cache.wait_fresh(timeout=1.0)
        lock = self._locks.setdefault(namespace, asyncio.Lock())
        async with lock:
            unknown_seen = False
            for attempt in range(1, _ATTEMPTS + 1):
                try:
                    await self._check_and_record(attrs)
                    return
                except _StatusUnknown as unknown:
                    # The cache may hold the quota as it was before the controller's first count
                    # (written a moment ago): judge once more on the quota as etcd holds it now.
                    if unknown_seen or attempt == _ATTEMPTS:
                        raise unknown.error from None
                    unknown_seen = True
                except errors.APIError as err:
                    if err.code != 409 or attempt == _ATTEMPTS:
                        raise
                # The quota changed since the cache's copy (another APIServer's admission, or this one's
                # write whose event has not arrived): judge again on the quota as etcd holds it now.
                with contextlib.suppress(NotFresh, CacheClosed, CacheNotReady):
                    await store.cache.wait_fresh(timeout=1.0)

    async def _check_and_record(self, attrs: Attributes) -> None:
        info = attrs.resource
        obj = attrs.object or {}
        namespace = attrs.namespace or ""
        store = attrs.context.store(kinds.RESOURCE_QUOTAS)
        try:
            cost = quota.usage(info.group, info.plural, obj)
        except (ValueError, TypeError, AttributeError):
            # Quantities or fields validation has not checked (it refuses them itself): nothing to count.
            return
        meta = obj.get("metadata") or {}
        name = meta.get("name") or meta.get("generateName") or ""
        updates: list[tuple[dict[str, Any], dict[str, int]]] = []
        for entry in store.cache.sorted_entries(namespace):
            q = entry.obj
            tracked = quota.tracked(q)
            if not quota.matches_scopes(q, info.group, info.plural, obj):
                continue
            qname = (q.get("metadata") or {}).get("name", "")
            if info is kinds.PODS and cost:
                _require_specified(info, name, qname, tracked, obj)
            relevant = {r: cost[r] for r in tracked if r in cost}
            if not relevant:
                continue
            hard = _quantities((q.get("spec") or {}).get("hard"))
            status = q.get("status") or {}
            if not status.get("hard") or any(r not in (status.get("used") or {}) for r in relevant):
                missing = ",".join(sorted(r for r in relevant if r not in (status.get("used") or {})))
                raise _StatusUnknown(errors.forbidden(info, name, f"status unknown for quota: {qname}, resources: "
                                                                  f"{missing or ','.join(sorted(relevant))}"))
            recorded = _quantities(status.get("used"))
            live = self._live_usage(attrs, q)
            used = {r: max(recorded.get(r, 0), live.get(r, 0)) for r in relevant}
            exceeded = sorted(r for r in relevant if r in hard and used[r] + relevant[r] > hard[r])
            if exceeded:
                requested = ",".join(f"{r}={quota.wire({r: relevant[r]})[r]}" for r in exceeded)
                current = ",".join(f"{r}={quota.wire({r: used[r]})[r]}" for r in exceeded)
                limited = ",".join(f"{r}={quota.wire({r: hard[r]})[r]}" for r in exceeded)
                raise errors.forbidden(info, name, f"exceeded quota: {qname}, requested: {requested}, "
                                                   f"used: {current}, limited: {limited}")
            new_used = {**recorded, **{r: used[r] + relevant[r] for r in relevant}}
            updates.append((q, new_used))
        if attrs.dry_run:
            return
        for q, new_used in updates:
            await self._record(attrs, q, new_used)

    def _live_usage(self, attrs: Attributes, q: Mapping[str, Any]) -> dict[str, int]:
        """The quota's usage over the objects of the request's kind in the watch cache."""
        info = attrs.resource
        cache = attrs.context.store(info).cache
        objects = ((info.group, info.plural, e.obj) for e in cache.sorted_entries(attrs.namespace))
        try:
            used = quota.total(q, objects)
        except (ValueError, TypeError, AttributeError):
            return {}
        cost_names = set(quota.usage(info.group, info.plural, attrs.object or {}))
        return {r: v for r, v in used.items() if r in cost_names}

    async def _record(self, attrs: Attributes, q: Mapping[str, Any], used: Mapping[str, int]) -> None:
        from apiserver.registry.core.resourcequotas import RESOURCE
        meta = q.get("metadata") or {}
        strategy = RESOURCE.subresources["status"].strategy  # type: ignore[attr-defined]
        store = attrs.context.store(kinds.RESOURCE_QUOTAS).using(strategy)
        expected = meta.get("resourceVersion")

        def mutate(obj: dict[str, Any], _current: Any) -> dict[str, Any]:
            obj.setdefault("status", {})["used"] = quota.wire(used)
            return obj

        await store.update_with(meta.get("namespace"), meta.get("name", ""), mutate,
                                WriteOptions(subresource="status", track_fields=False),
                                expect_rv=lambda _new: expected)


def _quantities(values: Any) -> dict[str, int]:
    """A quota's ResourceList in milli-units, leaving out values that are not quantities."""
    result: dict[str, int] = {}
    for name, text in (values.items() if isinstance(values, Mapping) else ()):
        try:
            result[name] = milli_value(text)
        except (ValueError, TypeError):
            continue
    return result


def _require_specified(info: kinds.ResourceInfo[Any], name: str, qname: str, tracked: set[str],
                       pod: Mapping[str, Any]) -> None:
    """A quota on requests or limits needs every container to set them (``enforcePodContainerConstraints``)."""
    missing: list[str] = []
    for resource in sorted(tracked):
        kind, _, what = resource.partition(".")
        if kind not in ("requests", "limits") or what not in ("cpu", "memory"):
            if resource in ("cpu", "memory"):
                kind, what = "requests", resource
            else:
                continue
        spec = pod.get("spec")
        containers = spec.get("containers") if isinstance(spec, Mapping) else None
        names = [c.get("name", "") for c in (containers if isinstance(containers, list) else ())
                 if isinstance(c, Mapping) and isinstance(c.get("resources") or {}, Mapping)
                 and isinstance((c.get("resources") or {}).get(kind) or {}, Mapping)
                 and what not in (((c.get("resources") or {}).get(kind)) or {})]
        if names:
            missing.append(f"{resource} for: {','.join(names)}")
    if missing:
        raise errors.forbidden(info, name, f"failed quota: {qname}: must specify {'; '.join(missing)}")
