"""What the controllers ask of a Pod: is it active, ready, available, and who controls it.

Kubernetes keeps these answers in ``pkg/api/v1/pod`` and
``pkg/controller/controller_utils.go``; several controllers here (replication,
node lifecycle, taint eviction) must give exactly the same answers, so they
live in one place. They read the official models the informers hold and
never modify them.

Pure functions; no state.
"""

from __future__ import annotations

import datetime as dt
from typing import Final

from kubernetes.client import V1ObjectMeta, V1OwnerReference, V1Pod, V1PodCondition

POD_READY: Final = "Ready"
DISRUPTION_TARGET: Final = "DisruptionTarget"
_TERMINAL_PHASES: Final = frozenset({"Succeeded", "Failed"})


def is_pod_active(pod: V1Pod) -> bool:
    """``controller.IsPodActive``: not Succeeded, not Failed, not being deleted."""
    meta = pod.metadata
    if meta is not None and meta.deletion_timestamp is not None:
        return False
    phase = pod.status.phase if pod.status is not None else None
    return phase not in _TERMINAL_PHASES


def get_pod_condition(pod: V1Pod, condition_type: str) -> V1PodCondition | None:
    status = pod.status
    if status is None or not status.conditions:
        return None
    for condition in status.conditions:
        if condition.type == condition_type:
            return condition
    return None


def is_pod_ready(pod: V1Pod) -> bool:
    """``podutil.IsPodReady``: the Ready condition is True."""
    condition = get_pod_condition(pod, POD_READY)
    return condition is not None and condition.status == "True"


def ready_since(pod: V1Pod) -> dt.datetime | None:
    """When a ready Pod last became ready (``podReadyTime``); None when it is not ready."""
    condition = get_pod_condition(pod, POD_READY)
    if condition is None or condition.status != "True":
        return None
    return condition.last_transition_time


def is_pod_available(pod: V1Pod, min_ready_seconds: int, now: dt.datetime) -> bool:
    """``podutil.IsPodAvailable``: ready for at least ``minReadySeconds`` (any ready Pod when 0)."""
    if not is_pod_ready(pod):
        return False
    if min_ready_seconds == 0:
        return True
    since = ready_since(pod)
    return since is not None and since + dt.timedelta(seconds=min_ready_seconds) < now


def controller_of(meta: V1ObjectMeta | None) -> V1OwnerReference | None:
    """``metav1.GetControllerOf``: the ownerReference with ``controller: true``, if any."""
    if meta is None or not meta.owner_references:
        return None
    for ref in meta.owner_references:
        if ref.controller:
            return ref
    return None


def max_container_restarts(pod: V1Pod) -> int:
    statuses = pod.status.container_statuses if pod.status is not None else None
    return max((s.restart_count for s in statuses or ()), default=0)
