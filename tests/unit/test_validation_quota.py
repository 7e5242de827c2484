"""ResourceQuotas and LimitRanges: resource names, amounts, scopes and bounds, worded as Kubernetes 1.32 words them."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from apiserver.validation import core as validation
from apiserver.validation import defaults

STORED = {"uid": "u1", "resourceVersion": "3", "creationTimestamp": "2024-05-01T10:00:00Z"}


def errors_of(errs: list[Any]) -> list[str]:
    return [str(e) for e in errs]


def quota(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q", "namespace": "default", **STORED},
            "spec": spec}


QUOTA_CASES = [
    pytest.param({"hard": {"pods": "10", "requests.cpu": "4", "limits.memory": "8Gi", "count/deployments.apps": "2",
                           "requests.nvidia.com/gpu": "1", "services.nodeports": "0"}}, [], id="valid"),
    pytest.param({"hard": {"pods": "1.5"}}, ['spec.hard[pods]: Invalid value: "1500m": must be an integer'],
                 id="counts-are-integers"),
    pytest.param({"hard": {"cpu": "-1"}}, ['spec.hard[cpu]: Invalid value: "-1": must be greater than or equal to 0'],
                 id="negative"),
    pytest.param({"hard": {"widgets": "1"}},
                 ['spec.hard[widgets]: Invalid value: "widgets": must be a standard resource type or fully qualified',
                  'spec.hard[widgets]: Invalid value: "widgets": must be a standard resource for quota'],
                 id="unknown-resource"),
    pytest.param({"hard": {"storage": "1Gi"}},
                 ['spec.hard[storage]: Invalid value: "storage": must be a standard resource for quota'],
                 id="storage-is-not-for-quota"),
    pytest.param({"hard": {"pods": "2"}, "scopes": ["BestEffort"]}, [], id="best-effort-pods"),
    pytest.param({"hard": {"cpu": "2"}, "scopes": ["BestEffort"]},
                 ['spec.scopes: Invalid value: ["BestEffort"]: unsupported scope applied to resource'],
                 id="best-effort-cannot-limit-cpu"),
    pytest.param({"hard": {"pods": "2"}, "scopes": ["Terminating", "NotTerminating"]},
                 ['spec.scopes: Invalid value: ["Terminating","NotTerminating"]: conflicting scopes'],
                 id="conflicting"),
    pytest.param({"hard": {"pods": "2"}, "scopes": ["Sometimes"]},
                 ['spec.scopes: Invalid value: ["Sometimes"]: unsupported scope'], id="unknown-scope"),
    pytest.param({"hard": {"pods": "2"}, "scopeSelector": {"matchExpressions": [
        {"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}]}}, [], id="priority-class-selector"),
    pytest.param({"hard": {"pods": "2"}, "scopeSelector": {"matchExpressions": [
        {"scopeName": "PriorityClass", "operator": "In"}]}},
                 [("spec.scopeSelector.matchExpressions.values: Required value: must be at least one value when "
                  "`operator` is 'In' or 'NotIn' for scope selector")], id="selector-needs-values"),
    pytest.param({"hard": {"pods": "2"}, "scopeSelector": {"matchExpressions": [
        {"scopeName": "Terminating", "operator": "In", "values": ["x"]}]}},
                 [('spec.scopeSelector.matchExpressions.operator: Invalid value: "In": must be \'Exists\' when scope is '
                  "any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, "
                  "ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity")],
                 id="exists-only-scope"),
]


@pytest.mark.parametrize(("spec", "expected"), QUOTA_CASES)
def test_validate_resource_quota(spec: dict[str, Any], expected: list[str]) -> None:
    assert errors_of(validation.validate_resource_quota(quota(**spec))) == expected


def test_quota_scopes_are_fixed_at_creation() -> None:
    old = quota(hard={"pods": "2"}, scopes=["BestEffort"])
    assert validation.validate_resource_quota_update(quota(hard={"pods": "3"}, scopes=["BestEffort"]), old) == []
    assert errors_of(validation.validate_resource_quota_update(quota(hard={"pods": "3"}), old)) == [
        "spec.scopes: Invalid value: null: field is immutable"]


def test_quota_status_is_checked_like_the_spec() -> None:
    old = quota(hard={"pods": "2"})
    new = copy.deepcopy(old)
    new["status"] = {"hard": {"pods": "2"}, "used": {"pods": "-1"}}
    assert errors_of(validation.validate_resource_quota_status_update(new, old)) == [
        'status.used[pods]: Invalid value: "-1": must be greater than or equal to 0']


# --- LimitRange ----------------------------------------------------------------------------------

def limit_range(*items: dict[str, Any]) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "LimitRange",
                           "metadata": {"name": "lr", "namespace": "default", **STORED}, "spec": {"limits": list(items)}}
    defaults.default_limit_range(obj)
    return obj


def test_container_limits_default_from_max_and_min() -> None:
    obj = limit_range({"type": "Container", "max": {"cpu": "2"}, "min": {"memory": "64Mi"}})
    item = obj["spec"]["limits"][0]
    assert item["default"] == {"cpu": "2"}
    assert item["defaultRequest"] == {"cpu": "2", "memory": "64Mi"}
    # Only Container items are defaulted; an empty map is never written.
    pod_item = limit_range({"type": "Pod", "max": {"cpu": "2"}})["spec"]["limits"][0]
    assert "default" not in pod_item and "defaultRequest" not in pod_item


LIMIT_CASES = [
    pytest.param({"type": "Container", "max": {"cpu": "2"}, "min": {"cpu": "100m"}}, [], id="valid"),
    pytest.param({"type": "Container", "max": {"cpu": "1"}, "min": {"cpu": "2"}},
                 ['spec.limits[0].min[cpu]: Invalid value: "2": min value 2 is greater than max value 1',
                  ('spec.limits[0].defaultRequest[cpu]: Invalid value: "1": min value 2 is greater than default '
                  "request value 1"),
                  'spec.limits[0].default[cpu]: Invalid value: "2": min value 2 is greater than default value 1'],
                 id="min-above-max"),
    pytest.param({"type": "Pod", "default": {"cpu": "1"}},
                 ["spec.limits[0].default: Forbidden: may not be specified when `type` is 'Pod'"],
                 id="pod-has-no-defaults"),
    pytest.param({"type": "PersistentVolumeClaim", "max": {"cpu": "1"}},
                 [("spec.limits[0].limits: Required value: either minimum or maximum storage value is required, but "
                  "neither was provided")], id="claim-needs-storage"),
    pytest.param({"type": "Node", "max": {"cpu": "1"}},
                 ['spec.limits[0].type: Invalid value: "Node": must be a standard limit type or fully qualified'],
                 id="unknown-type"),
    pytest.param({"type": "Container", "max": {"storage": "1Gi"}},
                 ['spec.limits[0].max[storage]: Invalid value: "storage": must be a standard resource for containers',
                  ('spec.limits[0].default[storage]: Invalid value: "storage": must be a standard resource for '
                  "containers"),
                  ('spec.limits[0].defaultRequest[storage]: Invalid value: "storage": must be a standard resource for '
                  "containers")], id="container-resource-names"),
    pytest.param({"type": "Container", "maxLimitRequestRatio": {"cpu": "500m"}},
                 ['spec.limits[0].maxLimitRequestRatio[cpu]: Invalid value: "500m": ratio 500m is less than 1'],
                 id="ratio-below-one"),
    pytest.param({"type": "Container", "min": {"cpu": "1"}, "max": {"cpu": "2"}, "maxLimitRequestRatio": {"cpu": "3"}},
                 [('spec.limits[0].maxLimitRequestRatio[cpu]: Invalid value: "3": ratio 3 is greater than '
                  "max/min = 2.000000")], id="ratio-above-max-over-min"),
]


@pytest.mark.parametrize(("item", "expected"), LIMIT_CASES)
def test_validate_limit_range(item: dict[str, Any], expected: list[str]) -> None:
    assert errors_of(validation.validate_limit_range(limit_range(item))) == expected


def test_one_limit_item_per_type() -> None:
    obj = limit_range({"type": "Pod", "max": {"cpu": "4"}}, {"type": "Pod", "max": {"cpu": "2"}})
    assert errors_of(validation.validate_limit_range(obj)) == ['spec.limits[1].type: Duplicate value: "Pod"']
