"""The Deployment controller's arithmetic: fenceposts, new ReplicaSet sizes, proportions, hashes, conditions."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from kubernetes.client import V1Deployment, V1ReplicaSet

from controller_manager import deploymentutil as du
from machinery.client.objects import decode

NOW = dt.datetime(2024, 5, 1, 12, 0, tzinfo=dt.UTC)


def deployment(replicas: int = 10, surge: Any = None, unavailable: Any = None, *, kind: str = "RollingUpdate",
               **spec: Any) -> V1Deployment:
    strategy: dict[str, Any] = {"type": kind}
    if kind == "RollingUpdate" and (surge is not None or unavailable is not None):
        strategy["rollingUpdate"] = {k: v for k, v in (("maxSurge", surge), ("maxUnavailable", unavailable))
                                     if v is not None}
    return decode(V1Deployment, {"metadata": {"name": "web", "namespace": "ns", "generation": 1},
                                 "spec": {"replicas": replicas, "strategy": strategy,
                                          "selector": {"matchLabels": {"app": "web"}},
                                          "template": {"metadata": {"labels": {"app": "web"}},
                                                       "spec": {"containers": [{"name": "c", "image": "i"}]}},
                                          **spec}})


def rs(name: str, replicas: int, *, available: int = 0, age: int = 0, annotations: dict[str, str] | None = None,
       ) -> V1ReplicaSet:
    return decode(V1ReplicaSet, {
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}", "annotations": annotations or {},
                     "creationTimestamp": (NOW - dt.timedelta(seconds=age)).isoformat()},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}}},
        "status": {"replicas": replicas, "availableReplicas": available}})


@pytest.mark.parametrize(("surge", "unavailable", "replicas", "expected"), [
    pytest.param(None, None, 10, (3, 2), id="defaults-25%-round-up-and-down"),
    pytest.param("25%", "25%", 1, (1, 0), id="one-replica"),
    pytest.param(0, 0, 5, (0, 1), id="both-zero-means-one-unavailable"),
    pytest.param("10%", 2, 30, (3, 2), id="percent-and-absolute"),
    pytest.param("33%", "33%", 10, (4, 3), id="thirds"),
])
def test_fenceposts_round_as_kubernetes(surge: Any, unavailable: Any, replicas: int,
                                        expected: tuple[int, int]) -> None:
    d = deployment(replicas, surge, unavailable)
    assert (du.max_surge(d), du.max_unavailable(d)) == expected


def test_recreate_has_no_surge_and_no_unavailability_budget() -> None:
    d = deployment(4, kind="Recreate")
    assert (du.max_surge(d), du.max_unavailable(d)) == (0, 0)
    assert du.new_rs_replicas(d, [rs("old", 4)], None) == 4


def test_the_new_replica_set_grows_within_max_surge() -> None:
    d = deployment(10)
    old = rs("old", 10, available=10)
    assert du.new_rs_replicas(d, [old], None) == 3
    new = rs("new", 3)
    assert du.new_rs_replicas(d, [old, new], new) == 3, "the total is at 13 already"
    assert du.new_rs_replicas(d, [rs("old", 5), new], new) == 8


def test_proportional_scaling_shares_by_size() -> None:
    d = deployment(20)
    # Scaled from 10 to 20 mid-rollout: max-replicas was 13 (10 + surge 3); now 20 + surge 5 = 25.
    old, new = rs("old", 8, annotations={du.MAX_REPLICAS: "13"}), rs("new", 5, annotations={du.MAX_REPLICAS: "13"})
    to_add = 25 - 13
    first = du.replica_set_proportion(old, d, 13, to_add, 0)
    second = du.replica_set_proportion(new, d, 13, to_add, first)
    assert (first, second) == (7, 5)


def test_find_new_ignores_the_hash_label_and_empty_fields() -> None:
    d = deployment()
    same = decode(V1ReplicaSet, {"metadata": {"name": "web-abc", "creationTimestamp": NOW.isoformat()},
                                 "spec": {"selector": {}, "template": {
                                     "metadata": {"labels": {"app": "web", du.POD_TEMPLATE_HASH: "abc"}},
                                     "spec": {"containers": [{"name": "c", "image": "i", "resources": {}}]}}}})
    other = decode(V1ReplicaSet, {"metadata": {"name": "web-def", "creationTimestamp": NOW.isoformat()},
                                  "spec": {"selector": {}, "template": {
                                      "metadata": {"labels": {"app": "web"}},
                                      "spec": {"containers": [{"name": "c", "image": "j"}]}}}})
    assert du.find_new(d, [other, same]) is same


def test_the_pod_template_hash_has_kubernetes_form_and_changes_with_collisions() -> None:
    template = deployment().spec.template  # type: ignore[union-attr]
    first = du.compute_hash(template, None)
    assert 1 <= len(first) <= 10 and set(first) <= set("bcdfghjklmnpqrstvwxz2456789")
    assert du.compute_hash(template, None) == first
    assert du.compute_hash(template, 1) != first


def test_revision_annotations_move_forward_and_keep_history() -> None:
    d = deployment()
    d.metadata.annotations = {"kubernetes.io/change-cause": "kubectl set image", du.REVISION: "9"}  # type: ignore[union-attr]
    updated = du.new_rs_annotations(d, {du.REVISION: "1"}, 3, exists=True)
    assert updated == {du.REVISION: "3", du.REVISION_HISTORY: "1", "kubernetes.io/change-cause": "kubectl set image"}
    assert du.new_rs_annotations(d, updated, 3, exists=True) is None


def test_conditions_keep_their_transition_time_while_the_status_holds() -> None:
    conditions: list[dict[str, Any]] = []
    du.set_condition(conditions, du.new_condition(du.PROGRESSING, "True", du.NEW_RS_REASON, "created", NOW))
    later = NOW + dt.timedelta(minutes=1)
    du.set_condition(conditions, du.new_condition(du.PROGRESSING, "True", du.RS_UPDATED_REASON, "progressing", later))
    [condition] = conditions
    assert condition["reason"] == du.RS_UPDATED_REASON
    assert condition["lastTransitionTime"] == "2024-05-01T12:00:00Z"
    assert condition["lastUpdateTime"] == "2024-05-01T12:01:00Z"


def test_a_rollout_times_out_after_its_progress_deadline() -> None:
    d = deployment(progressDeadlineSeconds=60)
    conditions = [du.new_condition(du.PROGRESSING, "True", du.RS_UPDATED_REASON, "", NOW)]
    assert not du.timed_out(d, conditions, NOW + dt.timedelta(seconds=59))
    assert du.timed_out(d, conditions, NOW + dt.timedelta(seconds=61))
    assert du.progress_deadline(deployment(progressDeadlineSeconds=2**31 - 1)) is None
