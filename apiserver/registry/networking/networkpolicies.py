"""networking.k8s.io/v1 NetworkPolicies: defaults (TCP ports, policy types), validation, a generation, printer."""

from __future__ import annotations

from datetime import datetime
from typing import Final

from apiserver import printers
from apiserver.printers import Column, Printer, Row, since
from apiserver.registry.resource import Resource
from apiserver.registry.strategy import Obj, Strategy
from apiserver.validation import networking as validation
from apiserver.validation.field import FieldError
from machinery.api import kinds


class NetworkPolicyStrategy(Strategy):
    has_generation = True

    def default(self, obj: Obj) -> None:
        validation.default_network_policy(obj)

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        self.default(new)
        super().prepare_for_update(new, old)

    def validate(self, obj: Obj) -> list[FieldError]:
        return validation.validate_network_policy(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_network_policy_update(new, old)


COLUMNS: Final = (
    printers.NAME,
    Column("Pod-Selector", "string", "A label selector that identifies a set of pods"),
    printers.AGE,
)


def _row(policy: Obj, now: datetime) -> Row:
    metadata: Obj = policy.get("metadata") or {}
    selector = (policy.get("spec") or {}).get("podSelector") or {}
    return Row([metadata.get("name", ""), printers.format_label_selector(selector),
                since(metadata.get("creationTimestamp"), now)])


PRINTER: Final = Printer(COLUMNS, _row)

RESOURCE: Final = Resource(info=kinds.builtin("networking.k8s.io", "v1", "networkpolicies"),
                           strategy=NetworkPolicyStrategy(), printer=PRINTER)
