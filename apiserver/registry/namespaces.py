"""Namespaces: Active on create; a delete makes them Terminating until ``spec.finalizers`` is empty.

The namespace controller empties a terminating namespace, then removes the
``kubernetes`` finalizer through ``/finalize``; that write deletes the
Namespace, as kube-apiserver's namespace storage does.
"""

from __future__ import annotations

from apiserver.registry.strategy import Obj, Strategy
from apiserver.validation import core as validation
from apiserver.validation import defaults
from apiserver.validation.field import FieldError
from machinery.api import kinds


class NamespaceStrategy(Strategy):
    ri = kinds.NAMESPACES
    return_deleted_object = True

    def prepare_for_create(self, obj: Obj) -> None:
        # Status Active and the "kubernetes" finalizer; kept out of defaulting, which runs on
        # every update and would put the finalizer back after /finalize removed it.
        defaults.prepare_namespace_create(obj)

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        super().prepare_for_update(new, old)
        # spec.finalizers only changes through /finalize.
        spec = new.setdefault("spec", {})
        old_finalizers = (old.get("spec") or {}).get("finalizers")
        if old_finalizers is None:
            spec.pop("finalizers", None)
        else:
            spec["finalizers"] = old_finalizers

    def prepare_for_finalize(self, new: Obj, old: Obj) -> None:
        """``/finalize`` changes spec.finalizers only."""
        finalizers = (new.get("spec") or {}).get("finalizers")
        new.clear()
        new.update(old)
        new["spec"] = {**(old.get("spec") or {}), "finalizers": finalizers or []}

    def blocks_deletion(self, obj: Obj) -> bool:
        return bool((obj.get("spec") or {}).get("finalizers"))

    def mark_deleting(self, obj: Obj) -> None:
        obj.setdefault("status", {})["phase"] = "Terminating"

    def validate(self, obj: Obj) -> list[FieldError]:
        return validation.validate_namespace(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_namespace_update(new, old)

    def validate_status_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_namespace_status_update(new, old)

    def validate_subresource(self, subresource: str, new: Obj, old: Obj) -> list[FieldError]:
        if subresource == "finalize":
            return validation.validate_namespace_finalize_update(new, old)
        return super().validate_subresource(subresource, new, old)
