"""Run ``kubesim bench --smoke`` on some scenarios and read back the JSON it wrote.

Shared by the bench smoke tests, which are split by scenario group so that
pytest-xdist can run them on different workers.
"""

from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from kubesim import procs

ROOT = Path(__file__).resolve().parents[1]


def git_head() -> str:
    return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()

#: A scenario's figure by name: ``figure("cluster density", "Pods Running")``.
Figure = Callable[[str, str], float]


def run_smoke(tmp_path: Path, scenarios: Sequence[str], titles: Sequence[str], *, wait: float) -> Figure:
    """Run the smoke bench on ``scenarios`` (``--scenario`` names), check it wrote one error-free result per
    title in ``titles`` (in that order) and where it ran, and return its figures."""
    results = tmp_path / "results"
    args = ["bench", "--smoke", "--results-dir", str(results)]
    for name in scenarios:
        args += ["--scenario", name]
    bench = procs.python_module("kubesim", args, name="bench", log_path=tmp_path / "bench.log")
    bench.start()
    try:
        assert bench.proc is not None
        code = bench.proc.wait(wait)
    except subprocess.TimeoutExpired:
        # SIGINT lets the runner stop each cluster it started before it exits.
        bench.signal(signal.SIGINT)
        bench.proc.wait(30)
        pytest.fail(f"kubesim bench --smoke did not finish in {wait:g} s:\n{procs.tail(bench.log_path, 40)}")
    finally:
        bench.stop()
    output = bench.log_path.read_text()
    assert code == 0, procs.tail(bench.log_path, 40)

    [path] = results.glob("*-smoke.json")
    assert f"results written to {path}" in output
    doc = json.loads(path.read_text())
    assert doc["size"] == "smoke"
    assert doc["machine"]["cores"] >= 1 and doc["machine"]["versions"]["kubesim"]
    # The commit measured (this test runs from a git checkout).
    assert doc["machine"]["commit"].split("-")[0] == git_head()
    by_name: dict[str, Any] = {r["scenario"]: r for r in doc["results"]}
    assert list(by_name) == list(titles)
    assert {name: r["error"] for name, r in by_name.items()} == dict.fromkeys(titles)

    def figure(scenario: str, name: str) -> float:
        values = [f["value"] for f in by_name[scenario]["figures"] if f["name"] == name]
        assert values and values[0] is not None, f"{scenario}: no {name!r}"
        return float(values[0])
    return figure
