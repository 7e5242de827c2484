"""Pods: status reset on create, graceful deletion, and the binding and eviction subresources.

A Pod bound to a node is not removed by a delete: it gets a deletionTimestamp
and deletionGracePeriodSeconds, the kubelet stops its containers and then
deletes it with ``gracePeriodSeconds=0``. An unbound (or finished) Pod goes at
once. Binding sets ``spec.nodeName`` exactly once: a second binding is a 409.
"""

from __future__ import annotations

from typing import Any, ClassVar

from apiserver import errors
from apiserver.registry.store import DeleteOptions, Store, WriteOptions
from apiserver.registry.strategy import Obj, Strategy
from apiserver.storage.objects import Entry
from apiserver.validation import core as validation
from apiserver.validation import defaults
from apiserver.validation.field import FieldError, invalid_message
from machinery.api import kinds
from machinery.api.meta import now_time
from machinery.api.quantity import parse_quantity

TERMINAL_PHASES = ("Succeeded", "Failed")


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
    ri = kinds.PODS
    return_deleted_object = True
    has_generation = True
    selectable_fields: ClassVar[tuple[str, ...]] = (
        "spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
        "spec.hostNetwork", "status.phase", "status.podIP", "status.nominatedNodeName",
    )

    def __init__(self, *, not_ready_toleration_seconds: int = 300, unreachable_toleration_seconds: int = 300) -> None:
        self.not_ready_toleration_seconds = not_ready_toleration_seconds
        self.unreachable_toleration_seconds = unreachable_toleration_seconds

    def prepare_for_create(self, obj: Obj) -> None:
        obj["status"] = {"phase": "Pending"}

    def prepare_for_status_update(self, new: Obj, old: Obj) -> None:
        super().prepare_for_status_update(new, old)
        # kube-apiserver does not let pods/status touch ownerReferences: old kubelets corrupted them.
        owners = (old.get("metadata") or {}).get("ownerReferences")
        meta = new.setdefault("metadata", {})
        if owners is None:
            meta.pop("ownerReferences", None)
        else:
            meta["ownerReferences"] = owners

    def default(self, obj: Obj) -> None:
        defaults.default_pod(obj, not_ready_toleration_seconds=self.not_ready_toleration_seconds,
                             unreachable_toleration_seconds=self.unreachable_toleration_seconds)
        status = obj.setdefault("status", {})
        if "qosClass" not in status:
            status["qosClass"] = qos_class(obj.get("spec") or {})

    def validate(self, obj: Obj) -> list[FieldError]:
        return validation.validate_pod(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_pod_update(new, old)

    def validate_status_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validation.validate_pod_status_update(new, old)

    def validate_subresource(self, subresource: str, new: Obj, old: Obj) -> list[FieldError]:
        if subresource == "binding":
            # A binding sets spec.nodeName, annotations and a condition on a Pod that was valid;
            # kube-apiserver does not validate the Pod again either (the Binding is validated).
            return []
        return super().validate_subresource(subresource, new, old)

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


async def bind(store: Store, namespace: str, name: str, binding: Obj, opts: WriteOptions) -> Entry:
    """pods/binding: set spec.nodeName once, copy the binding's annotations, mark PodScheduled."""
    errs = validation.validate_binding(binding)
    if errs:
        raise errors.invalid(kinds.PODS, name, invalid_message("Binding", name, errs), [e.cause() for e in errs])
    node = binding["target"]["name"]
    meta = binding.get("metadata") or {}
    want_uid = meta.get("uid")
    want_rv = meta.get("resourceVersion")
    annotations = meta.get("annotations") or {}

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
    # the "binding" subresource skips the spec-update rules that forbid changing nodeName.
    # Like kube-apiserver's binding storage, this write does not go through the field
    # manager: no managedFields entry is recorded for it.
    entry, _ = await store.update_with(namespace, name, assign, WriteOptions(
        dry_run=opts.dry_run, field_manager=opts.field_manager, subresource="binding", track_fields=False))
    return entry


async def evict(store: Store, namespace: str, name: str, options: DeleteOptions, opts: WriteOptions) -> None:
    """pods/eviction: mark the Pod with a ``DisruptionTarget`` condition, then delete it.

    kubesim has no PodDisruptionBudgets, so every eviction is allowed. As kube-apiserver
    (1.31 and later) does, a Pod that is not finished records why it goes before it goes.
    """
    def mark(pod: Obj, _current: Entry) -> Obj:
        status = pod.setdefault("status", {})
        if status.get("phase") in TERMINAL_PHASES or (pod.get("metadata") or {}).get("deletionTimestamp"):
            return pod
        conditions = [c for c in status.get("conditions") or [] if c.get("type") != "DisruptionTarget"]
        conditions.append({"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI",
                           "message": "Eviction API: evicting", "lastTransitionTime": now_time()})
        status["conditions"] = conditions
        return pod

    if not options.dry_run:
        await store.update_with(namespace, name, mark, WriteOptions(field_manager=opts.field_manager,
                                                                     subresource="status"))
    await store.delete(namespace, name, options)
