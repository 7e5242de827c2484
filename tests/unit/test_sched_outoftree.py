"""Out-of-tree plugin modules (``--plugin-module``): loading, refusals, and the scheduler's flags."""

from __future__ import annotations

import argparse
import textwrap
from pathlib import Path

import pytest

from scheduler.__main__ import build_parser, prepare
from scheduler.outoftree import PluginModuleError, load_registry
from scheduler.plugins.registry import IN_TREE


@pytest.fixture
def modules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def write(where: Path, name: str, body: str) -> None:
    (where / f"{name}.py").write_text(textwrap.dedent(body))


def test_a_module_adds_its_plugins_to_the_in_tree_ones(modules: Path) -> None:
    write(modules, "oot_good", """
        class P:
            name = "Mine"
        PLUGINS = {"Mine": lambda args, handle: P()}
    """)
    registry = load_registry(["oot_good"])
    assert set(registry) == set(IN_TREE) | {"Mine"}


@pytest.mark.parametrize(("body", "message"), [
    pytest.param("raise RuntimeError('no')", "cannot import plugin module {m}: RuntimeError: no", id="import-fails"),
    pytest.param("X = 1", "plugin module {m} has no PLUGINS mapping", id="no-plugins"),
    pytest.param("PLUGINS = {'NodeName': lambda a, h: None}", "a plugin named 'NodeName' already exists in-tree",
                 id="in-tree-name"),
    pytest.param("PLUGINS = {'Mine': 3}", "the factory of 'Mine' is not callable", id="not-callable"),
    pytest.param("PLUGINS = {'': lambda a, h: None}", "plugin names must be non-empty strings", id="empty-name"),
])
def test_bad_modules_are_refused_with_the_reason(modules: Path, body: str, message: str) -> None:
    name = f"oot_{abs(hash(body))}"
    write(modules, name, body)
    with pytest.raises(PluginModuleError) as err:
        load_registry([name])
    assert message.format(m=name) in str(err.value)


def test_a_missing_module_and_two_modules_with_one_name(modules: Path) -> None:
    with pytest.raises(PluginModuleError, match="cannot import plugin module no_such_module: ModuleNotFoundError"):
        load_registry(["no_such_module"])
    write(modules, "oot_a", "PLUGINS = {'Same': lambda a, h: None}")
    write(modules, "oot_b", "PLUGINS = {'Same': lambda a, h: None}")
    with pytest.raises(PluginModuleError, match="'Same' already comes from oot_a"):
        load_registry(["oot_a", "oot_b"])


def flags(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["--master", "http://127.0.0.1:1", *argv])


def test_a_profile_naming_an_unknown_plugin_is_refused_before_the_scheduler_starts(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
                      "profiles:\n- schedulerName: default-scheduler\n  plugins:\n"
                      "    score: {enabled: [{name: BinPacking}]}\n")
    with pytest.raises(ValueError, match="plugin 'BinPacking' does not exist"):
        prepare(flags("--config", str(config)))
    config_, registry = prepare(flags("--config", str(config), "--plugin-module", "scheduler_plugins.binpacking"))
    assert "BinPacking" in registry
    assert [r.name for r in config_.profiles[0].plugins["score"].enabled] == ["BinPacking"]


def test_both_example_modules_load_together() -> None:
    registry = load_registry(["scheduler_plugins.coscheduling", "scheduler_plugins.binpacking"])
    assert {"Coscheduling", "BinPacking"} <= set(registry)
