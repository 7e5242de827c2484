"""NodeSelector terms, as Pods' node affinity and PersistentVolumes' node affinity write them.

Pure functions; no state.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from apiserver.validation.common import (
    list_of,
)
from apiserver.validation.field import FieldError, Path
from apiserver.validation.meta import (
    name_is_dns1123_subdomain,
    validate_qualified_name,
)
from machinery.api import names

Obj = Mapping[str, Any]


def validate_node_selector_requirement(req: Obj, path: Path, *,
                                        allow_invalid_values: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    operator = req.get("operator") or ""
    values = list_of(req.get("values"))
    if operator in ("In", "NotIn"):
        if not values:
            errs.append(FieldError.required(path.child("values"),
                                            "must be specified when `operator` is 'In' or 'NotIn'"))
    elif operator in ("Exists", "DoesNotExist"):
        if values:
            errs.append(FieldError.forbidden(
                path.child("values"), "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
    elif operator in ("Gt", "Lt"):
        if len(values) != 1:
            errs.append(FieldError.required(path.child("values"),
                                            "must be specified single value when `operator` is 'Lt' or 'Gt'"))
    else:
        errs.append(FieldError.invalid(path.child("operator"), operator, "not a valid selector operator"))
    errs += validate_qualified_name(req.get("key") or "", path.child("key"))
    if not allow_invalid_values:
        for i, value in enumerate(values):
            errs += [FieldError.invalid(path.child("values").index(i), value, msg)
                     for msg in names.is_valid_label_value(value)]
    return errs


def validate_node_field_requirement(req: Obj, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    operator = req.get("operator") or ""
    values = list_of(req.get("values"))
    if operator in ("In", "NotIn"):
        if len(values) != 1:
            errs.append(FieldError.required(
                path.child("values"),
                "must be only one value when `operator` is 'In' or 'NotIn' for node field selector"))
    else:
        errs.append(FieldError.invalid(path.child("operator"), operator, "not a valid selector operator"))
    key = req.get("key") or ""
    if key != "metadata.name":
        errs.append(FieldError.invalid(path.child("key"), key, "not a valid field selector key"))
    else:
        for i, value in enumerate(values):
            errs += [FieldError.invalid(path.child("values").index(i), value, msg)
                     for msg in name_is_dns1123_subdomain(value, False)]
    return errs


def validate_node_selector_term(term: Obj, path: Path, *, allow_invalid_values: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    for j, req in enumerate(list_of(term.get("matchExpressions"))):
        errs += validate_node_selector_requirement(req, path.child("matchExpressions").index(j),
                                                    allow_invalid_values=allow_invalid_values)
    for j, req in enumerate(list_of(term.get("matchFields"))):
        errs += validate_node_field_requirement(req, path.child("matchFields").index(j))
    return errs


