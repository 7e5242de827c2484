"""Informers: a cache of each watched resource, kept in sync by list+watch, with change handlers.

    factory = InformerFactory(client)
    pods = factory.informer(PODS, indexers={NODE_NAME_INDEX: index_pod_by_node_name})
    pods.add_handler(on_add=..., on_update=..., on_delete=...)
    # run factory.run() as a task, then:
    await factory.wait_for_cache_sync()
    pods.store.by_index(NODE_NAME_INDEX, "node-1")
"""

from __future__ import annotations

from machinery.informer.reflector import Listed, Reflector
from machinery.informer.shared import DeletedFinalStateUnknown, InformerFactory, SharedInformer
from machinery.informer.store import (
    NAMESPACE_INDEX,
    NODE_NAME_INDEX,
    OWNER_UID_INDEX,
    IndexFunc,
    Store,
    index_by_namespace,
    index_by_owner_uid,
    index_pod_by_node_name,
)

__all__ = [
    "NAMESPACE_INDEX", "NODE_NAME_INDEX", "OWNER_UID_INDEX", "DeletedFinalStateUnknown", "IndexFunc",
    "InformerFactory", "Listed", "Reflector", "SharedInformer", "Store", "index_by_namespace",
    "index_by_owner_uid", "index_pod_by_node_name",
]
