"""ServiceAccount tokens: signed JWTs, issued by TokenRequest and checked on every request that carries one.

Issuing (:class:`TokenGenerator`) signs Kubernetes' claims with
``--service-account-signing-key-file`` (RS256, the key id being the base64url
SHA-256 of the public key, as kube-apiserver names it)::

    {"iss": ..., "sub": "system:serviceaccount:<ns>:<name>", "aud": [...], "exp": ..., "iat": ..., "nbf": ...,
     "jti": ..., "kubernetes.io": {"namespace": ..., "serviceaccount": {"name", "uid"},
                                   "pod": {"name", "uid"}, "node": {"name", "uid"}, "secret": {...}}}

Checking (:class:`ServiceAccountTokenAuthenticator`) is kube-apiserver's JWT
token authenticator: a token from another issuer is not ours (None); one of
ours must be signed by one of ``--service-account-key-file``'s keys, be
within its validity, name one of the audiences asked for (the API audiences
by default), and the objects it is bound to must still exist with the same
uid: its ServiceAccount, and its Pod or Secret (one being deleted stays valid
for 60 seconds, as there). So deleting the Pod ends the token.

Signatures are checked with PyJWT over ``cryptography``; a decoded token's
claims are kept so that a busy client pays the RSA check once, while the
bound objects are looked up in the watch caches on every request (what is
read of each, its uid and deletion time, is kept per revision of it).
Concurrency: synchronous, on the event loop.
"""

from __future__ import annotations

import base64
import hashlib
import re
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import jwt
import orjson
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from apiserver.admission import UserInfo
from machinery.api import kinds
from machinery.api.meta import parse_time

if TYPE_CHECKING:
    from apiserver.watchcache import WatchCache

Obj = dict[str, Any]
CacheOf = Callable[[kinds.ResourceInfo[Any]], "WatchCache | None"]
PublicKey = rsa.RSAPublicKey | ec.EllipticCurvePublicKey

SA_PREFIX: Final = "system:serviceaccount:"
ALL_SERVICE_ACCOUNTS: Final = "system:serviceaccounts"
POD_NAME_KEY: Final = "authentication.kubernetes.io/pod-name"
POD_UID_KEY: Final = "authentication.kubernetes.io/pod-uid"
NODE_NAME_KEY: Final = "authentication.kubernetes.io/node-name"
NODE_UID_KEY: Final = "authentication.kubernetes.io/node-uid"
CREDENTIAL_ID_KEY: Final = "authentication.kubernetes.io/credential-id"
#: A Pod or Secret being deleted keeps its tokens valid this long (kube-apiserver's grace).
DELETION_GRACE_SECONDS: Final = 60.0
_CACHE_MAX: Final = 65_536


@dataclass(frozen=True, slots=True)
class _Bound:
    """A token's bound object (ServiceAccount, Pod, Secret) as the check reads it, at revision ``rv``."""

    rv: int
    uid: str | None
    #: Its deletionTimestamp, in seconds since the epoch.
    deleted: float | None


class TokenError(Exception):
    """A token of ours that is not valid; the message is kube-apiserver's."""


class BoundObjectNotCached(TokenError):
    """A token's ServiceAccount, Secret or Pod is not in this APIServer's watch cache: the token is
    invalid, unless the cache has not seen the object's creation yet (``caches`` may lag behind etcd)."""

    def __init__(self, caches: Sequence[Any]) -> None:
        super().__init__("service account token has been invalidated")
        self.caches = tuple(c for c in caches if c is not None)


def key_id(public_key: PublicKey) -> str:
    der = public_key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return base64.urlsafe_b64encode(hashlib.sha256(der).digest()).decode().rstrip("=")


_PEM_BLOCK: Final = re.compile(rb"-----BEGIN ([A-Z ]+)-----.*?-----END \1-----", re.DOTALL)


def load_public_keys(paths: Sequence[str]) -> list[PublicKey]:
    """The verification keys in ``--service-account-key-file``s (public keys, or private ones' public halves)."""
    keys: list[PublicKey] = []
    for path in paths:
        with open(path, "rb") as f:
            data = f.read()
        for match in _PEM_BLOCK.finditer(data):
            pem = match.group(0)
            public: Any
            if b"PRIVATE KEY" in match.group(1):
                public = serialization.load_pem_private_key(pem, password=None).public_key()
            else:
                public = serialization.load_pem_public_key(pem)
            if not isinstance(public, rsa.RSAPublicKey | ec.EllipticCurvePublicKey):
                raise ValueError(f"{path}: unsupported key type {type(public).__name__}")  # noqa: TRY004
            keys.append(public)
        if not keys:
            raise ValueError(f"{path}: no PEM public or private key found")
    return keys


def service_account_user(namespace: str, name: str) -> str:
    return f"{SA_PREFIX}{namespace}:{name}"


def split_username(username: str) -> tuple[str, str] | None:
    """(namespace, name) of ``system:serviceaccount:<ns>:<name>``."""
    if not username.startswith(SA_PREFIX):
        return None
    namespace, sep, name = username[len(SA_PREFIX):].partition(":")
    if not sep or not namespace or not name or ":" in name:
        return None
    return namespace, name


def service_account_groups(namespace: str) -> tuple[str, ...]:
    return (ALL_SERVICE_ACCOUNTS, f"{ALL_SERVICE_ACCOUNTS}:{namespace}")


class TokenGenerator:
    """Signs ServiceAccount tokens with the private key (``--service-account-signing-key-file``)."""

    def __init__(self, private_key: Any, issuer: str) -> None:
        self.private_key = private_key
        self.issuer = issuer
        self.algorithm = "RS256" if isinstance(private_key, rsa.RSAPrivateKey) else "ES256"
        self.kid = key_id(private_key.public_key())

    @classmethod
    def load(cls, path: str, issuer: str) -> TokenGenerator:
        with open(path, "rb") as f:
            return cls(serialization.load_pem_private_key(f.read(), password=None), issuer)

    def claims(self, service_account: Obj, *, audiences: Sequence[str], expiration_seconds: int,
               pod: Obj | None = None, secret: Obj | None = None, node: Obj | None = None,
               now: float | None = None, warn_after_seconds: int | None = None) -> Obj:
        """Kubernetes' ``token.Claims``: the public claims and the ``kubernetes.io`` private ones
        (``warnafter`` when ``warn_after_seconds`` is given: an extended token's intended expiry)."""
        issued = int(now if now is not None else time.time())
        meta = service_account.get("metadata") or {}
        namespace = meta.get("namespace") or ""
        private: Obj = {"namespace": namespace,
                        "serviceaccount": {"name": meta.get("name") or "", "uid": meta.get("uid") or ""}}
        for key, obj in (("pod", pod), ("secret", secret), ("node", node)):
            if obj is not None:
                ometa = obj.get("metadata") or {}
                private[key] = {"name": ometa.get("name") or "", "uid": ometa.get("uid") or ""}
        if warn_after_seconds is not None:
            private["warnafter"] = issued + warn_after_seconds
        return {"aud": list(audiences), "exp": issued + expiration_seconds, "iat": issued, "iss": self.issuer,
                "jti": str(uuid.uuid4()), "kubernetes.io": private, "nbf": issued,
                "sub": service_account_user(namespace, meta.get("name") or "")}

    def sign(self, claims: Obj) -> str:
        return jwt.encode(claims, self.private_key, algorithm=self.algorithm, headers={"kid": self.kid})


class ServiceAccountTokenAuthenticator:
    """Validates bound ServiceAccount tokens (``--service-account-key-file``, ``--service-account-issuer``)."""

    def __init__(self, keys: Sequence[PublicKey], issuers: Sequence[str], api_audiences: Sequence[str],
                 cache_of: CacheOf, *, clock: Callable[[], float] = time.time) -> None:
        self.keys = {key_id(k): k for k in keys}
        self.issuers = tuple(issuers)
        self.api_audiences = tuple(api_audiences)
        self._cache_of = cache_of
        self._clock = clock
        self._verified: dict[str, Obj] = {}
        #: What the bound-object check needs of each cached object (by etcd key), as of one revision of it.
        self._bound: dict[str, _Bound] = {}

    # --- the signature and the claims --------------------------------------------------------

    def _ours(self, token: str) -> bool:
        if token in self._verified:
            # Verified before, so ours: what every request of a busy client finds.
            return True
        try:
            claims = jwt.decode(token, options={"verify_signature": False})
        except jwt.PyJWTError:
            return False
        return isinstance(claims, dict) and claims.get("iss") in self.issuers

    def _verify(self, token: str) -> Obj:
        cached = self._verified.get(token)
        if cached is not None:
            return cached
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError as err:
            raise TokenError(f"invalid token: {err}") from None
        kid = header.get("kid")
        candidates = [self.keys[kid]] if kid in self.keys else list(self.keys.values())
        for key in candidates:
            try:
                claims = jwt.decode(token, key, algorithms=["RS256", "ES256"],
                                    options={"verify_aud": False, "verify_exp": False, "verify_nbf": False,
                                             "verify_iat": False, "verify_iss": False})
            except jwt.InvalidSignatureError:
                continue
            except jwt.PyJWTError as err:
                raise TokenError(f"invalid token: {err}") from None
            if len(self._verified) >= _CACHE_MAX:
                self._verified.clear()
            self._verified[token] = claims
            return claims
        raise TokenError("invalid signature: no key of --service-account-key-file verifies it")

    # --- the bound objects ---------------------------------------------------------------------

    def _get(self, info: kinds.ResourceInfo[Any], namespace: str, name: str) -> _Bound | None:
        """The uid and deletion time of the cached object, read once per revision of it."""
        cache = self._cache_of(info)
        if cache is None:
            return None
        entry = cache.get(info.etcd_key(namespace, name))
        if entry is None:
            return None
        known = self._bound.get(entry.key)
        if known is not None and known.rv == entry.rv:
            return known
        meta = orjson.loads(entry.raw).get("metadata") or {}
        deleted = parse_time(meta.get("deletionTimestamp"))
        bound = _Bound(entry.rv, meta.get("uid"), deleted.timestamp() if deleted is not None else None)
        if len(self._bound) >= _CACHE_MAX:
            self._bound.clear()
        self._bound[entry.key] = bound
        return bound

    def _deleted_too_long_ago(self, obj: _Bound) -> bool:
        return obj.deleted is not None and obj.deleted < self._clock() - DELETION_GRACE_SECONDS

    def _check_bound(self, private: Obj, namespace: str) -> None:
        sa_ref = private.get("serviceaccount") or {}
        sa = self._get(kinds.SERVICE_ACCOUNTS, namespace, sa_ref.get("name") or "")
        if sa is None:
            raise BoundObjectNotCached([self._cache_of(kinds.SERVICE_ACCOUNTS)])
        sa_uid = sa.uid
        if sa_uid != sa_ref.get("uid"):
            raise TokenError(f"service account UID ({sa_uid}) does not match claim ({sa_ref.get('uid')})")
        for key, info in (("secret", kinds.SECRETS), ("pod", kinds.PODS)):
            ref = private.get(key)
            if not isinstance(ref, dict):
                continue
            obj = self._get(info, namespace, ref.get("name") or "")
            if obj is None:
                raise BoundObjectNotCached([self._cache_of(info)])
            if self._deleted_too_long_ago(obj):
                raise TokenError("service account token has been invalidated")
            uid = obj.uid
            if uid != ref.get("uid"):
                raise TokenError(f"{key} UID ({uid}) does not match service account {key} ref claim "
                                 f"({ref.get('uid')})")

    # --- the authenticator ---------------------------------------------------------------------

    def authenticate_token(self, token: str, audiences: Sequence[str]) -> UserInfo | None:
        """The token's user; None for a token that is not ours; :class:`TokenError` for an invalid one of ours."""
        if token.count(".") != 2 or not self._ours(token):
            return None
        claims = self._verify(token)
        now = self._clock()
        exp, nbf = claims.get("exp"), claims.get("nbf")
        if isinstance(exp, int | float) and now > exp:
            raise TokenError("service account token has expired")
        if isinstance(nbf, int | float) and now < nbf:
            raise TokenError("service account token is not valid yet")
        token_audiences = claims.get("aud") or []
        if isinstance(token_audiences, str):
            token_audiences = [token_audiences]
        token_audiences = token_audiences or list(self.api_audiences)
        wanted = list(audiences) or list(self.api_audiences)
        if not set(token_audiences) & set(wanted) and self.api_audiences:
            raise TokenError(f"token audiences {_go_list(token_audiences)} is invalid for the target audiences "
                             f"{_go_list(wanted)}")
        private = claims.get("kubernetes.io") or {}
        namespace = private.get("namespace") or ""
        split = split_username(str(claims.get("sub") or ""))
        if split is None or split[0] != namespace:
            raise TokenError("service account token claims are not valid")
        self._check_bound(private, namespace)
        extra: list[tuple[str, tuple[str, ...]]] = []
        pod, node = private.get("pod"), private.get("node")
        if isinstance(pod, dict):
            extra += [(POD_NAME_KEY, (pod.get("name") or "",)), (POD_UID_KEY, (pod.get("uid") or "",))]
        if isinstance(node, dict):
            extra += [(NODE_NAME_KEY, (node.get("name") or "",)), (NODE_UID_KEY, (node.get("uid") or "",))]
        if claims.get("jti"):
            extra.append((CREDENTIAL_ID_KEY, (f"JTI={claims['jti']}",)))
        sa_uid = (private.get("serviceaccount") or {}).get("uid") or ""
        return UserInfo(service_account_user(namespace, split[1]), service_account_groups(namespace), sa_uid,
                        tuple(sorted(extra)))


def _go_list(values: Sequence[str]) -> str:
    return "[" + " ".join(orjson.dumps(v).decode() for v in values) + "]"
