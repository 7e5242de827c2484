"""What the Job controller decides without talking to anyone (``pkg/controller/job`` helpers).

- **Indexes.** ``status.completedIndexes`` and ``failedIndexes`` are sorted
  intervals written ``"1,3-5,7"``; a Pod's index is its
  ``batch.kubernetes.io/job-completion-index`` annotation.
- **Pod failure policy.** The first rule whose ``onExitCodes`` (a container,
  or any, whose terminated exit code is In / NotIn the values; 0 never
  matches) or ``onPodConditions`` (a condition of that type and status)
  matches a failed Pod decides: FailJob, FailIndex, Ignore or Count; no match
  counts the failure. The FailJob message is Kubernetes':
  "Container main for pod ns/p failed with exit code 42 matching FailJob rule at index 0".
- **Back-off.** A replacement Pod waits 10 s doubling per failure, at most
  10 minutes (``DefaultJobPodFailureBackOff``, ``MaxJobPodFailureBackOff``).

Pure functions.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from typing import Any, Final

from kubernetes.client import V1Job, V1Pod

from machinery.client.objects import meta_of

COMPLETION_INDEX: Final = "batch.kubernetes.io/job-completion-index"
INDEX_FAILURE_COUNT: Final = "batch.kubernetes.io/job-index-failure-count"
INDEX_IGNORED_FAILURE_COUNT: Final = "batch.kubernetes.io/job-index-ignored-failure-count"
TRACKING_FINALIZER: Final = "batch.kubernetes.io/job-tracking"
CONTROLLER_UID_LABEL: Final = "batch.kubernetes.io/controller-uid"
JOB_NAME_LABEL: Final = "batch.kubernetes.io/job-name"
LEGACY_CONTROLLER_UID_LABEL: Final = "controller-uid"
LEGACY_JOB_NAME_LABEL: Final = "job-name"
INDEX_ENV: Final = "JOB_COMPLETION_INDEX"
BACKOFF_INITIAL: Final = 10.0
BACKOFF_MAX: Final = 600.0
DEFAULT_BACKOFF_LIMIT: Final = 6
_MAX_INT32: Final = 2**31 - 1


def parallelism(job: V1Job) -> int:
    value = job.spec.parallelism if job.spec is not None else None
    return 1 if value is None else value


def completions(job: V1Job) -> int | None:
    return job.spec.completions if job.spec is not None else None


def indexed(job: V1Job) -> bool:
    return job.spec is not None and job.spec.completion_mode == "Indexed"


def backoff_limit(job: V1Job) -> int:
    spec = job.spec
    if spec is not None and spec.backoff_limit is not None:
        return spec.backoff_limit
    # With a limit per index the overall limit defaults to "none" (math.MaxInt32).
    return _MAX_INT32 if spec is not None and spec.backoff_limit_per_index is not None else DEFAULT_BACKOFF_LIMIT


def suspended(job: V1Job) -> bool:
    return bool(job.spec is not None and job.spec.suspend)


def replace_only_failed(job: V1Job) -> bool:
    """``podReplacementPolicy: Failed`` (the default when a pod failure policy is set)."""
    spec = job.spec
    policy = spec.pod_replacement_policy if spec is not None else None
    if policy is None:
        return spec is not None and spec.pod_failure_policy is not None
    return policy == "Failed"


def pod_index(pod: V1Pod) -> int | None:
    text = (meta_of(pod).annotations or {}).get(COMPLETION_INDEX)
    if text is None:
        text = (meta_of(pod).labels or {}).get(COMPLETION_INDEX)
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def format_intervals(indexes: Iterable[int]) -> str:
    """``"1,3-5,7"``: the sorted indexes, runs of consecutive ones as ranges."""
    parts: list[str] = []
    ordered = sorted(set(indexes))
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        parts.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(parts)


def parse_intervals(text: str | None, limit: int | None = None) -> set[int]:
    """The inverse of :func:`format_intervals`; indexes at or beyond ``limit`` and bad parts are dropped."""
    result: set[int] = set()
    for part in (text or "").split(","):
        part = part.strip()
        if not part:
            continue
        low, _, high = part.partition("-")
        try:
            first, last = int(low), int(high or low)
        except ValueError:
            continue
        result.update(range(first, last + 1))
    return {i for i in result if limit is None or i < limit}


def is_pod_failed(pod: V1Pod, job: V1Job) -> bool:
    """``isPodFailed``: Failed, or (unless only failed Pods are replaced) deleted before it succeeded."""
    phase = pod.status.phase if pod.status is not None else None
    if phase == "Failed":
        return True
    if replace_only_failed(job):
        return False
    return meta_of(pod).deletion_timestamp is not None and phase != "Succeeded"


def is_finished(pod: V1Pod, job: V1Job) -> bool:
    return (pod.status is not None and pod.status.phase == "Succeeded") or is_pod_failed(pod, job)


def finish_time(pod: V1Pod) -> dt.datetime | None:
    """When a finished Pod's last container terminated (else its deletion or creation time)."""
    latest: dt.datetime | None = None
    for status in (pod.status.container_statuses if pod.status is not None else None) or ():
        terminated = status.state.terminated if status.state is not None else None
        if terminated is not None and terminated.finished_at is not None:
            latest = terminated.finished_at if latest is None else max(latest, terminated.finished_at)
    return latest or meta_of(pod).deletion_timestamp or meta_of(pod).creation_timestamp


def backoff_delay(failures: int) -> float:
    if failures <= 0:
        return 0.0
    return float(min(BACKOFF_INITIAL * 2 ** (failures - 1), BACKOFF_MAX))


def match_pod_failure_policy(job: V1Job, pod: V1Pod) -> tuple[str | None, str]:
    """The action of the first matching rule (None when none matches) and, for FailJob, the message."""
    spec = job.spec
    policy = spec.pod_failure_policy if spec is not None else None
    if policy is None:
        return None, ""
    meta = meta_of(pod)
    for index, rule in enumerate(policy.rules or ()):
        matched = _match_exit_codes(rule.on_exit_codes, pod) if rule.on_exit_codes is not None else None
        if matched is not None:
            container, code = matched
            return rule.action, (f"Container {container} for pod {meta.namespace}/{meta.name} failed with exit "
                                 f"code {code} matching {rule.action} rule at index {index}")
        if rule.on_pod_conditions and _match_conditions(rule.on_pod_conditions, pod):
            return rule.action, (f"Pod {meta.namespace}/{meta.name} has condition "
                                 f"{rule.on_pod_conditions[0].type} matching {rule.action} rule at index {index}")
    return None, ""


def _match_exit_codes(requirement: Any, pod: V1Pod) -> tuple[str, int] | None:
    statuses = list((pod.status.init_container_statuses if pod.status is not None else None) or ()) + \
        list((pod.status.container_statuses if pod.status is not None else None) or ())
    for status in statuses:
        if requirement.container_name and status.name != requirement.container_name:
            continue
        terminated = status.state.terminated if status.state is not None else None
        if terminated is None or terminated.exit_code == 0:
            continue
        inside = terminated.exit_code in (requirement.values or ())
        if (requirement.operator == "In") == inside:
            return status.name, terminated.exit_code
    return None


def _match_conditions(patterns: Iterable[Any], pod: V1Pod) -> bool:
    conditions = (pod.status.conditions if pod.status is not None else None) or ()
    for pattern in patterns:
        for condition in conditions:
            if condition.type == pattern.type and condition.status == (pattern.status or "True"):
                return True
    return False
