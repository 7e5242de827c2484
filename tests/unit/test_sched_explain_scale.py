"""Explanations at 5,000 and 15,000 nodes: the annotations stay within budget, the decision log keeps every node.

kube-scheduler-simulator writes every node's result into the Pod's
annotations and passes Kubernetes' 256 KiB limit on a Pod's annotations at
about 800 nodes; kubesim groups and cuts them (``scheduler.explain``) and
keeps the full results in the scheduler (``scheduler.decisions``).
"""

from __future__ import annotations

import functools

import orjson
import pytest

from scheduler import explain
from scheduler.decisions import Decision
from scheduler.framework.diagnosis import FitError
from scheduler.framework.interface import CycleState
from scheduler.framework.types import PodInfo
from scheduler.schedule_one import ScheduleResult
from tests.unit.test_sched_builders import algorithm, cache_of, framework_for, node, pod

#: Kubernetes' ``TotalAnnotationSizeLimitB``: all of an object's annotations together.
TOTAL_ANNOTATION_LIMIT = 256 * 1024


@functools.cache
def cluster(size: int, *, distinct_taints: bool) -> list:
    """A third of the nodes too small, a third tainted (one key per node, or 50 keys), a third free."""
    nodes = []
    for i in range(size):
        name = f"node-{i:05}"
        if i % 3 == 0:
            nodes.append(node(name, cpu="500m"))
        elif i % 3 == 1:
            key = f"team-{i}" if distinct_taints else f"team-{i % 50}"
            nodes.append(node(name, taints=[{"key": key, "value": "x", "effect": "NoSchedule"}]))
        else:
            nodes.append(node(name))
    return nodes


def annotation_sizes(annotations: dict[str, str]) -> tuple[int, int]:
    biggest = max(len(v.encode()) for v in annotations.values())
    total = sum(len(k.encode()) + len(v.encode()) for k, v in annotations.items())
    return biggest, total


@pytest.mark.parametrize("size", [5000, 15000])
def test_a_scheduled_pods_explanation_fits_and_the_decision_has_every_node(size: int) -> None:
    cache = cache_of(cluster(size, distinct_taints=True))
    fwk = framework_for(cache, {"apiVersion": "kubescheduler.config.k8s.io/v1",
                                "kind": "KubeSchedulerConfiguration", "percentageOfNodesToScore": 100})
    result = algorithm(cache, percentage=100).schedule_pod(fwk, CycleState(), PodInfo(pod("p", cpu="1")))
    assert isinstance(result, ScheduleResult)
    assert result.evaluated_nodes == size
    annotations = explain.success_annotations(result, fwk.score_weights)
    biggest, total = annotation_sizes(annotations)
    assert biggest <= explain.MAX_ANNOTATION_BYTES and total <= TOTAL_ANNOTATION_LIMIT
    filter_doc = orjson.loads(annotations[explain.FILTER_RESULT])
    assert filter_doc["nodes"] == size and filter_doc["feasible"] == sum(1 for i in range(size) if i % 3 == 2)
    kept = sum(g["count"] for g in filter_doc["rejected"])
    assert kept + filter_doc.get("omittedGroups", 0) >= 1
    doc = Decision("default", "p", "u", "default-scheduler", 1, "t", fwk.score_weights, result).document()
    assert len(doc["filter"]) + len(doc["score"]) == size
    assert doc["filter"]["node-00001"]["reasons"] == ["node(s) had untolerated taint {team-1: x}"]
    assert doc["score"][result.suggested_host]["total"] == max(s["total"] for s in doc["score"].values())


@pytest.mark.parametrize("size", [5000, 15000])
def test_a_pod_that_fits_nowhere_is_explained_within_budget(size: int) -> None:
    nodes = [n for i, n in enumerate(cluster(size, distinct_taints=True)) if i % 3 != 2]
    cache = cache_of(nodes)
    fwk = framework_for(cache)
    outcome = algorithm(cache).schedule_pod(fwk, CycleState(), PodInfo(pod("p", cpu="1")))
    assert isinstance(outcome, FitError)
    annotations = explain.failure_annotations(outcome.diagnosis, outcome.num_all_nodes)
    biggest, total = annotation_sizes(annotations)
    assert biggest <= explain.MAX_ANNOTATION_BYTES and total <= TOTAL_ANNOTATION_LIMIT
    filter_doc = orjson.loads(annotations[explain.FILTER_RESULT])
    # Thousands of distinct taints: the biggest groups are kept and the rest counted.
    assert filter_doc["omittedGroups"] > 0
    assert filter_doc["rejected"][0]["count"] == len(nodes) // 2
    doc = Decision("default", "p", "u", "default-scheduler", 1, "t", {}, outcome).document()
    assert len(doc["filter"]) == len(nodes)


def test_fifty_taints_on_fifteen_thousand_nodes_keep_every_group() -> None:
    nodes = [n for i, n in enumerate(cluster(15000, distinct_taints=False)) if i % 3 != 2]
    cache = cache_of(nodes)
    outcome = algorithm(cache).schedule_pod(framework_for(cache), CycleState(), PodInfo(pod("p", cpu="1")))
    assert isinstance(outcome, FitError)
    filter_doc = orjson.loads(explain.failure_annotations(outcome.diagnosis, outcome.num_all_nodes)[
        explain.FILTER_RESULT])
    assert "omittedGroups" not in filter_doc
    assert sum(g["count"] for g in filter_doc["rejected"]) == len(nodes)
    assert len(filter_doc["rejected"]) == 51
