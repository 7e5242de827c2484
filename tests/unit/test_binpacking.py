"""The BinPacking example plugin: the fullest node the Pod fits on wins, by its dominant resource."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from scheduler.framework.interface import CycleState
from scheduler.framework.types import PodInfo
from scheduler_plugins.binpacking import PLUGINS, new
from tests.unit.test_sched_builders import cache_of, node, pod
from tests.unit.test_sched_extension_points import StudyHarness


def scores(args: Any, nodes: list[Any], existing: list[Any], incoming: Any) -> dict[str, int]:
    cache = cache_of(nodes, existing)
    plugin = new(args, None)  # type: ignore[arg-type]
    infos = cache.node_infos()
    return dict(zip([n.name for n in infos], plugin.score(CycleState(), PodInfo(incoming), infos), strict=True))


def test_the_dominant_resource_decides() -> None:
    nodes = [node("memory-full", cpu="4", memory="8Gi"), node("half", cpu="4", memory="8Gi")]
    existing = [pod("m", node_name="memory-full", cpu="100m", memory="7Gi"),
                pod("h", node_name="half", cpu="2", memory="4Gi")]
    got = scores(None, nodes, existing, pod("p", cpu="100m", memory="512Mi"))
    # memory-full: (7Gi + 512Mi) / 8Gi = 93%; half: max(2.1/4, 4.5/8) = 56%.
    assert got == {"memory-full": 93, "half": 56}
    # Counting cpu only, the half-full node is the fuller one.
    assert scores({"resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 0}]}, nodes, existing,
                  pod("p", cpu="100m", memory="512Mi")) == {"memory-full": 5, "half": 52}


@pytest.mark.parametrize(("args", "message"), [
    pytest.param({"bogus": 1}, 'unknown field "bogus"', id="unknown-field"),
    pytest.param({"resources": [{"name": "gpu"}]}, "resources[0].name: Unsupported value", id="resource"),
    pytest.param({"resources": [{"name": "cpu", "weight": -1}]}, "resources[0].weight: Invalid value", id="weight"),
    pytest.param({"resources": [{"name": "cpu", "weight": 0}]}, "at least one resource", id="all-zero"),
])
def test_bad_args(args: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        new(args, None)  # type: ignore[arg-type]


async def test_it_packs_pods_onto_one_node() -> None:
    cfg = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
           "profiles": [{"schedulerName": "default-scheduler", "plugins": {
               "score": {"enabled": [{"name": "BinPacking", "weight": 10}]}}}]}
    h = StudyHarness(cfg, PLUGINS)
    for name in ("n1", "n2", "n3"):
        h.scheduler._on_node_add(node(name, cpu="4"))
    for i in range(3):
        h.add_pod(pod(f"p{i}", cpu="1"))
        assert await h.cycle()
    await h.settle()
    targets = {r.url.path.split("/")[6]: r for r in h.requests if r.url.path.endswith("/binding")}
    assert len(targets) == 3
    nodes = {orjson.loads(r.content)["target"]["name"] for r in targets.values()}
    assert len(nodes) == 1
