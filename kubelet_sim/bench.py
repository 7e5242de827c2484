"""The density benchmark: many nodes kept Ready by one kubelet_sim while many Pods start on them.

:func:`density` measures, against a running cluster whose kubelet_sim hosts
``nodes`` nodes:

- ``nodes_ready_seconds``: from the call until every node reports Ready;
- ``pods_started_per_second``: ``pods`` Pods created already bound
  (``spec.nodeName`` set, as KWOK's benchmark does, so that no scheduler is
  involved), divided by the time from the first create to the last one seen
  Running through a watch;
- heartbeat lateness: from the Leases' ``renewTime`` seen through a watch,
  how much later than the renew interval each renewal came (p99 and max), and
  how many nodes were ever reported not Ready after they first were;
- with the kubelet_sim's pid: its peak RSS (``VmHWM``).

``python -m kubelet_sim.bench --nodes 5000 --pods 10000`` starts its own etcd,
APIServer and kubelet_sim (``kubesim.bench.cluster``, in a temporary directory)
and prints the figures as JSON; ``--api URL --kubelet-pid PID`` measures an
existing cluster instead.

Concurrency: one event loop; the Lease and Node watchers and the Pod watcher
are tasks of :func:`density`, cancelled before it returns.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from kubernetes.client import V1Lease

from kubelet_sim.views import NODE_VIEWS, POD_VIEWS
from kubesim import procs
from kubesim.bench.cluster import cluster
from machinery.api.kinds import LEASES, NAMESPACES
from machinery.api.meta import parse_time
from machinery.client import AlreadyExists, Client, ClientConfig, WatchEvent
from machinery.client.objects import ObjectList, TypedResource

Progress = Callable[[str], None]

_POD_IMAGE = "registry.k8s.io/pause:3.10"
_NODE_LEASE_NAMESPACE = "kube-node-lease"


async def density(api: str | ClientConfig, *, nodes: int, pods: int, kubelet_pid: int | None = None,
                  renew_interval: float = 10.0, namespace: str = "kubesim-density",
                  create_concurrency: int = 64,
                  timeout: float = 900.0, progress: Progress | None = None) -> dict[str, Any]:
    """Run the benchmark; the figures as a dict (see the module docstring)."""
    say = progress or (lambda _message: None)
    started = time.monotonic()
    # The lean client: through httpx, the benchmark's own requests would be the bottleneck.
    config = api if isinstance(api, ClientConfig) else ClientConfig(api)
    async with Client(config, user_agent="kubesim-bench") as client:
        async with asyncio.timeout(timeout):
            node_names = await _wait_nodes_ready(client, nodes, say)
            nodes_ready = time.monotonic() - started
            say(f"{nodes} nodes Ready after {nodes_ready:.1f}s")
            heartbeats = Heartbeats(renew_interval)
            watchers = [asyncio.create_task(heartbeats.watch_leases(client), name="bench-leases"),
                        asyncio.create_task(heartbeats.watch_nodes(client, node_names), name="bench-nodes")]
            try:
                result = await _start_pods(client, node_names, pods, namespace, create_concurrency, say)
                # Keep watching heartbeats for a whole interval after the Pods, so that the busiest
                # period's renewals are all in.
                await asyncio.sleep(renew_interval * 1.5)
            finally:
                for task in watchers:
                    task.cancel()
                await asyncio.gather(*watchers, return_exceptions=True)
    result.update(nodes=nodes, pods=pods, nodes_ready_seconds=round(nodes_ready, 2), **heartbeats.figures())
    if kubelet_pid is not None:
        result["kubelet_peak_rss_mib"] = peak_rss_mib(kubelet_pid)
    return result


async def _wait_nodes_ready(client: Client, count: int, say: Progress) -> list[str]:
    last = -1
    while True:
        listed = await client.list(NODE_VIEWS)
        ready = sorted(n.metadata.name for n in listed.items
                       if any(c.type == "Ready" and c.status == "True" for c in n.status.conditions or ()))
        if len(ready) >= count:
            return ready[:count]
        if len(ready) != last:
            say(f"{len(ready)}/{count} nodes Ready")
            last = len(ready)
        await asyncio.sleep(0.5)


async def _start_pods(client: Client, node_names: Sequence[str], count: int, namespace: str, concurrency: int,
                      say: Progress) -> dict[str, Any]:
    with contextlib.suppress(AlreadyExists):
        await client.create(NAMESPACES, {"metadata": {"name": namespace}})
    listed = await client.list(POD_VIEWS, namespace=namespace, limit=None)
    running: set[str] = set()
    all_running = asyncio.Event()

    async def watch() -> None:
        async with contextlib.aclosing(client.watch(POD_VIEWS, namespace=namespace,
                                                    resource_version=listed.resource_version)) as events:
            async for event in events:
                if isinstance(event, WatchEvent) and event.object.status.phase == "Running":
                    running.add(event.object.metadata.name)
                    if len(running) >= count:
                        all_running.set()

    queue: asyncio.Queue[int] = asyncio.Queue()
    for i in range(count):
        queue.put_nowait(i)

    async def create() -> None:
        while not queue.empty():
            i = queue.get_nowait()
            body = {"metadata": {"name": f"density-{i}"},
                    "spec": {"nodeName": node_names[i % len(node_names)],
                             "containers": [{"name": "pause", "image": _POD_IMAGE,
                                             "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]}}
            await client.create(POD_VIEWS, body, namespace=namespace)

    watcher = asyncio.create_task(watch(), name="bench-pods")
    try:
        first = time.monotonic()
        await asyncio.gather(*(create() for _ in range(concurrency)))
        created = time.monotonic() - first
        say(f"created {count} Pods in {created:.1f}s; waiting for them to run")
        await all_running.wait()
        elapsed = time.monotonic() - first
    finally:
        watcher.cancel()
        await asyncio.gather(watcher, return_exceptions=True)
    say(f"{count} Pods Running {elapsed:.1f}s after the first was created")
    return {"pods_created_per_second": round(count / created, 1), "pods_running_seconds": round(elapsed, 2),
            "pods_started_per_second": round(count / elapsed, 1)}


class Heartbeats:
    """Lease renewals and Ready conditions seen through watches."""

    def __init__(self, interval: float) -> None:
        self._interval = interval
        self._last: dict[str, float] = {}
        self.lateness: list[float] = []
        self.not_ready: set[str] = set()

    async def watch_leases(self, client: Client) -> None:
        listed = await client.list(LEASES, namespace=_NODE_LEASE_NAMESPACE)
        for lease in listed.items:
            self._renewed(lease)
        await self._watch(client, LEASES, _NODE_LEASE_NAMESPACE, listed,
                          lambda event: self._renewed(event.object))

    def _renewed(self, lease: V1Lease) -> None:
        renew = parse_time(lease.spec.renew_time if lease.spec is not None else None)
        if renew is None or lease.metadata is None:
            return
        when = renew.timestamp()
        name = lease.metadata.name or ""
        previous = self._last.get(name)
        if previous is not None and when > previous:
            self.lateness.append(max(0.0, when - previous - self._interval))
        self._last[name] = when

    async def watch_nodes(self, client: Client, names: Sequence[str]) -> None:
        ours = set(names)
        listed = await client.list(NODE_VIEWS)

        def seen(event: WatchEvent[Any]) -> None:
            node = event.object
            if node.metadata.name in ours and not any(c.type == "Ready" and c.status == "True"
                                                      for c in node.status.conditions or ()):
                self.not_ready.add(node.metadata.name)

        await self._watch(client, NODE_VIEWS, None, listed, seen)

    @staticmethod
    async def _watch(client: Client, resource: TypedResource[Any], namespace: str | None,
                     listed: ObjectList[Any],
                     handle: Callable[[WatchEvent[Any]], None]) -> None:
        async with contextlib.aclosing(client.watch(resource, namespace=namespace,
                                                    resource_version=listed.resource_version)) as events:
            async for event in events:
                if isinstance(event, WatchEvent):
                    handle(event)

    def figures(self) -> dict[str, Any]:
        late = sorted(self.lateness)
        p99 = late[min(len(late) - 1, math.ceil(0.99 * len(late)) - 1)] if late else 0.0
        worst = late[-1] if late else 0.0
        return {"heartbeat_renewals": len(late), "heartbeat_lateness_p99_seconds": round(p99, 3),
                "heartbeat_lateness_max_seconds": round(worst, 3),
                # Compare with the node lifecycle controller's grace period (40 s): a longer gap is a
                # node marked unreachable.
                "heartbeat_gap_max_seconds": round(self._interval + worst, 3),
                "nodes_not_ready": len(self.not_ready)}


def peak_rss_mib(pid: int) -> float | None:
    """``VmHWM`` of a process in MiB (Linux), or None when it cannot be read."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        return None
    return None


# --- the command -------------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kubelet_sim.bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=5000, help="nodes kubelet_sim hosts (default 5000)")
    parser.add_argument("--pods", type=int, default=10000, help="Pods to start (default 10000)")
    parser.add_argument("--api", metavar="URL", help="measure this running cluster instead of starting one")
    parser.add_argument("--kubelet-pid", type=int, help="with --api: the kubelet_sim's pid, for its peak RSS")
    parser.add_argument("--workdir", type=Path, help="keep etcd data and logs here (default: a temporary "
                                                     "directory, removed afterwards)")
    parser.add_argument("--node-lifecycle", action="store_true",
                        help="also run the controller-manager's node lifecycle controller, which marks nodes "
                             "whose heartbeats are late NotReady (counted in nodes_not_ready)")
    args = parser.parse_args(argv)
    if args.nodes < 1 or args.pods < 1:
        parser.error("--nodes and --pods must be at least 1")

    def say(message: str) -> None:
        print(f"bench: {message}", file=sys.stderr, flush=True)

    if args.api:
        result = asyncio.run(density(args.api, nodes=args.nodes, pods=args.pods, kubelet_pid=args.kubelet_pid,
                                     progress=say))
    else:
        with cluster(keep=args.workdir) as c:
            if args.node_lifecycle:
                c.start_component("controller-manager", "controller_manager",
                                  [*c.component_flags("controller-manager"), "--controllers=node-lifecycle-controller"])
            # Not waited for: the time until every node is Ready is one of the figures. Each node is itself
            # (system:node:<name>, with its token), as in kubesim up.
            kubelet = c.start_component("kubelet_sim", "kubelet_sim",
                                        [*c.component_flags("kubelet"), "--nodes", str(args.nodes)])
            say(f"started etcd, the APIServer ({c.url}) and kubelet_sim with {args.nodes} nodes")
            result = asyncio.run(density(c.config(), nodes=args.nodes, pods=args.pods, kubelet_pid=kubelet.pid,
                                         progress=say))
            if not kubelet.alive():
                say(f"kubelet_sim exited during the benchmark:\n{procs.tail(kubelet.log_path)}")
                return 1
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
