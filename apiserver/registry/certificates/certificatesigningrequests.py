"""certificates.k8s.io/v1 CertificateSigningRequests: validation, ``/status`` and ``/approval``, the printer.

As ``pkg/registry/certificates/certificates/strategy.go``: the main endpoint
changes only metadata (the spec and status stay as stored); ``/status`` (the
signer's) keeps the spec and the Approved/Denied conditions; ``/approval``
(``kubectl certificate approve|deny``) changes only the conditions. New
conditions get their ``lastUpdateTime`` and ``lastTransitionTime``.

Kubernetes sets ``spec.username``, ``uid``, ``groups`` and ``extra`` from the
authenticated requester on create. kubesim's strategies do not see the request's
user yet, so those fields are kept as the client wrote them.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Final

from apiserver import printers
from apiserver.printers import Column, Printer, Row, since
from apiserver.registry.generic import StatusREST
from apiserver.registry.resource import Resource
from apiserver.registry.strategy import Obj, StatusStrategy, Strategy
from apiserver.validation import certificates as validation
from apiserver.validation.field import FieldError
from machinery.api import kinds, meta


def populate_condition_timestamps(new: Obj, old: Obj) -> None:
    """``populateConditionTimestamps``: now, or the old transition time of the same type and status."""
    now = meta.now_time()
    old_conditions = list((old.get("status") or {}).get("conditions") or [])
    for condition in (new.get("status") or {}).get("conditions") or []:
        if not condition.get("lastUpdateTime"):
            condition["lastUpdateTime"] = now
        if not condition.get("lastTransitionTime"):
            previous = next((c.get("lastTransitionTime") for c in old_conditions
                             if c.get("type") == condition.get("type") and c.get("status") == condition.get("status")
                             and c.get("lastTransitionTime")), None)
            condition["lastTransitionTime"] = previous or now


def _keep_conditions_of(new: Obj, old: Obj, kind: str) -> None:
    """``preserveConditionInstances``: the stored Approved/Denied conditions, whatever was sent for them."""
    status = new.setdefault("status", {})
    old_ones = [c for c in (old.get("status") or {}).get("conditions") or [] if c.get("type") == kind]
    new_list = list(status.get("conditions") or [])
    kept = iter(old_ones)
    for i, condition in enumerate(new_list):
        if condition.get("type") == kind:
            replacement = next(kept, None)
            if replacement is not None:
                new_list[i] = replacement
    status["conditions"] = new_list


class CertificateSigningRequestStrategy(Strategy):
    def prepare_for_create(self, obj: Obj) -> None:
        obj["status"] = {}

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        # The main endpoint changes metadata only.
        for key in ("spec", "status"):
            if key in old:
                new[key] = old[key]
            else:
                new.pop(key, None)

    def validate(self, obj: Obj) -> list[FieldError]:
        return validation.validate_certificate_signing_request(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_certificate_signing_request_update(new, old)


class CertificateSigningRequestStatusStrategy(StatusStrategy):
    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        super().prepare_for_update(new, old)
        for kind in ("Approved", "Denied"):
            _keep_conditions_of(new, old, kind)
        populate_condition_timestamps(new, old)

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_certificate_signing_request_status_update(new, old)


class CertificateSigningRequestApprovalStrategy(StatusStrategy):
    """``/approval``: only the conditions change."""

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        conditions = (new.get("status") or {}).get("conditions")
        super().prepare_for_update(new, old)
        status: dict[str, Any] = dict(old.get("status") or {})
        if conditions is not None:
            status["conditions"] = conditions
        else:
            status.pop("conditions", None)
        new["status"] = status
        populate_condition_timestamps(new, old)

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_certificate_signing_request_approval_update(new, old)


_STRATEGY: Final = CertificateSigningRequestStrategy()
_V1 = "io.k8s.api.certificates.v1."

COLUMNS: Final = (
    printers.NAME,
    printers.AGE,
    Column("SignerName", "string", (_V1 + "CertificateSigningRequestSpec", "signerName")),
    Column("Requestor", "string", "Name of the user who requested the CSR"),
    Column("RequestedDuration", "string", (_V1 + "CertificateSigningRequestSpec", "expirationSeconds")),
    Column("Condition", "string", (_V1 + "CertificateSigningRequestStatus", "conditions")),
)


def condition_summary(csr: Obj) -> str:
    """``extractCSRStatus``: Denied, Approved or Pending, then ``,Failed`` and ``,Issued``."""
    status: Obj = csr.get("status") or {}
    types = {c.get("type") for c in status.get("conditions") or []}
    text = "Denied" if "Denied" in types else "Approved" if "Approved" in types else "Pending"
    if "Failed" in types:
        text += ",Failed"
    if status.get("certificate"):
        text += ",Issued"
    return text


def _row(csr: Obj, now: datetime) -> Row:
    metadata: Obj = csr.get("metadata") or {}
    spec: Obj = csr.get("spec") or {}
    seconds = spec.get("expirationSeconds")
    duration = printers.human_duration(timedelta(seconds=seconds)) if seconds is not None else "<none>"
    return Row([metadata.get("name", ""), since(metadata.get("creationTimestamp"), now),
                spec.get("signerName") or "<none>", spec.get("username", ""), duration, condition_summary(csr)])


PRINTER: Final = Printer(COLUMNS, _row)

RESOURCE: Final = Resource(
    info=kinds.builtin("certificates.k8s.io", "v1", "certificatesigningrequests"),
    strategy=_STRATEGY,
    subresources={
        "status": StatusREST(CertificateSigningRequestStatusStrategy(_STRATEGY)),
        "approval": StatusREST(CertificateSigningRequestApprovalStrategy(_STRATEGY)),
    },
    printer=PRINTER,
)
