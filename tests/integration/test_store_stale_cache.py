"""An update that starts from a watch cache behind etcd is decided on etcd's copy, as GuaranteedUpdate does.

The store's first read of an update comes from the watch cache, which may lag
behind etcd by a few milliseconds (another APIServer's write, or this one's
whose event has not arrived). Here the cache's watch is stopped, so it is
behind etcd for certain; every answer must still be the one etcd's copy gives.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from apiserver.errors import APIError
from apiserver.registry.core.persistentvolumeclaims import (
    PersistentVolumeClaimStatusStrategy,
    PersistentVolumeClaimStrategy,
)
from apiserver.registry.store import Store, WriteOptions
from apiserver.storage.etcd import EtcdStorage
from apiserver.watchcache import WatchCache
from machinery.api import kinds
from tests import harness

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def etcd_url() -> Iterator[str]:
    with harness.etcd_alone("kubesim-stale-") as url:
        yield url


def claim(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}


async def frozen_store(url: str, name: str) -> tuple[Store, WatchCache, EtcdStorage]:
    """A claims store whose cache holds ``name`` as created, then stops watching."""
    storage = EtcdStorage([url])
    await storage.connect()
    info = kinds.PERSISTENT_VOLUME_CLAIMS
    cache = WatchCache(info, storage)
    watching = asyncio.create_task(cache.run())
    await cache.ready.wait()
    store = Store(info, PersistentVolumeClaimStrategy(), storage, cache)
    await store.create("default", claim(name), WriteOptions())
    key = store.key("default", name)
    while cache.get(key) is None:
        await asyncio.sleep(0.01)
    watching.cancel()
    await asyncio.gather(watching, return_exceptions=True)
    return store, cache, storage


def bound(obj: dict[str, Any], _current: Any) -> dict[str, Any]:
    obj["status"] = {"phase": "Bound"}
    return obj


def grown(obj: dict[str, Any], _current: Any) -> dict[str, Any]:
    obj["spec"]["resources"]["requests"]["storage"] = "2Gi"
    return obj


def test_validation_against_a_stale_cached_object_is_decided_again_on_etcds(etcd_url: str) -> None:
    async def scenario() -> None:
        store, cache, storage = await frozen_store(etcd_url, "grow")
        try:
            status = store.using(PersistentVolumeClaimStatusStrategy(PersistentVolumeClaimStrategy()))
            await status.update_with("default", "grow", bound, WriteOptions())
            # The cache still holds the claim unbound: growing it is invalid there, valid in etcd.
            assert (cache.get(store.key("default", "grow")).obj.get("status") or {}).get("phase") != "Bound"
            entry, _ = await store.update_with("default", "grow", grown, WriteOptions())
            assert entry.obj["spec"]["resources"]["requests"]["storage"] == "2Gi"
        finally:
            await storage.close()

    asyncio.run(scenario())


def test_a_no_op_against_a_stale_cached_object_is_written_when_etcds_differs(etcd_url: str) -> None:
    async def scenario() -> None:
        store, cache, storage = await frozen_store(etcd_url, "noop")
        try:
            status = store.using(PersistentVolumeClaimStatusStrategy(PersistentVolumeClaimStrategy()))
            await status.update_with("default", "noop", bound, WriteOptions())
            # Setting the phase back to what the stale cache shows is no change there, but one in etcd.
            pending = store.using(PersistentVolumeClaimStatusStrategy(PersistentVolumeClaimStrategy()))

            def unbind(obj: dict[str, Any], _current: Any) -> dict[str, Any]:
                obj["status"] = {"phase": "Pending"}
                return obj

            assert (cache.get(store.key("default", "noop")).obj.get("status") or {}) == {"phase": "Pending"}
            entry, _ = await pending.update_with("default", "noop", unbind, WriteOptions())
            assert entry.obj["status"] == {"phase": "Pending"}
            assert (decoded := await storage.get(store.key("default", "noop"))) is not None
            assert b'"Bound"' not in decoded.value
        finally:
            await storage.close()

    asyncio.run(scenario())


def test_a_real_invalid_update_is_still_refused(etcd_url: str) -> None:
    async def scenario() -> None:
        store, _cache, storage = await frozen_store(etcd_url, "refused")
        try:
            with pytest.raises(APIError) as refused:
                await store.update_with("default", "refused", grown, WriteOptions())
            assert refused.value.code == 422
        finally:
            await storage.close()

    asyncio.run(scenario())
