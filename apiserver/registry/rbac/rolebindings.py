"""rbac.authorization.k8s.io/v1 RoleBinding: grants a Role's or ClusterRole's permissions in one namespace.

Kubernetes' defaulting (the RBAC group on the roleRef and on User and Group
subjects), validation (``roleRef`` immutable), printer (Name, Role, Age;
wide: Users, Groups, ServiceAccounts) and escalation prevention: binding a
role needs ``bind`` on it or every permission it grants.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Final

from apiserver import printers
from apiserver.printers import Column, Printer, Row, since
from apiserver.registry.rbac import escalation
from apiserver.registry.resource import Resource
from apiserver.registry.strategy import Obj, Strategy
from apiserver.validation import rbac as validation
from apiserver.validation.field import FieldError
from machinery.api import kinds

if TYPE_CHECKING:
    from apiserver.admission import UserInfo
    from apiserver.registry.store import StoreContext


def binding_columns(kind: str) -> tuple[Column, ...]:
    return (
        printers.NAME,
        Column("Role", "string", (f"io.k8s.api.rbac.v1.{kind}", "roleRef")),
        printers.AGE,
        Column("Users", "string", f"Users in the {kind[0].lower()}{kind[1:]}", 1),
        Column("Groups", "string", f"Groups in the {kind[0].lower()}{kind[1:]}", 1),
        Column("ServiceAccounts", "string", f"ServiceAccounts in the {kind[0].lower()}{kind[1:]}", 1),
    )


def binding_row(binding: Obj, now: datetime) -> Row:
    meta = binding.get("metadata") or {}
    ref = binding.get("roleRef") or {}
    users, groups, accounts = [], [], []
    for subject in binding.get("subjects") or ():
        kind, name = subject.get("kind"), subject.get("name") or ""
        if kind == "User":
            users.append(name)
        elif kind == "Group":
            groups.append(name)
        elif kind == "ServiceAccount":
            ns = subject.get("namespace") or ""
            accounts.append(f"{ns}:{name}" if ns else name)
    return Row([meta.get("name", ""), f"{ref.get('kind', '')}/{ref.get('name', '')}",
                since(meta.get("creationTimestamp"), now), ", ".join(users), ", ".join(groups), ", ".join(accounts)])


class RoleBindingStrategy(Strategy):
    """The create and update rules of RoleBindings."""

    def default(self, obj: Obj) -> None:
        validation.default_binding(obj)

    def validate(self, obj: Obj) -> list[FieldError]:
        return validation.validate_role_binding(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_role_binding_update(new, old)

    async def authorize_write(self, ctx: StoreContext, user: UserInfo, obj: Obj, old: Obj | None) -> None:
        validation.default_binding(obj)
        await escalation.check_binding(ctx, user, kinds.ROLE_BINDINGS, obj, old)


RESOURCE: Final = Resource(info=kinds.ROLE_BINDINGS, strategy=RoleBindingStrategy(),
                           printer=Printer(binding_columns("RoleBinding"), binding_row))
