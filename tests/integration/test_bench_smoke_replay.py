"""``kubesim bench --smoke``: replay speed, a synthetic trace replayed as fast as the cluster takes it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.benchrun import run_smoke

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.mark.timeout(300)
def test_smoke_replay_scenario_completes(tmp_path: Path) -> None:
    figure = run_smoke(tmp_path, ["replay"], ["replay"], wait=240)
    assert figure("replay", "trace length") == 60
    assert figure("replay", "replay speed") > 0 and figure("replay", "actions failed") == 0
