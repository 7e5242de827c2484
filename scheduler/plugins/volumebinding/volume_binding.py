"""VolumeBinding: the claims of a Pod decide which nodes it may go to, and are bound when it goes there.

As Kubernetes' ``volumebinding`` plugin (with its ``SchedulerVolumeBinder``):

- **PreFilter.** The Pod's claims (``persistentVolumeClaim`` volumes, and
  the ``<pod>-<volume>`` claims of ephemeral volumes) must exist and not be
  being deleted (``persistentvolumeclaim "data-db-0" not found``); a claim
  of a class that binds at once and is not bound yet stops the Pod ("pod has
  unbound immediate PersistentVolumeClaims"), the PersistentVolume binder
  being the one to bind it. Pods without claims skip the plugin.
- **Filter.** A bound claim's volume must exist and its node affinity admit
  the node ("node(s) had volume node affinity conflict"); an unbound claim
  of a ``WaitForFirstConsumer`` class needs an available volume the node can
  reach, or a class with a provisioner to make one ("node(s) didn't find
  available persistent volumes to bind").
- **Reserve / PreBind.** On the chosen node, statically matched volumes get
  the claim's ``claimRef``, claims to provision get
  ``volume.kubernetes.io/selected-node``; PreBind then waits (up to
  ``bindTimeoutSeconds``, 600 s) for the binder to report every claim bound,
  and the Pod is bound after.

Concurrency: the scheduling cycle runs PreFilter to Reserve on the loop
without awaiting; PreBind runs in the binding task and only awaits the API
and a poll of the informer caches.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from machinery.api import storage
from machinery.api.kinds import PERSISTENT_VOLUME_CLAIMS, PERSISTENT_VOLUMES, STORAGE_CLASSES
from machinery.api.nodeselector import NodeSelector
from machinery.client.errors import ApiError
from machinery.client.objects import to_wire
from machinery.client.rest import PatchType
from machinery.informer.store import Store
from scheduler.framework.interface import (
    SKIP,
    SUCCESS,
    ActionType,
    ClusterEvent,
    Code,
    CycleState,
    EventResource,
    Handle,
    PreFilterExtensions,
    PreFilterResult,
    StateKey,
    Status,
)
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.plugins import names
from scheduler.plugins.helper import plugin_args

NAME: Final = names.VOLUME_BINDING
ERR_REASON_BIND_CONFLICT: Final = "node(s) didn't find available persistent volumes to bind"
ERR_REASON_NODE_CONFLICT: Final = "node(s) had volume node affinity conflict"
ERR_REASON_NOT_ENOUGH_SPACE: Final = "node(s) did not have enough free storage"
ERR_REASON_PV_NOT_EXIST: Final = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
ERR_UNBOUND_IMMEDIATE: Final = "pod has unbound immediate PersistentVolumeClaims"
DEFAULT_BIND_TIMEOUT: Final = 600.0
_STATE_KEY: Final[StateKey[_State]] = StateKey("PreFilter" + NAME)
_POLL: Final = 0.2


@dataclass(slots=True)
class _State:
    bound: list[dict[str, Any]] = field(default_factory=list)
    #: Claims that wait for their first consumer (this Pod), unbound.
    delayed: list[dict[str, Any]] = field(default_factory=list)
    #: The decisions for the node chosen in Reserve: (claim, volume to bind or None to provision).
    decisions: list[tuple[dict[str, Any], dict[str, Any] | None]] = field(default_factory=list)

    def clone(self) -> _State:
        return self


def pod_claims(pod: PodInfo) -> list[str]:
    """The names of the claims the Pod's volumes use (``GetPodVolumeNames``' claims)."""
    spec = pod.pod.spec
    result: list[str] = []
    for volume in (spec.volumes if spec is not None else None) or ():
        if volume.persistent_volume_claim is not None:
            result.append(volume.persistent_volume_claim.claim_name)
        elif volume.ephemeral is not None:
            result.append(f"{pod.name}-{volume.name}")
    return result


class VolumeBinding:
    name = NAME

    def __init__(self, handle: Handle, bind_timeout: float) -> None:
        self._handle = handle
        self._timeout = bind_timeout

    def _store(self, resource: Any) -> Store[Any] | None:
        return self._handle.lister(resource)

    def pre_filter(self, state: CycleState, pod: PodInfo,
                   nodes: Sequence[NodeInfo]) -> tuple[PreFilterResult | None, Status]:
        names_ = pod_claims(pod)
        if not names_:
            return None, SKIP
        claims = self._store(PERSISTENT_VOLUME_CLAIMS)
        found = _State()
        for name in names_:
            model = claims.get(f"{pod.namespace}/{name}") if claims is not None else None
            if model is None:
                return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                                    f'persistentvolumeclaim "{name}" not found', plugin=NAME)
            claim = to_wire(model)
            if (claim.get("metadata") or {}).get("deletionTimestamp"):
                return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                                    f'persistentvolumeclaim "{name}" is being deleted', plugin=NAME)
            if (claim.get("spec") or {}).get("volumeName"):
                found.bound.append(claim)
            elif self._late(claim):
                found.delayed.append(claim)
            else:
                return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_UNBOUND_IMMEDIATE, plugin=NAME)
        state.write(_STATE_KEY, found)
        return None, SUCCESS

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return None

    def _late(self, claim: Mapping[str, Any]) -> bool:
        classes = self._store(STORAGE_CLASSES)
        cls = classes.get(storage.claim_class(claim)) if classes is not None and storage.claim_class(claim) else None
        return cls is not None and cls.volume_binding_mode == storage.WAIT_FOR_FIRST_CONSUMER

    def filter(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> Status:
        found = _read(state)
        if found is None:
            return SUCCESS
        volumes = self._store(PERSISTENT_VOLUMES)
        for claim in found.bound:
            model = volumes.get(claim["spec"]["volumeName"]) if volumes is not None else None
            if model is None:
                return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_PV_NOT_EXIST, plugin=NAME)
            if not _reachable(to_wire(model), node):
                return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_NODE_CONFLICT, plugin=NAME)
        if found.delayed and self._decide(found.delayed, node) is None:
            return Status(Code.UNSCHEDULABLE, ERR_REASON_BIND_CONFLICT, plugin=NAME)
        return SUCCESS

    def _decide(self, claims: Sequence[dict[str, Any]], node: NodeInfo,
                ) -> list[tuple[dict[str, Any], dict[str, Any] | None]] | None:
        """For each late claim, a volume to bind on this node, or None to provision; None if impossible."""
        volumes = self._store(PERSISTENT_VOLUMES)
        classes = self._store(STORAGE_CLASSES)
        taken: set[str] = set()
        decisions: list[tuple[dict[str, Any], dict[str, Any] | None]] = []
        candidates = [to_wire(v) for v in volumes.list()] if volumes is not None else []
        for claim in claims:
            best: dict[str, Any] | None = None
            for volume in candidates:
                name = volume["metadata"]["name"]
                if name in taken or (volume.get("spec") or {}).get("claimRef") is not None:
                    continue
                if (volume.get("status") or {}).get("phase") not in (None, "Available"):
                    continue
                if storage.volume_matches_claim(volume, claim) and _reachable(volume, node) and (
                        best is None or storage.volume_capacity(volume) < storage.volume_capacity(best)):
                    best = volume
            if best is not None:
                taken.add(best["metadata"]["name"])
                decisions.append((claim, best))
                continue
            cls = classes.get(storage.claim_class(claim)) if classes is not None else None
            if cls is None or not cls.provisioner or cls.provisioner == "kubernetes.io/no-provisioner":
                return None
            decisions.append((claim, None))
        return decisions

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        found = _read(state)
        if found is None or not found.delayed:
            return SUCCESS
        node = self._handle.snapshot.get(node_name)
        decisions = self._decide(found.delayed, node) if node is not None else None
        if decisions is None:
            return Status(Code.UNSCHEDULABLE, ERR_REASON_BIND_CONFLICT, plugin=NAME)
        found.decisions = decisions
        return SUCCESS

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        found = _read(state)
        if found is not None:
            found.decisions = []

    async def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        found = _read(state)
        if found is None:
            return SKIP
        client = self._handle.client
        try:
            for claim, volume in found.decisions:
                meta = claim["metadata"]
                if volume is not None:
                    await client.patch(PERSISTENT_VOLUMES, volume["metadata"]["name"], {
                        "metadata": {"annotations": {storage.BOUND_BY_CONTROLLER: "yes"},
                                     "resourceVersion": volume["metadata"].get("resourceVersion")},
                        "spec": {"claimRef": {"kind": "PersistentVolumeClaim", "apiVersion": "v1",
                                              "namespace": meta.get("namespace"), "name": meta["name"],
                                              "uid": meta.get("uid")}}}, patch_type=PatchType.MERGE)
                else:
                    await client.patch(PERSISTENT_VOLUME_CLAIMS, meta["name"], {
                        "metadata": {"annotations": {storage.SELECTED_NODE: node_name}}},
                        namespace=meta.get("namespace"), patch_type=PatchType.MERGE)
        except ApiError as err:
            return Status(Code.ERROR, f"binding volumes: {err}", plugin=NAME)
        deadline = time.monotonic() + self._timeout
        names_ = [c["metadata"]["name"] for c in (*found.bound, *found.delayed)]
        claims = self._store(PERSISTENT_VOLUME_CLAIMS)
        while True:
            pending = [n for n in names_ if not _bound(claims, pod.namespace, n)]
            if not pending:
                return SUCCESS
            if time.monotonic() > deadline:
                return Status(Code.ERROR, f"binding volumes: context deadline exceeded (claims {pending} not bound "
                                          f"within {self._timeout:g}s)", plugin=NAME)
            await asyncio.sleep(_POLL)

    def events_to_register(self) -> list[ClusterEvent]:
        return [ClusterEvent(EventResource.PERSISTENT_VOLUME_CLAIM, ActionType.ADD | ActionType.UPDATE),
                ClusterEvent(EventResource.PERSISTENT_VOLUME, ActionType.ADD | ActionType.UPDATE),
                ClusterEvent(EventResource.STORAGE_CLASS, ActionType.ADD | ActionType.UPDATE),
                ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)]


def _read(state: CycleState) -> _State | None:
    try:
        return state.read(_STATE_KEY)
    except KeyError:
        return None


def _bound(claims: Store[Any] | None, namespace: str, name: str) -> bool:
    model = claims.get(f"{namespace}/{name}") if claims is not None else None
    return model is not None and model.status is not None and model.status.phase == "Bound" \
        and bool(model.spec is not None and model.spec.volume_name)


def _reachable(volume: Mapping[str, Any], node: NodeInfo) -> bool:
    required = ((volume.get("spec") or {}).get("nodeAffinity") or {}).get("required")
    if not required:
        return True
    try:
        return NodeSelector.from_spec(required).matches(node.name, node.labels)
    except ValueError:
        return False


def new(args: Mapping[str, Any] | None, handle: Handle) -> VolumeBinding:
    values = plugin_args(args, ("bindTimeoutSeconds", "shape"), NAME)
    timeout = values.get("bindTimeoutSeconds")
    return VolumeBinding(handle, float(timeout) if isinstance(timeout, int | float) else DEFAULT_BIND_TIMEOUT)
