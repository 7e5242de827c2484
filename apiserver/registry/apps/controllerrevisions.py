"""apps/v1 ControllerRevisions: the immutable snapshots StatefulSets and DaemonSets keep of their templates.

As ``pkg/registry/apps/controllerrevision/strategy.go``: ``data`` is
required and never changes; the printer shows the controller owning the
revision as ``kind.group/name``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Final

from apiserver import printers
from apiserver.printers import Column, Printer, Row, since
from apiserver.registry.resource import Resource
from apiserver.registry.strategy import Obj, Strategy
from apiserver.validation import apps as validation
from apiserver.validation.field import FieldError
from machinery.api import kinds


class ControllerRevisionStrategy(Strategy):
    def validate(self, obj: Obj) -> list[FieldError]:
        return validation.validate_controller_revision(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_controller_revision_update(new, old)


COLUMNS: Final = (
    printers.NAME,
    Column("Controller", "string", "Controller of the object"),
    Column("Revision", "string", ("io.k8s.api.apps.v1.ControllerRevision", "revision")),
    printers.AGE,
)


def controller_name(obj: Obj) -> str:
    """The controlling owner as ``formatResourceName`` writes it (``daemonset.apps/web``), or ``<none>``."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or ():
        if ref.get("controller"):
            group = str(ref.get("apiVersion") or "").rpartition("/")[0]
            kind = str(ref.get("kind") or "")
            qualified = f"{kind}.{group}" if group else kind
            return f"{qualified.lower()}/{ref.get('name', '')}" if qualified else str(ref.get("name", ""))
    return "<none>"


def _row(revision: Obj, now: datetime) -> Row:
    metadata: Obj = revision.get("metadata") or {}
    return Row([metadata.get("name", ""), controller_name(revision), revision.get("revision") or 0,
                since(metadata.get("creationTimestamp"), now)])


PRINTER: Final = Printer(COLUMNS, _row)

RESOURCE: Final = Resource(info=kinds.CONTROLLER_REVISIONS, strategy=ControllerRevisionStrategy(), printer=PRINTER)
