"""The RBAC authorizer over (fake) watch caches: who is allowed what, and the reasons Kubernetes gives."""

from __future__ import annotations

from typing import Any

import pytest

from apiserver.admission import UserInfo
from apiserver.authorization import build
from apiserver.authorization.authorizer import ALLOW, NO_OPINION, Attributes
from apiserver.authorization.rbac import RBAC
from apiserver.registry.rbac import bootstrappolicy
from machinery.api import kinds
from tests.unit.fakecache import FakeCaches

JANE = UserInfo("jane", ("dev", "system:authenticated"))
ROBOT = UserInfo("system:serviceaccount:team:robot", ("system:serviceaccounts", "system:serviceaccounts:team",
                                                     "system:authenticated"))


def role(name: str, rules: list[dict[str, Any]], namespace: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    return {"metadata": meta, "rules": rules}


def binding(name: str, kind: str, role_name: str, subjects: list[dict[str, Any]],
            namespace: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    return {"metadata": meta, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": role_name},
            "subjects": subjects}


@pytest.fixture
def caches() -> FakeCaches:
    c = FakeCaches()
    c.of(kinds.CLUSTER_ROLES).put(role("pod-reader", [{"verbs": ["get", "list"], "apiGroups": [""],
                                                        "resources": ["pods"]}]))
    c.of(kinds.CLUSTER_ROLES).put(role("healthz", [{"verbs": ["get"], "nonResourceURLs": ["/healthz"]}]))
    c.of(kinds.CLUSTER_ROLE_BINDINGS).put(binding("devs-read", "ClusterRole", "pod-reader",
                                                  [{"kind": "Group", "name": "dev"}]))
    c.of(kinds.ROLES).put(role("deployer", [{"verbs": ["create"], "apiGroups": ["apps"],
                                             "resources": ["deployments"]}], "team"))
    c.of(kinds.ROLE_BINDINGS).put(binding("robot-deploys", "Role", "deployer",
                                          [{"kind": "ServiceAccount", "name": "robot"}], "team"))
    c.of(kinds.ROLE_BINDINGS).put(binding("jane-reads-team", "ClusterRole", "pod-reader",
                                          [{"kind": "User", "name": "jane"}], "team"))
    return c


def test_a_group_binding_allows_and_says_which_binding(caches: FakeCaches) -> None:
    rbac = RBAC(caches.of)
    assert rbac.authorize(Attributes(JANE, "list", namespace="default", resource="pods")) == (
        ALLOW, 'RBAC: allowed by ClusterRoleBinding "devs-read" of ClusterRole "pod-reader" to Group "dev"')
    assert rbac.authorize(Attributes(JANE, "create", namespace="default", resource="pods")) == (NO_OPINION, "")


def test_role_bindings_apply_only_in_their_namespace_and_default_the_sa_namespace(caches: FakeCaches) -> None:
    rbac = RBAC(caches.of)
    attrs = Attributes(ROBOT, "create", namespace="team", api_group="apps", resource="deployments")
    assert rbac.authorize(attrs) == (ALLOW, ('RBAC: allowed by RoleBinding "robot-deploys/team" of Role "deployer" '
                                            'to ServiceAccount "team/robot"'))
    other = Attributes(ROBOT, "create", namespace="other", api_group="apps", resource="deployments")
    assert rbac.authorize(other)[0] is NO_OPINION
    cluster = Attributes(ROBOT, "create", api_group="apps", resource="deployments")
    assert rbac.authorize(cluster)[0] is NO_OPINION


def test_a_binding_to_a_missing_role_is_a_reason(caches: FakeCaches) -> None:
    caches.of(kinds.CLUSTER_ROLE_BINDINGS).put(binding("dangling", "ClusterRole", "gone",
                                                       [{"kind": "User", "name": "jane"}]))
    rbac = RBAC(caches.of)
    assert rbac.authorize(Attributes(JANE, "delete", namespace="x", resource="pods")) == (
        NO_OPINION, 'RBAC: clusterrole.rbac.authorization.k8s.io "gone" not found')


def test_changes_are_seen_at_once(caches: FakeCaches) -> None:
    rbac = RBAC(caches.of)
    attrs = Attributes(JANE, "get", path="/healthz", resource_request=False)
    assert rbac.authorize(attrs)[0] is NO_OPINION
    caches.of(kinds.CLUSTER_ROLE_BINDINGS).put(binding("jane-healthz", "ClusterRole", "healthz",
                                                       [{"kind": "User", "name": "jane"}]))
    assert rbac.authorize(attrs)[0] is ALLOW
    caches.of(kinds.CLUSTER_ROLE_BINDINGS).delete(None, "jane-healthz")
    assert rbac.authorize(attrs)[0] is NO_OPINION


def test_rules_for_lists_cluster_and_namespace_rules(caches: FakeCaches) -> None:
    rules = RBAC(caches.of).rules_for(JANE, "team")
    assert [r.to_dict() for r in rules.resource] == [
        {"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]}] * 2
    assert not rules.incomplete and not rules.non_resource


def test_the_default_policy_gives_what_kubernetes_gives() -> None:
    caches = FakeCaches()
    for obj in bootstrappolicy.cluster_roles():
        caches.of(kinds.CLUSTER_ROLES).put(obj)
    for obj in bootstrappolicy.cluster_role_bindings():
        caches.of(kinds.CLUSTER_ROLE_BINDINGS).put(obj)
    authorizer = build(("Node", "RBAC"), caches.of)
    anonymous = UserInfo("system:anonymous", ("system:unauthenticated",))
    for path in ("/healthz", "/livez", "/readyz", "/version"):
        assert authorizer.authorize(Attributes(anonymous, "get", False, path=path))[0] is ALLOW, path
    assert authorizer.authorize(Attributes(anonymous, "get", False, path="/api"))[0] is NO_OPINION
    assert authorizer.authorize(Attributes(JANE, "get", False, path="/apis/apps/v1"))[0] is ALLOW
    scheduler = UserInfo("system:kube-scheduler", ("system:authenticated",))
    assert authorizer.authorize(Attributes(scheduler, "create", namespace="d", resource="pods",
                                           subresource="binding", name="p"))[0] is ALLOW
    assert authorizer.authorize(Attributes(scheduler, "create", namespace="d", resource="pods"))[0] is NO_OPINION
    admin = UserInfo("kubernetes-admin", ("system:masters", "system:authenticated"))
    assert authorizer.authorize(Attributes(admin, "escalate", api_group="rbac.authorization.k8s.io",
                                           resource="clusterroles"))[0] is ALLOW
