"""The review APIs and TokenRequest against a real APIServer: answers from the real authorizer and authenticators."""

from __future__ import annotations

import base64
import datetime as dt
import json
from typing import Any

import httpx
import pytest

from tests import harness

pytestmark = pytest.mark.integration

AUTHZ = "/apis/authorization.k8s.io/v1"
RBAC = "/apis/rbac.authorization.k8s.io/v1"


def sar(api: httpx.Client, spec: dict[str, Any], *, kind: str = "SubjectAccessReview", path: str = "",
        headers: dict[str, str] | None = None) -> httpx.Response:
    plural = {"SubjectAccessReview": "subjectaccessreviews", "SelfSubjectAccessReview": "selfsubjectaccessreviews",
              "LocalSubjectAccessReview": "localsubjectaccessreviews"}[kind]
    return api.post(path or f"{AUTHZ}/{plural}", json={"apiVersion": "authorization.k8s.io/v1", "kind": kind,
                                                       "spec": spec}, headers=headers)


@pytest.fixture
def reader(api: httpx.Client, namespace: str) -> str:
    """User ``pat`` may get and list pods in the namespace, through a Role."""
    role = {"metadata": {"name": "pod-reader", "namespace": namespace},
            "rules": [{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]}]}
    assert api.post(f"{RBAC}/namespaces/{namespace}/roles", json=role).status_code == 201
    binding = {"metadata": {"name": "pat-reads", "namespace": namespace},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pod-reader"},
               "subjects": [{"kind": "User", "name": "pat"}]}
    r = api.post(f"{RBAC}/namespaces/{namespace}/rolebindings", json=binding)
    assert r.status_code == 201, r.text
    # Defaulted as Kubernetes defaults a binding: the RBAC group on the roleRef and the User subject.
    assert r.json()["subjects"][0]["apiGroup"] == "rbac.authorization.k8s.io"
    # The authorizer reads bindings from its watch cache: wait until it holds this one, as Kubernetes' e2e tests do.
    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
              "spec": {"user": "pat", "resourceAttributes": {"namespace": namespace, "verb": "list",
                                                             "resource": "pods"}}}
    harness.wait_for(lambda: api.post(f"{AUTHZ}/subjectaccessreviews", json=review).json()["status"].get("allowed"),
                     timeout=30, message="pat's binding to reach the authorizer")
    return "pat"


def test_subject_access_reviews_answer_from_rbac(api: httpx.Client, namespace: str, reader: str) -> None:
    allowed = sar(api, {"user": reader, "resourceAttributes": {"namespace": namespace, "verb": "list",
                                                               "resource": "pods"}})
    assert allowed.status_code == 201
    assert allowed.json()["status"] == {
        "allowed": True, "reason": f'RBAC: allowed by RoleBinding "pat-reads/{namespace}" of Role "pod-reader" to '
                                   'User "pat"'}
    denied = sar(api, {"user": reader, "resourceAttributes": {"namespace": namespace, "verb": "delete",
                                                              "resource": "pods"}})
    assert denied.json()["status"] == {"allowed": False}
    other_ns = sar(api, {"user": reader, "resourceAttributes": {"namespace": "default", "verb": "list",
                                                                "resource": "pods"}})
    assert other_ns.json()["status"]["allowed"] is False
    masters = sar(api, {"user": "x", "groups": ["system:masters"], "nonResourceAttributes": {"path": "/metrics",
                                                                                            "verb": "get"}})
    assert masters.json()["status"]["allowed"] is True
    invalid = sar(api, {"resourceAttributes": {"verb": "get"}})
    assert invalid.status_code == 422 and "at least one of user or group must be specified" in invalid.text


def test_local_and_self_reviews(cluster: harness.Cluster, api: httpx.Client, namespace: str, reader: str) -> None:
    path = f"{AUTHZ}/namespaces/{namespace}/localsubjectaccessreviews"
    local = sar(api, {"user": reader, "resourceAttributes": {"namespace": namespace, "verb": "get",
                                                             "resource": "pods"}},
                kind="LocalSubjectAccessReview", path=path)
    assert local.status_code == 201 and local.json()["status"]["allowed"] is True
    mismatch = sar(api, {"user": reader, "resourceAttributes": {"namespace": "other", "verb": "get",
                                                                "resource": "pods"}},
                   kind="LocalSubjectAccessReview", path=path)
    assert mismatch.status_code == 422 and "must match metadata.namespace" in mismatch.text
    with harness.user_client(cluster.url, reader) as pat:
        mine = sar(pat, {"resourceAttributes": {"namespace": namespace, "verb": "list", "resource": "pods"}},
                   kind="SelfSubjectAccessReview")
        assert mine.json()["status"]["allowed"] is True
        rules = pat.post(f"{AUTHZ}/selfsubjectrulesreviews", json={
            "apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview",
            "spec": {"namespace": namespace}}).json()["status"]
        assert {"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]} in rules["resourceRules"]
        assert {"verbs": ["get"], "nonResourceURLs": ["/healthz", "/livez", "/readyz", "/version", "/version/"]} \
            in rules["nonResourceRules"]
        assert rules["incomplete"] is False
        # SubjectAccessReviews about others are not for everyone.
        assert sar(pat, {"user": "x", "resourceAttributes": {"verb": "get", "resource": "pods"}}).status_code == 403
    with harness.token_client(cluster.url, harness.node_token("node-5")) as node:
        rules = node.post(f"{AUTHZ}/selfsubjectrulesreviews", json={
            "apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview",
            "spec": {"namespace": namespace}}).json()["status"]
        assert rules["incomplete"] is True
        assert rules["evaluationError"] == "node authorizer does not support user rule resolution"


def test_token_requests(cluster: harness.Cluster, api: httpx.Client, namespace: str) -> None:
    base = f"/api/v1/namespaces/{namespace}"
    assert api.post(f"{base}/serviceaccounts", json={"metadata": {"name": "robot"}}).status_code == 201
    assert api.post(f"{base}/serviceaccounts", json={"metadata": {"name": "other"}}).status_code == 201
    pod = {"metadata": {"name": "web"}, "spec": {"serviceAccountName": "robot",
                                                 "containers": [{"name": "c", "image": "x"}]}}
    created = api.post(f"{base}/pods", json=pod).json()

    def request(name: str, **spec: Any) -> httpx.Response:
        return api.post(f"{base}/serviceaccounts/{name}/token", json={
            "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec})
    r = request("robot", audiences=["vault"], expirationSeconds=900,
                boundObjectRef={"kind": "Pod", "apiVersion": "v1", "name": "web"})
    assert r.status_code == 201, r.text
    body = r.json()
    assert (body["kind"], body["apiVersion"]) == ("TokenRequest", "authentication.k8s.io/v1")
    assert body["status"]["token"].count(".") == 2 and body["status"]["expirationTimestamp"].endswith("Z")
    # A token for another audience is not the API's.
    with harness.token_client(cluster.url, body["status"]["token"]) as vault_token:
        assert vault_token.get("/version").status_code == 401
    review = api.post("/apis/authentication.k8s.io/v1/tokenreviews", json={
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
        "spec": {"token": body["status"]["token"], "audiences": ["vault"]}}).json()["status"]
    assert review["authenticated"] is True and review["audiences"] == ["vault"]
    assert review["user"]["extra"]["authentication.kubernetes.io/pod-uid"] == [created["metadata"]["uid"]]
    too_short = request("robot", expirationSeconds=60)
    assert too_short.status_code == 422
    assert "spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes" \
        in too_short.json()["message"]
    assert request("nobody").status_code == 404
    wrong_account = request("other", boundObjectRef={"kind": "Pod", "apiVersion": "v1", "name": "web"})
    assert wrong_account.status_code == 400 and wrong_account.json()["message"] == (
        'cannot bind token for serviceaccount "other" to pod running with serviceaccount "robot"')
    stale = request("robot", boundObjectRef={"kind": "Pod", "apiVersion": "v1", "name": "web", "uid": "old"})
    assert stale.status_code == 409 and "does not match the UID in record" in stale.json()["message"]
    odd = request("robot", boundObjectRef={"kind": "ConfigMap", "apiVersion": "v1", "name": "x"})
    assert odd.status_code == 400 and odd.json()["message"] == "cannot bind token to object of type /v1, Kind=ConfigMap"


def test_an_aggregation_rule_needs_every_permission(cluster: harness.Cluster, api: httpx.Client) -> None:
    role = {"metadata": {"name": "role-writer-x"},
            "rules": [{"verbs": ["create"], "apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"]}]}
    assert api.post(f"{RBAC}/clusterroles", json=role).status_code == 201
    binding = {"metadata": {"name": "lee-writes-roles"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "role-writer-x"},
               "subjects": [{"kind": "User", "name": "lee"}]}
    assert api.post(f"{RBAC}/clusterrolebindings", json=binding).status_code == 201
    try:
        with harness.user_client(cluster.url, "lee") as lee:
            aggregated = {"metadata": {"name": "lee-aggregate"}, "aggregationRule": {
                "clusterRoleSelectors": [{"matchLabels": {"x": "y"}}]}}
            r = lee.post(f"{RBAC}/clusterroles", json=aggregated)
            assert r.status_code == 403 and r.json()["message"] == (
                'clusterroles.rbac.authorization.k8s.io "lee-aggregate" is forbidden: must have cluster-admin '
                "privileges to use the aggregationRule")
    finally:
        api.delete(f"{RBAC}/clusterrolebindings/lee-writes-roles")
        api.delete(f"{RBAC}/clusterroles/role-writer-x")


def test_without_anonymous_auth_a_credential_is_needed(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with harness.cluster(apiserver_args=["--anonymous-auth=false"], workdir=tmp_path) as c:
        with httpx.Client(base_url=c.url, verify=harness.anonymous_tls()) as anonymous:
            assert anonymous.get("/version").status_code == 401
        with c.client() as admin:
            assert admin.get("/version").status_code == 200


def _claims(token: str) -> dict[str, Any]:
    payload = token.split(".")[1]
    return dict(json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))))


def test_a_pods_3607_second_token_is_extended_to_a_year_as_kubernetes_does(api: httpx.Client,
                                                                          namespace: str) -> None:
    base = f"/api/v1/namespaces/{namespace}"
    assert api.post(f"{base}/serviceaccounts", json={"metadata": {"name": "robot"}}).status_code == 201
    pod = {"metadata": {"name": "web"}, "spec": {"serviceAccountName": "robot",
                                                 "containers": [{"name": "c", "image": "x"}]}}
    assert api.post(f"{base}/pods", json=pod).status_code == 201
    bound = {"kind": "Pod", "apiVersion": "v1", "name": "web"}

    def token(**spec: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        r = api.post(f"{base}/serviceaccounts/robot/token", json={
            "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec})
        assert r.status_code == 201, r.text
        status = r.json()["status"]
        return status, _claims(status["token"])

    # What a kube-api-access volume asks for: valid a year, warned about after 3607 s; the status tells the
    # kubelet 3607 s, so it renews as if the token lasted an hour.
    status, claims = token(expirationSeconds=3607, boundObjectRef=bound)
    assert claims["exp"] - claims["iat"] == 365 * 24 * 3600
    assert claims["kubernetes.io"]["warnafter"] - claims["iat"] == 3607
    expires = dt.datetime.strptime(status["expirationTimestamp"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.UTC)
    assert abs(expires.timestamp() - (claims["iat"] + 3607)) <= 1
    # Not bound to a Pod, another lifetime, or another audience: exactly what was asked.
    for spec in ({"expirationSeconds": 3607}, {"expirationSeconds": 3600, "boundObjectRef": bound},
                 {"expirationSeconds": 3607, "boundObjectRef": bound, "audiences": ["vault"]}):
        _status, claims = token(**spec)
        assert claims["exp"] - claims["iat"] == spec["expirationSeconds"], spec
        assert "warnafter" not in claims["kubernetes.io"], spec


def test_a_token_longer_than_the_maximum_is_shortened_with_a_warning(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with harness.cluster(["--service-account-max-token-expiration=2h"], tmp_path) as c, c.client(timeout=30) as api:
        assert api.post("/api/v1/namespaces/default/serviceaccounts",
                        json={"metadata": {"name": "robot"}}).status_code == 201
        r = api.post("/api/v1/namespaces/default/serviceaccounts/robot/token", json={
            "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 10000}})
        assert r.status_code == 201, r.text
        shortened = '299 - "requested expiration of 10000 seconds shortened to 7200 seconds"'
        assert r.headers.get_list("warning") == [shortened]
        assert r.json()["spec"]["expirationSeconds"] == 7200
        claims = _claims(r.json()["status"]["token"])
        assert claims["exp"] - claims["iat"] == 7200
