"""kubesim bench's runner: an interrupted run still prints and writes what its finished scenarios measured."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from kubesim.bench import runner
from kubesim.bench.results import ScenarioResult
from kubesim.bench.sizes import Size


def _finished(_run: runner.Run) -> ScenarioResult:
    result = ScenarioResult("finished one")
    result.add("things done", 42, "/s")
    return result


def _interrupted(_run: runner.Run) -> ScenarioResult:
    raise KeyboardInterrupt


def _never(_run: runner.Run) -> ScenarioResult:
    raise AssertionError("a scenario after the interruption ran")


def test_ctrl_c_prints_and_writes_the_finished_scenarios_and_exits_130(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(runner, "SCENARIOS", {"a": _finished, "b": _interrupted, "c": _never})
    args = argparse.Namespace(scenario=["a", "b", "c"], size=Size.QUICK, results_dir=tmp_path)
    assert runner.main(args) == 130
    out = capsys.readouterr().out
    assert "things done" in out and "interrupted" in out
    [path] = tmp_path.glob("*-quick.json")
    doc = json.loads(path.read_text())
    assert [(r["scenario"], r["error"]) for r in doc["results"]] == [("finished one", None), ("b", "interrupted")]


def test_a_second_run_on_the_same_day_keeps_the_first_runs_results(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(runner, "SCENARIOS", {"a": _finished})
    args = argparse.Namespace(scenario=["a"], size=Size.QUICK, results_dir=tmp_path)
    assert runner.main(args) == 0
    [first] = tmp_path.glob("*-quick.json")
    written = first.read_text()
    assert runner.main(args) == 0
    second = tmp_path / f"{first.stem}-2.json"
    assert first.read_text() == written
    assert json.loads(second.read_text())["results"][0]["scenario"] == "finished one"
    assert f"results written to {second}" in capsys.readouterr().out
