"""The ``kubesim`` command line: its subcommands, their --help texts, and which function each runs."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from kubesim import certs_command, cli, node, status, trace, up
from kubesim.bench import runner as bench_runner
from kubesim.studies import compare, explain, record, replay, schedconfig, snapshot
from kubesim.ui import __main__ as ui

COMMANDS = ["up", "certs", "status", "trace", "node", "ui", "snapshot", "record", "replay", "compare", "explain",
            "scheduler", "bench"]


def subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    [action] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


def test_kubesim_help_lists_every_subcommand_with_a_line_of_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["--help"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    assert list(subparsers(cli.build_parser())) == COMMANDS
    [action] = [a for a in cli.build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    helps = {choice.dest: choice.help for choice in action._choices_actions}
    for name in COMMANDS:
        assert helps[name], name
        assert f"    {name} " in out and str(helps[name]) in out.replace("\n" + " " * 24, " "), name


@pytest.mark.parametrize("name", COMMANDS)
def test_each_subcommand_has_its_own_usage_and_description(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    parser = subparsers(cli.build_parser())[name]
    assert parser.description and parser.prog == f"kubesim {name}"
    with pytest.raises(SystemExit) as exited:
        cli.main([name, "--help"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: kubesim {name}")
    assert " ".join(parser.description.split()[:4]) in " ".join(out.split())


@pytest.mark.parametrize("name, func", [
    ("up", up.up), ("certs", certs_command.main), ("status", status.main), ("trace", trace.main), ("node", node.main), ("ui", ui.main),
    ("snapshot", snapshot.main), ("record", record.main), ("replay", replay.main), ("compare", compare.main),
    ("explain", explain.main), ("scheduler", schedconfig.main), ("bench", bench_runner.main),
])
def test_each_subcommand_runs_its_modules_function(name: str, func: object) -> None:
    assert subparsers(cli.build_parser())[name].get_default("func") is func


def test_a_subcommand_is_dispatched_with_its_arguments() -> None:
    args = cli.build_parser().parse_args(["trace", "default/web"])
    assert args.func is trace.main and args.command == "trace"


def test_a_subcommand_imports_only_its_own_module() -> None:
    # The others' modules (the bench's matplotlib, the APIServer's admission code...) cost seconds of CPU.
    code = ("import sys\nfrom kubesim import cli\ncli.build_parser(only='status').parse_args(['status'])\n"
            "print(sorted(m for m in ('kubesim.bench.runner', 'kubesim.studies.compare', 'matplotlib', "
            "'kubesim.up', 'kubesim.status') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['kubesim.status']"
