"""What the page draws, kept small: one summary per Node and per Pod, and the changes since last sent.

The browser does not receive Pods as the API holds them (a few kilobytes
each; 10,000 of them would be tens of megabytes): the UI server keeps, per
object, only what the cluster view draws, and sends the page a snapshot and
then the summaries that changed, in batches (see :mod:`kubesim.ui.feed`).
The details of one object (its YAML, Events, trace) are read on demand.

- a Node summary: name, readiness (Ready, NotReady, Unknown), cordoned,
  taints, labels, allocatable cpu (millicores), memory (bytes) and pods;
- a Pod summary: uid, namespace, name, node, the phase the page colours it by
  (Pending, ContainerCreating, Running, Succeeded, Failed, Terminating),
  requests, owner, labels, and for a Pod not yet bound, why (the
  PodScheduled condition's reason and message) and its scheduling queue.

Pure data and functions; :class:`ClusterModel` is owned by the feed's task.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

from machinery.api.quantity import node_allocatable, pod_requests

Obj = dict[str, Any]
Summary = dict[str, Any]

#: The phases the page colours Pods by.
PHASES: Final = ("Pending", "ContainerCreating", "Running", "Succeeded", "Failed", "Terminating")


def node_summary(node: Obj) -> Summary:
    meta = node.get("metadata") or {}
    spec = node.get("spec") or {}
    status = node.get("status") or {}
    ready = "Unknown"
    for cond in status.get("conditions") or ():
        if cond.get("type") == "Ready":
            ready = {"True": "Ready", "False": "NotReady"}.get(cond.get("status"), "Unknown")
    allocatable = node_allocatable(node)
    return {
        "name": meta.get("name", ""),
        "ready": ready,
        "unschedulable": bool(spec.get("unschedulable")),
        "taints": [{"key": t.get("key", ""), "value": t.get("value", ""), "effect": t.get("effect", "")}
                   for t in spec.get("taints") or ()],
        "labels": dict(meta.get("labels") or {}),
        "cpu": allocatable.get("cpu", 0),
        "memory": allocatable.get("memory", 0) // 1000,
        "pods": allocatable.get("pods", 0) // 1000,
        "version": ((status.get("nodeInfo") or {}).get("kubeletVersion") or ""),
    }


def display_phase(pod: Obj) -> str:
    """The phase the page colours a Pod by (a simpler form of ``kubectl get pods``' STATUS)."""
    meta = pod.get("metadata") or {}
    status = pod.get("status") or {}
    phase = status.get("phase") or "Pending"
    if meta.get("deletionTimestamp") and phase not in ("Succeeded", "Failed"):
        return "Terminating"
    if phase in ("Succeeded", "Failed", "Running"):
        return str(phase)
    if (pod.get("spec") or {}).get("nodeName"):
        return "ContainerCreating"
    return "Pending"


def _scheduling(status: Obj) -> tuple[str, str]:
    for cond in status.get("conditions") or ():
        if cond.get("type") == "PodScheduled" and cond.get("status") != "True":
            return str(cond.get("reason") or ""), str(cond.get("message") or "")
    return "", ""


def pod_summary(pod: Obj) -> Summary:
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    requests = pod_requests(pod)
    owner = next((f"{o.get('kind')}/{o.get('name')}" for o in meta.get("ownerReferences") or ()
                  if o.get("controller")), "")
    reason, message = _scheduling(status)
    return {
        "uid": meta.get("uid", ""),
        "namespace": meta.get("namespace", ""),
        "name": meta.get("name", ""),
        "node": spec.get("nodeName") or "",
        "phase": display_phase(pod),
        "cpu": requests.get("cpu", 0),
        "memory": requests.get("memory", 0) // 1000,
        "owner": owner,
        "labels": dict(meta.get("labels") or {}),
        "reason": reason,
        "message": message,
        "created": meta.get("creationTimestamp") or "",
    }


def queue_of(pod: Summary, queues: dict[str, str]) -> str:
    """Which scheduling queue an unbound Pod waits in: the scheduler's word if it said, else its condition's."""
    if pod["node"]:
        return ""
    key = f"{pod['namespace']}/{pod['name']}"
    if key in queues:
        return queues[key]
    if pod["reason"] == "SchedulingGated":
        return "gated"
    if pod["reason"] == "Unschedulable":
        return "unschedulable"
    return "active"


@dataclass
class ClusterModel:
    """The summaries the page draws, and those changed since the last :meth:`take_changes`."""

    nodes: dict[str, Summary] = field(default_factory=dict)
    pods: dict[str, Summary] = field(default_factory=dict)
    queues: dict[str, str] = field(default_factory=dict)
    _changed_nodes: dict[str, Summary | None] = field(default_factory=dict)
    _changed_pods: dict[str, Summary | None] = field(default_factory=dict)

    def apply(self, kind: str, event_type: str, obj: Obj) -> None:
        """One watch event of ``nodes`` or ``pods``."""
        if kind == "nodes":
            name = (obj.get("metadata") or {}).get("name", "")
            if event_type == "DELETED":
                if self.nodes.pop(name, None) is not None:
                    self._changed_nodes[name] = None
                return
            summary = node_summary(obj)
            if self.nodes.get(name) != summary:
                self.nodes[name] = summary
                self._changed_nodes[name] = summary
            return
        uid = (obj.get("metadata") or {}).get("uid", "")
        if event_type == "DELETED":
            if self.pods.pop(uid, None) is not None:
                self._changed_pods[uid] = None
            return
        summary = pod_summary(obj)
        summary["queue"] = queue_of(summary, self.queues)
        if self.pods.get(uid) != summary:
            self.pods[uid] = summary
            self._changed_pods[uid] = summary

    def replace(self, kind: str, objects: list[Obj]) -> None:
        """A (re)list: the new state, with what vanished meanwhile reported as deleted."""
        if kind == "nodes":
            seen = {(o.get("metadata") or {}).get("name", "") for o in objects}
            for name in [n for n in self.nodes if n not in seen]:
                del self.nodes[name]
                self._changed_nodes[name] = None
        else:
            seen = {(o.get("metadata") or {}).get("uid", "") for o in objects}
            for uid in [u for u in self.pods if u not in seen]:
                del self.pods[uid]
                self._changed_pods[uid] = None
        for obj in objects:
            self.apply(kind, "ADDED", obj)

    def set_queues(self, queues: dict[str, str]) -> None:
        """The scheduler's queues (``namespace/name`` -> active, backoff, unschedulable, gated)."""
        self.queues = queues
        for uid, pod in self.pods.items():
            lane = queue_of(pod, queues)
            if pod.get("queue") != lane:
                pod = {**pod, "queue": lane}
                self.pods[uid] = pod
                self._changed_pods[uid] = pod

    def snapshot(self) -> dict[str, Any]:
        return {"nodes": dict(self.nodes), "pods": dict(self.pods)}

    def take_changes(self) -> dict[str, Any] | None:
        """The summaries changed since the last call (``None`` for a deletion), or None if nothing changed."""
        if not self._changed_nodes and not self._changed_pods:
            return None
        changes = {"nodes": self._changed_nodes, "pods": self._changed_pods}
        self._changed_nodes, self._changed_pods = {}, {}
        return changes
