"""The plugin tutorial of docs/studying-scheduling.md works as written: its module, its profile, its command.

The tutorial's Python block is written out as ``myplugins/spot.py`` and loaded
the way ``--plugin-module myplugins.spot`` loads it; its YAML block is the
profile the scheduler runs with.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from kubesim import certs, up
from kubesim.clusterfiles import ClusterFiles
from scheduler.outoftree import load_registry
from scheduler.profile import parse_config
from scheduler.scheduler import check_profiles
from tests.unit.test_sched_builders import node, pod
from tests.unit.test_sched_extension_points import StudyHarness

DOC = Path(__file__).resolve().parents[2] / "docs" / "studying-scheduling.md"


def block(language: str, containing: str) -> str:
    blocks = re.findall(rf"```{language}\n(.*?)```", DOC.read_text(), flags=re.DOTALL)
    [found] = [b for b in blocks if containing in b]
    return str(found)


@pytest.fixture
def tutorial(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    package = tmp_path / "myplugins"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "spot.py").write_text(block("python", "PLUGINS"))
    monkeypatch.syspath_prepend(str(tmp_path))
    profile: dict[str, Any] = yaml.safe_load(block("yaml", "SpotAware"))
    return profile


async def test_the_tutorial_plugin_keeps_pods_off_spot_nodes(tutorial: dict[str, Any]) -> None:
    registry = load_registry(["myplugins.spot"])
    check_profiles(parse_config(tutorial), registry)
    h = StudyHarness(tutorial, {"SpotAware": registry["SpotAware"]})
    for name, lifecycle in (("spot-1", "spot"), ("spot-2", "spot"), ("od-1", "on-demand")):
        h.scheduler._on_node_add(node(name, cpu="4", labels={"example.com/lifecycle": lifecycle}))
    # Scored first: the on-demand node wins even for a Pod that accepts spot.
    h.add_pod(pod("ok", cpu="1", labels={"example.com/spot-ok": "true"}))
    assert await h.cycle()
    h.add_pod(pod("a", cpu="2"))
    assert await h.cycle()
    await h.settle()
    targets = {r.url.path.split("/")[6]: orjson.loads(r.content)["target"]["name"] for r in h.requests
               if r.url.path.endswith("/binding")}
    assert targets == {"ok": "od-1", "a": "od-1"}
    # od-1 is full: a Pod that does not accept spot waits, and says why.
    h.add_pod(pod("b", cpu="2"))
    assert not await h.cycle()
    await h.settle()
    reason = h.events.recorded[-1]
    assert reason[2] == "FailedScheduling" and "2 node(s) are spot instances" in reason[3]
    # One that does goes to a spot node.
    h.add_pod(pod("c", cpu="2", labels={"example.com/spot-ok": "true"}))
    assert await h.cycle()
    await h.settle()
    assert orjson.loads(h.requests[-1].content)["target"]["name"].startswith("spot-")


def test_its_args_are_checked(tutorial: dict[str, Any]) -> None:
    registry = load_registry(["myplugins.spot"])
    tutorial["profiles"][0]["pluginConfig"][0]["args"] = {"lable": "x"}
    with pytest.raises(Exception, match='unknown field "lable"'):
        check_profiles(parse_config(tutorial), registry)


def test_kubesim_up_passes_the_plugin_module_to_the_scheduler() -> None:
    parser = argparse.ArgumentParser()
    up.add_arguments(parser)
    command = next(c for c in block("sh", "--scheduler-plugin-module").splitlines() if c.startswith("kubesim up"))
    args = parser.parse_args(command.split()[2:])
    files = ClusterFiles(Path("/kubesim"), certs.ClusterPKI(Path("/kubesim/pki")))
    [(_, module, flags)] = [c for c in up.component_commands(args, files, 4443) if c[0] == "scheduler"]
    assert module == "scheduler"
    assert flags == ["--kubeconfig=/kubesim/scheduler.conf", "--config=spot.yaml", "--plugin-module=myplugins.spot"]
