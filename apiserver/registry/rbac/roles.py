"""rbac.authorization.k8s.io/v1 Role: namespaced permissions.

Kubernetes' validation (``apiserver.validation.rbac``), its printer (Name,
Created At) and its escalation prevention (``escalation.py``): only someone
allowed ``escalate`` on the Role, or holding every permission it grants in
its namespace, may write it.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Final

from apiserver import printers
from apiserver.printers import Column, Printer, Row
from apiserver.registry.rbac import escalation
from apiserver.registry.resource import Resource
from apiserver.registry.strategy import Obj, Strategy
from apiserver.validation import rbac as validation
from apiserver.validation.field import FieldError
from machinery.api import kinds

if TYPE_CHECKING:
    from apiserver.admission import UserInfo
    from apiserver.registry.store import StoreContext

CREATED_AT: Final = Column("Created At", "date", (printers.OBJECT_META, "creationTimestamp"))
ROLE_COLUMNS: Final = (printers.NAME, CREATED_AT)


def role_row(role: Obj, _now: datetime) -> Row:
    meta = role.get("metadata") or {}
    return Row([meta.get("name", ""), meta.get("creationTimestamp") or "<unknown>"])


class RoleStrategy(Strategy):
    """The create and update rules of Roles."""

    def validate(self, obj: Obj) -> list[FieldError]:
        return validation.validate_role(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_role_update(new, old)

    async def authorize_write(self, ctx: StoreContext, user: UserInfo, obj: Obj, old: Obj | None) -> None:
        escalation.check_role(ctx, user, kinds.ROLES, obj, old)


RESOURCE: Final = Resource(info=kinds.ROLES, strategy=RoleStrategy(), printer=Printer(ROLE_COLUMNS, role_row))
