"""Resource names and quantities, as core/v1 validation judges them.

Which names are standard (for containers, quotas, limit ranges), which are
extended, which must be integers, and ``ValidateResourceQuantityValue``: the
rules container resources, Node capacity, ResourceQuotas, LimitRanges and
PersistentVolumes share.

Pure functions; no state.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any, Final

from apiserver.validation.field import FieldError, Path
from apiserver.validation.meta import (
    IS_NEGATIVE,
    validate_qualified_name,
)
from machinery.api import names
from machinery.api.quantity import QuantityValue, format_quantity, milli_value, parse_quantity
from machinery.api.quantity import value as whole_value

Obj = Mapping[str, Any]


_STANDARD_CONTAINER_RESOURCES: Final = frozenset({"cpu", "memory", "ephemeral-storage"})
_STANDARD_RESOURCES: Final = frozenset({
    "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory", "requests.ephemeral-storage",
    "limits.cpu", "limits.memory", "limits.ephemeral-storage", "pods", "resourcequotas", "services",
    "replicationcontrollers", "secrets", "configmaps", "persistentvolumeclaims", "storage",
    "requests.storage", "services.nodeports", "services.loadbalancers",
})
_INTEGER_RESOURCES: Final = frozenset({
    "pods", "resourcequotas", "services", "replicationcontrollers", "secrets", "configmaps",
    "persistentvolumeclaims", "services.nodeports", "services.loadbalancers",
})



# --- resources -------------------------------------------------------------------------------

#: What a ResourceQuota may limit by a bare name (``IsStandardQuotaResourceName``); other names are qualified.
_STANDARD_QUOTA_RESOURCES: Final = frozenset({
    "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory", "requests.storage",
    "requests.ephemeral-storage", "limits.cpu", "limits.memory", "limits.ephemeral-storage", "pods", "services",
    "replicationcontrollers", "resourcequotas", "secrets", "persistentvolumeclaims", "configmaps",
    "services.nodeports", "services.loadbalancers",
})
#: The kinds of LimitRange items Kubernetes defines.
_STANDARD_LIMIT_TYPES: Final = ("Pod", "Container", "PersistentVolumeClaim")


def is_native_resource(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


def is_huge_pages(name: str) -> bool:
    return name.startswith("hugepages-")


def is_extended_resource(name: str) -> bool:
    if is_native_resource(name) or name.startswith("requests."):
        return False
    return not names.is_qualified_name("requests." + name)


def is_overcommit_allowed(name: str) -> bool:
    return is_native_resource(name) and not is_huge_pages(name)


def is_integer_resource(name: str) -> bool:
    return name in _INTEGER_RESOURCES or is_extended_resource(name)


def validate_resource_name(name: str, path: Path) -> list[FieldError]:
    errs = validate_qualified_name(name, path)
    if errs:
        return errs
    standard = name in _STANDARD_RESOURCES or name.startswith(("hugepages-", "requests.hugepages-"))
    if "/" not in name and not standard:
        return [FieldError.invalid(path, name, "must be a standard resource type or fully qualified")]
    return []


def validate_container_resource_name(name: str, path: Path) -> list[FieldError]:
    errs = validate_resource_name(name, path)
    if "/" not in name:
        if name not in _STANDARD_CONTAINER_RESOURCES and not is_huge_pages(name):
            errs.append(FieldError.invalid(path, name, "must be a standard resource for containers"))
    elif not is_native_resource(name) and not is_extended_resource(name):
        errs.append(FieldError.invalid(path, name, "doesn't follow extended resource name standard"))
    return errs


def canonical_quantity(resource: str, raw: QuantityValue) -> str:
    """A quantity as Kubernetes prints it back in messages (``2000m`` reads ``2``)."""
    return format_quantity(milli_value(raw), resource)


def validate_quantity(resource: str, raw: QuantityValue, path: Path,
                       errs: list[FieldError]) -> Decimal | None:
    """``ValidateResourceQuantityValue``; returns the parsed quantity, or None when it does not parse.

    Kubernetes refuses an unparsable quantity while decoding, with this same
    message; kubesim decodes into plain dicts, so it reports it here.
    """
    try:
        quantity = parse_quantity(raw)
    except ValueError as e:
        errs.append(FieldError.invalid(path, raw, str(e)))
        return None
    if quantity < 0:
        errs.append(FieldError.invalid(path, canonical_quantity(resource, raw), IS_NEGATIVE))
    if is_integer_resource(resource) and milli_value(raw) % 1000 != 0:
        errs.append(FieldError.invalid(path, canonical_quantity(resource, raw), "must be an integer"))
    return quantity


def validate_container_resource(resource: str, raw: QuantityValue, path: Path,
                                 errs: list[FieldError]) -> Decimal | None:
    """One entry of a container's limits or requests: its name, its quantity, and whole huge pages."""
    errs += validate_container_resource_name(resource, path)
    quantity = validate_quantity(resource, raw, path, errs)
    if quantity is not None and is_huge_pages(resource):
        size = resource.removeprefix("hugepages-")
        try:
            page = milli_value(size)
            whole_pages = page > 0 and page % 1000 == 0 and whole_value(raw) % whole_value(size) == 0
        except ValueError:
            whole_pages = False
        if not whole_pages:
            shown = canonical_quantity(resource, raw)
            errs.append(FieldError.invalid(path, shown,
                                           f"{shown} is not positive integer multiple of {resource}"))
    return quantity


def is_standard_quota_resource(name: str) -> bool:
    return name in _STANDARD_QUOTA_RESOURCES or name.startswith("requests.hugepages-")


def validate_quota_resource_name(name: str, path: Path) -> list[FieldError]:
    """``ValidateResourceQuotaResourceName``: a resource a quota may count or limit."""
    errs = validate_resource_name(name, path)
    if "/" not in name and not is_standard_quota_resource(name):
        errs.append(FieldError.invalid(path, name, "must be a standard resource for quota"))
    return errs


def validate_limit_type(value: str, path: Path) -> list[FieldError]:
    """``validateLimitRangeTypeName``: Pod, Container, PersistentVolumeClaim, or a qualified name."""
    errs = validate_qualified_name(value, path)
    if errs:
        return errs
    if "/" not in value and value not in _STANDARD_LIMIT_TYPES:
        return [FieldError.invalid(path, value, "must be a standard limit type or fully qualified")]
    return []


def validate_limit_range_resource_name(limit_type: str, name: str, path: Path) -> list[FieldError]:
    """Pod and Container limits name container resources; other limit types any resource (storage)."""
    if limit_type in ("Pod", "Container"):
        return validate_container_resource_name(name, path)
    return validate_resource_name(name, path)
