"""The RBAC kinds: Kubernetes' validation and defaults, printers, the default policy and aggregation."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from apiserver.registry.rbac import bootstrappolicy
from apiserver.registry.rbac.bootstrap import reconcile_binding, reconcile_role
from apiserver.registry.rbac.rolebindings import binding_row
from apiserver.validation import rbac
from apiserver.validation.field import FieldError
from controller_manager.app import CONTROLLERS
from controller_manager.controllers.clusterroleaggregation import aggregate


def msgs(errs: list[FieldError]) -> list[str]:
    return [str(e) for e in errs]


def role(rules: list[dict[str, Any]], namespace: str | None = "ns") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "r"}
    if namespace:
        meta["namespace"] = namespace
    return {"metadata": meta, "rules": rules}


@pytest.mark.parametrize(("rules", "namespaced", "expected"), [
    pytest.param([{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}], True, [], id="valid"),
    pytest.param([{"apiGroups": [""], "resources": ["pods"]}], True,
                 ["rules[0].verbs: Required value: verbs must contain at least one value"], id="no-verbs"),
    pytest.param([{"verbs": ["get"], "resources": ["pods"]}], True,
                 ["rules[0].apiGroups: Required value: resource rules must supply at least one api group"],
                 id="no-groups"),
    pytest.param([{"verbs": ["get"], "nonResourceURLs": ["/x"]}], True,
                 [('rules[0].nonResourceURLs: Invalid value: ["/x"]: namespaced rules cannot apply to non-resource '
                  "URLs")], id="urls-in-a-role"),
    pytest.param([{"verbs": ["get"], "nonResourceURLs": ["/x"], "resources": ["pods"]}], False,
                 [('rules[0].nonResourceURLs: Invalid value: ["/x"]: rules cannot apply to both regular resources '
                  "and non-resource URLs")], id="both"),
])
def test_rule_validation(rules: list[dict[str, Any]], namespaced: bool, expected: list[str]) -> None:
    validate = rbac.validate_role if namespaced else rbac.validate_cluster_role
    assert msgs(validate(role(rules, "ns" if namespaced else None))) == expected


def test_aggregation_rule_needs_a_selector() -> None:
    obj = {"metadata": {"name": "agg"}, "aggregationRule": {"clusterRoleSelectors": []}}
    assert msgs(rbac.validate_cluster_role(obj)) == [
        ("aggregationRule.clusterRoleSelectors: Required value: at least one clusterRoleSelector required if "
        "aggregationRule is non-nil")]


def test_bindings_default_validate_and_keep_their_role_ref() -> None:
    binding: dict[str, Any] = {"metadata": {"name": "b", "namespace": "ns"}, "roleRef": {"kind": "Role", "name": "r"},
                               "subjects": [{"kind": "User", "name": "jane"}, {"kind": "ServiceAccount", "name": "sa"},
                                            {"kind": "Robot", "name": "x"}]}
    rbac.default_binding(binding)
    assert binding["roleRef"]["apiGroup"] == rbac.GROUP and binding["subjects"][0]["apiGroup"] == rbac.GROUP
    assert msgs(rbac.validate_role_binding(binding)) == [
        'subjects[2].kind: Unsupported value: "Robot": supported values: "ServiceAccount", "User", "Group"']
    cluster = {"metadata": {"name": "b"}, "roleRef": {"apiGroup": rbac.GROUP, "kind": "Role", "name": "r"},
               "subjects": [{"kind": "ServiceAccount", "name": "sa"}]}
    assert msgs(rbac.validate_cluster_role_binding(cluster)) == [
        'roleRef.kind: Unsupported value: "Role": supported values: "ClusterRole"',
        "subjects[0].namespace: Required value"]
    changed = {**binding, "roleRef": {**binding["roleRef"], "name": "other"}, "subjects": []}
    assert "roleRef: Invalid value" in msgs(rbac.validate_role_binding_update(changed, binding))[0]


def test_binding_printer() -> None:
    binding = {"metadata": {"name": "b", "creationTimestamp": "2024-01-01T00:00:00Z"},
               "roleRef": {"kind": "ClusterRole", "name": "view"},
               "subjects": [{"kind": "User", "name": "jane"}, {"kind": "Group", "name": "dev"},
                            {"kind": "ServiceAccount", "name": "sa", "namespace": "ns"}]}
    row = binding_row(binding, dt.datetime(2024, 1, 1, 0, 5, tzinfo=dt.UTC))
    assert row.cells == ["b", "ClusterRole/view", "5m", "jane", "dev", "ns:sa"]


def test_the_default_policy_is_consistent() -> None:
    roles = {r["metadata"]["name"] for r in bootstrappolicy.cluster_roles()}
    for binding in bootstrappolicy.cluster_role_bindings():
        assert binding["roleRef"]["name"] in roles, binding["metadata"]["name"]
    for name in ("cluster-admin", "admin", "edit", "view", "system:node", "system:kube-scheduler",
                 "system:kube-controller-manager", "system:discovery", "system:basic-user",
                 "system:public-info-viewer", "system:controller:replication-controller"):
        assert name in roles
    # Every kubesim controller has the role of its ServiceAccount.
    for descriptor in CONTROLLERS:
        assert f"system:controller:{descriptor.service_account}" in roles, descriptor.name
    namespaced = {(r["metadata"]["namespace"], r["metadata"]["name"]) for r in bootstrappolicy.namespace_roles()}
    for binding in bootstrappolicy.namespace_role_bindings():
        assert (binding["metadata"]["namespace"], binding["roleRef"]["name"]) in namespaced


def test_aggregation_collects_selected_rules_once_in_name_order() -> None:
    roles = {r["metadata"]["name"]: r for r in bootstrappolicy.cluster_roles()}
    view = aggregate(roles["view"], list(roles.values()))
    assert view == roles["system:aggregate-to-view"]["rules"]
    edit = aggregate(roles["edit"], list(roles.values()))
    assert edit is not None and view[0] not in edit  # edit takes aggregate-to-edit, whose rules differ
    extra = {"metadata": {"name": "a-crd-viewer", "labels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
             "rules": [{"verbs": ["get"], "apiGroups": ["example.com"], "resources": ["widgets"]}]}
    with_extra = aggregate(roles["view"], [*roles.values(), extra])
    assert with_extra is not None and with_extra[0] == extra["rules"][0]
    assert aggregate(roles["cluster-admin"], list(roles.values())) is None


def test_reconciling_restores_lost_defaults_and_keeps_additions() -> None:
    wanted = next(r for r in bootstrappolicy.cluster_roles() if r["metadata"]["name"] == "system:basic-user")
    current = {"metadata": {"name": "system:basic-user", "annotations": {"x": "y"}},
               "rules": [{"verbs": ["get"], "apiGroups": ["example.com"], "resources": ["things"]}]}
    out = reconcile_role(current, wanted)
    assert out["rules"][0]["apiGroups"] == ["example.com"] and len(out["rules"]) == 3
    assert out["metadata"]["annotations"] == {"x": "y", bootstrappolicy.AUTOUPDATE: "true"}
    binding = next(b for b in bootstrappolicy.cluster_role_bindings() if b["metadata"]["name"] == "cluster-admin")
    current_binding = {"metadata": {"name": "cluster-admin"}, "roleRef": binding["roleRef"],
                       "subjects": [{"kind": "User", "name": "me"}]}
    assert len(reconcile_binding(current_binding, binding)["subjects"]) == 2
