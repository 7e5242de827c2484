"""autoscaling/v1 <-> autoscaling/v2 HorizontalPodAutoscalers, as Kubernetes' v1 conversion does it.

v1 has a field for one CPU utilization target; every other metric travels in
annotations, in autoscaling/v1's own (v2beta1-shaped) MetricSpec and
MetricStatus. Each source type is checked both ways, spec and status, with
Go's zero values where a v1 field is a value rather than a pointer.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from apiserver.registry.autoscaling import horizontalpodautoscalers as hpas

Obj = dict[str, Any]

V2 = {
    "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "web"},
    "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "minReplicas": 1,
             "maxReplicas": 5,
             "metrics": [
                 {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue",
                                                                                "averageValue": "100Mi"}}},
                 {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization",
                                                                             "averageUtilization": 60}}}],
             "behavior": {"scaleDown": {"stabilizationWindowSeconds": 300, "selectPolicy": "Max",
                                        "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]}}},
    "status": {"currentReplicas": 2, "desiredReplicas": 2, "currentMetrics": [
        {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 30, "averageValue": "30m"}}}],
        "conditions": [{"type": "AbleToScale", "status": "True", "reason": "ReadyForNewScale"}]},
}


def test_v2_to_v1_keeps_what_v1_has_no_field_for_in_annotations() -> None:
    v1 = hpas.V1Converter().from_storage(V2)
    assert v1["spec"]["targetCPUUtilizationPercentage"] == 60
    assert v1["status"]["currentCPUUtilizationPercentage"] == 30
    annotations = v1["metadata"]["annotations"]
    # autoscaling/v1's own MetricSpec shape, not v2's.
    assert orjson.loads(annotations[hpas.METRICS_ANNOTATION]) == [
        {"type": "Resource", "resource": {"name": "memory", "targetAverageValue": "100Mi"}}]
    # Every current metric, the CPU one too.
    assert orjson.loads(annotations[hpas.CURRENT_METRICS_ANNOTATION]) == [
        {"type": "Resource", "resource": {"name": "cpu", "currentAverageValue": "30m",
                                          "currentAverageUtilization": 30}}]
    # Kubernetes' internal Go type, hence Go's field names.
    assert orjson.loads(annotations[hpas.BEHAVIOR_ANNOTATION]) == {
        "ScaleUp": None, "ScaleDown": {"StabilizationWindowSeconds": 300, "SelectPolicy": "Max",
                                       "Policies": [{"Type": "Percent", "Value": 100, "PeriodSeconds": 15}]}}
    assert orjson.loads(annotations[hpas.CONDITIONS_ANNOTATION]) == V2["status"]["conditions"]


def test_v1_round_trip_appends_the_cpu_metric_after_the_annotated_ones() -> None:
    converter = hpas.V1Converter()
    back = converter.to_storage(converter.from_storage(V2))
    assert back["spec"]["metrics"] == V2["spec"]["metrics"]
    assert back["spec"]["behavior"] == V2["spec"]["behavior"]
    assert back["status"]["conditions"] == V2["status"]["conditions"]
    assert "annotations" not in back["metadata"]


def test_a_v1_object_alone_is_a_cpu_metric() -> None:
    v1 = {"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "web"},
          "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 3,
                   "targetCPUUtilizationPercentage": 70}}
    assert hpas.V1Converter().to_storage(v1)["spec"]["metrics"] == [
        {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization",
                                                                    "averageUtilization": 70}}}]


def test_round_trip_annotations_written_through_v2_are_dropped() -> None:
    strategy = hpas.RESOURCE.strategy
    assert strategy is not None
    obj = {"metadata": {"name": "web", "annotations": {hpas.METRICS_ANNOTATION: "[]", "keep": "me"}},
           "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 3}}
    strategy.default(obj)
    assert obj["metadata"]["annotations"] == {"keep": "me"}


# --- each metric source, both ways ------------------------------------------------------------------

INGRESS: Obj = {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "name": "main"}
SELECTOR: Obj = {"matchLabels": {"queue": "jobs"}}


@pytest.mark.parametrize("v2, v1", [
    pytest.param({"type": "Resource", "resource": {"name": "cpu", "target": {"type": "AverageValue",
                                                                         "averageValue": "500m"}}},
                 {"type": "Resource", "resource": {"name": "cpu", "targetAverageValue": "500m"}}, id="resource"),
    pytest.param({"type": "ContainerResource", "containerResource": {
        "name": "memory", "container": "app", "target": {"type": "Utilization", "averageUtilization": 70}}},
                 {"type": "ContainerResource", "containerResource": {"name": "memory", "container": "app",
                                                                     "targetAverageUtilization": 70}},
                 id="container-resource"),
    pytest.param({"type": "Pods", "pods": {"metric": {"name": "qps", "selector": SELECTOR},
                                           "target": {"type": "AverageValue", "averageValue": "10"}}},
                 {"type": "Pods", "pods": {"metricName": "qps", "targetAverageValue": "10", "selector": SELECTOR}},
                 id="pods"),
    pytest.param({"type": "Object", "object": {"describedObject": INGRESS, "metric": {"name": "rps"},
                                               "target": {"type": "Value", "value": "2k"}}},
                 {"type": "Object", "object": {"target": INGRESS, "metricName": "rps", "targetValue": "2k"}},
                 id="object-value"),
    pytest.param({"type": "External", "external": {"metric": {"name": "queue", "selector": SELECTOR},
                                                   "target": {"type": "Value", "value": "100"}}},
                 {"type": "External", "external": {"metricName": "queue", "metricSelector": SELECTOR,
                                                   "targetValue": "100"}}, id="external-value"),
    pytest.param({"type": "External", "external": {"metric": {"name": "queue"},
                                                   "target": {"type": "AverageValue", "averageValue": "5"}}},
                 {"type": "External", "external": {"metricName": "queue", "targetAverageValue": "5"}},
                 id="external-average"),
])
def test_a_metric_spec_goes_to_v1_and_back(v2: Obj, v1: Obj) -> None:
    assert hpas.metric_spec_to_v1(v2) == v1
    assert hpas.metric_spec_from_v1(v1) == v2


def test_an_object_metric_with_an_average_gets_gos_zero_value_back() -> None:
    # v1's ObjectMetricSource.targetValue is a value, not a pointer: it is always written, as 0.
    v2 = {"type": "Object", "object": {"describedObject": INGRESS, "metric": {"name": "rps"},
                                       "target": {"type": "AverageValue", "averageValue": "30"}}}
    v1 = hpas.metric_spec_to_v1(v2)
    assert v1 == {"type": "Object", "object": {"target": INGRESS, "metricName": "rps", "targetValue": "0",
                                               "averageValue": "30"}}
    assert hpas.metric_spec_from_v1(v1)["object"]["target"] == {"type": "AverageValue", "value": "0",
                                                                "averageValue": "30"}


@pytest.mark.parametrize("v2, v1", [
    pytest.param({"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 40,
                                                                          "averageValue": "200m"}}},
                 {"type": "Resource", "resource": {"name": "cpu", "currentAverageUtilization": 40,
                                                   "currentAverageValue": "200m"}}, id="resource"),
    pytest.param({"type": "ContainerResource", "containerResource": {"name": "memory", "container": "app",
                                                                     "current": {"averageValue": "90Mi"}}},
                 {"type": "ContainerResource", "containerResource": {"name": "memory", "container": "app",
                                                                     "currentAverageValue": "90Mi"}},
                 id="container-resource"),
    pytest.param({"type": "Pods", "pods": {"metric": {"name": "qps"}, "current": {"averageValue": "8"}}},
                 {"type": "Pods", "pods": {"metricName": "qps", "currentAverageValue": "8"}}, id="pods"),
    pytest.param({"type": "Object", "object": {"describedObject": INGRESS,
                                               "metric": {"name": "rps", "selector": SELECTOR},
                                               "current": {"value": "1500", "averageValue": "750"}}},
                 {"type": "Object", "object": {"target": INGRESS, "metricName": "rps", "currentValue": "1500",
                                               "selector": SELECTOR, "averageValue": "750"}}, id="object"),
    pytest.param({"type": "External", "external": {"metric": {"name": "queue", "selector": SELECTOR},
                                                   "current": {"value": "80", "averageValue": "4"}}},
                 {"type": "External", "external": {"metricName": "queue", "metricSelector": SELECTOR,
                                                   "currentValue": "80", "currentAverageValue": "4"}}, id="external"),
])
def test_a_metric_status_goes_to_v1_and_back(v2: Obj, v1: Obj) -> None:
    assert hpas.metric_status_to_v1(v2) == v1
    assert hpas.metric_status_from_v1(v1) == v2


@pytest.mark.parametrize("v2, v1", [
    pytest.param({"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue"}}},
                 {"type": "Pods", "pods": {"metricName": "qps", "targetAverageValue": "0"}}, id="pods-spec"),
    pytest.param({"type": "Object", "object": {"metric": {"name": "rps"}, "target": {"type": "Value"}}},
                 {"type": "Object", "object": {"target": {}, "metricName": "rps", "targetValue": "0"}},
                 id="object-spec"),
])
def test_v1_value_fields_are_written_with_gos_zero(v2: Obj, v1: Obj) -> None:
    assert hpas.metric_spec_to_v1(v2) == v1


@pytest.mark.parametrize("v1, target", [
    pytest.param({"type": "Pods", "pods": {"metricName": "qps"}}, {"type": "AverageValue", "averageValue": "0"},
                 id="pods"),
    pytest.param({"type": "Object", "object": {"metricName": "rps"}}, {"type": "Value", "value": "0"}, id="object"),
    pytest.param({"type": "Resource", "resource": {"name": "cpu"}}, {"type": "AverageValue"}, id="resource"),
    pytest.param({"type": "External", "external": {"metricName": "q"}}, {"type": "AverageValue"}, id="external"),
])
def test_an_annotated_spec_missing_a_value_field_reads_as_gos_zero(v1: Obj, target: Obj) -> None:
    # Kubernetes converts v1's value fields (pods' targetAverageValue, objects' targetValue) to pointers to
    # them, so a missing one is 0, never null; v1's pointer fields stay unset.
    field = next(k for k in v1 if k != "type")
    assert hpas.metric_spec_from_v1(v1)[field]["target"] == target


@pytest.mark.parametrize("v1, current", [
    pytest.param({"type": "Pods", "pods": {"metricName": "qps"}}, {"averageValue": "0"}, id="pods"),
    pytest.param({"type": "Object", "object": {"metricName": "rps"}}, {"value": "0"}, id="object"),
    pytest.param({"type": "Resource", "resource": {"name": "cpu"}}, {"averageValue": "0"}, id="resource"),
    pytest.param({"type": "External", "external": {"metricName": "q"}}, {"value": "0"}, id="external"),
])
def test_an_annotated_status_missing_a_value_field_reads_as_gos_zero(v1: Obj, current: Obj) -> None:
    field = next(k for k in v1 if k != "type")
    assert hpas.metric_status_from_v1(v1)[field]["current"] == current


def test_an_annotated_source_that_is_not_an_object_is_invalid_not_a_crash() -> None:
    v1 = {"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
          "metadata": {"name": "web", "namespace": "default",
                       "annotations": {hpas.METRICS_ANNOTATION: '[{"type": "Pods", "pods": "qps"}]'}},
          "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 3}}
    stored = hpas.V1Converter().to_storage(v1)
    strategy = hpas.RESOURCE.strategy
    assert strategy is not None
    strategy.default(stored)
    assert [e.field for e in strategy.validate(stored)] == ["spec.metrics[0].pods.metric.name",
                                                          "spec.metrics[0].pods.target.averageValue"]
