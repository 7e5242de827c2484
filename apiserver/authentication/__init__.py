"""Authentication: who sent each request (client certificates, bearer tokens, ServiceAccount JWTs, anonymous).

- :mod:`.authenticator`: the union of authenticators, in kube-apiserver's order;
- :mod:`.x509`: the TLS peer's certificate (CN = user, O = groups);
- :mod:`.tokenfile`: ``--token-auth-file``;
- :mod:`.serviceaccount`: signing and checking ServiceAccount tokens;
- :mod:`.filter`: the ASGI filter that puts the user in the request's scope (or answers 401);
- :mod:`.impersonation`: ``Impersonate-*`` headers, for those allowed to impersonate.

:func:`build` makes the APIServer's authenticator and token generator from its settings.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from apiserver.authentication.authenticator import Authenticator, InvalidCredentials, TokenAuthenticator
from apiserver.authentication.serviceaccount import (
    ServiceAccountTokenAuthenticator,
    TokenGenerator,
    load_public_keys,
)
from apiserver.authentication.tokenfile import TokenFile
from machinery import pki

if TYPE_CHECKING:
    from apiserver.settings import SecuritySettings
    from apiserver.watchcache import WatchCache
    from machinery.api.kinds import ResourceInfo

#: The issuer kubeadm configures, used when ``--service-account-issuer`` is not given.
DEFAULT_ISSUER: Final = "https://kubernetes.default.svc.cluster.local"

__all__ = ["Authenticator", "InvalidCredentials", "build"]


def build(settings: SecuritySettings,
          cache_of: Callable[[ResourceInfo[Any]], WatchCache | None]) -> tuple[Authenticator, TokenGenerator]:
    """The request authenticator and the ServiceAccount token generator ``settings`` describe.

    Without ``--service-account-signing-key-file`` a key is made for this
    process only (ECDSA, in microseconds): TokenRequest still works, and its
    tokens end with the process, which is what a single throwaway APIServer wants.
    """
    issuers = settings.service_account_issuers or (DEFAULT_ISSUER,)
    audiences = settings.api_audiences or issuers[:1]
    if settings.service_account_signing_key_file:
        generator = TokenGenerator.load(settings.service_account_signing_key_file, issuers[0])
    else:
        generator = TokenGenerator(pki.new_key(), issuers[0])
    keys = load_public_keys(list(settings.service_account_key_files)) if settings.service_account_key_files \
        else [generator.private_key.public_key()]
    tokens: list[TokenAuthenticator] = []
    if settings.token_auth_file:
        tokens.append(TokenFile.load(settings.token_auth_file))
    tokens.append(ServiceAccountTokenAuthenticator(keys, issuers, audiences, cache_of))
    return Authenticator(tokens=tokens, anonymous=settings.anonymous_auth, api_audiences=audiences), generator
