"""The study commands given a cluster they cannot reach: one clear line and exit code 1, never a traceback."""

from __future__ import annotations

import pytest

from kubesim import cli, procs


@pytest.mark.parametrize("argv", [
    pytest.param(["replay", "builtin:spread-vs-pack"], id="replay"),
    pytest.param(["snapshot", "save", "-"], id="snapshot-save"),
    pytest.param(["scheduler", "config", "get"], id="scheduler-config"),
])
def test_an_unreachable_server_is_one_error_line(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    server = f"http://{procs.LOOPBACK}:{procs.free_port()}"
    assert cli.main([*argv, "--server", server]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err and "onnect" in err
