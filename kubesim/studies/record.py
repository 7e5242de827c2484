"""``kubesim record --out TRACE``: watch every kind and write each change with its time.

Discovery gives the kinds (built-in and custom, minus
:data:`~kubesim.studies.objects.SKIPPED_BY_DEFAULT` unless ``--include``\\ d);
one informer per kind lists then watches it (relisting when a watch expires,
as any informer does). Once every informer has synced, the objects that exist
are written as ``INITIAL`` records and from then on each change as it arrives
(the format is :mod:`.traceformat`'s). A change that leaves an object's
portable form as it was (a status write, a heartbeat) is not written. Any
cluster a kubeconfig reaches can be recorded; the recorder only reads.

It stops on Ctrl-C, SIGTERM or after ``--duration``, and then writes the end
line: a trace without one was cut short, and replay says so. Records are
flushed every second.

Concurrency: one event loop; informer handlers write records synchronously,
so records are in the order the watches delivered them.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import signal
import sys
import time
from pathlib import Path
from typing import Any

from kubesim.studies import api, traceformat
from kubesim.studies.objects import SKIPPED_BY_DEFAULT, key_of, portable
from machinery.client import ApiError, Client, ConfigError, TransportError
from machinery.informer import DeletedFinalStateUnknown, InformerFactory

_SYNC_TIMEOUT = 60.0


def observed_of(obj: dict[str, Any]) -> dict[str, Any]:
    """What the trace keeps beside the portable form: is it being deleted, did the system disrupt it."""
    out: dict[str, Any] = {}
    if (obj.get("metadata") or {}).get("deletionTimestamp"):
        out["deleting"] = True
    for condition in (obj.get("status") or {}).get("conditions") or ():
        if condition.get("type") == "DisruptionTarget" and condition.get("status") == "True":
            out["disruption"] = condition.get("reason") or ""
    return out


class Recorder:
    """Writes every change of every watched kind to one trace."""

    def __init__(self, client: Client, writer_path: Path, *, include: list[str], exclude: list[str],
                 server: str) -> None:
        self._client = client
        self._path = writer_path
        self._include = include
        self._exclude = exclude
        self._server = server
        self._factory = InformerFactory(client)
        self._writer: traceformat.Writer | None = None
        self._live = False
        self._start = 0.0
        self._last: dict[tuple[str, str, str], tuple[dict[str, Any], dict[str, Any]]] = {}
        self.kinds: list[str] = []

    async def run(self, stop: asyncio.Event, *, duration: float | None = None) -> traceformat.Writer:
        discovery = await api.discover(self._client)
        skipped = (set(SKIPPED_BY_DEFAULT) - set(self._include)) | set(self._exclude)
        informers = []
        for served in discovery.resources:
            if served.group_kind in skipped or not served.can("list", "watch"):
                continue
            try:
                await self._client.list(served.info, limit=1)
            except (ApiError, TransportError) as err:
                print(f"warning: not recording {served.info.group_resource}: {err}", file=sys.stderr)
                continue
            informer = self._factory.informer(served.info)
            informer.add_handler(on_add=lambda o, s=served: self._change("ADDED", o.wire, s),  # type: ignore[misc]
                                 on_update=lambda _o, n, s=served: self._change("MODIFIED", n.wire, s),  # type: ignore[misc]
                                 on_delete=lambda o, s=served: self._deleted(o, s))  # type: ignore[misc]
            informers.append((served, informer))
            self.kinds.append(served.group_kind)
        task = asyncio.create_task(self._factory.run(), name="recorder-informers")
        try:
            await asyncio.wait_for(self._factory.wait_for_cache_sync(), _SYNC_TIMEOUT)
            header = traceformat.Header(dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
                                        self._server, tuple(sorted(self.kinds)))
            self._writer = writer = traceformat.Writer(self._path, header)
            self._start = time.monotonic()
            initial = []
            for served, informer in informers:
                for item in informer.store.list():
                    obj = self._complete(item.wire, served)
                    initial.append((key_of(obj), obj))
            for key, obj in sorted(initial, key=lambda pair: pair[0]):
                self._write("INITIAL", obj, key, at=0.0)
            self._live = True
            flusher = asyncio.create_task(self._flush_every_second(), name="recorder-flush")
            try:
                waiting = asyncio.create_task(stop.wait())
                done, _ = await asyncio.wait({waiting, task}, timeout=duration,
                                             return_when=asyncio.FIRST_COMPLETED)
                waiting.cancel()
                if task in done:
                    task.result()
            finally:
                flusher.cancel()
                await asyncio.gather(flusher, return_exceptions=True)
            writer.close(time.monotonic() - self._start)
            return writer
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def _flush_every_second(self) -> None:
        while True:
            await asyncio.sleep(1.0)
            if self._writer is not None:
                self._writer.flush()

    @staticmethod
    def _complete(obj: dict[str, Any], served: api.Served) -> dict[str, Any]:
        obj.setdefault("apiVersion", served.info.api_version)
        obj.setdefault("kind", served.info.kind)
        return obj

    def _change(self, type_: traceformat.RecordType, obj: dict[str, Any], served: api.Served) -> None:
        if not self._live:
            return
        obj = self._complete(obj, served)
        self._write(type_, obj, key_of(obj))

    def _deleted(self, obj: Any, served: api.Served) -> None:
        if not self._live:
            return
        raw = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        wire = self._complete(raw.wire, served)
        self._write("DELETED", wire, key_of(wire))

    def _write(self, type_: traceformat.RecordType, obj: dict[str, Any], key: tuple[str, str, str],
               at: float | None = None) -> None:
        assert self._writer is not None
        form, observed = portable(obj), observed_of(obj)
        if type_ == "MODIFIED" and self._last.get(key) == (form, observed):
            return
        if type_ == "DELETED":
            self._last.pop(key, None)
        else:
            self._last[key] = (form, observed)
        self._writer.write(time.monotonic() - self._start if at is None else at, type_, form, observed)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=Path, required=True, metavar="TRACE",
                        help="the trace to write (gzip-compressed when it ends in .gz, as TRACE.jsonl.gz)")
    parser.add_argument("--duration", type=float, default=None, metavar="SECONDS",
                        help="stop after this many seconds (default: at Ctrl-C or SIGTERM)")
    parser.add_argument("--include", action="append", default=[], metavar="KIND",
                        help="also record a kind skipped by default (Event, Lease.coordination.k8s.io, ...)")
    parser.add_argument("--exclude", action="append", default=[], metavar="KIND",
                        help="do not record a kind (Kind or Kind.group); repeatable")
    api.add_connection_flags(parser)


def main(args: argparse.Namespace) -> int:
    try:
        config = api.connection(args.kubeconfig, args.server)
    except ConfigError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    try:
        return asyncio.run(_record(config, args))
    except (ApiError, TransportError) as err:
        print(f"error: {config.server}: {err}", file=sys.stderr)
        return 1
    except TimeoutError:
        print(f"error: {config.server}: the watches did not sync within {_SYNC_TIMEOUT:.0f}s", file=sys.stderr)
        return 1


async def _record(config: Any, args: argparse.Namespace) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        async with api.client(config, "record") as client:
            recorder = Recorder(client, args.out, include=args.include, exclude=args.exclude, server=config.server)
            writer = await recorder.run(stop, duration=args.duration)
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(Exception):
                loop.remove_signal_handler(sig)
    print(f"recorded {writer.records} records of {len(recorder.kinds)} kinds to {args.out}", file=sys.stderr)
    return 0
