"""The HPA's replica arithmetic: usage ratios, tolerance, missing Pods, policies and stabilization."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from kubernetes.client import V1Pod, V2HorizontalPodAutoscaler

from controller_manager.controllers.horizontalpodautoscaler import HorizontalController, MetricsError
from machinery.api.kinds import HORIZONTAL_POD_AUTOSCALERS
from machinery.api.labels import Selector
from machinery.client.objects import decode
from tests.unit.test_cm_fakes import Api, FakeInformers, context, status

NOW = dt.datetime(2024, 5, 1, 12, 0, tzinfo=dt.UTC)
UTILIZATION_50 = {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}


def controller() -> HorizontalController:
    return HorizontalController(context(Api(), FakeInformers()))


def pod(name: str, cpu: str = "100m", ready: bool = True) -> V1Pod:
    return decode(V1Pod, {"metadata": {"name": name, "namespace": "ns"},
                          "spec": {"containers": [{"name": "c", "image": "i",
                                                   "resources": {"requests": {"cpu": cpu}}}]},
                          "status": {"phase": "Running",
                                     "conditions": [{"type": "Ready", "status": str(ready)}]}})


@pytest.mark.parametrize(("usage", "current", "expected"), [
    pytest.param({"a": 100, "b": 100}, 2, 4, id="double-the-target"),
    pytest.param({"a": 52, "b": 54}, 2, 2, id="within-tolerance"),
    pytest.param({"a": 10, "b": 10}, 2, 1, id="scale-down"),
    # One Pod without metrics counts as using nothing on the way up: 150% over 2 Pods of 3 is 100% of 3.
    pytest.param({"a": 150, "b": 150}, 3, 6, id="missing-pod-damps-scale-up"),
])
def test_resource_proposal(usage: dict[str, int], current: int, expected: int) -> None:
    pods = [pod("a"), pod("b"), pod("c")] if current == 3 else [pod("a"), pod("b")]
    proposal, observed = controller()._resource_proposal(UTILIZATION_50, "cpu", pods, usage, current)
    assert proposal == expected
    assert observed["averageUtilization"] == int(100 * sum(usage.values()) / (100 * len(usage)))


def hpa(**spec: Any) -> V2HorizontalPodAutoscaler:
    return decode(V2HorizontalPodAutoscaler, {
        "metadata": {"name": "web", "namespace": "ns"},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                 "minReplicas": 1, "maxReplicas": 10, **spec}})


def test_scale_up_is_limited_by_the_default_policies_and_max_replicas() -> None:
    c = controller()
    # From 2: 100% (to 4) or 4 Pods (to 6), the larger; then maxReplicas.
    assert c._normalize(hpa(), 2, 20, NOW) == (6, "ScaleUpLimit")
    assert controller()._normalize(hpa(maxReplicas=5), 2, 8, NOW) == (5, "TooManyReplicas")
    assert controller()._normalize(hpa(maxReplicas=3), 2, 3, NOW) == (3, "")


def test_scale_down_waits_for_the_stabilization_window() -> None:
    c = controller()
    assert c._normalize(hpa(), 6, 6, NOW) == (6, "")
    # A lower recommendation within the 300 s window is held at the highest one seen.
    assert c._normalize(hpa(), 6, 2, NOW + dt.timedelta(seconds=60)) == (6, "")
    assert c._normalize(hpa(), 6, 2, NOW + dt.timedelta(seconds=400)) == (2, "")
    assert c._normalize(hpa(minReplicas=3), 6, 2, NOW + dt.timedelta(seconds=800)) == (3, "TooFewReplicas")


def test_the_hpa_informer_is_the_v2_resource() -> None:
    assert HORIZONTAL_POD_AUTOSCALERS.version == "v2"


async def test_without_the_metrics_api_the_hpa_says_what_kubernetes_says() -> None:
    # The e2e cluster always runs metrics-server: the answer of an APIServer without it is checked here.
    api = Api()
    api.rules.append(lambda request: status(404, "NotFound", "the server could not find the requested resource")
                     if request.url.path.startswith("/apis/metrics.k8s.io/") else None)
    hpa = HorizontalController(context(api, FakeInformers()))
    with pytest.raises(MetricsError) as raised:
        await hpa._usage("ns", Selector.parse("app=web"), "cpu")
    assert raised.value.reason == "FailedGetResourceMetric"
    assert str(raised.value) == (
        "failed to get cpu utilization: unable to get metrics for resource cpu: unable to fetch metrics from resource "
        "metrics API: the server could not find the requested resource (get pods.metrics.k8s.io)")
