"""The Pod registry's pure parts: QoS class and the grace period of a delete."""

from __future__ import annotations

from typing import Any

import pytest

from apiserver.registry.pods import PodStrategy, qos_class


def container(requests: dict[str, str] | None = None, limits: dict[str, str] | None = None) -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if requests:
        resources["requests"] = requests
    if limits:
        resources["limits"] = limits
    return {"name": "c", "image": "x", "resources": resources}


@pytest.mark.parametrize("containers,expected", [
    ([container()], "BestEffort"),
    ([container({"cpu": "100m"})], "Burstable"),
    ([container({"cpu": "1", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"})], "Guaranteed"),
    ([container({"cpu": "1000m", "memory": "1024Mi"}, {"cpu": "1", "memory": "1Gi"})], "Guaranteed"),
    ([container({"cpu": "500m", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"})], "Burstable"),
    ([container(None, {"cpu": "1"})], "Burstable"),
    ([container({"cpu": "1", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"}), container()], "Burstable"),
], ids=["none", "requests-only", "equal", "equal-in-other-units", "request-below-limit", "no-memory-limit",
        "one-container-without"])
def test_qos_class(containers: list[dict[str, Any]], expected: str) -> None:
    assert qos_class({"containers": containers}) == expected


@pytest.mark.parametrize("spec,status,requested,expected", [
    ({}, {}, None, 0),
    ({"nodeName": "n1"}, {}, None, 30),
    ({"nodeName": "n1", "terminationGracePeriodSeconds": 5}, {}, None, 5),
    ({"nodeName": "n1"}, {}, 0, 0),
    ({"nodeName": "n1"}, {}, -3, 1),
    ({"nodeName": "n1"}, {"phase": "Succeeded"}, None, 0),
], ids=["unbound", "bound-default", "bound-spec", "grace-zero", "negative-is-one", "finished"])
def test_grace_period(spec: dict[str, Any], status: dict[str, Any], requested: int | None, expected: int) -> None:
    assert PodStrategy().grace_period({"spec": spec, "status": status}, requested) == expected
