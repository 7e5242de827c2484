"""The certificates.k8s.io/v1 rules: validation of CertificateSigningRequests and their status and approval.

As ``pkg/apis/certificates/validation`` of Kubernetes 1.32: the request is a
PEM ``CERTIFICATE REQUEST`` (parsed with ``cryptography``), the signer a
``domain/path`` name, the usages known and not repeated, conditions of known
statuses with Approved and Denied exclusive; ``/status`` may not add or remove
Approved or Denied conditions and ``/approval`` may not remove them; a
certificate is set only once, on an approved request.

Pure functions over plain dicts; no state.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any, Final

from cryptography import x509

from apiserver.validation.field import ErrorType, FieldError, Path
from apiserver.validation.meta import name_is_path_segment, validate_object_meta, validate_object_meta_update
from apiserver.validation.values import items, obj
from machinery.api import names

Obj = Mapping[str, Any]

SPEC: Final = Path("spec")
_CONDITIONS: Final = Path("status", "conditions")
_CERTIFICATE: Final = Path("status", "certificate")
_LEGACY_UNKNOWN_SIGNER: Final = "kubernetes.io/legacy-unknown"
_STATUSES: Final = ("True", "False", "Unknown")
#: Every key usage a CSR may ask for (``allValidUsages``), sorted as Kubernetes lists them.
VALID_USAGES: Final = tuple(sorted((
    "signing", "digital signature", "content commitment", "key encipherment", "key agreement", "data encipherment",
    "cert sign", "crl sign", "encipher only", "decipher only", "any", "server auth", "client auth", "code signing",
    "email protection", "s/mime", "ipsec end system", "ipsec tunnel", "ipsec user", "timestamping", "ocsp signing",
    "microsoft sgc", "netscape sgc",
)))
_MIN_EXPIRATION: Final = 600


def _decoded(value: Any) -> bytes | None:
    """A ``[]byte`` field as JSON carries it (base64); ``None`` when it is not base64."""
    if not value:
        return b""
    try:
        return base64.b64decode(str(value), validate=True)
    except (binascii.Error, ValueError):
        return None


def request_error(request: Any) -> str | None:
    """Why ``spec.request`` is not a PEM certificate request (``ParseCSR``), or ``None``."""
    data = _decoded(request)
    if not data:
        return "PEM block type must be CERTIFICATE REQUEST"
    text = data.decode("ascii", "replace")
    begin = "-----BEGIN CERTIFICATE REQUEST-----"
    if begin not in text and "-----BEGIN NEW CERTIFICATE REQUEST-----" not in text:
        return "PEM block type must be CERTIFICATE REQUEST"
    try:
        x509.load_pem_x509_csr(data)
    except ValueError as e:
        return f"x509: {e}"
    return None


def validate_signer_name(signer: str, path: Path) -> list[FieldError]:
    """``ValidateSignerName``: ``example.com/signer-name``."""
    if not signer:
        return [FieldError.required(path)]
    segments = signer.split("/")
    if len(segments) != 2:
        return [FieldError.invalid(path, signer, "must be a fully qualified domain and path of the form "
                                                 "'example.com/signer-name'")]
    domain, rest = segments
    errs: list[FieldError] = []
    if len(domain) > 253:
        errs.append(FieldError(ErrorType.TOO_LONG, str(path), domain, "may not be more than 253 bytes"))
    labels = domain.split(".")
    for label in labels:
        problems = names.is_dns1123_label(label)
        if problems:
            errs += [FieldError.invalid(path, domain, f'validating label "{label}": {msg}') for msg in problems]
            break
    if len(labels) < 2:
        errs.append(FieldError.invalid(path, domain, "should be a domain with at least two segments separated by dots"))
    for label in rest.split("."):
        problems = names.is_dns1123_subdomain(label)
        if problems:
            errs += [FieldError.invalid(path, rest, f'validating label "{label}": {msg}') for msg in problems]
            break
    if len(signer) > 253 + (253 - 63) + 1:
        errs.append(FieldError(ErrorType.TOO_LONG, str(path), signer, "may not be more than 444 bytes"))
    return errs


def _validate_conditions(csr: Obj) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: set[str] = set()
    approved = denied = False
    for i, condition in enumerate(items(obj(csr.get("status")).get("conditions"))):
        condition, path = obj(condition), _CONDITIONS.index(i)
        kind, status = str(condition.get("type") or ""), condition.get("status") or ""
        if not kind:
            errs.append(FieldError.required(path.child("type")))
        if status not in _STATUSES:
            errs.append(FieldError.not_supported(path.child("status"), status, _STATUSES))
        if kind in ("Approved", "Denied"):
            if (kind == "Approved" and denied) or (kind == "Denied" and approved):
                errs.append(FieldError.invalid(path.child("type"), kind, "Approved and Denied conditions are "
                                                                         "mutually exclusive"))
            approved = approved or kind == "Approved"
            denied = denied or kind == "Denied"
            if status != "True":
                errs.append(FieldError.not_supported(path.child("status"), status, ("True",)))
        if kind in seen:
            errs.append(FieldError.duplicate(path.child("type"), kind))
        seen.add(kind)
    return errs


def _certificate_error(certificate: Any) -> str | None:
    data = _decoded(certificate)
    if data is None:
        return "must be base64 encoded"
    if not data:
        return None
    try:
        found = x509.load_pem_x509_certificates(data)
    except ValueError:
        return "must contain at least one CERTIFICATE PEM block"
    return None if found else "must contain at least one CERTIFICATE PEM block"


def _validate(csr: Obj, *, creating: bool) -> list[FieldError]:
    spec = obj(csr.get("spec"))
    errs = validate_object_meta(obj(csr.get("metadata")), namespaced=False, name_rule=name_is_path_segment)
    problem = request_error(spec.get("request"))
    if problem is not None:
        errs.append(FieldError.invalid(SPEC.child("request"), spec.get("request") or "", problem))
    usages = [str(u) for u in items(spec.get("usages"))]
    if not usages:
        errs.append(FieldError.required(SPEC.child("usages")))
    seen: set[str] = set()
    for i, usage in enumerate(usages):
        if creating and usage not in VALID_USAGES:
            errs.append(FieldError.not_supported(SPEC.child("usages").index(i), usage, VALID_USAGES))
        if creating and usage in seen:
            errs.append(FieldError.duplicate(SPEC.child("usages").index(i), usage))
        seen.add(usage)
    signer = str(spec.get("signerName") or "")
    if creating and signer == _LEGACY_UNKNOWN_SIGNER:
        errs.append(FieldError.invalid(SPEC.child("signerName"), signer,
                                       "the legacy signerName is not allowed via this API version"))
    else:
        errs += validate_signer_name(signer, SPEC.child("signerName"))
    expiration = spec.get("expirationSeconds")
    if expiration is not None and expiration < _MIN_EXPIRATION:
        errs.append(FieldError.invalid(SPEC.child("expirationSeconds"), expiration,
                                       "may not specify a duration less than 600 seconds (10 minutes)"))
    errs += _validate_conditions(csr)
    problem = _certificate_error(obj(csr.get("status")).get("certificate"))
    if problem is not None:
        errs.append(FieldError.invalid(_CERTIFICATE, "<certificate data>", problem))
    return errs


def validate_certificate_signing_request(csr: Obj) -> list[FieldError]:
    return _validate(csr, creating=True)


def validate_certificate_signing_request_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_object_meta_update(obj(new.get("metadata")), obj(old.get("metadata")))
    return errs + _validate(new, creating=False)


def _condition_types(csr: Obj) -> list[str]:
    return [str(obj(c).get("type") or "") for c in items(obj(csr.get("status")).get("conditions"))]


def _has_true(csr: Obj, kind: str) -> bool:
    return any(obj(c).get("type") == kind and obj(c).get("status") == "True"
               for c in items(obj(csr.get("status")).get("conditions")))


def validate_certificate_signing_request_status_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_certificate_signing_request_update(new, old)
    now, before = _condition_types(new), _condition_types(old)
    for kind in ("Approved", "Denied"):
        if now.count(kind) > before.count(kind):
            errs.append(FieldError.forbidden(_CONDITIONS, f'updates may not add a condition of type "{kind}"'))
        elif now.count(kind) < before.count(kind):
            errs.append(FieldError.forbidden(_CONDITIONS, f'updates may not remove a condition of type "{kind}"'))
    certificate, old_certificate = obj(new.get("status")).get("certificate"), obj(old.get("status")).get("certificate")
    if certificate and certificate != old_certificate:
        if old_certificate:
            errs.append(FieldError.forbidden(_CERTIFICATE, "updates may not modify existing certificate content"))
        elif not _has_true(new, "Approved"):
            errs.append(FieldError.invalid(_CERTIFICATE, "<certificate data>",
                                           "certificate issuance requires an Approved condition"))
        elif _has_true(new, "Denied") or _has_true(new, "Failed"):
            errs.append(FieldError.invalid(_CERTIFICATE, "<certificate data>",
                                           "certificate issuance is not allowed on a denied or failed request"))
    return errs


def validate_certificate_signing_request_approval_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_certificate_signing_request_update(new, old)
    now, before = _condition_types(new), _condition_types(old)
    for kind in ("Approved", "Denied"):
        if now.count(kind) < before.count(kind):
            errs.append(FieldError.forbidden(_CONDITIONS, f'updates may not remove a condition of type "{kind}"'))
    return errs
