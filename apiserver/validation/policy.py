"""The policy/v1 kinds' rules: validation of PodDisruptionBudgets.

As ``pkg/apis/policy/validation`` of Kubernetes 1.32: at most one of
``minAvailable`` and ``maxUnavailable``, each a non-negative integer or a
percentage up to 100%, a valid selector, a known unhealthy-Pod eviction
policy; the status counts are never negative. policy/v1 defaults nothing.

Pure functions over plain dicts; no state.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from apiserver.validation import values
from apiserver.validation.field import FieldError, Path
from apiserver.validation.meta import (
    validate_label_selector,
    validate_object_meta,
    validate_object_meta_update,
)
from apiserver.validation.values import nonnegative, obj

Obj = Mapping[str, Any]

SPEC: Final = Path("spec")
STATUS: Final = Path("status")
_UNHEALTHY_POD_EVICTION_POLICIES: Final = ("AlwaysAllow", "IfHealthyBudget")


def _validate_spec(spec: Obj, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    low, high = spec.get("minAvailable"), spec.get("maxUnavailable")
    if low is not None and high is not None:
        errs.append(FieldError.invalid(path, dict(spec), "minAvailable and maxUnavailable cannot be both set"))
    for key, value in (("minAvailable", low), ("maxUnavailable", high)):
        if value is not None:
            errs += values.validate_positive_int_or_percent(value, path.child(key))
            errs += values.validate_not_more_than_100_percent(value, path.child(key))
    errs += validate_label_selector(spec.get("selector"), path.child("selector"))
    errs += values.optional_enum(spec.get("unhealthyPodEvictionPolicy"), path.child("unhealthyPodEvictionPolicy"),
                                 _UNHEALTHY_POD_EVICTION_POLICIES)
    return errs


def validate_pod_disruption_budget(pdb: Obj) -> list[FieldError]:
    errs = validate_object_meta(obj(pdb.get("metadata")), namespaced=True)
    return errs + _validate_spec(obj(pdb.get("spec")), SPEC)


def validate_pod_disruption_budget_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_object_meta_update(obj(new.get("metadata")), obj(old.get("metadata")))
    return errs + _validate_spec(obj(new.get("spec")), SPEC)


def validate_pod_disruption_budget_status_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_object_meta_update(obj(new.get("metadata")), obj(old.get("metadata")))
    status = obj(new.get("status"))
    for key in ("disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods"):
        errs += nonnegative(status.get(key), STATUS.child(key))
    return errs
