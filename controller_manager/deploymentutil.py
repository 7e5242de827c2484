"""What the Deployment controller computes without talking to anyone (``pkg/controller/deployment/util``).

- **Fenceposts.** ``maxSurge`` and ``maxUnavailable`` as an absolute number
  or a percentage of ``spec.replicas``: surge rounds up, unavailable rounds
  down, and when both come to 0 unavailable becomes 1 (``ResolveFenceposts``).
- **Which ReplicaSet is new.** The ReplicaSet whose Pod template equals the
  Deployment's, ignoring the ``pod-template-hash`` label; the oldest one if
  several do. A new one is named ``<deployment>-<hash>``, the hash being an
  FNV-32a of the template (and ``status.collisionCount``) spelled in the
  alphabet of Kubernetes' ``SafeEncodeString``.
- **Annotations.** ``deployment.kubernetes.io/revision`` (and
  ``revision-history``), ``desired-replicas`` and ``max-replicas`` on
  ReplicaSets; the Deployment's own annotations copied onto its new ReplicaSet
  (``kubernetes.io/change-cause``, which ``kubectl rollout history`` prints).
- **Proportional scaling.** A scaled Deployment in the middle of a rollout
  spreads the difference over its active ReplicaSets in proportion to their
  size (``GetReplicaSetProportion``), the rest to the largest.
- **Conditions.** Available and Progressing (with ``progressDeadlineSeconds``)
  set as ``SetDeploymentCondition`` does: the transition time moves only
  when the status does.

Everything reads the official models the informers hold and writes wire-form
dicts; nothing here is mutated in place but the dicts it returns. Pure.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

import orjson
from kubernetes.client import V1Deployment, V1ReplicaSet

from machinery.api.meta import format_time, parse_time
from machinery.client.objects import meta_of, to_wire

POD_TEMPLATE_HASH: Final = "pod-template-hash"
REVISION: Final = "deployment.kubernetes.io/revision"
REVISION_HISTORY: Final = "deployment.kubernetes.io/revision-history"
DESIRED_REPLICAS: Final = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS: Final = "deployment.kubernetes.io/max-replicas"
LAST_APPLIED: Final = "kubectl.kubernetes.io/last-applied-configuration"
ROLLBACK_TO: Final = "deprecated.deployment.rollback.to"
#: Annotations of a Deployment that are not copied onto its ReplicaSets.
_NOT_COPIED: Final = frozenset({LAST_APPLIED, REVISION, REVISION_HISTORY, DESIRED_REPLICAS, MAX_REPLICAS,
                                ROLLBACK_TO})
#: How long ``revision-history`` may grow (``--deployment-controller``'s ``maxRevHistoryLengthInChars``).
MAX_REVISION_HISTORY_CHARS: Final = 2000

ROLLING_UPDATE: Final = "RollingUpdate"
RECREATE: Final = "Recreate"
AVAILABLE: Final = "Available"
PROGRESSING: Final = "Progressing"
REPLICA_FAILURE: Final = "ReplicaFailure"
# The reasons of the Progressing condition (pkg/controller/deployment/util).
NEW_RS_REASON: Final = "NewReplicaSetCreated"
FOUND_NEW_RS_REASON: Final = "FoundNewReplicaSet"
NEW_RS_AVAILABLE_REASON: Final = "NewReplicaSetAvailable"
RS_UPDATED_REASON: Final = "ReplicaSetUpdated"
TIMED_OUT_REASON: Final = "ProgressDeadlineExceeded"
PAUSED_REASON: Final = "DeploymentPaused"
RESUMED_REASON: Final = "DeploymentResumed"
FAILED_RS_CREATE_REASON: Final = "ReplicaSetCreateError"
MINIMUM_REPLICAS_AVAILABLE: Final = "MinimumReplicasAvailable"
MINIMUM_REPLICAS_UNAVAILABLE: Final = "MinimumReplicasUnavailable"

#: The API's defaults, applied here when a field is unset (the APIServer defaults them too).
DEFAULT_SURGE: Final = "25%"
DEFAULT_UNAVAILABLE: Final = "25%"
DEFAULT_PROGRESS_DEADLINE: Final = 600
DEFAULT_REVISION_HISTORY_LIMIT: Final = 10
_MAX_INT32: Final = 2**31 - 1
SAFE_ALPHABET: Final = "bcdfghjklmnpqrstvwxz2456789"


# --- the Deployment's fields, read with Kubernetes' defaults ---------------------------------------

def replicas(d: V1Deployment) -> int:
    value = d.spec.replicas if d.spec is not None else None
    return 1 if value is None else value


def strategy_type(d: V1Deployment) -> str:
    strategy = d.spec.strategy if d.spec is not None else None
    return (strategy.type if strategy is not None else None) or ROLLING_UPDATE


def is_rolling(d: V1Deployment) -> bool:
    return strategy_type(d) == ROLLING_UPDATE


def _rolling_params(d: V1Deployment) -> tuple[int | str, int | str]:
    strategy = d.spec.strategy if d.spec is not None else None
    rolling = strategy.rolling_update if strategy is not None else None
    surge = rolling.max_surge if rolling is not None else None
    unavailable = rolling.max_unavailable if rolling is not None else None
    return (DEFAULT_SURGE if surge is None else surge), (DEFAULT_UNAVAILABLE if unavailable is None else unavailable)


def progress_deadline(d: V1Deployment) -> int | None:
    """``progressDeadlineSeconds``, None when it is "never" (``math.MaxInt32``)."""
    value = d.spec.progress_deadline_seconds if d.spec is not None else None
    value = DEFAULT_PROGRESS_DEADLINE if value is None else value
    return None if value == _MAX_INT32 else value


def revision_history_limit(d: V1Deployment) -> int:
    value = d.spec.revision_history_limit if d.spec is not None else None
    return DEFAULT_REVISION_HISTORY_LIMIT if value is None else value


def min_ready_seconds(obj: V1Deployment | V1ReplicaSet) -> int:
    spec: Any = obj.spec
    return (spec.min_ready_seconds if spec is not None else None) or 0


def paused(d: V1Deployment) -> bool:
    return bool(d.spec is not None and d.spec.paused)


def scaled_value(value: int | str, total: int, *, round_up: bool) -> int:
    """``intstr.GetScaledValueFromIntOrPercent``: an absolute count, or a percentage of ``total``."""
    if isinstance(value, int):
        return value
    text = value.strip()
    if not text.endswith("%"):
        try:
            return int(text)
        except ValueError:
            raise ValueError("invalid value for IntOrString: invalid type: string is not a percentage") from None
    try:
        percent = int(text[:-1])
    except ValueError:
        raise ValueError(f"invalid value {value!r}: must be an integer or percentage") from None
    exact = percent * total / 100
    return math.ceil(exact) if round_up else math.floor(exact)


def resolve_fenceposts(surge: int | str, unavailable: int | str, desired: int) -> tuple[int, int]:
    """``ResolveFenceposts``: surge rounded up, unavailable down; never both 0."""
    max_surge = scaled_value(surge, desired, round_up=True)
    max_unavailable = scaled_value(unavailable, desired, round_up=False)
    if max_surge == 0 and max_unavailable == 0:
        max_unavailable = 1
    return max_surge, max_unavailable


def max_surge(d: V1Deployment) -> int:
    if not is_rolling(d):
        return 0
    surge, unavailable = _rolling_params(d)
    return resolve_fenceposts(surge, unavailable, replicas(d))[0]


def max_unavailable(d: V1Deployment) -> int:
    if not is_rolling(d) or replicas(d) == 0:
        return 0
    surge, unavailable = _rolling_params(d)
    _, value = resolve_fenceposts(surge, unavailable, replicas(d))
    return min(value, replicas(d))


# --- ReplicaSets -------------------------------------------------------------------------------

def rs_replicas(rs: V1ReplicaSet) -> int:
    value = rs.spec.replicas if rs.spec is not None else None
    return 1 if value is None else value


def rs_status(rs: V1ReplicaSet, field: str) -> int:
    status = rs.status
    return (getattr(status, field) if status is not None else None) or 0


def active(rss: Iterable[V1ReplicaSet | None]) -> list[V1ReplicaSet]:
    """``FilterActiveReplicaSets``: those that want Pods."""
    return [rs for rs in rss if rs is not None and rs_replicas(rs) > 0]


def spec_total(rss: Iterable[V1ReplicaSet | None]) -> int:
    """``GetReplicaCountForReplicaSets``: the sum of ``spec.replicas``."""
    return sum(rs_replicas(rs) for rs in rss if rs is not None)


def status_total(rss: Iterable[V1ReplicaSet | None], field: str = "replicas") -> int:
    return sum(rs_status(rs, field) for rs in rss if rs is not None)


def revision(obj: V1ReplicaSet | V1Deployment) -> int:
    text = (meta_of(obj).annotations or {}).get(REVISION, "")
    try:
        return int(text)
    except ValueError:
        return 0


def max_revision(rss: Iterable[V1ReplicaSet]) -> int:
    return max((revision(rs) for rs in rss), default=0)


def by_creation(rss: Iterable[V1ReplicaSet]) -> list[V1ReplicaSet]:
    """``ReplicaSetsByCreationTimestamp``: oldest first, then by name."""
    far = dt.datetime.max.replace(tzinfo=dt.UTC)
    return sorted(rss, key=lambda rs: (meta_of(rs).creation_timestamp or far, meta_of(rs).name or ""))


def by_size_newer(rss: Iterable[V1ReplicaSet]) -> list[V1ReplicaSet]:
    """``ReplicaSetsBySizeNewer``: largest first, the newer of two of a size first."""
    newest_first = list(reversed(by_creation(rss)))
    return sorted(newest_first, key=lambda rs: -rs_replicas(rs))


def by_size_older(rss: Iterable[V1ReplicaSet]) -> list[V1ReplicaSet]:
    """``ReplicaSetsBySizeOlder``: largest first, the older of two of a size first."""
    return sorted(by_creation(rss), key=lambda rs: -rs_replicas(rs))


def pruned(value: Any) -> Any:
    """The value without empty objects, empty lists and nulls, at any depth.

    Go compares the typed templates, where an empty ``resources: {}`` and no
    ``resources`` are the same zero value; in wire form they differ, and
    clients (``kubectl rollout undo``, ``kubectl set``) send either.
    """
    if isinstance(value, dict):
        inner = {k: pruned(v) for k, v in value.items()}
        return {k: v for k, v in inner.items() if v is not None and v != {} and v != []}
    if isinstance(value, list):
        return [pruned(v) for v in value]
    return value


def template_without_hash(template: Any) -> dict[str, Any]:
    """A Pod template in wire form without its ``pod-template-hash`` label, to compare templates."""
    wire: dict[str, Any] = pruned(to_wire(template) if template is not None else {})
    labels = (wire.get("metadata") or {}).get("labels")
    if labels and POD_TEMPLATE_HASH in labels:
        wire["metadata"] = {**wire["metadata"], "labels": {k: v for k, v in labels.items()
                                                           if k != POD_TEMPLATE_HASH}}
    if not (wire.get("metadata") or {}).get("labels"):
        wire.get("metadata", {}).pop("labels", None)
    if "metadata" in wire and not wire["metadata"]:
        del wire["metadata"]
    return wire


def equal_ignore_hash(a: Any, b: Any) -> bool:
    """``EqualIgnoreHash``: the two Pod templates are the same but for ``pod-template-hash``."""
    return template_without_hash(a) == template_without_hash(b)


def find_new(d: V1Deployment, rss: Sequence[V1ReplicaSet]) -> V1ReplicaSet | None:
    """``FindNewReplicaSet``: the oldest ReplicaSet whose template is the Deployment's."""
    template = d.spec.template if d.spec is not None else None
    want = template_without_hash(template)
    for rs in by_creation(rss):
        if template_without_hash(rs.spec.template if rs.spec is not None else None) == want:
            return rs
    return None


def find_old(d: V1Deployment, rss: Sequence[V1ReplicaSet], new: V1ReplicaSet | None) -> list[V1ReplicaSet]:
    new_uid = meta_of(new).uid if new is not None else None
    return [rs for rs in rss if meta_of(rs).uid != new_uid]


def fnv32a(data: bytes) -> int:
    value = 0x811C9DC5
    for byte in data:
        value ^= byte
        value = (value * 0x01000193) & 0xFFFFFFFF
    return value


def compute_hash(template: Any, collision_count: int | None) -> str:
    """``ComputeHash``: the ``pod-template-hash`` of a template, in ``SafeEncodeString``'s alphabet.

    Kubernetes hashes Go's printing of the struct; kubesim hashes the template's
    canonical JSON. The values differ from a real cluster's, their form does not.
    """
    data = orjson.dumps(pruned(to_wire(template) if template is not None else {}), option=orjson.OPT_SORT_KEYS)
    if collision_count is not None:
        data += collision_count.to_bytes(4, "little", signed=False)
    return "".join(SAFE_ALPHABET[ord(c) % len(SAFE_ALPHABET)] for c in str(fnv32a(data)))


def replicas_annotations(desired: int, max_replicas: int) -> dict[str, str]:
    return {DESIRED_REPLICAS: str(desired), MAX_REPLICAS: str(max_replicas)}


def replicas_annotations_need_update(rs: V1ReplicaSet, desired: int, max_replicas: int) -> bool:
    annotations = meta_of(rs).annotations or {}
    return (annotations.get(DESIRED_REPLICAS) != str(desired)
            or annotations.get(MAX_REPLICAS) != str(max_replicas))


def new_rs_annotations(d: V1Deployment, current: Mapping[str, str], new_revision: int, *, exists: bool,
                       ) -> dict[str, str] | None:
    """``SetNewReplicaSetAnnotations``: the new ReplicaSet's annotations, or None when unchanged."""
    result = dict(current)
    for key, value in (meta_of(d).annotations or {}).items():
        if key not in _NOT_COPIED:
            result[key] = value
    old_text = current.get(REVISION, "")
    try:
        old = int(old_text) if old_text else 0
    except ValueError:
        old = 0
    if old < new_revision:
        result[REVISION] = str(new_revision)
        if old_text:
            history = [h for h in (current.get(REVISION_HISTORY) or "").split(",") if h]
            history.append(old_text)
            text = ",".join(history)
            while len(text) > MAX_REVISION_HISTORY_CHARS and "," in text:
                text = text.split(",", 1)[1]
            result[REVISION_HISTORY] = text
    if not exists:
        result.update(replicas_annotations(replicas(d), replicas(d) + max_surge(d)))
    return None if result == dict(current) else result


def new_rs_replicas(d: V1Deployment, all_rss: Sequence[V1ReplicaSet], new: V1ReplicaSet | None) -> int:
    """``NewRSNewReplicas``: how big the new ReplicaSet may be now."""
    new_size = rs_replicas(new) if new is not None else 0
    if not is_rolling(d):
        return replicas(d)
    current = spec_total(all_rss)
    max_total = replicas(d) + max_surge(d)
    if current >= max_total:
        return new_size
    scale_up = min(max_total - current, replicas(d) - new_size)
    return new_size + scale_up


def is_saturated(d: V1Deployment, rs: V1ReplicaSet | None) -> bool:
    if rs is None:
        return False
    desired = (meta_of(rs).annotations or {}).get(DESIRED_REPLICAS)
    return (rs_replicas(rs) == replicas(d) and desired == str(replicas(d))
            and rs_status(rs, "available_replicas") == replicas(d))


def find_active_or_latest(new: V1ReplicaSet | None, old: Sequence[V1ReplicaSet]) -> V1ReplicaSet | None:
    """``FindActiveOrLatest``: the one active ReplicaSet, or the latest if none is; None if several are."""
    if new is None and not old:
        return None
    newest_old_first = list(reversed(by_creation(old)))
    actives = active([*newest_old_first, new])
    if not actives:
        return new if new is not None else newest_old_first[0]
    return actives[0] if len(actives) == 1 else None


def replica_set_proportion(rs: V1ReplicaSet, d: V1Deployment, status_replicas: int, to_add: int,
                           added: int) -> int:
    """``GetReplicaSetProportion``: this ReplicaSet's share of a scaling, bounded by what is left."""
    if rs_replicas(rs) == 0 or to_add == 0 or to_add == added:
        return 0
    fraction = _replica_set_fraction(rs, d, status_replicas)
    allowed = to_add - added
    return min(fraction, allowed) if to_add > 0 else max(fraction, allowed)


def _replica_set_fraction(rs: V1ReplicaSet, d: V1Deployment, status_replicas: int) -> int:
    if replicas(d) == 0:
        return -rs_replicas(rs)
    deployment_replicas = replicas(d) + max_surge(d)
    text = (meta_of(rs).annotations or {}).get(MAX_REPLICAS)
    try:
        annotated = int(text) if text is not None else status_replicas
    except ValueError:
        annotated = status_replicas
    if annotated == 0:
        return 0
    size = rs_replicas(rs) * deployment_replicas / annotated
    # integer.RoundToInt32 is math.Round: halves away from zero.
    rounded = math.floor(size + 0.5) if size >= 0 else -math.floor(-size + 0.5)
    return rounded - rs_replicas(rs)


# --- status and conditions ---------------------------------------------------------------------

Condition = dict[str, Any]


def conditions_of(d: V1Deployment) -> list[Condition]:
    status = d.status
    return [to_wire(c) for c in (status.conditions if status is not None else None) or ()]


def get_condition(conditions: Sequence[Condition], ctype: str) -> Condition | None:
    return next((c for c in conditions if c.get("type") == ctype), None)


def new_condition(ctype: str, status: str, reason: str, message: str, now: dt.datetime) -> Condition:
    stamp = format_time(now)
    return {"type": ctype, "status": status, "lastUpdateTime": stamp, "lastTransitionTime": stamp,
            "reason": reason, "message": message}


def set_condition(conditions: list[Condition], condition: Condition) -> None:
    """``SetDeploymentCondition``: same status and reason change nothing; same status keeps its transition."""
    current = get_condition(conditions, condition["type"])
    if current is not None and current.get("status") == condition["status"] \
            and current.get("reason") == condition["reason"]:
        return
    if current is not None and current.get("status") == condition["status"]:
        condition["lastTransitionTime"] = current.get("lastTransitionTime")
    conditions[:] = [c for c in conditions if c.get("type") != condition["type"]] + [condition]


def remove_condition(conditions: list[Condition], ctype: str) -> None:
    conditions[:] = [c for c in conditions if c.get("type") != ctype]


def calculate_status(d: V1Deployment, all_rss: Sequence[V1ReplicaSet], new: V1ReplicaSet | None,
                     now: dt.datetime) -> dict[str, Any]:
    """``calculateStatus``: the counts from the ReplicaSets, and the Available condition."""
    available = status_total(all_rss, "available_replicas")
    total = spec_total(all_rss)
    status: dict[str, Any] = {
        "observedGeneration": meta_of(d).generation,
        "replicas": status_total(all_rss),
        "updatedReplicas": status_total([new]),
        "readyReplicas": status_total(all_rss, "ready_replicas"),
        "availableReplicas": available,
        "unavailableReplicas": max(total - available, 0),
    }
    collisions = d.status.collision_count if d.status is not None else None
    if collisions is not None:
        status["collisionCount"] = collisions
    conditions = conditions_of(d)
    if available >= replicas(d) - max_unavailable(d):
        set_condition(conditions, new_condition(AVAILABLE, "True", MINIMUM_REPLICAS_AVAILABLE,
                                                "Deployment has minimum availability.", now))
    else:
        set_condition(conditions, new_condition(AVAILABLE, "False", MINIMUM_REPLICAS_UNAVAILABLE,
                                                "Deployment does not have minimum availability.", now))
    status["conditions"] = conditions
    return status


def current_status(d: V1Deployment) -> dict[str, Any]:
    """The Deployment's status in the form :func:`calculate_status` returns, to compare with."""
    status = d.status
    if status is None:
        return {}
    wire = to_wire(status)
    result: dict[str, Any] = {k: wire.get(k, 0) for k in ("replicas", "updatedReplicas", "readyReplicas",
                                                          "availableReplicas", "unavailableReplicas")}
    result["observedGeneration"] = wire.get("observedGeneration")
    if "collisionCount" in wire:
        result["collisionCount"] = wire["collisionCount"]
    result["conditions"] = wire.get("conditions") or []
    return result


def complete(d: V1Deployment, status: Mapping[str, Any]) -> bool:
    """``DeploymentComplete``: every replica updated and available, and this generation observed."""
    want = replicas(d)
    return (status.get("updatedReplicas") == want and status.get("replicas") == want
            and status.get("availableReplicas") == want
            and (status.get("observedGeneration") or 0) >= (meta_of(d).generation or 0))


def progressing(d: V1Deployment, new_status: Mapping[str, Any]) -> bool:
    """``DeploymentProgressing``: more updated, fewer old, more ready or more available replicas."""
    old = current_status(d)
    old_old = (old.get("replicas") or 0) - (old.get("updatedReplicas") or 0)
    new_old = (new_status.get("replicas") or 0) - (new_status.get("updatedReplicas") or 0)
    return ((new_status.get("updatedReplicas") or 0) > (old.get("updatedReplicas") or 0)
            or new_old < old_old
            or (new_status.get("readyReplicas") or 0) > (old.get("readyReplicas") or 0)
            or (new_status.get("availableReplicas") or 0) > (old.get("availableReplicas") or 0))


def timed_out(d: V1Deployment, conditions: Sequence[Condition], now: dt.datetime) -> bool:
    """``DeploymentTimedOut``: no progress for ``progressDeadlineSeconds`` since the condition last moved."""
    deadline = progress_deadline(d)
    condition = get_condition(conditions, PROGRESSING)
    if deadline is None or condition is None:
        return False
    if condition.get("reason") == NEW_RS_AVAILABLE_REASON:
        return False
    if condition.get("reason") == TIMED_OUT_REASON:
        return True
    since = parse_time(condition.get("lastUpdateTime"))
    return since is not None and since + dt.timedelta(seconds=deadline) < now
