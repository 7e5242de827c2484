"""The ServiceAccount controller: every active namespace has the ServiceAccount ``default``.

Kubernetes' ``pkg/controller/serviceaccount`` (``ServiceAccountsController``):
when a namespace appears, or its ``default`` ServiceAccount is deleted, the
ServiceAccount is created again. Pods need it: the ServiceAccount admission
plugin refuses a Pod whose ServiceAccount does not exist, so clients wait for
``default`` before creating Pods in a new namespace. Terminating namespaces
are left alone (the APIServer would refuse the create anyway).

Concurrency: ``concurrent_serviceaccount_syncs`` workers, keyed by namespace;
handlers only enqueue.
"""

from __future__ import annotations

import logging
from typing import Final

from kubernetes.client import V1Namespace, V1ServiceAccount

from controller_manager.context import ControllerContext
from machinery.api.kinds import NAMESPACES, SERVICE_ACCOUNTS, ObjectKey, object_key
from machinery.client.errors import AlreadyExists, ApiError, NotFound
from machinery.client.objects import meta_of
from machinery.controller import Controller
from machinery.informer.shared import DeletedFinalStateUnknown

log = logging.getLogger(__name__)

NAME: Final = "serviceaccount-controller"
ALIASES: Final = ("serviceaccount",)
DEFAULT: Final = "default"
#: The Status cause of a create refused because the namespace is terminating.
_NAMESPACE_TERMINATING: Final = "NamespaceTerminating"


class ServiceAccountsController(Controller):
    """Creates ``default`` in every namespace that lacks it."""

    def __init__(self, ctx: ControllerContext) -> None:
        self._namespaces = ctx.informers.informer(NAMESPACES)
        self._accounts = ctx.informers.informer(SERVICE_ACCOUNTS)
        super().__init__("serviceaccount", informers=[self._namespaces, self._accounts],
                         workers=ctx.options.concurrent_serviceaccount_syncs, clock=ctx.clock)
        self._client = ctx.client
        self._is_leading = ctx.is_leading
        self._namespaces.add_handler(on_add=self._namespace_changed,
                                     on_update=lambda _old, new: self._namespace_changed(new))
        self._accounts.add_handler(on_delete=self._account_deleted)

    def _namespace_changed(self, namespace: V1Namespace) -> None:
        self.queue.add(ObjectKey(meta_of(namespace).name or ""))

    def _account_deleted(self, obj: V1ServiceAccount | DeletedFinalStateUnknown[V1ServiceAccount]) -> None:
        account = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        meta = meta_of(account)
        if meta.name == DEFAULT and meta.namespace:
            self.queue.add(ObjectKey(meta.namespace))

    async def sync(self, key: ObjectKey) -> None:
        namespace = self._namespaces.store.get(key)
        if namespace is None or not self._is_leading():
            return
        meta = meta_of(namespace)
        if meta.deletion_timestamp is not None or (namespace.status is not None
                                                   and namespace.status.phase == "Terminating"):
            return
        if self._accounts.store.get(object_key(key, DEFAULT)) is not None:
            return
        try:
            await self._client.create(SERVICE_ACCOUNTS, {"apiVersion": "v1", "kind": "ServiceAccount",
                                                         "metadata": {"name": DEFAULT, "namespace": key}})
        except AlreadyExists:
            return
        except NotFound:
            return
        except ApiError as err:
            if err.has_cause(_NAMESPACE_TERMINATING):
                return
            raise
        log.info("created ServiceAccount %s/%s", key, DEFAULT)
