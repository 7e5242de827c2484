"""ResourceQuota admission when its guarded write of the quota's usage conflicts.

The quota is read from the watch cache, which may not hold the latest usage yet (this APIServer's own
last charge, or another's): the write then conflicts. Admission judges again once the cache caught up,
and after five conflicts the create fails with the conflict: it never passes unchecked (CI once saw a
third Pod admitted under a quota of two).
"""

from __future__ import annotations

from typing import Any

import pytest

from apiserver import errors
from apiserver.admission.resource_quota import ResourceQuota
from apiserver.storage.objects import Entry
from machinery.api import kinds
from tests.unit.test_admission import attrs

QUOTA = {"metadata": {"name": "q", "namespace": "default", "resourceVersion": "5"},
         "spec": {"hard": {"pods": "2"}}, "status": {"hard": {"pods": "2"}, "used": {"pods": "1"}}}
POD = {"metadata": {"name": "c", "namespace": "default"}, "spec": {"containers": [{"name": "c", "image": "x"}]}}


class QuotaCache:
    def __init__(self) -> None:
        self.fresh_waits = 0

    def sorted_entries(self, namespace: str | None = None) -> list[Entry]:
        return [Entry("/registry/resourcequotas/default/q", b"{}", 5, QUOTA)]

    async def wait_fresh(self, timeout: float = 3.0) -> None:
        self.fresh_waits += 1


class EmptyCache:
    def sorted_entries(self, namespace: str | None = None) -> list[Entry]:
        return []


class QuotaStore:
    """The quotas' store: its status writes conflict ``conflicts`` times, then succeed."""

    def __init__(self, conflicts: int) -> None:
        self.cache = QuotaCache()
        self.conflicts = conflicts
        self.writes = 0

    def using(self, _strategy: Any) -> QuotaStore:
        return self

    async def update_with(self, *_args: Any, **_kwargs: Any) -> None:
        self.writes += 1
        if self.writes <= self.conflicts:
            raise errors.conflict(kinds.RESOURCE_QUOTAS, "q", "the object has been modified; please apply "
                                  "your changes to the latest version and try again")


class Context:
    def __init__(self, quotas: QuotaStore) -> None:
        self.quotas = quotas

    def store(self, info: kinds.ResourceInfo[Any]) -> Any:
        if info is kinds.RESOURCE_QUOTAS:
            return self.quotas
        return type("Store", (), {"cache": EmptyCache()})()


async def test_a_conflicting_charge_is_judged_again_once_the_cache_caught_up() -> None:
    quotas = QuotaStore(conflicts=1)
    await ResourceQuota().validate(attrs("CREATE", kinds.PODS, POD, ctx=Context(quotas)))  # type: ignore[arg-type]
    assert (quotas.writes, quotas.cache.fresh_waits) == (2, 1)


async def test_a_charge_that_keeps_conflicting_fails_the_create() -> None:
    quotas = QuotaStore(conflicts=99)
    with pytest.raises(errors.APIError) as failed:
        await ResourceQuota().validate(attrs("CREATE", kinds.PODS, POD, ctx=Context(quotas)))  # type: ignore[arg-type]
    assert failed.value.code == 409
    assert (quotas.writes, quotas.cache.fresh_waits) == (5, 4)


class CatchingUpCache(QuotaCache):
    """Holds the quota as first written (no status) until the admission waits for it to catch up."""

    def __init__(self, counted: bool) -> None:
        super().__init__()
        self.counted = counted

    def sorted_entries(self, namespace: str | None = None) -> list[Entry]:
        quota = QUOTA if self.fresh_waits and self.counted else {**QUOTA, "status": {}}
        return [Entry("/registry/resourcequotas/default/q", b"{}", 5, quota)]


async def test_a_quota_not_yet_counted_in_the_cache_is_judged_again_once_it_caught_up() -> None:
    """CI once refused a Pod with "status unknown" right after the client had read the quota's count."""
    quotas = QuotaStore(conflicts=0)
    quotas.cache = CatchingUpCache(counted=True)
    await ResourceQuota().validate(attrs("CREATE", kinds.PODS, POD, ctx=Context(quotas)))  # type: ignore[arg-type]
    assert (quotas.writes, quotas.cache.fresh_waits) == (1, 1)


async def test_a_quota_never_counted_still_refuses_with_status_unknown() -> None:
    quotas = QuotaStore(conflicts=0)
    quotas.cache = CatchingUpCache(counted=False)
    with pytest.raises(errors.APIError) as refused:
        await ResourceQuota().validate(attrs("CREATE", kinds.PODS, POD, ctx=Context(quotas)))  # type: ignore[arg-type]
    assert refused.value.code == 403 and "status unknown for quota: q, resources: pods" in refused.value.message
    assert (quotas.writes, quotas.cache.fresh_waits) == (0, 1)


class LateCache(QuotaCache):
    """Holds no quota until the admission waits for it to catch up with etcd."""

    def sorted_entries(self, namespace: str | None = None) -> list[Entry]:
        return super().sorted_entries(namespace) if self.fresh_waits else []


class ListedStore(QuotaStore):
    def __init__(self, in_etcd: bool) -> None:
        super().__init__(conflicts=0)
        self.cache = LateCache()
        self.in_etcd = in_etcd
        self.lists = 0

    def namespace_filter(self, namespace: str | None) -> str | None:
        return namespace

    async def list(self, _flt: Any) -> Any:
        self.lists += 1
        entries = [Entry("/registry/resourcequotas/default/q", b"{}", 5, QUOTA)] if self.in_etcd else []
        return type("Listed", (), {"entries": entries})()


async def test_a_quota_the_cache_has_not_seen_yet_is_found_by_a_live_lookup() -> None:
    """As Kubernetes' quota accessor: no quota in the cache means asking etcd, or a quota made just
    before a Pod would let the Pod pass unchecked."""
    quotas = ListedStore(in_etcd=True)
    await ResourceQuota().validate(attrs("CREATE", kinds.PODS, POD, ctx=Context(quotas)))  # type: ignore[arg-type]
    assert (quotas.lists, quotas.cache.fresh_waits, quotas.writes) == (1, 1, 1)


async def test_a_namespace_without_quotas_is_looked_up_once_per_interval() -> None:
    quotas = ListedStore(in_etcd=False)
    plugin = ResourceQuota()
    for _ in range(3):
        await plugin.validate(attrs("CREATE", kinds.PODS, POD, ctx=Context(quotas)))  # type: ignore[arg-type]
    assert (quotas.lists, quotas.cache.fresh_waits, quotas.writes) == (1, 0, 0)
