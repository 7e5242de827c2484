"""rbac.authorization.k8s.io/v1 ClusterRoleBinding: grants a ClusterRole's permissions cluster-wide.

As RoleBindings (``rolebindings.py``), but the roleRef must be a ClusterRole
and ServiceAccount subjects must name their namespace.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from apiserver.printers import Printer
from apiserver.registry.rbac import escalation
from apiserver.registry.rbac.rolebindings import binding_columns, binding_row
from apiserver.registry.resource import Resource
from apiserver.registry.strategy import Obj, Strategy
from apiserver.validation import rbac as validation
from apiserver.validation.field import FieldError
from machinery.api import kinds

if TYPE_CHECKING:
    from apiserver.admission import UserInfo
    from apiserver.registry.store import StoreContext


class ClusterRoleBindingStrategy(Strategy):
    """The create and update rules of ClusterRoleBindings."""

    def default(self, obj: Obj) -> None:
        validation.default_binding(obj)

    def validate(self, obj: Obj) -> list[FieldError]:
        return validation.validate_cluster_role_binding(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_cluster_role_binding_update(new, old)

    async def authorize_write(self, ctx: StoreContext, user: UserInfo, obj: Obj, old: Obj | None) -> None:
        validation.default_binding(obj)
        await escalation.check_binding(ctx, user, kinds.CLUSTER_ROLE_BINDINGS, obj, old)


RESOURCE: Final = Resource(info=kinds.CLUSTER_ROLE_BINDINGS, strategy=ClusterRoleBindingStrategy(),
                           printer=Printer(binding_columns("ClusterRoleBinding"), binding_row))
