"""Process scaffolding (``machinery.process``): flags, log lines, health endpoints, signals, exit codes."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from collections.abc import Iterator

import httpx
import pytest

from machinery import process
from machinery.process import Runtime, build_parser


@pytest.fixture(autouse=True)
def restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


def test_leader_election_flags_have_kubernetes_names_and_defaults() -> None:
    parser = build_parser("kube-scheduler", lease_name="kube-scheduler")
    args = parser.parse_args([])
    assert (args.leader_elect, args.leader_elect_lease_duration, args.leader_elect_renew_deadline,
            args.leader_elect_retry_period) == (True, 15.0, 10.0, 2.0)
    assert (args.leader_elect_resource_name, args.leader_elect_resource_namespace) == \
        ("kube-scheduler", "kube-system")
    args = parser.parse_args(["--leader-elect=false", "--leader-elect-lease-duration=3s",
                              "--leader-elect-renew-deadline", "2s", "--leader-elect-retry-period=500ms",
                              "-v", "4", "--health-port", "0"])
    assert (args.leader_elect, args.leader_elect_lease_duration, args.leader_elect_retry_period, args.v) == \
        (False, 3.0, 0.5, 4)


def test_components_without_a_lease_have_no_leader_flags() -> None:
    args = build_parser("kubelet_sim", add_flags=lambda p: p.add_argument("--nodes", type=int)).parse_args(
        ["--nodes", "3"])
    assert args.nodes == 3
    assert not hasattr(args, "leader_elect")


@pytest.mark.parametrize("argv", [
    pytest.param(["--leader-elect=maybe"], id="bad-bool"),
    pytest.param(["--leader-elect-retry-period=2x"], id="bad-duration"),
    pytest.param(["--health-port=70000"], id="port-out-of-range"),
])
def test_bad_flags_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        build_parser("x", lease_name="x").parse_args(argv)
    assert exc.value.code == 2


def test_log_line_format() -> None:
    formatter = process._Formatter("kube-scheduler")

    def line(msg: str, level: int = logging.INFO, **extra: object) -> str:
        record = logging.LogRecord("x", level, __file__, 1, msg, (), None)
        record.__dict__.update(extra)
        return formatter.format(record)

    with_step = line("bound pod default/web to node-2", step=10)
    time_part, rest = with_step.split(" ", 1)
    assert rest == "kube-scheduler [step 10] bound pod default/web to node-2"
    assert time_part.endswith("Z") and "T" in time_part
    assert line("started").split(" ", 1)[1] == "kube-scheduler started"
    assert line("lost it", logging.WARNING).split(" ", 1)[1] == "kube-scheduler warning: lost it"


def run(main: process.Main, *argv: str, lease_name: str | None = None) -> int:
    return process.run("testcomp", main, argv=["--master", "http://127.0.0.1:9", *argv], lease_name=lease_name)


def test_health_endpoints_and_normal_exit() -> None:
    answers: dict[str, tuple[int, str]] = {}

    async def main(rt: Runtime) -> None:
        rt.add_readiness_check("warm", lambda: "ready" in answers)
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{rt.health_port}") as http:
            for path in ["/healthz", "/readyz", "/nope"]:
                r = await http.get(path)
                answers[path] = (r.status_code, r.text)
            answers["ready"] = (0, "")
            r = await http.get("/readyz")
            answers["/readyz again"] = (r.status_code, r.text)
            r = await http.get("/metrics")
            answers["/metrics"] = (r.status_code, r.headers["content-type"])
            answers["metrics-body"] = (0, r.text)

    assert run(main) == 0
    assert answers["/healthz"] == (200, "ok")
    assert answers["/readyz"] == (503, "readyz check failed: warm")
    assert answers["/readyz again"] == (200, "ok")
    assert answers["/nope"][0] == 404
    assert answers["/metrics"][0] == 200 and answers["/metrics"][1].startswith("text/plain")
    assert "workqueue_depth" in answers["metrics-body"][1]


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["sigterm", "sigint"])
def test_signal_cancels_main_and_exits_0(sig: signal.Signals) -> None:
    cleaned_up = []

    async def main(rt: Runtime) -> None:
        os.kill(os.getpid(), sig)
        try:
            await asyncio.Event().wait()
        finally:
            cleaned_up.append(True)

    assert run(main) == 0
    assert cleaned_up == [True]


def test_failing_main_exits_1() -> None:
    async def main(rt: Runtime) -> None:
        raise RuntimeError("broken component")

    assert run(main) == 1


def test_lead_without_election_runs_the_work_directly() -> None:
    ran = []

    async def main(rt: Runtime) -> None:
        async def work() -> None:
            ran.append(rt.identity)

        await rt.lead(work)

    assert run(main, "--leader-elect=false", lease_name="testcomp") == 0
    assert len(ran) == 1 and "_" in ran[0]


def test_missing_connection_settings_exit_2(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)

    async def main(rt: Runtime) -> None:
        raise AssertionError("must not run")

    with pytest.raises(SystemExit) as exc:
        process.run("testcomp", main, argv=[])
    assert exc.value.code == 2
    assert "neither --kubeconfig nor --master" in capsys.readouterr().err


def test_inconsistent_leader_timings_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    async def main(rt: Runtime) -> None:
        raise AssertionError("must not run")

    with pytest.raises(SystemExit) as exc:
        run(main, "--leader-elect-lease-duration=5s", lease_name="testcomp")
    assert exc.value.code == 2
    assert "leaseDuration must be greater than renewDeadline" in capsys.readouterr().err
