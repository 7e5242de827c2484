"""Pod templates and ephemeral containers are judged with Kubernetes' paths and words.

``validate_pod_template_spec`` is what every workload kind calls for its
``spec.template``; ephemeral containers are what ``kubectl debug`` adds
through ``pods/ephemeralcontainers``.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from apiserver.validation import (
    Path,
    default_pod,
    validate_pod,
    validate_pod_ephemeral_containers_update,
    validate_pod_template_spec,
)
from apiserver.validation.defaults import default_pod_template
from apiserver.validation.pod import validate_template_keeps_running, validate_template_matches_selector
from machinery.api.labels import Selector

TEMPLATE_PATH = Path("spec", "template")
LABEL_VALUE = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
               "and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or "
               "'12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")
STORED = {"uid": "u1", "resourceVersion": "3", "creationTimestamp": "2024-05-01T10:00:00Z"}


def errors_of(errs: list[Any]) -> list[str]:
    return [str(e) for e in errs]


def template(**spec: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {"metadata": {"labels": {"app": "web"}},
                           "spec": {"containers": [{"name": "app", "image": "nginx:1.25"}], **spec}}
    default_pod_template(obj)
    return obj


def debug_container(**fields: Any) -> dict[str, Any]:
    """An ephemeral container as ``kubectl debug`` sends it, after the APIServer's defaulting."""
    base: dict[str, Any] = {"name": "debugger-abc12", "image": "busybox", "imagePullPolicy": "Always",
                            "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
                            "stdin": True, "tty": True}
    base.update(fields)
    return {k: v for k, v in base.items() if v is not None}


def test_a_defaulted_template_is_valid() -> None:
    assert validate_pod_template_spec(template(), TEMPLATE_PATH) == []


TEMPLATE_CASES = [
    pytest.param({"metadata": {"labels": {"app": "not valid!"}}},
                 [f'spec.template.labels: Invalid value: "not valid!": {LABEL_VALUE}'], id="labels-under-template"),
    pytest.param({"spec": {"containers": []}}, ["spec.template.spec.containers: Required value"], id="no-containers"),
    pytest.param({"spec": {"restartPolicy": "Sometimes"}},
                 [('spec.template.spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", '
                  '"OnFailure", "Never"')], id="restart-policy"),
    pytest.param({"spec": {"ephemeralContainers": [debug_container()]}},
                 [("spec.template.spec.ephemeralContainers: Forbidden: ephemeral containers not allowed in pod "
                  "template")], id="ephemeral-containers"),
    pytest.param({"metadata": {"annotations": {"controller.kubernetes.io/pod-deletion-cost": "010"}}},
                 [('spec.template.annotations[controller.kubernetes.io/pod-deletion-cost]: Invalid value: "010": '
                  "must be a 32bit integer")], id="pod-annotations"),
]


@pytest.mark.parametrize(("change", "expected"), TEMPLATE_CASES)
def test_validate_pod_template_spec(change: dict[str, dict[str, Any]], expected: list[str]) -> None:
    obj = template()
    for section, fields in change.items():
        obj[section].update(fields)
    assert errors_of(validate_pod_template_spec(obj, TEMPLATE_PATH)) == expected


@pytest.mark.parametrize(("selector", "expected"), [
    pytest.param(Selector.from_label_selector({"matchLabels": {"app": "web"}}), [], id="matches"),
    pytest.param(Selector.from_label_selector({"matchExpressions": [
        {"key": "app", "operator": "NotIn", "values": ["web"]}]}),
                 [('spec.template.metadata.labels: Invalid value: {"app":"web"}: `selector` does not match template '
                  "`labels`")], id="expression-excludes-it"),
    pytest.param(Selector.everything(), [], id="empty-selects-all"),
    pytest.param(Selector.nothing(), [('spec.template.metadata.labels: Invalid value: {"app":"web"}: `selector` does '
                                      "not match template `labels`")], id="nil-selects-none"),
])
def test_a_controllers_selector_must_match_its_template(selector: Selector, expected: list[str]) -> None:
    assert errors_of(validate_template_matches_selector(selector, template(), TEMPLATE_PATH)) == expected


def test_a_template_without_labels_is_reported_as_null() -> None:
    selector = Selector.from_label_selector({"matchLabels": {"app": "web"}})
    assert errors_of(validate_template_matches_selector(selector, {"spec": {}}, TEMPLATE_PATH)) == [
        "spec.template.metadata.labels: Invalid value: null: `selector` does not match template `labels`"]


@pytest.mark.parametrize(("spec", "expected"), [
    pytest.param({}, [], id="always-no-deadline"),
    pytest.param({"restartPolicy": "OnFailure"},
                 ['spec.template.spec.restartPolicy: Unsupported value: "OnFailure": supported values: "Always"'],
                 id="on-failure"),
    pytest.param({"activeDeadlineSeconds": 60},
                 [("spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in DaemonSet is not "
                  "Supported")], id="deadline"),
])
def test_a_long_running_controllers_template(spec: dict[str, Any], expected: list[str]) -> None:
    assert errors_of(validate_template_keeps_running(template(**spec), TEMPLATE_PATH, "DaemonSet")) == expected


def test_a_template_with_no_spec_has_no_restart_policy() -> None:
    assert errors_of(validate_template_keeps_running(None, TEMPLATE_PATH, "ReplicaSet")) == [
        'spec.template.spec.restartPolicy: Unsupported value: "": supported values: "Always"']


def test_a_template_may_leave_host_ports_to_the_pod() -> None:
    # A Pod on the host network gets hostPort = containerPort from its own defaulting, which
    # templates do not run; a Pod sent without it is refused.
    obj = template(hostNetwork=True)
    obj["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "protocol": "TCP"}]
    assert validate_pod_template_spec(obj, TEMPLATE_PATH) == []


# --- ephemeral containers ------------------------------------------------------------------------

def running_pod(ephemeral: list[dict[str, Any]] | None = None, **annotations: str) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod",
                           "metadata": {"name": "web", "namespace": "default", **STORED},
                           "spec": {"containers": [{"name": "app", "image": "nginx:1.25"}], "nodeName": "node-1"}}
    if annotations:
        obj["metadata"]["annotations"] = dict(annotations)
    default_pod(obj)
    if ephemeral is not None:
        obj["spec"]["ephemeralContainers"] = ephemeral
    return obj


def with_debugger(old: dict[str, Any], *containers: dict[str, Any]) -> dict[str, Any]:
    new = copy.deepcopy(old)
    new["spec"].setdefault("ephemeralContainers", []).extend(copy.deepcopy(list(containers)))
    return new


E0 = "spec.ephemeralContainers[0]"
FORBIDDEN = "Forbidden: cannot be set for an Ephemeral Container"

EPHEMERAL_CASES = [
    pytest.param({}, [], id="kubectl-debug"),
    pytest.param({"targetContainerName": "app"}, [], id="target-a-container"),
    pytest.param({"ports": [{"containerPort": 80, "protocol": "TCP"}]}, [f"{E0}.ports: {FORBIDDEN}"], id="ports"),
    pytest.param({"resources": {"limits": {"cpu": "1"}}}, [f"{E0}.resources: {FORBIDDEN}"], id="resources"),
    pytest.param({"resources": {}}, [], id="empty-resources-are-unset"),
    pytest.param({"readinessProbe": {"exec": {"command": ["true"]}, "timeoutSeconds": 1, "periodSeconds": 10,
                                     "successThreshold": 1, "failureThreshold": 3}},
                 [f"{E0}.readinessProbe: {FORBIDDEN}"], id="probes"),
    pytest.param({"lifecycle": {"preStop": {"exec": {"command": ["true"]}}}}, [f"{E0}.lifecycle: {FORBIDDEN}"],
                 id="lifecycle"),
    pytest.param({"name": "app"}, [f'{E0}.name: Duplicate value: "app"'], id="name-of-a-container"),
    pytest.param({"targetContainerName": "nope"}, [f'{E0}.targetContainerName: Not found: "nope"'],
                 id="unknown-target"),
    pytest.param({"image": None}, [f"{E0}.image: Required value"], id="no-image"),
    pytest.param({"image": " busybox"},
                 [f'{E0}.image: Invalid value: " busybox": must not have leading or trailing whitespace'],
                 id="image-whitespace"),
    pytest.param({"volumeMounts": [{"name": "missing", "mountPath": "/x"}]},
                 [f'{E0}.volumeMounts[0].name: Not found: "missing"'], id="unknown-volume"),
]


@pytest.mark.parametrize(("fields", "expected"), EPHEMERAL_CASES)
def test_adding_an_ephemeral_container(fields: dict[str, Any], expected: list[str]) -> None:
    old = running_pod()
    assert errors_of(validate_pod_ephemeral_containers_update(with_debugger(old, debug_container(**fields)),
                                                              old)) == expected


def test_ephemeral_containers_may_not_use_sub_paths() -> None:
    old = running_pod()
    old["spec"]["volumes"] = [{"name": "data", "emptyDir": {}}]
    debugger = debug_container(volumeMounts=[{"name": "data", "mountPath": "/data", "subPath": "x"}])
    assert errors_of(validate_pod_ephemeral_containers_update(with_debugger(old, debugger), old)) == [
        f"{E0}.volumeMounts[0].subPath: {FORBIDDEN}"]


def test_existing_ephemeral_containers_may_be_neither_removed_nor_changed() -> None:
    old = running_pod([debug_container()])
    removed = copy.deepcopy(old)
    removed["spec"]["ephemeralContainers"] = []
    assert errors_of(validate_pod_ephemeral_containers_update(removed, old)) == [
        'spec.ephemeralContainers: Forbidden: existing ephemeral containers "debugger-abc12" may not be removed\n']
    changed = copy.deepcopy(old)
    changed["spec"]["ephemeralContainers"][0]["image"] = "alpine"
    assert errors_of(validate_pod_ephemeral_containers_update(changed, old)) == [
        ('spec.ephemeralContainers: Forbidden: existing ephemeral containers "debugger-abc12" may not be changed\n'
        '- EphemeralContainer.image: "busybox"\n+ EphemeralContainer.image: "alpine"')]


def test_a_second_debugger_is_added_beside_the_first() -> None:
    old = running_pod([debug_container()])
    new = with_debugger(old, debug_container(name="debugger-xyz89"))
    assert validate_pod_ephemeral_containers_update(new, old) == []
    twice = with_debugger(old, debug_container())
    assert errors_of(validate_pod_ephemeral_containers_update(twice, old)) == [
        'spec.ephemeralContainers[1].name: Duplicate value: "debugger-abc12"']


def test_static_pods_take_no_ephemeral_containers() -> None:
    old = running_pod(**{"kubernetes.io/config.mirror": "mirror"})
    assert errors_of(validate_pod_ephemeral_containers_update(with_debugger(old, debug_container()), old)) == [
        ": Forbidden: static pods do not support ephemeral containers"]


def test_ephemeral_containers_are_refused_on_create() -> None:
    pod = running_pod([debug_container()])
    assert errors_of(validate_pod(pod)) == ["spec.ephemeralContainers: Forbidden: cannot be set on create"]
