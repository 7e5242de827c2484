"""Editing a trace before it is replayed: ``--filter OP`` (repeatable, applied in order).

The operations, each a word and its arguments::

    drop-namespace NS          leave out every object of namespace NS (and the Namespace itself)
    keep-namespace NS [NS...]  keep only these namespaces and the cluster-scoped objects
    drop-kind KIND             leave out a kind (Kind or Kind.group: Secret, Deployment.apps)
    multiply-replicas FACTOR   multiply spec.replicas of every object that has one (rounded, at least 1
                               when it was)
    shift DURATION             move every change later (or earlier: -30s) by DURATION (10s, 5m, 1h30m);
                               changes moved before 0 happen at 0
    stretch FACTOR             multiply every time by FACTOR (2: half as fast)
    sample FRACTION            keep only this fraction of the Pods and workloads created (drawn with --seed,
                               by object, so all of an object's changes go or stay together)

For example ``--filter 'drop-namespace kube-system' --filter 'multiply-replicas 3' --filter 'shift 1m'``.
The result is still a trace (``kubesim replay --write-filtered OUT`` writes it). Pure functions.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from kubesim.studies.objects import group_kind, key_of
from kubesim.studies.traceformat import Record, Trace
from machinery.api.duration import parse_duration

#: The kinds ``sample`` draws from (their objects make the load); the rest is always kept.
_SAMPLED = frozenset({"Pod", "ReplicationController", "ReplicaSet.apps", "Deployment.apps", "StatefulSet.apps",
                      "DaemonSet.apps", "Job.batch", "CronJob.batch"})


class FilterError(ValueError):
    """An operation that cannot be parsed; the message shows it."""


@dataclass(frozen=True, slots=True)
class Operation:
    text: str
    apply: Callable[[Trace], Trace]


def parse(texts: Sequence[str], *, seed: int = 0) -> list[Operation]:
    return [_parse_one(text, seed) for text in texts]


def apply(trace: Trace, operations: Sequence[Operation]) -> Trace:
    for operation in operations:
        trace = operation.apply(trace)
    return _renumber(trace)


def _parse_one(text: str, seed: int) -> Operation:
    words = text.split()
    if not words:
        raise FilterError("empty filter operation")
    op, args = words[0], words[1:]

    def need(count: int) -> list[str]:
        if len(args) != count:
            raise FilterError(f"filter {text!r}: {op} takes {count} argument{'s' if count > 1 else ''}")
        return args

    if op == "drop-namespace":
        (ns,) = need(1)
        return Operation(text, lambda t: _keep(t, lambda o: not _in_namespace(o, {ns})))
    if op == "keep-namespace":
        keep = set(args) or set(need(1))
        return Operation(text, lambda t: _keep(t, lambda o: _cluster_scoped_or_in(o, keep)))
    if op == "drop-kind":
        (kind,) = need(1)
        return Operation(text, lambda t: _keep(t, lambda o: group_kind(o) != kind))
    if op == "multiply-replicas":
        factor = _number(need(1)[0], text)
        return Operation(text, lambda t: _map_objects(t, lambda o: _multiply_replicas(o, factor)))
    if op == "shift":
        seconds = _duration(need(1)[0], text)
        return Operation(text, lambda t: _times(t, lambda x: x + seconds))
    if op == "stretch":
        factor = _number(need(1)[0], text)
        if factor <= 0:
            raise FilterError(f"filter {text!r}: the factor must be above 0")
        return Operation(text, lambda t: _times(t, lambda x: x * factor))
    if op == "sample":
        fraction = _number(need(1)[0], text)
        if not 0 <= fraction <= 1:
            raise FilterError(f"filter {text!r}: the fraction must be between 0 and 1")
        return Operation(text, lambda t: _keep(t, lambda o: _sampled(o, fraction, seed)))
    raise FilterError(f"filter {text!r}: unknown operation {op!r} (drop-namespace, keep-namespace, drop-kind, "
                      "multiply-replicas, shift, stretch, sample)")


def _number(text: str, op: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise FilterError(f"filter {op!r}: {text!r} is not a number") from None


def _duration(text: str, op: str) -> float:
    negative = text.startswith("-")
    try:
        seconds = parse_duration(text[1:] if negative else text)
    except ValueError as err:
        raise FilterError(f"filter {op!r}: {err}") from None
    return -seconds if negative else seconds


def _in_namespace(obj: dict[str, Any], namespaces: set[str]) -> bool:
    kind, namespace, name = key_of(obj)
    return namespace in namespaces or (kind == "Namespace" and name in namespaces)


def _cluster_scoped_or_in(obj: dict[str, Any], namespaces: set[str]) -> bool:
    kind, namespace, name = key_of(obj)
    if kind == "Namespace":
        return name in namespaces
    return not namespace or namespace in namespaces


def _sampled(obj: dict[str, Any], fraction: float, seed: int) -> bool:
    if group_kind(obj) not in _SAMPLED:
        return True
    digest = hashlib.sha256(f"{seed}/{'/'.join(key_of(obj))}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < fraction


def _multiply_replicas(obj: dict[str, Any], factor: float) -> dict[str, Any]:
    spec = obj.get("spec")
    if not isinstance(spec, dict) or not isinstance(spec.get("replicas"), int):
        return obj
    replicas = spec["replicas"]
    scaled = round(replicas * factor)
    if replicas > 0:
        scaled = max(scaled, 1)
    return {**obj, "spec": {**spec, "replicas": scaled}}


def _keep(trace: Trace, keep: Callable[[dict[str, Any]], bool]) -> Trace:
    return replace(trace, records=[r for r in trace.records if keep(r.object)])


def _map_objects(trace: Trace, change: Callable[[dict[str, Any]], dict[str, Any]]) -> Trace:
    return replace(trace, records=[replace(r, object=change(r.object)) for r in trace.records])


def _times(trace: Trace, change: Callable[[float], float]) -> Trace:
    records = [r if r.type == "INITIAL" else replace(r, t=max(0.0, change(r.t))) for r in trace.records]
    return replace(trace, records=records, duration=max(0.0, change(trace.duration)))


def _renumber(trace: Trace) -> Trace:
    records: list[Record] = [replace(r, seq=i) for i, r in enumerate(trace.records, start=1)]
    return replace(trace, records=records)
