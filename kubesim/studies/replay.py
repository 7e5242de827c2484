"""``kubesim replay TRACE``: redo a recorded trace's client actions on a cluster, at K times real speed.

The trace is read and checked whole before anything is sent (a truncated,
reordered or newer trace is refused with its line), filtered
(:mod:`.tracefilter`), and its kinds checked against what the target serves
(the kinds it lacks are listed and their actions skipped). Then:

1. the trace's starting state (its ``INITIAL`` records) is loaded as a
   snapshot is (:class:`~kubesim.studies.snapshot.Loader`: Nodes adopted by
   kubelet_sim, bound Pods on their nodes);
2. the client actions (:mod:`.actions`) are sent at their times divided by
   ``--speed``: creates (a Node created is adopted by kubelet_sim, which is how
   nodes are added; one deleted is removed), updates, scales and deletes.
   Controllers, the scheduler and the kubelets do the rest, so the outcome is
   the target's, not the trace's. Actions on one object keep their order, and
   come after the pending actions on their Namespace (an object is never sent
   before the Namespace it goes in); actions on other objects may overlap when
   the replay runs behind;
3. ``--from T`` fast-forwards: the actions before T are sent at once, then
   the clock starts; ``--to T`` stops there.

``--seed N`` makes a replay deterministic: the actions of each instant are
sent one by one, and the next instant waits until the cluster has settled
(see :mod:`.observe`; give ``--scheduler-metrics`` so the scheduler's queue
counts too), so that with the scheduler's own ``--seed`` the same trace gives
the same placements; it also seeds the filter's ``sample``.

Concurrency: one event loop; at most ``--parallel`` requests in flight.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from kubelet_sim.adopt import ADOPT_ANNOTATION
from kubesim.studies import api, tracefilter, traceformat
from kubesim.studies.actions import Action, client_actions, initial_objects
from kubesim.studies.objects import group_kind, key_of, owner_key
from kubesim.studies.observe import Observer
from kubesim.studies.snapshot import Loader, LoadReport
from machinery.api.duration import parse_duration
from machinery.client import (
    AlreadyExists,
    ApiError,
    Client,
    ConfigError,
    Conflict,
    NotFound,
    PatchType,
    TransportError,
)

#: Built-in traces, named ``builtin:NAME`` on the command line.
BUILTIN: Final = {"spread-vs-pack": "traces/spread-vs-pack.jsonl"}


def trace_path(name: str) -> Path:
    if name.startswith("builtin:"):
        builtin = BUILTIN.get(name.removeprefix("builtin:"))
        if builtin is None:
            raise traceformat.TraceError(f"no built-in trace {name!r}: there are "
                                         + ", ".join(f"builtin:{n}" for n in BUILTIN))
        return Path(__file__).parent / builtin
    return Path(name)


@dataclass
class ReplayReport:
    initial: LoadReport | None = None
    sent: Counter[str] = field(default_factory=Counter)
    failed: list[str] = field(default_factory=list)
    not_served: Counter[str] = field(default_factory=Counter)
    #: Wall-clock seconds the actions took (the initial state excluded), and the trace seconds they covered.
    wall_seconds: float = 0.0
    trace_seconds: float = 0.0
    settled: bool = True

    def summary(self) -> str:
        lines = []
        if self.initial is not None:
            lines.append(f"initial state: {self.initial.loaded} objects loaded")
        lines.append(f"sent {sum(self.sent.values())} actions ("
                     + ", ".join(f"{v} {k}" for k, v in sorted(self.sent.items())) + ")"
                     + (f" covering {self.trace_seconds:.1f}s of trace in {self.wall_seconds:.1f}s"
                        if self.wall_seconds else ""))
        if self.not_served:
            lines.append("skipped, the target does not serve these kinds: "
                         + ", ".join(f"{k} ({v} actions)" for k, v in sorted(self.not_served.items())))
        if not self.settled:
            lines.append("warning: the cluster did not settle within the time allowed")
        lines.extend(f"failed: {m}" for m in self.failed)
        return "\n".join(lines)


class Replayer:
    """Sends one trace's actions to one cluster (see the module docstring)."""

    def __init__(self, client: Client, *, speed: float = 1.0, start: float = 0.0, end: float | None = None,
                 deterministic: bool = False, observer: Observer | None = None, adopt_nodes: bool = True,
                 parallel: int = 32, progress: Callable[[str], None] | None = None,
                 settle_timeout: float = 120.0) -> None:
        self._client = client
        self._speed = speed
        self._start = start
        self._end = end
        self._deterministic = deterministic
        self._observer = observer
        self._adopt_nodes = adopt_nodes
        self._slots = asyncio.Semaphore(parallel)
        self._progress = progress or (lambda _msg: None)
        self._settle_timeout = settle_timeout
        self._served: dict[tuple[str, str], api.Served] = {}
        self._uids: dict[tuple[str, str, str], str] = {}
        self._last: dict[tuple[str, str, str], asyncio.Task[None]] = {}
        self.report = ReplayReport()

    async def run(self, initial: Sequence[dict[str, Any]], actions: Sequence[Action]) -> ReplayReport:
        discovery = await api.discover(self._client, all_versions=True)
        self._served = {(s.info.api_version, s.info.kind): s for s in discovery.resources}
        if initial:
            loader = Loader(self._client, adopt_nodes=self._adopt_nodes)
            self.report.initial = await loader.load(initial)
            self._uids.update(loader.uids)
        await self._settle()
        if self._observer is not None:
            self._observer.sample(self._start)
        wanted = [a for a in actions if self._end is None or a.t <= self._end]
        for action in wanted:
            if self._resource(action.object) is None:
                self.report.not_served[action.kind] += 1
        wanted = [a for a in wanted if self._resource(a.object) is not None]
        before = [a for a in wanted if a.t < self._start]
        timed = [a for a in wanted if a.t >= self._start]
        for action in before:
            await self._send(action)
        began = time.monotonic()
        if self._deterministic:
            await self._run_deterministic(timed, began)
        else:
            await self._run_timed(timed, began)
        self.report.wall_seconds = time.monotonic() - began
        self.report.trace_seconds = (timed[-1].t - self._start) if timed else 0.0
        await self._settle()
        if self._observer is not None:
            self._observer.sample(timed[-1].t if timed else self._start)
        return self.report

    # --- pacing ------------------------------------------------------------------------------------------

    def _due(self, action: Action, began: float) -> float:
        return began + (action.t - self._start) / self._speed

    async def _run_timed(self, actions: Sequence[Action], began: float) -> None:
        sampler = asyncio.create_task(self._sample_every_second(began), name="replay-sampler")
        try:
            for action in actions:
                delay = self._due(action, began) - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
                await self._dispatch(action)
            while self._last:
                await asyncio.gather(*list(self._last.values()), return_exceptions=True)
        finally:
            sampler.cancel()
            await asyncio.gather(sampler, return_exceptions=True)

    async def _sample_every_second(self, began: float) -> None:
        if self._observer is None:
            return
        while True:
            await asyncio.sleep(1.0)
            self._observer.sample(self._start + (time.monotonic() - began) * self._speed)

    async def _run_deterministic(self, actions: Sequence[Action], began: float) -> None:
        index = 0
        while index < len(actions):
            instant = actions[index].t
            batch = []
            while index < len(actions) and actions[index].t == instant:
                batch.append(actions[index])
                index += 1
            delay = self._due(batch[0], began) - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            for action in batch:
                await self._send(action)
            await self._settle()
            if self._observer is not None:
                self._observer.sample(instant)

    async def _settle(self) -> None:
        if (self._observer is not None and self._deterministic
                and not await self._observer.wait_settled(timeout=self._settle_timeout)):
            self.report.settled = False

    async def _dispatch(self, action: Action) -> None:
        """Start sending ``action`` after the previous action on the same object (and on its Namespace), without
        waiting for it.

        A slot is taken here (and given back when the send ends), so a replay
        running behind waits instead of piling up sends.
        """
        _, namespace, _ = action.key
        before = [t for t in (self._last.get(action.key),
                              self._last.get(("Namespace", "", namespace)) if namespace else None) if t is not None]
        await self._slots.acquire()

        async def run() -> None:
            try:
                if before:
                    await asyncio.gather(*before, return_exceptions=True)
                await self._send(action)
            finally:
                self._slots.release()
        task = asyncio.create_task(run(), name=f"replay-{action.verb}")
        self._last[action.key] = task
        task.add_done_callback(lambda t, key=action.key: self._last.pop(key, None)  # type: ignore[misc]
                               if self._last.get(key) is t else None)

    # --- sending -----------------------------------------------------------------------------------------

    def _resource(self, obj: dict[str, Any]) -> Any:
        served = self._served.get((str(obj.get("apiVersion")), str(obj.get("kind"))))
        return served.info if served is not None else None

    async def _send(self, action: Action) -> None:
        info = self._resource(action.object)
        kind, namespace, name = action.key
        label = f"{action.verb} {kind} {namespace + '/' if namespace else ''}{name} at {action.t:.3f}s"
        try:
            if action.verb == "create":
                await self._create(info, action.object)
            elif action.verb == "update":
                await self._update(info, action.object)
            elif action.verb == "scale":
                await self._client.patch(info, name, {"spec": {"replicas": action.replicas}},
                                         namespace=namespace or None, patch_type=PatchType.MERGE)
            else:
                try:
                    await self._client.delete(info, name, namespace=namespace or None)
                except NotFound:
                    pass
                self._uids.pop(action.key, None)
        except (ApiError, TransportError, _StillChanging) as err:
            self.report.failed.append(f"{label}: {err}")
            return
        self.report.sent[action.verb] += 1

    async def _create(self, info: Any, obj: dict[str, Any]) -> None:
        body = dict(obj)
        meta = dict(body.get("metadata") or {})
        refs = []
        for ref in meta.get("ownerReferences") or ():
            owner = self._served.get((str(ref.get("apiVersion")), str(ref.get("kind"))))
            key = owner_key(obj, ref, owner.info.namespaced if owner is not None else True)
            uid = self._uids.get(key) or await self._find_uid(owner, key)
            if uid:
                refs.append({**ref, "uid": uid})
        if refs:
            meta["ownerReferences"] = refs
        else:
            meta.pop("ownerReferences", None)
        if group_kind(obj) == "Node" and self._adopt_nodes:
            meta["annotations"] = {**(meta.get("annotations") or {}), ADOPT_ANNOTATION: "true"}
        body["metadata"] = meta
        namespace = meta.get("namespace")
        try:
            created = await api.create(self._client, info, body, namespace or None)
        except AlreadyExists:
            await self._update(info, obj)
            return
        self._uids[key_of(obj)] = str((created.wire.get("metadata") or {}).get("uid") or "")

    async def _find_uid(self, owner: api.Served | None, key: tuple[str, str, str]) -> str | None:
        if owner is None:
            return None
        try:
            found = await self._client.get(owner.info, key[2], namespace=key[1] or None)
        except (ApiError, TransportError):
            return None
        uid = str((found.wire.get("metadata") or {}).get("uid") or "")
        self._uids[key] = uid
        return uid

    async def _update(self, info: Any, obj: dict[str, Any]) -> None:
        """PUT the recorded object over the current one, keeping what the cluster owns in it."""
        _, namespace, name = key_of(obj)
        for _attempt in range(5):
            current = (await self._client.get(info, name, namespace=namespace or None)).wire
            body = {k: v for k, v in obj.items() if k != "status"}
            cur_meta = current.get("metadata") or {}
            meta = dict(obj.get("metadata") or {})
            for kept in ("resourceVersion", "ownerReferences", "finalizers", "uid"):
                if kept in cur_meta:
                    meta[kept] = cur_meta[kept]
            if group_kind(obj) == "Node" and ADOPT_ANNOTATION in (cur_meta.get("annotations") or {}):
                meta["annotations"] = {**(meta.get("annotations") or {}), ADOPT_ANNOTATION: "true"}
            body["metadata"] = meta
            spec = dict(body.get("spec") or {})
            cur_spec = current.get("spec") or {}
            if group_kind(obj) == "Pod" and cur_spec.get("nodeName"):
                spec["nodeName"] = cur_spec["nodeName"]
            if group_kind(obj) == "Node":
                for kept in ("podCIDR", "podCIDRs"):
                    if kept in cur_spec:
                        spec[kept] = cur_spec[kept]
                system = [t for t in cur_spec.get("taints") or () if str(t.get("key", "")).startswith("node.kubernetes.io/")]
                spec["taints"] = [*(spec.get("taints") or ()), *system]
            if "spec" in body:
                body["spec"] = spec
            if "status" in current:
                body["status"] = current["status"]
            try:
                await self._client.update(info, body)
                return
            except Conflict:
                continue
        raise _StillChanging(f"{group_kind(obj)} {name} kept changing while being updated")


class _StillChanging(Exception):
    """An object that changed under five updates in a row (reported as the action's failure)."""


def parse_time(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        pass
    try:
        return parse_duration(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def positive(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError("must be above 0")
    return value


def load_trace(name: str, filters: Sequence[str], seed: int) -> traceformat.Trace:
    """Read, check and filter a trace (raises TraceError or FilterError, nothing sent yet)."""
    trace = traceformat.read(trace_path(name))
    return tracefilter.apply(trace, tracefilter.parse(filters, seed=seed))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("trace", metavar="TRACE",
                        help="a trace written by kubesim record (.jsonl or .jsonl.gz), or builtin:spread-vs-pack")
    parser.add_argument("--speed", type=positive, default=1.0, metavar="K",
                        help="replay at K times real speed (default 1; 1000 for as fast as the cluster goes)")
    parser.add_argument("--from", dest="start", type=parse_time, default=0.0, metavar="T",
                        help="start at T seconds (or a duration: 5m) into the trace; what came before is sent at once")
    parser.add_argument("--to", dest="end", type=parse_time, default=None, metavar="T",
                        help="stop after T seconds (or a duration) into the trace")
    parser.add_argument("--seed", type=int, default=None, metavar="N",
                        help="deterministic: settle after each instant, and seed the filter's random choices")
    parser.add_argument("--filter", action="append", default=[], metavar="OP",
                        help="edit the trace first (repeatable): drop-namespace NS, keep-namespace NS..., "
                             "drop-kind KIND, multiply-replicas F, shift DURATION, stretch F, sample FRACTION")
    parser.add_argument("--write-filtered", type=Path, metavar="OUT",
                        help="write the filtered trace to OUT and stop (nothing is sent)")
    parser.add_argument("--print-actions", action="store_true",
                        help="print the client actions the trace holds and stop (nothing is sent)")
    parser.add_argument("--scheduler-metrics", metavar="URL",
                        help="the scheduler's /metrics URL: a deterministic replay also waits for its queue")
    parser.add_argument("--no-adopt", action="store_true",
                        help="do not annotate created Nodes for kubelet_sim to simulate")
    api.add_connection_flags(parser)


def main(args: argparse.Namespace) -> int:
    try:
        trace = load_trace(args.trace, args.filter, args.seed or 0)
    except (traceformat.TraceError, tracefilter.FilterError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    actions = client_actions(trace.records)
    if args.write_filtered is not None:
        traceformat.write(args.write_filtered, trace)
        print(f"wrote {len(trace)} records ({len(actions)} client actions) to {args.write_filtered}")
        return 0
    if args.print_actions:
        print(f"{len(initial_objects(trace))} objects in the initial state; {len(actions)} client actions:")
        for action in actions:
            print(action.describe())
        return 0
    try:
        config = api.connection(args.kubeconfig, args.server)
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    try:
        report = asyncio.run(_replay(config, trace, args))
    except (ApiError, TransportError) as err:
        print(f"error: {config.server}: {err}", file=sys.stderr)
        return 1
    print(report.summary())
    return 1 if report.failed else 0


async def _replay(config: Any, trace: traceformat.Trace, args: argparse.Namespace) -> ReplayReport:
    async with api.client(config, "replay") as client:
        observer = None
        if args.seed is not None:
            observer = Observer(client, scheduler_metrics=args.scheduler_metrics)
            await observer.start()
        try:
            replayer = Replayer(client, speed=args.speed, start=args.start, end=args.end,
                                deterministic=args.seed is not None, observer=observer,
                                adopt_nodes=not args.no_adopt,
                                progress=lambda msg: print(msg, file=sys.stderr))
            return await replayer.run(initial_objects(trace), client_actions(trace.records))
        finally:
            if observer is not None:
                await observer.stop()
