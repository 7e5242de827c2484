"""Server-side printing: the ``meta.k8s.io/v1`` Tables that ``kubectl get`` asks for.

kubectl does not know how to print a Pod; it sends
``Accept: application/json;as=Table;v=v1;g=meta.k8s.io`` and prints the
columns the server computed. This module computes them as kube-apiserver's
printers do (``pkg/printers/internalversion``): the same columns, the same
pod STATUS rules (``Init:0/1``, ``CrashLoopBackOff``, ``Terminating``...), the
same ages (``duration.HumanDuration``). The server always fills the wide
(priority 1) columns; kubectl hides them unless ``-o wide``.

It also holds Kubernetes' media-type negotiation (goautoneg ordering plus
the ``as``/``g``/``v`` conversion parameters), which the REST handler and
discovery both need.

Pure functions over plain dicts; no I/O, no shared mutable state (the column
descriptions are computed once and then only read), so any task may call
them concurrently. A table never copies the objects it embeds.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final, NamedTuple

from apiserver import errors
from machinery.api import labels, meta, schema
from machinery.api.kinds import ResourceInfo

Obj = dict[str, Any]
Cell = str | int


class GroupVersionKind(NamedTuple):
    group: str
    version: str
    kind: str


_META_GROUP: Final = "meta.k8s.io"
_META_VERSIONS: Final = ("v1", "v1beta1")
_TABLE_KINDS: Final = frozenset(GroupVersionKind(_META_GROUP, v, "Table") for v in _META_VERSIONS)
#: What a resource endpoint may convert its answer to (kube-apiserver's RequestScope).
_REST_CONVERSIONS: Final = _TABLE_KINDS | frozenset(
    GroupVersionKind(_META_GROUP, v, k)
    for v in _META_VERSIONS for k in ("PartialObjectMetadata", "PartialObjectMetadataList")
)
#: The ``application/*`` subtypes kubesim can write (kube-apiserver also writes protobuf and CBOR).
SERIALIZED_SUBTYPES: Final = ("json", "yaml")


# --- Accept negotiation -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MediaRange:
    """One clause of an Accept header."""

    type: str
    subtype: str
    params: Mapping[str, str]
    q: float


@dataclass(frozen=True, slots=True)
class Negotiated:
    """The clause a request was answered with: its subtype and the conversion it asked for, if any."""

    subtype: str
    convert: GroupVersionKind | None


def parse_accept(header: str) -> list[MediaRange]:
    """An Accept header's clauses, best first, as goautoneg orders them.

    Higher ``q`` first; at equal ``q``, a concrete type before ``*`` and a
    concrete subtype before ``*``; otherwise the header's own order.
    Malformed clauses are skipped, as Kubernetes skips them.
    """
    clauses: list[MediaRange] = []
    for part in header.split(","):
        media_range, *raw_params = part.strip().split(";")
        pieces = media_range.split("/")
        mtype = pieces[0].strip()
        if len(pieces) == 1 and mtype == "*":
            subtype = "*"
        elif len(pieces) == 2:
            subtype = pieces[1].strip()
        else:
            continue
        params: dict[str, str] = {}
        q = 1.0
        for raw in raw_params:
            key, sep, value = raw.partition("=")
            if not sep:
                continue
            key = key.strip()
            if key == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
            else:
                params[key] = value.strip()
        clauses.append(MediaRange(mtype, subtype, params, q))
    # A stable sort on this key keeps the header order between equals, which is what
    # goautoneg's insertion sort does for headers of a realistic size.
    clauses.sort(key=lambda c: (-c.q, c.type == "*", c.subtype == "*"))
    return clauses


def negotiate(accept: str | None, *, subtypes: Sequence[str],
              conversions: Collection[GroupVersionKind]) -> Negotiated | None:
    """Kubernetes' ``NegotiateMediaTypeOptions`` for ``application/<subtype>`` endpoints.

    The first clause (in :func:`parse_accept` order) that names a served
    subtype and whose ``as``/``g``/``v`` parameters, if any, name one of
    ``conversions`` wins. ``None`` means nothing is acceptable (406); an
    empty or missing header means the first of ``subtypes``, with no conversion.
    """
    if not accept:
        return Negotiated(subtypes[0], None)
    for clause in parse_accept(accept):
        if clause.type not in ("application", "*") or (clause.type == "*" and clause.subtype != "*"):
            continue
        for subtype in subtypes:
            if clause.subtype not in (subtype, "*"):
                continue
            result = _accept_params(clause.params, subtype, conversions)
            if result is not None:
                return result
    return None


def _accept_params(params: Mapping[str, str], subtype: str,
                   conversions: Collection[GroupVersionKind]) -> Negotiated | None:
    # Parameters Kubernetes does not know are ignored; the ones it knows can make a clause unacceptable.
    # Only JSON has a streaming (watch) form, and no endpoint lets a client pick the server version.
    stream = params.get("stream")
    if (stream and (stream != "watch" or subtype != "json")) or params.get("sv"):
        return None
    if not {"as", "g", "v"} & params.keys():
        return Negotiated(subtype, None)
    convert = GroupVersionKind(params.get("g", ""), params.get("v", ""), params.get("as", ""))
    return Negotiated(subtype, convert) if convert in conversions else None


def wants_table(accept: str | None) -> bool:
    """Whether a resource request's Accept header is answered with a Table.

    True when the clause Kubernetes would pick asks for ``as=Table`` in
    ``meta.k8s.io`` ``v1`` or ``v1beta1``, e.g. what kubectl sends:
    ``application/json;as=Table;v=v1;g=meta.k8s.io,application/json``.
    """
    chosen = negotiate(accept, subtypes=SERIALIZED_SUBTYPES, conversions=_REST_CONVERSIONS)
    return chosen is not None and chosen.convert in _TABLE_KINDS


# --- Ages -------------------------------------------------------------------------------------


def human_duration(d: timedelta) -> str:
    """apimachinery's ``duration.HumanDuration``: about two significant units (``3m12s``, ``2d3h``)."""
    seconds = int(d.total_seconds())
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    if seconds < 120:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 10:
        s = seconds % 60
        return f"{minutes}m" if s == 0 else f"{minutes}m{s}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = seconds // 3600
    if hours < 8:
        m = minutes % 60
        return f"{hours}h" if m == 0 else f"{hours}h{m}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        h = hours % 24
        return f"{hours // 24}d" if h == 0 else f"{hours // 24}d{h}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        dy = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if dy == 0 else f"{hours // 24 // 365}y{dy}d"
    return f"{hours // 24 // 365}y"


def _since(value: str | None, now: datetime) -> str:
    """``translateTimestampSince``: the age of a timestamp, ``<unknown>`` when unset."""
    when = meta.parse_time(value)
    return "<unknown>" if when is None else human_duration(now - when)


# --- Columns ----------------------------------------------------------------------------------


class _Column(NamedTuple):
    name: str
    type: str
    # Where Kubernetes takes the description from: (definition, property), or literal text.
    doc: tuple[str, str] | str
    priority: int = 0
    format: str = ""


_CORE = "io.k8s.api.core.v1."
_OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_NAME = _Column("Name", "string", (_OBJECT_META, "name"), format="name")
_AGE = _Column("Age", "string", (_OBJECT_META, "creationTimestamp"))
_CONTAINERS = _Column("Containers", "string", "Names of each container in the template.", 1)
_IMAGES = _Column("Images", "string", "Images referenced by each container in the template.", 1)

_POD_COLUMNS = (
    _NAME,
    _Column("Ready", "string", "The aggregate readiness state of this pod for accepting traffic."),
    _Column("Status", "string", "The aggregate status of the containers in this pod."),
    _Column("Restarts", "string", "The number of times the containers in this pod have been restarted "
                                  "and when the last container in this pod has restarted."),
    _AGE,
    _Column("IP", "string", (_CORE + "PodStatus", "podIP"), 1),
    _Column("Node", "string", (_CORE + "PodSpec", "nodeName"), 1),
    _Column("Nominated Node", "string", (_CORE + "PodStatus", "nominatedNodeName"), 1),
    _Column("Readiness Gates", "string", (_CORE + "PodSpec", "readinessGates"), 1),
)
_NODE_COLUMNS = (
    _NAME,
    _Column("Status", "string", "The status of the node"),
    _Column("Roles", "string", "The roles of the node"),
    _AGE,
    _Column("Version", "string", (_CORE + "NodeSystemInfo", "kubeletVersion")),
    _Column("Internal-IP", "string", (_CORE + "NodeStatus", "addresses"), 1),
    _Column("External-IP", "string", (_CORE + "NodeStatus", "addresses"), 1),
    _Column("OS-Image", "string", (_CORE + "NodeSystemInfo", "osImage"), 1),
    _Column("Kernel-Version", "string", (_CORE + "NodeSystemInfo", "kernelVersion"), 1),
    _Column("Container-Runtime", "string", (_CORE + "NodeSystemInfo", "containerRuntimeVersion"), 1),
)
_RC_COLUMNS = (
    _NAME,
    _Column("Desired", "integer", (_CORE + "ReplicationControllerSpec", "replicas")),
    _Column("Current", "integer", (_CORE + "ReplicationControllerStatus", "replicas")),
    _Column("Ready", "integer", (_CORE + "ReplicationControllerStatus", "readyReplicas")),
    _AGE,
    _CONTAINERS,
    _IMAGES,
    _Column("Selector", "string", (_CORE + "ReplicationControllerSpec", "selector"), 1),
)
_EVENT_COLUMNS = (
    _Column("Last Seen", "string", (_CORE + "Event", "lastTimestamp")),
    _Column("Type", "string", (_CORE + "Event", "type")),
    _Column("Reason", "string", (_CORE + "Event", "reason")),
    _Column("Object", "string", (_CORE + "Event", "involvedObject")),
    _Column("Subobject", "string", (_CORE + "ObjectReference", "fieldPath"), 1),
    _Column("Source", "string", (_CORE + "Event", "source"), 1),
    _Column("Message", "string", (_CORE + "Event", "message")),
    _Column("First Seen", "string", (_CORE + "Event", "firstTimestamp"), 1),
    _Column("Count", "string", (_CORE + "Event", "count"), 1),
    _Column("Name", "string", (_OBJECT_META, "name"), 1, "name"),
)
_NAMESPACE_COLUMNS = (_NAME, _Column("Status", "string", "The status of the namespace"), _AGE)
_LEASE_COLUMNS = (
    _NAME,
    _Column("Holder", "string", ("io.k8s.api.coordination.v1.LeaseSpec", "holderIdentity")),
    _AGE,
)
# The generic convertor kube-apiserver uses for resources without a printer.
_DEFAULT_COLUMNS = (_NAME, _Column("Created At", "date", (_OBJECT_META, "creationTimestamp")))


@functools.cache
def _column_definitions(columns: tuple[_Column, ...]) -> tuple[dict[str, Any], ...]:
    defs = []
    for col in columns:
        if isinstance(col.doc, str):
            description = col.doc
        else:
            definition, prop = col.doc
            # The field's own description, not that of the type it refers to (Time, ObjectReference...).
            field = (schema.definition(definition).get("properties") or {}).get(prop) or {}
            description = field.get("description", "")
        defs.append({"name": col.name, "type": col.type, "format": col.format,
                     "description": description, "priority": col.priority})
    return tuple(defs)


# --- Rows -------------------------------------------------------------------------------------


class _Row(NamedTuple):
    cells: list[Cell]
    conditions: list[dict[str, str]] | None = None


_POD_SUCCEEDED = [{"type": "Completed", "status": "True", "reason": "Succeeded",
                   "message": "The pod has completed successfully."}]
_POD_FAILED = [{"type": "Completed", "status": "True", "reason": "Failed", "message": "The pod failed."}]
# The reason the node lifecycle controller gives pods on a node that stopped reporting.
_NODE_UNREACHABLE_POD_REASON = "NodeLost"


def _condition_true(conditions: list[Obj] | None, ctype: str) -> bool:
    cond = meta.get_condition(conditions, ctype)
    return cond is not None and cond.get("status") == "True"


class _LastRestart:
    """The latest ``lastState.terminated.finishedAt`` seen so far."""

    __slots__ = ("when",)

    def __init__(self) -> None:
        self.when: datetime | None = None

    def see(self, container_status: Obj) -> None:
        terminated = (container_status.get("lastState") or {}).get("terminated")
        if terminated:
            finished = meta.parse_time(terminated.get("finishedAt"))
            if finished is not None and (self.when is None or self.when < finished):
                self.when = finished


def _terminated_reason(terminated: Obj, prefix: str = "") -> str:
    if terminated.get("reason"):
        return prefix + str(terminated["reason"])
    if terminated.get("signal"):
        return f"{prefix}Signal:{terminated['signal']}"
    return f"{prefix}ExitCode:{terminated.get('exitCode', 0)}"


def _pod_row(pod: Obj, now: datetime) -> _Row:
    spec: Obj = pod.get("spec") or {}
    status: Obj = pod.get("status") or {}
    metadata: Obj = pod.get("metadata") or {}
    conditions: list[Obj] | None = status.get("conditions")
    phase = status.get("phase") or ""
    reason = status.get("reason") or phase
    for cond in conditions or ():
        if cond.get("type") == "PodScheduled" and cond.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"

    init_specs = spec.get("initContainers") or []
    # Sidecars (init containers that restart always) count as pod containers, as in Kubernetes.
    sidecars = {c.get("name") for c in init_specs if c.get("restartPolicy") == "Always"}
    total = len(spec.get("containers") or []) + len(sidecars)
    ready = 0
    restarts = 0
    sidecar_restarts = 0
    last_restart = _LastRestart()
    last_sidecar_restart = _LastRestart()

    initializing = False
    for i, cs in enumerate(status.get("initContainerStatuses") or []):
        state: Obj = cs.get("state") or {}
        terminated, waiting = state.get("terminated"), state.get("waiting")
        restarts += cs.get("restartCount", 0)
        last_restart.see(cs)
        is_sidecar = cs.get("name") in sidecars
        if is_sidecar:
            sidecar_restarts += cs.get("restartCount", 0)
            last_sidecar_restart.see(cs)
        if terminated is not None and terminated.get("exitCode", 0) == 0:
            continue
        if is_sidecar and cs.get("started"):
            ready += 1 if cs.get("ready") else 0
            continue
        if terminated is not None:
            reason = _terminated_reason(terminated, "Init:")
        elif waiting is not None and waiting.get("reason") and waiting["reason"] != "PodInitializing":
            reason = "Init:" + waiting["reason"]
        else:
            reason = f"Init:{i}/{len(init_specs)}"
        initializing = True
        break

    if not initializing or _condition_true(conditions, "Initialized"):
        restarts = sidecar_restarts
        last_restart = last_sidecar_restart
        has_running = False
        for cs in reversed(status.get("containerStatuses") or []):
            state = cs.get("state") or {}
            terminated, waiting = state.get("terminated"), state.get("waiting")
            restarts += cs.get("restartCount", 0)
            last_restart.see(cs)
            if waiting is not None and waiting.get("reason"):
                reason = waiting["reason"]
            elif terminated is not None:
                reason = _terminated_reason(terminated)
            elif cs.get("ready") and state.get("running") is not None:
                has_running = True
                ready += 1
        # A pod whose last container completed but which still runs others is not "Completed".
        if reason == "Completed" and has_running:
            reason = "Running" if _condition_true(conditions, "Ready") else "NotReady"

    if metadata.get("deletionTimestamp"):
        if status.get("reason") == _NODE_UNREACHABLE_POD_REASON:
            reason = "Unknown"
        elif phase not in ("Succeeded", "Failed"):
            reason = "Terminating"

    restarts_cell = str(restarts)
    if restarts and last_restart.when is not None:
        restarts_cell = f"{restarts} ({human_duration(now - last_restart.when)} ago)"

    pod_ips = status.get("podIPs") or []
    pod_ip = status.get("podIP") or (pod_ips[0].get("ip") if pod_ips else "")
    gates = spec.get("readinessGates") or []
    readiness_gates = "<none>"
    if gates:
        true_gates = sum(1 for g in gates if _condition_true(conditions, g.get("conditionType", "")))
        readiness_gates = f"{true_gates}/{len(gates)}"

    cells: list[Cell] = [
        metadata.get("name", ""), f"{ready}/{total}", reason, restarts_cell,
        _since(metadata.get("creationTimestamp"), now),
        pod_ip or "<none>", spec.get("nodeName") or "<none>",
        status.get("nominatedNodeName") or "<none>", readiness_gates,
    ]
    row_conditions = {"Succeeded": _POD_SUCCEEDED, "Failed": _POD_FAILED}.get(phase)
    return _Row(cells, row_conditions)


_NODE_ROLE_PREFIX = "node-role.kubernetes.io/"
_NODE_ROLE_LABEL = "kubernetes.io/role"


def _node_roles(labels: Mapping[str, str]) -> str:
    roles = set()
    for key, value in labels.items():
        if key.startswith(_NODE_ROLE_PREFIX) and len(key) > len(_NODE_ROLE_PREFIX):
            roles.add(key[len(_NODE_ROLE_PREFIX):])
        elif key == _NODE_ROLE_LABEL and value:
            roles.add(value)
    return ",".join(sorted(roles)) or "<none>"


def _node_address(status: Obj, kind: str) -> str:
    for address in status.get("addresses") or ():
        if address.get("type") == kind:
            return str(address.get("address", ""))
    return "<none>"


def _node_row(node: Obj, now: datetime) -> _Row:
    metadata: Obj = node.get("metadata") or {}
    status: Obj = node.get("status") or {}
    info: Obj = status.get("nodeInfo") or {}
    ready = meta.get_condition(status.get("conditions"), "Ready")
    states = ["Unknown" if ready is None else "Ready" if ready.get("status") == "True" else "NotReady"]
    if (node.get("spec") or {}).get("unschedulable"):
        states.append("SchedulingDisabled")
    return _Row([
        metadata.get("name", ""), ",".join(states), _node_roles(metadata.get("labels") or {}),
        _since(metadata.get("creationTimestamp"), now), info.get("kubeletVersion", ""),
        _node_address(status, "InternalIP"), _node_address(status, "ExternalIP"),
        info.get("osImage") or "<unknown>", info.get("kernelVersion") or "<unknown>",
        info.get("containerRuntimeVersion") or "<unknown>",
    ])


def _replication_controller_row(rc: Obj, now: datetime) -> _Row:
    metadata: Obj = rc.get("metadata") or {}
    spec: Obj = rc.get("spec") or {}
    status: Obj = rc.get("status") or {}
    containers = ((spec.get("template") or {}).get("spec") or {}).get("containers") or []
    return _Row([
        # An unset spec.replicas defaults to 1 in v1, so that is what Kubernetes prints.
        metadata.get("name", ""), spec.get("replicas", 1), status.get("replicas", 0),
        status.get("readyReplicas", 0), _since(metadata.get("creationTimestamp"), now),
        ",".join(c.get("name", "") for c in containers), ",".join(c.get("image", "") for c in containers),
        # labels.FormatLabels: the selector's string form, or <none>.
        labels.format_selector(spec.get("selector") or {}) or "<none>",
    ])


def _event_row(event: Obj, now: datetime) -> _Row:
    metadata: Obj = event.get("metadata") or {}
    involved: Obj = event.get("involvedObject") or {}
    source: Obj = event.get("source") or {}
    series: Obj | None = event.get("series")

    if event.get("firstTimestamp"):
        first_seen = _since(event["firstTimestamp"], now)
    else:
        first_seen = _since(event.get("eventTime"), now)
    last_seen = _since(event["lastTimestamp"], now) if event.get("lastTimestamp") else first_seen
    count = event.get("count") or 0
    if series is not None:
        last_seen = _since(series.get("lastObservedTime"), now)
        count = series.get("count", 0)
    elif count == 0:
        # Events written through events.k8s.io carry no count: each is seen once.
        count = 1

    kind = str(involved.get("kind", "")).lower()
    target = f"{kind}/{involved['name']}" if involved.get("name") else kind
    component = source.get("component") or event.get("reportingComponent") or ""
    instance = source.get("host") or event.get("reportingInstance") or ""
    return _Row([
        last_seen, event.get("type", ""), event.get("reason", ""), target, involved.get("fieldPath", ""),
        f"{component}, {instance}" if instance else component, str(event.get("message", "")).strip(),
        first_seen, count, metadata.get("name", ""),
    ])


def _namespace_row(ns: Obj, now: datetime) -> _Row:
    metadata: Obj = ns.get("metadata") or {}
    phase = (ns.get("status") or {}).get("phase", "")
    return _Row([metadata.get("name", ""), phase, _since(metadata.get("creationTimestamp"), now)])


def _lease_row(lease: Obj, now: datetime) -> _Row:
    metadata: Obj = lease.get("metadata") or {}
    holder = (lease.get("spec") or {}).get("holderIdentity") or ""
    return _Row([metadata.get("name", ""), holder, _since(metadata.get("creationTimestamp"), now)])


def _default_row(obj: Obj, now: datetime) -> _Row:
    metadata: Obj = obj.get("metadata") or {}
    created = meta.parse_time(metadata.get("creationTimestamp"))
    # Go formats a zero time; kubectl then prints that date, as it does against Kubernetes.
    return _Row([metadata.get("name", ""), meta.format_time(created) if created else "0001-01-01T00:00:00Z"])


_RowFunc = Callable[[Obj, datetime], _Row]
_PRINTERS: Final[dict[tuple[str, str], tuple[tuple[_Column, ...], _RowFunc]]] = {
    ("", "Pod"): (_POD_COLUMNS, _pod_row),
    ("", "Node"): (_NODE_COLUMNS, _node_row),
    ("", "ReplicationController"): (_RC_COLUMNS, _replication_controller_row),
    ("", "Event"): (_EVENT_COLUMNS, _event_row),
    ("", "Namespace"): (_NAMESPACE_COLUMNS, _namespace_row),
    ("coordination.k8s.io", "Lease"): (_LEASE_COLUMNS, _lease_row),
}


def table_for(ri: ResourceInfo[Any], objects: list[Obj], *, include_object: str = "Metadata",
              resource_version: str = "", continue_token: str | None = None,
              remaining_item_count: int | None = None, now: datetime | None = None) -> dict[str, Any]:
    """A ``meta.k8s.io/v1`` Table of ``objects`` (one object for a GET, the items for a LIST).

    ``include_object`` is the request's ``includeObject``: ``None`` leaves
    each row's object out (``null``), ``Metadata`` (or empty) embeds a
    PartialObjectMetadata, ``Object`` the object itself (not copied); any
    other value is a 400 BadRequest, as in Kubernetes. ``now`` fixes the
    clock for ages (tests); it defaults to the current time.
    """
    if include_object not in ("None", "Metadata", "Object", ""):
        raise errors.bad_request(f'includeObject: Invalid value: "{include_object}": '
                                 "must be 'Metadata', 'Object', 'None', or empty")
    columns, row_func = _PRINTERS.get((ri.group, ri.kind), (_DEFAULT_COLUMNS, _default_row))
    now = now or meta.utcnow()
    rows: list[dict[str, Any]] = []
    for obj in objects:
        row = row_func(obj, now)
        out: dict[str, Any] = {"cells": row.cells}
        if row.conditions:
            out["conditions"] = row.conditions
        if include_object == "Object":
            out["object"] = obj
        elif include_object != "None":
            out["object"] = {"kind": "PartialObjectMetadata", "apiVersion": f"{_META_GROUP}/v1",
                             "metadata": obj.get("metadata") or {}}
        else:
            out["object"] = None
        rows.append(out)

    list_meta: dict[str, Any] = {}
    if resource_version:
        list_meta["resourceVersion"] = resource_version
    if continue_token:
        list_meta["continue"] = continue_token
    if remaining_item_count is not None:
        list_meta["remainingItemCount"] = remaining_item_count
    return {
        "kind": "Table",
        "apiVersion": f"{_META_GROUP}/v1",
        "metadata": list_meta,
        # Copies, so that a caller editing its table cannot change the next one.
        "columnDefinitions": [dict(c) for c in _column_definitions(columns)],
        "rows": rows,
    }
