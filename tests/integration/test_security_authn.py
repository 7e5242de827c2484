"""Serving and authentication against a real APIServer: TLS only, who is who, and what anonymous may do."""

from __future__ import annotations

import ssl
import time

import httpx
import orjson
import pytest

from apiserver.authentication.serviceaccount import TokenGenerator
from kubesim.certs import SERVICE_ACCOUNT_ISSUER
from machinery import pki
from tests import harness

pytestmark = pytest.mark.integration

UNAUTHORIZED = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": "Unauthorized",
                "reason": "Unauthorized", "code": 401}


def whoami(client: httpx.Client, headers: dict[str, str] | None = None) -> dict[str, object]:
    r = client.post("/apis/authentication.k8s.io/v1/selfsubjectreviews",
                    json={"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}, headers=headers)
    assert r.status_code == 201, r.text
    return dict(r.json()["status"]["userInfo"])


@pytest.fixture
def anonymous(cluster: harness.Cluster) -> httpx.Client:
    with httpx.Client(base_url=cluster.url, verify=harness.anonymous_tls(), timeout=30) as client:
        yield client


@pytest.mark.parametrize("path", ["/healthz", "/livez", "/readyz", "/version"])
def test_anonymous_reaches_the_public_endpoints(anonymous: httpx.Client, path: str) -> None:
    assert anonymous.get(path).status_code == 200


@pytest.mark.parametrize("path", ["/api", "/apis", "/openapi/v2", "/metrics"])
def test_anonymous_does_not_reach_discovery(anonymous: httpx.Client, path: str) -> None:
    r = anonymous.get(path)
    assert r.status_code == 403
    assert r.json() == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                        "message": f'forbidden: User "system:anonymous" cannot get path "{path}"',
                        "reason": "Forbidden", "details": {}, "code": 403}


def test_anonymous_cannot_run_a_privileged_pod(anonymous: httpx.Client) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "evil"},
           "spec": {"hostNetwork": True, "containers": [{"name": "c", "image": "x",
                                                         "securityContext": {"privileged": True}}]}}
    r = anonymous.post("/api/v1/namespaces/kube-system/pods", json=pod)
    assert r.status_code == 403
    assert r.json()["message"] == ('pods is forbidden: User "system:anonymous" cannot create resource "pods" in API '
                                   'group "" in the namespace "kube-system"')
    assert r.json()["details"] == {"kind": "pods"}


@pytest.mark.parametrize("token", ["garbage", "a.b.c", "eyJhbGciOiJub25lIn0.e30."])
def test_a_bad_token_is_401_even_for_what_anonymous_may_do(cluster: harness.Cluster, token: str) -> None:
    with harness.token_client(cluster.url, token) as client:
        for path in ("/healthz", "/api/v1/pods"):
            r = client.get(path)
            assert (r.status_code, r.json()) == (401, UNAUTHORIZED)


def test_an_expired_service_account_token_is_401(cluster: harness.Cluster, api: httpx.Client,
                                                namespace: str) -> None:
    assert api.post(f"/api/v1/namespaces/{namespace}/serviceaccounts",
                    json={"metadata": {"name": "robot"}}).status_code == 201
    account = api.get(f"/api/v1/namespaces/{namespace}/serviceaccounts/robot").json()
    signer = TokenGenerator.load(str(harness.session_files().files.sa_key), SERVICE_ACCOUNT_ISSUER)
    fresh = signer.sign(signer.claims(account, audiences=[SERVICE_ACCOUNT_ISSUER], expiration_seconds=600))
    stale = signer.sign(signer.claims(account, audiences=[SERVICE_ACCOUNT_ISSUER], expiration_seconds=600,
                                      now=time.time() - 1200))
    with harness.token_client(cluster.url, fresh) as client:
        assert whoami(client)["username"] == f"system:serviceaccount:{namespace}:robot"
    with harness.token_client(cluster.url, stale) as client:
        assert client.get("/version").status_code == 401
    review = api.post("/apis/authentication.k8s.io/v1/tokenreviews",
                      json={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                            "spec": {"token": stale}}).json()["status"]
    assert review == {"user": {}, "error": "service account token has expired"}


def test_client_certificates_and_tokens_name_their_users(cluster: harness.Cluster) -> None:
    with harness.user_client(cluster.url, "jane", ("dev", "ops")) as jane:
        assert whoami(jane) == {"username": "jane", "groups": ["dev", "ops", "system:authenticated"]}
    with harness.token_client(cluster.url, harness.node_token("node-7")) as node:
        info = whoami(node)
        assert info["username"] == "system:node:node-7"
        assert info["groups"] == ["system:nodes", "system:authenticated"]
    with harness.admin_client(cluster.url) as admin:
        assert whoami(admin)["groups"] == ["system:masters", "system:authenticated"]


def test_plain_http_and_foreign_certificates_do_not_connect(cluster: harness.Cluster) -> None:
    with httpx.Client(base_url=cluster.url.replace("https:", "http:")) as plain, pytest.raises(httpx.HTTPError):
        plain.get("/healthz")
    foreign_ca, foreign_key = pki.new_ca("not-the-cluster")
    cert, key = pki.sign(foreign_ca, foreign_key, common_name="kubernetes-admin", organizations=("system:masters",),
                         client=True)
    ctx = ssl.create_default_context(cafile=str(harness.session_files().files.ca_cert))
    from machinery.client.config import load_cert_chain
    load_cert_chain(ctx, pki.cert_pem(cert), pki.key_pem(key))
    with httpx.Client(base_url=cluster.url, verify=ctx) as forged, pytest.raises(httpx.HTTPError):
        forged.get("/api/v1/namespaces")
    with httpx.Client(base_url=cluster.url) as untrusting, pytest.raises(httpx.ConnectError,
                                                                         match="CERTIFICATE_VERIFY_FAILED"):
        untrusting.get("/healthz")


def test_token_reviews_answer_from_the_authenticators(api: httpx.Client) -> None:
    def review(token: str, audiences: list[str] | None = None) -> dict[str, object]:
        spec: dict[str, object] = {"token": token}
        if audiences:
            spec["audiences"] = audiences
        r = api.post("/apis/authentication.k8s.io/v1/tokenreviews",
                     json={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": spec})
        assert r.status_code == 201, r.text
        return dict(r.json()["status"])
    good = review(harness.node_token("node-3"))
    assert good["authenticated"] is True and good["user"] == {
        "username": "system:node:node-3", "uid": good["user"]["uid"],  # type: ignore[index]
        "groups": ["system:nodes", "system:authenticated"]}
    assert review("garbage") == {"user": {}, "error": "invalid bearer token"}


def test_the_insecure_port_is_off_unless_asked_and_then_says_so(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with harness.cluster(insecure_port=True, workdir=tmp_path) as c:
        with httpx.Client(base_url=c.apiserver.insecure_url) as plain:
            r = plain.post("/apis/authentication.k8s.io/v1/selfsubjectreviews",
                           json={"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
            assert orjson.loads(r.content)["status"]["userInfo"]["username"] == "system:unsecured"
            assert plain.get("/api/v1/namespaces").status_code == 200
        log = c.apiserver.process.log_path.read_text()
        assert "with no authentication or authorization" in log
        assert f"http://127.0.0.1:{c.apiserver.insecure_port}" in log


def test_forwarded_headers_change_nobody(cluster: harness.Cluster, anonymous: httpx.Client) -> None:
    """kubectl proxy sends X-Forwarded-For: a certificate's user stays that user, and anonymous stays anonymous."""
    forwarded = {"X-Forwarded-For": "127.0.0.1", "X-Forwarded-Proto": "https"}
    with harness.admin_client(cluster.url) as admin:
        assert whoami(admin, forwarded)["username"] == "kubernetes-admin"
    assert anonymous.get("/api/v1/namespaces/default/pods", headers=forwarded).status_code == 403
