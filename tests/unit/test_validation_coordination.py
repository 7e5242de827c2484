"""Leases are refused with Kubernetes' paths and words."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from apiserver.validation import validate_lease, validate_lease_update

SUBDOMAIN = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
             "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
             "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")


def lease(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": "kube-scheduler", "namespace": "kube-system", "uid": "u1",
                         "resourceVersion": "4"},
            "spec": {"holderIdentity": "scheduler-1", "leaseDurationSeconds": 15, "leaseTransitions": 0,
                     "renewTime": "2024-05-01T10:00:00.000000Z", **spec}}


@pytest.mark.parametrize(("obj", "expected"), [
    pytest.param(lease(), [], id="valid"),
    pytest.param(lease(holderIdentity="h" * 1000), [], id="holder-identity-unbounded"),
    pytest.param(lease(leaseDurationSeconds=0),
                 ["spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0"], id="duration-positive"),
    pytest.param(lease(leaseTransitions=-1),
                 ["spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0"],
                 id="transitions-non-negative"),
    pytest.param(lease(strategy="Newest"),
                 ['spec.strategy.strategy: Unsupported value: "Newest": supported values: "OldestEmulationVersion"'],
                 id="strategy-kubernetes-defined"),
    pytest.param(lease(strategy="example.com/newest"), [], id="strategy-qualified"),
    pytest.param(lease(preferredHolder="scheduler-2"),
                 ["spec.preferredHolder: Forbidden: may only be specified if `strategy` is defined"],
                 id="preferred-holder-needs-strategy"),
    pytest.param({**lease(), "metadata": {"name": "Kube_Scheduler", "namespace": "kube-system",
                                          "finalizers": ["cleanup"]}},
                 [f'metadata.name: Invalid value: "Kube_Scheduler": {SUBDOMAIN}'],
                 id="name-and-no-core-finalizer-rule"),
])
def test_validate_lease(obj: dict[str, Any], expected: list[str]) -> None:
    assert [str(e) for e in validate_lease(obj)] == expected


def test_validate_lease_update() -> None:
    old = lease()
    renewed = copy.deepcopy(old)
    renewed["spec"].update(holderIdentity="scheduler-2", leaseTransitions=1)
    assert validate_lease_update(renewed, old) == []
    broken = copy.deepcopy(renewed)
    broken["metadata"]["uid"] = "u9"
    broken["spec"]["leaseDurationSeconds"] = -1
    assert [str(e) for e in validate_lease_update(broken, old)] == [
        'metadata.uid: Invalid value: "u9": field is immutable',
        "spec.leaseDurationSeconds: Invalid value: -1: must be greater than 0"]
