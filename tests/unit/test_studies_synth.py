"""The synthetic trace ``kubesim bench --scenario replay`` replays: a valid trace, the half hour it says it is."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from kubesim.studies import traceformat
from kubesim.studies.actions import client_actions, initial_objects
from kubesim.studies.synth import cluster_trace


def test_it_is_a_valid_trace_of_client_actions_only(tmp_path: Path) -> None:
    trace = cluster_trace(nodes=60, seconds=600.0, seed=4)
    path = tmp_path / "t.jsonl.gz"
    traceformat.write(path, trace)
    back = traceformat.read(path)
    assert back.records == trace.records and back.duration == 600.0
    assert not initial_objects(back)
    actions = client_actions(back.records)
    # Every change is a client's (a delete is seen once, as its deletionTimestamp): nothing is left out.
    assert len(actions) == sum(1 for r in back.records if r.type != "DELETED")
    verbs = Counter((a.verb, a.kind) for a in actions)
    assert verbs[("create", "Node")] == 60 and verbs[("create", "Namespace")] == 10
    assert verbs[("create", "ReplicationController")] == 5
    assert verbs[("create", "Pod")] == verbs[("delete", "Pod")] > 100
    assert verbs[("scale", "ReplicationController")] >= 8  # one every 30 s after the ramp, minus no-ops
    assert set(verbs) == {("create", "Node"), ("create", "Namespace"), ("create", "ReplicationController"),
                          ("scale", "ReplicationController"), ("create", "Pod"), ("delete", "Pod")}
    assert all(5 <= (a.replicas or 0) <= 40 for a in actions if a.verb == "scale")
    assert all(0 <= a.t < 600.0 for a in actions)


def test_nodes_come_in_two_waves_and_bare_pods_live_a_minute() -> None:
    trace = cluster_trace(nodes=100, seconds=1800.0, seed=1)
    nodes = [r.t for r in trace.records if r.object["kind"] == "Node"]
    assert len(nodes) == 100 and sum(t < 60 for t in nodes) == 90 and all(t >= 1200 for t in nodes[90:])
    created = {r.object["metadata"]["name"]: r.t for r in trace.records
               if r.object["kind"] == "Pod" and r.type == "ADDED"}
    deleted = {r.object["metadata"]["name"]: r.t for r in trace.records
               if r.object["kind"] == "Pod" and r.observed.get("deleting")}
    assert created.keys() == deleted.keys() and all(abs(deleted[n] - created[n] - 60.0) < 1e-6 for n in created)


def test_a_seed_gives_the_same_trace() -> None:
    assert cluster_trace(nodes=30, seconds=400.0, seed=9).records == cluster_trace(nodes=30, seconds=400.0,
                                                                                 seed=9).records
    assert cluster_trace(nodes=30, seconds=400.0, seed=9).records != cluster_trace(nodes=30, seconds=400.0,
                                                                                 seed=10).records
