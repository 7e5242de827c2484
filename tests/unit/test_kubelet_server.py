"""The kubelet API of kubelet_sim, served on loopback: container logs, node stop/start, health."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from kubelet_sim.node import SimNode
from kubelet_sim.pods import SimPod
from kubelet_sim.profile import load_profile
from kubelet_sim.runtime import Behaviour, SimContainer
from kubelet_sim.server import KubeletServer
from kubelet_sim.views import PodView
from machinery.api.kinds import object_key

RUN = Behaviour(0.0, None, 0, 0.0, 0.0, ("hello", "world"))


class FakePods:
    def __init__(self, pods: dict[tuple[str, str], SimPod]) -> None:
        self._pods = pods

    def pod(self, namespace: str, name: str) -> SimPod | None:
        return self._pods.get((namespace, name))


class FakeNodes:
    def __init__(self) -> None:
        planned = load_profile().plan(1)[0]
        recorder: Any = None
        self.node = SimNode(planned, 0, recorder, {})

    def stop(self, name: str) -> SimNode | None:
        if name != self.node.name:
            return None
        self.node.stopped = True
        return self.node

    def start(self, name: str) -> SimNode | None:
        if name != self.node.name:
            return None
        self.node.stopped = False
        return self.node


def _pod(name: str, *containers: SimContainer) -> SimPod:
    view = PodView.model_validate({"metadata": {"name": name, "namespace": "default", "uid": name}})
    planned = load_profile().plan(1)[0]
    recorder: Any = None
    return SimPod(object_key("default", name), name, SimNode(planned, 0, recorder, {}), view,
                  [c for c in containers if c.init], [c for c in containers if not c.init], {}, frozenset())


@pytest.fixture
async def kubelet_api() -> AsyncIterator[tuple[httpx.AsyncClient, dict[str, SimContainer], FakeNodes,
                                               KubeletServer]]:
    running = SimContainer("app", "nginx")
    running.start(RUN, 0.0, time.time() - 100)
    waiting = SimContainer("side", "nginx")
    restarted = SimContainer("crash", "busybox")
    restarted.start(Behaviour(0.0, None, 0, 0.0, 0.0, ()), 0.0, time.time())
    restarted.exit(1, time.time())
    restarted.start(Behaviour(0.0, None, 0, 0.0, 0.0, ()), 0.0, time.time())
    crashed = SimContainer("loop", "busybox")
    crashed.start(Behaviour(0.0, None, 0, 0.0, 0.0, ("oops",)), 0.0, time.time())
    crashed.exit(2, time.time())
    crashed.wait("CrashLoopBackOff")
    containers = {"app": running, "side": waiting, "crash": restarted, "loop": crashed}
    pods = FakePods({("default", "web"): _pod("web", running, waiting),
                     ("default", "bad"): _pod("bad", restarted, crashed)})
    nodes = FakeNodes()
    server = KubeletServer(pods, nodes)  # type: ignore[arg-type]
    port = await server.start(0)
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=5) as client:
        yield client, containers, nodes, server
    await server.close()


Fixture = tuple[httpx.AsyncClient, dict[str, SimContainer], FakeNodes, KubeletServer]


async def test_health(kubelet_api: Fixture) -> None:
    client, _, _, _ = kubelet_api
    response = await client.get("/healthz")
    assert (response.status_code, response.text) == (200, "ok")


@pytest.mark.parametrize(("params", "lines"), [
    pytest.param({}, ["kubesim: container app started (image nginx, restart 0)", "hello", "world"], id="all"),
    pytest.param({"tailLines": "2"}, ["hello", "world"], id="tail"),
    pytest.param({"tailLines": "0"}, [], id="tail-zero"),
    pytest.param({"limitBytes": "10"}, ["kubesim: c"], id="limit"),
    pytest.param({"sinceSeconds": "10"}, [], id="since-excludes-old-lines"),
])
async def test_container_logs(kubelet_api: Fixture, params: dict[str, str], lines: list[str]) -> None:
    client, _, _, _ = kubelet_api
    response = await client.get("/containerLogs/default/web/app", params=params)
    assert response.status_code == 200
    assert response.headers["content-type"] == "text/plain; charset=utf-8"
    assert response.text.splitlines() == lines


async def test_timestamps_are_rfc3339_nano(kubelet_api: Fixture) -> None:
    client, _, _, _ = kubelet_api
    response = await client.get("/containerLogs/default/web/app",
                                params={"timestamps": "true", "tailLines": "1"})
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?Z world\n", response.text)


@pytest.mark.parametrize(("path", "params", "code", "message"), [
    pytest.param("/containerLogs/default/web/side", {}, 400,
                 'container "side" in pod "web" is waiting to start: ContainerCreating', id="waiting"),
    pytest.param("/containerLogs/default/web/app", {"previous": "true"}, 400,
                 'previous terminated container "app" in pod "web" not found', id="no-previous"),
    pytest.param("/containerLogs/default/nope/app", {}, 404, 'pod "default/nope" does not exist',
                 id="no-pod"),
    pytest.param("/containerLogs/default/web/nope", {}, 404,
                 'container "nope" not found in pod "default/web"', id="no-container"),
    pytest.param("/containerLogs/default/web/app", {"tailLines": "-1"}, 400,
                 "invalid value for tailLines: -1: must be at least 0", id="negative-tail"),
    pytest.param("/containerLogs/default/web/app", {"follow": "maybe"}, 400,
                 'invalid value for follow: "maybe": must be true or false', id="bad-flag"),
    pytest.param("/containerLogs/default/web/app", {"limitBytes": "x"}, 400,
                 'invalid value for limitBytes: "x": must be an integer', id="not-a-number"),
])
async def test_log_errors_say_why(kubelet_api: Fixture, path: str, params: dict[str, str], code: int,
                                  message: str) -> None:
    client, _, _, _ = kubelet_api
    response = await client.get(path, params=params)
    assert (response.status_code, response.text.strip()) == (code, message)


async def test_previous_logs_of_restarted_and_crashed_containers(kubelet_api: Fixture) -> None:
    client, _, _, _ = kubelet_api
    previous = await client.get("/containerLogs/default/bad/crash", params={"previous": "true"})
    assert previous.text.splitlines() == ["kubesim: container crash started (image busybox, restart 0)",
                                          "kubesim: container crash exited with code 1"]
    current = await client.get("/containerLogs/default/bad/crash")
    assert current.text.splitlines() == ["kubesim: container crash started (image busybox, restart 1)"]
    # While a crashed container waits to restart, its last instance is what both serve.
    for params in ({}, {"previous": "true"}):
        crashed = await client.get("/containerLogs/default/bad/loop", params=params)
        assert crashed.text.splitlines()[1:] == ["oops", "kubesim: container loop exited with code 2"]


async def test_follow_streams_new_lines_until_the_container_exits(kubelet_api: Fixture) -> None:
    client, containers, _, _ = kubelet_api
    app = containers["app"]
    async with client.stream("GET", "/containerLogs/default/web/app",
                             params={"follow": "true", "tailLines": "1"}) as response:
        lines = response.aiter_lines()
        assert await anext(lines) == "world"
        app.log.write("later", time.time())  # type: ignore[union-attr]
        assert await anext(lines) == "later"
        app.exit(0, time.time())
        rest = [line async for line in lines]
    assert rest == ["kubesim: container app exited with code 0"]


async def test_a_follower_that_leaves_frees_its_connection(kubelet_api: Fixture) -> None:
    client, _, _, server = kubelet_api
    async with client.stream("GET", "/containerLogs/default/web/app", params={"follow": "true"}) as response:
        assert await anext(response.aiter_lines())
        assert server.open_connections == 1
    # The server notices the closed connection while it waits for lines that never come.
    async with asyncio.timeout(5):
        while server.open_connections:
            await asyncio.sleep(0)


async def test_nodes_stop_and_start(kubelet_api: Fixture) -> None:
    client, _, nodes, _ = kubelet_api
    stopped = await client.post("/nodes/node-1/stop")
    assert (stopped.status_code, stopped.json()) == (200, {"node": "node-1", "stopped": True})
    assert nodes.node.stopped
    started = await client.post("/nodes/node-1/start")
    assert started.json() == {"node": "node-1", "stopped": False}
    missing = await client.post("/nodes/node-9/stop")
    assert (missing.status_code, missing.text.strip()) == (
        404, 'node "node-9" is not hosted by this kubelet_sim process')
    assert (await client.get("/nodes/node-1/stop")).status_code == 405
    assert (await client.get("/nodes/node-1")).status_code == 404


async def test_garbage_requests_get_a_clear_answer(kubelet_api: Fixture) -> None:
    client, _, _, _ = kubelet_api
    url = httpx.URL(str(client.base_url))
    reader, writer = await asyncio.open_connection(url.host, url.port)
    writer.write(b"NONSENSE\r\n\r\n")
    answer: Any = await asyncio.wait_for(reader.read(), 5)
    writer.close()
    assert answer.startswith(b"HTTP/1.1 400 Bad Request")
