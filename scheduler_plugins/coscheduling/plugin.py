"""The Coscheduling plugin: the Pods of a PodGroup are bound all together or not at all.

kubernetes-sigs/scheduler-plugins' Coscheduling, on kubesim's framework
(the rules are in :mod:`.manager`); the feature kube-scheduler-simulator
cannot simulate, since it needs Permit. Extension points:

- **QueueSort**: higher priority first, then the members of a group
  together (ordered by when the group was first queued), then by name, so a
  gang's members come one after the other;
- **PreFilter** (SKIP for Pods of no group), **PostFilter**;
- **Permit**: WAIT until ``minMember`` members are placed, for
  ``scheduleTimeoutSeconds`` of the PodGroup, else ``permitWaitingTimeSeconds``
  (default 60); the last member needed allows all the others;
- **Unreserve**: a member that gives its place back (rejected, timed out,
  failed to bind) makes every waiting member of its group give theirs back,
  and the group backs off for ``podGroupBackoffSeconds`` (default 0);
- **EnqueueExtensions**: Pods bound and nodes added may help. The plugin also
  retries a group's waiting members itself when a member or the PodGroup
  arrives (the informers' handlers call :meth:`Handle.activate`).

It needs the PodGroup CRD (``crd.yaml``) served by the APIServer, and a
profile that makes it the queue sort::

    profiles:
    - schedulerName: default-scheduler
      plugins:
        multiPoint: {enabled: [{name: Coscheduling}]}
        queueSort: {enabled: [{name: Coscheduling}], disabled: [{name: "*"}]}
      pluginConfig:
      - name: Coscheduling
        args: {permitWaitingTimeSeconds: 30, podGroupBackoffSeconds: 5}

Upstream's controller that writes a PodGroup's status (phase, scheduled,
running) is not part of this example.

Used from the event loop's thread only, as every plugin.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any, Final

from kubernetes.client import V1Pod

from machinery.api import PODS
from scheduler.framework.interface import (
    ActionType,
    ClusterEvent,
    Code,
    CycleState,
    EventResource,
    Handle,
    NodeToStatus,
    PostFilterResult,
    PreFilterResult,
    QueuedPodInfoLike,
    Status,
    WaitingPod,
)
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler_plugins.coscheduling.manager import PodGroupManager, full_name, group_name
from scheduler_plugins.coscheduling.podgroup import POD_GROUP_LABEL, PODGROUPS, PodGroup

NAME: Final = "Coscheduling"
#: The scheduler's own Pod informer (the same selector, so the same shared watch).
_POD_FIELD_SELECTOR: Final = "status.phase!=Succeeded,status.phase!=Failed"
_MEMBERS_INDEX: Final = "coschedulingPodGroup"


def index_by_pod_group(pod: V1Pod) -> list[str]:
    meta = pod.metadata
    name = group_name(meta.labels if meta is not None else None)
    return [full_name(meta.namespace or "", name)] if name and meta is not None else []


class Coscheduling:
    name = NAME

    def __init__(self, handle: Handle, *, permit_timeout: float, backoff: float) -> None:
        self._handle = handle
        self._groups = handle.informers.informer(PODGROUPS)
        self._pods = handle.informers.informer(PODS, field_selector=_POD_FIELD_SELECTOR,
                                               indexers={_MEMBERS_INDEX: index_by_pod_group})
        self.manager = PodGroupManager(get_group=self._group, members=self._members, snapshot=handle.snapshot,
                                       now=time.monotonic, permit_timeout=permit_timeout, backoff=backoff)
        #: When each group was first queued: its members sort together from then on.
        self._first_seen: dict[str, float] = {}
        self._groups.add_handler(on_add=self._group_changed, on_update=lambda _old, new: self._group_changed(new))
        self._pods.add_handler(on_add=self._member_added)

    # --- lookups ----------------------------------------------------------------------------------

    def _group(self, namespace: str, name: str) -> PodGroup | None:
        group: PodGroup | None = self._groups.store.get(f"{namespace}/{name}")
        return group

    def _members(self, namespace: str, name: str) -> Sequence[V1Pod]:
        pods: list[V1Pod] = self._pods.store.by_index(_MEMBERS_INDEX, full_name(namespace, name))
        return [p for p in pods if p.metadata is not None and p.metadata.deletion_timestamp is None]

    def _member_uids(self, namespace: str, name: str) -> list[str]:
        return [p.metadata.uid for p in self._members(namespace, name) if p.metadata and p.metadata.uid]

    # --- informer handlers: retry a group's members when what they waited for arrives ------------------

    def _group_changed(self, group: PodGroup) -> None:
        meta = group.metadata
        if meta is not None and meta.name:
            self._handle.activate(self._member_uids(meta.namespace or "", meta.name))

    def _member_added(self, pod: V1Pod) -> None:
        meta = pod.metadata
        name = group_name(meta.labels if meta is not None else None)
        if meta is None or not name or (pod.spec is not None and pod.spec.node_name):
            return
        self._handle.activate(self._member_uids(meta.namespace or "", name))

    # --- QueueSort ---------------------------------------------------------------------------------

    def less(self, a: QueuedPodInfoLike, b: QueuedPodInfoLike) -> bool:
        pa, pb = a.pod_info, b.pod_info
        if pa.priority != pb.priority:
            return pa.priority > pb.priority
        ka, kb = self._sort_key(a), self._sort_key(b)
        return ka < kb

    def _sort_key(self, q: QueuedPodInfoLike) -> tuple[float, str]:
        pod = q.pod_info
        name = group_name(pod.labels)
        if not name:
            return q.timestamp, pod.key
        group = full_name(pod.namespace, name)
        return self._first_seen.setdefault(group, q.timestamp), group

    # --- PreFilter, PostFilter ---------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: PodInfo,
                   nodes: Sequence[NodeInfo]) -> tuple[PreFilterResult | None, Status]:
        return None, self.manager.pre_filter(pod)

    def pre_filter_extensions(self) -> None:
        return None

    def post_filter(self, state: CycleState, pod: PodInfo,
                    statuses: NodeToStatus) -> tuple[PostFilterResult | None, Status]:
        name, reject = self.manager.should_reject_group(pod)
        if not reject:
            return None, Status(Code.UNSCHEDULABLE)
        self._reject_waiting(pod, "optimistic rejection in PostFilter")
        self.manager.back_off(name)
        return None, Status(Code.UNSCHEDULABLE,
                            f"PodGroup {name} gets rejected due to Pod {pod.name} is unschedulable even after "
                            "PostFilter")

    # --- Reserve, Permit ---------------------------------------------------------------------------

    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        return Status()

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        name, group = self.manager.group_of(pod)
        if group is None:
            return
        self._reject_waiting(pod, f"rejected because member {pod.name} of PodGroup {name} gave its place back")
        self.manager.back_off(name)

    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status, float]:
        verdict = self.manager.permit(pod)
        if verdict.status.is_success() and group_name(pod.labels):
            # The last member needed: every waiting member of the group goes now.
            key = (pod.namespace, group_name(pod.labels))

            def allow(waiting: WaitingPod) -> None:
                if (waiting.pod.namespace, group_name(waiting.pod.labels)) == key:
                    waiting.allow(NAME)
            self._handle.iterate_over_waiting_pods(allow)
        if verdict.activate_siblings:
            self._handle.activate(u for u in self._member_uids(pod.namespace, group_name(pod.labels))
                                  if u != pod.uid)
        return verdict.status, verdict.timeout

    def _reject_waiting(self, pod: PodInfo, message: str) -> None:
        key = (pod.namespace, group_name(pod.labels))

        def reject(waiting: WaitingPod) -> None:
            if (waiting.pod.namespace, group_name(waiting.pod.labels)) == key and waiting.pod.uid != pod.uid:
                waiting.reject(NAME, message)
        self._handle.iterate_over_waiting_pods(reject)

    # --- EnqueueExtensions -------------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEvent]:
        return [ClusterEvent(EventResource.POD, ActionType.ADD, "AssignedPodAdd"),
                ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE, "NodeAdd")]


def new(args: Mapping[str, Any] | None, handle: Handle) -> Coscheduling:
    """The factory: ``permitWaitingTimeSeconds`` (default 60) and ``podGroupBackoffSeconds`` (default 0)."""
    args = args or {}
    unknown = sorted(k for k in args if k not in ("permitWaitingTimeSeconds", "podGroupBackoffSeconds",
                                                  "apiVersion", "kind"))
    if unknown:
        raise ValueError(f'strict decoding error: unknown field "{unknown[0]}"')
    timeout = _seconds(args, "permitWaitingTimeSeconds", 60)
    backoff = _seconds(args, "podGroupBackoffSeconds", 0)
    return Coscheduling(handle, permit_timeout=timeout, backoff=backoff)


def _seconds(args: Mapping[str, Any], key: str, default: int) -> float:
    value = args.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"{key}: Invalid value: {value!r}: must be a non-negative integer")
    return float(value)


__all__ = ["NAME", "POD_GROUP_LABEL", "Coscheduling", "index_by_pod_group", "new"]
