"""apps/v1 and batch/v1 kinds: Kubernetes' defaulting, validation, immutable fields and generations.

Each case runs a kind's strategy the way the store does (prepare, default,
validate; or prepare for update, default, validate the update) and compares
the Status message kube-apiserver 1.32 gives for the same object.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from apiserver.registry.apps import controllerrevisions, daemonsets, deployments, replicasets, statefulsets
from apiserver.registry.batch import cronjobs, jobs
from apiserver.registry.resource import Resource
from apiserver.validation.field import invalid_message

Obj = dict[str, Any]


def template(labels: dict[str, str] | None = None, **spec: Any) -> Obj:
    return {"metadata": {"labels": labels if labels is not None else {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}], **spec}}


def created(resource: Resource, obj: Obj) -> tuple[Obj, str]:
    """The object as the store would write it, and the 422 message (empty when valid)."""
    strategy = resource.strategy
    assert strategy is not None
    obj = copy.deepcopy(obj)
    meta = obj.setdefault("metadata", {})
    meta.setdefault("namespace", "default")
    meta.update(uid="0d0b0c0e-1111-2222-3333-444455556666", creationTimestamp="2024-05-01T12:00:00Z")
    strategy.prepare_for_create(obj)
    strategy.default(obj)
    meta["generation"] = 1
    errs = strategy.validate(obj)
    return obj, invalid_message(resource.info.kind, meta["name"], errs) if errs else ""


def updated(resource: Resource, old: Obj, new: Obj) -> tuple[Obj, str]:
    strategy = resource.strategy
    assert strategy is not None
    new = copy.deepcopy(new)
    new.setdefault("metadata", {}).update({k: old["metadata"][k] for k in ("namespace", "uid", "creationTimestamp",
                                                                           "generation", "name")})
    strategy.prepare_for_update(new, old)
    strategy.default(new)
    errs = strategy.validate_update(new, old)
    return new, invalid_message(resource.info.kind, new["metadata"]["name"], errs) if errs else ""


DEPLOYMENT: Obj = {"metadata": {"name": "web"}, "spec": {"selector": {"matchLabels": {"app": "web"}},
                                                          "template": template()}}


# --- defaulting --------------------------------------------------------------------------------


def test_deployment_defaults() -> None:
    obj, problem = created(deployments.RESOURCE, DEPLOYMENT)
    assert problem == ""
    spec = obj["spec"]
    assert spec["replicas"] == 1
    assert spec["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}}
    assert (spec["revisionHistoryLimit"], spec["progressDeadlineSeconds"]) == (10, 600)
    pod = spec["template"]["spec"]
    assert (pod["restartPolicy"], pod["dnsPolicy"], pod["terminationGracePeriodSeconds"]) == ("Always",
                                                                                              "ClusterFirst", 30)


def test_a_recreate_deployment_gets_no_rolling_update() -> None:
    obj, problem = created(deployments.RESOURCE, {**DEPLOYMENT, "spec": {**DEPLOYMENT["spec"],
                                                                         "strategy": {"type": "Recreate"}}})
    assert problem == "" and obj["spec"]["strategy"] == {"type": "Recreate"}


def test_stateful_set_defaults() -> None:
    obj, problem = created(statefulsets.RESOURCE, {"metadata": {"name": "db"}, "spec": {
        "selector": {"matchLabels": {"app": "web"}}, "template": template(), "serviceName": "db",
        "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"]}}]}})
    assert problem == ""
    spec = obj["spec"]
    assert spec["podManagementPolicy"] == "OrderedReady"
    assert spec["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}
    assert spec["persistentVolumeClaimRetentionPolicy"] == {"whenDeleted": "Retain", "whenScaled": "Retain"}
    assert (spec["replicas"], spec["revisionHistoryLimit"]) == (1, 10)
    claim = spec["volumeClaimTemplates"][0]
    assert claim["spec"]["volumeMode"] == "Filesystem" and claim["status"] == {"phase": "Pending"}
    assert obj["status"] == {"replicas": 0, "availableReplicas": 0}


def test_daemon_set_defaults_and_template_generation() -> None:
    obj, problem = created(daemonsets.RESOURCE, {**DEPLOYMENT, "metadata": {"name": "agent"}})
    assert problem == ""
    assert obj["spec"]["updateStrategy"] == {"type": "RollingUpdate",
                                             "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}
    assert obj["metadata"]["annotations"] == {"deprecated.daemonset.template.generation": "1"}
    # A client cannot set the template generation; a template change bumps it.
    changed = copy.deepcopy(obj)
    changed["metadata"]["annotations"]["deprecated.daemonset.template.generation"] = "7"
    changed["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:1.26"
    new, problem = updated(daemonsets.RESOURCE, obj, changed)
    assert problem == ""
    assert new["metadata"]["annotations"]["deprecated.daemonset.template.generation"] == "2"
    assert new["metadata"]["generation"] == 2


def test_job_defaults_and_generated_selector() -> None:
    obj, problem = created(jobs.RESOURCE, {"metadata": {"name": "pi"}, "spec": {
        "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "pi", "image": "perl"}]}}}})
    assert problem == ""
    spec, uid = obj["spec"], obj["metadata"]["uid"]
    assert (spec["completions"], spec["parallelism"], spec["backoffLimit"]) == (1, 1, 6)
    assert (spec["completionMode"], spec["suspend"], spec["manualSelector"]) == ("NonIndexed", False, False)
    assert spec["podReplacementPolicy"] == "TerminatingOrFailed"
    assert spec["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    assert spec["template"]["metadata"]["labels"] == {
        "batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": "pi",
        "controller-uid": uid, "job-name": "pi"}
    # The Job's own labels come from its template's, as Kubernetes defaults them.
    assert obj["metadata"]["labels"] == spec["template"]["metadata"]["labels"]


def test_job_parallelism_alone_leaves_completions_unset() -> None:
    obj, problem = created(jobs.RESOURCE, {"metadata": {"name": "queue"}, "spec": {
        "parallelism": 3, "template": {"spec": {"restartPolicy": "OnFailure",
                                                "containers": [{"name": "w", "image": "busybox"}]}}}})
    assert problem == "" and "completions" not in obj["spec"] and obj["spec"]["parallelism"] == 3


def test_job_with_pod_failure_policy_replaces_failed_pods_only() -> None:
    obj, problem = created(jobs.RESOURCE, {"metadata": {"name": "pfp"}, "spec": {
        "podFailurePolicy": {"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]},
        "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "w", "image": "busybox"}]}}}})
    assert problem == ""
    assert obj["spec"]["podReplacementPolicy"] == "Failed"
    assert obj["spec"]["podFailurePolicy"]["rules"][0]["onPodConditions"] == [
        {"type": "DisruptionTarget", "status": "True"}]


def test_cron_job_defaults() -> None:
    obj, problem = created(cronjobs.RESOURCE, {"metadata": {"name": "nightly"}, "spec": {
        "schedule": "0 3 * * *", "jobTemplate": {"spec": {"template": {"spec": {
            "restartPolicy": "OnFailure", "containers": [{"name": "c", "image": "busybox"}]}}}}}})
    assert problem == ""
    spec = obj["spec"]
    assert (spec["concurrencyPolicy"], spec["suspend"]) == ("Allow", False)
    assert (spec["successfulJobsHistoryLimit"], spec["failedJobsHistoryLimit"]) == (3, 1)
    # A Job template is not a Job: no Job defaults, only the Pod template's.
    job_spec = spec["jobTemplate"]["spec"]
    assert "backoffLimit" not in job_spec and job_spec["template"]["spec"]["dnsPolicy"] == "ClusterFirst"


# --- validation --------------------------------------------------------------------------------

def spec_with(base: Obj, **changes: Any) -> Obj:
    out = copy.deepcopy(base)
    out["spec"].update(changes)
    return out


@pytest.mark.parametrize("resource, obj, message", [
    pytest.param(deployments.RESOURCE, spec_with(DEPLOYMENT, selector={"matchLabels": {"app": "db"}}),
                 'Deployment "web" is invalid: spec.template.metadata.labels: Invalid value: {"app":"web"}: '
                 "`selector` does not match template `labels`", id="deployment-selector-mismatch"),
    pytest.param(deployments.RESOURCE, spec_with(DEPLOYMENT, selector=None),
                 # A missing selector selects nothing, so the template does not match it either.
                 'Deployment "web" is invalid: [spec.selector: Required value, spec.template.metadata.labels: '
                 'Invalid value: {"app":"web"}: `selector` does not match template `labels`]',
                 id="deployment-no-selector"),
    pytest.param(deployments.RESOURCE, spec_with(DEPLOYMENT, selector={}),
                 'Deployment "web" is invalid: spec.selector: Invalid value: {}: empty selector is invalid for '
                 "deployment", id="deployment-empty-selector"),
    pytest.param(deployments.RESOURCE, spec_with(DEPLOYMENT, strategy={"type": "Recreate", "rollingUpdate": {}}),
                 'Deployment "web" is invalid: spec.strategy.rollingUpdate: Forbidden: may not be specified when '
                 "strategy `type` is 'Recreate'", id="recreate-with-rolling-update"),
    pytest.param(deployments.RESOURCE, spec_with(DEPLOYMENT, strategy={"type": "RollingUpdate", "rollingUpdate": {
        "maxUnavailable": 0, "maxSurge": 0}}),
                 'Deployment "web" is invalid: spec.strategy.rollingUpdate.maxUnavailable: Invalid value: 0: may not '
                 "be 0 when `maxSurge` is 0", id="rolling-update-both-zero"),
    pytest.param(deployments.RESOURCE, spec_with(DEPLOYMENT, strategy={"type": "RollingUpdate", "rollingUpdate": {
        "maxUnavailable": "150%"}}),
                 'Deployment "web" is invalid: spec.strategy.rollingUpdate.maxUnavailable: Invalid value: "150%": '
                 "must not be greater than 100%", id="max-unavailable-over-100"),
    pytest.param(deployments.RESOURCE, spec_with(DEPLOYMENT, strategy={"type": "RollingUpdate", "rollingUpdate": {
        "maxSurge": "lots"}}),
                 'Deployment "web" is invalid: spec.strategy.rollingUpdate.maxSurge: Invalid value: "lots": a valid '
                 "percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex "
                 "used for validation is '[0-9]+%')", id="max-surge-not-a-percent"),
    pytest.param(deployments.RESOURCE, spec_with(DEPLOYMENT, replicas=-1),
                 'Deployment "web" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0',
                 id="negative-replicas"),
    pytest.param(deployments.RESOURCE, spec_with(DEPLOYMENT, minReadySeconds=700),
                 'Deployment "web" is invalid: spec.progressDeadlineSeconds: Invalid value: 600: must be greater '
                 "than minReadySeconds", id="deadline-below-min-ready"),
    pytest.param(deployments.RESOURCE, spec_with(DEPLOYMENT, template=template(restartPolicy="Never")),
                 'Deployment "web" is invalid: spec.template.spec.restartPolicy: Unsupported value: "Never": '
                 'supported values: "Always"', id="deployment-restart-never"),
    pytest.param(replicasets.RESOURCE, spec_with(DEPLOYMENT, template=template(activeDeadlineSeconds=5)),
                 'ReplicaSet "web" is invalid: spec.template.spec.activeDeadlineSeconds: Forbidden: '
                 "activeDeadlineSeconds in ReplicaSet is not Supported", id="replicaset-deadline"),
    pytest.param(replicasets.RESOURCE, spec_with(DEPLOYMENT, template={"metadata": {"labels": {"app": "web"}},
                                                                       "spec": {}}),
                 'ReplicaSet "web" is invalid: spec.template.spec.containers: Required value',
                 id="replicaset-no-containers"),
    pytest.param(statefulsets.RESOURCE, {"metadata": {"name": "Db"}, "spec": {
        "selector": {"matchLabels": {"app": "web"}}, "template": template()}},
                 'StatefulSet "Db" is invalid: metadata.name: Invalid value: "Db": a lowercase RFC 1123 label must '
                 "consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric "
                 "character (e.g. 'my-name',  or '123-abc', regex used for validation is "
                 "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')", id="statefulset-name-is-a-label"),
    pytest.param(statefulsets.RESOURCE, {"metadata": {"name": "db"}, "spec": {
        "selector": {"matchLabels": {"app": "web"}}, "template": template(), "podManagementPolicy": "Random"}},
                 'StatefulSet "db" is invalid: spec.podManagementPolicy: Invalid value: "Random": must be '
                 "'OrderedReady' or 'Parallel'", id="statefulset-pod-management"),
    pytest.param(statefulsets.RESOURCE, {"metadata": {"name": "db"}, "spec": {
        "selector": {"matchLabels": {"app": "web"}}, "template": template(),
        "updateStrategy": {"type": "OnDelete", "rollingUpdate": {"partition": 1}}}},
                 'StatefulSet "db" is invalid: spec.updateStrategy.rollingUpdate: Invalid value: {"partition":1}: '
                 "only allowed for updateStrategy 'RollingUpdate'", id="statefulset-ondelete-rolling"),
    pytest.param(statefulsets.RESOURCE, {"metadata": {"name": "db"}, "spec": {
        "selector": {"matchLabels": {"app": "web"}}, "template": template(restartPolicy="Never",
                                                                          activeDeadlineSeconds=5)}},
                 'StatefulSet "db" is invalid: [spec.template.spec.restartPolicy: Unsupported value: "Never": '
                 'supported values: "Always", spec.template.spec.activeDeadlineSeconds: Forbidden: '
                 "activeDeadlineSeconds in StatefulSet is not Supported]", id="statefulset-keeps-pods-running"),
    pytest.param(statefulsets.RESOURCE, {"metadata": {"name": "db"}, "spec": {
        "selector": {"matchLabels": {"app": "db"}}, "template": template()}},
                 'StatefulSet "db" is invalid: spec.template.metadata.labels: Invalid value: {"app":"web"}: '
                 "`selector` does not match template `labels`", id="statefulset-selector-mismatch"),
    pytest.param(daemonsets.RESOURCE, {"metadata": {"name": "agent"}, "spec": {
        "selector": {"matchLabels": {"app": "db"}}, "template": template(activeDeadlineSeconds=3)}},
                 'DaemonSet "agent" is invalid: [spec.template.metadata.labels: Invalid value: {"app":"web"}: '
                 "`selector` does not match template `labels`, spec.template.spec.activeDeadlineSeconds: Forbidden: "
                 "activeDeadlineSeconds in DaemonSet is not Supported]", id="daemonset-selector-mismatch-deadline"),
    pytest.param(daemonsets.RESOURCE, {"metadata": {"name": "agent"}, "spec": {"template": template()}},
                 'DaemonSet "agent" is invalid: spec.template.metadata.labels: Invalid value: {"app":"web"}: '
                 "`selector` does not match template `labels`", id="daemonset-without-selector"),
    pytest.param(daemonsets.RESOURCE, {"metadata": {"name": "agent"}, "spec": {
        "selector": {"matchLabels": {"app": "web"}}, "template": template(),
        "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 1}}}},
                 'DaemonSet "agent" is invalid: spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: 1: may not '
                 "be set when maxUnavailable is non-zero", id="daemonset-surge-and-unavailable"),
    pytest.param(controllerrevisions.RESOURCE, {"metadata": {"name": "rev"}, "revision": 1},
                 'ControllerRevision "rev" is invalid: data: Required value: data is mandatory',
                 id="controllerrevision-no-data"),
    pytest.param(jobs.RESOURCE, {"metadata": {"name": "pi"}, "spec": {"template": template(labels={})}},
                 'Job "pi" is invalid: spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", '
                 '"Never"', id="job-restart-always"),
    pytest.param(jobs.RESOURCE, {"metadata": {"name": "pi"}, "spec": {
        "backoffLimit": -1, "template": template(labels={}, restartPolicy="Never")}},
                 'Job "pi" is invalid: spec.backoffLimit: Invalid value: -1: must be greater than or equal to 0',
                 id="job-negative-backoff"),
    pytest.param(jobs.RESOURCE, {"metadata": {"name": "pi"}, "spec": {
        "completionMode": "Indexed", "template": template(labels={}, restartPolicy="Never"), "parallelism": 2}},
                 'Job "pi" is invalid: spec.completions: Required value: when completion mode is Indexed',
                 id="indexed-job-without-completions"),
    pytest.param(jobs.RESOURCE, {"metadata": {"name": "pi"}, "spec": {
        "maxFailedIndexes": 1, "template": template(labels={}, restartPolicy="Never")}},
                 'Job "pi" is invalid: [spec.backoffLimitPerIndex: Required value: when maxFailedIndexes is '
                 "specified, spec.maxFailedIndexes: Invalid value: 1: requires indexed completion mode]",
                 id="max-failed-indexes-non-indexed"),
    pytest.param(jobs.RESOURCE, {"metadata": {"name": "pi"}, "spec": {
        "manualSelector": True, "selector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["db"]}]},
        "template": template(restartPolicy="Never")}},
                 'Job "pi" is invalid: spec.template.metadata.labels: Invalid value: {"app":"web"}: `selector` does '
                 "not match template `labels`", id="job-manual-selector-mismatch"),
    pytest.param(jobs.RESOURCE, {"metadata": {"name": "pi"}, "spec": {
        "template": template(labels={"controller-uid": "someone-else"}, restartPolicy="Never")}},
                 'Job "pi" is invalid: spec.template.metadata.labels[controller-uid]: Invalid value: '
                 '{"batch.kubernetes.io/controller-uid":"0d0b0c0e-1111-2222-3333-444455556666",'
                 '"batch.kubernetes.io/job-name":"pi","controller-uid":"someone-else","job-name":"pi"}: must be '
                 "'0d0b0c0e-1111-2222-3333-444455556666'", id="job-wrong-uid-label"),
    pytest.param(cronjobs.RESOURCE, {"metadata": {"name": "nightly"}, "spec": {
        "schedule": "0 3 * *", "jobTemplate": {"spec": {"template": template(restartPolicy="OnFailure")}}}},
                 'CronJob "nightly" is invalid: spec.schedule: Invalid value: "0 3 * *": expected exactly 5 fields, '
                 "found 4: [0 3 * *]", id="cronjob-four-fields"),
    pytest.param(cronjobs.RESOURCE, {"metadata": {"name": "nightly"}, "spec": {
        "schedule": "@sometimes", "jobTemplate": {"spec": {"template": template(restartPolicy="OnFailure")}}}},
                 'CronJob "nightly" is invalid: spec.schedule: Invalid value: "@sometimes": unrecognized descriptor: '
                 "@sometimes", id="cronjob-unknown-descriptor"),
    pytest.param(cronjobs.RESOURCE, {"metadata": {"name": "nightly"}, "spec": {
        "schedule": "TZ=UTC 0 3 * *", "jobTemplate": {"spec": {"template": template(restartPolicy="OnFailure")}}}},
                 'CronJob "nightly" is invalid: [spec.schedule: Invalid value: "TZ=UTC 0 3 * *": expected exactly 5 '
                 'fields, found 4: [0 3 * *], spec.schedule: Invalid value: "TZ=UTC 0 3 * *": cannot use TZ or '
                 "CRON_TZ in schedule, use timeZone field instead]", id="cronjob-tz-in-schedule"),
    pytest.param(cronjobs.RESOURCE, {"metadata": {"name": "nightly"}, "spec": {
        "schedule": "0 3 * * *", "timeZone": "Mars/Olympus_Mons",
        "jobTemplate": {"spec": {"template": template(restartPolicy="OnFailure")}}}},
                 'CronJob "nightly" is invalid: spec.timeZone: Invalid value: "Mars/Olympus_Mons": unknown time zone '
                 "Mars/Olympus_Mons", id="cronjob-unknown-zone"),
    pytest.param(cronjobs.RESOURCE, {"metadata": {"name": "nightly"}, "spec": {
        "schedule": "0 3 * * *", "concurrencyPolicy": "Sometimes",
        "jobTemplate": {"spec": {"selector": {"matchLabels": {"a": "b"}},
                                 "template": template(restartPolicy="OnFailure")}}}},
                 'CronJob "nightly" is invalid: [spec.concurrencyPolicy: Unsupported value: "Sometimes": supported '
                 'values: "Allow", "Forbid", "Replace", spec.jobTemplate.spec.selector: Invalid value: '
                 '{"matchLabels":{"a":"b"}}: `selector` will be auto-generated]', id="cronjob-policy-and-selector"),
    pytest.param(cronjobs.RESOURCE, {"metadata": {"name": "n" * 53}, "spec": {
        "schedule": "@hourly", "jobTemplate": {"spec": {"template": template(restartPolicy="OnFailure")}}}},
                 f'CronJob "{"n" * 53}" is invalid: metadata.name: Invalid value: "{"n" * 53}": must be no more than '
                 "52 characters", id="cronjob-name-too-long"),
])
def test_invalid_objects_are_refused_as_kubernetes_refuses_them(resource: Resource, obj: Obj, message: str) -> None:
    assert created(resource, obj)[1] == message


@pytest.mark.parametrize("schedule", ["*/5 * * * *", "0 0 1 1 *", "0 9-17 * * MON-FRI", "@daily", "@every 90m",
                                      "0 0 ? * SUN", "CRON_TZ=UTC 0 3 * * *"])
def test_valid_schedules(schedule: str) -> None:
    obj = {"metadata": {"name": "cj"}, "spec": {"schedule": schedule, "jobTemplate": {"spec": {
        "template": template(restartPolicy="OnFailure")}}}}
    old, _ = created(cronjobs.RESOURCE, {**obj, "spec": {**obj["spec"], "schedule": "TZ=UTC 0 0 * * *"}})
    # A schedule with TZ is only accepted from an object that had one already (an update).
    message = updated(cronjobs.RESOURCE, old, obj)[1] if "TZ" in schedule else created(cronjobs.RESOURCE, obj)[1]
    assert message == ""


# --- immutable fields and generations ------------------------------------------------------------

@pytest.mark.parametrize("resource, base, change, message", [
    pytest.param(deployments.RESOURCE, DEPLOYMENT,
                 {"selector": {"matchLabels": {"app": "web", "tier": "x"}},
                  "template": template(labels={"app": "web", "tier": "x"})},
                 'Deployment "web" is invalid: spec.selector: Invalid value: {"matchLabels":{"app":"web","tier":"x"}}: '
                 "field is immutable", id="deployment-selector"),
    pytest.param(replicasets.RESOURCE, DEPLOYMENT,
                 {"selector": {"matchLabels": {"app": "web", "tier": "x"}},
                  "template": template(labels={"app": "web", "tier": "x"})},
                 'ReplicaSet "web" is invalid: spec.selector: Invalid value: {"matchLabels":{"app":"web","tier":"x"}}: '
                 "field is immutable", id="replicaset-selector"),
    pytest.param(daemonsets.RESOURCE, DEPLOYMENT,
                 {"selector": {"matchLabels": {"app": "web", "tier": "x"}},
                  "template": template(labels={"app": "web", "tier": "x"})},
                 'DaemonSet "web" is invalid: spec.selector: Invalid value: {"matchLabels":{"app":"web","tier":"x"}}: '
                 "field is immutable", id="daemonset-selector"),
    pytest.param(statefulsets.RESOURCE, {"metadata": {"name": "db"}, "spec": {
        "selector": {"matchLabels": {"app": "web"}}, "template": template(), "serviceName": "db"}},
                 {"serviceName": "other"},
                 'StatefulSet "db" is invalid: spec: Forbidden: updates to statefulset spec for fields other than '
                 "'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and "
                 "'minReadySeconds' are forbidden", id="statefulset-service-name"),
    pytest.param(jobs.RESOURCE, {"metadata": {"name": "pi"}, "spec": {"template": template(restartPolicy="Never")}},
                 {"template": template(restartPolicy="OnFailure")},
                 "field is immutable", id="job-template"),
    pytest.param(jobs.RESOURCE, {"metadata": {"name": "pi"}, "spec": {"template": template(restartPolicy="Never")}},
                 {"completions": 3},
                 'Job "pi" is invalid: spec.completions: Invalid value: 3: field is immutable', id="job-completions"),
])
def test_immutable_fields(resource: Resource, base: Obj, change: dict[str, Any], message: str) -> None:
    old, problem = created(resource, base)
    assert problem == ""
    new = copy.deepcopy(old)
    for key, value in change.items():
        new["spec"][key] = copy.deepcopy(value)
    if resource is jobs.RESOURCE and "template" in change:
        # The generated labels are the Job's; a user keeps them when editing the template.
        new["spec"]["template"]["metadata"]["labels"] = old["spec"]["template"]["metadata"]["labels"]
    assert message in updated(resource, old, new)[1]


def test_stateful_set_template_and_replicas_may_change() -> None:
    old, _ = created(statefulsets.RESOURCE, {"metadata": {"name": "db"}, "spec": {
        "selector": {"matchLabels": {"app": "web"}}, "template": template(), "serviceName": "db"}})
    new = copy.deepcopy(old)
    new["spec"]["replicas"] = 3
    new["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:1.26"
    result, problem = updated(statefulsets.RESOURCE, old, new)
    assert problem == "" and result["metadata"]["generation"] == 2


def test_suspended_job_that_never_started_may_change_its_scheduling_directives() -> None:
    old, _ = created(jobs.RESOURCE, {"metadata": {"name": "pi"}, "spec": {
        "suspend": True, "template": template(restartPolicy="Never")}})
    new = copy.deepcopy(old)
    new["spec"]["template"]["spec"]["nodeSelector"] = {"disk": "ssd"}
    assert updated(jobs.RESOURCE, old, new)[1] == ""
    started = copy.deepcopy(old)
    started["status"] = {"startTime": "2024-05-01T12:00:00Z"}
    assert "spec.template: Invalid value" in updated(jobs.RESOURCE, started, new)[1]


@pytest.mark.parametrize("change, generation", [
    pytest.param({"spec": {"replicas": 3}}, 2, id="spec-change"),
    pytest.param({"metadata": {"annotations": {"note": "x"}}}, 2, id="annotation-change"),
    pytest.param({"metadata": {"labels": {"team": "a"}}}, 1, id="label-change"),
    pytest.param({"spec": {"strategy": None}}, 1, id="a-defaulted-field-omitted"),
])
def test_deployment_generation(change: dict[str, Any], generation: int) -> None:
    old, _ = created(deployments.RESOURCE, DEPLOYMENT)
    new = copy.deepcopy(old)
    for key, value in change.items():
        new[key].update(value)
    if new["spec"].get("strategy") is None:
        del new["spec"]["strategy"]
    assert updated(deployments.RESOURCE, old, new)[0]["metadata"]["generation"] == generation


@pytest.mark.parametrize("resource, status, message", [
    pytest.param(deployments.RESOURCE, {"replicas": 1, "readyReplicas": 2},
                 "status.readyReplicas: Invalid value: 2: cannot be greater than status.replicas", id="deployment"),
    pytest.param(replicasets.RESOURCE, {"replicas": 2, "readyReplicas": 1, "availableReplicas": 2},
                 "status.availableReplicas: Invalid value: 2: cannot be greater than readyReplicas", id="replicaset"),
    pytest.param(jobs.RESOURCE, {"succeeded": -1},
                 "status.succeeded: Invalid value: -1: must be greater than or equal to 0", id="job"),
])
def test_status_validation(resource: Resource, status: Obj, message: str) -> None:
    base = {"metadata": {"name": "web"}, "spec": {"template": template(restartPolicy="Never")}} \
        if resource is jobs.RESOURCE else DEPLOYMENT
    old, _ = created(resource, base)
    sub = resource.subresources["status"]
    strategy = sub.strategy  # type: ignore[attr-defined]
    new = copy.deepcopy(old)
    new["status"] = status
    strategy.prepare_for_update(new, old)
    assert message in invalid_message(resource.info.kind, "web", strategy.validate_update(new, old))


def test_job_field_selector_status_successful() -> None:
    job, _ = created(jobs.RESOURCE, {"metadata": {"name": "pi"}, "spec": {"template": template(restartPolicy="Never")}})
    strategy = jobs.RESOURCE.strategy
    assert strategy is not None and strategy.supports_field("status.successful")
    assert strategy.fields(job)["status.successful"] == "0"
    job["status"] = {"succeeded": 1}
    assert strategy.fields(job)["status.successful"] == "1"
