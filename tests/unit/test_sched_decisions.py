"""The last decisions' full per-node results (``/debug/decisions``), and the health port's path parameters."""

from __future__ import annotations

import orjson

from machinery.process import _debug_answer, match_debug_path
from scheduler.decisions import Decision, DecisionLog
from scheduler.framework.interface import Code, Status
from tests.unit.test_sched_builders import node, pod
from tests.unit.test_sched_scheduler import Harness


def decision(name: str, attempt: int = 1) -> Decision:
    return Decision("default", name, f"uid-{name}", "default-scheduler", attempt, "t", {},
                    Status(Code.ERROR, "boom"))


def test_the_log_keeps_the_last_n_decisions_and_finds_them_by_pod() -> None:
    log = DecisionLog(3)
    for i in range(2):
        log.record(decision("a", i + 1))
    log.record(decision("b"))
    log.record(decision("c"))
    assert len(log) == 3
    assert [d.attempt for d in log.for_pod("default", "a")] == [2]
    assert log.index() == {"kept": 3, "pods": {"default/a": 1, "default/b": 1, "default/c": 1}}
    assert log.document("default", "zzz") is None
    assert DecisionLog(0).record(decision("x")) is not None and len(DecisionLog(0)) == 0


async def test_a_decision_holds_every_node_the_cycle_saw() -> None:
    h = Harness()
    for name, cpu in (("small", "1"), ("mid", "4"), ("big", "8")):
        h.add_node(node(name, cpu=cpu))
    h.add_pod(pod("p", cpu="2"))
    assert await h.cycle()
    [doc] = h.scheduler.decisions.document("default", "p")["decisions"]
    assert doc["result"] == "Scheduled" and doc["selectedNode"] in ("mid", "big")
    assert (doc["nodes"], doc["evaluated"], doc["feasible"], doc["notEvaluated"]) == (3, 3, 2, 0)
    assert doc["filter"] == {"small": {"plugin": "NodeResourcesFit", "code": "UnschedulableAndUnresolvable",
                                       "reasons": ["Insufficient cpu"]}}
    assert set(doc["score"]) == {"mid", "big"}
    fit = doc["score"]["big"]["plugins"]["NodeResourcesFit"]
    assert fit["final"] == fit["normalized"] * fit["weight"]
    assert doc["score"]["big"]["total"] == sum(p["final"] for p in doc["score"]["big"]["plugins"].values())
    assert doc["weights"]["TaintToleration"] == 3


async def test_a_failed_decision_names_each_node_and_preemption() -> None:
    h = Harness()
    h.add_node(node("n1", cpu="1"))
    h.add_pod(pod("huge", cpu="2"))
    assert not await h.cycle()
    [doc] = h.scheduler.decisions.document("default", "huge")["decisions"]
    assert doc["result"] == "Unschedulable"
    assert doc["message"].startswith("0/1 nodes are available: 1 Insufficient cpu.")
    assert doc["filter"]["n1"]["reasons"] == ["Insufficient cpu"]
    assert doc["postFilter"] == {"plugin": "DefaultPreemption", "code": "Unschedulable", "reasons": [
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."]}


def test_debug_paths_take_parameters() -> None:
    handlers = {"/debug/queue": lambda: {"q": 1},
                "/debug/decisions/{namespace}/{pod}": lambda namespace, pod: {"ns": namespace, "pod": pod}}
    handler, params = match_debug_path(handlers, "/debug/decisions/kube-system/web%2D1")
    assert params == {"namespace": "kube-system", "pod": "web-1"}
    assert handler(**params) == {"ns": "kube-system", "pod": "web-1"}
    assert match_debug_path(handlers, "/debug/queue") == (handlers["/debug/queue"], {})
    assert match_debug_path(handlers, "/debug/decisions/only-one") is None
    assert match_debug_path(handlers, "/debug/decisions//p") is None


def test_debug_answers() -> None:
    assert _debug_answer(lambda: None, {})[0] == "404 Not Found"
    status, body, content_type = _debug_answer(lambda: {"a": [1]}, {})
    assert (status, orjson.loads(body), content_type) == ("200 OK", {"a": [1]}, "application/json")

    def broken() -> object:
        raise RuntimeError("bug")
    assert _debug_answer(broken, {})[0] == "500 Internal Server Error"
