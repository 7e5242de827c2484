"""DefaultStorageClass: a PersistentVolumeClaim that names no class gets the default one.

As Kubernetes' ``plugin/pkg/admission/storage/storageclass/setdefault``: on
CREATE, a claim without ``spec.storageClassName`` (absent, not ``""``, which
asks for no class) gets the StorageClass annotated
``storageclass.kubernetes.io/is-default-class: "true"``; with several, the
newest (then the first by name), as Kubernetes has chosen since 1.28. Classes
are read from the watch cache.
"""

from __future__ import annotations

from apiserver.admission.chain import Attributes, Plugin
from machinery.api import kinds
from machinery.api.storage import is_default_class


class DefaultStorageClass(Plugin):
    name = "DefaultStorageClass"
    operations = frozenset({"CREATE"})

    def handles(self, attrs: Attributes) -> bool:
        return (super().handles(attrs) and attrs.resource is kinds.PERSISTENT_VOLUME_CLAIMS
                and not attrs.subresource and attrs.object is not None)

    async def admit(self, attrs: Attributes) -> None:
        spec = (attrs.object or {}).setdefault("spec", {})
        if not isinstance(spec, dict) or ("storageClassName" in spec and spec["storageClassName"] is not None):
            return
        cache = attrs.context.store(kinds.STORAGE_CLASSES).cache
        defaults = [e.obj for e in cache.sorted_entries() if is_default_class(e.obj)]
        if not defaults:
            return
        newest = max(defaults, key=lambda c: ((c.get("metadata") or {}).get("creationTimestamp") or "",
                                              _reverse((c.get("metadata") or {}).get("name") or "")))
        spec["storageClassName"] = (newest.get("metadata") or {}).get("name")


def _reverse(name: str) -> tuple[int, ...]:
    """Sorts names in reverse, so that ``max`` picks the first name among classes created the same second."""
    return tuple(-ord(c) for c in name)
