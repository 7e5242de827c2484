"""The root CA certificate publisher: the ConfigMap ``kube-root-ca.crt`` in every namespace.

Kubernetes' ``pkg/controller/certificates/rootcacertpublisher``: each
namespace gets a ConfigMap ``kube-root-ca.crt`` whose ``ca.crt`` is the
cluster's CA bundle (``--root-ca-file``), so that Pods can verify the
APIServer they reach through their projected token volume. The ConfigMap is
made again if deleted and put back if its data is changed; its annotation
``kubernetes.io/description`` says what it is for.

``kubesim up`` (and docker-compose.yml) give the cluster CA, which signs the
APIServer's serving certificate; without ``--root-ca-file`` the bundle is
empty, as Kubernetes' publisher publishes whatever CA data it was given.

Concurrency: 5 workers keyed by namespace; handlers only enqueue.
"""

from __future__ import annotations

import logging
from typing import Final

from kubernetes.client import V1ConfigMap, V1Namespace

from controller_manager.context import ControllerContext
from machinery.api.kinds import CONFIG_MAPS, NAMESPACES, ObjectKey, object_key
from machinery.client.errors import AlreadyExists, ApiError, NotFound
from machinery.client.objects import meta_of, to_wire
from machinery.controller import Controller
from machinery.informer.shared import DeletedFinalStateUnknown

log = logging.getLogger(__name__)

NAME: Final = "root-ca-certificate-publisher-controller"
ALIASES: Final = ("root-ca-cert-publisher",)
CONFIG_MAP: Final = "kube-root-ca.crt"
DATA_KEY: Final = "ca.crt"
DESCRIPTION: Final = ("Contains a CA bundle that can be used to verify the kube-apiserver when using internal "
                      "endpoints such as the internal service IP or kubernetes.default.svc. No other usage is "
                      "guaranteed across distributions of Kubernetes clusters.")
_DESCRIPTION_KEY: Final = "kubernetes.io/description"


class Publisher(Controller):
    """Keeps ``kube-root-ca.crt`` in every namespace."""

    def __init__(self, ctx: ControllerContext) -> None:
        self._namespaces = ctx.informers.informer(NAMESPACES)
        self._config_maps = ctx.informers.informer(CONFIG_MAPS)
        super().__init__("root_ca_cert_publisher", informers=[self._namespaces, self._config_maps], workers=5,
                         clock=ctx.clock)
        self._client = ctx.client
        self._is_leading = ctx.is_leading
        self._root_ca = ctx.options.root_ca
        self._namespaces.add_handler(on_add=self._namespace_changed,
                                     on_update=lambda _old, new: self._namespace_changed(new))
        self._config_maps.add_handler(on_update=lambda _old, new: self._config_map_changed(new),
                                      on_delete=self._config_map_changed)

    def _namespace_changed(self, namespace: V1Namespace) -> None:
        self.queue.add(ObjectKey(meta_of(namespace).name or ""))

    def _config_map_changed(self, obj: V1ConfigMap | DeletedFinalStateUnknown[V1ConfigMap]) -> None:
        config_map = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        meta = meta_of(config_map)
        if meta.name == CONFIG_MAP and meta.namespace:
            self.queue.add(ObjectKey(meta.namespace))

    async def sync(self, key: ObjectKey) -> None:
        namespace = self._namespaces.store.get(key)
        if namespace is None or not self._is_leading() or meta_of(namespace).deletion_timestamp is not None:
            return
        current = self._config_maps.store.get(object_key(key, CONFIG_MAP))
        data = {DATA_KEY: self._root_ca}
        if current is None:
            try:
                await self._client.create(CONFIG_MAPS, {
                    "apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": CONFIG_MAP, "namespace": key,
                                 "annotations": {_DESCRIPTION_KEY: DESCRIPTION}},
                    "data": data})
            except (AlreadyExists, NotFound):
                return
            except ApiError as err:
                if err.has_cause("NamespaceTerminating"):
                    return
                raise
            return
        annotations = meta_of(current).annotations or {}
        if current.data == data and annotations.get(_DESCRIPTION_KEY) == DESCRIPTION:
            return
        body = to_wire(current)
        body["data"] = data
        body["metadata"]["annotations"] = {**annotations, _DESCRIPTION_KEY: DESCRIPTION}
        try:
            await self._client.update(CONFIG_MAPS, body)
        except NotFound:
            return
