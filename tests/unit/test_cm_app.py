"""The controller-manager's flags: ``--controllers`` with Kubernetes' names and aliases, and the options."""

from __future__ import annotations

import pytest

from controller_manager.app import (
    CONTROLLERS,
    add_flags,
    enabled_controllers,
    options_from_args,
    parse_controllers,
)
from controller_manager.context import Options
from machinery.process import build_parser

ALL = [d.name for d in CONTROLLERS]


@pytest.mark.parametrize(("flag", "enabled"), [
    pytest.param("*", ALL, id="all"),
    pytest.param("*,-nodelifecycle", [n for n in ALL if n != "node-lifecycle-controller"], id="alias-off"),
    pytest.param("*,-node-lifecycle-controller", [n for n in ALL if n != "node-lifecycle-controller"],
                 id="canonical-off"),
    pytest.param("garbagecollector,replicationcontroller", ["replicationcontroller-controller",
                                                            "garbage-collector-controller"], id="only-named"),
    pytest.param("-garbagecollector,*", [n for n in ALL if n != "garbage-collector-controller"],
                 id="off-before-star"),
    pytest.param("namespace,-namespace", ["namespace-controller"], id="first-mention-wins"),
    pytest.param("", [], id="none"),
])
def test_controllers_flag_selects_controllers(flag: str, enabled: list[str]) -> None:
    assert [d.name for d in enabled_controllers(parse_controllers(flag))] == enabled


def test_an_unknown_controller_is_refused_with_kubernetes_message(capsys: pytest.CaptureFixture[str]) -> None:
    parser = build_parser("controller-manager", lease_name="kube-controller-manager", add_flags=add_flags)
    with pytest.raises(SystemExit) as exit_info:
        parser.parse_args(["--controllers=*,-deploymnet"])
    assert exit_info.value.code == 2
    assert '"deploymnet" is not in the list of known controllers' in capsys.readouterr().err


def test_defaults_are_kubernetes_defaults() -> None:
    parser = build_parser("controller-manager", lease_name="kube-controller-manager", add_flags=add_flags)
    assert options_from_args(parser.parse_args([])) == Options()
    assert Options() == Options(concurrent_rc_syncs=5, concurrent_gc_syncs=20, concurrent_namespace_syncs=10,
                                node_monitor_period=5.0, node_monitor_grace_period=40.0,
                                node_startup_grace_period=60.0, node_eviction_rate=0.1,
                                secondary_node_eviction_rate=0.01, large_cluster_size_threshold=50,
                                unhealthy_zone_threshold=0.55)


def test_durations_take_go_syntax_and_bad_values_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    parser = build_parser("controller-manager", lease_name="kube-controller-manager", add_flags=add_flags)
    args = parser.parse_args(["--node-monitor-grace-period=1m30s", "--node-monitor-period=500ms",
                              "--concurrent-rc-syncs=2"])
    options = options_from_args(args)
    assert (options.node_monitor_grace_period, options.node_monitor_period, options.concurrent_rc_syncs) == (
        90.0, 0.5, 2)
    for bad in ("--node-monitor-period=soon", "--node-monitor-period=0s", "--concurrent-gc-syncs=0",
                "--node-eviction-rate=-1"):
        with pytest.raises(SystemExit):
            parser.parse_args([bad])
    assert "invalid duration" in capsys.readouterr().err
