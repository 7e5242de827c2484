"""admissionregistration.k8s.io/v1 ValidatingAdmissionPolicyBindings: defaulted, validated and printed.

Stored for the clients that manage them: kubesim does not enforce the policies they bind.
"""

from __future__ import annotations

from datetime import datetime
from typing import Final

from apiserver import printers
from apiserver.printers import Column, Printer, Row, since
from apiserver.registry.resource import Resource
from apiserver.registry.strategy import Obj, Strategy
from apiserver.validation import admissionregistration as validation
from apiserver.validation.field import FieldError
from machinery.api import kinds


class ValidatingAdmissionPolicyBindingStrategy(Strategy):
    has_generation = True

    def default(self, obj: Obj) -> None:
        validation.default_validating_admission_policy_binding(obj)

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        self.default(new)
        super().prepare_for_update(new, old)

    def validate(self, obj: Obj) -> list[FieldError]:
        return validation.validate_validating_admission_policy_binding(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_validating_admission_policy_binding_update(new, old)


_SPEC = "io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicyBindingSpec"
COLUMNS: Final = (
    printers.NAME,
    Column("PolicyName", "string", (_SPEC, "policyName")),
    Column("ParamRef", "string", (_SPEC, "paramRef")),
    printers.AGE,
)


def _param_ref(binding: Obj) -> str:
    ref = (binding.get("spec") or {}).get("paramRef")
    if not ref:
        return "<unset>"
    if ref.get("name"):
        return f"{ref['namespace']}/{ref['name']}" if ref.get("namespace") else f"*/{ref['name']}"
    if ref.get("selector") is not None:
        return printers.selector_string(ref["selector"])
    return "<unset>"


def _row(binding: Obj, now: datetime) -> Row:
    metadata: Obj = binding.get("metadata") or {}
    return Row([metadata.get("name", ""), (binding.get("spec") or {}).get("policyName", ""), _param_ref(binding),
                since(metadata.get("creationTimestamp"), now)])


PRINTER: Final = Printer(COLUMNS, _row)

RESOURCE: Final = Resource(info=kinds.builtin("admissionregistration.k8s.io", "v1", "validatingadmissionpolicybindings"),
                           strategy=ValidatingAdmissionPolicyBindingStrategy(), printer=PRINTER)
