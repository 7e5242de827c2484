"""Defaulting fills in what kube-apiserver fills in, and doing it twice changes nothing."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from apiserver.validation import (
    default_namespace,
    default_node,
    default_pod,
    default_replication_controller,
    prepare_namespace_create,
    validate_namespace,
    validate_node,
    validate_pod,
    validate_replication_controller,
)

DIGEST = "sha256:" + "a" * 64


def defaulted_pod(**spec: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {"metadata": {"name": "web", "namespace": "default"},
                           "spec": {"containers": [{"name": "app", "image": "nginx:1.25"}], **spec}}
    default_pod(obj)
    return obj


def test_a_minimal_pod_gets_every_default() -> None:
    assert defaulted_pod()["spec"] == {
        "containers": [{"name": "app", "image": "nginx:1.25", "imagePullPolicy": "IfNotPresent",
                        "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"}],
        "enableServiceLinks": True,
        "dnsPolicy": "ClusterFirst",
        "restartPolicy": "Always",
        "schedulerName": "default-scheduler",
        "securityContext": {},
        "terminationGracePeriodSeconds": 30,
    }


@pytest.mark.parametrize(("image", "policy"), [
    pytest.param("nginx", "Always", id="no-tag-is-latest"),
    pytest.param("nginx:latest", "Always", id="latest"),
    pytest.param("nginx:1.25", "IfNotPresent", id="tag"),
    pytest.param(f"nginx@{DIGEST}", "IfNotPresent", id="digest"),
    pytest.param(f"nginx:latest@{DIGEST}", "Always", id="latest-and-digest"),
    pytest.param("localhost:5000/team/app", "Always", id="registry-port-no-tag"),
    pytest.param("localhost:5000/team/app:v2", "IfNotPresent", id="registry-port-tag"),
    pytest.param("registry.example.com/app:latest", "Always", id="registry-latest"),
    pytest.param("Nginx:latest", "IfNotPresent", id="unparsable-upper-case"),
    pytest.param("", "IfNotPresent", id="empty"),
])
def test_image_pull_policy_follows_the_tag(image: str, policy: str) -> None:
    obj = defaulted_pod(containers=[{"name": "app", "image": image}])
    assert obj["spec"]["containers"][0]["imagePullPolicy"] == policy


def test_explicit_values_are_kept() -> None:
    obj = defaulted_pod(containers=[{"name": "app", "image": "nginx", "imagePullPolicy": "Never",
                                     "terminationMessagePolicy": "FallbackToLogsOnError"}],
                        restartPolicy="Never", dnsPolicy="Default", terminationGracePeriodSeconds=0,
                        enableServiceLinks=False, schedulerName="custom", preemptionPolicy="Never")
    spec = obj["spec"]
    assert spec["containers"][0]["imagePullPolicy"] == "Never"
    assert spec["containers"][0]["terminationMessagePolicy"] == "FallbackToLogsOnError"
    assert (spec["restartPolicy"], spec["dnsPolicy"], spec["terminationGracePeriodSeconds"]) == ("Never",
                                                                                                 "Default", 0)
    assert (spec["enableServiceLinks"], spec["schedulerName"], spec["preemptionPolicy"]) == (False, "custom",
                                                                                             "Never")


@pytest.mark.parametrize(("container", "expected"), [
    pytest.param({"resources": {"limits": {"cpu": "1", "memory": "1Gi"}}},
                 {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "1", "memory": "1Gi"}},
                 id="limits-become-requests"),
    pytest.param({"resources": {"limits": {"cpu": "1"}, "requests": {"cpu": "500m"}}},
                 {"limits": {"cpu": "1"}, "requests": {"cpu": "500m"}}, id="requests-kept"),
    pytest.param({"resources": {"limits": {"cpu": "1"}, "requests": {"memory": "1Gi"}}},
                 {"limits": {"cpu": "1"}, "requests": {"memory": "1Gi",
                                                       "cpu": "1"}}, id="missing-request-filled"),
    pytest.param({"resources": {"requests": {"cpu": "1"}}}, {"requests": {"cpu": "1"}}, id="no-limits"),
])
def test_pod_requests_default_to_limits(container: dict[str, Any], expected: dict[str, Any]) -> None:
    obj = defaulted_pod(containers=[{"name": "app", "image": "x", **container}],
                        initContainers=[{"name": "init", "image": "x", **copy.deepcopy(container)}])
    assert obj["spec"]["containers"][0]["resources"] == expected
    assert obj["spec"]["initContainers"][0]["resources"] == expected


@pytest.mark.parametrize(("container", "key", "expected"), [
    pytest.param({"ports": [{"containerPort": 80}]}, "ports", [{"containerPort": 80, "protocol": "TCP"}],
                 id="port-protocol"),
    pytest.param({"livenessProbe": {"httpGet": {"port": 8080}}}, "livenessProbe",
                 {"httpGet": {"port": 8080, "path": "/", "scheme": "HTTP"}, "timeoutSeconds": 1,
                  "periodSeconds": 10,
                  "successThreshold": 1, "failureThreshold": 3}, id="http-probe"),
    pytest.param({"startupProbe": {"grpc": {"port": 9000}, "periodSeconds": 5}}, "startupProbe",
                 {"grpc": {"port": 9000, "service": ""}, "timeoutSeconds": 1, "periodSeconds": 5,
                  "successThreshold": 1,
                  "failureThreshold": 3}, id="grpc-probe"),
    pytest.param({"lifecycle": {"preStop": {"httpGet": {"port": 80, "path": "/stop"}}}}, "lifecycle",
                 {"preStop": {"httpGet": {"port": 80, "path": "/stop",
                                          "scheme": "HTTP"}}}, id="lifecycle-http"),
    pytest.param({"env": [{"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}]},
                 "env",
                 [{"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName",
                                                              "apiVersion": "v1"}}}],
                 id="env-field-ref"),
])
def test_container_parts_are_defaulted(container: dict[str, Any], key: str, expected: Any) -> None:
    obj = defaulted_pod(containers=[{"name": "app", "image": "x", **container}])
    assert obj["spec"]["containers"][0][key] == expected


def test_host_network_makes_container_ports_host_ports() -> None:
    obj = defaulted_pod(hostNetwork=True, containers=[{"name": "app", "image": "x",
                                                       "ports": [{"containerPort": 80}, {"containerPort": 81,
                                                                                         "hostPort": 81}]}])
    assert [p["hostPort"] for p in obj["spec"]["containers"][0]["ports"]] == [80, 81]
    assert validate_pod(obj) == []


@pytest.mark.parametrize(("volume", "expected"), [
    pytest.param({"name": "v"}, {"name": "v", "emptyDir": {}}, id="no-source-is-empty-dir"),
    pytest.param({"name": "v", "secret": {"secretName": "s"}}, {"name": "v", "secret": {"secretName": "s",
                                                                                         "defaultMode": 420}},
                 id="secret-mode"),
    pytest.param({"name": "v", "configMap": {"name": "c", "defaultMode": 256}},
                 {"name": "v", "configMap": {"name": "c", "defaultMode": 256}}, id="config-map-mode-kept"),
    pytest.param({"name": "v", "hostPath": {"path": "/x"}}, {"name": "v", "hostPath": {"path": "/x",
                                                                                       "type": ""}},
                 id="host-path-type"),
    pytest.param({"name": "v", "downwardAPI": {"items": [{"path": "labels",
                                                          "fieldRef": {"fieldPath": "metadata.labels"}}]}},
                 {"name": "v", "downwardAPI": {"defaultMode": 420, "items": [
                     {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels", "apiVersion": "v1"}}]}},
                 id="downward-api"),
    pytest.param({"name": "v", "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}},
                 {"name": "v", "projected": {"defaultMode": 420, "sources": [
                     {"serviceAccountToken": {"path": "token",
                                              "expirationSeconds": 3600}}]}}, id="projected-token"),
])
def test_volumes_are_defaulted(volume: dict[str, Any], expected: dict[str, Any]) -> None:
    assert defaulted_pod(volumes=[volume])["spec"]["volumes"] == [expected]


@pytest.mark.parametrize(("status", "expected"), [
    pytest.param({"podIP": "10.0.0.5"}, {"podIP": "10.0.0.5", "podIPs": [{"ip": "10.0.0.5"}]},
                 id="ip-to-list"),
    pytest.param({"podIPs": [{"ip": "10.0.0.5"}, {"ip": "fd00::5"}]},
                 {"podIPs": [{"ip": "10.0.0.5"}, {"ip": "fd00::5"}], "podIP": "10.0.0.5"}, id="list-to-ip"),
    pytest.param({"hostIP": "192.168.0.2"}, {"hostIP": "192.168.0.2", "hostIPs": [{"ip": "192.168.0.2"}]},
                 id="host-ip"),
])
def test_pod_ips_agree(status: dict[str, Any], expected: dict[str, Any]) -> None:
    obj = {"metadata": {"name": "p"}, "spec": {"containers": []}, "status": status}
    default_pod(obj)
    assert obj["status"] == expected


def rc(**spec: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {"metadata": {"name": "web", "namespace": "default"},
                           "spec": {"template": {"metadata": {"labels": {"app": "web"}},
                                                 "spec": {"containers": [{"name": "app",
                                                                          "image": "nginx"}]}}, **spec}}
    default_replication_controller(obj)
    return obj


def test_rc_defaults_come_from_its_template() -> None:
    obj = rc()
    assert obj["metadata"]["labels"] == {"app": "web"}
    assert obj["spec"]["selector"] == {"app": "web"}
    assert obj["spec"]["replicas"] == 1
    template_spec = obj["spec"]["template"]["spec"]
    assert (template_spec["restartPolicy"], template_spec["terminationGracePeriodSeconds"]) == ("Always", 30)
    assert template_spec["containers"][0]["imagePullPolicy"] == "Always"
    # What only Pods get (SetDefaults_Pod) stays out of templates.
    assert {"enableServiceLinks", "tolerations", "priority"}.isdisjoint(template_spec)
    assert validate_replication_controller(obj) == []


def test_rc_keeps_its_own_selector_labels_and_replicas() -> None:
    obj = rc(selector={"tier": "front"}, replicas=0)
    assert (obj["spec"]["selector"], obj["spec"]["replicas"]) == ({"tier": "front"}, 0)
    obj = {"metadata": {"labels": {"team": "a"}},
           "spec": {"template": {"metadata": {"labels": {"app": "web"}}}}}
    default_replication_controller(obj)
    assert obj["metadata"]["labels"] == {"team": "a"}


def test_node_defaults() -> None:
    obj: dict[str, Any] = {"metadata": {"name": "n"}, "spec": {"podCIDR": "10.244.1.0/24"},
                           "status": {"capacity": {"cpu": "4", "pods": "110"}}}
    default_node(obj)
    assert obj["status"]["allocatable"] == {"cpu": "4", "pods": "110"}
    assert obj["spec"] == {"podCIDR": "10.244.1.0/24", "podCIDRs": ["10.244.1.0/24"]}
    listed: dict[str, Any] = {"metadata": {"name": "n"}, "spec": {"podCIDRs": ["10.244.2.0/24", "fd00::/64"]},
                              "status": {"capacity": {"cpu": "4"}, "allocatable": {"cpu": "3"}}}
    default_node(listed)
    assert listed["spec"]["podCIDR"] == "10.244.2.0/24"
    assert listed["status"]["allocatable"] == {"cpu": "3"}


def test_namespace_defaults_and_create_preparation() -> None:
    obj: dict[str, Any] = {"metadata": {"name": "team-a", "labels": {"kubernetes.io/metadata.name": "wrong"}}}
    default_namespace(obj)
    assert obj["metadata"]["labels"] == {"kubernetes.io/metadata.name": "team-a"}
    assert obj["status"] == {"phase": "Active"}
    unnamed: dict[str, Any] = {"metadata": {"generateName": "team-"}}
    default_namespace(unnamed)
    assert "labels" not in unnamed["metadata"]

    created: dict[str, Any] = {"metadata": {"name": "team-b"}, "spec": {"finalizers": ["example.com/x"]},
                               "status": {"phase": "Terminating"}}
    prepare_namespace_create(created)
    prepare_namespace_create(created)
    assert created["spec"]["finalizers"] == ["example.com/x", "kubernetes"]
    assert created["status"] == {"phase": "Active"}


# --- idempotence -----------------------------------------------------------------------------

_names = st.sampled_from(["app", "web", "db"])
_images = st.sampled_from(["nginx", "nginx:latest", "nginx:1.25", f"repo/app@{DIGEST}", "", "Bad Image"])
_quantities = st.sampled_from(["1", "500m", "1Gi", "2"])
_resource_lists = st.dictionaries(st.sampled_from(["cpu", "memory"]), _quantities, max_size=2)
_resources = st.fixed_dictionaries({}, optional={"limits": _resource_lists, "requests": _resource_lists})
_probes = st.fixed_dictionaries({}, optional={
    "httpGet": st.fixed_dictionaries({"port": st.just(80)}, optional={"path": st.just("/healthz")}),
    "grpc": st.fixed_dictionaries({"port": st.just(9000)}),
    "periodSeconds": st.integers(0, 30),
    "successThreshold": st.integers(0, 2),
})
_ports = st.fixed_dictionaries({"containerPort": st.integers(1, 65535)},
                               optional={"protocol": st.sampled_from(["TCP", "UDP"]),
                                         "hostPort": st.integers(0, 100)})
_env = st.fixed_dictionaries({"name": _names}, optional={
    "value": st.just("x"),
    "valueFrom": st.fixed_dictionaries({"fieldRef": st.fixed_dictionaries(
        {"fieldPath": st.just("metadata.name")}, optional={"apiVersion": st.just("v1")})}),
})
_containers = st.fixed_dictionaries({"name": _names, "image": _images}, optional={
    "ports": st.lists(_ports, max_size=2), "resources": _resources, "livenessProbe": _probes,
    "readinessProbe": _probes, "imagePullPolicy": st.sampled_from(["Always", "Never"]), "env": st.lists(_env,
                                                                                                        max_size=2),
    "lifecycle": st.fixed_dictionaries({}, optional={"preStop": st.fixed_dictionaries(
        {"httpGet": st.fixed_dictionaries({"port": st.just(80)})})}),
})
_volumes = st.fixed_dictionaries({"name": _names}, optional={
    "secret": st.fixed_dictionaries({"secretName": st.just("s")}, optional={"defaultMode": st.integers(0,
                                                                                                       511)}),
    "configMap": st.fixed_dictionaries({"name": st.just("c")}),
    "hostPath": st.fixed_dictionaries({"path": st.just("/x")}),
    "projected": st.fixed_dictionaries({"sources": st.just([{"serviceAccountToken": {"path": "t"}}])}),
})
_tolerations = st.fixed_dictionaries({}, optional={
    "key": st.sampled_from(["", "node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable", "x"]),
    "operator": st.sampled_from(["Exists", "Equal"]),
    "effect": st.sampled_from(["", "NoExecute", "NoSchedule"]),
    "tolerationSeconds": st.integers(0, 600),
})
_pod_specs = st.fixed_dictionaries({"containers": st.lists(_containers, min_size=1, max_size=2)}, optional={
    "initContainers": st.lists(_containers, max_size=1), "volumes": st.lists(_volumes, max_size=2),
    "tolerations": st.lists(_tolerations, max_size=3), "hostNetwork": st.booleans(),
    "priorityClassName": st.sampled_from(["", "system-node-critical", "custom"]),
    "restartPolicy": st.sampled_from(["Never", "OnFailure"]), "enableServiceLinks": st.booleans(),
})
_pods = st.fixed_dictionaries({"metadata": st.just({"name": "p", "namespace": "default"}),
                               "spec": _pod_specs},
                              optional={"status": st.fixed_dictionaries({}, optional={
                                  "podIP": st.just("10.0.0.1"), "podIPs": st.just([{"ip": "10.0.0.2"}])})})
_rcs = st.fixed_dictionaries({"metadata": st.just({"name": "rc", "namespace": "default"}),
                              "spec": st.fixed_dictionaries(
    {}, optional={"replicas": st.integers(0, 3), "selector": st.dictionaries(_names, _names, max_size=1),
                  "template": st.fixed_dictionaries({"spec": _pod_specs},
                                                    optional={"metadata": st.fixed_dictionaries(
                      {}, optional={"labels": st.dictionaries(_names, _names, max_size=2)})})})})
_nodes = st.fixed_dictionaries({"metadata": st.just({"name": "n"})}, optional={
    "spec": st.fixed_dictionaries({}, optional={"podCIDR": st.just("10.0.0.0/24"),
                                                "podCIDRs": st.just(["10.0.1.0/24"])}),
    "status": st.fixed_dictionaries({}, optional={"capacity": _resource_lists,
                                                  "allocatable": _resource_lists}),
})
_namespaces = st.fixed_dictionaries({"metadata": st.fixed_dictionaries({}, optional={
    "name": st.sampled_from(["team-a", "b"]), "labels": st.dictionaries(_names, _names, max_size=2)})})


@pytest.mark.parametrize(("defaulter", "validator", "objects"), [
    pytest.param(default_pod, validate_pod, _pods, id="pod"),
    pytest.param(default_replication_controller, validate_replication_controller, _rcs, id="rc"),
    pytest.param(default_node, validate_node, _nodes, id="node"),
    pytest.param(default_namespace, validate_namespace, _namespaces, id="namespace"),
])
@given(data=st.data())
def test_defaulting_twice_equals_once_and_validation_never_raises(
        defaulter: Callable[[dict[str, Any]], None], validator: Callable[[dict[str, Any]], list[Any]],
        objects: st.SearchStrategy[dict[str, Any]], data: st.DataObject) -> None:
    once = data.draw(objects)
    defaulter(once)
    twice = copy.deepcopy(once)
    defaulter(twice)
    assert twice == once
    assert isinstance(validator(once), list)
