"""RBAC rule matching and the escalation check's Covers, as Kubernetes evaluates them."""

from __future__ import annotations

import pytest

from apiserver.authorization.rules import Rule, breakdown, describe_missing, rule_covers, uncovered


def rule(verbs: str, groups: str = "", resources: str = "", names: str = "", urls: str = "") -> Rule:
    return Rule(tuple(verbs.split()), tuple("" if g == "core" else g for g in groups.split()),
                tuple(resources.split()), tuple(names.split()), tuple(urls.split()))


@pytest.mark.parametrize(("r", "request_", "allowed"), [
    pytest.param(rule("get", "core", "pods"), ("get", "", "pods", "", "x"), True, id="exact"),
    pytest.param(rule("get", "core", "pods"), ("list", "", "pods", "", ""), False, id="other-verb"),
    pytest.param(rule("*", "*", "*"), ("delete", "apps", "deployments", "", "x"), True, id="stars"),
    pytest.param(rule("get", "apps", "pods"), ("get", "", "pods", "", "x"), False, id="other-group"),
    pytest.param(rule("create", "core", "pods"), ("create", "", "pods", "exec", "x"), False,
                 id="resource-does-not-cover-subresource"),
    pytest.param(rule("create", "core", "pods/exec"), ("create", "", "pods", "exec", "x"), True, id="subresource"),
    pytest.param(rule("get", "*", "*/scale"), ("get", "apps", "deployments", "scale", "x"), True,
                 id="star-slash-subresource"),
    pytest.param(rule("get", "*", "*/scale"), ("get", "apps", "deployments", "", "x"), False,
                 id="star-slash-needs-the-subresource"),
    pytest.param(rule("get", "core", "pods/*"), ("get", "", "pods", "log", "x"), False,
                 id="resource-slash-star-is-not-special"),
    pytest.param(rule("get", "core", "secrets", "a b"), ("get", "", "secrets", "", "b"), True, id="named"),
    pytest.param(rule("get", "core", "secrets", "a"), ("get", "", "secrets", "", "c"), False, id="other-name"),
    pytest.param(rule("list", "core", "secrets", "a"), ("list", "", "secrets", "", ""), False,
                 id="names-never-allow-an-unnamed-list"),
])
def test_resource_rules(r: Rule, request_: tuple[str, str, str, str, str], allowed: bool) -> None:
    assert r.allows_resource(*request_) is allowed


@pytest.mark.parametrize(("urls", "path", "allowed"), [
    pytest.param("/healthz", "/healthz", True, id="exact"),
    pytest.param("/healthz", "/healthz/etcd", False, id="no-prefix-without-star"),
    pytest.param("/healthz/*", "/healthz/etcd", True, id="prefix"),
    pytest.param("/apis/*", "/apis", False, id="star-needs-the-slash"),
    pytest.param("*", "/anything", True, id="star"),
])
def test_non_resource_rules(urls: str, path: str, allowed: bool) -> None:
    assert rule("get", urls=urls).allows_path("get", path) is allowed
    assert not rule("post", urls=urls).allows_path("get", path)


def test_breakdown_splits_every_permission() -> None:
    assert breakdown(rule("get list", "core apps", "pods")) == [
        rule("get", "core", "pods"), rule("list", "core", "pods"), rule("get", "apps", "pods"),
        rule("list", "apps", "pods")]
    assert breakdown(rule("get", "core", "secrets", "a b")) == [rule("get", "core", "secrets", "a"),
                                                                rule("get", "core", "secrets", "b")]
    assert breakdown(rule("get", urls="/a /b")) == [rule("get", urls="/a"), rule("get", urls="/b")]


@pytest.mark.parametrize(("owner", "sub", "covered"), [
    pytest.param(rule("*", "*", "*"), rule("get", "core", "pods"), True, id="cluster-admin"),
    pytest.param(rule("get list", "core", "pods"), rule("get", "core", "pods"), True, id="subset"),
    pytest.param(rule("get", "core", "pods"), rule("delete", "core", "pods"), False, id="verb-missing"),
    pytest.param(rule("get", "core", "*/status"), rule("get", "core", "pods/status"), True,
                 id="star-subresource"),
    pytest.param(rule("get", "core", "pods"), rule("get", "core", "pods/log"), False, id="no-subresource"),
    pytest.param(rule("get", "core", "secrets", "a"), rule("get", "core", "secrets"), False,
                 id="named-does-not-cover-all"),
    pytest.param(rule("get", "core", "secrets"), rule("get", "core", "secrets", "a"), True,
                 id="all-covers-named"),
    pytest.param(rule("get", urls="/api/*"), rule("get", urls="/api/v1"), True, id="url-prefix"),
])
def test_rule_covers(owner: Rule, sub: Rule, covered: bool) -> None:
    assert rule_covers(owner, sub) is covered


def test_uncovered_permissions_are_printed_as_kubernetes_prints_them() -> None:
    held = [rule("get list watch", "core", "pods")]
    missing = uncovered(held, [rule("get create delete", "core", "pods"), rule("get", "apps", "deployments")])
    assert describe_missing(missing) == ('{APIGroups:[""], Resources:["pods"], Verbs:["create" "delete"]}\n'
                                         '{APIGroups:["apps"], Resources:["deployments"], Verbs:["get"]}')
    assert uncovered(held, [rule("watch", "core", "pods")]) == []


def test_rules_round_trip_through_their_wire_form() -> None:
    wire = {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "resourceNames": ["a"]}
    assert Rule.from_dict(wire).to_dict() == wire
    assert Rule.from_dict({"verbs": ["get"], "nonResourceURLs": ["/x"]}).to_dict() == {
        "verbs": ["get"], "nonResourceURLs": ["/x"]}
