"""The kubelet API's authentication and authorization (kubelet_sim.auth), with a fake APIServer reviewer."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
from kubernetes.client import V1Status

from kubelet_sim.auth import (
    SUBJECT_ACCESS_REVIEWS,
    TOKEN_REVIEWS,
    Attributes,
    KubeletAuth,
    Refused,
    UserInfo,
    attributes,
    user_from_certificate,
)
from machinery.client import ServiceUnavailable


class FakeAPIServer:
    """Answers TokenReviews from a token table and SubjectAccessReviews from (user, verb, subresource) grants."""

    def __init__(self, tokens: Mapping[str, dict[str, Any]], grants: set[tuple[str, str, str]]) -> None:
        self.tokens = tokens
        self.grants = grants
        self.reviews: list[tuple[str, dict[str, Any]]] = []
        self.down = False

    async def review(self, resource: Any, spec: Mapping[str, Any]) -> dict[str, Any]:
        if self.down:
            raise ServiceUnavailable(V1Status(code=503, reason="ServiceUnavailable",
                                              message="the server is currently unable to handle the request"))
        self.reviews.append((resource.kind, dict(spec)))
        if resource is TOKEN_REVIEWS:
            user = self.tokens.get(spec["token"])
            return {"status": {"authenticated": True, "user": user} if user else {"authenticated": False}}
        assert resource is SUBJECT_ACCESS_REVIEWS
        attrs = spec["resourceAttributes"]
        return {"status": {"allowed": (spec["user"], attrs["verb"], attrs["subresource"]) in self.grants}}


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(("method", "path", "verb", "subresource"), [
    ("GET", "/metrics/resource", "get", "metrics"),
    ("GET", "/metrics", "get", "metrics"),
    ("GET", "/stats/summary", "get", "stats"),
    ("GET", "/logs/kubelet.log", "get", "log"),
    ("POST", "/checkpoint/ns/p/c", "create", "checkpoint"),
    ("GET", "/containerLogs/ns/p/c", "get", "proxy"),
    ("POST", "/exec/ns/p/c", "create", "proxy"),
    ("GET", "/exec/ns/p/c", "get", "proxy"),
    ("POST", "/stop", "create", "proxy"),
    ("GET", "/metricsfoo", "get", "proxy"),
    ("PUT", "/pods", "update", "proxy"),
    ("DELETE", "/pods", "delete", "proxy"),
    ("PATCH", "/pods", "patch", "proxy"),
    ("HEAD", "/healthz", "", "proxy"),
])
def test_request_attributes_are_the_kubelets(method: str, path: str, verb: str, subresource: str) -> None:
    assert attributes(method, path, "n1") == Attributes(verb, subresource, "n1")


def test_a_verified_certificate_names_the_user_and_groups() -> None:
    peer = {"subject": ((("commonName", "kube-apiserver-kubelet-client"),), (("organizationName", "system:masters"),),
                        (("organizationName", "ops"),))}
    assert user_from_certificate(peer) == UserInfo("kube-apiserver-kubelet-client",
                                                   groups=("system:masters", "ops", "system:authenticated"))
    assert user_from_certificate(None) is None
    assert user_from_certificate({"subject": ((("organizationName", "x"),),)}) is None


async def test_without_credentials_anonymous_or_unauthorized() -> None:
    assert (await KubeletAuth().check("GET", "/healthz", "n1", None, None)).name == "system:anonymous"
    with pytest.raises(Refused) as refused:
        await KubeletAuth(anonymous=False).check("GET", "/healthz", "n1", None, None)
    assert (refused.value.code, refused.value.message) == (401, "Unauthorized")
    # A bearer token without the token webhook is no credential.
    with pytest.raises(Refused):
        await KubeletAuth(anonymous=False).check("GET", "/healthz", "n1", "Bearer abc", None)


async def test_tokens_are_reviewed_once_and_kept_for_the_ttl() -> None:
    apiserver = FakeAPIServer({"good": {"username": "system:serviceaccount:ns:sa", "uid": "u1",
                                        "groups": ["system:serviceaccounts", "system:authenticated"],
                                        "extra": {"authentication.kubernetes.io/pod-name": ["p"]}}}, set())
    clock = Clock()
    auth = KubeletAuth(anonymous=False, token_webhook=True, reviewer=apiserver, token_ttl=120, clock=clock)
    user = await auth.authenticate("Bearer good", None)
    assert user == UserInfo("system:serviceaccount:ns:sa", "u1", ("system:serviceaccounts", "system:authenticated"),
                            {"authentication.kubernetes.io/pod-name": ("p",)})
    assert await auth.authenticate("Bearer good", None) == user
    assert await auth.authenticate("Bearer bad", None) is None
    assert await auth.authenticate("Bearer bad", None) is None
    assert [kind for kind, _ in apiserver.reviews] == ["TokenReview", "TokenReview"]
    clock.now += 121
    assert await auth.authenticate("Bearer good", None) == user
    assert len(apiserver.reviews) == 3
    # A certificate comes before any token.
    peer = {"subject": ((("commonName", "jane"),),)}
    assert (await auth.authenticate("Bearer good", peer)) == UserInfo("jane", groups=("system:authenticated",))


async def test_an_unreachable_apiserver_authenticates_nobody_and_authorizes_nothing() -> None:
    apiserver = FakeAPIServer({}, set())
    apiserver.down = True
    auth = KubeletAuth(anonymous=False, token_webhook=True, mode="Webhook", reviewer=apiserver)
    with pytest.raises(Refused) as unauthorized:
        await auth.check("GET", "/healthz", "n1", "Bearer any", None)
    assert unauthorized.value.code == 401
    with pytest.raises(Refused) as failed:
        await auth.check("GET", "/healthz", "n1", None, {"subject": ((("commonName", "jane"),),)})
    assert (failed.value.code, failed.value.message) == (
        500, "Authorization error (user=jane, verb=get, resource=nodes, subresource=proxy)")


async def test_webhook_authorization_asks_a_subject_access_review_and_keeps_its_answer() -> None:
    apiserver = FakeAPIServer({}, {("ops", "get", "metrics")})
    clock = Clock()
    auth = KubeletAuth(mode="Webhook", reviewer=apiserver, authorized_ttl=300, unauthorized_ttl=30, clock=clock)
    ops = {"subject": ((("commonName", "ops"),), (("organizationName", "sre"),))}
    assert (await auth.check("GET", "/metrics/resource", "n1", None, ops)).name == "ops"
    _, spec = apiserver.reviews[0]
    assert spec == {"user": "ops", "groups": ["sre", "system:authenticated"],
                    "resourceAttributes": {"verb": "get", "group": "", "version": "v1", "resource": "nodes",
                                           "subresource": "metrics", "name": "n1"}}
    with pytest.raises(Refused) as forbidden:
        await auth.check("POST", "/exec/ns/p/c", "n1", None, ops)
    assert (forbidden.value.code, forbidden.value.message) == (
        403, "Forbidden (user=ops, verb=create, resource=nodes, subresource=proxy)")
    # Anonymous requests are authorized too (and RBAC refuses them).
    with pytest.raises(Refused) as anonymous:
        await auth.check("GET", "/healthz", "n1", None, None)
    assert anonymous.value.message == "Forbidden (user=system:anonymous, verb=get, resource=nodes, subresource=proxy)"
    assert len(apiserver.reviews) == 3
    # Answers are kept: allowed for 5 minutes, denied for 30 seconds.
    await auth.check("GET", "/metrics/resource", "n1", None, ops)
    with pytest.raises(Refused):
        await auth.check("POST", "/exec/ns/p/c", "n1", None, ops)
    assert len(apiserver.reviews) == 3
    clock.now += 31
    apiserver.grants.add(("ops", "create", "proxy"))
    await auth.check("POST", "/exec/ns/p/c", "n1", None, ops)
    await auth.check("GET", "/metrics/resource", "n1", None, ops)
    assert len(apiserver.reviews) == 4
    # Another node is another question.
    with pytest.raises(Refused):
        await auth.check("GET", "/stats/summary", "n2", None, ops)
    assert apiserver.reviews[-1][1]["resourceAttributes"]["name"] == "n2"


def test_reviews_need_an_apiserver() -> None:
    with pytest.raises(ValueError, match="need the APIServer"):
        KubeletAuth(mode="Webhook")
    with pytest.raises(ValueError, match="unknown authorization mode"):
        KubeletAuth(mode="RBAC")
