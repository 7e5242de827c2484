"""NodeRestriction: what a kubelet's writes may and may not do, with Kubernetes' messages."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from apiserver.admission import Attributes, UserInfo
from apiserver.admission.noderestriction import NodeRestriction, forbidden_labels
from apiserver.errors import APIError
from machinery.api import kinds
from tests.unit.fakecache import FakeCaches, FakeStore

NODE1 = UserInfo("system:node:node-1", ("system:nodes", "system:authenticated"))


@pytest.fixture
def caches() -> FakeCaches:
    c = FakeCaches()
    c.of(kinds.NODES).put({"metadata": {"name": "node-1", "uid": "n1"}})
    c.of(kinds.PODS).put({"metadata": {"name": "mine", "namespace": "app", "uid": "p1"}, "spec": {"nodeName": "node-1"}})
    c.of(kinds.PODS).put({"metadata": {"name": "theirs", "namespace": "app", "uid": "p2"},
                          "spec": {"nodeName": "node-2"}})
    return c


def attributes(caches: FakeCaches, operation: str, resource: kinds.ResourceInfo[Any], *, obj: Any = None,
               old: Any = None, name: str = "", namespace: str | None = None, subresource: str = "",
               user: UserInfo = NODE1) -> Attributes:
    context = SimpleNamespace(store=lambda info: FakeStore(caches.of(info)))
    return Attributes(operation, resource, subresource, namespace, name, obj, old, False, user,  # type: ignore[arg-type]
                      context)  # type: ignore[arg-type]


async def refused(attrs: Attributes) -> str:
    plugin = NodeRestriction()
    assert plugin.handles(attrs)
    with pytest.raises(APIError) as err:
        await plugin.admit(attrs)
    assert err.value.code == 403 and err.value.reason == "Forbidden"
    return err.value.message


async def test_a_node_modifies_only_itself(caches: FakeCaches) -> None:
    other = {"metadata": {"name": "node-2"}}
    message = await refused(attributes(caches, "UPDATE", kinds.NODES, obj=other, old=other, name="node-2"))
    assert message == 'nodes "node-2" is forbidden: node "node-1" is not allowed to modify node "node-2"'
    own = {"metadata": {"name": "node-1", "labels": {"kubernetes.io/hostname": "node-1"}}}
    await NodeRestriction().admit(attributes(caches, "UPDATE", kinds.NODES, obj=own, old=own, name="node-1"))


async def test_a_node_cannot_change_its_taints_or_restricted_labels(caches: FakeCaches) -> None:
    old = {"metadata": {"name": "node-1"}, "spec": {"taints": [{"key": "a", "effect": "NoSchedule"}]}}
    new = {"metadata": {"name": "node-1"}, "spec": {}}
    assert await refused(attributes(caches, "UPDATE", kinds.NODES, obj=new, old=old, name="node-1")) == \
        'nodes "node-1" is forbidden: node "node-1" is not allowed to modify taints'
    labelled = {"metadata": {"name": "node-1", "labels": {"node-restriction.kubernetes.io/pool": "gold"}}}
    assert await refused(attributes(caches, "CREATE", kinds.NODES, obj=labelled)) == (
        'nodes "node-1" is forbidden: node "node-1" is not allowed to set the following labels: '
        "node-restriction.kubernetes.io/pool")


@pytest.mark.parametrize(("new", "old", "forbidden"), [
    pytest.param({"topology.kubernetes.io/zone": "a"}, {}, [], id="kubelet-label"),
    pytest.param({"node.kubernetes.io/exclude": "x"}, {}, [], id="kubelet-namespace"),
    pytest.param({"node-role.kubernetes.io/master": ""}, {}, ["node-role.kubernetes.io/master"], id="node-role"),
    pytest.param({}, {"example.kubernetes.io/x": "1"}, ["example.kubernetes.io/x"], id="removing-counts"),
    pytest.param({"team": "a"}, {}, [], id="own-label"),
])
def test_forbidden_labels(new: dict[str, str], old: dict[str, str], forbidden: list[str]) -> None:
    assert forbidden_labels(new, old) == forbidden


async def test_pod_status_and_deletion_only_for_pods_bound_to_the_node(caches: FakeCaches) -> None:
    theirs = {"metadata": {"name": "theirs", "namespace": "app"}, "spec": {"nodeName": "node-2"}}
    assert await refused(attributes(caches, "UPDATE", kinds.PODS, obj=theirs, old=theirs, name="theirs",
                                    namespace="app", subresource="status")) == (
        'pods "theirs" is forbidden: node "node-1" can only update pod status for pods with spec.nodeName set to '
        "itself")
    assert await refused(attributes(caches, "DELETE", kinds.PODS, old=theirs, name="theirs", namespace="app")) == \
        'pods "theirs" is forbidden: node "node-1" can only delete pods with spec.nodeName set to itself'
    mine = {"metadata": {"name": "mine", "namespace": "app"}, "spec": {"nodeName": "node-1"}}
    await NodeRestriction().admit(attributes(caches, "UPDATE", kinds.PODS, obj=mine, old=mine, name="mine",
                                             namespace="app", subresource="status"))
    relabelled = {**mine, "metadata": {**mine["metadata"], "labels": {"x": "y"}}}
    assert "cannot update labels through pod status" in await refused(attributes(
        caches, "UPDATE", kinds.PODS, obj=relabelled, old=mine, name="mine", namespace="app", subresource="status"))


async def test_only_mirror_pods_without_references(caches: FakeCaches) -> None:
    plain = {"metadata": {"name": "p", "namespace": "app"}, "spec": {"nodeName": "node-1"}}
    assert "can only create mirror pods" in await refused(attributes(caches, "CREATE", kinds.PODS, obj=plain,
                                                                     namespace="app"))
    owner = {"apiVersion": "v1", "kind": "Node", "name": "node-1", "uid": "n1", "controller": True}
    mirror = {"metadata": {"name": "p", "namespace": "app", "annotations": {"kubernetes.io/config.mirror": "x"},
                           "ownerReferences": [owner]},
              "spec": {"nodeName": "node-1", "containers": [{"name": "c", "env": [
                  {"name": "E", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]}]}}
    assert "can not create pods that reference secrets" in await refused(
        attributes(caches, "CREATE", kinds.PODS, obj=mirror, namespace="app"))
    mirror["spec"]["containers"][0]["env"] = []
    await NodeRestriction().admit(attributes(caches, "CREATE", kinds.PODS, obj=mirror, namespace="app"))


async def test_tokens_only_bound_to_its_pods(caches: FakeCaches) -> None:
    def request(ref: dict[str, Any] | None) -> Attributes:
        return attributes(caches, "CREATE", kinds.SERVICE_ACCOUNTS, obj={"spec": {"boundObjectRef": ref}},
                          name="default", namespace="app", subresource="token")
    assert "node requested token not bound to a pod" in await refused(request(None))
    theirs = {"apiVersion": "v1", "kind": "Pod", "name": "theirs", "uid": "p2"}
    assert "bound to a pod scheduled on a different node" in await refused(request(theirs))
    await NodeRestriction().admit(request({"apiVersion": "v1", "kind": "Pod", "name": "mine", "uid": "p1"}))
    # A Pod the kubelet saw through another APIServer, not yet in this one's cache: read from etcd.
    caches.of(kinds.PODS).lag({"metadata": {"name": "new", "namespace": "app", "uid": "p3"},
                               "spec": {"nodeName": "node-1"}})
    await NodeRestriction().admit(request({"apiVersion": "v1", "kind": "Pod", "name": "new", "uid": "p3"}))
    assert "not found" in str(await _error(request({"apiVersion": "v1", "kind": "Pod", "name": "nowhere",
                                                    "uid": "p9"})))


async def _error(attrs: Attributes) -> APIError:
    with pytest.raises(APIError) as err:
        await NodeRestriction().admit(attrs)
    return err.value


async def test_leases_and_other_users(caches: FakeCaches) -> None:
    other = {"metadata": {"name": "node-2", "namespace": "kube-node-lease"}}
    assert await refused(attributes(caches, "CREATE", kinds.LEASES, obj=other, namespace="kube-node-lease")) == (
        'leases.coordination.k8s.io "node-2" is forbidden: can only access node lease with the same name as the '
        "requesting node")
    jane = UserInfo("jane", ("system:authenticated",))
    assert not NodeRestriction().handles(attributes(caches, "CREATE", kinds.LEASES, obj=other, user=jane))
