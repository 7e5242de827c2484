"""The kubelet API of a kubelet_sim process: logs, exec, attach, port-forward, node stop/start, health.

One small HTTP/1.1 server, over TLS in the process (``--tls-cert-file`` or a
self-signed certificate), serves every node the process hosts (each Node's
``daemonEndpoints.kubeletEndpoint.Port`` points here), with the kubelet's
paths, which the APIServer proxies to. Every request is first authenticated
and authorized as the kubelet does it (:mod:`kubelet_sim.auth`: ``401
Unauthorized``, ``403 Forbidden (user=..., verb=..., resource=nodes,
subresource=...)``), once the node it is about is known; short answers keep
the connection open for the next request (a scraper's handshake is paid once):

- ``GET /containerLogs/{namespace}/{pod}/{container}`` with ``follow``,
  ``tailLines``, ``timestamps``, ``previous``, ``sinceSeconds``, ``sinceTime``
  and ``limitBytes``, as the kubelet serves it to the APIServer's ``pods/log``
  proxy: plain text, chunked; ``follow`` streams new lines until the container
  exits or the client goes away. Errors use the kubelet's wording
  (``container "c" in pod "web" is waiting to start: ContainerCreating``);
- ``/exec/{namespace}/{pod}[/{uid}]/{container}?command=...&input=1&output=1&error=1&tty=1``
  and ``/attach/...`` (GET or POST): upgraded to SPDY/3.1 or WebSocket
  (:mod:`kubelet_sim.streaming.remotecommand`), then run by the container
  runtime; ``/portForward/{namespace}/{pod}[/{uid}]``
  (:mod:`kubelet_sim.streaming.portforward`). Before an upgrade, errors use the
  kubelet's words and codes: ``pod does not exist`` (404), ``container not
  found ("c")`` (500) for a container that is not running;
- ``GET /nodes/{name}/metrics/resource`` and ``/nodes/{name}/stats/summary``
  (:mod:`kubelet_sim.stats`): a kubelet serves these for its one node at
  ``/metrics/resource`` and ``/stats/summary``; one kubelet_sim process serves
  many nodes on one port, so the node is in the path (the plain paths answer
  when the process hosts one node). The APIServer's ``nodes/{name}/proxy``
  adds it;
- ``POST /nodes/{name}/stop`` and ``POST /nodes/{name}/start`` make a node
  fail and recover (``kubesim node stop NAME`` calls them through the
  APIServer's ``nodes/NAME/proxy/stop``); they answer
  ``{"node": NAME, "stopped": true|false}``. While a node is stopped its
  kubelet is unreachable: requests about its Pods get no answer (the
  connection is closed at once, as a refused one would be), so the
  APIServer reports the failure promptly;
- ``GET /healthz``.

Written on asyncio streams rather than a framework: a streaming request owns
its connection after the upgrade, and the process must stay small at 5,000
nodes (an idle exec session costs a few kilobytes and wakes nothing).

Concurrency: one task per connection, all on the event loop
(:class:`~machinery.httpstream.listener.Listener`); :meth:`KubeletServer.close`
cancels the connections still open (log followers, exec sessions, port-forwards) and waits for them.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import socket
import ssl
import struct
import time
from collections.abc import AsyncIterator
from typing import Final

import orjson

from kubelet_sim.auth import KubeletAuth, Refused
from kubelet_sim.node import NodeManager, SimNode
from kubelet_sim.pods import PodManager, SimPod
from kubelet_sim.runtime import ContainerLog, SimContainer, State
from kubelet_sim.runtimes import ContainerRuntime, sandbox_id
from kubelet_sim.stats import StatsProvider, resource_metrics, summary
from kubelet_sim.streaming import portforward, remotecommand
from kubelet_sim.streaming.remotecommand import BadRequest, Options
from machinery.api.meta import parse_time
from machinery.httpstream.http1 import HeadError, RequestHead, read_request_head, simple_response
from machinery.httpstream.listener import Listener

log = logging.getLogger("kubelet_sim.server")

LOOPBACK: Final = "127.0.0.1"
_READ_TIMEOUT: Final = 10.0


class HTTPError(Exception):
    """An error answer: status code and plain-text message."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class Unreachable(Exception):
    """The request is about a stopped node: answer nothing."""


class KubeletServer:
    """Serves the kubelet API for every node of the process."""

    def __init__(self, pods: PodManager, nodes: NodeManager, runtime: ContainerRuntime,
                 stats: StatsProvider | None = None, *, auth: KubeletAuth | None = None,
                 tls: ssl.SSLContext | None = None) -> None:
        self._pods = pods
        self._nodes = nodes
        self._runtime = runtime
        self._stats = stats
        #: Without one, every request is allowed (the kubelet's --anonymous-auth with AlwaysAllow).
        self._auth = auth or KubeletAuth()
        self._tls = tls
        self._listener = Listener(self._serve, tls)

    async def start(self, port: int = 0, host: str = LOOPBACK) -> int:
        """Listen on ``host``:``port`` (0: a free one); returns the port."""
        bound = await self._listener.start(host, port)
        log.info("serving the kubelet API (logs, exec, attach, port-forward, node stop/start) on %s://%s:%d "
                 "(authorization mode %s%s)", "https" if self._tls else "http", host, bound, self._auth.mode,
                 ", anonymous requests allowed" if self._auth.anonymous else "")
        return bound

    @property
    def open_connections(self) -> int:
        """Connections being served now (log followers, exec sessions and port-forwards stay open)."""
        return self._listener.open_connections

    async def close(self) -> None:
        await self._listener.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while await self._handle(reader, writer):
                pass
        except Unreachable:
            # A refused connection: no answer; SO_LINGER 0 makes the close a reset.
            sock = writer.get_extra_info("socket")
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except (ConnectionError, TimeoutError, asyncio.IncompleteReadError, HeadError):
            pass

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Serve one request; True when it was answered whole and the connection may carry another."""
        try:
            request = await read_request_head(reader, timeout=_READ_TIMEOUT)
        except HeadError as err:
            if not reader.at_eof():
                await _respond(writer, 400, f"{err}\n")
            # else the client closed its connection, kept alive or not, between requests: nothing to answer.
            return False
        method = request.method
        segments = [s for s in request.path.strip("/").split("/")]
        query = {k: v for k, v in request.query()}
        keep = _keep_alive(request)
        close = not keep
        try:
            node, path = self._addressed(segments)
            await self._auth.check(method, path, node, request.headers.get("authorization"),
                                   writer.get_extra_info("peercert"))
            if segments == ["healthz"]:
                _require(method, "GET")
                await _respond(writer, 200, "ok", close=close)
            elif len(segments) == 4 and segments[0] == "containerLogs":
                _require(method, "GET")
                await self._logs(reader, writer, segments[1], segments[2], segments[3], query)
                return False
            elif len(segments) in (4, 5) and segments[0] in ("exec", "attach"):
                if method not in ("GET", "POST"):
                    raise HTTPError(405, f"method {method} not allowed\n")
                uid = segments[3] if len(segments) == 5 else None
                await self._remote_command(request, reader, writer, segments[0], segments[1], segments[2], uid,
                                           segments[-1])
                return False
            elif len(segments) in (3, 4) and segments[0] == "portForward":
                if method not in ("GET", "POST"):
                    raise HTTPError(405, f"method {method} not allowed\n")
                await self._port_forward(request, reader, writer, segments[1], segments[2],
                                         segments[3] if len(segments) == 4 else None)
                return False
            elif len(segments) == 3 and segments[0] == "nodes" and segments[2] in ("stop", "start"):
                _require(method, "POST")
                await self._node(writer, segments[1], segments[2], close=close)
            elif segments[-2:] in (["metrics", "resource"], ["stats", "summary"]) and len(segments) in (2, 4) \
                    and (len(segments) == 2 or segments[0] == "nodes"):
                _require(method, "GET")
                await self._node_stats(writer, segments[1] if len(segments) == 4 else None, segments[-2],
                                       close=close)
            elif len(segments) == 3 and segments[0] == "nodes" and segments[2] == "healthz":
                _require(method, "GET")
                if self._nodes.nodes.get(segments[1]) is None:
                    raise HTTPError(404, f'node "{segments[1]}" is not hosted by this kubelet_sim process\n')
                await _respond(writer, 200, "ok", close=close)
            else:
                raise HTTPError(404, "404 page not found\n")
        except (HTTPError, BadRequest, Refused) as err:
            await _respond(writer, err.code, err.message, close=close)
        return keep

    def _addressed(self, segments: list[str]) -> tuple[str, str]:
        """The node a request is about and the path its kubelet would serve it at (what is authorized).

        A request about a stopped node gets no answer (:class:`Unreachable`), whoever sends it, but
        the one that starts it again. The
        node of a Pod this process does not run is unknown (""): the handler then answers 404.
        """
        nodes = self._nodes.nodes
        path = "/" + "/".join(segments)
        node: SimNode | None = None
        if len(segments) >= 2 and segments[0] == "nodes":
            node, path = nodes.get(segments[1]), "/" + "/".join(segments[2:])
            name = segments[1]
        elif len(segments) >= 3 and segments[0] in ("exec", "attach", "portForward", "containerLogs"):
            pod = self._pods.pod(segments[1], segments[2])
            node = pod.node if pod is not None else None
            name = node.name if node is not None else ""
        else:
            node = next(iter(nodes.values())) if len(nodes) == 1 else None
            name = node.name if node is not None else ""
        if node is not None and node.stopped and path not in ("/stop", "/start"):
            raise Unreachable()
        return name, path

    def _pod(self, namespace: str, name: str, uid: str | None = None) -> SimPod:
        pod = self._pods.pod(namespace, name)
        if pod is None:
            raise HTTPError(404, "pod does not exist")
        if uid and pod.uid != uid:
            raise HTTPError(404, "pod not found")
        return pod

    async def _remote_command(self, request: RequestHead, reader: asyncio.StreamReader,
                              writer: asyncio.StreamWriter, kind: str, namespace: str, name: str, uid: str | None,
                              container_name: str) -> None:
        options = Options.parse(request)
        pod = self._pod(namespace, name, uid)
        container = pod.container(container_name)
        if container is None or container.state is not State.RUNNING:
            raise HTTPError(500, f'container not found ("{container_name}")')
        runtime = self._runtime
        if kind == "exec":
            command = request.query_values("command")
            log.info("exec %s in %s/%s/%s", command, namespace, name, container_name)
            await remotecommand.serve(request, reader, writer, options=options, command=command,
                                      runner=lambda session: runtime.exec(pod, container, command, session))
        else:
            log.info("attach to %s/%s/%s", namespace, name, container_name)
            await remotecommand.serve(request, reader, writer, options=options,
                                      runner=lambda session: runtime.attach(pod, container, session))

    async def _port_forward(self, request: RequestHead, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                            namespace: str, name: str, uid: str | None) -> None:
        pod = self._pod(namespace, name, uid)
        if not pod.sandbox_ready:
            raise HTTPError(500, f'pod not found ("{pod.name}_{pod.namespace}")')
        runtime = self._runtime
        log.info("port-forward to %s/%s", namespace, name)
        await portforward.serve(request, reader, writer, target=portforward.Target(sandbox_id(pod.uid), ""),
                                forwarder=lambda port, channel: runtime.port_forward(pod, port, channel))

    async def _node_stats(self, writer: asyncio.StreamWriter, name: str | None, kind: str, *, close: bool) -> None:
        """``/metrics/resource`` or ``/stats/summary`` of one node (``/nodes/{name}/...``, or the only one)."""
        nodes = self._nodes.nodes
        if name is None:
            if len(nodes) != 1:
                raise HTTPError(404, f"this kubelet_sim process serves {len(nodes)} nodes: ask "
                                     f"/nodes/{{name}}/{'metrics/resource' if kind == 'metrics' else 'stats/summary'}\n")
            name = next(iter(nodes))
        node = nodes.get(name)
        if node is None:
            raise HTTPError(404, f'node "{name}" is not hosted by this kubelet_sim process\n')
        if self._stats is None:
            raise HTTPError(404, "404 page not found\n")
        sample = self._stats.sample(node)
        if kind == "metrics":
            await _respond(writer, 200, resource_metrics(sample), content_type="text/plain; version=0.0.4",
                           close=close)
        else:
            await _respond(writer, 200, orjson.dumps(summary(sample)).decode(), content_type="application/json",
                           close=close)

    async def _node(self, writer: asyncio.StreamWriter, name: str, action: str, *, close: bool) -> None:
        node = self._nodes.stop(name) if action == "stop" else self._nodes.start(name)
        if node is None:
            raise HTTPError(404, f'node "{name}" is not hosted by this kubelet_sim process\n')
        body = orjson.dumps({"node": name, "stopped": node.stopped}).decode()
        await _respond(writer, 200, body, content_type="application/json", close=close)

    async def _logs(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, namespace: str,
                    pod_name: str, container_name: str, query: dict[str, str]) -> None:
        options = LogOptions.parse(query)
        pod = self._pods.pod(namespace, pod_name)
        if pod is None:
            raise HTTPError(404, f'pod "{namespace}/{pod_name}" does not exist\n')
        container = pod.container(container_name)
        if container is None:
            raise HTTPError(404, f'container "{container_name}" not found in pod "{namespace}/{pod_name}"\n')
        container_log = log_to_serve(pod, container, previous=options.previous)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\n"
                     b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n")
        await writer.drain()
        stream = asyncio.create_task(_stream(writer, render(container_log, options)), name="container-log")
        # A follower waits for lines that may never come: notice the client leaving instead.
        gone = asyncio.create_task(reader.read(1), name="container-log-eof")
        try:
            await asyncio.wait({stream, gone}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (stream, gone):
                task.cancel()
            await asyncio.gather(stream, gone, return_exceptions=True)
        if stream.cancelled() or stream.exception() is not None:
            return
        writer.write(b"0\r\n\r\n")
        await writer.drain()


class LogOptions:
    """The kubelet's ``PodLogOptions`` from query parameters; bad values are a 400."""

    __slots__ = ("follow", "limit_bytes", "previous", "since_seconds", "since_time", "tail_lines", "timestamps")

    def __init__(self, *, follow: bool = False, previous: bool = False, timestamps: bool = False,
                 tail_lines: int | None = None, since_seconds: int | None = None,
                 limit_bytes: int | None = None, since_time: float | None = None) -> None:
        self.follow = follow
        self.previous = previous
        self.timestamps = timestamps
        self.tail_lines = tail_lines
        self.since_seconds = since_seconds
        self.limit_bytes = limit_bytes
        self.since_time = since_time

    @classmethod
    def parse(cls, query: dict[str, str]) -> LogOptions:
        since_time = None
        if query.get("sinceTime"):
            parsed = parse_time(query["sinceTime"])
            if parsed is None:
                raise HTTPError(400, f'invalid value for sinceTime: "{query["sinceTime"]}": must be RFC 3339\n')
            since_time = parsed.timestamp()
        return cls(follow=_flag(query, "follow"), previous=_flag(query, "previous"),
                   timestamps=_flag(query, "timestamps"), tail_lines=_number(query, "tailLines", minimum=0),
                   since_seconds=_number(query, "sinceSeconds", minimum=1),
                   limit_bytes=_number(query, "limitBytes", minimum=1), since_time=since_time)


def log_to_serve(pod: SimPod, c: SimContainer, *, previous: bool) -> ContainerLog:
    """Which instance's log to serve: the kubelet's ``validateContainerLogStatus``."""
    crashed_and_waiting = c.state is State.WAITING and c.last_terminated is not None
    if previous:
        if c.last_terminated is None:
            raise HTTPError(400, f'previous terminated container "{c.name}" in pod "{pod.name}" not found\n')
        # While a crashed container waits to restart, its last instance is the current log.
        chosen = c.log if crashed_and_waiting else c.previous_log
        return chosen or ContainerLog()
    if c.log is None or (c.state is State.WAITING and not crashed_and_waiting):
        reason = c.waiting_reason or "no logs yet"
        raise HTTPError(400, f'container "{c.name}" in pod "{pod.name}" is waiting to start: {reason}\n')
    return c.log


async def render(container_log: ContainerLog, options: LogOptions) -> AsyncIterator[bytes]:
    """The log's lines as the kubelet serves them: tail, since, timestamps, byte limit, follow."""
    lines = container_log.lines
    start = 0
    cutoffs = [t for t in (time.time() - options.since_seconds if options.since_seconds is not None else None,
                           options.since_time) if t is not None]
    if cutoffs:
        cutoff = max(cutoffs)
        start = next((i for i, (when, _) in enumerate(lines) if when >= cutoff), len(lines))
    if options.tail_lines is not None:
        start = max(start, len(lines) - options.tail_lines)
    remaining = options.limit_bytes
    async for when, text in container_log.read(start, follow=options.follow):
        data = ((_rfc3339_nano(when) + " " if options.timestamps else "") + text + "\n").encode()
        if remaining is not None:
            data = data[:remaining]
            remaining -= len(data)
        if data:
            yield data
        if remaining is not None and remaining <= 0:
            return


async def _stream(writer: asyncio.StreamWriter, chunks: AsyncIterator[bytes]) -> None:
    async for chunk in chunks:
        writer.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
        await writer.drain()


def _rfc3339_nano(when: float) -> str:
    """Go's ``time.RFC3339Nano`` in UTC, as CRI log lines carry it (trailing zeros trimmed)."""
    stamp = dt.datetime.fromtimestamp(when, dt.UTC)
    fraction = f"{stamp.microsecond:06d}000".rstrip("0")
    return stamp.strftime("%Y-%m-%dT%H:%M:%S") + (f".{fraction}" if fraction else "") + "Z"


def _flag(query: dict[str, str], name: str) -> bool:
    value = query.get(name)
    if value is None or value in ("", "false", "0", "False", "FALSE", "f", "F"):
        return False
    if value in ("true", "1", "True", "TRUE", "t", "T"):
        return True
    raise HTTPError(400, f'invalid value for {name}: "{value}": must be true or false\n')


def _number(query: dict[str, str], name: str, *, minimum: int) -> int | None:
    value = query.get(name)
    if value is None or value == "":
        return None
    try:
        number = int(value)
    except ValueError:
        raise HTTPError(400, f'invalid value for {name}: "{value}": must be an integer\n') from None
    if number < minimum:
        raise HTTPError(400, f"invalid value for {name}: {number}: must be at least {minimum}\n")
    return number


def _require(method: str, allowed: str) -> None:
    if method != allowed:
        raise HTTPError(405, f"method {method} not allowed\n")


async def _respond(writer: asyncio.StreamWriter, code: int, body: str,
                   content_type: str = "text/plain; charset=utf-8", *, close: bool = True) -> None:
    writer.write(simple_response(code, body.encode(), content_type=content_type, close=close))
    await writer.drain()


def _keep_alive(request: RequestHead) -> bool:
    """Whether the connection may carry another request after this one's answer: HTTP/1.1 without a body,
    an upgrade or ``Connection: close`` (a keep-alive connection spares a TLS handshake per scrape)."""
    connection = (request.headers.get("connection") or "").lower()
    return (request.version == "HTTP/1.1" and "close" not in connection and request.upgrade() is None
            and int(request.headers.get("content-length") or 0) == 0
            and not request.headers.get("transfer-encoding"))
