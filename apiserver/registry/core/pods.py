"""Pods: status reset on create, graceful deletion, and the binding, eviction and log subresources.

A Pod bound to a node is not removed by a delete: it gets a deletionTimestamp
and deletionGracePeriodSeconds, the kubelet stops its containers and then
deletes it with ``gracePeriodSeconds=0``. An unbound (or finished) Pod goes at
once. Binding sets ``spec.nodeName`` exactly once: a second binding is a 409.
Eviction (``eviction.py``) deletes the Pod unless its PodDisruptionBudget forbids it.
The log is proxied to the kubelet of the Pod's node, as kube-apiserver does.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar, Final

import httpx
from starlette.responses import Response, StreamingResponse

from apiserver import errors, printers
from apiserver.endpoints import body
from apiserver.endpoints.responses import json_response
from apiserver.printers import Cell, Column, Printer, Row, condition_true, since
from apiserver.registry.core import connect
from apiserver.registry.core.ephemeralcontainers import EphemeralContainersREST, EphemeralContainersStrategy
from apiserver.registry.core.eviction import EvictionREST
from apiserver.registry.generic import StatusREST
from apiserver.registry.resource import Resource, Subresource
from apiserver.registry.store import Store, WriteOptions
from apiserver.registry.strategy import Obj, StatusStrategy, Strategy
from apiserver.storage.objects import Entry
from apiserver.validation import defaults
from apiserver.validation import pod as validation
from apiserver.validation.field import FieldError, invalid_message
from machinery.api import kinds, meta
from machinery.api.meta import now_time
from machinery.api.quantity import parse_quantity

if TYPE_CHECKING:
    from apiserver.endpoints.request import Call

TERMINAL_PHASES: Final = ("Succeeded", "Failed")


def qos_class(spec: dict[str, Any]) -> str:
    """Kubernetes' QoS class from the containers' requests and limits (after defaulting)."""
    containers = list(spec.get("containers") or []) + list(spec.get("initContainers") or [])
    any_set = False
    guaranteed = True
    for c in containers:
        res = c.get("resources") or {}
        requests, limits = res.get("requests") or {}, res.get("limits") or {}
        if requests or limits:
            any_set = True
        for name in ("cpu", "memory"):
            limit = limits.get(name)
            if limit is None:
                guaranteed = False
                continue
            request = requests.get(name, limit)
            if request == limit:
                continue  # the same text (defaulting copies limits into missing requests)
            try:
                if parse_quantity(request) != parse_quantity(limit):
                    guaranteed = False
            except ValueError:
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


class PodStrategy(Strategy):
    has_generation = True
    selectable_fields: ClassVar[tuple[str, ...]] = (
        "spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
        "spec.hostNetwork", "status.phase", "status.podIP", "status.nominatedNodeName",
    )

    def prepare_for_create(self, obj: Obj) -> None:
        obj["status"] = {"phase": "Pending"}

    def default(self, obj: Obj) -> None:
        defaults.default_pod(obj)
        status = obj.setdefault("status", {})
        if "qosClass" not in status:
            status["qosClass"] = qos_class(obj.get("spec") or {})

    def validate(self, obj: Obj) -> list[FieldError]:
        return validation.validate_pod(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_pod_update(new, old)

    def grace_period(self, obj: Obj, requested: int | None) -> int:
        spec = obj.get("spec") or {}
        status = obj.get("status") or {}
        if not spec.get("nodeName") or status.get("phase") in TERMINAL_PHASES:
            return 0
        if requested is not None:
            # A negative grace period means "as soon as possible" but still through the kubelet.
            return 1 if requested < 0 else requested
        period = spec.get("terminationGracePeriodSeconds")
        return 30 if period is None else max(int(period), 0)


class PodStatusStrategy(StatusStrategy):
    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        super().prepare_for_update(new, old)
        # kube-apiserver does not let pods/status touch ownerReferences: old kubelets corrupted them.
        owners = (old.get("metadata") or {}).get("ownerReferences")
        meta_ = new.setdefault("metadata", {})
        if owners is None:
            meta_.pop("ownerReferences", None)
        else:
            meta_["ownerReferences"] = owners

    def default(self, obj: Obj) -> None:
        # The spec is the stored one; only the status needs its defaults (the hot path of every kubelet).
        defaults.default_pod_status(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_pod_status_update(new, old)


class PodBindingStrategy(StatusStrategy):
    """What a binding writes: the server computed the whole Pod (nodeName, annotations, a condition).

    kube-apiserver does not validate the Pod again either (the Binding is validated).
    """

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        pass

    def default(self, obj: Obj) -> None:
        pass

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return []


_STRATEGY: Final = PodStrategy()
_STATUS: Final = PodStatusStrategy(_STRATEGY)
_BINDING: Final = PodBindingStrategy(_STRATEGY)


async def bind(store: Store, namespace: str, name: str, binding: Obj, opts: WriteOptions) -> Entry:
    """pods/binding: set spec.nodeName once, copy the binding's annotations, mark PodScheduled."""
    errs = validation.validate_binding(binding)
    if errs:
        raise errors.invalid(kinds.PODS, name, invalid_message("Binding", name, errs), [e.cause() for e in errs])
    node = binding["target"]["name"]
    bmeta = binding.get("metadata") or {}
    want_uid = bmeta.get("uid")
    want_rv = bmeta.get("resourceVersion")
    annotations = bmeta.get("annotations") or {}

    def assign(pod: Obj, current: Entry) -> Obj:
        pmeta = pod.setdefault("metadata", {})
        if want_uid and pmeta.get("uid") != want_uid:
            raise errors.conflict(kinds.PODS, name, f"Precondition failed: UID in precondition: {want_uid}, "
                                  f"UID in object meta: {pmeta.get('uid')}")
        if want_rv and want_rv != str(current.rv):
            raise errors.stale(kinds.PODS, name)
        if pmeta.get("deletionTimestamp"):
            raise errors.conflict(kinds.PODS, name,
                                  f"pod {name} is being deleted, cannot be assigned to a host")
        spec = pod.setdefault("spec", {})
        if spec.get("nodeName"):
            raise errors.conflict(kinds.PODS, name,
                                  f'pod {name} is already assigned to node "{spec["nodeName"]}"')
        spec["nodeName"] = node
        if annotations:
            pmeta["annotations"] = {**(pmeta.get("annotations") or {}), **annotations}
        status = pod.setdefault("status", {})
        conditions = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
        conditions.append({"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                           "lastTransitionTime": now_time()})
        status["conditions"] = conditions
        return pod

    # The binding is a write of the whole Pod on the server's side, not a client spec update:
    # its strategy skips the spec-update rules that forbid changing nodeName. Like
    # kube-apiserver's binding storage, this write does not go through the field manager:
    # no managedFields entry is recorded for it.
    entry, _ = await store.using(_BINDING).update_with(namespace, name, assign, WriteOptions(
        dry_run=opts.dry_run, field_manager=opts.field_manager, subresource="binding", track_fields=False))
    return entry


async def create_binding(call: Call, name: str | None) -> Response:
    """POST of a Binding, to ``pods/NAME/binding`` or to the namespace's ``bindings``."""
    opts = body.write_options(call, subresource="binding")
    binding = await body.decode_object(call, opts, kind="Binding", api_version="v1")
    bmeta = binding.get("metadata") or {}
    target = name or bmeta.get("name")
    if not target:
        raise errors.bad_request("a binding must name the pod (metadata.name)")
    if name and bmeta.get("name") not in (None, "", name):
        raise errors.bad_request("the name of the binding does not match the pod's name in the URL")
    body.check_namespace_matches(binding, call)
    await bind(call.server.store(kinds.PODS), call.namespace or "", target, binding, opts)
    return json_response(errors.success_status(code=201), 201)


class BindingREST(Subresource):
    async def create(self, call: Call) -> Response:
        return await create_binding(call, call.name)


class LogREST(Subresource):
    """pods/log: proxied to the kubelet of the Pod's node, as kube-apiserver does."""

    async def get(self, call: Call) -> Response:
        assert call.name is not None
        server = call.server
        q = call.query
        pod = (await call.store.get(call.namespace, call.name)).obj
        spec = pod.get("spec") or {}
        names = [c.get("name") for c in spec.get("containers") or []]
        init_names = [c.get("name") for c in spec.get("initContainers") or []]
        container = q.get("container")
        if not container:
            if len(names) != 1:
                raise errors.bad_request(f"a container name must be specified for pod {call.name}, choose one of: "
                                         f"[{' '.join(str(n) for n in names)}]")
            container = names[0]
        elif container not in names and container not in init_names:
            raise errors.bad_request(f"container {container} is not valid for pod {call.name}")
        node_name = spec.get("nodeName")
        if not node_name:
            raise errors.bad_request(f"pod {call.name} does not have a host assigned")
        node_entry = server.store(kinds.NODES).cache.get(kinds.NODES.etcd_key(None, node_name))
        if node_entry is None:
            raise errors.bad_request(f"node {node_name} for pod {call.name} not found")
        status = node_entry.obj.get("status") or {}
        port = ((status.get("daemonEndpoints") or {}).get("kubeletEndpoint") or {}).get("Port")
        address = next((a.get("address") for a in status.get("addresses") or []
                        if a.get("type") == "InternalIP"), None)
        if not port or not address:
            raise errors.bad_request(f"node {node_name} has no kubelet endpoint")
        params = {k: v for k, v in q.items() if k in ("follow", "tailLines", "timestamps", "previous",
                                                       "sinceSeconds", "limitBytes")}
        kubelet = server.kubelet
        url = kubelet.url(address, port, f"/containerLogs/{call.namespace}/{call.name}/{container}")
        req = kubelet.http.build_request("GET", url, params=params)
        try:
            upstream = await kubelet.http.send(req, stream=True)
        except httpx.HTTPError as e:
            raise errors.APIError(502, "InternalError", f"error trying to reach the kubelet of {node_name}: {e}") \
                from e
        if upstream.status_code != 200:
            text = (await upstream.aread()).decode("utf-8", "replace")
            await upstream.aclose()
            raise errors.APIError(upstream.status_code,
                                  "BadRequest" if upstream.status_code < 500 else "InternalError",
                                  text.strip() or f"kubelet answered {upstream.status_code}")

        async def relay() -> AsyncIterator[bytes]:
            try:
                async for chunk in upstream.aiter_raw():
                    yield chunk
            finally:
                with contextlib.suppress(Exception):
                    await upstream.aclose()

        return StreamingResponse(relay(), media_type="text/plain")


# --- printer ------------------------------------------------------------------------------------

_CORE = "io.k8s.api.core.v1."
_POD_SUCCEEDED = [{"type": "Completed", "status": "True", "reason": "Succeeded",
                   "message": "The pod has completed successfully."}]
_POD_FAILED = [{"type": "Completed", "status": "True", "reason": "Failed", "message": "The pod failed."}]
# The reason the node lifecycle controller gives pods on a node that stopped reporting.
_NODE_UNREACHABLE_POD_REASON = "NodeLost"

COLUMNS: Final = (
    printers.NAME,
    Column("Ready", "string", "The aggregate readiness state of this pod for accepting traffic."),
    Column("Status", "string", "The aggregate status of the containers in this pod."),
    Column("Restarts", "string", "The number of times the containers in this pod have been restarted "
                                 "and when the last container in this pod has restarted."),
    printers.AGE,
    Column("IP", "string", (_CORE + "PodStatus", "podIP"), 1),
    Column("Node", "string", (_CORE + "PodSpec", "nodeName"), 1),
    Column("Nominated Node", "string", (_CORE + "PodStatus", "nominatedNodeName"), 1),
    Column("Readiness Gates", "string", (_CORE + "PodSpec", "readinessGates"), 1),
)


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


def _pod_row(pod: Obj, now: datetime) -> Row:
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

    if not initializing or condition_true(conditions, "Initialized"):
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
            reason = "Running" if condition_true(conditions, "Ready") else "NotReady"

    if metadata.get("deletionTimestamp"):
        if status.get("reason") == _NODE_UNREACHABLE_POD_REASON:
            reason = "Unknown"
        elif phase not in ("Succeeded", "Failed"):
            reason = "Terminating"

    restarts_cell = str(restarts)
    if restarts and last_restart.when is not None:
        restarts_cell = f"{restarts} ({printers.human_duration(now - last_restart.when)} ago)"

    pod_ips = status.get("podIPs") or []
    pod_ip = status.get("podIP") or (pod_ips[0].get("ip") if pod_ips else "")
    gates = spec.get("readinessGates") or []
    readiness_gates = "<none>"
    if gates:
        true_gates = sum(1 for g in gates if condition_true(conditions, g.get("conditionType", "")))
        readiness_gates = f"{true_gates}/{len(gates)}"

    cells: list[Cell] = [
        metadata.get("name", ""), f"{ready}/{total}", reason, restarts_cell,
        since(metadata.get("creationTimestamp"), now),
        pod_ip or "<none>", spec.get("nodeName") or "<none>",
        status.get("nominatedNodeName") or "<none>", readiness_gates,
    ]
    row_conditions = {"Succeeded": _POD_SUCCEEDED, "Failed": _POD_FAILED}.get(phase)
    return Row(cells, row_conditions)


_NODE_ROLE_PREFIX = "node-role.kubernetes.io/"
_NODE_ROLE_LABEL = "kubernetes.io/role"


PRINTER: Final = Printer(COLUMNS, _pod_row)

RESOURCE: Final = Resource(
    info=kinds.PODS,
    strategy=_STRATEGY,
    subresources={
        "status": StatusREST(_STATUS),
        "binding": BindingREST(),
        "eviction": EvictionREST(_STATUS),
        "log": LogREST(),
        "attach": connect.AttachREST(),
        "exec": connect.ExecREST(),
        "portforward": connect.PortForwardREST(),
        "proxy": connect.PodProxyREST(),
        "ephemeralcontainers": EphemeralContainersREST(EphemeralContainersStrategy(_STRATEGY)),
    },
    printer=PRINTER,
)
