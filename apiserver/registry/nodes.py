"""Nodes: cluster-scoped, created by their kubelet with their status; ``spec.unschedulable`` is selectable."""

from __future__ import annotations

from typing import ClassVar

from apiserver.registry.strategy import Obj, Strategy
from apiserver.validation import core as validation
from apiserver.validation.field import FieldError
from machinery.api import kinds


class NodeStrategy(Strategy):
    ri = kinds.NODES
    has_generation = False
    selectable_fields: ClassVar[tuple[str, ...]] = ("spec.unschedulable",)

    def prepare_for_create(self, obj: Obj) -> None:
        # A kubelet registers its Node with status filled in; kube-apiserver keeps it.
        pass

    def fields(self, obj: Obj) -> dict[str, str]:
        out = super().fields(obj)
        # kube-apiserver reports an unset spec.unschedulable as "false".
        out["spec.unschedulable"] = out["spec.unschedulable"] or "false"
        return out

    def validate(self, obj: Obj) -> list[FieldError]:
        return validation.validate_node(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_node_update(new, old)

    def validate_status_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_node_status_update(new, old)
