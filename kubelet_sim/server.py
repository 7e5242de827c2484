"""The kubelet API of a kubelet_sim process: container logs, node stop/start, health.

One small HTTP/1.1 server on 127.0.0.1 serves every node the process hosts
(each Node's ``daemonEndpoints.kubeletEndpoint.Port`` points here):

- ``GET /containerLogs/{namespace}/{pod}/{container}`` with ``follow``,
  ``tailLines``, ``timestamps``, ``previous``, ``sinceSeconds`` and
  ``limitBytes``, as the kubelet serves it to the APIServer's ``pods/log``
  proxy: plain text, chunked; ``follow`` streams new lines until the container
  exits or the client goes away. Errors use the kubelet's wording
  (``container "c" in pod "web" is waiting to start: ContainerCreating``).
- ``POST /nodes/{name}/stop`` and ``POST /nodes/{name}/start`` make a node
  fail and recover (``kubesim node stop NAME`` calls them); they answer
  ``{"node": NAME, "stopped": true|false}``.
- ``GET /healthz``.

Written on asyncio streams rather than a framework: these four routes need no
more, and the process must stay small at 5,000 nodes.

Concurrency: one task per connection, all on the event loop; :meth:`KubeletServer.close`
cancels the connections still open (log followers) and waits for them.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import time
from collections.abc import AsyncIterator
from typing import Final
from urllib.parse import parse_qs, unquote, urlsplit

import orjson

from kubelet_sim.node import NodeManager
from kubelet_sim.pods import PodManager, SimPod
from kubelet_sim.runtime import ContainerLog, SimContainer, State

log = logging.getLogger("kubelet_sim.server")

LOOPBACK: Final = "127.0.0.1"
_READ_TIMEOUT: Final = 10.0
_MAX_HEADER_LINES: Final = 100


class HTTPError(Exception):
    """An error answer: status code and plain-text message."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


_REASONS: Final = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed"}


class KubeletServer:
    """Serves the kubelet API for every node of the process."""

    def __init__(self, pods: PodManager, nodes: NodeManager) -> None:
        self._pods = pods
        self._nodes = nodes
        self._server: asyncio.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()

    async def start(self, port: int = 0, host: str = LOOPBACK) -> int:
        """Listen on ``host``:``port`` (0: a free one); returns the port."""
        self._server = await asyncio.start_server(self._accept, host, port)
        bound: int = self._server.sockets[0].getsockname()[1]
        log.info("serving the kubelet API (container logs, node stop/start) on http://%s:%d", host, bound)
        return bound

    @property
    def open_connections(self) -> int:
        """Connections being served now (log followers stay open until their container exits)."""
        return len(self._connections)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            await self._handle(reader, writer)
        except (ConnectionError, TimeoutError, asyncio.IncompleteReadError):
            pass
        finally:
            self._connections.discard(task)
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        async with asyncio.timeout(_READ_TIMEOUT):
            request_line = (await reader.readline()).decode("latin-1").strip()
            for _ in range(_MAX_HEADER_LINES):
                if not (await reader.readline()).strip():
                    break
        parts = request_line.split()
        if len(parts) != 3:
            await _respond(writer, 400, "malformed request line\n")
            return
        method, target, _ = parts
        url = urlsplit(target)
        segments = [unquote(s) for s in url.path.strip("/").split("/")]
        query = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        try:
            if segments == ["healthz"]:
                _require(method, "GET")
                await _respond(writer, 200, "ok")
            elif len(segments) == 4 and segments[0] == "containerLogs":
                _require(method, "GET")
                await self._logs(reader, writer, segments[1], segments[2], segments[3], query)
            elif len(segments) == 3 and segments[0] == "nodes" and segments[2] in ("stop", "start"):
                _require(method, "POST")
                await self._node(writer, segments[1], segments[2])
            else:
                raise HTTPError(404, "404 page not found\n")
        except HTTPError as err:
            await _respond(writer, err.code, err.message)

    async def _node(self, writer: asyncio.StreamWriter, name: str, action: str) -> None:
        node = self._nodes.stop(name) if action == "stop" else self._nodes.start(name)
        if node is None:
            raise HTTPError(404, f'node "{name}" is not hosted by this kubelet_sim process\n')
        body = orjson.dumps({"node": name, "stopped": node.stopped}).decode()
        await _respond(writer, 200, body, content_type="application/json")

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

    __slots__ = ("follow", "limit_bytes", "previous", "since_seconds", "tail_lines", "timestamps")

    def __init__(self, *, follow: bool = False, previous: bool = False, timestamps: bool = False,
                 tail_lines: int | None = None, since_seconds: int | None = None,
                 limit_bytes: int | None = None) -> None:
        self.follow = follow
        self.previous = previous
        self.timestamps = timestamps
        self.tail_lines = tail_lines
        self.since_seconds = since_seconds
        self.limit_bytes = limit_bytes

    @classmethod
    def parse(cls, query: dict[str, str]) -> LogOptions:
        return cls(follow=_flag(query, "follow"), previous=_flag(query, "previous"),
                   timestamps=_flag(query, "timestamps"), tail_lines=_number(query, "tailLines", minimum=0),
                   since_seconds=_number(query, "sinceSeconds", minimum=1),
                   limit_bytes=_number(query, "limitBytes", minimum=1))


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
    if options.since_seconds is not None:
        cutoff = time.time() - options.since_seconds
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
                   content_type: str = "text/plain; charset=utf-8") -> None:
    data = body.encode()
    writer.write(f"HTTP/1.1 {code} {_REASONS.get(code, '')}\r\nContent-Type: {content_type}\r\n"
                 f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n".encode() + data)
    await writer.drain()
