"""autoscaling/v2 HorizontalPodAutoscalers (stored), and autoscaling/v1, the same objects converted.

The v2 strategy defaults (``minReplicas: 1``, the 80% CPU metric, a complete
behavior once any is given) and validates as Kubernetes does; a spec change
bumps the generation and ``/status`` writes only the status.

autoscaling/v1 has fields for one metric only (a CPU utilization target).
:class:`V1Converter` follows Kubernetes' conversion (``pkg/apis/autoscaling/v1/conversion.go``):

- to v1: ``targetCPUUtilizationPercentage`` is the first CPU metric with an
  average utilization; every other metric is kept, in autoscaling/v1's own
  ``MetricSpec`` shape, in the ``autoscaling.alpha.kubernetes.io/metrics``
  annotation; *all* current metrics go to ``.../current-metrics``, the
  conditions to ``.../conditions`` and the behavior to ``.../behavior``
  (JSON of Kubernetes' internal Go type, hence its capitalized keys);
- from v1: those annotations are read back and removed, and the CPU metric of
  ``targetCPUUtilizationPercentage`` goes after the metrics of the annotation.

Writes through autoscaling/v2 drop those round-trip annotations too, as
Kubernetes' v2 conversion does.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar, Final

import orjson

from apiserver import printers
from apiserver.printers import Column, Printer, Row, since
from apiserver.registry.generic import StatusREST
from apiserver.registry.resource import Resource
from apiserver.registry.strategy import StatusStrategy, Strategy
from apiserver.validation import autoscaling as validation
from apiserver.validation.field import FieldError
from machinery.api import kinds

Obj = dict[str, Any]

#: Where autoscaling/v1 keeps what it has no field for.
METRICS_ANNOTATION: Final = "autoscaling.alpha.kubernetes.io/metrics"
CURRENT_METRICS_ANNOTATION: Final = "autoscaling.alpha.kubernetes.io/current-metrics"
CONDITIONS_ANNOTATION: Final = "autoscaling.alpha.kubernetes.io/conditions"
BEHAVIOR_ANNOTATION: Final = "autoscaling.alpha.kubernetes.io/behavior"
ROUND_TRIP_ANNOTATIONS: Final = (METRICS_ANNOTATION, CURRENT_METRICS_ANNOTATION, CONDITIONS_ANNOTATION,
                                 BEHAVIOR_ANNOTATION)


def _drop_round_trip_annotations(obj: Obj) -> None:
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return
    annotations = meta.get("annotations")
    if isinstance(annotations, dict) and any(k in annotations for k in ROUND_TRIP_ANNOTATIONS):
        for key in ROUND_TRIP_ANNOTATIONS:
            annotations.pop(key, None)
        if not annotations:
            del meta["annotations"]


class HorizontalPodAutoscalerStrategy(Strategy):
    has_generation = True
    status_zeros: ClassVar[Mapping[str, object]] = {"desiredReplicas": 0}

    def default(self, obj: Obj) -> None:
        _drop_round_trip_annotations(obj)
        validation.default_horizontal_pod_autoscaler(obj)

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        self.default(new)
        super().prepare_for_update(new, old)

    def validate(self, obj: Obj) -> list[FieldError]:
        return validation.validate_horizontal_pod_autoscaler(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_horizontal_pod_autoscaler_update(new, old)


class HorizontalPodAutoscalerStatusStrategy(StatusStrategy):
    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_horizontal_pod_autoscaler_status_update(new, old)


_STRATEGY: Final = HorizontalPodAutoscalerStrategy()
_STATUS: Final = HorizontalPodAutoscalerStatusStrategy(_STRATEGY)
_V2 = "io.k8s.api.autoscaling.v2."

COLUMNS: Final = (
    printers.NAME,
    Column("Reference", "string", (_V2 + "HorizontalPodAutoscalerSpec", "scaleTargetRef")),
    Column("Targets", "string", (_V2 + "HorizontalPodAutoscalerSpec", "metrics")),
    Column("MinPods", "string", (_V2 + "HorizontalPodAutoscalerSpec", "minReplicas")),
    Column("MaxPods", "integer", (_V2 + "HorizontalPodAutoscalerSpec", "maxReplicas")),
    Column("Replicas", "integer", (_V2 + "HorizontalPodAutoscalerStatus", "currentReplicas")),
    printers.AGE,
)


def _quantity(value: Any) -> str:
    return str(value) if value is not None else "<unknown>"


def format_metrics(specs: list[Obj], statuses: list[Obj]) -> str:
    """``formatHPAMetrics``: ``cpu: 12%/80%, memory: <unknown>/100Mi`` (two shown, then ``+ N more...``)."""
    if not specs:
        return "<none>"
    shown: list[str] = []
    for i, spec in enumerate(specs):
        status = statuses[i] if i < len(statuses) else {}
        kind = spec.get("type")
        if kind in ("External", "Object"):
            field = kind.lower()
            target = (spec.get(field) or {}).get("target") or {}
            current = (status.get(field) or {}).get("current") or {} if status.get(field) else None
            if target.get("averageValue") is not None:
                now = _quantity(current.get("averageValue")) if current is not None else "<unknown>"
                shown.append(f"{now}/{target['averageValue']} (avg)")
            else:
                now = _quantity(current.get("value")) if current is not None else "<unknown>"
                shown.append(f"{now}/{_quantity(target.get('value'))}")
        elif kind == "Pods":
            target = (spec.get("pods") or {}).get("target") or {}
            current = ((status.get("pods") or {}).get("current") or {}) if status.get("pods") else None
            now = _quantity(current.get("averageValue")) if current is not None else "<unknown>"
            shown.append(f"{now}/{_quantity(target.get('averageValue'))}")
        elif kind in ("Resource", "ContainerResource"):
            field = "resource" if kind == "Resource" else "containerResource"
            source = spec.get(field) or {}
            target = source.get("target") or {}
            current = ((status.get(field) or {}).get("current") or {}) if status.get(field) else None
            name = source.get("name", "")
            if target.get("averageValue") is not None:
                now = _quantity(current.get("averageValue")) if current is not None else "<unknown>"
                shown.append(f"{name}: {now}/{target['averageValue']}")
            else:
                utilization = current.get("averageUtilization") if current is not None else None
                now = f"{utilization}%" if utilization is not None else "<unknown>"
                goal = target.get("averageUtilization")
                shown.append(f"{name}: {now}/{goal}%" if goal is not None else f"{name}: {now}/<auto>")
        else:
            shown.append("<unknown type>")
    if len(shown) > 2:
        return f"{', '.join(shown[:2])} + {len(shown) - 2} more..."
    return ", ".join(shown)


def _row(hpa: Obj, now: datetime) -> Row:
    metadata: Obj = hpa.get("metadata") or {}
    spec: Obj = hpa.get("spec") or {}
    status: Obj = hpa.get("status") or {}
    ref: Obj = spec.get("scaleTargetRef") or {}
    low = spec.get("minReplicas")
    return Row([
        metadata.get("name", ""), f"{ref.get('kind', '')}/{ref.get('name', '')}",
        format_metrics(list(spec.get("metrics") or []), list(status.get("currentMetrics") or [])),
        str(low) if low is not None else "<unset>", spec.get("maxReplicas") or 0, status.get("currentReplicas") or 0,
        since(metadata.get("creationTimestamp"), now),
    ])


PRINTER: Final = Printer(COLUMNS, _row)

RESOURCE: Final = Resource(
    info=kinds.HORIZONTAL_POD_AUTOSCALERS,
    strategy=_STRATEGY,
    subresources={"status": StatusREST(_STATUS)},
    printer=PRINTER,
)


# --- autoscaling/v1: the same objects, converted --------------------------------------------------

def _is_cpu_utilization_target(metric: Obj) -> bool:
    resource = metric.get("resource") or {}
    return (metric.get("type") == "Resource" and resource.get("name") == "cpu"
            and (resource.get("target") or {}).get("averageUtilization") is not None)


@dataclass(frozen=True)
class _V1Field:
    """One field of an autoscaling/v1 metric source or status, and where autoscaling/v2 keeps it.

    ``zero`` is Go's zero value for the v1 fields that are values rather than pointers: Kubernetes
    writes them even when v2 has nothing there, and reads them back into v2 as that zero. A field
    without one (a pointer in v1) is written only when set, both ways.
    """

    v1: str
    v2: tuple[str, ...]
    zero: Any = None


def _field(v1: str, v2: str, zero: Any = None) -> _V1Field:
    return _V1Field(v1, tuple(v2.split(".")), zero)


_NAME: Final = _field("name", "name", "")
_CONTAINER: Final = _field("container", "container")
_METRIC_NAME: Final = _field("metricName", "metric.name", "")
_SELECTOR: Final = _field("selector", "metric.selector")
_DESCRIBED_OBJECT: Final = _field("target", "describedObject", {})

_RESOURCE_SPEC: Final = (_NAME, _field("targetAverageUtilization", "target.averageUtilization"),
                         _field("targetAverageValue", "target.averageValue"))
#: autoscaling/v1's MetricSpec (v2beta1's shape): each source's fields in Go's order, and where v2 has them.
_SPEC_FIELDS: Final = {
    "resource": _RESOURCE_SPEC,
    "containerResource": (*_RESOURCE_SPEC, _CONTAINER),
    "pods": (_METRIC_NAME, _field("targetAverageValue", "target.averageValue", "0"), _SELECTOR),
    "object": (_DESCRIBED_OBJECT, _METRIC_NAME, _field("targetValue", "target.value", "0"), _SELECTOR,
               _field("averageValue", "target.averageValue")),
    "external": (_METRIC_NAME, _field("metricSelector", "metric.selector"), _field("targetValue", "target.value"),
                 _field("targetAverageValue", "target.averageValue")),
}

_RESOURCE_STATUS: Final = (_NAME, _field("currentAverageUtilization", "current.averageUtilization"),
                           _field("currentAverageValue", "current.averageValue", "0"))
#: autoscaling/v1's MetricStatus, likewise.
_STATUS_FIELDS: Final = {
    "resource": _RESOURCE_STATUS,
    "containerResource": (*_RESOURCE_STATUS, _CONTAINER),
    "pods": (_METRIC_NAME, _field("currentAverageValue", "current.averageValue", "0"), _SELECTOR),
    "object": (_DESCRIBED_OBJECT, _METRIC_NAME, _field("currentValue", "current.value", "0"), _SELECTOR,
               _field("averageValue", "current.averageValue")),
    "external": (_METRIC_NAME, _field("metricSelector", "metric.selector"),
                 _field("currentValue", "current.value", "0"), _field("currentAverageValue", "current.averageValue")),
}


def _convert(metric: Obj, tables: dict[str, tuple[_V1Field, ...]], *, to_v1: bool) -> Obj:
    """A MetricSpec or MetricStatus in the other version: each source present, field by field."""
    out: Obj = {"type": metric.get("type")}
    for source_field, fields in tables.items():
        source = metric.get(source_field)
        if source is None:
            continue
        converted: Obj = {}
        for field in fields:
            value = _lookup_path(source, field.v2 if to_v1 else (field.v1,))
            if field.zero is not None:
                value = value or copy.deepcopy(field.zero)
            if value is None:
                continue
            if to_v1:
                converted[field.v1] = value
            else:
                _set_path(converted, field.v2, value)
        out[source_field] = converted
    return out


def _lookup_path(value: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def _set_path(out: Obj, path: tuple[str, ...], value: Any) -> None:
    for key in path[:-1]:
        out = out.setdefault(key, {})
    out[path[-1]] = value


def _target_type(source_field: str, target: Obj) -> str:
    """The v2 target type Kubernetes' v1 conversion infers from which v1 fields are set."""
    if source_field in ("resource", "containerResource"):
        return "AverageValue" if target.get("averageUtilization") is None else "Utilization"
    if source_field == "object":
        return "Value" if target.get("averageValue") is None else "AverageValue"
    if source_field == "external":
        return "AverageValue" if target.get("value") is None else "Value"
    return "AverageValue"


def metric_spec_to_v1(metric: Obj) -> Obj:
    """A v2 ``MetricSpec`` in autoscaling/v1's (v2beta1-shaped) ``MetricSpec``, as the annotation keeps it."""
    return _convert(metric, _SPEC_FIELDS, to_v1=True)


def metric_spec_from_v1(metric: Obj) -> Obj:
    out = _convert(metric, _SPEC_FIELDS, to_v1=False)
    for source_field in _SPEC_FIELDS:
        if source_field in out:
            target = out[source_field].get("target") or {}
            out[source_field]["target"] = {"type": _target_type(source_field, target), **target}
    return out


def metric_status_to_v1(metric: Obj) -> Obj:
    return _convert(metric, _STATUS_FIELDS, to_v1=True)


def metric_status_from_v1(metric: Obj) -> Obj:
    return _convert(metric, _STATUS_FIELDS, to_v1=False)


# Kubernetes marshals its internal behavior type, which has no JSON tags: Go's field names are the keys.
_GO_NAMES: Final = {"scaleUp": "ScaleUp", "scaleDown": "ScaleDown",
                    "stabilizationWindowSeconds": "StabilizationWindowSeconds", "selectPolicy": "SelectPolicy",
                    "policies": "Policies", "type": "Type", "value": "Value", "periodSeconds": "PeriodSeconds"}
_RULE_FIELDS: Final = ("stabilizationWindowSeconds", "selectPolicy", "policies")
_POLICY_FIELDS: Final = ("type", "value", "periodSeconds")


def behavior_to_annotation(behavior: Obj) -> Obj:
    def rules(value: Any) -> Any:
        if not isinstance(value, dict):
            return None
        out = {_GO_NAMES[k]: value.get(k) for k in _RULE_FIELDS}
        policies = value.get("policies")
        out["Policies"] = None if policies is None else [
            {_GO_NAMES[k]: (p or {}).get(k, "" if k == "type" else 0) for k in _POLICY_FIELDS} for p in policies]
        return out
    return {"ScaleUp": rules(behavior.get("scaleUp")), "ScaleDown": rules(behavior.get("scaleDown"))}


def _lookup(value: Obj, name: str) -> Any:
    """A field as Go's decoder finds it: its name matched without regard to case."""
    for key, item in value.items():
        if key.lower() == name.lower():
            return item
    return None


def behavior_from_annotation(value: Any) -> Obj | None:
    if not isinstance(value, dict):
        return None

    def rules(raw: Any) -> Any:
        if not isinstance(raw, dict):
            return None
        out: Obj = {}
        for key in _RULE_FIELDS:
            item = _lookup(raw, key)
            if key == "policies" and isinstance(item, list):
                item = [{k: _lookup(p, k) for k in _POLICY_FIELDS} for p in item if isinstance(p, dict)]
            if item is not None:
                out[key] = item
        return out

    behavior = {k: rules(_lookup(value, k)) for k in ("scaleUp", "scaleDown")}
    behavior = {k: v for k, v in behavior.items() if v is not None}
    return behavior or None


def _annotation(annotations: Obj, key: str) -> Any:
    """A round-trip annotation's JSON; ``None`` when missing or not JSON (Kubernetes ignores it then)."""
    text = annotations.pop(key, None)
    if not text:
        return None
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return None


class V1Converter:
    """autoscaling/v1 <-> autoscaling/v2 HorizontalPodAutoscalers."""

    def to_storage(self, obj: Obj) -> Obj:
        meta = copy.deepcopy(obj.get("metadata") or {})
        annotations = dict(meta.get("annotations") or {})
        spec = dict(obj.get("spec") or {})
        status = dict(obj.get("status") or {})
        other_metrics = _annotation(annotations, METRICS_ANNOTATION)
        current_metrics = _annotation(annotations, CURRENT_METRICS_ANNOTATION)
        conditions = _annotation(annotations, CONDITIONS_ANNOTATION)
        behavior = behavior_from_annotation(_annotation(annotations, BEHAVIOR_ANNOTATION))
        target = spec.pop("targetCPUUtilizationPercentage", None)
        metrics = [metric_spec_from_v1(m) for m in other_metrics or () if isinstance(m, dict)]
        if target is not None:
            metrics.append(validation.cpu_utilization_metric(target))
        if metrics:
            spec["metrics"] = metrics
        if behavior is not None:
            spec["behavior"] = behavior
        utilization = status.pop("currentCPUUtilizationPercentage", None)
        current = [metric_status_from_v1(m) for m in current_metrics or () if isinstance(m, dict)]
        if utilization is not None:
            current.append({"type": "Resource", "resource": {"name": "cpu",
                                                             "current": {"averageUtilization": utilization}}})
        if current:
            status["currentMetrics"] = current
        if isinstance(conditions, list):
            status["conditions"] = conditions
        if annotations:
            meta["annotations"] = annotations
        else:
            meta.pop("annotations", None)
        out: Obj = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": meta,
                    "spec": spec}
        if status or "status" in obj:
            out["status"] = status
        return out

    def from_storage(self, obj: Obj) -> Obj:
        meta = copy.deepcopy(obj.get("metadata") or {})
        annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k not in ROUND_TRIP_ANNOTATIONS}
        spec = dict(obj.get("spec") or {})
        status = dict(obj.get("status") or {})
        metrics = spec.pop("metrics", None) or []
        cpu = next((m for m in metrics if _is_cpu_utilization_target(m)), None)
        if cpu is not None:
            spec["targetCPUUtilizationPercentage"] = cpu["resource"]["target"]["averageUtilization"]
        others = [metric_spec_to_v1(m) for m in metrics if not _is_cpu_utilization_target(m)]
        if others:
            annotations[METRICS_ANNOTATION] = orjson.dumps(others).decode()
        behavior = spec.pop("behavior", None)
        if behavior is not None:
            annotations[BEHAVIOR_ANNOTATION] = orjson.dumps(behavior_to_annotation(behavior)).decode()
        current = status.pop("currentMetrics", None) or []
        for m in current:
            resource = m.get("resource") or {}
            utilization = (resource.get("current") or {}).get("averageUtilization")
            if m.get("type") == "Resource" and resource.get("name") == "cpu" and utilization is not None:
                status["currentCPUUtilizationPercentage"] = utilization
        if current:
            # Every current metric is kept, the CPU one too (with its raw value).
            annotations[CURRENT_METRICS_ANNOTATION] = orjson.dumps([metric_status_to_v1(m) for m in current]).decode()
        conditions = status.pop("conditions", None)
        if conditions:
            annotations[CONDITIONS_ANNOTATION] = orjson.dumps(conditions).decode()
        if annotations:
            meta["annotations"] = annotations
        else:
            meta.pop("annotations", None)
        status.setdefault("currentReplicas", 0)
        status.setdefault("desiredReplicas", 0)
        return {"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": meta,
                "spec": spec, "status": status}


RESOURCE_V1: Final = Resource(
    info=kinds.builtin("autoscaling", "v1", "horizontalpodautoscalers"),
    strategy=_STRATEGY,
    subresources={"status": StatusREST(_STATUS)},
    printer=PRINTER,
    storage_of=kinds.HORIZONTAL_POD_AUTOSCALERS,
    converter=V1Converter(),
)
