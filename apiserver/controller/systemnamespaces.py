"""The system namespaces controller: ``default``, ``kube-system``, ``kube-public`` and ``kube-node-lease`` exist.

kube-apiserver creates these namespaces when it starts and checks them again
every minute, creating any that has gone (``kube-node-lease`` may be deleted;
the others are protected by NamespaceLifecycle, but an etcd restored from an
old backup may lack them). Components whose Leases live there retry until
the namespace is back, so this loop is what heals them.

Concurrency: one task per APIServer (several APIServers race harmlessly:
a create that finds the namespace present is an AlreadyExists, ignored).
A namespace that is terminating is left alone until it is gone.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Final

from apiserver import errors
from apiserver.registry.store import Store, WriteOptions
from machinery.api import kinds

log = logging.getLogger("apiserver.systemnamespaces")

SYSTEM_NAMESPACES: Final = ("default", "kube-system", "kube-public", "kube-node-lease")
#: kube-apiserver's period.
DEFAULT_INTERVAL: Final = 60.0
#: How soon to try again after etcd did not answer.
_RETRY: Final = 0.5


async def ensure(store: Store, names: tuple[str, ...] = SYSTEM_NAMESPACES) -> list[str]:
    """Create every namespace of ``names`` that does not exist; the names still missing (etcd failed)."""
    missing = []
    for name in names:
        if store.cache.ready.is_set() and store.cache.get(kinds.NAMESPACES.etcd_key(None, name)) is not None:
            continue
        body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
        try:
            await store.create(None, body, WriteOptions(field_manager="kube-apiserver"))
            log.info("created system namespace %s", name)
        except errors.APIError as e:
            if e.reason != "AlreadyExists":
                log.debug("could not create namespace %s: %s", name, e.message)
                missing.append(name)
    return missing


async def run(store: Store, *, interval: float = DEFAULT_INTERVAL) -> None:
    """Ensure the system namespaces now, then every ``interval`` seconds; retry quickly while etcd fails."""
    while True:
        missing = await ensure(store)
        await asyncio.sleep(_RETRY if missing else interval)
