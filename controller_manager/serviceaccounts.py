"""``--use-service-account-credentials``: each controller acts as its own ServiceAccount, as kube-controller-manager.

client-go's ``SAControllerClientBuilder``: for a controller whose
ServiceAccount is ``kube-system/<name>``, the controller-manager (as
``system:kube-controller-manager``, whose role may create ServiceAccounts and
their tokens) makes sure the ServiceAccount exists, asks for a one-hour
TokenRequest token, and hands the controller a client that sends that token.
The bootstrap policy binds each such ServiceAccount to
``system:controller:<name>``, so a controller can do what Kubernetes' can, and
nothing more. Tokens are renewed when 80% of their life is gone. The shared
informers stay the controller-manager's own (its role may list and watch
everything), as in Kubernetes.

Concurrency: clients are made before the controllers start; one task renews
every token; all on the event loop.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
from typing import Final

import httpx

from machinery.api.kinds import SERVICE_ACCOUNTS
from machinery.api.meta import parse_time
from machinery.client.errors import AlreadyExists, ApiError, NotFound
from machinery.client.rest import Client

log = logging.getLogger(__name__)

NAMESPACE: Final = "kube-system"
EXPIRATION_SECONDS: Final = 3600
#: Renew a token once this much of its lifetime has passed.
RENEW_AT: Final = 0.8


class ServiceAccountClients:
    def __init__(self, root: Client, *, namespace: str = NAMESPACE) -> None:
        self._root = root
        self._namespace = namespace
        self._clients: dict[str, tuple[Client, float]] = {}

    async def client_for(self, name: str) -> Client:
        """A client acting as ``<namespace>/<name>`` (the ServiceAccount is created if missing)."""
        cached = self._clients.get(name)
        if cached is not None:
            return cached[0]
        delay = 0.2
        while True:
            try:
                await self._ensure_account(name)
                token, renew_at = await self._token(name)
                break
            except (ApiError, httpx.TransportError) as err:
                log.warning("getting a token for ServiceAccount %s/%s failed, retrying in %.1fs: %s",
                            self._namespace, name, delay, err)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 5.0)
        client = self._root.with_token(token)
        self._clients[name] = (client, renew_at)
        log.info("controller credentials: acting as ServiceAccount %s/%s", self._namespace, name)
        return client

    async def _ensure_account(self, name: str) -> None:
        try:
            await self._root.get(SERVICE_ACCOUNTS, name, namespace=self._namespace)
        except NotFound:
            try:
                await self._root.create(SERVICE_ACCOUNTS, {"metadata": {"name": name}}, namespace=self._namespace)
            except AlreadyExists:
                pass

    async def _token(self, name: str) -> tuple[str, float]:
        token, expires = await self._root.create_token(self._namespace, name, expiration_seconds=EXPIRATION_SECONDS)
        loop = asyncio.get_running_loop()
        expiry = parse_time(expires)
        lifetime = (expiry - dt.datetime.now(dt.UTC)).total_seconds() if expiry else EXPIRATION_SECONDS
        return token, loop.time() + max(lifetime, 60.0) * RENEW_AT

    async def renew_forever(self) -> None:
        """Renew each token before it expires; retried every few seconds when the APIServer refuses."""
        loop = asyncio.get_running_loop()
        while True:
            now = loop.time()
            due = [n for n, (_c, at) in self._clients.items() if at <= now]
            for name in due:
                client = self._clients[name][0]
                try:
                    await self._ensure_account(name)
                    token, renew_at = await self._token(name)
                except (ApiError, httpx.TransportError) as err:
                    log.warning("renewing the token of ServiceAccount %s/%s failed: %s", self._namespace, name,
                                err)
                    self._clients[name] = (client, loop.time() + 5.0)
                    continue
                client.set_token(token)
                self._clients[name] = (client, renew_at)
            upcoming = [at for _c, at in self._clients.values()]
            await asyncio.sleep(max(1.0, min(upcoming, default=now + 60.0) - loop.time()))
