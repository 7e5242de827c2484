"""What differs between resources: kube-apiserver's "REST strategy", one subclass per kind.

The generic store (``store.py``) does the reads, guarded writes, deletes and
watches the same way for every resource; a Strategy says, for its kind, how
an object is prepared on create and update (what a spec update may change,
what a ``/status`` update may change), defaulted, validated, which fields can
be selected, and how it is deleted (graceful deletion for Pods).

Strategies are stateless and synchronous: they see plain dicts in wire form
and mutate only the object they are handed.
"""

from __future__ import annotations

from typing import Any, ClassVar

from apiserver.validation.defaults import default_object
from apiserver.validation.field import FieldError
from machinery.api.kinds import ResourceInfo

Obj = dict[str, Any]

#: What a ``/status`` write may carry: the status, and metadata (labels, annotations).
_STATUS_WRITABLE = frozenset({"apiVersion", "kind", "metadata", "status"})


class Strategy:
    ri: ClassVar[ResourceInfo[Any]]
    #: DELETE answers with the object (True) or with a Status (False), as kube-apiserver's store does.
    return_deleted_object: ClassVar[bool] = False
    allow_create_on_update: ClassVar[bool] = False
    allow_unconditional_update: ClassVar[bool] = True
    #: Fields a field selector may name, beyond metadata.name and metadata.namespace.
    selectable_fields: ClassVar[tuple[str, ...]] = ()
    #: Whether the kind has a spec whose changes bump metadata.generation.
    has_generation: ClassVar[bool] = False

    # --- fields --------------------------------------------------------------------------

    def fields(self, obj: Obj) -> dict[str, str]:
        meta = obj.get("metadata") or {}
        out = {"metadata.name": meta.get("name") or ""}
        if self.ri.namespaced:
            out["metadata.namespace"] = meta.get("namespace") or ""
        for path in self.selectable_fields:
            out[path] = _lookup(obj, path)
        return out

    def supports_field(self, path: str) -> bool:
        return path in ("metadata.name", "metadata.namespace") or path in self.selectable_fields

    # --- create and update -----------------------------------------------------------------

    def prepare_for_create(self, obj: Obj) -> None:
        """Reset what a client may not set on create (status, for most kinds)."""
        if self.ri.has_status:
            obj.pop("status", None)

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        """A spec update keeps the stored status."""
        if self.ri.has_status:
            if "status" in old:
                new["status"] = old["status"]
            else:
                new.pop("status", None)

    def prepare_for_status_update(self, new: Obj, old: Obj) -> None:
        """A ``/status`` update keeps the stored spec (and any other top-level field but metadata).

        As in kube-apiserver, metadata such as labels and annotations may change through
        ``/status``; the server-owned metadata is restored by the store.
        """
        for k in [k for k in new if k not in _STATUS_WRITABLE]:
            del new[k]
        for k, v in old.items():
            if k not in _STATUS_WRITABLE:
                new[k] = v

    def default(self, obj: Obj) -> None:
        default_object(self.ri.kind, obj)

    def validate(self, obj: Obj) -> list[FieldError]:
        return []

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return []

    def validate_status_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return self.validate_update(new, old)

    def validate_subresource(self, subresource: str, new: Obj, old: Obj) -> list[FieldError]:
        """Other subresources (binding, scale, finalize) change the object on the server's terms;
        the result must still be a valid object."""
        return self.validate(new)

    # --- delete --------------------------------------------------------------------------

    def grace_period(self, obj: Obj, requested: int | None) -> int:
        """Seconds a delete waits before the object goes (0: at once). Only Pods wait."""
        return 0

    def blocks_deletion(self, obj: Obj) -> bool:
        """Whether something besides metadata.finalizers keeps a deleted object (a Namespace's spec.finalizers)."""
        return False

    def mark_deleting(self, obj: Obj) -> None:
        """Changes made when the object gets its deletionTimestamp (a Namespace turns Terminating)."""


def _lookup(obj: Obj, path: str) -> str:
    cur: Any = obj
    for part in path.split("."):
        if not isinstance(cur, dict):
            return ""
        cur = cur.get(part)
    if cur is None:
        return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)
