"""``kubesim bench --smoke``: custom objects against ConfigMaps (the CRD scenario), to the end."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.benchrun import run_smoke

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.mark.timeout(600)
def test_smoke_crd_scenario_completes(tmp_path: Path) -> None:
    figure = run_smoke(tmp_path, ["crd"], ["CRD"], wait=500)
    for kind in ("ConfigMaps", "custom objects"):
        assert figure("CRD", f"{kind}: creates/s") > 0 and figure("CRD", f"{kind}: updates/s") > 0
        assert figure("CRD", f"{kind}: lists/s (all 50)") > 0 and figure("CRD", f"{kind}: watch p50") > 0
    assert figure("CRD", "custom/ConfigMaps: updates/s") > 0
