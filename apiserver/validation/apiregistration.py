"""The apiregistration.k8s.io/v1 rules: defaulting and validation of APIServices.

As kube-aggregator's ``pkg/apis/apiregistration/validation``: the name is
``<version>.<group>``, priorities are bounded, a local APIService (no
service) has no CA bundle and no insecureSkipTLSVerify, a remote one names its
Service (port 443 by default) and does not both skip and pin TLS.

Pure functions over plain dicts; no state.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apiserver.validation import values
from apiserver.validation.field import FieldError, Path
from apiserver.validation.meta import name_is_path_segment, validate_object_meta, validate_object_meta_update
from apiserver.validation.values import obj
from machinery.api import names

Obj = Mapping[str, Any]


def default_api_service(api_service: dict[str, Any]) -> None:
    service = obj(api_service.get("spec")).get("service")
    if isinstance(service, dict) and service.get("port") is None:
        service["port"] = 443


def validate_api_service(api_service: Obj) -> list[FieldError]:
    spec = obj(api_service.get("spec"))
    group, version = str(spec.get("group") or ""), str(spec.get("version") or "")
    required = f"{version}.{group}"

    def name_rule(name: str, prefix: bool) -> list[str]:
        return name_is_path_segment(name, prefix) or (
            [] if name == required else [f'must be `spec.version+"."+spec.group`: "{required}"'])

    errs = validate_object_meta(obj(api_service.get("metadata")), namespaced=False, name_rule=name_rule)
    path = Path("spec")
    if not group and version != "v1":
        errs.append(FieldError.required(path.child("group"), "only v1 may have an empty group and it better be "
                                                             "legacy kube"))
    if group:
        errs += [FieldError.invalid(path.child("group"), group, msg) for msg in names.is_dns1123_subdomain(group)]
    errs += [FieldError.invalid(path.child("version"), version, msg) for msg in values.dns1035_label_errors(version)]
    group_priority, version_priority = int(spec.get("groupPriorityMinimum") or 0), int(spec.get("versionPriority") or 0)
    if not 0 < group_priority <= 20000:
        errs.append(FieldError.invalid(path.child("groupPriorityMinimum"), group_priority,
                                       "must be positive and less than 20000"))
    if not 0 < version_priority <= 1000:
        errs.append(FieldError.invalid(path.child("versionPriority"), version_priority,
                                       "must be positive and less than 1000"))
    service = spec.get("service")
    ca_bundle, insecure = spec.get("caBundle") or "", bool(spec.get("insecureSkipTLSVerify"))
    if service is None:
        if ca_bundle:
            errs.append(FieldError.invalid(path.child("caBundle"), f"{len(ca_bundle) * 3 // 4} bytes",
                                           "local APIServices may not have a caBundle"))
        if insecure:
            errs.append(FieldError.invalid(path.child("insecureSkipTLSVerify"), insecure,
                                           "local APIServices may not have insecureSkipTLSVerify"))
        return errs
    service = obj(service)
    for key in ("namespace", "name"):
        if not service.get(key):
            errs.append(FieldError.required(path.child("service", key)))
    port = int(service.get("port") or 0)
    problems = values.port_number_errors(port)
    if problems:
        errs.append(FieldError.invalid(path.child("service", "port"), port, "port is not valid: " + ", ".join(problems)))
    if insecure and ca_bundle:
        errs.append(FieldError.invalid(path.child("insecureSkipTLSVerify"), insecure,
                                       "may not be true if caBundle is present"))
    return errs


def validate_api_service_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_object_meta_update(obj(new.get("metadata")), obj(old.get("metadata")))
    return errs + validate_api_service(new)


def validate_api_service_status_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_object_meta_update(obj(new.get("metadata")), obj(old.get("metadata")))
    for i, condition in enumerate(values.items(obj(new.get("status")).get("conditions"))):
        status = obj(condition).get("status") or ""
        if status not in ("True", "False", "Unknown"):
            errs.append(FieldError.not_supported(Path("status", "conditions").index(i).child("status"), status,
                                                 ("True", "False", "Unknown")))
    return errs
