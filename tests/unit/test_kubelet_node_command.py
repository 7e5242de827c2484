"""``kubesim node stop|start NAME``: flags and the errors a user sees (the happy path is an integration test)."""

from __future__ import annotations

import argparse
import socket
from pathlib import Path

import pytest

from kubesim import node as node_command


def _run(*argv: str) -> int:
    parser = argparse.ArgumentParser()
    node_command.add_arguments(parser)
    return node_command.main(parser.parse_args(list(argv)))


def test_actions_are_stop_and_start() -> None:
    parser = argparse.ArgumentParser()
    node_command.add_arguments(parser)
    assert parser.parse_args(["stop", "node-1"]).action == "stop"
    with pytest.raises(SystemExit):
        parser.parse_args(["pause", "node-1"])


def test_an_unreachable_apiserver_is_reported(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    assert _run("stop", "node-1", "--server", url) == 1
    assert capsys.readouterr().err.startswith(f"error: cannot reach the APIServer at {url}")


def test_a_bad_kubeconfig_is_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _run("start", "node-1", "--kubeconfig", str(tmp_path / "missing")) == 1
    assert "error: cannot read kubeconfig" in capsys.readouterr().err
