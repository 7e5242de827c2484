"""The batch/v1 kinds' rules: Kubernetes' defaulting and validation of Jobs and CronJobs.

As ``pkg/apis/batch/v1/defaults.go`` and ``pkg/apis/batch/validation`` of
Kubernetes 1.32, with the feature gates at their 1.32 defaults
(JobPodReplacementPolicy, JobBackoffLimitPerIndex, JobManagedBy,
JobSuccessPolicy and ElasticIndexedJob on). The selector a Job generates for
itself (its own uid) is made by the strategy in ``registry/batch/jobs.py``;
the checks that it was generated as expected are here.

CronJob schedules are parsed with ``croniter`` after the checks robfig/cron
(which Kubernetes uses) makes first, so that the common mistakes (a wrong
number of fields, an unknown ``@descriptor``) read exactly as Kubernetes
words them; other syntax errors carry croniter's explanation.

``default_*`` functions mutate what they are handed and are idempotent;
``validate_*`` functions return every problem found. Pure; no state.
"""

from __future__ import annotations

import itertools
import re
import zoneinfo
from collections.abc import Mapping
from typing import Any, Final

from croniter import croniter

from apiserver.validation import values
from apiserver.validation.defaults import default_pod_template
from apiserver.validation.field import ErrorType, FieldError, Path
from apiserver.validation.meta import (
    validate_label_selector,
    validate_object_meta,
    validate_object_meta_update,
    validate_qualified_name,
)
from apiserver.validation.pod import validate_pod_template_spec, validate_template_matches_selector
from apiserver.validation.values import items, nonnegative, obj, template_labels
from machinery.api import names
from machinery.api.labels import Selector, SelectorError

Obj = Mapping[str, Any]
Mut = dict[str, Any]

SPEC: Final = Path("spec")
STATUS: Final = Path("status")

# The labels a Job's Pods carry, in their current and legacy spellings.
CONTROLLER_UID_LABEL: Final = "batch.kubernetes.io/controller-uid"
JOB_NAME_LABEL: Final = "batch.kubernetes.io/job-name"
LEGACY_CONTROLLER_UID_LABEL: Final = "controller-uid"
LEGACY_JOB_NAME_LABEL: Final = "job-name"

_MAX_PARALLELISM_INDEXED: Final = 100_000
_MAX_FAILED_INDEXES: Final = 100_000
_COMPLETIONS_SOFT_LIMIT: Final = 100_000
_PARALLELISM_LIMIT_HIGH_COMPLETIONS: Final = 10_000
_MAX_MANAGED_BY_LENGTH: Final = 63
_MAX_POD_FAILURE_RULES: Final = 20
_MAX_EXIT_CODE_VALUES: Final = 255
_POD_FAILURE_ACTIONS: Final = ("Count", "FailIndex", "FailJob", "Ignore")
_EXIT_CODE_OPERATORS: Final = ("In", "NotIn")
_CONDITION_STATUSES: Final = ("False", "True", "Unknown")
_POD_REPLACEMENT_POLICIES: Final = ("Failed", "TerminatingOrFailed")
_CONCURRENCY_POLICIES: Final = ("Allow", "Forbid", "Replace")
_COMPLETION_MODES: Final = ("NonIndexed", "Indexed")
#: A CronJob's Jobs are named ``<cronjob>-<11 characters>``, and a Job name is a 63-character label.
_MAX_CRON_JOB_NAME: Final = 52
_TIME_ZONE_PART: Final = re.compile(r"^[A-Za-z.\-_0-9+]{1,14}$")
_CRON_DESCRIPTORS: Final = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")
_GO_DURATION: Final = re.compile(r"^([0-9]+(\.[0-9]*)?(ns|us|µs|ms|s|m|h))+$")


def _child(parent: Mut, key: str) -> Mut:
    value = parent.get(key)
    if not isinstance(value, dict):
        value = parent[key] = {}
    return value


# --- defaulting -------------------------------------------------------------------------------

def default_job(job: Mut) -> None:
    """``SetDefaults_Job``: one completion, backoffLimit 6, NonIndexed, not suspended, the job's labels."""
    spec = _child(job, "spec")
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
        spec["parallelism"] = 1
    if spec.get("parallelism") is None:
        spec["parallelism"] = 1
    if spec.get("backoffLimit") is None:
        # With a backoff limit per index, the global one is effectively off.
        spec["backoffLimit"] = values.MAX_INT32 if spec.get("backoffLimitPerIndex") is not None else 6
    labels = template_labels(spec.get("template"))
    meta = _child(job, "metadata")
    if labels and not meta.get("labels"):
        meta["labels"] = labels
    if spec.get("completionMode") is None:
        spec["completionMode"] = "NonIndexed"
    if spec.get("suspend") is None:
        spec["suspend"] = False
    if spec.get("manualSelector") is None:
        spec["manualSelector"] = False
    failure_policy = spec.get("podFailurePolicy")
    for rule in items(obj(failure_policy).get("rules")):
        for pattern in items(obj(rule).get("onPodConditions")):
            if isinstance(pattern, dict) and not pattern.get("status"):
                pattern["status"] = "True"
    if spec.get("podReplacementPolicy") is None:
        spec["podReplacementPolicy"] = "Failed" if failure_policy is not None else "TerminatingOrFailed"
    default_pod_template(spec.get("template"))


def default_cron_job(cron_job: Mut) -> None:
    """``SetDefaults_CronJob``: Allow, not suspended, keep 3 successful and 1 failed Job."""
    spec = _child(cron_job, "spec")
    if not spec.get("concurrencyPolicy"):
        spec["concurrencyPolicy"] = "Allow"
    if spec.get("suspend") is None:
        spec["suspend"] = False
    if spec.get("successfulJobsHistoryLimit") is None:
        spec["successfulJobsHistoryLimit"] = 3
    if spec.get("failedJobsHistoryLimit") is None:
        spec["failedJobsHistoryLimit"] = 1
    # A Job template is not a Job: only its Pod template is defaulted.
    job_spec = obj(obj(spec.get("jobTemplate")).get("spec"))
    template = job_spec.get("template")
    if isinstance(template, dict):
        default_pod_template(template)


def generate_selector(job: Mut) -> None:
    """What the Job strategy does on create unless ``manualSelector``: label the template, select its uid."""
    meta = obj(job.get("metadata"))
    spec = _child(job, "spec")
    if spec.get("manualSelector"):
        return
    template = _child(spec, "template")
    template_meta = _child(template, "metadata")
    labels = _child(template_meta, "labels")
    name, uid = str(meta.get("name") or ""), str(meta.get("uid") or "")
    # A label the user set is kept; validation then refuses it if it is wrong.
    for key in (LEGACY_JOB_NAME_LABEL, JOB_NAME_LABEL):
        labels.setdefault(key, name)
    for key in (LEGACY_CONTROLLER_UID_LABEL, CONTROLLER_UID_LABEL):
        labels.setdefault(key, uid)
    selector = _child(spec, "selector")
    _child(selector, "matchLabels").setdefault(CONTROLLER_UID_LABEL, uid)


# --- Job --------------------------------------------------------------------------------------

def _has_label(meta: Obj, path: Path, key: str, expected: str) -> list[FieldError]:
    """``ValidateHasLabel``."""
    labels = obj(meta.get("labels"))
    if key not in labels:
        return [FieldError.required(path.child("labels").key(key), expected)]
    if labels[key] != expected:
        return [FieldError.invalid(path.child("labels").key(key), dict(labels), f"must be '{expected}'")]
    return []


def _validate_generated_selector(job: Obj) -> list[FieldError]:
    meta, spec = obj(job.get("metadata")), obj(job.get("spec"))
    if spec.get("manualSelector") or spec.get("selector") is None:
        return []
    errs: list[FieldError] = []
    uid, name = str(meta.get("uid") or ""), str(meta.get("name") or "")
    if not uid:
        errs.append(FieldError.required(Path("metadata", "uid")))
    template_meta = obj(obj(spec.get("template")).get("metadata"))
    template_path = SPEC.child("template", "metadata")
    errs += _has_label(template_meta, template_path, LEGACY_CONTROLLER_UID_LABEL, uid)
    errs += _has_label(template_meta, template_path, LEGACY_JOB_NAME_LABEL, name)
    errs += _has_label(template_meta, template_path, CONTROLLER_UID_LABEL, uid)
    errs += _has_label(template_meta, template_path, JOB_NAME_LABEL, name)
    try:
        selector = Selector.from_label_selector(spec.get("selector"))
    except SelectorError:
        return errs
    if not selector.matches({CONTROLLER_UID_LABEL: uid, JOB_NAME_LABEL: name}):
        errs.append(FieldError.invalid(SPEC.child("selector"), spec.get("selector"), "`selector` not auto-generated"))
    return errs


def _too_many(path: Path, actual: int, limit: int) -> FieldError:
    return FieldError(ErrorType.TOO_MANY, str(path), actual, f"must have at most {limit} items")


def _validate_pod_failure_policy(spec: Obj, path: Path) -> list[FieldError]:
    rules = items(obj(spec.get("podFailurePolicy")).get("rules"))
    rules_path = path.child("rules")
    errs: list[FieldError] = []
    if len(rules) > _MAX_POD_FAILURE_RULES:
        errs.append(_too_many(rules_path, len(rules), _MAX_POD_FAILURE_RULES))
    template_spec = obj(obj(spec.get("template")).get("spec"))
    containers = {c.get("name") for key in ("containers", "initContainers")
                  for c in items(template_spec.get(key)) if isinstance(c, Mapping)}
    for i, rule in enumerate(rules):
        rule, rule_path = obj(rule), rules_path.index(i)
        action = rule.get("action") or ""
        if not action:
            errs.append(FieldError.required(rule_path.child("action"),
                                            "valid values: " + _go_list(_POD_FAILURE_ACTIONS)))
        elif action == "FailIndex":
            if spec.get("backoffLimitPerIndex") is None:
                errs.append(FieldError.invalid(rule_path.child("action"), action,
                                               "requires the backoffLimitPerIndex to be set"))
        elif action not in _POD_FAILURE_ACTIONS:
            errs.append(FieldError.not_supported(rule_path.child("action"), action, _POD_FAILURE_ACTIONS))
        exit_codes = rule.get("onExitCodes")
        conditions = items(rule.get("onPodConditions"))
        if exit_codes is not None:
            errs += _validate_on_exit_codes(obj(exit_codes), rule_path.child("onExitCodes"), containers)
        for j, pattern in enumerate(conditions):
            pattern, pattern_path = obj(pattern), rule_path.child("onPodConditions").index(j)
            status = pattern.get("status") or ""
            if not status:
                errs.append(FieldError.required(pattern_path.child("status"),
                                                "valid values: " + _go_list(_CONDITION_STATUSES)))
            elif status not in _CONDITION_STATUSES:
                errs.append(FieldError.not_supported(pattern_path.child("status"), status, _CONDITION_STATUSES))
            errs += validate_qualified_name(pattern.get("type") or "", pattern_path.child("type"))
        if exit_codes is not None and conditions:
            errs.append(FieldError.invalid(rule_path, "", "specifying both OnExitCodes and OnPodConditions is "
                                                          "not supported"))
        if exit_codes is None and not conditions:
            errs.append(FieldError.invalid(rule_path, "", "specifying one of OnExitCodes and OnPodConditions is "
                                                          "required"))
    return errs


def _validate_on_exit_codes(requirement: Obj, path: Path, containers: set[Any]) -> list[FieldError]:
    errs: list[FieldError] = []
    operator = requirement.get("operator") or ""
    if not operator:
        errs.append(FieldError.required(path.child("operator"), "valid values: " + _go_list(_EXIT_CODE_OPERATORS)))
    elif operator not in _EXIT_CODE_OPERATORS:
        errs.append(FieldError.not_supported(path.child("operator"), operator, _EXIT_CODE_OPERATORS))
    container = requirement.get("containerName")
    if container is not None and container not in containers:
        errs.append(FieldError.invalid(path.child("containerName"), container,
                                       "must be one of the container or initContainer names in the pod template"))
    codes = list(items(requirement.get("values")))
    values_path = path.child("values")
    if not codes:
        errs.append(FieldError.invalid(values_path, codes, "at least one value is required"))
    elif len(codes) > _MAX_EXIT_CODE_VALUES:
        errs.append(_too_many(values_path, len(codes), _MAX_EXIT_CODE_VALUES))
    seen: set[int] = set()
    for j, code in enumerate(codes):
        if operator == "In" and code == 0:
            errs.append(FieldError.invalid(values_path.index(j), code, "must not be 0 for the In operator"))
        if code in seen:
            errs.append(FieldError.duplicate(values_path.index(j), code))
        seen.add(code)
    if any(a > b for a, b in itertools.pairwise(codes)):
        errs.append(FieldError.invalid(values_path, codes, "must be ordered"))
    return errs


def _go_list(supported: tuple[str, ...]) -> str:
    """Go's ``%q`` of a string slice: ``["A" "B"]``."""
    return "[" + " ".join(names.go_quote(s) for s in supported) + "]"


def _validate_job_spec_body(spec: Obj, path: Path) -> list[FieldError]:
    """``validateJobSpec``: what a Job and a CronJob's Job template share."""
    errs: list[FieldError] = []
    for key in ("parallelism", "completions", "activeDeadlineSeconds", "backoffLimit", "ttlSecondsAfterFinished",
                "backoffLimitPerIndex"):
        errs += nonnegative(spec.get(key), path.child(key))
    completions, parallelism = spec.get("completions"), spec.get("parallelism")
    per_index, max_failed = spec.get("backoffLimitPerIndex"), spec.get("maxFailedIndexes")
    if max_failed is not None:
        errs += nonnegative(max_failed, path.child("maxFailedIndexes"))
        if per_index is None:
            errs.append(FieldError.required(path.child("backoffLimitPerIndex"), "when maxFailedIndexes is specified"))
    managed_by = spec.get("managedBy")
    if managed_by is not None:
        errs += values.validate_domain_prefixed_path(managed_by, path.child("managedBy"))
        if len(managed_by) > _MAX_MANAGED_BY_LENGTH:
            errs.append(FieldError(ErrorType.TOO_LONG, str(path.child("managedBy")), managed_by,
                                   f"may not be more than {_MAX_MANAGED_BY_LENGTH} bytes"))
    mode = spec.get("completionMode")
    if mode is not None:
        if mode not in _COMPLETION_MODES:
            errs.append(FieldError.not_supported(path.child("completionMode"), mode, _COMPLETION_MODES))
        if mode == "Indexed":
            if completions is None:
                errs.append(FieldError.required(path.child("completions"), "when completion mode is Indexed"))
            if parallelism is not None and parallelism > _MAX_PARALLELISM_INDEXED:
                errs.append(FieldError.invalid(path.child("parallelism"), parallelism,
                                               f"must be less than or equal to {_MAX_PARALLELISM_INDEXED} when "
                                               "completion mode is Indexed"))
            if completions is not None and max_failed is not None and max_failed > completions:
                errs.append(FieldError.invalid(path.child("maxFailedIndexes"), max_failed,
                                               "must be less than or equal to completions"))
            if max_failed is not None and max_failed > _MAX_FAILED_INDEXES:
                errs.append(FieldError.invalid(path.child("maxFailedIndexes"), max_failed,
                                               f"must be less than or equal to {_MAX_FAILED_INDEXES}"))
            if completions is not None and completions > _COMPLETIONS_SOFT_LIMIT and per_index is not None:
                errs.append(FieldError.invalid(path.child("backoffLimitPerIndex"), spec.get("backoffLimit"),
                                               f"must be nil when completions are above {_COMPLETIONS_SOFT_LIMIT}"))
            if (parallelism is not None and parallelism > _PARALLELISM_LIMIT_HIGH_COMPLETIONS
                    and completions is not None and completions > _COMPLETIONS_SOFT_LIMIT):
                errs.append(FieldError.invalid(
                    path.child("parallelism"), parallelism,
                    f"must be less than or equal to {_PARALLELISM_LIMIT_HIGH_COMPLETIONS} when completions are "
                    f"above {_COMPLETIONS_SOFT_LIMIT}"))
    if mode in (None, "NonIndexed"):
        if per_index is not None:
            errs.append(FieldError.invalid(path.child("backoffLimitPerIndex"), per_index,
                                           "requires indexed completion mode"))
        if max_failed is not None:
            errs.append(FieldError.invalid(path.child("maxFailedIndexes"), max_failed,
                                           "requires indexed completion mode"))
    failure_policy = spec.get("podFailurePolicy")
    if failure_policy is not None:
        errs += _validate_pod_failure_policy(spec, path.child("podFailurePolicy"))
    if spec.get("successPolicy") is not None and mode != "Indexed":
        errs.append(FieldError.invalid(path.child("successPolicy"), spec["successPolicy"],
                                       "requires indexed completion mode"))
    replacement = spec.get("podReplacementPolicy")
    if replacement is not None:
        allowed = ("Failed",) if failure_policy is not None else _POD_REPLACEMENT_POLICIES
        if replacement not in allowed:
            errs.append(FieldError.not_supported(path.child("podReplacementPolicy"), replacement, allowed))
    template = spec.get("template")
    errs += validate_pod_template_spec(obj(template), path.child("template"))
    restart = obj(obj(template).get("spec")).get("restartPolicy") or ""
    restart_path = path.child("template", "spec", "restartPolicy")
    if restart in ("Always", ""):
        errs.append(FieldError.required(restart_path, 'valid values: "OnFailure", "Never"'))
    elif restart not in ("OnFailure", "Never"):
        errs.append(FieldError.not_supported(restart_path, restart, ("OnFailure", "Never")))
    elif failure_policy is not None and restart != "Never":
        errs.append(FieldError.invalid(restart_path, restart, 'only "Never" is supported when podFailurePolicy '
                                                              "is specified"))
    return errs


def _validate_job_spec(spec: Obj, path: Path) -> list[FieldError]:
    """``ValidateJobSpec``: the body, a valid selector, and a template it matches."""
    errs = _validate_job_spec_body(spec, path)
    selector_value = spec.get("selector")
    if selector_value is None:
        errs.append(FieldError.required(path.child("selector")))
    else:
        errs += validate_label_selector(selector_value, path.child("selector"))
    try:
        selector = Selector.from_label_selector(selector_value)
    except SelectorError:
        return errs
    return errs + validate_template_matches_selector(selector, spec.get("template"), path.child("template"))


def validate_job(job: Obj) -> list[FieldError]:
    meta, spec = obj(job.get("metadata")), obj(job.get("spec"))
    errs = validate_object_meta(meta, namespaced=True)
    errs += _validate_generated_selector(job)
    errs += _validate_job_spec(spec, SPEC)
    completions = spec.get("completions")
    if spec.get("completionMode") == "Indexed" and isinstance(completions, int) and completions > 0:
        # Indexed Pods are named <job>-<index>: the last one must still be a DNS label.
        hostname = f"{meta.get('name') or ''}-{completions - 1}"
        if names.is_dns1123_label(hostname):
            errs.append(FieldError.invalid(Path("metadata", "name"), meta.get("name") or "",
                                           f"will not able to create pod with invalid DNS label: {hostname}"))
    return errs


def _mutable_scheduling_template(new: Obj, old: Obj) -> Obj:
    """The old template with what a suspended, never-started Job may change taken from the new one."""
    template, old_template = obj(new.get("template")), dict(obj(old.get("template")))
    old_spec = dict(obj(old_template.get("spec")))
    new_spec = obj(template.get("spec"))
    for key in ("nodeSelector", "tolerations", "schedulingGates"):
        if new_spec.get(key) is None:
            old_spec.pop(key, None)
        else:
            old_spec[key] = new_spec[key]
    new_affinity, old_affinity = new_spec.get("affinity"), old_spec.get("affinity")
    if new_affinity is None and old_affinity is not None:
        rest = {k: v for k, v in obj(old_affinity).items() if k != "nodeAffinity" and v is not None}
        if rest:
            old_spec["affinity"] = rest
        else:
            old_spec.pop("affinity", None)
    elif new_affinity is not None:
        merged = {k: v for k, v in obj(old_affinity).items() if k != "nodeAffinity"}
        if obj(new_affinity).get("nodeAffinity") is not None:
            merged["nodeAffinity"] = obj(new_affinity)["nodeAffinity"]
        old_spec["affinity"] = merged
    old_template["spec"] = old_spec
    old_meta = dict(obj(old_template.get("metadata")))
    new_meta = obj(template.get("metadata"))
    for key in ("labels", "annotations"):
        if new_meta.get(key) is None:
            old_meta.pop(key, None)
        else:
            old_meta[key] = new_meta[key]
    old_template["metadata"] = old_meta
    return old_template


def validate_job_update(new: Obj, old: Obj) -> list[FieldError]:
    """``ValidateJob`` and ``ValidateJobUpdate``, as the Job strategy runs both."""
    errs = validate_job(new)
    errs += validate_object_meta_update(obj(new.get("metadata")), obj(old.get("metadata")))
    spec, old_spec = obj(new.get("spec")), obj(old.get("spec"))
    errs += _validate_job_spec(spec, SPEC)
    completions, old_completions = spec.get("completions"), old_spec.get("completions")
    if spec.get("completionMode") == "Indexed":
        # An Indexed Job may scale, completions and parallelism together.
        if completions != old_completions and completions is not None and completions != spec.get("parallelism"):
            errs.append(FieldError.invalid(SPEC.child("completions"), completions,
                                           "can only be modified in tandem with spec.parallelism"))
    elif completions != old_completions:
        errs.append(FieldError.invalid(SPEC.child("completions"), completions, "field is immutable"))
    if spec.get("selector") != old_spec.get("selector"):
        errs.append(FieldError.invalid(SPEC.child("selector"), spec.get("selector"), "field is immutable"))
    suspended = bool(old_spec.get("suspend"))
    not_started = obj(old.get("status")).get("startTime") is None
    old_template = _mutable_scheduling_template(spec, old_spec) if suspended and not_started \
        else old_spec.get("template")
    if _drop_nulls(spec.get("template")) != _drop_nulls(old_template):
        errs.append(FieldError.invalid(SPEC.child("template"), spec.get("template"), "field is immutable"))
    for key in ("completionMode", "podFailurePolicy", "backoffLimitPerIndex", "managedBy", "successPolicy"):
        if spec.get(key) != old_spec.get(key):
            errs.append(FieldError.invalid(SPEC.child(key), spec.get(key), "field is immutable"))
    return errs


def _drop_nulls(value: Any) -> Any:
    """A value as Go's semantic equality compares it: a null field is the same as a missing one."""
    if isinstance(value, Mapping):
        return {k: _drop_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_nulls(v) for v in value]
    return value


def validate_job_status_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_object_meta_update(obj(new.get("metadata")), obj(old.get("metadata")))
    status = obj(new.get("status"))
    for key in ("active", "succeeded", "failed", "ready", "terminating"):
        errs += nonnegative(status.get(key), STATUS.child(key))
    return errs


# --- CronJob ----------------------------------------------------------------------------------

def _cron_error(schedule: str) -> str | None:
    """Why robfig/cron's ``ParseStandard`` refuses ``schedule``, or ``None`` when it parses."""
    spec = schedule.strip()
    if spec.startswith(("TZ=", "CRON_TZ=")):
        zone, _, spec = spec.partition(" ")
        try:
            zoneinfo.ZoneInfo(zone.partition("=")[2])
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            return f"provided bad location {zone.partition('=')[2]}: unknown time zone {zone.partition('=')[2]}"
        spec = spec.strip()
    if not spec:
        return "empty spec string"
    if spec.startswith("@"):
        if spec.startswith("@every "):
            duration = spec[len("@every "):].strip()
            if not _GO_DURATION.match(duration):
                return f'failed to parse duration {spec}: time: invalid duration "{duration}"'
            return None
        return None if spec in _CRON_DESCRIPTORS else f"unrecognized descriptor: {spec}"
    fields = spec.split()
    if len(fields) != 5:
        return f"expected exactly 5 fields, found {len(fields)}: [{' '.join(fields)}]"
    try:
        croniter(spec)
    except (ValueError, KeyError) as e:
        return str(e)
    # robfig/cron knows no day of week 7 (croniter takes it for Sunday).
    if re.search(r"(^|[,\-])7($|[,\-/])", fields[4]):
        return "end of range (7) above maximum (6): " + fields[4]
    return None


def _validate_schedule(schedule: str, allow_tz: bool, time_zone: str | None, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    problem = _cron_error(schedule)
    if problem is not None:
        errs.append(FieldError.invalid(path, schedule, problem))
    if allow_tz and "TZ" in schedule and time_zone is not None:
        errs.append(FieldError.invalid(path, schedule, "cannot use both timeZone field and TZ or CRON_TZ in schedule"))
    elif not allow_tz and "TZ" in schedule:
        errs.append(FieldError.invalid(path, schedule, "cannot use TZ or CRON_TZ in schedule, use timeZone field "
                                                       "instead"))
    return errs


def _validate_time_zone(time_zone: str | None, path: Path) -> list[FieldError]:
    if time_zone is None:
        return []
    if not time_zone:
        return [FieldError.invalid(path, time_zone, "timeZone must be nil or non-empty string")]
    for part in time_zone.split("/"):
        if part in (".", "..") or part.startswith("-") or not _TIME_ZONE_PART.match(part):
            return [FieldError.invalid(path, time_zone, f"unknown time zone {time_zone}")]
    errs: list[FieldError] = []
    if time_zone.lower() == "local":
        errs.append(FieldError.invalid(path, time_zone, "timeZone must be an explicit time zone as defined in "
                                                        "https://www.iana.org/time-zones"))
    try:
        zoneinfo.ZoneInfo(time_zone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        errs.append(FieldError.invalid(path, time_zone, f"unknown time zone {time_zone}"))
    return errs


def _validate_job_template(template: Obj, path: Path) -> list[FieldError]:
    """``ValidateJobTemplateSpec``: a Job spec whose selector the Job will generate."""
    spec = obj(template.get("spec"))
    errs = _validate_job_spec_body(spec, path.child("spec"))
    if spec.get("selector") is not None:
        errs.append(FieldError.invalid(path.child("spec", "selector"), spec["selector"],
                                       "`selector` will be auto-generated"))
    if spec.get("manualSelector"):
        errs.append(FieldError.not_supported(path.child("spec", "manualSelector"), True, ("nil", "false")))
    return errs


def _validate_cron_job_spec(spec: Obj, old_spec: Obj | None, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    schedule = spec.get("schedule") or ""
    if not schedule:
        errs.append(FieldError.required(path.child("schedule")))
    else:
        allow_tz = old_spec is not None and "TZ" in (old_spec.get("schedule") or "")
        errs += _validate_schedule(schedule, allow_tz, spec.get("timeZone"), path.child("schedule"))
    errs += nonnegative(spec.get("startingDeadlineSeconds"), path.child("startingDeadlineSeconds"))
    if old_spec is None or old_spec.get("timeZone") != spec.get("timeZone"):
        errs += _validate_time_zone(spec.get("timeZone"), path.child("timeZone"))
    errs += values.enum(spec.get("concurrencyPolicy"), path.child("concurrencyPolicy"), _CONCURRENCY_POLICIES)
    errs += _validate_job_template(obj(spec.get("jobTemplate")), path.child("jobTemplate"))
    for key in ("successfulJobsHistoryLimit", "failedJobsHistoryLimit"):
        errs += nonnegative(spec.get(key), path.child(key))
    return errs


def validate_cron_job(cron_job: Obj) -> list[FieldError]:
    meta = obj(cron_job.get("metadata"))
    errs = validate_object_meta(meta, namespaced=True)
    errs += _validate_cron_job_spec(obj(cron_job.get("spec")), None, SPEC)
    name = meta.get("name") or ""
    if len(name) > _MAX_CRON_JOB_NAME:
        errs.append(FieldError.invalid(Path("metadata", "name"), name,
                                       f"must be no more than {_MAX_CRON_JOB_NAME} characters"))
    return errs


def validate_cron_job_update(new: Obj, old: Obj) -> list[FieldError]:
    # No name length limit on update, so that older CronJobs with long names can still be changed.
    errs = validate_object_meta_update(obj(new.get("metadata")), obj(old.get("metadata")))
    return errs + _validate_cron_job_spec(obj(new.get("spec")), obj(old.get("spec")), SPEC)


def validate_cron_job_status_update(new: Obj, old: Obj) -> list[FieldError]:
    return validate_object_meta_update(obj(new.get("metadata")), obj(old.get("metadata")))
