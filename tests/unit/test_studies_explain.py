"""kubesim explain: the scheduler's full decision printed, and "why not node X?" answered."""

from __future__ import annotations

from kubesim.studies.explain import describe, why_node
from tests.unit.test_sched_builders import node, pod
from tests.unit.test_sched_scheduler import Harness


async def decision() -> dict:
    h = Harness()
    h.add_node(node("tainted", taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]))
    h.add_node(node("small", cpu="1"))
    h.add_node(node("busy", cpu="4"))
    h.add_node(node("idle", cpu="4"))
    h.add_pod(pod("existing", cpu="3", node_name="busy"))
    h.add_pod(pod("p", cpu="500m"))
    assert await h.cycle()
    return h.scheduler.decisions.document("default", "p")["decisions"][-1]


async def test_why_not_each_node() -> None:
    d = await decision()
    assert d["selectedNode"] == "idle"
    assert why_node(d, "tainted") == ("node tainted was rejected by TaintToleration: node(s) had untolerated taint "
                                      "{dedicated: gpu}")
    answer = why_node(d, "busy")
    assert answer.startswith(f"node busy was feasible and scored {d['score']['busy']['total']}, behind idle's ")
    assert "NodeResourcesFit" in answer and "(-" in answer
    assert why_node(d, "idle").startswith("node idle was chosen: total ")
    assert why_node(d, "ghost") == "node ghost is not a node the scheduler knew when it decided"


async def test_the_whole_decision() -> None:
    text = describe(await decision())
    assert text.splitlines()[0].startswith("Pod default/p: Scheduled on idle (profile default-scheduler, attempt 1")
    assert "4 nodes: 4 evaluated, 3 feasible" in text
    assert "TaintToleration: node(s) had untolerated taint {dedicated: gpu}: 1 node(s): tainted" in text
    assert "Scores (weighted), best first:" in text and "NodeResourcesFit" in text


def test_a_node_the_cycle_did_not_reach() -> None:
    d = {"pod": "default/p", "result": "Scheduled", "selectedNode": "n1", "nodes": 5000, "evaluated": 600,
         "feasible": 500, "notEvaluated": 4400, "filter": {}, "score": {"n1": {"total": 10, "plugins": {}}}}
    assert "was not evaluated: the cycle stopped once it had 500 feasible nodes" in why_node(d, "n4000")
