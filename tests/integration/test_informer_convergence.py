"""Informers against the real APIServer: they converge after heavy churn, an APIServer restart, and compaction.

Every handler call goes through a :class:`Ledger` that fails the test on a
duplicated or impossible notification (an add for a known key, an update that
does not move the resourceVersion forward, a delete of an unknown key); at the
end the ledger, the informer's store and a fresh list must all agree, which
is what "no missed and no duplicated handler calls" means.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Callable

import aetcd
import pytest
from kubernetes.client import V1Pod
from prometheus_client import REGISTRY

from machinery.api.kinds import PODS, ObjectKey
from machinery.client import Client, ClientConfig, NotFound, key_of
from machinery.client.backoff import ExponentialBackoff
from machinery.informer import DeletedFinalStateUnknown, Reflector, SharedInformer
from tests import harness
from tests.kube import pod

pytestmark = pytest.mark.integration


class Ledger:
    """The state the handlers were told about, and every inconsistency in what they were told."""

    def __init__(self) -> None:
        self.live: dict[ObjectKey, int] = {}
        self.errors: list[str] = []
        self.calls = 0

    def on_add(self, obj: V1Pod) -> None:
        self.calls += 1
        key, rv = key_of(obj), int(obj.metadata.resource_version)
        if key in self.live:
            self.errors.append(f"add of known {key} at {rv} (had {self.live[key]})")
        self.live[key] = rv

    def on_update(self, old: V1Pod, new: V1Pod) -> None:
        self.calls += 1
        key, old_rv, new_rv = key_of(new), int(old.metadata.resource_version), int(new.metadata.resource_version)
        if self.live.get(key) != old_rv:
            self.errors.append(f"update of {key} from {old_rv}, but handlers last saw {self.live.get(key)}")
        if new_rv <= old_rv:
            self.errors.append(f"update of {key} did not move forward: {old_rv} -> {new_rv}")
        self.live[key] = new_rv

    def on_delete(self, obj: V1Pod | DeletedFinalStateUnknown[V1Pod]) -> None:
        self.calls += 1
        key = obj.key if isinstance(obj, DeletedFinalStateUnknown) else key_of(obj)
        if self.live.pop(key, None) is None:
            self.errors.append(f"delete of unknown {key}")


class Watched:
    def __init__(self, client: Client, namespace: str) -> None:
        self.client = client
        self.namespace = namespace
        # client-go's backoff shape, ten times faster, so that reconnecting does not dominate the test.
        reflector: Reflector[V1Pod] = Reflector(client, PODS, namespace=namespace,
                                                backoff=ExponentialBackoff(0.08, 3.0, jitter=1.0))
        self.informer: SharedInformer[V1Pod] = SharedInformer(client, PODS, namespace=namespace,
                                                              reflector=reflector)
        self.ledger = Ledger()
        self.informer.add_handler(on_add=self.ledger.on_add, on_update=self.ledger.on_update,
                                  on_delete=self.ledger.on_delete)
        self.task = asyncio.create_task(self.informer.run(), name="informer-under-test")

    def store_state(self) -> dict[ObjectKey, int]:
        return {key_of(p): int(p.metadata.resource_version) for p in self.informer.store.list()}

    async def converge(self, truth: Client, timeout: float = 60.0) -> dict[ObjectKey, int]:
        """Wait until the store equals a fresh consistent list; then the ledger must agree too."""
        expected: dict[ObjectKey, int] = {}
        async with asyncio.timeout(timeout):
            while True:
                assert not self.task.done(), "the informer task ended"
                listed = await truth.list(PODS, namespace=self.namespace, resource_version="")
                expected = {key_of(p): int(p.metadata.resource_version) for p in listed.items}
                if self.store_state() == expected:
                    break
                await asyncio.sleep(0.1)
        assert self.ledger.errors == []
        assert self.ledger.live == expected
        return expected

    async def close(self) -> None:
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)


@pytest.fixture
async def client(cluster: harness.Cluster) -> AsyncIterator[Client]:
    async with Client(cluster.config()) as c:
        yield c


async def churn(client: Client, namespace: str, operations: int, *, prefix: str = "p", seed: int = 7,
                concurrency: int = 16) -> None:
    """``operations`` random creates, updates and deletes, ``concurrency`` at a time."""
    rng = random.Random(seed)
    existing: list[str] = []
    counter = 0
    plan: list[tuple[str, str]] = []
    for _ in range(operations):
        roll = rng.random()
        if not existing or roll < 0.4:
            counter += 1
            name = f"{prefix}{counter}"
            existing.append(name)
            plan.append(("create", name))
        elif roll < 0.8:
            plan.append(("update", rng.choice(existing)))
        else:
            name = existing.pop(rng.randrange(len(existing)))
            plan.append(("delete", name))
    # Operations on one name keep their order; different names run concurrently.
    by_name: dict[str, list[str]] = {}
    for op, name in plan:
        by_name.setdefault(name, []).append(op)
    gate = asyncio.Semaphore(concurrency)

    async def run_ops(name: str, ops: list[str]) -> None:
        for i, op in enumerate(ops):
            async with gate:
                if op == "create":
                    await client.create(PODS, pod(name), namespace=namespace)
                elif op == "update":
                    await client.patch(PODS, name, {"metadata": {"labels": {"step": str(i)}}}, namespace=namespace)
                else:
                    await client.delete(PODS, name, namespace=namespace, grace_period_seconds=0)

    await asyncio.gather(*(run_ops(n, ops) for n, ops in by_name.items()))


async def test_store_equals_a_fresh_list_after_a_thousand_mixed_writes(client: Client, namespace: str) -> None:
    watched = Watched(client, namespace)
    try:
        await asyncio.wait_for(watched.informer.wait_synced(), 30)
        await churn(client, namespace, 1000)
        expected = await watched.converge(client)
        assert len(expected) > 100
        assert watched.ledger.calls >= 1000 * 0.8, "every write is seen (updates to one name may not coalesce)"
    finally:
        await watched.close()


async def changes_through(config: ClientConfig, namespace: str, victims: list[str]) -> None:
    """Create, update and delete Pods through another APIServer while the watched one is down."""
    async with Client(config) as other:
        await churn(other, namespace, 60, prefix="meanwhile", seed=11)
        for name in victims[:10]:
            await other.patch(PODS, name, {"metadata": {"labels": {"changed": "once"}}}, namespace=namespace)
            await other.patch(PODS, name, {"metadata": {"labels": {"changed": "twice"}}}, namespace=namespace)
        for name in victims[10:15]:
            await other.delete(PODS, name, namespace=namespace, grace_period_seconds=0)


async def outage(cluster: harness.Cluster, namespace: str, victims: list[str],
                 during: Callable[[], None] | None = None) -> None:
    """Kill the watched APIServer, change things through a second one, then bring the first back."""
    second = await asyncio.to_thread(harness.start_apiserver, cluster.etcd.url, cluster.workdir)
    try:
        await asyncio.to_thread(cluster.apiserver.process.kill)
        await changes_through(second.config(), namespace, victims)
        if during is not None:
            await asyncio.to_thread(during)
    finally:
        await asyncio.to_thread(second.process.stop)
    cluster.apiserver.process.start()
    await asyncio.to_thread(cluster.apiserver.process.wait_ready, 30)


async def seeded(client: Client, namespace: str, count: int) -> list[str]:
    await asyncio.gather(*(client.create(PODS, pod(f"seed{i}"), namespace=namespace) for i in range(count)))
    return [f"seed{i}" for i in range(count)]


async def fresh_client(cluster: harness.Cluster) -> Client:
    client = Client(cluster.config())
    async with asyncio.timeout(30):
        while True:
            try:
                await client.get(PODS, "probe", namespace="default")
            except NotFound:
                return client
            except Exception:  # noqa: BLE001 - the APIServer may still be starting
                await asyncio.sleep(0.1)


async def test_informer_converges_after_the_apiserver_is_killed_and_restarted(
        fresh_cluster: harness.Cluster) -> None:
    client = await fresh_client(fresh_cluster)
    watched = Watched(client, "default")
    try:
        victims = await seeded(client, "default", 30)
        await asyncio.wait_for(watched.informer.wait_synced(), 30)
        await watched.converge(client)
        await outage(fresh_cluster, "default", victims)
        expected = await watched.converge(client)
        assert all(f"default/{n}" in expected for n in victims[:10])
        assert not any(f"default/{n}" in expected for n in victims[10:15])
    finally:
        await watched.close()
        await client.aclose()


def _lists() -> float:
    return REGISTRY.get_sample_value("kubesim_informer_lists_total", {"resource": "pods"}) or 0.0


async def test_forced_compaction_leads_to_a_relist_not_a_crash(fresh_cluster: harness.Cluster) -> None:
    client = await fresh_client(fresh_cluster)
    watched = Watched(client, "default")
    try:
        victims = await seeded(client, "default", 30)
        await asyncio.wait_for(watched.informer.wait_synced(), 30)
        await watched.converge(client)
        lists_before = _lists()
        stale_rv = watched.informer.last_sync_resource_version

        def compact() -> None:
            async def run() -> None:
                async with aetcd.Client(port=fresh_cluster.etcd.port) as etcd:
                    latest = (await etcd.put(b"/kubesim-test/compaction-marker", b"x")).header.revision
                    await etcd.compact(latest)
            asyncio.run(run())

        await outage(fresh_cluster, "default", victims, during=compact)
        await watched.converge(client)
        assert _lists() > lists_before, "the 410 after compaction must lead to a relist"
        assert int(watched.informer.last_sync_resource_version) > int(stale_rv)
    finally:
        await watched.close()
        await client.aclose()
