"""Authentication: static tokens, ServiceAccount JWTs, client certificate subjects, and their union."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from apiserver.admission import ANONYMOUS, UserInfo
from apiserver.authentication.authenticator import Authenticator, InvalidCredentials, MaybeStale, bearer_token
from apiserver.authentication.serviceaccount import ServiceAccountTokenAuthenticator, TokenGenerator
from apiserver.authentication.tokenfile import TokenFile, TokenFileError
from apiserver.authentication.x509 import user_from_peercert
from machinery import pki
from machinery.api import kinds
from tests.unit.fakecache import FakeCaches

ISSUER = "https://kubernetes.default.svc.cluster.local"
SA: dict[str, Any] = {"metadata": {"name": "robot", "namespace": "team", "uid": "sa-uid"}}
POD: dict[str, Any] = {"metadata": {"name": "web", "namespace": "team", "uid": "pod-uid"},
                       "spec": {"serviceAccountName": "robot", "nodeName": "node-1"}}
NODE: dict[str, Any] = {"metadata": {"name": "node-1", "uid": "node-uid"}}


def test_token_file(tmp_path: Path) -> None:
    path = tmp_path / "tokens.csv"
    path.write_text('abc,jane,uid-1,"dev,ops"\n\nxyz,bob,uid-2\n')
    tokens = TokenFile.load(path)
    assert tokens.authenticate_token("abc", ()) == UserInfo("jane", ("dev", "ops"), "uid-1")
    assert tokens.authenticate_token("xyz", ()) == UserInfo("bob", (), "uid-2")
    assert tokens.authenticate_token("nope", ()) is None
    path.write_text("abc,jane\n")
    with pytest.raises(TokenFileError, match="must have at least 3 columns"):
        TokenFile.load(path)


@pytest.mark.parametrize(("header", "token"), [
    pytest.param("Bearer abc", "abc", id="bearer"),
    pytest.param("bearer abc", "abc", id="case"),
    pytest.param("Basic abc", None, id="other-scheme"),
    pytest.param("Bearer ", None, id="empty"),
    pytest.param(None, None, id="none"),
])
def test_bearer_token(header: str | None, token: str | None) -> None:
    assert bearer_token(header) == token


def test_certificate_subjects_name_user_and_groups() -> None:
    cert = {"subject": ((("organizationName", "system:masters"),), (("organizationName", "ops"),),
                        (("commonName", "kubernetes-admin"),))}
    assert user_from_peercert(cert) == UserInfo("kubernetes-admin", ("system:masters", "ops"))
    assert user_from_peercert({"subject": ((("organizationName", "x"),),)}) is None
    assert user_from_peercert(None) is None


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def setup() -> tuple[TokenGenerator, ServiceAccountTokenAuthenticator, FakeCaches, Clock]:
    key = pki.new_rsa_key()
    generator = TokenGenerator(key, ISSUER)
    caches = FakeCaches()
    caches.of(kinds.SERVICE_ACCOUNTS).put(SA)
    caches.of(kinds.PODS).put(POD)
    clock = Clock()
    checker = ServiceAccountTokenAuthenticator([key.public_key()], [ISSUER], [ISSUER], caches.of, clock=clock)
    return generator, checker, caches, clock


def test_service_account_token_round_trip(setup: tuple[TokenGenerator, ServiceAccountTokenAuthenticator,
                                                       FakeCaches, Clock]) -> None:
    generator, checker, _caches, clock = setup
    claims = generator.claims(SA, audiences=[ISSUER], expiration_seconds=3600, pod=POD, node=NODE, now=clock.now)
    assert claims["sub"] == "system:serviceaccount:team:robot" and claims["kubernetes.io"]["pod"] == {
        "name": "web", "uid": "pod-uid"}
    user = checker.authenticate_token(generator.sign(claims), [])
    assert user is not None
    assert (user.name, user.groups, user.uid) == ("system:serviceaccount:team:robot",
                                                  ("system:serviceaccounts", "system:serviceaccounts:team"),
                                                  "sa-uid")
    extra = dict(user.extra)
    assert extra["authentication.kubernetes.io/pod-name"] == ("web",)
    assert extra["authentication.kubernetes.io/node-name"] == ("node-1",)
    assert extra["authentication.kubernetes.io/credential-id"] == (f"JTI={claims['jti']}",)


def test_service_account_token_refusals(setup: tuple[TokenGenerator, ServiceAccountTokenAuthenticator,
                                                     FakeCaches, Clock]) -> None:
    generator, checker, caches, clock = setup
    token = generator.sign(generator.claims(SA, audiences=[ISSUER], expiration_seconds=600, pod=POD, now=clock.now))
    with pytest.raises(Exception, match=r'token audiences \["https://kubernetes.default.svc.cluster.local"\] is '
                                        r'invalid for the target audiences \["vault"\]'):
        checker.authenticate_token(token, ["vault"])
    other_issuer = TokenGenerator(generator.private_key, "https://elsewhere")
    assert checker.authenticate_token(other_issuer.sign(other_issuer.claims(
        SA, audiences=[ISSUER], expiration_seconds=600, now=clock.now)), []) is None
    forged = TokenGenerator(pki.new_rsa_key(), ISSUER)
    with pytest.raises(Exception, match="invalid signature"):
        checker.authenticate_token(forged.sign(forged.claims(SA, audiences=[ISSUER], expiration_seconds=600,
                                                             now=clock.now)), [])
    clock.now += 601
    with pytest.raises(Exception, match="service account token has expired"):
        checker.authenticate_token(token, [])
    clock.now -= 601
    caches.of(kinds.PODS).delete("team", "web")
    with pytest.raises(Exception, match="service account token has been invalidated"):
        checker.authenticate_token(token, [])
    caches.of(kinds.PODS).put({**POD, "metadata": {**POD["metadata"], "uid": "new-uid"}})
    with pytest.raises(Exception, match=r"pod UID \(new-uid\) does not match"):
        checker.authenticate_token(token, [])


def test_the_union_of_authenticators(tmp_path: Path) -> None:
    path = tmp_path / "tokens.csv"
    path.write_text("good,jane,1\n")
    union = Authenticator(tokens=[TokenFile.load(path)], anonymous=True)
    assert asyncio.run(union.authenticate(peer=None, authorization="Bearer good")) == (
        UserInfo("jane", ("system:authenticated",), "1"), True)
    assert asyncio.run(union.authenticate(peer=None, authorization="Bearer garbage")) == (None, False)
    assert asyncio.run(union.authenticate(peer=None, authorization=None)) == (ANONYMOUS, False)
    admin = UserInfo("kubernetes-admin", ("system:masters",))
    assert asyncio.run(union.authenticate(peer=admin, authorization="Bearer garbage")) == (
        UserInfo("kubernetes-admin", ("system:masters", "system:authenticated")), False)
    with pytest.raises(InvalidCredentials, match="invalid bearer token"):
        union.authenticate_token("garbage")
    assert asyncio.run(Authenticator(tokens=[], anonymous=False).authenticate(
        peer=None, authorization=None)) == (None, False)


def test_a_token_for_an_object_the_cache_has_not_seen_yet_is_tried_again_once_it_has(
        setup: tuple[TokenGenerator, ServiceAccountTokenAuthenticator, FakeCaches, Clock]) -> None:
    """kube-apiserver's token getter falls back from its informer to a live read; here the cache catches up."""
    generator, checker, caches, clock = setup
    fresh_sa: dict[str, Any] = {"metadata": {"name": "new", "namespace": "team", "uid": "new-uid"}}
    token = generator.sign(generator.claims(fresh_sa, audiences=[ISSUER], expiration_seconds=600, now=clock.now))
    union = Authenticator(tokens=[checker], anonymous=False)
    accounts = caches.of(kinds.SERVICE_ACCOUNTS)
    accounts.lag(fresh_sa)
    with pytest.raises(MaybeStale, match="service account token has been invalidated"):
        union.authenticate_token(token)
    user, by_token = asyncio.run(union.authenticate(peer=None, authorization=f"Bearer {token}"))
    assert user is not None and user.name == "system:serviceaccount:team:new" and by_token
    assert accounts.fresh_waits == 1
    # Gone for good: refused after one more look.
    accounts.delete("team", "new")
    assert asyncio.run(union.authenticate(peer=None, authorization=f"Bearer {token}")) == (None, False)
    assert accounts.fresh_waits == 2


def test_a_bound_pods_deletion_is_seen_by_a_token_already_accepted(
        setup: tuple[TokenGenerator, ServiceAccountTokenAuthenticator, FakeCaches, Clock]) -> None:
    """What the check keeps of a bound object is kept per revision: a newer one is read again."""
    generator, checker, caches, clock = setup
    token = generator.sign(generator.claims(SA, audiences=[ISSUER], expiration_seconds=600, pod=POD, now=clock.now))
    for _ in range(2):
        assert checker.authenticate_token(token, []) is not None
    deleting = {**POD, "metadata": {**POD["metadata"], "deletionTimestamp": "2023-11-14T22:13:20Z"}}
    caches.of(kinds.PODS).put(deleting)
    # Within the 60 s grace a Pod being deleted keeps its tokens; after it, they are refused.
    clock.now = 1_700_000_000.0 + 59
    assert checker.authenticate_token(token, []) is not None
    clock.now = 1_700_000_000.0 + 61
    with pytest.raises(Exception, match="service account token has been invalidated"):
        checker.authenticate_token(token, [])
    # And a ServiceAccount replaced under the same name (a new uid) ends it too.
    clock.now = 1_700_000_000.0
    caches.of(kinds.PODS).put(POD)
    assert checker.authenticate_token(token, []) is not None
    caches.of(kinds.SERVICE_ACCOUNTS).put({**SA, "metadata": {**SA["metadata"], "uid": "other"}})
    with pytest.raises(Exception, match=r"service account UID \(other\) does not match"):
        checker.authenticate_token(token, [])
