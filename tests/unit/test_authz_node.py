"""The Node authorizer: a kubelet reads only what its Pods use, and writes only its own Lease."""

from __future__ import annotations

from typing import Any

import pytest

from apiserver.admission import UserInfo
from apiserver.authorization.authorizer import ALLOW, NO_OPINION, Attributes
from apiserver.authorization.node import NodeAuthorizer
from apiserver.registry.core.pods import RESOURCE as PODS_RESOURCE
from machinery.api import kinds
from tests.unit.fakecache import FakeCaches

NODE1 = UserInfo("system:node:node-1", ("system:nodes", "system:authenticated"))


def pod(name: str, node: str, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "app", "uid": f"uid-{name}"},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "x"}], **spec}}


@pytest.fixture
def authorizer() -> NodeAuthorizer:
    caches = FakeCaches()
    strategy = PODS_RESOURCE.strategy
    assert strategy is not None
    pods = caches.of(kinds.PODS)
    pods.field_extractor = strategy.fields
    pods.put(pod("mine", "node-1", volumes=[{"name": "s", "secret": {"secretName": "mine-secret"}},
                                            {"name": "d", "persistentVolumeClaim": {"claimName": "data"}}],
                 serviceAccountName="robot"))
    pods.put(pod("env", "node-1", containers=[{"name": "c", "image": "x", "envFrom": [
        {"configMapRef": {"name": "settings"}}]}]))
    pods.put(pod("theirs", "node-2", volumes=[{"name": "s", "secret": {"secretName": "their-secret"}}]))
    caches.of(kinds.PERSISTENT_VOLUME_CLAIMS).put({"metadata": {"name": "data", "namespace": "app"},
                                                   "spec": {"volumeName": "pv-1"}})
    return NodeAuthorizer(caches.of)


def attrs(verb: str, resource: str, name: str = "", namespace: str = "app", subresource: str = "",
          group: str = "", user: UserInfo = NODE1) -> Attributes:
    return Attributes(user, verb, namespace=namespace, api_group=group, resource=resource, subresource=subresource,
                      name=name)


@pytest.mark.parametrize(("request_", "decision", "reason"), [
    pytest.param(attrs("get", "secrets", "mine-secret"), ALLOW, "", id="its-pods-secret"),
    pytest.param(attrs("get", "secrets", "their-secret"), NO_OPINION,
                 "no relationship found between node 'node-1' and this object", id="another-nodes-secret"),
    pytest.param(attrs("watch", "configmaps", "settings"), ALLOW, "", id="configmap-by-envfrom"),
    pytest.param(attrs("list", "secrets"), NO_OPINION, "No Object name found", id="unnamed-list"),
    pytest.param(attrs("update", "secrets", "mine-secret"), NO_OPINION, "can only read resources of this type",
                 id="no-writes"),
    pytest.param(attrs("get", "persistentvolumeclaims", "data"), ALLOW, "", id="its-claim"),
    pytest.param(attrs("get", "persistentvolumes", "pv-1", namespace=""), ALLOW, "", id="its-volume"),
    pytest.param(attrs("create", "serviceaccounts", "robot", subresource="token"), ALLOW, "", id="its-sa-token"),
    pytest.param(attrs("create", "serviceaccounts", "builder", subresource="token"), NO_OPINION,
                 "no relationship found between node 'node-1' and this object", id="other-sa-token"),
    pytest.param(attrs("update", "leases", "node-1", namespace="kube-node-lease", group="coordination.k8s.io"),
                 ALLOW, "", id="own-lease"),
    pytest.param(attrs("update", "leases", "node-2", namespace="kube-node-lease", group="coordination.k8s.io"),
                 NO_OPINION, "can only access node lease with the same name as the requesting node",
                 id="other-lease"),
    pytest.param(attrs("get", "leases", "node-1", namespace="default", group="coordination.k8s.io"), NO_OPINION,
                 'can only access leases in the "kube-node-lease" system namespace', id="lease-elsewhere"),
    pytest.param(attrs("patch", "nodes", "node-2", namespace="", subresource="status"), ALLOW, "",
                 id="node-status-by-rules-narrowed-by-admission"),
    pytest.param(attrs("list", "pods", namespace=""), ALLOW, "", id="pods-by-node-rules"),
    pytest.param(attrs("delete", "deployments", "x", group="apps"), NO_OPINION, "", id="nothing-else"),
])
def test_node_decisions(authorizer: NodeAuthorizer, request_: Attributes, decision: object, reason: str) -> None:
    assert authorizer.authorize(request_) == (decision, reason)


def test_only_nodes_are_judged(authorizer: NodeAuthorizer) -> None:
    jane = UserInfo("jane", ("system:authenticated",))
    assert authorizer.authorize(attrs("get", "secrets", "mine-secret", user=jane)) == (NO_OPINION, "")
    nameless = UserInfo("system:node:", ("system:nodes",))
    assert authorizer.authorize(attrs("get", "pods", user=nameless)) == (
        NO_OPINION, 'unknown node for user "system:node:"')
    assert authorizer.rules_for(NODE1, "app").incomplete
