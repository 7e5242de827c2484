"""Simulated containers: behaviour from annotations, image references, back-off, states and logs."""

from __future__ import annotations

import asyncio

import pytest

from kubelet_sim.runtime import (
    BACKOFF_INITIAL,
    BACKOFF_MAX,
    Behaviour,
    ContainerLog,
    SimContainer,
    State,
    behaviour,
    go_duration,
    image_id,
    normalize_image,
)

DEFAULT = Behaviour(startup=1.5, run=None, exit_code=0, ready_after=0.0, shutdown=0.0, log=())


@pytest.mark.parametrize(("annotations", "container", "init", "expected"), [
    pytest.param({}, "c", False, DEFAULT, id="defaults"),
    pytest.param({"kubesim.io/startup-seconds": "3", "kubesim.io/run-seconds": "5",
                  "kubesim.io/exit-code": "2", "kubesim.io/ready-after-seconds": "0.5",
                  "kubesim.io/shutdown-seconds": "7",
                  "kubesim.io/log": "one\ntwo"}, "c", False,
                 Behaviour(3.0, 5.0, 2, 0.5, 7.0, ("one", "two")), id="pod-wide"),
    pytest.param({"kubesim.io/exit-code": "1", "kubesim.io/exit-code.c": "4"}, "c", False,
                 Behaviour(1.5, None, 4, 0.0, 0.0, ()), id="per-container-wins"),
    pytest.param({"kubesim.io/exit-code": "1"}, "other", False, Behaviour(1.5, None, 1, 0.0, 0.0, ()),
                 id="pod-wide-for-others"),
    pytest.param({"kubesim.io/run-seconds": "9"}, "init", True, Behaviour(1.5, 0.0, 0, 0.0, 0.0, ()),
                 id="init-ignores-pod-wide-and-exits"),
    pytest.param({"kubesim.io/run-seconds.init": "2", "kubesim.io/exit-code.init": "1"}, "init", True,
                 Behaviour(1.5, 2.0, 1, 0.0, 0.0, ()), id="init-per-container"),
])
def test_behaviour_comes_from_annotations(annotations: dict[str, str], container: str, init: bool,
                                          expected: Behaviour) -> None:
    result, problems = behaviour(annotations, container, init=init, default_startup=1.5)
    assert (result, problems) == (expected, [])


@pytest.mark.parametrize(("key", "value", "message"), [
    pytest.param("kubesim.io/run-seconds", "soon", 'annotation kubesim.io/run-seconds: invalid value "soon": '
                                                   "must be a non-negative number of seconds",
                 id="not-a-number"),
    pytest.param("kubesim.io/startup-seconds", "-1", "kubesim.io/startup-seconds: invalid value \"-1\"",
                 id="negative"),
    pytest.param("kubesim.io/ready-after-seconds", "nan", "invalid value \"nan\"", id="nan"),
    pytest.param("kubesim.io/exit-code", "300", 'annotation kubesim.io/exit-code: invalid value "300": '
                                                "must be an integer from 0 to 255", id="exit-code-range"),
])
def test_bad_annotations_are_reported_and_defaulted(key: str, value: str, message: str) -> None:
    result, problems = behaviour({key: value}, "c", init=False, default_startup=1.5)
    assert result == DEFAULT
    assert len(problems) == 1 and message in problems[0]


@pytest.mark.parametrize(("image", "normalized", "repository"), [
    pytest.param("nginx", "docker.io/library/nginx:latest", "docker.io/library/nginx", id="bare"),
    pytest.param("nginx:1.25", "docker.io/library/nginx:1.25", "docker.io/library/nginx", id="tagged"),
    pytest.param("bitnami/redis:7", "docker.io/bitnami/redis:7", "docker.io/bitnami/redis", id="user-repo"),
    pytest.param("registry.k8s.io/pause:3.10", "registry.k8s.io/pause:3.10", "registry.k8s.io/pause",
                 id="registry"),
    pytest.param("localhost:5000/app", "localhost:5000/app:latest", "localhost:5000/app", id="registry-port"),
    pytest.param("nginx@sha256:abc", "docker.io/library/nginx@sha256:abc", "docker.io/library/nginx",
                 id="digest"),
])
def test_images_are_reported_as_containerd_does(image: str, normalized: str, repository: str) -> None:
    assert normalize_image(image) == normalized
    ref = image_id(image)
    assert ref.startswith(f"{repository}@sha256:") and len(ref.rpartition(":")[2]) == 64
    assert image_id(image) == ref


@pytest.mark.parametrize(("seconds", "text"), [
    pytest.param(0.0, "0s", id="zero"), pytest.param(0.5124, "512ms", id="millis"),
    pytest.param(1.5, "1.5s", id="fraction"), pytest.param(10.0, "10s", id="whole"),
    pytest.param(80.0, "1m20s", id="minutes"), pytest.param(300.0, "5m0s", id="cap"),
    pytest.param(3725.25, "1h2m5.25s", id="hours"),
])
def test_durations_print_as_go_does(seconds: float, text: str) -> None:
    assert go_duration(seconds) == text


def test_crash_loop_back_off_follows_the_kubelet() -> None:
    """First restart at once; then 10 s doubling to 5 minutes; ten quiet minutes start over."""
    c = SimContainer("c", "busybox")
    waits = []
    now = 0.0
    for _ in range(8):
        wait = c.restart_delay(now)
        waits.append(wait)
        now += wait
        c.note_restart(now - wait, now)
        now += 1.0  # the container runs a second and exits again
    assert waits == [0.0, 10.0, 20.0, 40.0, 80.0, 160.0, 300.0, 300.0]
    assert c.restart_delay(now + 2 * BACKOFF_MAX + 1) == 0.0
    c.note_restart(now + 2 * BACKOFF_MAX + 1, now + 2 * BACKOFF_MAX + 1)
    assert c.backoff == BACKOFF_INITIAL


def test_container_states_and_status_across_a_restart() -> None:
    c = SimContainer("app", "nginx:1.25")
    waiting = c.status_wire()
    assert waiting == {"name": "app", "state": {"waiting": {"reason": "ContainerCreating"}}, "lastState": {},
                       "ready": False, "restartCount": 0, "image": "nginx:1.25", "imageID": "",
                       "started": False}
    c.start(DEFAULT, 0.0, 1000.0)
    c.ready = True
    running = c.status_wire()
    assert running["state"] == {"running": {"startedAt": c.started_at}}
    assert (running["ready"], running["started"], running["image"]) == (
        True, True, "docker.io/library/nginx:1.25")
    assert running["containerID"].startswith("containerd://") and running["imageID"] == image_id("nginx:1.25")
    first_id = c.container_id
    c.exit(3, 1001.0)
    terminated = c.status_wire()["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"], terminated["containerID"]) == (3, "Error", first_id)
    c.wait("CrashLoopBackOff", "back-off 10s restarting failed container=app pod=web_default(uid)")
    crashed = c.status_wire()
    assert crashed["state"] == {"waiting": {
        "reason": "CrashLoopBackOff",
        "message": "back-off 10s restarting failed container=app pod=web_default(uid)"}}
    assert crashed["lastState"]["terminated"]["exitCode"] == 3
    assert (crashed["started"], crashed["containerID"]) == (False, first_id)
    c.start(DEFAULT, 10.0, 1011.0)
    restarted = c.status_wire()
    assert restarted["restartCount"] == 1 and restarted["containerID"] != first_id
    assert restarted["lastState"]["terminated"]["containerID"] == first_id
    assert c.previous_log is not None and c.previous_log.closed
    assert [line for _, line in c.previous_log.lines][-1] == "kubesim: container app exited with code 3"


def test_an_immediate_restart_keeps_the_terminated_instance_as_last_state() -> None:
    c = SimContainer("app", "busybox")
    c.start(DEFAULT, 0.0, 0.0)
    c.exit(0, 1.0)
    c.start(DEFAULT, 1.0, 1.0)
    status = c.status_wire()
    assert status["restartCount"] == 1
    assert status["lastState"]["terminated"]["reason"] == "Completed"
    assert c.state is State.RUNNING


async def test_a_log_follower_gets_new_lines_until_the_log_closes() -> None:
    log = ContainerLog()
    log.write("first", 1.0)
    got: list[str] = []
    seen_first = asyncio.Event()

    async def follow() -> None:
        async for _, line in log.read(0, follow=True):
            got.append(line)
            seen_first.set()

    follower = asyncio.create_task(follow())
    await seen_first.wait()
    log.write("second\nthird", 2.0)
    log.close()
    await asyncio.wait_for(follower, 5)
    assert got == ["first", "second", "third"]
    assert [line async for _, line in log.read(1, follow=False)] == ["second", "third"]


def test_a_log_keeps_its_last_lines_only() -> None:
    log = ContainerLog()
    for i in range(1500):
        log.write(str(i), float(i))
    assert len(log.lines) == 1000 and log.lines[0][1] == "500"
