"""The status fields Go always writes (no ``omitempty``): set on create, and kept by every ``/status`` write.

The official clients decode, say, a ReplicaSet's ``status.replicas`` as required; Kubernetes
always has it because Go serializes the zero. Each kind below starts with exactly those
fields, and a ``/status`` write that leaves one out gets its zero back.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from apiserver.registry.groups import builtin_resources
from apiserver.registry.resource import Resource

Obj = dict[str, Any]


def resource(group: str, plural: str) -> Resource:
    return next(r for r in builtin_resources()
                if r.info.group == group and r.info.plural == plural and r.storage_of is None)


ZEROS = [
    pytest.param("apps", "replicasets", {"replicas": 0}, id="replicaset"),
    pytest.param("", "replicationcontrollers", {"replicas": 0}, id="replicationcontroller"),
    pytest.param("apps", "statefulsets", {"replicas": 0, "availableReplicas": 0}, id="statefulset"),
    pytest.param("apps", "daemonsets", {"currentNumberScheduled": 0, "numberMisscheduled": 0,
                                        "desiredNumberScheduled": 0, "numberReady": 0}, id="daemonset"),
    pytest.param("policy", "poddisruptionbudgets", {"disruptionsAllowed": 0, "currentHealthy": 0,
                                                    "desiredHealthy": 0, "expectedPods": 0}, id="pdb"),
    pytest.param("autoscaling", "horizontalpodautoscalers", {"desiredReplicas": 0}, id="hpa"),
    pytest.param("storage.k8s.io", "volumeattachments", {"attached": False}, id="volumeattachment"),
    pytest.param("batch", "jobs", {}, id="job"),
    pytest.param("batch", "cronjobs", {}, id="cronjob"),
]


@pytest.mark.parametrize("group, plural, zeros", ZEROS)
def test_a_created_object_has_exactly_the_status_go_writes(group: str, plural: str, zeros: Obj) -> None:
    strategy = resource(group, plural).strategy
    assert strategy is not None
    obj: Obj = {"metadata": {"name": "x", "namespace": "default"}, "spec": {},
                "status": {"replicas": 7, "sneaked": "in"}}
    strategy.prepare_for_create(obj)
    assert obj["status"] == zeros


@pytest.mark.parametrize("group, plural, zeros", ZEROS)
def test_a_status_write_keeps_those_fields_at_their_zero(group: str, plural: str, zeros: Obj) -> None:
    status = resource(group, plural).subresources["status"].strategy  # type: ignore[attr-defined]
    old: Obj = {"metadata": {"name": "x", "namespace": "default"}, "spec": {"a": 1}, "status": dict(zeros)}
    new: Obj = {"metadata": {"name": "x", "namespace": "default"}, "spec": {"a": 2}, "status": {"other": 1}}
    status.prepare_for_update(new, old)
    assert new["spec"] == {"a": 1}
    assert new["status"] == {"other": 1, **zeros}
    untouched = copy.deepcopy(new)
    status.prepare_for_update(new, old)
    assert new == untouched
