"""The client actions of a trace: what people and their tools did, as opposed to what the cluster did.

A recording holds every change; a replay must redo only what clients did
(create, update, scale, delete; nodes added and removed), and leave to the
target's controllers, scheduler and kubelets what they do, so that the
outcome is the target cluster's. :func:`client_actions` reads a trace so:

- an object with a controller owner reference (a ReplicationController's
  Pods, a Deployment's ReplicaSets) is the cluster's: none of its changes is
  an action; so are the objects the control plane makes without one
  (:class:`~kubesim.studies.objects.ControlPlaneMade`: the Endpoints of a
  Service with a selector, ``default/kubernetes``, ``kube-root-ca.crt``);
- ``ADDED`` is a ``create`` (but for a namespace's ``default``
  ServiceAccount, which the ServiceAccount controller makes: a client's
  later changes to it are updates); the first sight of a deletionTimestamp (or a
  ``DELETED`` never announced so) is a ``delete``, unless the system deleted
  it: a Pod whose ``DisruptionTarget`` reason is preemption, taint eviction,
  the kubelet or the Pod garbage collector, or anything inside a Namespace
  being deleted (the namespace controller's work, after the client's delete
  of the Namespace);
- ``MODIFIED`` is an ``update`` when what a client may change changed, and a
  ``scale`` when only ``spec.replicas`` did. What components change is not
  looked at: statuses, a Pod's ``spec.nodeName`` (the scheduler binds), the
  scheduler's and Deployment controller's annotations, a Node's kubelet
  labels, condition taints (``node.kubernetes.io/*``) and podCIDR, the
  Namespace name label, owner references and the garbage collector's
  finalizers.

``INITIAL`` records are the state the trace starts from (loaded as a
snapshot is), not actions. Pure functions.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

import orjson

from kubesim.studies.objects import ControlPlaneMade, controller_of, group_kind, key_of
from kubesim.studies.traceformat import Record, Trace

Verb = Literal["create", "update", "scale", "delete"]

#: ``DisruptionTarget`` reasons of deletions the system makes, not a client.
SYSTEM_DISRUPTIONS: Final = frozenset({"PreemptionByScheduler", "DeletionByTaintManager", "TerminationByKubelet",
                                       "DeletionByPodGC"})
_COMPONENT_ANNOTATIONS: Final = ("kubesim.io/filter-result", "kubesim.io/score-result", "kubesim.io/selected-node",
                                 "control-plane.alpha.kubernetes.io/leader", "node.alpha.kubernetes.io/ttl",
                                 "volumes.kubernetes.io/controller-managed-attach-detach")
_COMPONENT_ANNOTATION_PREFIXES: Final = ("deployment.kubernetes.io/",)
_KUBELET_LABELS: Final = ("kubernetes.io/hostname", "kubernetes.io/os", "kubernetes.io/arch",
                          "beta.kubernetes.io/os", "beta.kubernetes.io/arch")
_SYSTEM_TAINT_PREFIXES: Final = ("node.kubernetes.io/", "node.cloudprovider.kubernetes.io/")
_GC_FINALIZERS: Final = ("foregroundDeletion", "orphan")
#: The ServiceAccount the ServiceAccount controller makes in every namespace.
DEFAULT_SERVICE_ACCOUNT: Final = "default"


@dataclass(frozen=True, slots=True)
class Action:
    """One thing a client did, at ``t`` seconds into the trace."""

    t: float
    verb: Verb
    object: dict[str, Any]
    #: ``scale``: the new ``spec.replicas``.
    replicas: int | None = None

    @property
    def key(self) -> tuple[str, str, str]:
        return key_of(self.object)

    @property
    def kind(self) -> str:
        return group_kind(self.object)

    def comparable(self) -> tuple[str, str, str, str, bytes]:
        """The action without its time, to compare two traces' actions."""
        kind, namespace, name = self.key
        body = self.replicas if self.verb == "scale" else (client_view(self.object) if self.verb != "delete" else None)
        return self.verb, kind, namespace, name, orjson.dumps(body, option=orjson.OPT_SORT_KEYS)

    def describe(self) -> str:
        kind, namespace, name = self.key
        where = f"{namespace}/{name}" if namespace else name
        extra = f" to {self.replicas}" if self.verb == "scale" else ""
        return f"{self.t:9.3f}s {self.verb} {kind} {where}{extra}"


def client_view(obj: Mapping[str, Any]) -> dict[str, Any]:
    """What of an object a client sets: the fields components change are left out (see the module docstring)."""
    out = {k: v for k, v in obj.items() if k != "status"}
    kind = group_kind(obj)
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k != "ownerReferences"}
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items()
                   if k not in _COMPONENT_ANNOTATIONS and not k.startswith(_COMPONENT_ANNOTATION_PREFIXES)}
    labels = dict(meta.get("labels") or {})
    finalizers = [f for f in meta.get("finalizers") or () if f not in _GC_FINALIZERS]
    meta.update(annotations=annotations, labels=labels, finalizers=finalizers)
    spec = dict(obj.get("spec") or {})
    if kind == "Pod":
        spec.pop("nodeName", None)
    elif kind == "Node":
        for label in _KUBELET_LABELS:
            labels.pop(label, None)
        spec.pop("podCIDR", None)
        spec.pop("podCIDRs", None)
        spec["taints"] = [t for t in spec.get("taints") or () if not str(t.get("key", "")).startswith(
            _SYSTEM_TAINT_PREFIXES)]
    elif kind == "Namespace":
        labels.pop("kubernetes.io/metadata.name", None)
        spec.pop("finalizers", None)
    out["metadata"] = meta
    if "spec" in obj:
        out["spec"] = spec
    return out


def _only_replicas_changed(before: Mapping[str, Any], after: Mapping[str, Any]) -> bool:
    b, a = dict(before), dict(after)
    b_spec, a_spec = dict(b.get("spec") or {}), dict(a.get("spec") or {})
    if b_spec.get("replicas") == a_spec.get("replicas") or "replicas" not in a_spec:
        return False
    b_spec.pop("replicas", None)
    a_spec.pop("replicas", None)
    b["spec"], a["spec"] = b_spec, a_spec
    return b == a


def initial_objects(trace: Trace) -> list[dict[str, Any]]:
    """The objects the trace starts from (its ``INITIAL`` records), but those every control plane makes itself."""
    initial = [r.object for r in trace.records if r.type == "INITIAL"]
    made = ControlPlaneMade.among(initial)
    return [o for o in initial if not made(o)]


def client_actions(records: Iterable[Record]) -> list[Action]:
    """The client actions of a trace's records, in order (see the module docstring)."""
    state: dict[tuple[str, str, str], dict[str, Any]] = {}
    deleting: set[tuple[str, str, str]] = set()
    namespaces_deleting: set[str] = set()
    made = ControlPlaneMade()
    actions: list[Action] = []

    def system_deletion(obj: Mapping[str, Any], observed: Mapping[str, Any]) -> bool:
        _, namespace, _ = key_of(obj)
        return (namespace in namespaces_deleting or observed.get("disruption") in SYSTEM_DISRUPTIONS
                or controller_of(obj) is not None)

    for record in records:
        obj, observed = record.object, record.observed
        key = key_of(obj)
        kind, _namespace, name = key
        made.see(obj, gone=record.type == "DELETED")
        if made(obj, gone=record.type == "DELETED"):
            continue
        if record.type == "INITIAL":
            state[key] = obj
            if observed.get("deleting"):
                deleting.add(key)
                if kind == "Namespace":
                    namespaces_deleting.add(name)
            continue
        if record.type == "DELETED":
            state.pop(key, None)
            announced = key in deleting
            deleting.discard(key)
            if not announced and not system_deletion(obj, observed):
                actions.append(Action(record.t, "delete", obj))
            if kind == "Namespace":
                namespaces_deleting.discard(name)
            continue
        before = state.get(key)
        state[key] = obj
        if observed.get("deleting"):
            if key not in deleting:
                deleting.add(key)
                if not system_deletion(obj, observed):
                    actions.append(Action(record.t, "delete", obj))
                if kind == "Namespace":
                    namespaces_deleting.add(name)
            continue
        if controller_of(obj) is not None:
            continue
        if record.type == "ADDED" or before is None:
            if not (kind == "ServiceAccount" and name == DEFAULT_SERVICE_ACCOUNT):
                actions.append(Action(record.t, "create", obj))
            continue
        was, now = client_view(before), client_view(obj)
        if was == now:
            continue
        if _only_replicas_changed(was, now):
            actions.append(Action(record.t, "scale", obj, replicas=int(now["spec"]["replicas"])))
        else:
            actions.append(Action(record.t, "update", obj))
    return actions
