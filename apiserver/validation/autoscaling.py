"""The autoscaling kinds' rules: defaulting and validation of HorizontalPodAutoscalers (autoscaling/v2).

As ``pkg/apis/autoscaling/v2/defaults.go`` and ``pkg/apis/autoscaling/validation``
of Kubernetes 1.32 (HPAScaleToZero off, so ``minReplicas`` is at least 1).
autoscaling/v1 objects are converted to the v2 form before they get here
(``registry/autoscaling/horizontalpodautoscalers.py``), as Kubernetes validates
its internal form whatever the version written.

``default_*`` functions mutate what they are handed and are idempotent;
``validate_*`` functions return every problem found. Pure; no state.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Final

from apiserver.validation.field import FieldError, Path
from apiserver.validation.meta import (
    name_is_path_segment,
    validate_label_selector,
    validate_object_meta,
    validate_object_meta_update,
)
from apiserver.validation.values import items, nonnegative, obj
from machinery.api.quantity import parse_quantity

Obj = Mapping[str, Any]
Mut = dict[str, Any]

SPEC: Final = Path("spec")
STATUS: Final = Path("status")
DEFAULT_CPU_UTILIZATION: Final = 80
MAX_PERIOD_SECONDS: Final = 1800
MAX_STABILIZATION_WINDOW_SECONDS: Final = 3600
_METRIC_SOURCE_TYPES: Final = ("ContainerResource", "External", "Object", "Pods", "Resource")
#: The metric source type and the field holding its details.
_SOURCE_FIELDS: Final = {"Object": "object", "Pods": "pods", "Resource": "resource", "External": "external",
                         "ContainerResource": "containerResource"}
_SELECT_POLICIES: Final = ("Disabled", "Max", "Min")
_POLICY_TYPES: Final = ("Percent", "Pods")

#: ``defaultHPAScaleUpRules``: at most 4 Pods or double, whichever is more, every 15 s, at once.
DEFAULT_SCALE_UP: Final = {
    "stabilizationWindowSeconds": 0, "selectPolicy": "Max",
    "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15},
                 {"type": "Percent", "value": 100, "periodSeconds": 15}],
}
#: ``defaultHPAScaleDownRules``: down to none every 15 s; the window is the controller's flag.
DEFAULT_SCALE_DOWN: Final = {"selectPolicy": "Max", "policies": [{"type": "Percent", "value": 100,
                                                                   "periodSeconds": 15}]}


# --- defaulting -------------------------------------------------------------------------------

def cpu_utilization_metric(percent: int) -> Mut:
    return {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization",
                                                                        "averageUtilization": percent}}}


def _scaling_rules(given: Any, default: Mut) -> Mut:
    """``copyHPAScalingRules``: the defaults, with what was given in their place."""
    rules = copy.deepcopy(default)
    for key in ("selectPolicy", "stabilizationWindowSeconds", "policies"):
        if obj(given).get(key) is not None:
            rules[key] = obj(given)[key]
    return rules


def default_horizontal_pod_autoscaler(hpa: Mut) -> None:
    """``SetDefaults_HorizontalPodAutoscaler``: minReplicas 1, 80% CPU, and a full behavior once one is given."""
    spec = hpa.get("spec")
    if not isinstance(spec, dict):
        spec = hpa["spec"] = {}
    if spec.get("minReplicas") is None:
        spec["minReplicas"] = 1
    if not spec.get("metrics"):
        spec["metrics"] = [cpu_utilization_metric(DEFAULT_CPU_UTILIZATION)]
    behavior = spec.get("behavior")
    if isinstance(behavior, dict):
        behavior["scaleUp"] = _scaling_rules(behavior.get("scaleUp"), DEFAULT_SCALE_UP)
        behavior["scaleDown"] = _scaling_rules(behavior.get("scaleDown"), DEFAULT_SCALE_DOWN)


# --- validation -------------------------------------------------------------------------------

def _validate_reference(ref: Obj, path: Path) -> list[FieldError]:
    """``ValidateCrossVersionObjectReference``: a kind and a name that can be URL path segments."""
    errs: list[FieldError] = []
    for key in ("kind", "name"):
        value = ref.get(key) or ""
        if not value:
            errs.append(FieldError.required(path.child(key)))
        else:
            errs += [FieldError.invalid(path.child(key), value, msg) for msg in name_is_path_segment(value, False)]
    return errs


def _sign(value: Any) -> int:
    try:
        number = parse_quantity(str(value))
    except (ValueError, TypeError):
        return 0
    return (number > 0) - (number < 0)


def _validate_target(target: Obj, path: Path) -> list[FieldError]:
    """``validateMetricTarget``."""
    errs: list[FieldError] = []
    kind = target.get("type") or ""
    if not kind:
        errs.append(FieldError.required(path.child("type"), "must specify a metric target type"))
    if kind not in ("Utilization", "Value", "AverageValue"):
        errs.append(FieldError.invalid(path.child("type"), kind, "must be either Utilization, Value, or AverageValue"))
    for key in ("value", "averageValue"):
        if target.get(key) is not None and _sign(target[key]) != 1:
            errs.append(FieldError.invalid(path.child(key), target[key], "must be positive"))
    utilization = target.get("averageUtilization")
    if utilization is not None and utilization < 1:
        errs.append(FieldError.invalid(path.child("averageUtilization"), utilization, "must be greater than 0"))
    return errs


def _validate_metric_identifier(metric: Obj, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    name = metric.get("name") or ""
    if not name:
        errs.append(FieldError.required(path.child("name"), "must specify a metric name"))
    else:
        errs += [FieldError.invalid(path.child("name"), name, msg) for msg in name_is_path_segment(name, False)]
    return errs + validate_label_selector(metric.get("selector"), path.child("selector"))


def _validate_resource_source(source: Obj, path: Path, *, container: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    if not source.get("name"):
        errs.append(FieldError.required(path.child("name"), "must specify a resource name"))
    if container and not source.get("container"):
        errs.append(FieldError.required(path.child("container"), "must specify a container"))
    target = obj(source.get("target"))
    errs += _validate_target(target, path.child("target"))
    if target.get("averageUtilization") is None and target.get("averageValue") is None:
        errs.append(FieldError.required(path.child("target", "averageUtilization"),
                                        "must set either a target raw value or a target utilization"))
    if target.get("averageUtilization") is not None and target.get("averageValue") is not None:
        errs.append(FieldError.forbidden(path.child("target", "averageValue"),
                                         "may not set both a target raw value and a target utilization"))
    return errs


def _validate_source(kind: str, source: Obj, path: Path) -> list[FieldError]:
    if kind in ("resource", "containerResource"):
        return _validate_resource_source(source, path, container=kind == "containerResource")
    errs = _validate_metric_identifier(obj(source.get("metric")), path.child("metric"))
    target = obj(source.get("target"))
    errs += _validate_target(target, path.child("target"))
    if kind == "pods":
        if target.get("averageValue") is None:
            errs.append(FieldError.required(path.child("target", "averageValue"),
                                            "must specify a positive target averageValue"))
    else:
        if kind == "object":
            errs += _validate_reference(obj(source.get("describedObject")), path.child("describedObject"))
        if target.get("value") is None and target.get("averageValue") is None:
            errs.append(FieldError.required(path.child("target", "value"),
                                            "must set either a target value or averageValue"))
    return errs


def _validate_metric(metric: Obj, path: Path) -> list[FieldError]:
    """``validateMetricSpec``: a known type, and exactly the source of that type."""
    errs: list[FieldError] = []
    kind = metric.get("type") or ""
    if not kind:
        errs.append(FieldError.required(path.child("type"), "must specify a metric source type"))
    if kind not in _METRIC_SOURCE_TYPES:
        errs.append(FieldError.not_supported(path.child("type"), kind, _METRIC_SOURCE_TYPES))
    present = [field for field in _SOURCE_FIELDS.values() if metric.get(field) is not None]
    if present:
        errs += _validate_source(present[0], obj(metric[present[0]]), path.child(present[0]))
    expected = _SOURCE_FIELDS.get(kind)
    if expected is not None and metric.get(expected) is None:
        errs.append(FieldError.required(path.child(expected), "must populate information for the given metric "
                                                              "source"))
    if expected is None and kind in _METRIC_SOURCE_TYPES:
        errs.append(FieldError.not_supported(path.child("type"), kind, _METRIC_SOURCE_TYPES))
    if len(present) != 1:
        errs += [FieldError.forbidden(path.child(field), "must populate the given metric source only")
                 for field in present if field != expected]
    return errs


def _validate_scaling_rules(rules: Any, path: Path) -> list[FieldError]:
    if rules is None:
        return []
    rules = obj(rules)
    errs: list[FieldError] = []
    window = rules.get("stabilizationWindowSeconds")
    if window is not None and window < 0:
        errs.append(FieldError.invalid(path.child("stabilizationWindowSeconds"), window,
                                       "must be greater than or equal to zero"))
    if window is not None and window > MAX_STABILIZATION_WINDOW_SECONDS:
        errs.append(FieldError.invalid(path.child("stabilizationWindowSeconds"), window,
                                       f"must be less than or equal to {MAX_STABILIZATION_WINDOW_SECONDS}"))
    select = rules.get("selectPolicy")
    if select is not None and select not in _SELECT_POLICIES:
        errs.append(FieldError.not_supported(path.child("selectPolicy"), select, _SELECT_POLICIES))
    policies = items(rules.get("policies"))
    if not policies:
        errs.append(FieldError.required(path.child("policies"), "must specify at least one Policy"))
    for i, policy in enumerate(policies):
        policy, policy_path = obj(policy), path.child("policies").index(i)
        if policy.get("type") not in _POLICY_TYPES:
            errs.append(FieldError.not_supported(policy_path.child("type"), policy.get("type") or "", _POLICY_TYPES))
        for key in ("value", "periodSeconds"):
            if int(policy.get(key) or 0) <= 0:
                errs.append(FieldError.invalid(policy_path.child(key), int(policy.get(key) or 0),
                                               "must be greater than zero"))
        period = int(policy.get("periodSeconds") or 0)
        if period > MAX_PERIOD_SECONDS:
            errs.append(FieldError.invalid(policy_path.child("periodSeconds"), period,
                                           f"must be less than or equal to {MAX_PERIOD_SECONDS}"))
    return errs


def _validate_spec(spec: Obj, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    low, high = spec.get("minReplicas"), int(spec.get("maxReplicas") or 0)
    if low is not None and low < 1:
        errs.append(FieldError.invalid(path.child("minReplicas"), low, "must be greater than or equal to 1"))
    if high < 1:
        errs.append(FieldError.invalid(path.child("maxReplicas"), high, "must be greater than 0"))
    if low is not None and high < low:
        errs.append(FieldError.invalid(path.child("maxReplicas"), high, "must be greater than or equal to "
                                                                        "`minReplicas`"))
    ref_errs = _validate_reference(obj(spec.get("scaleTargetRef")), path.child("scaleTargetRef"))
    if ref_errs:
        errs += ref_errs
    else:
        for i, metric in enumerate(items(spec.get("metrics"))):
            errs += _validate_metric(obj(metric), path.child("metrics").index(i))
    behavior = spec.get("behavior")
    if behavior is not None:
        errs += _validate_scaling_rules(obj(behavior).get("scaleUp"), path.child("behavior", "scaleUp"))
        errs += _validate_scaling_rules(obj(behavior).get("scaleDown"), path.child("behavior", "scaleDown"))
    return errs


def validate_horizontal_pod_autoscaler(hpa: Obj) -> list[FieldError]:
    errs = validate_object_meta(obj(hpa.get("metadata")), namespaced=True)
    return errs + _validate_spec(obj(hpa.get("spec")), SPEC)


def validate_horizontal_pod_autoscaler_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_object_meta_update(obj(new.get("metadata")), obj(old.get("metadata")))
    return errs + _validate_spec(obj(new.get("spec")), SPEC)


def validate_horizontal_pod_autoscaler_status_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_object_meta_update(obj(new.get("metadata")), obj(old.get("metadata")))
    status = obj(new.get("status"))
    for key in ("currentReplicas", "desiredReplicas"):
        errs += nonnegative(status.get(key), STATUS.child(key))
    return errs
