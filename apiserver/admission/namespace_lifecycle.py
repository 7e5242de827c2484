"""NamespaceLifecycle: no new objects in a namespace that does not exist or is terminating.

As Kubernetes' plugin (``plugin/pkg/admission/namespace/lifecycle``):

- a create in a namespace that does not exist is ``404 NotFound``
  (``namespaces "x" not found``), in one that is terminating ``403 Forbidden``
  (``unable to create new content in namespace x because it is being
  terminated``);
- the namespaces every cluster needs (``default``, ``kube-system``,
  ``kube-public``) may not be deleted: ``403 Forbidden``, ``this namespace
  may not be deleted``;
- access reviews (``localsubjectaccessreviews``) are answered in any
  namespace, and updates and deletes of existing objects are left alone.

The namespace is looked up in the watch cache, and in etcd when the cache does
not have it (a namespace created a moment ago may not have reached the cache
yet) or when this APIServer admitted its deletion less than 30 seconds ago (the
cache may still show it Active: Kubernetes' ``forceLiveLookupCache``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Final

from apiserver import errors
from apiserver.admission.chain import Attributes, Plugin
from machinery.api import kinds

#: Namespaces Kubernetes refuses to delete.
IMMORTAL_NAMESPACES: Final = frozenset({"default", "kube-system", "kube-public"})
_ACCESS_REVIEWS: Final = frozenset({("authorization.k8s.io", "localsubjectaccessreviews")})
#: How long a namespace whose deletion was admitted is read from etcd rather than the cache.
FORCE_LIVE_LOOKUP_TTL: Final = 30.0


class NamespaceLifecycle(Plugin):
    name = "NamespaceLifecycle"
    operations = frozenset({"CREATE", "DELETE"})

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        #: namespace -> when its forced live lookups end
        self._force_live_lookup: dict[str, float] = {}

    def _forced_live(self, namespace: str) -> bool:
        until = self._force_live_lookup.get(namespace)
        if until is None:
            return False
        if until > self._clock():
            return True
        del self._force_live_lookup[namespace]
        return False

    async def admit(self, attrs: Attributes) -> None:
        info = attrs.resource
        if attrs.operation == "DELETE":
            if info is kinds.NAMESPACES and attrs.name:
                if attrs.name in IMMORTAL_NAMESPACES:
                    raise errors.forbidden(info, attrs.name, "this namespace may not be deleted")
                now = self._clock()
                self._force_live_lookup = {n: t for n, t in self._force_live_lookup.items() if t > now}
                self._force_live_lookup[attrs.name] = now + FORCE_LIVE_LOOKUP_TTL
            return
        if not info.namespaced or not attrs.namespace or (info.group, info.plural) in _ACCESS_REVIEWS:
            return
        store = attrs.context.store(kinds.NAMESPACES)
        if self._forced_live(attrs.namespace):
            entry = await store.read(None, attrs.namespace)
        else:
            entry = await store.lookup(None, attrs.namespace)
        if entry is None:
            raise errors.namespace_not_found(attrs.namespace)
        phase = (entry.obj.get("status") or {}).get("phase")
        if phase == "Terminating" or (entry.obj.get("metadata") or {}).get("deletionTimestamp"):
            name = attrs.name or ((attrs.object or {}).get("metadata") or {}).get("generateName") or ""
            raise errors.namespace_terminating(info, name, attrs.namespace)
