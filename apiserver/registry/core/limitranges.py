"""core/v1 LimitRanges: per-namespace bounds and defaults for containers, Pods and claims.

A Container item's ``default`` comes from its ``max`` and its
``defaultRequest`` from ``default`` then ``min`` (``SetDefaults_LimitRangeItem``);
validation checks that the bounds are consistent. Applying them to Pods is
the LimitRanger admission plugin's work. Kubernetes has no printer for
LimitRanges: ``kubectl get limits`` shows NAME and CREATED AT.
"""

from __future__ import annotations

from typing import Final

from apiserver.registry.resource import Resource
from apiserver.registry.strategy import Obj, Strategy
from apiserver.validation import core as validation
from apiserver.validation import defaults
from apiserver.validation.field import FieldError
from machinery.api import kinds


class LimitRangeStrategy(Strategy):
    """The create and update rules of LimitRanges."""

    def default(self, obj: Obj) -> None:
        defaults.default_limit_range(obj)

    def validate(self, obj: Obj) -> list[FieldError]:
        return validation.validate_limit_range(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_limit_range_update(new, old)


_STRATEGY: Final = LimitRangeStrategy()

RESOURCE: Final = Resource(
    info=kinds.LIMIT_RANGES,
    strategy=_STRATEGY,
)
