"""The kubelet's prober (kubelet_sim.prober) on virtual time: timing fields, thresholds, startup gating."""

from __future__ import annotations

from typing import Any

import pytest

from kubelet_sim.prober import ContainerProber, Probe, Result, parse_schedule, simulated_check
from machinery.client.clock import FakeClock


class Recorder:
    def __init__(self) -> None:
        self.log: list[tuple[float, str]] = []
        self.clock = FakeClock()

    def note(self, what: str) -> None:
        self.log.append((self.clock.now(), what))


def _prober(rec: Recorder, probes: dict[str, dict[str, Any]], outcomes: dict[str, Any]) -> ContainerProber:
    def check(probe: Probe, elapsed: float) -> Result:
        passes = outcomes[probe.kind](elapsed)
        return Result(True) if passes else Result(False, "HTTP probe failed with statuscode: 503")
    return ContainerProber(
        rec.clock, 0.0, {k: Probe.from_wire(k, v) for k, v in probes.items()},  # type: ignore[arg-type]
        check, lambda: rec.note("started"), lambda ready: rec.note(f"ready={ready}"),
        lambda why, grace: rec.note(f"kill: {why} ({grace})"), lambda message: rec.note(message))


def test_readiness_waits_for_the_initial_delay_and_the_success_threshold() -> None:
    rec = Recorder()
    prober = _prober(rec, {"readiness": {"initialDelaySeconds": 5, "periodSeconds": 2, "successThreshold": 2,
                                         "failureThreshold": 2, "httpGet": {"port": 80}}},
                     {"readiness": lambda t: t < 7 or t >= 11})
    prober.start()
    rec.clock.advance(30)
    failed = "Readiness probe failed: HTTP probe failed with statuscode: 503"
    # 5 passes once (not enough), 7 and 9 fail, 11 and 13 pass: ready at the second success in a row.
    assert rec.log == [(0.0, "started"), (7.0, failed), (9.0, failed), (13.0, "ready=True")]


def test_readiness_flips_both_ways() -> None:
    rec = Recorder()
    prober = _prober(rec, {"readiness": {"periodSeconds": 1, "failureThreshold": 2, "httpGet": {"port": 80}}},
                     {"readiness": lambda t: t < 3 or t >= 6})
    prober.start()
    rec.clock.advance(10)
    flips = [entry for entry in rec.log if entry[1].startswith("ready")]
    assert flips == [(0.0, "ready=True"), (4.0, "ready=False"), (6.0, "ready=True")]


def test_liveness_kills_after_the_failure_threshold_and_stops_probing() -> None:
    rec = Recorder()
    prober = _prober(rec, {"liveness": {"periodSeconds": 3, "failureThreshold": 3, "terminationGracePeriodSeconds": 7,
                                        "tcpSocket": {"port": 80}}},
                     {"liveness": lambda t: t < 4})
    prober.start()
    rec.clock.advance(60)
    kills = [entry for entry in rec.log if entry[1].startswith("kill")]
    assert kills == [(12.0, "kill: failed liveness probe, will be restarted (7)")]
    assert prober.stopped
    assert rec.log[-1] == kills[0]


def test_startup_gates_readiness_and_liveness() -> None:
    rec = Recorder()
    prober = _prober(rec, {"startup": {"periodSeconds": 1, "failureThreshold": 30, "exec": {"command": ["true"]}},
                           "readiness": {"periodSeconds": 5, "httpGet": {"port": 80}},
                           "liveness": {"periodSeconds": 5, "httpGet": {"port": 80}}},
                     {"startup": lambda t: t >= 4, "readiness": lambda t: True, "liveness": lambda t: True})
    prober.start()
    rec.clock.advance(3)
    assert not prober.started and not prober.ready
    rec.clock.advance(10)
    assert (4.0, "started") in rec.log and (4.0, "ready=True") in rec.log


def test_a_startup_probe_that_never_passes_kills() -> None:
    rec = Recorder()
    prober = _prober(rec, {"startup": {"periodSeconds": 2, "failureThreshold": 3, "exec": {"command": ["true"]}}},
                     {"startup": lambda t: False})
    prober.start()
    rec.clock.advance(20)
    assert rec.log[-1] == (4.0, "kill: failed startup probe, will be restarted (None)")


@pytest.mark.parametrize(("text", "steps"), [
    pytest.param("pass", [(0.0, True)], id="pass"),
    pytest.param("fail", [(0.0, False)], id="fail"),
    pytest.param("20:pass, 0:fail", [(0.0, False), (20.0, True)], id="steps-sorted"),
    pytest.param("5s:fail", [(5.0, False)], id="seconds-suffix"),
    pytest.param("soon:pass", None, id="bad-time"),
    pytest.param("3:maybe", None, id="bad-outcome"),
])
def test_probe_schedules(text: str, steps: list[tuple[float, bool]] | None) -> None:
    assert parse_schedule(text) == steps


def test_simulated_checks_read_annotations_per_container() -> None:
    annotations = {"kubesim.io/liveness-probe": "0:pass,10:fail", "kubesim.io/readiness-probe.side": "fail"}
    live = Probe.from_wire("liveness", {"tcpSocket": {"port": 8080}})
    ready = Probe.from_wire("readiness", {"httpGet": {"port": 80}})
    app = simulated_check(annotations, "app", "10.0.0.7", default_ready_after=2.0)
    assert app(live, 9.0) == Result(True)
    assert app(live, 10.0) == Result(False, "dial tcp 10.0.0.7:8080: connect: connection refused")
    assert app(ready, 1.0) == Result(False, "HTTP probe failed with statuscode: 503")  # before ready-after
    assert app(ready, 2.0) == Result(True)
    side = simulated_check(annotations, "side", "10.0.0.7")
    assert side(ready, 100.0).success is False


def test_probe_defaults_and_bounds() -> None:
    probe = Probe.from_wire("liveness", {"httpGet": {"port": 80}, "successThreshold": 5, "periodSeconds": 0})
    assert (probe.initial_delay, probe.period, probe.timeout, probe.success_threshold, probe.failure_threshold) == (
        0.0, 10.0, 1.0, 1, 3)
