"""The Pod registry's pure parts: QoS class, the grace period of a delete, the ephemeral containers' strategy."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from apiserver.registry.core.ephemeralcontainers import EphemeralContainersStrategy
from apiserver.registry.core.pods import PodStrategy, qos_class
from apiserver.validation import defaults


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


# --- pods/ephemeralcontainers: only spec.ephemeralContainers changes --------------------------

def _stored_pod() -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web", "namespace": "default", "uid": "u1", "labels": {"app": "web"},
                     "annotations": {"a": "1"}, "finalizers": ["example.com/f"], "generation": 1},
        "spec": {"containers": [{"name": "main", "image": "nginx:1.25"}], "nodeName": "n1"},
        "status": {"phase": "Running", "podIP": "10.0.0.5"},
    }


@pytest.mark.parametrize(("change", "expected"), [
    pytest.param(lambda p: p["spec"].update(nodeName="other", activeDeadlineSeconds=5),
                 lambda p: None, id="spec-other-than-ephemeral-is-dropped"),
    pytest.param(lambda p: p.update(status={"phase": "Failed"}), lambda p: None, id="status-is-kept"),
    pytest.param(lambda p: p["metadata"].update(labels={"app": "x"}, annotations={}, finalizers=[],
                                                ownerReferences=[{"name": "o"}], generation=7),
                 lambda p: None, id="metadata-is-reset"),
    pytest.param(lambda p: p["spec"].update(ephemeralContainers=[{"name": "debugger", "image": "busybox"}]),
                 lambda p: p["spec"].update(ephemeralContainers=[{
                     "name": "debugger", "image": "busybox", "imagePullPolicy": "Always",
                     "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"}]),
                 id="ephemeral-containers-are-taken-and-defaulted"),
])
def test_ephemeral_containers_strategy(change: Any, expected: Any) -> None:
    strategy = EphemeralContainersStrategy(PodStrategy())
    old = _stored_pod()
    new = _stored_pod()
    change(new)
    strategy.prepare_for_update(new, old)
    strategy.default(new)
    want = _stored_pod()
    expected(want)
    assert new == want


def test_ephemeral_containers_strategy_validates_the_update() -> None:
    strategy = EphemeralContainersStrategy(PodStrategy())
    old = _stored_pod()
    old["spec"]["ephemeralContainers"] = [{"name": "debugger", "image": "busybox", "imagePullPolicy": "Always",
                                           "terminationMessagePath": "/dev/termination-log",
                                           "terminationMessagePolicy": "File"}]
    defaults.default_pod(old)
    new = copy.deepcopy(old)
    new["spec"]["ephemeralContainers"] = []
    strategy.prepare_for_update(new, old)
    assert [str(e) for e in strategy.validate_update(new, old)] == [
        'spec.ephemeralContainers: Forbidden: existing ephemeral containers "debugger" may not be removed\n']
