"""admissionregistration.k8s.io/v1 ValidatingAdmissionPolicies: defaulted, validated, ``/status``, printer.

Stored for the clients that manage them: kubesim neither compiles nor evaluates
their CEL expressions (no type checking in ``status``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Final

from apiserver import printers
from apiserver.printers import Column, Printer, Row, since
from apiserver.registry.generic import StatusREST
from apiserver.registry.resource import Resource
from apiserver.registry.strategy import Obj, StatusStrategy, Strategy
from apiserver.validation import admissionregistration as validation
from apiserver.validation.field import FieldError
from machinery.api import kinds


class ValidatingAdmissionPolicyStrategy(Strategy):
    has_generation = True

    def default(self, obj: Obj) -> None:
        validation.default_validating_admission_policy(obj)

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        self.default(new)
        super().prepare_for_update(new, old)

    def validate(self, obj: Obj) -> list[FieldError]:
        return validation.validate_validating_admission_policy(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_validating_admission_policy_update(new, old)


_STRATEGY: Final = ValidatingAdmissionPolicyStrategy()
_SPEC = "io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicySpec"
COLUMNS: Final = (
    printers.NAME,
    Column("Validations", "integer", (_SPEC, "validations")),
    Column("ParamKind", "string", (_SPEC, "paramKind")),
    printers.AGE,
)


def _row(policy: Obj, now: datetime) -> Row:
    metadata: Obj = policy.get("metadata") or {}
    spec: Obj = policy.get("spec") or {}
    param_kind = spec.get("paramKind")
    shown = f"{param_kind.get('apiVersion', '')}/{param_kind.get('kind', '')}" if param_kind else "<unset>"
    return Row([metadata.get("name", ""), len(spec.get("validations") or []), shown,
                since(metadata.get("creationTimestamp"), now)])


PRINTER: Final = Printer(COLUMNS, _row)

RESOURCE: Final = Resource(
    info=kinds.builtin("admissionregistration.k8s.io", "v1", "validatingadmissionpolicies"),
    strategy=_STRATEGY,
    subresources={"status": StatusREST(StatusStrategy(_STRATEGY))},
    printer=PRINTER,
)
