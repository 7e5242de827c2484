"""The explanation annotations: what they say, and that they stay small with 5,000 nodes."""

from __future__ import annotations

import orjson

from scheduler import explain
from scheduler.framework.diagnosis import Diagnosis
from scheduler.framework.interface import Code, CycleState, Status
from scheduler.framework.types import PodInfo
from scheduler.schedule_one import ScheduleResult
from tests.unit.test_sched_builders import algorithm, cache_of, framework_for, node, pod


def test_a_successful_cycle_explains_filter_and_scores() -> None:
    cache = cache_of([node("small", cpu="1"), node("n1"), node("n2")])
    fwk = framework_for(cache)
    result = algorithm(cache).schedule_pod(fwk, CycleState(), PodInfo(pod("p", cpu="2")))
    assert isinstance(result, ScheduleResult)
    annotations = explain.success_annotations(result, fwk.score_weights)
    assert annotations[explain.SELECTED_NODE] == result.suggested_host
    filtered = orjson.loads(annotations[explain.FILTER_RESULT])
    assert filtered == {"nodes": 3, "evaluated": 3, "feasible": 2, "rejected": [
        {"plugin": "NodeResourcesFit", "reasons": ["Insufficient cpu"], "count": 1, "nodes": ["small"]}]}
    scored = orjson.loads(annotations[explain.SCORE_RESULT])
    assert scored["weights"]["TaintToleration"] == 3
    assert "NodeAffinity" in scored["skipped"]
    best = scored["nodes"][0]
    assert best["node"] == result.suggested_host
    assert best["total"] == sum(s["final"] for s in best["scores"].values())
    assert best["scores"]["TaintToleration"] == {"raw": 0, "final": 300}


def test_thousands_of_distinct_rejections_stay_under_the_limit() -> None:
    d = Diagnosis()
    for i in range(5000):
        d.node_to_status.statuses[f"node-{i:04}"] = Status(
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE, f"node(s) had untolerated taint {{team: t{i}}}",
            plugin="TaintToleration")
    text = explain.failure_annotations(d, 5000)[explain.FILTER_RESULT]
    assert len(text.encode()) <= explain.MAX_ANNOTATION_BYTES
    doc = orjson.loads(text)
    assert doc["omittedGroups"] + len(doc["rejected"]) == 5000


def test_many_nodes_in_few_groups_list_some_names() -> None:
    d = Diagnosis()
    for i in range(5000):
        d.node_to_status.statuses[f"node-{i:04}"] = Status(Code.UNSCHEDULABLE, "Insufficient cpu",
                                                           plugin="NodeResourcesFit")
    doc = orjson.loads(explain.failure_annotations(d, 5000)[explain.FILTER_RESULT])
    assert doc["rejected"][0]["count"] == 5000
    assert doc["rejected"][0]["nodes"][:2] == ["node-0000", "node-0001"]
    assert len(doc["rejected"][0]["nodes"]) == 20


def test_a_pre_filter_rejection_covers_all_nodes() -> None:
    d = Diagnosis()
    d.node_to_status.absent = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "pod affinity terms conflict",
                                     plugin="NodeAffinity")
    d.pre_filter_msg = "pod affinity terms conflict"
    doc = orjson.loads(explain.failure_annotations(d, 3)[explain.FILTER_RESULT])
    assert doc == {"nodes": 3, "evaluated": 0, "feasible": 0,
                   "allNodes": {"plugin": "NodeAffinity", "reasons": ["pod affinity terms conflict"]}}
