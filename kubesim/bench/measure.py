"""What the cluster scenarios (SchedulingBasic, density, churn) measure besides their own clocks.

- **etcd writes.** Every write the APIServer makes is one etcd revision, so the
  revisions a phase consumed are its writes. :func:`etcd_revision` reads the
  current revision; :func:`count_writes` replays that range of etcd's history
  *after* the phase (a watch from its first revision, read up to its last) and
  counts the writes per resource, so the counting costs the phase nothing.
  Only the writes in the Pods' namespace are counted per Pod: node Lease
  renewals, Node status and Events about nodes are background. The replay
  needs the phase's history: the clusters of these scenarios run their
  APIServer with :data:`APISERVER_ARGS`, which turn compaction off (a phase
  can outlast kube-apiserver's 5-minute interval); when history is missing
  all the same, the writes per Pod are unknown.
- **the ceiling.** :func:`add_pod_rate` puts a pods/s figure beside the writes
  one Pod cost (measured), the ceiling those writes allow (etcd's guarded
  transactions per second / writes per Pod) and the share of it reached.
- **Pods and nodes through a watch.** :class:`PodTimes` and :class:`ReadyNodes`
  follow a raw watch stream and note when each Pod was first seen, bound,
  Running and deleted, and which nodes are Ready; a watch the APIServer ends
  with 410 (the bench fell too far behind) is replaced by a list and a new
  watch, as an informer does (what changed meanwhile gets the list's time).
- **the cluster's processes**: :func:`start_component`, :func:`start_kubelets`
  (with KWOK's timing: containers start at once), :func:`add_process_figures`
  (each process's peak RSS and CPU seconds), :func:`events_dropped` (Events
  the recorders dropped: under load they drop rather than stall, which lowers
  the writes per Pod), :func:`events_pending` (Events recorded and not yet
  written: their writes fall in a later phase), :func:`check_alive`.
- **progress**: :func:`every_second` prints a line a second while a phase runs.

The benchmarks talk to etcd directly only here, and only to measure it.

Concurrency: one event loop per scenario; each watch is a task owned by the
scenario that starts it, cancelled before the scenario returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import urllib.request
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any, Final
from urllib.parse import urlsplit

import orjson
import yaml
from aetcd import rpc

from kubelet_sim.profile import DEFAULT_PROFILE
from kubesim import procs
from kubesim.bench.cluster import BenchCluster
from kubesim.bench.rawhttp import Connection, Endpoint, open_watch, watch_lines
from kubesim.bench.results import ScenarioResult
from machinery.api.kinds import RESOURCES

Progress = Callable[[str], None]

_PLURALS: Final = {r.etcd_resource: r.plural for r in RESOURCES}
#: The APIServer flags of the Pod scenarios' clusters: no compaction, so that every phase's writes can be
#: replayed from etcd's history after it, however long the phase lasted.
APISERVER_ARGS: Final = ("--etcd-compaction-interval=0",)
_REPLAY_TIMEOUT: Final = 300.0


# --- etcd writes -------------------------------------------------------------------------------------------

def etcd_revision(etcd_url: str) -> int:
    """etcd's current revision, through its JSON gateway.

    Synchronous on purpose: a progress callback can call it between two
    writes of the benchmark, which an awaited call could not promise.
    """
    request = urllib.request.Request(f"{etcd_url}/v3/kv/range", data=b'{"key":"AA==","count_only":true}',
                                     method="POST")
    with urllib.request.urlopen(request, timeout=10) as reply:
        return int(orjson.loads(reply.read())["header"]["revision"])


@dataclass(frozen=True)
class Writes:
    """The revisions one phase consumed, and which of them were the Pods' own."""

    total: int
    #: Writes in the Pods' namespace, by resource; ``None`` when they could not be counted (``why``).
    own: Mapping[str, int] | None
    why: str = "etcd compacted the history"

    @property
    def background(self) -> int | None:
        """Writes outside the Pods' namespace: node Leases and status, Events about nodes..."""
        return self.total - sum(self.own.values()) if self.own is not None else None

    def per_pod(self, pods: int) -> float | None:
        """The Pods' own writes per Pod; ``None`` without Pods or history."""
        return sum(self.own.values()) / pods if pods and self.own is not None else None

    def breakdown(self, pods: int) -> str:
        """``pods 2.00 + events 1.00``: the Pods' own writes per Pod, by resource, or why they are unknown."""
        if self.own is None:
            return f"{self.why}: {self.total:,} writes in all"
        ranked = sorted(self.own.items(), key=lambda kv: -kv[1])
        return " + ".join(f"{r} {n / pods:.2f}" for r, n in ranked) if pods else ""


async def count_writes(etcd_url: str, after: int, upto: int, namespace: str | None = None) -> Writes:
    """The writes of revisions ``after + 1`` to ``upto``, replayed from etcd's history.

    Those of objects in ``namespace`` (every one, without it) are the Pods'
    own, counted by resource; the rest is background.
    """
    total = upto - after
    if total <= 0:
        return Writes(0, {})
    parts = urlsplit(etcd_url)
    stop = asyncio.Event()

    async def requests() -> AsyncIterator[Any]:
        # Every key: kubesim's live under /registry/, and anything else written meanwhile is a write too.
        yield rpc.WatchRequest(create_request=rpc.WatchCreateRequest(key=b"\0", range_end=b"\0",
                                                                     start_revision=after + 1))
        await stop.wait()

    own: dict[int, str] = {}
    # etcd batches up to a thousand revisions per watch response: far more than gRPC's default 4 MiB.
    async with rpc.insecure_channel(f"{parts.hostname}:{parts.port}",
                                    options=[("grpc.max_receive_message_length", -1)]) as channel:
        call = rpc.WatchStub(channel).Watch(requests())
        try:
            async with asyncio.timeout(_REPLAY_TIMEOUT):
                async for response in call:
                    if response.compact_revision:
                        return Writes(total, None)
                    last = after
                    for event in response.events:
                        last = event.kv.mod_revision
                        resource = _resource_in(event.kv.key, namespace)
                        if last <= upto and resource is not None:
                            own.setdefault(last, resource)
                    # Events come in revision order, and revision ``upto`` was written: it ends the range.
                    if last >= upto:
                        break
        except TimeoutError:
            # A long phase on many nodes is hundreds of thousands of revisions: the phase's other
            # figures (times, CPU per Pod) stand without its writes per Pod.
            return Writes(total, None, f"not counted: replaying the history took over {_REPLAY_TIMEOUT:.0f} s")
        finally:
            stop.set()
            call.cancel()
    return Writes(total, dict(Counter(own.values())))


def _resource_in(key: bytes, namespace: str | None) -> str | None:
    """The resource of a key under ``/registry/<resource>/<namespace>/``, or anywhere without a namespace."""
    parts = key.decode(errors="replace").split("/")
    if len(parts) < 3 or parts[1] != "registry":
        return "other" if namespace is None else None
    if namespace is not None and (len(parts) < 5 or parts[3] != namespace):
        return None
    return _PLURALS.get(parts[2], parts[2])


def add_pod_rate(result: ScenarioResult, label: str, pods_per_second: float | None, writes: Writes, pods: int,
                 ceiling: float | None, goal: str = "") -> None:
    """A pods/s figure with, beside it, the writes per Pod, the ceiling they allow and the share reached."""
    per_pod = writes.per_pod(pods)
    result.add(f"{label} pods/s", pods_per_second, "/s", goal)
    result.add(f"{label} writes per Pod (measured)", per_pod, "", writes.breakdown(pods))
    pods_ceiling = ceiling / per_pod if ceiling and per_pod else None
    how = f"etcd {ceiling:,.0f} txn/s / {per_pod:.2f} writes per Pod" if pods_ceiling else "no etcd figure"
    result.add(f"{label} ceiling pods/s", pods_ceiling, "/s", how)
    share = 100 * pods_per_second / pods_ceiling if pods_per_second and pods_ceiling else None
    result.add(f"{label} share of ceiling", share, "%")


# --- requests and watches ----------------------------------------------------------------------------------

#: How many 429s a request may meet before its caller sees one, and the wait after each (client-go: 10 tries,
#: the Retry-After the APIServer sends, 1 s).
_TOO_MANY_TRIES: Final = 10
_RETRY_AFTER: Final = 1.0


class Pool:
    """Keep-alive connections to the APIServer, one per request in flight, opened as the load needs them.

    The server closes a connection that stays idle a few seconds (uvicorn: 5);
    a request that finds its reused connection closed goes again, once, on a
    new one, as HTTP clients do: the server had not read it.
    """

    def __init__(self, url: str, *, tries_on_429: int | None = _TOO_MANY_TRIES) -> None:
        """``tries_on_429=None``: a 429 is tried again until the request goes through (a load that must
        measure an overloaded APIServer, not stop at it)."""
        self._url = url
        self._tries_on_429 = tries_on_429
        #: The 429s answered, each tried again.
        self.throttled = 0
        self._idle: list[Connection] = []
        self._opened: set[Connection] = set()

    async def call(self, method: str, path: str, body: Any = None, *,
                   content_type: str = "application/json") -> tuple[bytes, float]:
        """The body of a 2xx answer, and the seconds from sending it to that answer; any other answer raises.

        A 429 (the APIServer's in-flight limit) is tried again after its Retry-After, up to
        :data:`_TOO_MANY_TRIES` times (or as the pool was told), as client-go does; the seconds then
        count every try and wait, as the client saw them, and :attr:`throttled` counts the 429s.
        """
        data = orjson.dumps(body) if body is not None else None
        throttled = 0
        started: float | None = None
        while True:
            reused = bool(self._idle)
            conn = self._idle.pop() if reused else await self._open()
            started = started if started is not None else time.perf_counter()
            try:
                reply = await conn.request(method, path, data, content_type)
            except ConnectionError:
                self._opened.discard(conn)
                conn.close()
                if reused:
                    continue
                raise
            seconds = time.perf_counter() - started
            self._idle.append(conn)
            if reply.status == 429 and (self._tries_on_429 is None or throttled < self._tries_on_429):
                throttled += 1
                self.throttled += 1
                await asyncio.sleep(_RETRY_AFTER)
                continue
            if not 200 <= reply.status < 300:
                raise RuntimeError(f"{method} {path} answered {reply.status}: {reply.body[:300]!r}")
            return reply.body, seconds

    async def _open(self) -> Connection:
        conn = await Connection.open(self._url)
        self._opened.add(conn)
        return conn

    def close(self) -> None:
        """Close every connection, those of requests still in flight included."""
        for conn in self._opened:
            conn.close()
        self._opened.clear()
        self._idle.clear()


async def list_revision(pool: Pool, path: str) -> str:
    """The resourceVersion of a list of ``path``: where a watch that misses nothing after it starts."""
    body, _ = await pool.call("GET", f"{path}?limit=1")
    return str(orjson.loads(body)["metadata"]["resourceVersion"])


class WatchExpired(RuntimeError):
    """The APIServer ended a watch with 410 Gone: a list, then a new watch, go on from where it is now."""


async def _watch(url: str, path: str, rv: str) -> AsyncIterator[tuple[float, dict[str, Any]]]:
    """(arrival time, event) of a watch from ``rv``; an ERROR event, or the stream's end, raises."""
    # An hour, where the APIServer would pick 30 to 60 minutes: the longest phase must not see it end.
    conn = await open_watch(url, f"{path}?watch=true&resourceVersion={rv}&timeoutSeconds=3600")
    async for now, line in watch_lines(conn):
        event = orjson.loads(line)
        if event["type"] == "ERROR":
            if event["object"].get("code") == 410:
                raise WatchExpired(f"watch of {path} expired: {event['object'].get('message')}")
            raise RuntimeError(f"watch of {path} ended: {event['object'].get('message')}")
        yield now, event
    raise RuntimeError(f"the APIServer ended the watch of {path}")


class _Followed:
    """What a watch follows; :meth:`until` waits on it without polling the API."""

    def __init__(self) -> None:
        #: Set after every event.
        self.changed = asyncio.Event()
        #: Why the watch ended, if it did: nothing more can be seen, so :meth:`until` stops waiting.
        self.ended: Exception | None = None
        #: How many times the watch fell too far behind and was replaced by a list (times then are the list's).
        self.relists = 0
        #: What checks by list (``until(stall=...)``) found that the watch had not said: events lost on the way.
        self.missed = 0
        self._source: tuple[str, str] | None = None

    async def _events(self, url: str, path: str, rv: str) -> AsyncIterator[tuple[float, dict[str, Any]]]:
        """Events of ``path`` from ``rv``, as an informer sees them: when the APIServer ends the watch with a
        410 (a watcher too far behind), a list reconciles (:meth:`_relisted`) and the watch goes on from it.
        Any other end is final: :attr:`ended` says why."""
        self._source = (url, path)
        try:
            while True:
                try:
                    async for item in _watch(url, path, rv):
                        yield item
                except WatchExpired:
                    self.relists += 1
                    pool = Pool(url)
                    try:
                        body, _ = await pool.call("GET", path)
                    finally:
                        pool.close()
                    listed = orjson.loads(body)
                    self._relisted(listed.get("items") or [], time.perf_counter())
                    self.changed.set()
                    rv = str(listed["metadata"]["resourceVersion"])
        except Exception as err:
            self.ended = err
            self.changed.set()
            raise

    def _relisted(self, items: list[dict[str, Any]], now: float) -> None:
        """What a relist says, at ``now``: the objects as they are (the ones missing are gone)."""
        raise NotImplementedError

    def _noted(self) -> int:
        """How much the follower has noted so far (grows with every new fact); for :meth:`until`'s checks."""
        raise NotImplementedError

    async def _check_by_list(self) -> int:
        """List what the watch follows and note what the list says; how many facts the watch had not given."""
        assert self._source is not None, "nothing followed yet"
        url, path = self._source
        pool = Pool(url)
        try:
            body, _ = await pool.call("GET", path)
        finally:
            pool.close()
        before = self._noted()
        self._relisted(orjson.loads(body).get("items") or [], time.perf_counter())
        found = self._noted() - before
        self.missed += found
        return found

    async def until(self, done: Callable[[], bool], *, timeout: float, alive: Callable[[], None],
                    stall: float | None = None) -> None:
        """Until ``done()``; ``alive()`` (called at least once a second) raises when a process has died, and
        a watch that ended for good ends the wait too.

        With ``stall``: when nothing has arrived for that many seconds, a list checks the watch; what it
        finds that the watch never delivered counts in :attr:`missed` (and the wait goes on from there),
        so that a lost event shows as a figure rather than as a phase that never ends."""
        quiet_since = time.monotonic()
        async with asyncio.timeout(timeout):
            while not done():
                alive()
                if self.ended is not None:
                    raise RuntimeError(f"the bench's watch ended: {self.ended}") from self.ended
                if stall is not None and time.monotonic() - quiet_since > stall:
                    await self._check_by_list()
                    quiet_since = time.monotonic()
                    continue
                self.changed.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.changed.wait(), 1.0)
                if self.changed.is_set():
                    quiet_since = time.monotonic()


class PodTimes(_Followed):
    """When each Pod of one namespace was first seen, bound, Running and deleted (``perf_counter`` times)."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: dict[str, float] = {}
        self.bound: dict[str, float] = {}
        self.running: dict[str, float] = {}
        self.deleted: dict[str, float] = {}

    async def follow(self, url: str, namespace: str, rv: str) -> None:
        """Record the namespace's Pods from ``rv`` on, until cancelled."""
        async for now, event in self._events(url, f"/api/v1/namespaces/{namespace}/pods", rv):
            self._note(event["object"], now, deleted=event["type"] == "DELETED")
            self.changed.set()

    def _note(self, pod: dict[str, Any], now: float, *, deleted: bool = False) -> None:
        name = pod["metadata"]["name"]
        self.seen.setdefault(name, now)
        if pod["spec"].get("nodeName"):
            self.bound.setdefault(name, now)
        if pod.get("status", {}).get("phase") == "Running":
            self.running.setdefault(name, now)
        if deleted:
            self.deleted.setdefault(name, now)

    def _relisted(self, items: list[dict[str, Any]], now: float) -> None:
        present = set()
        for pod in items:
            present.add(pod["metadata"]["name"])
            self._note(pod, now)
        for name in self.seen.keys() - present:
            self.deleted.setdefault(name, now)

    def _noted(self) -> int:
        return len(self.seen) + len(self.bound) + len(self.running) + len(self.deleted)

    def counts(self) -> str:
        return (f"created {len(self.seen)}, bound {len(self.bound)}, running {len(self.running)}, "
                f"deleted {len(self.deleted)}")


class ReadyNodes(_Followed):
    """The nodes whose Ready condition is True, from a watch of every node."""

    def __init__(self) -> None:
        super().__init__()
        self.ready: set[str] = set()

    async def follow(self, url: str, rv: str) -> None:
        """Follow the nodes from ``rv`` on, until cancelled."""
        async for _, event in self._events(url, "/api/v1/nodes", rv):
            self._note(event["object"], deleted=event["type"] == "DELETED")
            self.changed.set()

    def _note(self, node: dict[str, Any], *, deleted: bool = False) -> None:
        conditions = node.get("status", {}).get("conditions") or ()
        if not deleted and any(c["type"] == "Ready" and c["status"] == "True" for c in conditions):
            self.ready.add(node["metadata"]["name"])
        else:
            self.ready.discard(node["metadata"]["name"])

    def _relisted(self, items: list[dict[str, Any]], now: float) -> None:
        self.ready.clear()
        for node in items:
            self._note(node)


# --- processes ---------------------------------------------------------------------------------------------

def start_component(c: BenchCluster, name: str, module: str, args: Sequence[str] = ()) -> str:
    """Start a controller-manager or scheduler, wait until it is ready; its /metrics URL.

    Leader election is off so that no Lease renewal mixes with the writes measured. With several
    APIServers, each component talks to the next one in turn.
    """
    health = f"http://{procs.LOOPBACK}:{procs.free_port()}"
    master = c.url_for(len(c.components))
    c.start_component(name, module, [*c.component_flags(name), "--master", master,
                                     "--health-port", health.rsplit(":", 1)[1],
                                     "--leader-elect=false", *args], ready_url=f"{health}/readyz")
    return f"{health}/metrics"


def start_kubelets(c: BenchCluster, nodes: int, *, shards: int = 1) -> list[str]:
    """Start kubelet_sim with ``nodes`` nodes, in ``shards`` processes; their /metrics URLs. No wait: how
    soon they are Ready is measured.

    The nodes are the default profile's, with KWOK's timing: a container runs as
    soon as its kubelet starts it, since the startup SLO leaves image pulls out.
    Shards host consecutive ranges of the nodes (``--node-offset``), as they would
    on several machines, each talking to the next APIServer in turn.
    """
    profile = yaml.safe_load(resources.files("kubelet_sim").joinpath(DEFAULT_PROFILE).read_text())
    profile["timings"].update(containerStartDelay="0s", containerStartJitter="0s")
    path = c.workdir / "bench-node-profile.yaml"
    path.write_text(yaml.safe_dump(profile))
    urls = []
    offset = 0
    for shard in range(shards):
        count = nodes // shards + (1 if shard < nodes % shards else 0)
        name = "kubelet_sim" if shards == 1 else f"kubelet_sim-{shard + 1}"
        health = procs.free_port()
        c.start_component(name, "kubelet_sim",
                          [*c.component_flags("kubelet"), "--master", c.url_for(len(c.components)),
                           "--nodes", str(count), "--node-offset", str(offset), "--node-profile", str(path),
                           "--health-port", str(health)])
        urls.append(f"http://{procs.LOOPBACK}:{health}/metrics")
        offset += count
    return urls


@dataclass(frozen=True)
class NodesReady:
    """What :func:`start_nodes` found: how long the nodes took, the kubelets' /metrics URLs, the nodes."""

    seconds: float
    metrics: list[str]
    names: list[str]


async def start_nodes(c: BenchCluster, pool: Pool, count: int, *, progress: Progress, label: str,
                      timeout: float, shards: int = 1) -> NodesReady:
    """Start kubelet_sim with ``count`` nodes (:func:`start_kubelets`) and wait until a watch has seen every
    one Ready, printing ``<label>: nodes Ready n/count`` once a second."""
    nodes = ReadyNodes()
    watch = asyncio.create_task(nodes.follow(c.url, await list_revision(pool, "/api/v1/nodes")),
                                name="bench-nodes")
    try:
        started = time.perf_counter()
        kubelet_metrics = start_kubelets(c, count, shards=shards)
        async with every_second(progress, lambda: f"{label}: nodes Ready {len(nodes.ready)}/{count}"):
            await nodes.until(lambda: len(nodes.ready) >= count, timeout=timeout,
                              alive=lambda: check_alive(c))
        return NodesReady(time.perf_counter() - started, kubelet_metrics, sorted(nodes.ready))
    finally:
        watch.cancel()
        await asyncio.gather(watch, return_exceptions=True)


def _metric_total(metrics_urls: Iterable[str], prefix: str, *, unless: str | None = None) -> int:
    """The sum over every process of the samples whose line starts with ``prefix`` (not containing
    ``unless``), read from their Prometheus text."""
    total = 0.0
    for url in metrics_urls:
        with urllib.request.urlopen(url, timeout=10) as reply:
            for line in reply.read().decode().splitlines():
                if line.startswith(prefix) and (unless is None or unless not in line):
                    total += float(line.rsplit(" ", 1)[1])
    return round(total)


def events_dropped(metrics_urls: Iterable[str]) -> int:
    """The Events the components' recorders lost (``kubesim_events_dropped_total``), every reason but spam.

    What the spam filter refuses Kubernetes' recorders refuse too: it is not counted as lost.
    """
    return _metric_total(metrics_urls, "kubesim_events_dropped_total{", unless='reason="spam"')


def events_pending(metrics_urls: Iterable[str]) -> int:
    """The Events the components' recorders hold unwritten (``kubesim_events_pending``): those still to
    come, which a phase's Event writes per Pod do not count."""
    return _metric_total(metrics_urls, "kubesim_events_pending ")


def check_alive(c: BenchCluster) -> None:
    """Raise, with the end of its log, when a process of the cluster has exited."""
    for name, proc in c.processes().items():
        if not proc.alive():
            raise RuntimeError(f"{name} exited during the benchmark:\n{procs.tail(proc.log_path)}")


#: What Kubernetes-sized goals the issue sets for each process's memory (density scenario).
RSS_GOALS: Final = {"apiserver": "goal <= 1 GiB", "kubelet_sim": "goal <= 512 MiB"}


def add_process_figures(result: ScenarioResult, c: BenchCluster, *, goals: Mapping[str, str] | None = None,
                        cpu_since: Mapping[str, float] | None = None, label: str = "") -> None:
    """Each process's peak RSS (sampled twice a second) and CPU seconds (since ``cpu_since``, else in all)."""
    c.sample()
    cpu = c.cpu()
    since = cpu_since or {}
    for name in c.processes():
        goal = (goals or {}).get(name.rsplit("-", 1)[0] if name[-1].isdigit() else name, "")
        result.add(f"{label}{name} peak RSS", c.peak_rss.get(name), "bytes", goal)
    for name in c.processes():
        used = cpu.get(name)
        result.add(f"{label}{name} CPU", used - since.get(name, 0.0) if used is not None else None, "s",
                   "over the measured Pods" if cpu_since else "")


# --- progress ----------------------------------------------------------------------------------------------

@contextlib.asynccontextmanager
async def every_second(say: Progress, describe: Callable[[], str]) -> AsyncIterator[None]:
    """Print ``describe()`` with the seconds elapsed, once a second, while the block runs."""
    started = time.perf_counter()

    async def tick() -> None:
        while True:
            await asyncio.sleep(1.0)
            say(f"{describe()} ({time.perf_counter() - started:.0f}s)")

    task = asyncio.create_task(tick(), name="bench-progress")
    try:
        yield
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


# --- CPU per Pod ------------------------------------------------------------------------------------------

#: The APIServer's request kinds the performance issue names, from its /metrics labels (verb, resource,
#: subresource; None matches any).
_REQUEST_KINDS: Final = (
    ("Pod create", ("create", "pods", "")),
    ("binding", ("create", "pods", "binding")),
    ("Pod status", (None, "pods", "status")),
    ("Pod delete", ("delete", "pods", "")),
    ("Lease renewal", ("update", "leases", "")),
    ("Event", ("create", "events", "")),
    ("Event", ("patch", "events", "")),
    ("list", ("list", None, None)),
    ("watch streams", ("watch", None, None)),
)


@dataclass
class CpuMark:
    """Each process's CPU seconds and the APIServer's CPU by request kind, at one moment."""

    processes: dict[str, float]
    requests: dict[tuple[str, str, str], float]
    fanout: float


def _apiserver_cpu(url: Endpoint) -> tuple[dict[tuple[str, str, str], float], float]:
    requests: dict[tuple[str, str, str], float] = {}
    fanout = 0.0
    with urllib.request.urlopen(f"{url}/metrics", timeout=10, context=url.tls) as reply:
        for line in reply.read().decode().splitlines():
            if line.startswith("kubesim_apiserver_request_cpu_seconds_total{"):
                labels = dict(part.split("=", 1) for part in line[line.index("{") + 1:line.rindex("}")].split(","))
                key = tuple(labels.get(k, '""').strip('"') for k in ("verb", "resource", "subresource"))
                requests[key] = requests.get(key, 0.0) + float(line.rsplit(" ", 1)[1])
            elif line.startswith("kubesim_apiserver_watch_fanout_cpu_seconds_total{"):
                fanout += float(line.rsplit(" ", 1)[1])
    return requests, fanout


def _kind_of(key: tuple[str, str, str]) -> str:
    verb, resource, subresource = key
    for kind, (want_verb, want_resource, want_sub) in _REQUEST_KINDS:
        if (want_verb is None or verb == want_verb) and (want_resource is None or resource == want_resource) \
                and (want_sub is None or subresource == want_sub):
            return kind
    return "other requests"


def cpu_mark(c: BenchCluster) -> CpuMark:
    """Every process's CPU seconds, and the APIServers' by request kind (summed over them)."""
    requests: dict[tuple[str, str, str], float] = {}
    fanout = 0.0
    for url in c.urls:
        theirs, their_fanout = _apiserver_cpu(url)
        for key, seconds in theirs.items():
            requests[key] = requests.get(key, 0.0) + seconds
        fanout += their_fanout
    return CpuMark(c.cpu(), requests, fanout)


def add_cpu_per_pod(result: ScenarioResult, before: CpuMark, after: CpuMark, pods: int, *, label: str = "") -> None:
    """The figure the performance issue is judged by: the control plane's CPU per Pod over etcd's.

    Every kubesim process's CPU seconds over ``pods`` Pods (created, run and deleted between the two
    marks), per Pod, beside etcd's own; then the APIServer's, broken down by request kind, and what
    no request accounts for (the HTTP server, the etcd client, garbage collection).
    """
    if pods <= 0:
        return
    used = {name: after.processes.get(name, 0.0) - before.processes.get(name, 0.0) for name in after.processes}
    etcd = used.pop("etcd", None)
    control_plane = sum(used.values())
    result.add(f"{label}control-plane CPU per Pod", control_plane / pods, "s",
               "every kubesim process (" + ", ".join(sorted(used)) + ")")
    result.add(f"{label}etcd CPU per Pod", etcd / pods if etcd is not None else None, "s")
    ratio = control_plane / etcd if etcd else None
    result.add(f"{label}CPU per Pod, control plane / etcd", ratio, "x", "goal <= 3")
    for name, seconds in sorted(used.items()):
        result.add(f"{label}{name} CPU per Pod", seconds / pods, "s")
    by_kind: dict[str, float] = {kind: 0.0 for kind, _match in _REQUEST_KINDS}
    by_kind["other requests"] = 0.0
    for key, seconds in after.requests.items():
        by_kind[_kind_of(key)] += seconds - before.requests.get(key, 0.0)
    by_kind["watch fan-out"] = after.fanout - before.fanout
    for kind, seconds in by_kind.items():
        result.add(f"{label}apiserver {kind} CPU per Pod", seconds / pods, "s")
    apiservers = [seconds for name, seconds in used.items() if name == "apiserver" or name.startswith("apiserver-")]
    if apiservers:
        apiserver = sum(apiservers)
        accounted = sum(by_kind.values())
        result.add(f"{label}apiserver outside requests CPU per Pod", (apiserver - accounted) / pods, "s",
                   "HTTP server, etcd client, garbage collection")
