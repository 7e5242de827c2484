"""coordination.k8s.io/v1 Leases: node heartbeats and leader election locks."""

from __future__ import annotations

from apiserver.registry.strategy import Obj, Strategy
from apiserver.validation import coordination as validation
from apiserver.validation.field import FieldError
from machinery.api import kinds


class LeaseStrategy(Strategy):
    ri = kinds.LEASES

    def validate(self, obj: Obj) -> list[FieldError]:
        return validation.validate_lease(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_lease_update(new, old)
