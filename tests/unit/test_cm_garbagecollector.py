"""The garbage collector: the ownership graph, and what its workers send, against an in-memory API."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from controller_manager.controllers.garbagecollector import GarbageCollector
from machinery.api.kinds import LEASES, NAMESPACES, NODES, PODS, REPLICATION_CONTROLLERS, ResourceInfo
from machinery.api.meta import format_time, utcnow
from machinery.api.unstructured import Unstructured
from tests.unit.test_cm_fakes import Api, FakeInformers, context, pod, settle, status


def owner(uid: str, name: str = "web", kind: str = "ReplicationController", block: bool = True,
          api_version: str = "v1") -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "name": name, "uid": uid, "controller": True,
            "blockOwnerDeletion": block}


def rc(uid: str = "uid-web", **meta: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ReplicationController",
            "metadata": {"name": "web", "namespace": "ns", "uid": uid, **meta},
            "spec": {"selector": {"app": "web"}, "template": {"metadata": {"labels": {"app": "web"}}, "spec": {
                "containers": [{"name": "c", "image": "i"}]}}}, "status": {"replicas": 0}}


class Harness:
    def __init__(self, rcs: list[dict[str, Any]], pods: list[dict[str, Any]]) -> None:
        self.api = Api()
        self.informers = FakeInformers()
        self.gc = GarbageCollector(context(self.api, self.informers),
                                   resources=(NAMESPACES, NODES, PODS, REPLICATION_CONTROLLERS, LEASES))
        # The informers hold what the API stores, resourceVersions included, as after a list.
        self.informers.list(REPLICATION_CONTROLLERS, [self.api.put(REPLICATION_CONTROLLERS, o) for o in rcs])
        self.informers.list(PODS, [self.api.put(PODS, o) for o in pods])
        for resource in (NAMESPACES, NODES, LEASES):
            self.informers.list(resource, [])

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        async with self.informers.running():
            task = asyncio.create_task(self.gc.run())
            await settle()
            try:
                yield
            finally:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)

    def deletes(self) -> dict[str, Any]:
        return {path.split("?")[0].rsplit("/", 1)[-1]: body for _, path, body in self.api.calls("DELETE")}

    def patches(self, name: str) -> list[Any]:
        return [body for _, path, body in self.api.calls("PATCH") if path.rsplit("/", 1)[-1] == name]


async def test_the_graph_links_owners_and_dependents() -> None:
    h = Harness([rc()], [pod("a", owners=[owner("uid-web")]), pod("b", owners=[owner("uid-ghost", "ghost")])])
    async with h.informers.running():
        await settle()
        web = h.gc.graph["uid-web"]
        assert web.observed and web.dependents == {"uid-a"}
        assert web.identity.describe() == "ReplicationController ns/web"
        ghost = h.gc.graph["uid-ghost"]
        assert not ghost.observed and ghost.dependents == {"uid-b"}, "an owner never seen is virtual"
        assert ghost.identity.namespace == "ns"
        assert h.gc.graph["uid-a"].owners[0].uid == "uid-web"


async def test_dependents_of_missing_owners_are_deleted_with_preconditions() -> None:
    h = Harness([rc()], [pod("kept", owners=[owner("uid-web")]), pod("orphaned", owners=[owner("uid-ghost", "ghost")])])
    async with h.running():
        deletes = h.deletes()
        assert list(deletes) == ["orphaned"]
        assert deletes["orphaned"]["propagationPolicy"] == "Background"
        assert deletes["orphaned"]["preconditions"]["uid"] == "uid-orphaned"
        assert deletes["orphaned"]["preconditions"]["resourceVersion"]
        assert h.api.calls("GET", "/replicationcontrollers/ghost"), "the absence was checked, not assumed"


async def test_a_live_owner_keeps_the_dependent_and_the_dead_reference_is_dropped() -> None:
    h = Harness([rc()], [pod("two-owners", owners=[owner("uid-web"), owner("uid-dead", "dead", block=False)])])
    async with h.running():
        assert h.deletes() == {}
        assert h.patches("two-owners") == [{"metadata": {"ownerReferences": [{"$patch": "delete", "uid": "uid-dead"}],
                                                         "uid": "uid-two-owners"}}]


async def test_deleting_the_owner_collects_its_dependents() -> None:
    h = Harness([rc()], [pod("a", owners=[owner("uid-web")]), pod("b", owners=[owner("uid-web")])])
    async with h.running():
        h.api.objects.pop(REPLICATION_CONTROLLERS.path("ns", "web"))
        h.informers.event(REPLICATION_CONTROLLERS, "DELETED", rc())
        await settle()
        assert sorted(h.deletes()) == ["a", "b"]
        assert h.api.calls("GET", "/replicationcontrollers/web") == [], "an owner seen deleted is not looked up"
        assert all(obj["metadata"]["name"] != "a" for obj in h.api.objects.values())


async def test_foreground_deletion_removes_the_finalizer_once_blocking_dependents_are_gone() -> None:
    deleting = rc(finalizers=["foregroundDeletion"], deletionTimestamp=format_time(utcnow()))
    h = Harness([rc()], [pod("a", owners=[owner("uid-web")]), pod("free", owners=[owner("uid-web", block=False)])])
    async with h.running():
        h.informers.event(REPLICATION_CONTROLLERS, "MODIFIED", h.api.put(REPLICATION_CONTROLLERS, deleting))
        await settle()
        assert sorted(h.deletes()) == ["a", "free"]
        assert h.patches("web") == [], "a blocking dependent is still there"
        h.informers.event(PODS, "DELETED", pod("a", owners=[owner("uid-web")]))
        await settle()
        [patch] = h.patches("web")
        assert patch["metadata"]["finalizers"] is None
        assert patch["metadata"]["resourceVersion"]


async def test_orphan_deletion_unlinks_the_dependents_then_removes_the_finalizer() -> None:
    orphaning = rc(finalizers=["orphan"], deletionTimestamp=format_time(utcnow()))
    h = Harness([rc()], [pod("a", owners=[owner("uid-web")])])
    async with h.running():
        h.informers.event(REPLICATION_CONTROLLERS, "MODIFIED", h.api.put(REPLICATION_CONTROLLERS, orphaning))
        await settle()
        assert h.patches("a") == [{"metadata": {"ownerReferences": [{"$patch": "delete", "uid": "uid-web"}],
                                                "uid": "uid-a"}}]
        assert h.patches("web")[0]["metadata"]["finalizers"] is None
        assert h.deletes() == {}


async def test_owners_of_kinds_kubesim_does_not_serve_are_left_alone() -> None:
    h = Harness([], [pod("a", owners=[owner("uid-w", "w", kind="Widget", api_version="example.com/v1")])])
    async with h.running():
        assert h.deletes() == {}
        assert h.patches("a") == []


async def test_owners_of_a_kind_discovery_finds_later_are_looked_up_again() -> None:
    """A Pod owned by a custom object whose CRD is newer than the collector's last discovery."""
    widgets = ResourceInfo(group="example.com", version="v1", plural="widgets", singular="widget", kind="Widget",
                           namespaced=True, model_ref=Unstructured, etcd_resource="example.com/widgets",
                           definition="com.example.v1.Widget")
    h = Harness([], [pod("a", owners=[owner("uid-w", "w", kind="Widget", api_version="example.com/v1")])])
    h.api.rules.append(lambda r: status(404, "NotFound", 'widgets.example.com "w" not found')
                       if "/widgets/" in r.url.path else None)
    async with h.running():
        assert h.deletes() == {}, "an owner of an unknown kind is not assumed absent"
        h.gc._by_kind[("example.com/v1", "Widget")] = widgets
        h.gc._recheck_virtual_nodes()
        await settle()
        assert h.api.calls("GET", "/apis/example.com/v1/namespaces/ns/widgets/w"), "the owner looked up"
        assert list(h.deletes()) == ["a"]
