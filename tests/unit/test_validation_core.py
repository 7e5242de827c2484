"""ReplicationControllers, Nodes, Namespaces and Events are refused with Kubernetes' paths and words."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from apiserver.validation import (
    default_replication_controller,
    validate_event,
    validate_event_update,
    validate_namespace,
    validate_namespace_finalize_update,
    validate_namespace_status_update,
    validate_namespace_update,
    validate_node,
    validate_node_status_update,
    validate_node_update,
    validate_replication_controller,
    validate_replication_controller_status_update,
    validate_replication_controller_update,
)
from apiserver.validation import defaults as core_validation_defaults
from apiserver.validation.core import validate_endpoints, validate_pod_template, validate_service_account

LABEL = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
         "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
         "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
SUBDOMAIN = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
             "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
             "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
QUALIFIED = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
             "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
             "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
LABEL_VALUE = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
               "and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or "
               "'12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")
STORED = {"uid": "u1", "resourceVersion": "3", "creationTimestamp": "2024-05-01T10:00:00Z"}


def errors_of(errs: list[Any]) -> list[str]:
    return [str(e) for e in errs]


def with_changes(obj: dict[str, Any], changes: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """A copy with ``changes[section][key]`` set (None removes the key)."""
    new = copy.deepcopy(obj)
    for section, fields in changes.items():
        target = new.setdefault(section, {})
        for key, value in fields.items():
            if value is None:
                target.pop(key, None)
            else:
                target[key] = value
    return new


# --- ReplicationController -------------------------------------------------------------------------

def rc() -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "v1", "kind": "ReplicationController",
        "metadata": {"name": "web", "namespace": "default", **STORED},
        "spec": {"template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "app", "image": "nginx"}]}}},
    }
    default_replication_controller(obj)
    return obj


def test_a_defaulted_rc_is_valid() -> None:
    assert validate_replication_controller(rc()) == []


def template_spec(**fields: Any) -> dict[str, Any]:
    spec: dict[str, Any] = copy.deepcopy(rc()["spec"]["template"]["spec"])
    spec.update(fields)
    return spec


@pytest.mark.parametrize(("spec", "expected"), [
    pytest.param({"replicas": -1}, ["spec.replicas: Invalid value: -1: must be greater than or equal to 0"],
                 id="replicas"),
    pytest.param({"minReadySeconds": -5},
                 ["spec.minReadySeconds: Invalid value: -5: must be greater than or equal to 0"],
                 id="min-ready-seconds"),
    pytest.param({"selector": {}}, ["spec.selector: Required value"], id="selector-required"),
    pytest.param({"selector": {"app": "db"}},
                 [('spec.template.metadata.labels: Invalid value: {"app":"web"}: `selector` does not match template '
                  "`labels`")], id="selector-matches-template"),
    pytest.param({"template": None}, ["spec.template: Required value"], id="template-required"),
    pytest.param({"template": {"metadata": {"labels": {"app": "web"}},
                               "spec": template_spec(restartPolicy="Never")}},
                 ['spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"'],
                 id="template-restart-always"),
    pytest.param({"template": {"metadata": {"labels": {"app": "web"}},
                               "spec": template_spec(activeDeadlineSeconds=10)}},
                 [("spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in "
                  "ReplicationController is not Supported")], id="template-no-deadline"),
    pytest.param({"template": {"metadata": {"labels": {"app": "web"}}, "spec": template_spec(containers=[])}},
                 ["spec.template.spec.containers: Required value"], id="template-pod-spec"),
    pytest.param({"template": {"metadata": {"labels": {"app": "web", "bad": "a b"}},
                               "spec": template_spec()}},
                 [f'spec.template.labels: Invalid value: "a b": {LABEL_VALUE}'], id="template-labels"),
    pytest.param({"template": {"metadata": {"labels": {"app": "web"}}, "spec": template_spec(
        hostNetwork=True, containers=[{**template_spec()["containers"][0],
                                       "ports": [{"containerPort": 80, "protocol": "TCP"}]}])}},
                 [], id="template-host-port-left-to-pods"),
])
def test_validate_replication_controller(spec: dict[str, Any], expected: list[str]) -> None:
    assert errors_of(validate_replication_controller(with_changes(rc(), {"spec": spec}))) == expected


def test_rc_update_validates_the_new_spec_and_metadata() -> None:
    old = rc()
    new = with_changes(old, {"spec": {"replicas": 3}})
    assert validate_replication_controller_update(new, old) == []
    new = with_changes(old, {"spec": {"replicas": -3}, "metadata": {"name": "other"}})
    assert errors_of(validate_replication_controller_update(new, old)) == [
        'metadata.name: Invalid value: "other": field is immutable',
        "spec.replicas: Invalid value: -3: must be greater than or equal to 0"]


@pytest.mark.parametrize(("status", "expected"), [
    pytest.param({"replicas": 3, "fullyLabeledReplicas": 3, "readyReplicas": 2, "availableReplicas": 2,
                  "observedGeneration": 1}, [], id="valid"),
    pytest.param({"replicas": -1},
                 ["status.replicas: Invalid value: -1: must be greater than or equal to 0",
                  "status.fullyLabeledReplicas: Invalid value: 0: cannot be greater than status.replicas",
                  "status.readyReplicas: Invalid value: 0: cannot be greater than status.replicas",
                  "status.availableReplicas: Invalid value: 0: cannot be greater than status.replicas"],
                 id="negative"),
    pytest.param({"replicas": 1, "readyReplicas": 2, "availableReplicas": 1},
                 ["status.readyReplicas: Invalid value: 2: cannot be greater than status.replicas"], id="ready-above"),
    pytest.param({"replicas": 2, "readyReplicas": 1, "availableReplicas": 2},
                 ["status.availableReplicas: Invalid value: 2: cannot be greater than readyReplicas"],
                 id="available-above-ready"),
])
def test_validate_rc_status_update(status: dict[str, Any], expected: list[str]) -> None:
    old = rc()
    new = copy.deepcopy(old)
    new["status"] = status
    assert errors_of(validate_replication_controller_status_update(new, old)) == expected


# --- Node --------------------------------------------------------------------------------------

def node() -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1", **STORED},
            "spec": {"podCIDR": "10.244.1.0/24", "podCIDRs": ["10.244.1.0/24"]},
            "status": {"capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                       "allocatable": {"cpu": "3800m", "memory": "7Gi", "pods": "110"}}}


def test_a_node_is_valid() -> None:
    assert validate_node(node()) == []


@pytest.mark.parametrize(("changes", "expected"), [
    pytest.param({"metadata": {"name": "Node_1"}}, [f'metadata.name: Invalid value: "Node_1": {SUBDOMAIN}'],
                 id="name"),
    pytest.param({"metadata": {"namespace": "default"}},
                 ["metadata.namespace: Forbidden: not allowed on this type"],
                 id="cluster-scoped"),
    pytest.param({"spec": {"taints": [{"key": "dedicated", "value": "gpu", "effect": "NoRun"}]}},
                 [('metadata.taints[0].effect: Unsupported value: "NoRun": supported values: "NoSchedule", '
                  '"PreferNoSchedule", "NoExecute"')], id="taint-effect"),
    pytest.param({"spec": {"taints": [{"key": "dedicated"}]}}, ["metadata.taints[0].effect: Required value"],
                 id="taint-effect-required"),
    pytest.param({"spec": {"taints": [{"key": "bad key", "effect": "NoSchedule"}]}},
                 [f'metadata.taints[0].key: Invalid value: "bad key": {QUALIFIED}'], id="taint-key"),
    pytest.param({"spec": {"taints": [{"key": "a", "value": "x y", "effect": "NoSchedule"}]}},
                 [f'metadata.taints[0].value: Invalid value: "x y": {LABEL_VALUE}'], id="taint-value"),
    pytest.param({"spec": {"taints": [{"key": "a", "effect": "NoSchedule"}, {"key": "a", "value": "v",
                                                                             "effect": "NoSchedule"}]}},
                 [('metadata.taints[1]: Duplicate value: {"effect":"NoSchedule","key":"a","value":"v"}: taints must be '
                  "unique by key and effect pair")], id="taints-unique"),
    pytest.param({"spec": {"taints": [{"key": "a", "effect": "NoSchedule"},
                                      {"key": "a", "effect": "NoExecute"}]}}, [],
                 id="same-key-other-effect"),
    pytest.param({"spec": {"podCIDRs": ["10.244.1.0/33"]}},
                 [('spec.podCIDRs[0]: Invalid value: "10.244.1.0/33": must be a valid CIDR value, (e.g. 10.9.8.0/24 or '
                  "2001:db8::/64)")], id="pod-cidr"),
    pytest.param({"spec": {"podCIDRs": None, "podCIDR": "bogus"}},
                 [('spec.podCIDRs[0]: Invalid value: "bogus": must be a valid CIDR value, (e.g. 10.9.8.0/24 or '
                  "2001:db8::/64)")], id="singular-pod-cidr"),
    pytest.param({"spec": {"podCIDRs": ["10.244.1.0/24", "10.244.2.0/24"]}},
                 [('spec.podCIDRs: Invalid value: ["10.244.1.0/24","10.244.2.0/24"]: may specify no more than one CIDR '
                  "for each IP family")], id="pod-cidrs-one-per-family"),
    pytest.param({"spec": {"podCIDRs": ["10.244.1.0/24", "fd00:10:244::/64"]}}, [], id="dual-stack"),
    pytest.param({"status": {"capacity": {"cpu": "-1", "pods": "1.5"}}},
                 ['status.capacity.cpu: Invalid value: "-1": must be greater than or equal to 0',
                  'status.capacity.pods: Invalid value: "1500m": must be an integer'], id="capacity"),
])
def test_validate_node(changes: dict[str, dict[str, Any]], expected: list[str]) -> None:
    assert errors_of(validate_node(with_changes(node(), changes))) == expected


@pytest.mark.parametrize(("changes", "expected"), [
    pytest.param({"spec": {"unschedulable": True, "taints": [{"key": "a", "effect": "NoSchedule"}]}}, [],
                 id="cordon-and-taint"),
    pytest.param({"spec": {"podCIDRs": ["10.244.9.0/24"], "podCIDR": "10.244.9.0/24"}},
                 ['spec.podCIDRs: Forbidden: node updates may not change podCIDR except from "" to valid'],
                 id="pod-cidr-immutable"),
    pytest.param({"spec": {"providerID": "sim://b"}}, [], id="provider-id-may-be-set"),
    pytest.param({"status": {"addresses": [{"type": "InternalIP", "address": "10.0.0.1"},
                                           {"type": "InternalIP", "address": "10.0.0.1"}]}},
                 ['status.addresses[1]: Duplicate value: {"address":"10.0.0.1","type":"InternalIP"}'],
                 id="addresses-unique"),
])
def test_validate_node_update(changes: dict[str, dict[str, Any]], expected: list[str]) -> None:
    old = node()
    assert errors_of(validate_node_update(with_changes(old, changes), old)) == expected


def test_provider_id_is_set_once_and_status_writes_follow_the_same_rules() -> None:
    old = with_changes(node(), {"spec": {"providerID": "sim://a"}})
    new = with_changes(old, {"spec": {"providerID": "sim://b"}})
    expected = ['spec.providerID: Forbidden: node updates may not change providerID except from "" to valid']
    assert errors_of(validate_node_update(new, old)) == expected
    assert errors_of(validate_node_status_update(new, old)) == expected


def test_a_node_may_gain_its_first_pod_cidr() -> None:
    old = with_changes(node(), {"spec": {"podCIDR": None, "podCIDRs": None}})
    assert validate_node_update(node(), old) == []


# --- Namespace -----------------------------------------------------------------------------------

def namespace(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a", **STORED},
            "spec": {"finalizers": ["kubernetes"], **spec}, "status": {"phase": "Active"}}


@pytest.mark.parametrize(("obj", "expected"), [
    pytest.param(namespace(), [], id="valid"),
    pytest.param(with_changes(namespace(), {"metadata": {"name": "team.a"}}),
                 [f'metadata.name: Invalid value: "team.a": {LABEL}'], id="name-is-a-label"),
    pytest.param(namespace(finalizers=["cleanup"]),
                 [('spec.finalizers: Invalid value: "cleanup": name is neither a standard finalizer name nor is '
                  "it fully qualified")], id="spec-finalizer"),
    pytest.param(namespace(finalizers=["example.com/cleanup"]), [], id="qualified-spec-finalizer"),
])
def test_validate_namespace(obj: dict[str, Any], expected: list[str]) -> None:
    assert errors_of(validate_namespace(obj)) == expected


def test_namespace_update_and_finalize() -> None:
    old = namespace()
    assert validate_namespace_update(with_changes(old, {"metadata": {"labels": {"team": "a"}}}), old) == []
    finalized = namespace(finalizers=[])
    assert validate_namespace_finalize_update(finalized, old) == []
    assert errors_of(validate_namespace_finalize_update(namespace(finalizers=["x y"]), old)) == [
        f'spec.finalizers[0]: Invalid value: "x y": {QUALIFIED}',
        'spec.finalizers[0]: Invalid value: "x y": name is neither a standard finalizer name nor is it fully qualified']


@pytest.mark.parametrize(("deleting", "phase", "expected"), [
    pytest.param(False, "Active", [], id="active"),
    pytest.param(False, "Terminating",
                 ["status.Phase: Invalid value: \"Terminating\": may only be 'Active' if `deletionTimestamp` is empty"],
                 id="terminating-without-deletion"),
    pytest.param(True, "Terminating", [], id="terminating"),
    pytest.param(True, "Active",
                 [("status.Phase: Invalid value: \"Active\": may only be 'Terminating' if `deletionTimestamp` is not "
                  "empty")], id="active-while-deleting"),
])
def test_validate_namespace_status_update(deleting: bool, phase: str, expected: list[str]) -> None:
    old = namespace()
    if deleting:
        old["metadata"]["deletionTimestamp"] = "2024-05-02T10:00:00Z"
    new = with_changes(old, {"status": {"phase": phase}})
    assert errors_of(validate_namespace_status_update(new, old)) == expected


# --- Event ---------------------------------------------------------------------------------------

def event(**fields: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "Event",
                           "metadata": {"name": "web.17a", "namespace": "default"},
                           "involvedObject": {"kind": "Pod", "namespace": "default", "name": "web"},
                           "reason": "Scheduled", "message": "Successfully assigned default/web to node-1",
                           "type": "Normal", "source": {"component": "default-scheduler"}}
    obj.update(fields)
    return {k: v for k, v in obj.items() if v is not None}


NEW_STYLE = {"eventTime": "2024-05-01T10:00:00.000000Z", "reportingComponent": "default-scheduler",
             "reportingInstance": "default-scheduler-node-1", "action": "Binding"}


@pytest.mark.parametrize(("obj", "expected"), [
    pytest.param(event(), [], id="valid"),
    pytest.param(event(type="Sometimes", reason="x" * 300, involvedObject=None), [],
                 id="old-style-events-are-lenient"),
    pytest.param(event(involvedObject={"kind": "Pod", "namespace": "other", "name": "web"}),
                 ['involvedObject.namespace: Invalid value: "other": does not match event.namespace'],
                 id="namespaces-agree"),
    pytest.param(event(metadata={"name": "node-1.17a", "namespace": "kube-system"},
                       involvedObject={"kind": "Node", "name": "node-1"}),
                 ['involvedObject.namespace: Invalid value: "": does not match event.namespace'],
                 id="cluster-scoped-object-in-other-namespace"),
    pytest.param(event(**NEW_STYLE), [], id="new-style-valid"),
    pytest.param(event(**{**NEW_STYLE, "reportingComponent": "my controller", "action": "a" * 129}),
                 [f'reportingController: Invalid value: "my controller": {QUALIFIED}',
                  'action: Invalid value: "": can have at most 128 characters'], id="new-style-fields"),
    pytest.param(event(**{**NEW_STYLE, "metadata": {"name": "n.1", "namespace": "team-a"},
                          "involvedObject": {"kind": "Node", "name": "n"}}),
                 ['involvedObject.namespace: Invalid value: "": does not match event.namespace'],
                 id="new-style-cluster-object-outside-default"),
    pytest.param(event(metadata={"name": "a/b", "namespace": "default"}),
                 ["metadata.name: Invalid value: \"a/b\": may not contain '/'"], id="name-is-a-path-segment"),
])
def test_validate_event(obj: dict[str, Any], expected: list[str]) -> None:
    assert errors_of(validate_event(obj)) == expected


def test_new_style_events_name_their_reporter() -> None:
    obj = event(**{**NEW_STYLE, "reportingComponent": None, "reportingInstance": None})
    errs = errors_of(validate_event(obj))
    assert "reportingController: Required value" in errs
    assert "reportingInstance: Required value" in errs


def test_event_update_keeps_metadata_rules() -> None:
    old = with_changes(event(), {"metadata": STORED})
    assert validate_event_update(with_changes(old, {"metadata": {}}), old) == []
    new = with_changes(old, {"metadata": {"uid": "u2"}})
    expected = ['metadata.uid: Invalid value: "u2": field is immutable']
    assert errors_of(validate_event_update(new, old)) == expected


# --- Endpoints -----------------------------------------------------------------------------------

def endpoints(*subsets: dict[str, Any]) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "Endpoints",
                           "metadata": {"name": "web", "namespace": "default", **STORED}, "subsets": list(subsets)}
    core_validation_defaults.default_endpoints(obj)
    return obj


@pytest.mark.parametrize(("subset", "expected"), [
    pytest.param({"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 80}]}, [], id="valid"),
    pytest.param({"notReadyAddresses": [{"ip": "10.0.0.1", "hostname": "web-0", "nodeName": "node-1"}]}, [],
                 id="not-ready-headless"),
    pytest.param({"ports": [{"port": 80}]},
                 ["subsets[0]: Required value: must specify `addresses` or `notReadyAddresses`"], id="no-addresses"),
    pytest.param({"addresses": [{"ip": "127.0.0.1"}]},
                 [('subsets[0].addresses[0].ip: Invalid value: "127.0.0.1": may not be in the loopback range '
                  "(127.0.0.0/8, ::1/128)")], id="loopback"),
    pytest.param({"addresses": [{"ip": "169.254.169.254"}]},
                 [('subsets[0].addresses[0].ip: Invalid value: "169.254.169.254": may not be in the link-local range '
                  "(169.254.0.0/16, fe80::/10)")], id="link-local"),
    pytest.param({"addresses": [{"ip": "0.0.0.0"}]},
                 ['subsets[0].addresses[0].ip: Invalid value: "0.0.0.0": may not be unspecified (0.0.0.0)'],
                 id="unspecified"),
    pytest.param({"addresses": [{"ip": "224.0.0.1"}]},
                 [('subsets[0].addresses[0].ip: Invalid value: "224.0.0.1": may not be in the link-local multicast '
                  "range (224.0.0.0/24, ff02::/10)")], id="link-local-multicast"),
    pytest.param({"addresses": [{"ip": "web"}]},
                 [('subsets[0].addresses[0].ip: Invalid value: "web": must be a valid IP address, (e.g. 10.9.8.7 or '
                  "2001:db8::ffff)"),
                  'subsets[0].addresses[0].ip: Invalid value: "web": must be a valid IP address'], id="not-an-ip"),
    pytest.param({"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 80}, {"name": "b", "port": 81}]},
                 ["subsets[0].ports[0].name: Required value"], id="several-ports-need-names"),
    pytest.param({"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 0, "protocol": "HTTP"}]},
                 ["subsets[0].ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive",
                  'subsets[0].ports[0].protocol: Unsupported value: "HTTP": supported values: "SCTP", "TCP", "UDP"'],
                 id="port-and-protocol"),
])
def test_validate_endpoints(subset: dict[str, Any], expected: list[str]) -> None:
    assert errors_of(validate_endpoints(endpoints(subset))) == expected


def test_endpoint_ports_default_to_tcp() -> None:
    assert endpoints({"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 80}]})["subsets"][0]["ports"] == [
        {"port": 80, "protocol": "TCP"}]


# --- ServiceAccount and PodTemplate --------------------------------------------------------------

def test_service_account_names_and_secret_references() -> None:
    from apiserver.registry.core import serviceaccounts
    sa = {"metadata": {"name": "Builder", "namespace": "default"},
          "secrets": [{"name": "tok", "namespace": "x", "uid": "u"}]}
    assert errors_of(validate_service_account(sa)) == [f'metadata.name: Invalid value: "Builder": {SUBDOMAIN}']
    strategy = serviceaccounts.RESOURCE.strategy
    assert strategy is not None
    strategy.prepare_for_create(sa)
    # Kubernetes keeps only the name of each referenced Secret.
    assert sa["secrets"] == [{"name": "tok"}]


def test_pod_templates_are_validated_under_template() -> None:
    from apiserver.registry.core import podtemplates
    strategy = podtemplates.RESOURCE.strategy
    assert strategy is not None
    obj: dict[str, Any] = {"metadata": {"name": "t", "namespace": "default"},
                           "template": {"metadata": {"labels": {"app": "web"}},
                                        "spec": {"containers": [{"name": "app", "image": "nginx"}]}}}
    strategy.default(obj)
    assert validate_pod_template(obj) == []
    assert obj["template"]["spec"]["restartPolicy"] == "Always"
    obj["template"]["spec"]["containers"] = []
    assert errors_of(validate_pod_template(obj)) == ["template.spec.containers: Required value"]


def test_a_pod_template_counts_template_changes_in_its_generation() -> None:
    from apiserver.registry.core import podtemplates
    strategy = podtemplates.RESOURCE.strategy
    assert strategy is not None
    old: dict[str, Any] = {"metadata": {"name": "t", "generation": 1}, "template": {"spec": {"containers": []}}}
    same = copy.deepcopy(old)
    same["metadata"]["labels"] = {"a": "b"}
    strategy.prepare_for_update(same, old)
    assert same["metadata"]["generation"] == 1
    changed = copy.deepcopy(old)
    changed["template"]["metadata"] = {"labels": {"app": "x"}}
    strategy.prepare_for_update(changed, old)
    assert changed["metadata"]["generation"] == 2
