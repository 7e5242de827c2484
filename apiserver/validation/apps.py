"""The apps/v1 kinds' rules: Kubernetes' defaulting and validation of Deployments, ReplicaSets,
StatefulSets, DaemonSets and ControllerRevisions.

Kubernetes keeps a group's defaulting (``pkg/apis/apps/v1/defaults.go``)
beside its validation (``pkg/apis/apps/validation``); this module holds both
for the apps group, on wire-form dicts, with the feature gates at their 1.32
defaults (StatefulSetAutoDeletePVC on, MaxUnavailableStatefulSet off). The
registry strategies in ``apiserver/registry/apps/`` call them; what only the
request path decides (the selector is immutable in apps/v1, a spec change bumps
the generation) is in those strategies, as in Kubernetes.

``default_*`` functions mutate the dict they are handed and are idempotent;
``validate_*`` functions return every problem found. Pure; no state.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from apiserver.validation import values
from apiserver.validation.defaults import default_pod_template
from apiserver.validation.field import FieldError, Path
from apiserver.validation.meta import (
    name_is_dns1123_label,
    validate_annotations,
    validate_label_selector,
    validate_labels,
    validate_object_meta,
    validate_object_meta_update,
)
from apiserver.validation.pod import (
    validate_pod_annotations,
    validate_pod_template_spec,
    validate_template_keeps_running,
    validate_template_matches_selector,
)
from apiserver.validation.values import nonnegative, obj
from machinery.api.labels import Selector, SelectorError

Obj = Mapping[str, Any]
Mut = dict[str, Any]

SPEC: Final = Path("spec")
STATUS: Final = Path("status")
_GREATER_THAN_REPLICAS: Final = "cannot be greater than status.replicas"
#: Where apps/v1 keeps the DaemonSet's internal ``spec.templateGeneration``.
TEMPLATE_GENERATION_ANNOTATION: Final = "deprecated.daemonset.template.generation"
_RETENTION_POLICIES: Final = ("Retain", "Delete")


def _child(parent: Mut, key: str) -> Mut:
    value = parent.get(key)
    if not isinstance(value, dict):
        value = parent[key] = {}
    return value


# --- defaulting -------------------------------------------------------------------------------

def default_deployment(deployment: Mut) -> None:
    """``SetDefaults_Deployment``: 1 replica, RollingUpdate 25%/25%, 10 revisions, 600 s to progress."""
    spec = _child(deployment, "spec")
    if spec.get("replicas") is None:
        spec["replicas"] = 1
    strategy = _child(spec, "strategy")
    if not strategy.get("type"):
        strategy["type"] = "RollingUpdate"
    if strategy["type"] == "RollingUpdate":
        rolling = _child(strategy, "rollingUpdate")
        for key in ("maxUnavailable", "maxSurge"):
            if rolling.get(key) is None:
                rolling[key] = "25%"
    if spec.get("revisionHistoryLimit") is None:
        spec["revisionHistoryLimit"] = 10
    if spec.get("progressDeadlineSeconds") is None:
        spec["progressDeadlineSeconds"] = 600
    default_pod_template(spec.get("template"))


def default_replica_set(replica_set: Mut) -> None:
    spec = _child(replica_set, "spec")
    if spec.get("replicas") is None:
        spec["replicas"] = 1
    default_pod_template(spec.get("template"))


def default_stateful_set(stateful_set: Mut) -> None:
    """``SetDefaults_StatefulSet``, and the PVC defaults of its volume claim templates."""
    spec = _child(stateful_set, "spec")
    if not spec.get("podManagementPolicy"):
        spec["podManagementPolicy"] = "OrderedReady"
    strategy = _child(spec, "updateStrategy")
    if not strategy.get("type"):
        strategy["type"] = "RollingUpdate"
        if strategy.get("rollingUpdate") is None:
            strategy["rollingUpdate"] = {}
    rolling = strategy.get("rollingUpdate")
    if strategy["type"] == "RollingUpdate" and isinstance(rolling, dict) and rolling.get("partition") is None:
        rolling["partition"] = 0
    retention = _child(spec, "persistentVolumeClaimRetentionPolicy")
    for key in ("whenDeleted", "whenScaled"):
        if not retention.get(key):
            retention[key] = "Retain"
    if spec.get("replicas") is None:
        spec["replicas"] = 1
    if spec.get("revisionHistoryLimit") is None:
        spec["revisionHistoryLimit"] = 10
    for claim in spec.get("volumeClaimTemplates") or ():
        if isinstance(claim, dict):
            # SetDefaults_PersistentVolumeClaim and its spec's: Filesystem volumes, a Pending phase.
            claim_spec = _child(claim, "spec")
            if claim_spec.get("volumeMode") is None:
                claim_spec["volumeMode"] = "Filesystem"
            status = _child(claim, "status")
            if not status.get("phase"):
                status["phase"] = "Pending"
    default_pod_template(spec.get("template"))


def default_daemon_set(daemon_set: Mut) -> None:
    """``SetDefaults_DaemonSet``: RollingUpdate with maxUnavailable 1 and maxSurge 0, 10 revisions."""
    spec = _child(daemon_set, "spec")
    strategy = _child(spec, "updateStrategy")
    if not strategy.get("type"):
        strategy["type"] = "RollingUpdate"
    if strategy["type"] == "RollingUpdate":
        rolling = _child(strategy, "rollingUpdate")
        if rolling.get("maxUnavailable") is None:
            rolling["maxUnavailable"] = 1
        if rolling.get("maxSurge") is None:
            rolling["maxSurge"] = 0
    if spec.get("revisionHistoryLimit") is None:
        spec["revisionHistoryLimit"] = 10
    default_pod_template(spec.get("template"))


# --- shared pieces ----------------------------------------------------------------------------------

def _validate_selector(spec: Obj, path: Path, kind: str) -> tuple[Selector | None, list[FieldError]]:
    """A required, non-empty ``spec.selector``, and the selector it compiles to (``None`` if it does not)."""
    selector = spec.get("selector")
    errs: list[FieldError] = []
    if selector is None:
        errs.append(FieldError.required(path))
    else:
        errs += validate_label_selector(selector, path)
        if not (obj(selector).get("matchLabels") or obj(selector).get("matchExpressions")):
            errs.append(FieldError.invalid(path, selector, f"empty selector is invalid for {kind}"))
    try:
        return Selector.from_label_selector(selector), errs
    except SelectorError:
        return None, errs


def _validate_template_for_replica_set(spec: Obj, selector: Selector | None, path: Path) -> list[FieldError]:
    """``ValidatePodTemplateSpecForReplicaSet`` (Deployments and ReplicaSets)."""
    template = spec.get("template")
    errs = validate_template_matches_selector(selector, template, path) if selector is not None else []
    errs += validate_pod_template_spec(obj(template), path)
    return errs + validate_template_keeps_running(template, path, "ReplicaSet")


def _collision_count_not_decremented(new: Obj, old: Obj) -> list[FieldError]:
    """``IsDecremented`` of ``status.collisionCount``."""
    now, before = obj(new.get("status")).get("collisionCount"), obj(old.get("status")).get("collisionCount")
    if before is not None and (now is None or now < before):
        return [FieldError.invalid(STATUS.child("collisionCount"), now or 0, "cannot be decremented")]
    return []


def _counts(status: Obj, keys: tuple[str, ...], path: Path) -> tuple[dict[str, int], list[FieldError]]:
    counts = {key: int(status.get(key) or 0) for key in keys}
    errs: list[FieldError] = []
    for key in keys:
        errs += nonnegative(counts[key], path.child(key))
    return counts, errs


def _no_more_than_replicas(counts: dict[str, int], keys: tuple[str, ...], path: Path) -> list[FieldError]:
    return [FieldError.invalid(path.child(key), counts[key], _GREATER_THAN_REPLICAS)
            for key in keys if counts[key] > counts["replicas"]]


# --- Deployment -----------------------------------------------------------------------------------

def _validate_rolling_update_deployment(rolling: Obj, path: Path) -> list[FieldError]:
    unavailable, surge = rolling.get("maxUnavailable"), rolling.get("maxSurge")
    errs = values.validate_positive_int_or_percent(unavailable, path.child("maxUnavailable"))
    errs += values.validate_positive_int_or_percent(surge, path.child("maxSurge"))
    if values.int_or_percent_value(unavailable) == 0 and values.int_or_percent_value(surge) == 0:
        errs.append(FieldError.invalid(path.child("maxUnavailable"), unavailable,
                                       "may not be 0 when `maxSurge` is 0"))
    return errs + values.validate_not_more_than_100_percent(unavailable, path.child("maxUnavailable"))


def _validate_deployment_strategy(strategy: Obj, path: Path) -> list[FieldError]:
    kind = strategy.get("type")
    if kind == "Recreate":
        if strategy.get("rollingUpdate") is not None:
            return [FieldError.forbidden(path.child("rollingUpdate"),
                                         "may not be specified when strategy `type` is 'Recreate'")]
        return []
    if kind == "RollingUpdate":
        rolling = strategy.get("rollingUpdate")
        if rolling is None:
            return [FieldError.required(path.child("rollingUpdate"), "this should be defaulted and never be nil")]
        return _validate_rolling_update_deployment(rolling, path.child("rollingUpdate"))
    return [FieldError.not_supported(path, dict(strategy), ("Recreate", "RollingUpdate"))]


def _validate_deployment_spec(spec: Obj, path: Path) -> list[FieldError]:
    errs = nonnegative(spec.get("replicas"), path.child("replicas"))
    selector, selector_errs = _validate_selector(spec, path.child("selector"), "deployment")
    errs += selector_errs
    if selector is None:
        errs.append(FieldError.invalid(path.child("selector"), spec.get("selector"), "invalid label selector"))
    errs += _validate_template_for_replica_set(spec, selector, path.child("template"))
    errs += _validate_deployment_strategy(obj(spec.get("strategy")), path.child("strategy"))
    min_ready = int(spec.get("minReadySeconds") or 0)
    errs += nonnegative(min_ready, path.child("minReadySeconds"))
    errs += nonnegative(spec.get("revisionHistoryLimit"), path.child("revisionHistoryLimit"))
    deadline = spec.get("progressDeadlineSeconds")
    if deadline is not None:
        errs += nonnegative(deadline, path.child("progressDeadlineSeconds"))
        if deadline <= min_ready:
            errs.append(FieldError.invalid(path.child("progressDeadlineSeconds"), deadline,
                                           "must be greater than minReadySeconds"))
    return errs


def validate_deployment(deployment: Obj) -> list[FieldError]:
    errs = validate_object_meta(obj(deployment.get("metadata")), namespaced=True)
    return errs + _validate_deployment_spec(obj(deployment.get("spec")), SPEC)


def validate_deployment_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_object_meta_update(obj(new.get("metadata")), obj(old.get("metadata")))
    return errs + _validate_deployment_spec(obj(new.get("spec")), SPEC)


def validate_deployment_status_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_object_meta_update(obj(new.get("metadata")), obj(old.get("metadata")))
    status = obj(new.get("status"))
    keys = ("observedGeneration", "replicas", "updatedReplicas", "readyReplicas", "availableReplicas",
            "unavailableReplicas")
    counts, count_errs = _counts(status, keys, STATUS)
    errs += count_errs
    errs += nonnegative(status.get("collisionCount"), STATUS.child("collisionCount"))
    errs += _no_more_than_replicas(counts, ("updatedReplicas", "readyReplicas", "availableReplicas"), STATUS)
    if counts["availableReplicas"] > counts["readyReplicas"]:
        errs.append(FieldError.invalid(STATUS.child("availableReplicas"), counts["availableReplicas"],
                                       "cannot be greater than readyReplicas"))
    return errs + _collision_count_not_decremented(new, old)


# --- ReplicaSet -----------------------------------------------------------------------------------

def _validate_replica_set_spec(spec: Obj, path: Path) -> list[FieldError]:
    errs = nonnegative(spec.get("replicas"), path.child("replicas"))
    errs += nonnegative(spec.get("minReadySeconds"), path.child("minReadySeconds"))
    # Kubernetes says "deployment" here too.
    selector, selector_errs = _validate_selector(spec, path.child("selector"), "deployment")
    errs += selector_errs
    if selector is None:
        errs.append(FieldError.invalid(path.child("selector"), spec.get("selector"), "invalid label selector"))
    return errs + _validate_template_for_replica_set(spec, selector, path.child("template"))


def validate_replica_set(replica_set: Obj) -> list[FieldError]:
    errs = validate_object_meta(obj(replica_set.get("metadata")), namespaced=True)
    return errs + _validate_replica_set_spec(obj(replica_set.get("spec")), SPEC)


def validate_replica_set_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_object_meta_update(obj(new.get("metadata")), obj(old.get("metadata")))
    return errs + _validate_replica_set_spec(obj(new.get("spec")), SPEC)


def validate_replica_set_status_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_object_meta_update(obj(new.get("metadata")), obj(old.get("metadata")))
    keys = ("replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas", "observedGeneration")
    counts, count_errs = _counts(obj(new.get("status")), keys, STATUS)
    errs += count_errs
    errs += _no_more_than_replicas(counts, ("fullyLabeledReplicas", "readyReplicas", "availableReplicas"), STATUS)
    if counts["availableReplicas"] > counts["readyReplicas"]:
        errs.append(FieldError.invalid(STATUS.child("availableReplicas"), counts["availableReplicas"],
                                       "cannot be greater than readyReplicas"))
    return errs


# --- StatefulSet ----------------------------------------------------------------------------------

#: The spec fields an update may change; any other change is forbidden.
_STATEFUL_SET_MUTABLE: Final = ("replicas", "ordinals", "template", "updateStrategy",
                                "persistentVolumeClaimRetentionPolicy", "minReadySeconds")
_STATEFUL_SET_FORBIDDEN: Final = ("updates to statefulset spec for fields other than 'replicas', 'ordinals', "
                                  "'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and "
                                  "'minReadySeconds' are forbidden")


def _validate_stateful_set_template(spec: Obj, selector: Selector, path: Path) -> list[FieldError]:
    """``ValidatePodTemplateSpecForStatefulSet``: labels and annotations only, not the Pod spec.

    Kubernetes leaves the template's Pod spec unvalidated here (its volumes may
    name the volume claim templates), and so does kubesim.
    """
    template = obj(spec.get("template"))
    meta = obj(template.get("metadata"))
    errs = validate_template_matches_selector(selector, template, path)
    errs += validate_labels(meta.get("labels"), path.child("labels"))
    errs += validate_annotations(meta.get("annotations"), path.child("annotations"))
    errs += validate_pod_annotations(obj(meta.get("annotations")), obj(template.get("spec")),
                                     path.child("annotations"))
    return errs


def _validate_stateful_set_spec(spec: Obj, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    policy = spec.get("podManagementPolicy") or ""
    if not policy:
        errs.append(FieldError.required(path.child("podManagementPolicy")))
    elif policy not in ("OrderedReady", "Parallel"):
        errs.append(FieldError.invalid(path.child("podManagementPolicy"), policy,
                                       "must be 'OrderedReady' or 'Parallel'"))
    strategy = obj(spec.get("updateStrategy"))
    strategy_path = path.child("updateStrategy")
    kind = strategy.get("type") or ""
    rolling = strategy.get("rollingUpdate")
    if not kind:
        errs.append(FieldError.required(strategy_path))
    elif kind == "OnDelete":
        if rolling is not None:
            errs.append(FieldError.invalid(strategy_path.child("rollingUpdate"), rolling,
                                           "only allowed for updateStrategy 'RollingUpdate'"))
    elif kind == "RollingUpdate":
        if rolling is not None:
            errs += _validate_rolling_update_stateful_set(obj(rolling), strategy_path.child("rollingUpdate"))
    else:
        errs.append(FieldError.invalid(strategy_path, dict(strategy), "must be 'RollingUpdate' or 'OnDelete'"))
    retention = spec.get("persistentVolumeClaimRetentionPolicy")
    if retention is not None:
        retention_path = path.child("persistentVolumeClaimRetentionPolicy")
        for key in ("whenDeleted", "whenScaled"):
            value = obj(retention).get(key) or ""
            if value not in _RETENTION_POLICIES:
                errs.append(FieldError.not_supported(retention_path.child(key), value, _RETENTION_POLICIES))
    errs += nonnegative(spec.get("replicas"), path.child("replicas"))
    errs += nonnegative(spec.get("minReadySeconds"), path.child("minReadySeconds"))
    ordinals = spec.get("ordinals")
    if ordinals is not None:
        errs += nonnegative(obj(ordinals).get("start"), path.child("ordinals.start"))
    selector, selector_errs = _validate_selector(spec, path.child("selector"), "statefulset")
    errs += selector_errs
    if selector is None:
        errs.append(FieldError.invalid(path.child("selector"), spec.get("selector"), ""))
    else:
        errs += _validate_stateful_set_template(spec, selector, path.child("template"))
    return errs + validate_template_keeps_running(spec.get("template"), path.child("template"), "StatefulSet")


def _validate_rolling_update_stateful_set(rolling: Obj, path: Path) -> list[FieldError]:
    errs = nonnegative(rolling.get("partition"), path.child("partition"))
    unavailable = rolling.get("maxUnavailable")
    if unavailable is not None:
        unavailable_path = path.child("maxUnavailable")
        errs += values.validate_positive_int_or_percent(unavailable, unavailable_path)
        if values.int_or_percent_value(unavailable) == 0:
            errs.append(FieldError.invalid(unavailable_path, unavailable, "cannot be 0"))
        errs += values.validate_not_more_than_100_percent(unavailable, unavailable_path)
    return errs


def validate_stateful_set(stateful_set: Obj) -> list[FieldError]:
    # A StatefulSet's name is a DNS label: its Pods' hostnames are built from it.
    errs = validate_object_meta(obj(stateful_set.get("metadata")), namespaced=True, name_rule=name_is_dns1123_label)
    return errs + _validate_stateful_set_spec(obj(stateful_set.get("spec")), SPEC)


def validate_stateful_set_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_object_meta_update(obj(new.get("metadata")), obj(old.get("metadata")))
    new_spec, old_spec = obj(new.get("spec")), obj(old.get("spec"))
    errs += _validate_stateful_set_spec(new_spec, SPEC)
    frozen_new = {k: v for k, v in new_spec.items() if k not in _STATEFUL_SET_MUTABLE and v is not None}
    frozen_old = {k: v for k, v in old_spec.items() if k not in _STATEFUL_SET_MUTABLE and v is not None}
    if frozen_new != frozen_old:
        errs.append(FieldError.forbidden(SPEC, _STATEFUL_SET_FORBIDDEN))
    return errs


def validate_stateful_set_status_update(new: Obj, old: Obj) -> list[FieldError]:
    status = obj(new.get("status"))
    keys = ("replicas", "readyReplicas", "currentReplicas", "updatedReplicas", "availableReplicas")
    counts, errs = _counts(status, keys, STATUS)
    errs += nonnegative(status.get("observedGeneration"), STATUS.child("observedGeneration"))
    errs += nonnegative(status.get("collisionCount"), STATUS.child("collisionCount"))
    errs += _no_more_than_replicas(counts, ("readyReplicas", "currentReplicas", "updatedReplicas",
                                            "availableReplicas"), STATUS)
    if counts["availableReplicas"] > counts["readyReplicas"]:
        errs.append(FieldError.invalid(STATUS.child("availableReplicas"), counts["availableReplicas"],
                                       "cannot be greater than status.readyReplicas"))
    errs += validate_object_meta_update(obj(new.get("metadata")), obj(old.get("metadata")))
    return errs + _collision_count_not_decremented(new, old)


# --- DaemonSet ------------------------------------------------------------------------------------

def _validate_rolling_update_daemon_set(rolling: Obj, path: Path) -> list[FieldError]:
    unavailable, surge = rolling.get("maxUnavailable"), rolling.get("maxSurge")
    errs = values.validate_positive_int_or_percent(unavailable, path.child("maxUnavailable"))
    errs += values.validate_positive_int_or_percent(surge, path.child("maxSurge"))
    errs += values.validate_not_more_than_100_percent(unavailable, path.child("maxUnavailable"))
    errs += values.validate_not_more_than_100_percent(surge, path.child("maxSurge"))
    has_unavailable = values.int_or_percent_value(unavailable) != 0
    has_surge = values.int_or_percent_value(surge) != 0
    if has_unavailable and has_surge:
        errs.append(FieldError.invalid(path.child("maxSurge"), surge,
                                       "may not be set when maxUnavailable is non-zero"))
    elif not has_unavailable and not has_surge:
        errs.append(FieldError.required(path.child("maxUnavailable"), "cannot be 0 when maxSurge is 0"))
    return errs


def _validate_daemon_set_update_strategy(strategy: Obj, path: Path) -> list[FieldError]:
    kind = strategy.get("type")
    if kind == "OnDelete":
        return []
    if kind == "RollingUpdate":
        rolling = strategy.get("rollingUpdate")
        if rolling is None:
            return [FieldError.required(path.child("rollingUpdate"))]
        return _validate_rolling_update_daemon_set(rolling, path.child("rollingUpdate"))
    return [FieldError.not_supported(path, dict(strategy), ("RollingUpdate", "OnDelete"))]


def _validate_daemon_set_spec(spec: Obj, path: Path) -> list[FieldError]:
    selector_value = spec.get("selector")
    errs = validate_label_selector(selector_value, path.child("selector"))
    template = spec.get("template")
    try:
        selector = Selector.from_label_selector(selector_value)
    except SelectorError:
        selector = None
    # A missing selector selects nothing, so no template can match it.
    if selector is not None:
        errs += validate_template_matches_selector(selector, template, path.child("template"))
    if selector_value is not None and not (obj(selector_value).get("matchLabels")
                                           or obj(selector_value).get("matchExpressions")):
        errs.append(FieldError.invalid(path.child("selector"), selector_value,
                                       "empty selector is invalid for daemonset"))
    errs += validate_pod_template_spec(obj(template), path.child("template"))
    errs += validate_template_keeps_running(template, path.child("template"), "DaemonSet")
    errs += nonnegative(spec.get("minReadySeconds"), path.child("minReadySeconds"))
    errs += _validate_daemon_set_update_strategy(obj(spec.get("updateStrategy")), path.child("updateStrategy"))
    return errs + nonnegative(spec.get("revisionHistoryLimit"), path.child("revisionHistoryLimit"))


def validate_daemon_set(daemon_set: Obj) -> list[FieldError]:
    errs = validate_object_meta(obj(daemon_set.get("metadata")), namespaced=True)
    return errs + _validate_daemon_set_spec(obj(daemon_set.get("spec")), SPEC)


def validate_daemon_set_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_object_meta_update(obj(new.get("metadata")), obj(old.get("metadata")))
    return errs + _validate_daemon_set_spec(obj(new.get("spec")), SPEC)


def validate_daemon_set_status_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_object_meta_update(obj(new.get("metadata")), obj(old.get("metadata")))
    status = obj(new.get("status"))
    for key in ("currentNumberScheduled", "numberMisscheduled", "desiredNumberScheduled", "numberReady",
                "observedGeneration", "updatedNumberScheduled", "numberAvailable", "numberUnavailable",
                "collisionCount"):
        errs += nonnegative(status.get(key), STATUS.child(key))
    return errs + _collision_count_not_decremented(new, old)


# --- ControllerRevision -----------------------------------------------------------------------------

def validate_controller_revision(revision: Obj) -> list[FieldError]:
    errs = validate_object_meta(obj(revision.get("metadata")), namespaced=True)
    if revision.get("data") is None:
        errs.append(FieldError.required(Path("data"), "data is mandatory"))
    return errs + nonnegative(revision.get("revision"), Path("revision"))


def validate_controller_revision_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_object_meta_update(obj(new.get("metadata")), obj(old.get("metadata")))
    errs += validate_controller_revision(new)
    if new.get("data") != old.get("data"):
        errs.append(FieldError.invalid(Path("data"), new.get("data"), "field is immutable"))
    return errs
