"""rbac.authorization.k8s.io/v1 ClusterRole: cluster-wide permissions, possibly aggregated from others.

Kubernetes' validation, printer (Name, Created At) and escalation prevention;
an ``aggregationRule`` may be set only by someone holding every permission.
The rules of an aggregated ClusterRole are filled in by the
controller-manager's clusterrole-aggregation controller, as in Kubernetes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from apiserver.printers import Printer
from apiserver.registry.rbac import escalation
from apiserver.registry.rbac.roles import ROLE_COLUMNS, role_row
from apiserver.registry.resource import Resource
from apiserver.registry.strategy import Obj, Strategy
from apiserver.validation import rbac as validation
from apiserver.validation.field import FieldError
from machinery.api import kinds

if TYPE_CHECKING:
    from apiserver.admission import UserInfo
    from apiserver.registry.store import StoreContext


class ClusterRoleStrategy(Strategy):
    """The create and update rules of ClusterRoles."""

    def validate(self, obj: Obj) -> list[FieldError]:
        return validation.validate_cluster_role(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_cluster_role_update(new, old)

    async def authorize_write(self, ctx: StoreContext, user: UserInfo, obj: Obj, old: Obj | None) -> None:
        escalation.check_role(ctx, user, kinds.CLUSTER_ROLES, obj, old)


RESOURCE: Final = Resource(info=kinds.CLUSTER_ROLES, strategy=ClusterRoleStrategy(),
                           printer=Printer(ROLE_COLUMNS, role_row))
