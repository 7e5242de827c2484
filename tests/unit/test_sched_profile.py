"""KubeSchedulerConfiguration files: defaults, merging onto the default plugins, several profiles, errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from scheduler.framework.runtime import PluginRef
from scheduler.profile import DEFAULT_PLUGINS, ConfigError, load_config, parse_config

BASE: dict[str, Any] = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}


def config(**fields: Any) -> dict[str, Any]:
    return dict(BASE, **fields)


def test_defaults() -> None:
    cfg = parse_config(BASE)
    assert [p.scheduler_name for p in cfg.profiles] == ["default-scheduler"]
    assert cfg.profiles[0].plugins == {"multiPoint": DEFAULT_PLUGINS}
    assert (cfg.percentage_of_nodes_to_score, cfg.pod_initial_backoff_seconds, cfg.pod_max_backoff_seconds) == (
        0, 1.0, 10.0)


def test_plugins_merge_onto_the_defaults() -> None:
    cfg = parse_config(config(profiles=[{"schedulerName": "s", "plugins": {"multiPoint": {
        "enabled": [{"name": "NodeResourcesFit", "weight": 5}, {"name": "Extra"}],
        "disabled": [{"name": "ImageLocality"}]}}}]))
    enabled = cfg.profiles[0].plugins["multiPoint"].enabled
    names = [ref.name for ref in enabled]
    assert "ImageLocality" not in names
    # A default enabled again keeps its place with the new weight; a new one is appended.
    assert enabled[names.index("NodeResourcesFit")] == PluginRef("NodeResourcesFit", 5)
    assert names.index("NodeResourcesFit") < names.index("DefaultBinder") and names[-1] == "Extra"


def test_star_disables_every_default() -> None:
    cfg = parse_config(config(profiles=[{"schedulerName": "s", "plugins": {"multiPoint": {
        "enabled": [{"name": "PrioritySort"}], "disabled": [{"name": "*"}]}}}]))
    assert [r.name for r in cfg.profiles[0].plugins["multiPoint"].enabled] == ["PrioritySort"]


def test_several_profiles_and_their_own_settings() -> None:
    cfg = parse_config(config(percentageOfNodesToScore=30, profiles=[
        {"schedulerName": "default-scheduler"},
        {"schedulerName": "bin-packer", "percentageOfNodesToScore": 100, "pluginConfig": [
            {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated"}}}]}]))
    assert cfg.percentage_of_nodes_to_score == 30
    default, packer = cfg.profiles
    assert default.percentage_of_nodes_to_score is None and packer.percentage_of_nodes_to_score == 100
    assert packer.plugin_config == {"NodeResourcesFit": {"scoringStrategy": {"type": "MostAllocated"}}}


@pytest.mark.parametrize(("data", "message"), [
    pytest.param({"apiVersion": "v1", "kind": "Pod"}, 'no kind "Pod" is registered for version "v1"', id="kind"),
    pytest.param(config(percentageOfNodesToScore=101),
                 "percentageOfNodesToScore: Invalid value: 101: not in valid range [0-100]", id="percentage"),
    pytest.param(config(podInitialBackoffSeconds=5, podMaxBackoffSeconds=2),
                 "podMaxBackoffSeconds: Invalid value: 2.0: must be greater than or equal to podInitialBackoffSeconds",
                 id="backoff"),
    pytest.param(config(profiles=[{"schedulerName": "a"}, {"schedulerName": "a"}]),
                 'profiles[1].schedulerName: Duplicate value: "a"', id="duplicate-profile"),
    pytest.param(config(profiles=[{"plugins": {}}]), "profiles[0].schedulerName: Required value",
                 id="no-scheduler-name"),
    pytest.param(config(parallelism=16, bogus=1), 'strict decoding error: unknown field "bogus"', id="unknown-field"),
    pytest.param(config(profiles=[{"schedulerName": "a", "plugins": {"filtr": {}}}]),
                 'strict decoding error: unknown field "profiles[0].plugins.filtr"', id="unknown-extension-point"),
    pytest.param(config(profiles=[{"schedulerName": "a", "pluginConfig": [{"name": "X"}, {"name": "X"}]}]),
                 'profiles[0].pluginConfig[1].name: Duplicate value: "X"', id="duplicate-plugin-config"),
    pytest.param(config(profiles=[{"schedulerName": "a"}, {"schedulerName": "b", "plugins": {"queueSort": {
        "enabled": [{"name": "Other"}], "disabled": [{"name": "*"}]}}}]),
                 "queueSort must be the same for all profiles", id="queue-sort-differs"),
    pytest.param(config(extenders=[{"urlPrefix": "http://x"}]), "extenders: Forbidden", id="extenders"),
])
def test_bad_configurations(data: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config(data)
    assert message in str(err.value)


@pytest.mark.parametrize("point", ["permit", "preBind", "postBind"])
def test_every_extension_point_takes_plugins(point: str) -> None:
    parsed = parse_config(config(profiles=[{"schedulerName": "a", "plugins": {point: {"enabled": [{"name": "X"}]}}}]))
    assert [ref.name for ref in parsed.profiles[0].plugins[point].enabled] == ["X"]


def test_load_config_reports_unreadable_and_invalid_files(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unable to read config file"):
        load_config(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("profiles: [\n")
    with pytest.raises(ConfigError, match="is not valid YAML"):
        load_config(bad)
    good = tmp_path / "good.yaml"
    good.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
                    "profiles:\n- schedulerName: fast\n  percentageOfNodesToScore: 5\n")
    assert load_config(good).profiles[0].scheduler_name == "fast"
