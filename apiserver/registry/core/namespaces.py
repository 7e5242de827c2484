"""Namespaces: Active on create; a delete makes them Terminating until ``spec.finalizers`` is empty.

The namespace controller empties a terminating namespace, then removes the
``kubernetes`` finalizer through ``/finalize``; that write deletes the
Namespace, as kube-apiserver's namespace storage does. ``status.phase`` is a
field selectors may name (``metadata.name`` the only other one, as in Kubernetes).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, ClassVar, Final

import orjson
from starlette.responses import Response

from apiserver import printers
from apiserver.endpoints import body
from apiserver.endpoints.responses import object_response
from apiserver.printers import Column, Printer, Row, since
from apiserver.registry.generic import StatusREST
from apiserver.registry.resource import Resource, Subresource
from apiserver.registry.strategy import Obj, StatusStrategy, Strategy
from apiserver.storage.objects import Entry
from apiserver.validation import core as validation
from apiserver.validation import defaults
from apiserver.validation.field import FieldError
from machinery.api import kinds

if TYPE_CHECKING:
    from apiserver.endpoints.request import Call


class NamespaceStrategy(Strategy):
    return_deleted_object = True
    #: Kubernetes' field labels for Namespaces: ``metadata.name`` and ``status.phase``.
    selectable_fields: ClassVar[tuple[str, ...]] = ("status.phase",)

    def supports_field(self, path: str) -> bool:
        return path in ("metadata.name", "status.phase")

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

    def default(self, obj: Obj) -> None:
        defaults.default_namespace(obj)

    def blocks_deletion(self, obj: Obj) -> bool:
        return bool((obj.get("spec") or {}).get("finalizers"))

    def mark_deleting(self, obj: Obj) -> None:
        obj.setdefault("status", {})["phase"] = "Terminating"

    def validate(self, obj: Obj) -> list[FieldError]:
        return validation.validate_namespace(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_namespace_update(new, old)


class NamespaceStatusStrategy(StatusStrategy):
    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_namespace_status_update(new, old)


class NamespaceFinalizeStrategy(StatusStrategy):
    """``/finalize`` changes spec.finalizers only."""

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        finalizers = (new.get("spec") or {}).get("finalizers")
        new.clear()
        new.update(orjson.loads(orjson.dumps(old)))
        new["spec"] = {**(old.get("spec") or {}), "finalizers": finalizers or []}

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_namespace_finalize_update(new, old)


_STRATEGY: Final = NamespaceStrategy()
_FINALIZE: Final = NamespaceFinalizeStrategy(_STRATEGY)


class FinalizeREST(Subresource):
    async def update(self, call: Call) -> Response:
        assert call.name is not None
        opts = body.write_options(call, subresource="finalize")
        obj = await body.decode_object(call, opts)

        def finalize(_current: Obj, _entry: Entry) -> Obj:
            return obj

        entry, _ = await call.store.using(_FINALIZE).update_with(None, call.name, finalize, opts)
        return object_response(call, entry)


COLUMNS: Final = (printers.NAME, Column("Status", "string", "The status of the namespace"), printers.AGE)


def _row(ns: Obj, now: datetime) -> Row:
    metadata: Obj = ns.get("metadata") or {}
    phase = (ns.get("status") or {}).get("phase", "")
    return Row([metadata.get("name", ""), phase, since(metadata.get("creationTimestamp"), now)])


RESOURCE: Final = Resource(
    info=kinds.NAMESPACES,
    strategy=_STRATEGY,
    subresources={"status": StatusREST(NamespaceStatusStrategy(_STRATEGY)), "finalize": FinalizeREST()},
    printer=Printer(COLUMNS, _row),
)
