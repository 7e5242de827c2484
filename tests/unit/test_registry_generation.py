"""Which updates bump ``metadata.generation``, per kind, as each Kubernetes strategy counts it.

The shared mechanism (``Strategy.prepare_for_update`` with ``has_generation``) bumps it when
:meth:`Strategy.spec_changed` says so: ``spec`` for most kinds, ``webhooks`` for webhook
configurations, anything but metadata (and the labels) for EndpointSlices.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from apiserver.registry.groups import builtin_resources
from apiserver.registry.resource import Resource

Obj = dict[str, Any]
HOOK: Obj = {"name": "a.b.example.com", "sideEffects": "None", "admissionReviewVersions": ["v1"],
             "clientConfig": {"url": "https://hooks.example.com/check"}}
SLICE: Obj = {"addressType": "IPv4", "endpoints": [{"addresses": ["10.0.0.1"]}], "ports": [{"port": 80}]}
DEPLOYMENT_SPEC: Obj = {"replicas": 1, "selector": {"matchLabels": {"app": "w"}},
                        "template": {"metadata": {"labels": {"app": "w"}},
                                     "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}


def resource(group: str, plural: str) -> Resource:
    return next(r for r in builtin_resources()
                if r.info.group == group and r.info.plural == plural and r.storage_of is None)


def updated_generation(res: Resource, body: Obj, change: Obj) -> int:
    strategy = res.strategy
    assert strategy is not None
    old = copy.deepcopy(body)
    old.setdefault("metadata", {}).update(name="x", generation=3)
    strategy.default(old)
    new = copy.deepcopy(old)
    for key, value in change.items():
        if key == "metadata":
            new["metadata"].update(value)
        else:
            new[key] = value
    strategy.prepare_for_update(new, old)
    return int(new["metadata"]["generation"])


@pytest.mark.parametrize("group, plural, body, change, generation", [
    pytest.param("admissionregistration.k8s.io", "mutatingwebhookconfigurations", {"webhooks": [HOOK]},
                 {"webhooks": [HOOK, {**HOOK, "name": "c.d.example.com"}]}, 4, id="mutating-webhooks"),
    pytest.param("admissionregistration.k8s.io", "validatingwebhookconfigurations", {"webhooks": [HOOK]},
                 {"webhooks": [{**HOOK, "timeoutSeconds": 5}]}, 4, id="validating-webhooks"),
    pytest.param("admissionregistration.k8s.io", "validatingwebhookconfigurations", {"webhooks": [HOOK]},
                 {"metadata": {"labels": {"a": "b"}}}, 3, id="validating-labels-only"),
    pytest.param("discovery.k8s.io", "endpointslices", SLICE,
                 {"endpoints": [{"addresses": ["10.0.0.2"]}]}, 4, id="slice-endpoints"),
    pytest.param("discovery.k8s.io", "endpointslices", SLICE,
                 {"metadata": {"labels": {"kubernetes.io/service-name": "web"}}}, 4, id="slice-labels"),
    pytest.param("discovery.k8s.io", "endpointslices", SLICE,
                 {"metadata": {"annotations": {"a": "b"}}}, 3, id="slice-annotations-only"),
    pytest.param("apps", "deployments", {"spec": DEPLOYMENT_SPEC},
                 {"spec": {**DEPLOYMENT_SPEC, "replicas": 2}}, 4, id="deployment-spec"),
    pytest.param("apps", "deployments", {"spec": DEPLOYMENT_SPEC},
                 {"metadata": {"labels": {"a": "b"}}}, 3, id="deployment-labels-only"),
])
def test_generation_counts_what_the_kind_calls_its_spec(group: str, plural: str, body: Obj, change: Obj,
                                                        generation: int) -> None:
    assert updated_generation(resource(group, plural), body, change) == generation
