"""The scheduler's configuration at run time: SIGHUP re-reads the file, the ConfigMap overrides it, changes are logged."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import yaml
from kubernetes.client import V1ConfigMap, V1ObjectMeta

from scheduler.profile import default_config, parse_config
from scheduler.reload import CONFIGMAP_KEY, ConfigReloader, describe_changes
from tests.unit.test_sched_builders import node, pod
from tests.unit.test_sched_scheduler import Harness

HEAD = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
MOST_ALLOCATED = HEAD + """profiles:
- schedulerName: default-scheduler
  plugins:
    multiPoint:
      disabled: [{name: ImageLocality}]
    score:
      enabled: [{name: NodeResourcesFit, weight: 5}]
  pluginConfig:
  - name: NodeResourcesFit
    args: {scoringStrategy: {type: MostAllocated}}
"""


def configmap(text: str | None, rv: str = "1") -> V1ConfigMap:
    return V1ConfigMap(metadata=V1ObjectMeta(name="kubesim-scheduler-config", namespace="kube-system",
                                             resource_version=rv),
                       data={CONFIGMAP_KEY: text} if text is not None else {"other": "x"})


def test_changes_are_described_one_by_one() -> None:
    h = Harness()
    old, old_frameworks = h.scheduler.config, dict(h.scheduler.frameworks)
    h.scheduler.apply_config(parse_config(yaml.safe_load(MOST_ALLOCATED + "percentageOfNodesToScore: 20\n")))
    changes = describe_changes(old, old_frameworks, h.scheduler.config, h.scheduler.frameworks)
    assert changes == [
        "percentageOfNodesToScore 0 -> 20",
        "profile default-scheduler: score disabled ImageLocality",
        "profile default-scheduler: weight of NodeResourcesFit 1 -> 5",
        ("profile default-scheduler: pluginConfig of NodeResourcesFit (none) -> "
        "{scoringStrategy: {type: MostAllocated}}"),
    ]


async def test_sighup_reads_the_file_again(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(HEAD)
    h = Harness()
    reloader = ConfigReloader(h.scheduler, path=str(path))
    path.write_text(MOST_ALLOCATED)
    with caplog.at_level(logging.INFO, logger="scheduler.reload"):
        reloader.reload_file()
    assert h.scheduler.frameworks["default-scheduler"].score_weights["NodeResourcesFit"] == 5
    assert f"configuration from file {path} applied: " in caplog.text
    assert "weight of NodeResourcesFit 1 -> 5" in caplog.text
    assert reloader.document()["source"] == f"file {path}"


async def test_a_bad_configuration_is_rejected_and_the_old_one_kept(tmp_path: Path,
                                                                    caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(HEAD)
    h = Harness()
    reloader = ConfigReloader(h.scheduler, path=str(path))
    before = h.scheduler.frameworks
    for text in ("profiles: [", HEAD + "profiles:\n- schedulerName: default-scheduler\n  plugins:\n"
                                      "    filter: {enabled: [{name: NoSuchPlugin}]}\n"):
        path.write_text(text)
        with caplog.at_level(logging.WARNING, logger="scheduler.reload"):
            reloader.reload_file()
    assert h.scheduler.frameworks is before
    assert reloader.rejected == 2
    assert "plugin 'NoSuchPlugin' does not exist" in caplog.text


async def test_the_configmap_overrides_the_file_until_it_is_deleted(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(HEAD)
    h = Harness()
    reloader = ConfigReloader(h.scheduler, path=str(path))
    reloader._on_configmap(configmap(MOST_ALLOCATED, "7"))
    assert h.scheduler.frameworks["default-scheduler"].score_weights["NodeResourcesFit"] == 5
    assert reloader.document()["source"] == "ConfigMap kube-system/kubesim-scheduler-config (resourceVersion 7)"
    reloader.reload_file()
    assert h.scheduler.frameworks["default-scheduler"].score_weights["NodeResourcesFit"] == 5
    reloader._on_configmap(configmap(None, "8"))
    assert reloader.rejected == 1
    reloader._on_configmap_deleted(configmap(MOST_ALLOCATED))
    assert h.scheduler.frameworks["default-scheduler"].score_weights["NodeResourcesFit"] == 1
    assert reloader.document()["source"] == f"file {path}"


async def test_a_new_configuration_schedules_the_next_pod() -> None:
    h = Harness()
    h.add_node(node("empty"))
    h.add_node(node("busy"))
    h.add_pod(pod("existing", cpu="2", node_name="busy"))
    h.add_pod(pod("p1", cpu="1"))
    assert await h.cycle()
    assert h.sent("POST", "/pods/p1/binding")[0]["target"]["name"] == "empty"
    ConfigReloader(h.scheduler, path=None).apply(parse_config(yaml.safe_load(MOST_ALLOCATED)),
                                                 "test", MOST_ALLOCATED)
    h.add_pod(pod("p2", cpu="1"))
    assert await h.cycle()
    assert h.sent("POST", "/pods/p2/binding")[0]["target"]["name"] == "busy"


def test_without_a_file_deleting_the_configmap_goes_back_to_the_defaults() -> None:
    h = Harness()
    reloader = ConfigReloader(h.scheduler, path=None)
    reloader._on_configmap(configmap(MOST_ALLOCATED))
    reloader._on_configmap_deleted(configmap(MOST_ALLOCATED))
    assert h.scheduler.config == default_config()


async def test_a_new_configuration_retries_the_unschedulable_pods() -> None:
    h = Harness()
    h.add_node(node("n1", cpu="1", taints=[{"key": "gpu", "value": "x", "effect": "NoSchedule"}]))
    h.add_pod(pod("p"))
    assert not await h.cycle()
    assert h.scheduler.queue.counts()["unschedulable"] == 1
    without_taints = HEAD + ("profiles:\n- schedulerName: default-scheduler\n  plugins:\n"
                             "    multiPoint: {disabled: [{name: TaintToleration}]}\n")
    ConfigReloader(h.scheduler, path=None).apply(parse_config(yaml.safe_load(without_taints)), "test", without_taints)
    counts = h.scheduler.queue.counts()
    assert counts["unschedulable"] == 0 and counts["active"] + counts["backoff"] == 1
