"""The kubelet API of kubelet_sim, served on loopback: logs, exec, attach, port-forward, node stop/start, health.

The runtime is a fake here (the simulated and process runtimes have their own
tests); the protocols are spoken by machinery.httpstream's client.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any

import httpx
import pytest
from kubernetes.client import V1Status

from kubelet_sim.node import SimNode
from kubelet_sim.pods import SimPod
from kubelet_sim.profile import load_profile
from kubelet_sim.runtime import Behaviour, SimContainer
from kubelet_sim.runtimes import sandbox_id
from kubelet_sim.server import KubeletServer
from kubelet_sim.streaming.portforward import Channel, PortForwardError
from kubelet_sim.streaming.session import ExecError, Session
from kubelet_sim.views import PodView
from machinery.api.kinds import object_key
from machinery.client import Forbidden
from machinery.httpstream.client import SpdyPortForwarder, UpgradeFailed, exec_spdy, exec_websocket, upgrade
from machinery.httpstream.http1 import HeadError, read_response_head
from machinery.httpstream.spdy import SpdyConnection, StreamReset
from machinery.httpstream.wsstream import TunnelStream, WebSocket

RUN = Behaviour(0.0, None, 0, 0.0, 0.0, ("hello", "world"))


class FakePods:
    def __init__(self, pods: dict[tuple[str, str], SimPod]) -> None:
        self._pods = pods

    def pod(self, namespace: str, name: str) -> SimPod | None:
        return self._pods.get((namespace, name))


class FakeRuntime:
    """Exec echoes its command and stdin; port-forward echoes on port 80 and refuses the rest."""

    name = "fake"
    runs_processes = False

    async def exec(self, pod: SimPod, container: SimContainer, command: Sequence[str], session: Session) -> int:
        if command[:1] == ["boom"]:
            raise ExecError("boom failed")
        if command[:1] == ["refused"]:
            # What a runtime reading the Pod's objects with the wrong identity got (a bug, not an ExecError).
            raise Forbidden(V1Status(code=403, reason="Forbidden", message='configmaps "c" is forbidden'))
        await session.write_out(" ".join(command).encode())
        if session.tty:
            size = await asyncio.wait_for(session.resizes.get(), 5)
            await session.write_out(f" {size.width}x{size.height}".encode())
        if session.stdin is not None:
            while chunk := await session.stdin.read():
                await session.write_err(chunk.upper())
        code = re.search(r"\d+$", command[-1]) if command else None
        return int(code.group(0)) if code else 0

    async def attach(self, pod: SimPod, container: SimContainer, session: Session) -> int:
        await session.write_out(b"attached")
        return 0

    async def port_forward(self, pod: SimPod, port: int, channel: Channel) -> None:
        if port != 80:
            raise PortForwardError(f"nothing listens on {port}")
        while data := await channel.read():
            await channel.write(data[::-1])
        await channel.close()

    async def close(self) -> None:
        return


class FakeNodes:
    def __init__(self) -> None:
        planned = load_profile().plan(1)[0]
        recorder: Any = None
        self.node = SimNode(planned, 0, recorder, {})
        self.nodes = {self.node.name: self.node}

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
    pod = SimPod(object_key("default", name), name, SimNode(planned, 0, recorder, {}), view,
                 [c for c in containers if c.init], [c for c in containers if not c.init], {}, frozenset())
    pod.sandbox_ready = True
    return pod


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
    server = KubeletServer(pods, nodes, FakeRuntime())  # type: ignore[arg-type]
    port = await server.start(0)
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=5) as client:
        yield client, containers, nodes, server
    await server.close()


Fixture = tuple[httpx.AsyncClient, dict[str, SimContainer], FakeNodes, KubeletServer]


async def test_health(kubelet_api: Fixture) -> None:
    client, _, _, _ = kubelet_api
    response = await client.get("/healthz")
    assert (response.status_code, response.text) == (200, "ok")


async def test_short_answers_keep_the_connection_for_the_next_request(kubelet_api: Fixture) -> None:
    """A scraper's connection serves request after request (over TLS, that spares a handshake per scrape);
    a streamed answer, or a client asking for it, closes it."""
    client, _, _, server = kubelet_api
    port = int(str(client.base_url).rsplit(":", 1)[1])
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        for path in ("/healthz", "/nosuch", "/healthz"):
            writer.write(f"GET {path} HTTP/1.1\r\nHost: k\r\n\r\n".encode())
            head = await read_response_head(reader)
            assert head.headers.get("connection") is None
            await reader.readexactly(int(head.headers.get("content-length") or 0))
        # A client leaving between requests is not answered (no 400 on its way out).
        other_reader, other_writer = await asyncio.open_connection("127.0.0.1", port)
        other_writer.write(b"GET /healthz HTTP/1.1\r\nHost: k\r\n\r\n")
        head = await read_response_head(other_reader)
        await other_reader.readexactly(int(head.headers.get("content-length") or 0))
        other_writer.write_eof()
        assert await asyncio.wait_for(other_reader.read(), 5) == b""
        other_writer.close()
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: k\r\nConnection: close\r\n\r\n")
        head = await read_response_head(reader)
        assert head.headers.get("connection") == "close"
        await reader.readexactly(int(head.headers.get("content-length") or 0))
        assert await asyncio.wait_for(reader.read(), 5) == b""
    finally:
        writer.close()
    assert server.open_connections == 0 or await _drained(server)


async def _drained(server: KubeletServer) -> bool:
    for _ in range(100):
        if server.open_connections == 0:
            return True
        await asyncio.sleep(0.01)
    return False


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


# --- exec, attach, port-forward ----------------------------------------------------------------------


def _url(client: httpx.AsyncClient, path: str) -> str:
    return f"{client.base_url}{path}"


@pytest.mark.parametrize("protocols", [
    pytest.param(("v5.channel.k8s.io",), id="v5"),
    pytest.param(("v4.channel.k8s.io",), id="v4"),
    pytest.param(("v4.base64.channel.k8s.io",), id="v4-base64"),
])
async def test_exec_over_websocket(kubelet_api: Fixture, protocols: tuple[str, ...]) -> None:
    client, _, _, _ = kubelet_api
    # Only v5 can end stdin (its close signal); with v4 the command would wait for it forever.
    v5 = protocols[0].startswith("v5")
    result = await exec_websocket(
        _url(client, "/exec/default/web/app?command=sh&command=-c&command=exit+3&output=1&error=1"
             + ("&input=1" if v5 else "")), stdin=b"in" if v5 else None, protocols=protocols)
    assert result.protocol == protocols[0]
    assert result.stdout == b"sh -c exit 3"
    assert result.stderr == (b"IN" if protocols[0].startswith("v5") else b"")
    assert result.exit_code == 3
    assert result.status == {
        "metadata": {}, "status": "Failure", "reason": "NonZeroExitCode",
        "message": "command terminated with non-zero exit code: error executing command [sh -c exit 3], exit code 3",
        "details": {"causes": [{"reason": "ExitCode", "message": "3"}]}}


@pytest.mark.parametrize(("protocol", "error"), [
    pytest.param("v4.channel.k8s.io", b'{"metadata":{},"status":"Success"}', id="v4-json"),
    pytest.param("v3.channel.k8s.io", b"", id="v3-message-only"),
    pytest.param("channel.k8s.io", b"", id="v1"),
])
async def test_exec_over_spdy(kubelet_api: Fixture, protocol: str, error: bytes) -> None:
    client, _, _, _ = kubelet_api
    result = await exec_spdy(_url(client, "/exec/default/web/app?command=echo&output=1&error=1&input=1"),
                             stdin=b"abc", protocols=(protocol, "v9.channel.k8s.io"))
    assert result.protocol == protocol
    assert result.stdout == b"echo"
    assert result.error == error
    if protocol != "channel.k8s.io":  # v1 closes stdin as soon as the streams exist
        assert result.stderr == b"ABC"


async def test_exec_with_a_tty_gets_the_terminal_size_and_no_stderr(kubelet_api: Fixture) -> None:
    client, _, _, _ = kubelet_api
    path = "/exec/default/web/app?command=sh&output=1&error=1&tty=1"
    spdy_result = await exec_spdy(_url(client, path), tty=True, resize=(132, 43))
    assert spdy_result.stdout == b"sh 132x43"
    ws_result = await exec_websocket(_url(client, path), resize=(90, 30))
    assert ws_result.stdout == b"sh 90x30"


async def test_exec_failures_that_are_not_exit_codes_are_internal_errors(kubelet_api: Fixture) -> None:
    client, _, _, _ = kubelet_api
    result = await exec_websocket(_url(client, "/exec/default/web/app?command=boom&output=1"))
    assert result.status == {"metadata": {}, "status": "Failure", "code": 500, "reason": "InternalError",
                             "message": "Internal error occurred: error executing command in container: boom failed",
                             "details": {"causes": [{"message": "error executing command in container: boom failed"}]}}


async def test_any_other_runtime_error_is_an_internal_error_not_a_silent_close(kubelet_api: Fixture) -> None:
    # client-go takes an error stream that ends with no Status for success: kubectl exited 0, printing nothing.
    client, _, _, _ = kubelet_api
    cause = 'error executing command in container: configmaps "c" is forbidden'
    expected = {"metadata": {}, "status": "Failure", "code": 500, "reason": "InternalError",
                "message": f"Internal error occurred: {cause}", "details": {"causes": [{"message": cause}]}}
    path = "/exec/default/web/app?command=refused&output=1&error=1"
    assert (await exec_websocket(_url(client, path))).status == expected
    spdy_result = await exec_spdy(_url(client, path))
    assert spdy_result.status == expected


@pytest.mark.parametrize(("path", "kind", "code", "message"), [
    pytest.param("/exec/default/nope/app?command=ls&output=1", "websocket", 404, "pod does not exist", id="no-pod"),
    pytest.param("/exec/default/web/side?command=ls&output=1", "spdy", 500, 'container not found ("side")',
                 id="not-running"),
    pytest.param("/exec/default/web/app?command=ls", "websocket", 400,
                 "you must specify at least 1 of stdin, stdout, stderr", id="no-streams"),
    pytest.param("/exec/default/web/other-uid/app?command=ls&output=1", "spdy", 404, "pod not found",
                 id="other-uid"),
])
async def test_exec_refusals_before_the_upgrade(kubelet_api: Fixture, path: str, kind: str, code: int,
                                                message: str) -> None:
    client, _, _, _ = kubelet_api
    with pytest.raises(UpgradeFailed) as caught:
        await upgrade(_url(client, path), kind=kind, protocols=("v4.channel.k8s.io",))
    assert (caught.value.code, caught.value.body.decode().strip()) == (code, message)


async def test_exec_without_an_upgrade_or_a_common_protocol(kubelet_api: Fixture) -> None:
    client, _, _, _ = kubelet_api
    plain = await client.post("/exec/default/web/app", params={"command": "ls", "output": "1"})
    assert (plain.status_code, plain.text.strip()) == (400, "Upgrade request required")
    with pytest.raises(UpgradeFailed) as caught:
        await upgrade(_url(client, "/exec/default/web/app?command=ls&output=1"), kind="spdy",
                      protocols=("v9.channel.k8s.io",))
    assert caught.value.code == 403
    assert caught.value.headers.get_all("x-accepted-stream-protocol-versions") == [
        "v4.channel.k8s.io", "v3.channel.k8s.io", "v2.channel.k8s.io", "channel.k8s.io"]


async def test_a_stopped_node_does_not_answer(kubelet_api: Fixture) -> None:
    client, _, nodes, _ = kubelet_api
    nodes.node.stopped = True
    pods = kubelet_api[3]._pods  # the pods' node is another SimNode: stop the Pod's own
    pod = pods.pod("default", "web")
    assert pod is not None
    pod.node.stopped = True
    with pytest.raises((ConnectionError, HeadError, asyncio.IncompleteReadError)):
        await upgrade(_url(client, "/exec/default/web/app?command=ls&output=1"), kind="spdy",
                      protocols=("v4.channel.k8s.io",))
    with pytest.raises(httpx.TransportError):
        await client.get("/containerLogs/default/web/app")


async def test_attach(kubelet_api: Fixture) -> None:
    client, _, _, _ = kubelet_api
    result = await exec_spdy(_url(client, "/attach/default/web/app?output=1&error=1"))
    assert (result.stdout, result.exit_code) == (b"attached", 0)


async def test_port_forward_over_spdy_reports_errors_and_stays_usable(kubelet_api: Fixture) -> None:
    client, _, _, _ = kubelet_api
    forwarder = await SpdyPortForwarder.connect(_url(client, "/portForward/default/web"))
    try:
        data, error = await forwarder.open(81)
        message = await asyncio.wait_for(error.read_all(), 5)
        assert message.decode().startswith(f"error forwarding port 81 to pod {sandbox_id('web')}, uid : "
                                           "nothing listens on 81")
        assert await asyncio.wait_for(data.read_all(), 5) == b""
        # Two connections at once on the same SPDY connection, after the failure.
        first, first_error = await forwarder.open(80)
        second, _ = await forwarder.open(80)
        await first.write(b"abc")
        await second.write(b"xyz")
        await first.close()
        await second.close()
        assert await asyncio.wait_for(first.read_all(), 5) == b"cba"
        assert await asyncio.wait_for(second.read_all(), 5) == b"zyx"
        assert await asyncio.wait_for(first_error.read_all(), 5) == b""
    finally:
        await forwarder.close()


async def test_port_forward_streams_need_a_port_and_a_type(kubelet_api: Fixture) -> None:
    client, _, _, _ = kubelet_api
    forwarder = await SpdyPortForwarder.connect(_url(client, "/portForward/default/web"))
    try:
        for headers in ({"streamtype": "data"}, {"port": "0", "streamtype": "data"},
                        {"port": "80", "streamtype": "stdin"}, {"port": "http", "streamtype": "error"}):
            with pytest.raises(StreamReset):
                await forwarder.connection.open_stream(headers)
    finally:
        await forwarder.close()


async def test_port_forward_over_websocket_channels(kubelet_api: Fixture) -> None:
    client, _, _, _ = kubelet_api
    up = await upgrade(_url(client, "/portForward/default/web?port=80&port=81"), kind="websocket",
                       protocols=("v4.channel.k8s.io",))
    ws = WebSocket(up.reader, up.writer, server=False)
    got = [await ws.recv() for _ in range(4)]
    # Each channel starts with its port, little-endian.
    assert [m[1] for m in got] == [b"\x00P\x00", b"\x01P\x00", b"\x02Q\x00", b"\x03Q\x00"]
    assert (await ws.recv())[1].startswith(b"\x03error forwarding port 81")  # type: ignore[index]
    await ws.send(b"\x00hello")
    assert await ws.recv() == (False, b"\x00olleh")
    await ws.close()


async def test_port_forward_over_a_spdy_tunnel(kubelet_api: Fixture) -> None:
    client, _, _, _ = kubelet_api
    up = await upgrade(_url(client, "/portForward/default/web"), kind="websocket",
                       protocols=("SPDY/3.1+portforward.k8s.io",))
    connection = SpdyConnection(TunnelStream(WebSocket(up.reader, up.writer, server=False)), server=False)
    reading = asyncio.create_task(connection.run())
    try:
        forwarder = SpdyPortForwarder(connection, reading)
        data, _ = await forwarder.open(80)
        await data.write(b"tunnel")
        await data.close()
        assert await asyncio.wait_for(data.read_all(), 5) == b"lennut"
    finally:
        await connection.close()
        reading.cancel()


async def test_port_forward_over_websocket_needs_ports(kubelet_api: Fixture) -> None:
    client, _, _, _ = kubelet_api
    with pytest.raises(UpgradeFailed) as caught:
        await upgrade(_url(client, "/portForward/default/web"), kind="websocket", protocols=("v4.channel.k8s.io",))
    assert (caught.value.code, caught.value.body.decode().strip()) == (400, 'query parameter "port" is required')
