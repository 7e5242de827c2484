"""The trace format: what ``kubesim record`` writes and ``kubesim replay`` and ``kubesim compare`` read.

A trace is JSON Lines, gzip-compressed when the file name ends in ``.gz``
(the reader tells by the content, not the name). Line 1 is the header, then
one line per recorded change, then one end line::

    {"kubesimTrace": 1, "startTime": "2026-12-01T10:00:00.000000Z", "server": "https://...",
     "kinds": ["Deployment.apps", "Node", "Pod", ...]}
    {"seq": 1, "t": 0.0, "type": "INITIAL", "object": {...}}
    {"seq": 2, "t": 0.0, "type": "INITIAL", "object": {...}}
    {"seq": 3, "t": 4.2113, "type": "ADDED", "object": {...}}
    {"seq": 4, "t": 9.87, "type": "MODIFIED", "object": {...}, "observed": {"deleting": true}}
    {"seq": 5, "t": 11.02, "type": "DELETED", "object": {...}}
    {"end": true, "records": 5, "duration": 30.0}

- ``kubesimTrace`` is the format's version (:data:`VERSION`); a reader refuses
  a newer one. ``kinds`` are the group kinds that were watched.
- ``seq`` counts records from 1 with no gap; ``t`` is seconds since
  ``startTime`` and never goes back. ``INITIAL`` records are the objects that
  existed when recording began (``t`` 0); ``ADDED``, ``MODIFIED`` and
  ``DELETED`` are watch events, as they happened.
- ``object`` is the object in its portable form (see
  :mod:`kubesim.studies.objects`: no server-set metadata, no status but a
  Node's shape, no Secret data). A change that leaves the portable form as it
  was (a status update, a heartbeat) is not recorded.
- ``observed`` holds the few facts about an object that its portable form
  drops but that tell who acted: ``deleting`` (it has a deletionTimestamp) and
  ``disruption`` (the reason of a Pod's ``DisruptionTarget`` condition:
  ``PreemptionByScheduler``, ``DeletionByTaintManager``...).
- the end line says the recorder finished: a trace without one was cut short.

:func:`read` checks all of it and reports the first problem with its line
(truncated, reordered or missing lines, a newer version, a line that is not
JSON); :class:`Writer` writes it. Readers see whole traces or errors, never
part of a trace without saying so.

Pure I/O on files; one writer per file.
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Final, Literal

import orjson

VERSION: Final = 1
RecordType = Literal["INITIAL", "ADDED", "MODIFIED", "DELETED"]
RECORD_TYPES: Final = frozenset({"INITIAL", "ADDED", "MODIFIED", "DELETED"})
_GZIP_MAGIC: Final = b"\x1f\x8b"


class TraceError(ValueError):
    """A trace that cannot be used; the message names the file and the line."""


@dataclass(frozen=True, slots=True)
class Record:
    seq: int
    t: float
    type: RecordType
    object: dict[str, Any]
    observed: Mapping[str, Any] = field(default_factory=dict)

    def line(self) -> dict[str, Any]:
        out: dict[str, Any] = {"seq": self.seq, "t": round(self.t, 6), "type": self.type, "object": self.object}
        if self.observed:
            out["observed"] = dict(self.observed)
        return out


@dataclass(frozen=True, slots=True)
class Header:
    start_time: str
    server: str = ""
    kinds: tuple[str, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)

    def line(self) -> dict[str, Any]:
        return {"kubesimTrace": VERSION, "startTime": self.start_time, "server": self.server,
                "kinds": list(self.kinds), **self.extra}


@dataclass(frozen=True, slots=True)
class Trace:
    header: Header
    records: list[Record]
    duration: float

    def __len__(self) -> int:
        return len(self.records)


class Writer:
    """Writes a trace, record by record; :meth:`close` writes the end line (without it the trace is truncated)."""

    def __init__(self, path: Path, header: Header) -> None:
        self.path = path
        raw: IO[bytes] = path.open("wb")
        self._file: IO[bytes] | gzip.GzipFile = (gzip.GzipFile(fileobj=raw, mode="wb", mtime=0)
                                                 if path.name.endswith(".gz") else raw)
        self._raw = raw
        self._seq = 0
        self._last_t = 0.0
        self._write(header.line())

    @property
    def records(self) -> int:
        return self._seq

    def write(self, t: float, type: RecordType, obj: dict[str, Any], observed: Mapping[str, Any] | None = None) -> None:
        t = max(t, self._last_t)
        self._last_t = t
        self._seq += 1
        self._write(Record(self._seq, t, type, obj, observed or {}).line())

    def flush(self) -> None:
        self._file.flush()

    def close(self, duration: float) -> None:
        self._write({"end": True, "records": self._seq, "duration": round(max(duration, self._last_t), 6)})
        self._file.close()
        if self._file is not self._raw:
            self._raw.close()

    def _write(self, doc: Mapping[str, Any]) -> None:
        self._file.write(orjson.dumps(doc) + b"\n")


def write(path: Path, trace: Trace) -> None:
    """Write a whole trace (a filtered one, a generated one)."""
    writer = Writer(path, trace.header)
    for record in trace.records:
        writer.write(record.t, record.type, record.object, record.observed)
    writer.close(trace.duration)


def _lines(path: Path) -> Iterator[tuple[int, bytes]]:
    try:
        raw = path.open("rb")
    except OSError as err:
        raise TraceError(f"cannot read trace {path}: {err.strerror or err}") from None
    with raw:
        stream: IO[bytes] | gzip.GzipFile = raw
        if raw.read(2) == _GZIP_MAGIC:
            raw.seek(0)
            stream = gzip.GzipFile(fileobj=raw, mode="rb")
        else:
            raw.seek(0)
        number = 0
        try:
            for number, line in enumerate(stream, start=1):
                yield number, line
        except (EOFError, zlib.error, gzip.BadGzipFile, OSError) as err:
            raise TraceError(f"{path}: line {number + 1}: the trace ends in the middle of its compressed data "
                             f"(truncated: was the recorder stopped before it finished?): {err}") from None


def read(path: Path) -> Trace:
    """The whole trace, checked (see the module docstring); :class:`TraceError` at the first problem."""
    header: Header | None = None
    records: list[Record] = []
    end: dict[str, Any] | None = None
    last_t = 0.0
    for number, line in _lines(path):
        if not line.strip():
            continue
        where = f"{path}: line {number}"
        try:
            doc = orjson.loads(line)
        except orjson.JSONDecodeError:
            truncated = " (the last line is cut: truncated?)" if not line.endswith(b"\n") else ""
            raise TraceError(f"{where}: not a JSON object{truncated}") from None
        if not isinstance(doc, dict):
            raise TraceError(f"{where}: not a JSON object")
        if header is None:
            header = _header(doc, where)
            continue
        if end is not None:
            raise TraceError(f"{where}: a record after the end line")
        if doc.get("end") is True:
            end = doc
            continue
        record = _record(doc, where)
        if record.seq != len(records) + 1:
            raise TraceError(f"{where}: record seq {record.seq} where {len(records) + 1} was expected: lines are "
                             "missing or out of order")
        if record.t < last_t:
            raise TraceError(f"{where}: time goes back from {last_t} to {record.t}: the records are out of order")
        last_t = record.t
        records.append(record)
    if header is None:
        raise TraceError(f"{path}: empty: not a trace")
    if end is None:
        raise TraceError(f"{path}: line {len(records) + 2}: no end line after record {len(records)}: the trace was "
                         "cut short (truncated)")
    if end.get("records") != len(records):
        raise TraceError(f"{path}: the end line counts {end.get('records')} records, the trace has {len(records)}")
    duration = end.get("duration")
    return Trace(header, records, float(duration) if isinstance(duration, int | float) else last_t)


def _header(doc: Mapping[str, Any], where: str) -> Header:
    version = doc.get("kubesimTrace")
    if not isinstance(version, int) or isinstance(version, bool):
        raise TraceError(f"{where}: not a kubesim trace (the first line has no kubesimTrace version)")
    if version > VERSION:
        raise TraceError(f"{where}: trace format version {version} is newer than this kubesim reads ({VERSION}): "
                         "upgrade kubesim to replay it")
    start = doc.get("startTime")
    if not isinstance(start, str):
        raise TraceError(f"{where}: the header has no startTime")
    extra = {k: v for k, v in doc.items() if k not in ("kubesimTrace", "startTime", "server", "kinds")}
    return Header(start, str(doc.get("server") or ""), tuple(str(k) for k in doc.get("kinds") or ()), extra)


def _record(doc: Mapping[str, Any], where: str) -> Record:
    seq, t, type_, obj = doc.get("seq"), doc.get("t"), doc.get("type"), doc.get("object")
    if not isinstance(seq, int) or isinstance(seq, bool) or not isinstance(t, int | float) or isinstance(t, bool):
        raise TraceError(f"{where}: a record needs an integer seq and a number t")
    if type_ not in RECORD_TYPES:
        raise TraceError(f"{where}: unknown record type {type_!r} (want one of {', '.join(sorted(RECORD_TYPES))})")
    if not isinstance(obj, dict) or not obj.get("kind") or not isinstance(obj.get("metadata"), dict):
        raise TraceError(f"{where}: a record needs an object with kind and metadata")
    observed = doc.get("observed") or {}
    if not isinstance(observed, dict):
        raise TraceError(f"{where}: observed must be an object")
    return Record(seq, float(t), type_, obj, observed)
