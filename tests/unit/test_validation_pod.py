"""Pods (create, update, status) and Bindings are refused with Kubernetes' paths and words.

Each case starts from a valid, defaulted Pod (what the APIServer validates),
changes one thing, and expects the exact errors kube-apiserver 1.32 reports.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from apiserver.validation import (
    default_pod,
    validate_binding,
    validate_pod,
    validate_pod_status_update,
    validate_pod_update,
)

LABEL = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
         "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
         "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
SUBDOMAIN = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
             "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
             "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
QUANTITY = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
PORT_RANGE = "must be between 1 and 65535, inclusive"
C0 = "spec.containers[0]"


def container(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"name": "app", "image": "nginx:1.25", "imagePullPolicy": "IfNotPresent",
                            "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"}
    base.update(fields)
    return {k: v for k, v in base.items() if v is not None}


def pod(spec: dict[str, Any] | None = None, **metadata: Any) -> dict[str, Any]:
    """A defaulted, valid Pod, then ``spec`` keys replaced (None removes one) and metadata keys set."""
    obj: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod",
                           "metadata": {"name": "web", "namespace": "default"},
                           "spec": {"containers": [container()]}}
    default_pod(obj)
    for key, value in (spec or {}).items():
        if value is None:
            obj["spec"].pop(key, None)
        else:
            obj["spec"][key] = value
    for key, value in metadata.items():
        if value is None:
            obj["metadata"].pop(key, None)
        else:
            obj["metadata"][key] = value
    return obj


def errors_of(errs: list[Any]) -> list[str]:
    return [str(e) for e in errs]


def test_a_defaulted_minimal_pod_is_valid() -> None:
    assert validate_pod(pod()) == []


CREATE_CASES = [
    # containers
    pytest.param({"containers": []}, ["spec.containers: Required value"], id="containers-required"),
    pytest.param({"containers": [container(name=None)]}, [f"{C0}.name: Required value"],
                 id="container-name-required"),
    pytest.param({"containers": [container(name="App_1")]}, [f'{C0}.name: Invalid value: "App_1": {LABEL}'],
                 id="container-name-label"),
    pytest.param({"containers": [container(), container()]},
                 ['spec.containers[1].name: Duplicate value: "app"'],
                 id="container-names-unique"),
    pytest.param({"initContainers": [container()]}, ['spec.initContainers[0].name: Duplicate value: "app"'],
                 id="init-and-regular-names-unique"),
    pytest.param({"containers": [container(image=None)]}, [f"{C0}.image: Required value"],
                 id="image-required"),
    pytest.param({"containers": [container(image=" nginx")]},
                 [f'{C0}.image: Invalid value: " nginx": must not have leading or trailing whitespace'],
                 id="image-whitespace"),
    pytest.param({"containers": [container(imagePullPolicy="Sometimes")]},
                 [(f'{C0}.imagePullPolicy: Unsupported value: "Sometimes": supported values: "Always", '
                  '"IfNotPresent", "Never"')], id="pull-policy-unsupported"),
    pytest.param({"containers": [container(imagePullPolicy=None)]}, [f"{C0}.imagePullPolicy: Required value"],
                 id="pull-policy-required"),
    pytest.param({"containers": [container(terminationMessagePolicy="Always")]},
                 [(f'{C0}.terminationMessagePolicy: Unsupported value: "Always": supported values: "File", '
                  '"FallbackToLogsOnError"')], id="termination-message-policy"),
    pytest.param({"containers": [container(restartPolicy="Always")]},
                 [f"{C0}.restartPolicy: Forbidden: may not be set for non-init containers"],
                 id="restart-policy-on-regular-container"),
    # ports
    pytest.param({"containers": [container(ports=[{"protocol": "TCP"}])]},
                 [f"{C0}.ports[0].containerPort: Required value"], id="container-port-required"),
    pytest.param({"containers": [container(ports=[{"containerPort": 70000, "protocol": "TCP"}])]},
                 [f"{C0}.ports[0].containerPort: Invalid value: 70000: {PORT_RANGE}"], id="container-port-range"),
    pytest.param({"containers": [container(ports=[{"containerPort": 80, "hostPort": -1,
                                                   "protocol": "TCP"}])]},
                 [f"{C0}.ports[0].hostPort: Invalid value: -1: {PORT_RANGE}"], id="host-port-range"),
    pytest.param({"containers": [container(ports=[{"containerPort": 80, "protocol": "ICMP"}])]},
                 [f'{C0}.ports[0].protocol: Unsupported value: "ICMP": supported values: "SCTP", "TCP", "UDP"'],
                 id="protocol-unsupported"),
    pytest.param({"containers": [container(ports=[{"containerPort": 80}])]},
                 [f"{C0}.ports[0].protocol: Required value"],
                 id="protocol-required"),
    pytest.param({"containers": [container(ports=[{"name": "HTTP", "containerPort": 80,
                                                   "protocol": "TCP"}])]},
                 [(f'{C0}.ports[0].name: Invalid value: "HTTP": must contain only alpha-numeric characters (a-z, 0-9), '
                  "and hyphens (-)"),
                  f'{C0}.ports[0].name: Invalid value: "HTTP": must contain at least one letter (a-z)'],
                 id="port-name"),
    pytest.param({"containers": [container(ports=[{"name": "web", "containerPort": 80, "protocol": "TCP"},
                                                  {"name": "web", "containerPort": 81, "protocol": "TCP"}])]},
                 [f'{C0}.ports[1].name: Duplicate value: "web"'], id="port-names-unique"),
    pytest.param({"containers": [container(ports=[{"containerPort": 80, "hostPort": 8080,
                                                   "protocol": "TCP"}]),
                                 container(name="b", ports=[{"containerPort": 81, "hostPort": 8080,
                                                             "protocol": "TCP"}])]},
                 ['spec.containers[1].ports[0].hostPort: Duplicate value: "TCP//8080"'], id="host-ports-conflict"),
    # env
    pytest.param({"containers": [container(env=[{"value": "x"}])]}, [f"{C0}.env[0].name: Required value"],
                 id="env-name-required"),
    pytest.param({"containers": [container(env=[{"name": "A=B"}])]},
                 [(f'{C0}.env[0].name: Invalid value: "A=B": a valid environment variable name must consist only of '
                  "printable ASCII characters other than '='")], id="env-name-relaxed-rule"),
    pytest.param({"containers": [container(env=[{"name": "my.var-1", "value": "x"}])]}, [],
                 id="env-name-dots-ok"),
    pytest.param({"containers": [container(env=[{"name": "A", "value": "x",
                                                 "valueFrom": {"fieldRef": {"apiVersion": "v1",
                                                                            "fieldPath": "metadata.name"}}}])]},
                 [f'{C0}.env[0].valueFrom: Invalid value: "": may not be specified when `value` is not empty'],
                 id="env-value-and-value-from"),
    pytest.param({"containers": [container(env=[{"name": "A", "valueFrom": {}}])]},
                 [(f'{C0}.env[0].valueFrom: Invalid value: "": must specify one of: `fieldRef`, `resourceFieldRef`, '
                  "`configMapKeyRef` or `secretKeyRef`")], id="env-value-from-empty"),
    pytest.param({"containers": [container(env=[{"name": "A", "valueFrom": {
        "fieldRef": {"apiVersion": "v1", "fieldPath": "status.phase"}}}])]},
                 [(f'{C0}.env[0].valueFrom.fieldRef.fieldPath: Unsupported value: "status.phase": supported values: '
                  '"metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName", "spec.serviceAccountName", '
                  '"status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs"')], id="env-field-path"),
    pytest.param({"containers": [container(env=[{"name": "A", "valueFrom": {
        "fieldRef": {"apiVersion": "v1", "fieldPath": "spec.bogus"}}}])]},
                 [(f'{C0}.env[0].valueFrom.fieldRef.fieldPath: Invalid value: "spec.bogus": error converting '
                  "fieldPath: field label not supported: spec.bogus")], id="env-field-path-unknown"),
    pytest.param({"containers": [container(env=[{"name": "A", "valueFrom": {
        "secretKeyRef": {"name": "s", "key": "a/b"}}}])]},
                 [(f'{C0}.env[0].valueFrom.secretKeyRef.key: Invalid value: "a/b": a valid config key must consist of '
                  "alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex "
                  "used for validation is '[-._a-zA-Z0-9]+')")], id="env-secret-key"),
    pytest.param({"containers": [container(envFrom=[{"prefix": "P_"}])]},
                 [f'{C0}.envFrom: Invalid value: "": must specify one of: `configMapRef` or `secretRef`'],
                 id="env-from-no-source"),
    # volumes and mounts
    pytest.param({"containers": [container(volumeMounts=[{"name": "data", "mountPath": "/data"}])]},
                 [f'{C0}.volumeMounts[0].name: Not found: "data"'], id="mount-unknown-volume"),
    pytest.param({"volumes": [{"name": "data", "emptyDir": {}}],
                  "containers": [container(volumeMounts=[{"name": "data", "mountPath": "/d"},
                                                         {"name": "data", "mountPath": "/d"}])]},
                 [f'{C0}.volumeMounts[1].mountPath: Invalid value: "/d": must be unique'], id="mount-paths-unique"),
    pytest.param({"volumes": [{"name": "data", "emptyDir": {}}],
                  "containers": [container(volumeMounts=[{"name": "data", "mountPath": "/d",
                                                          "subPath": "/abs"}])]},
                 [f'{C0}.volumeMounts.subPath: Invalid value: "/abs": must be a relative path'],
                 id="sub-path-relative"),
    pytest.param({"volumes": [{"name": "data", "emptyDir": {}}, {"name": "data", "emptyDir": {}}]},
                 ['spec.volumes[1].name: Duplicate value: "data"'], id="volume-names-unique"),
    pytest.param({"volumes": [{"name": "Data", "emptyDir": {}}]},
                 [f'spec.volumes[0].name: Invalid value: "Data": {LABEL}'], id="volume-name-label"),
    pytest.param({"volumes": [{"name": "data"}]},
                 ["spec.volumes[0]: Required value: must specify a volume type"],
                 id="volume-without-source"),
    pytest.param({"volumes": [{"name": "data", "emptyDir": {}, "hostPath": {"path": "/x"}}]},
                 ["spec.volumes[0].hostPath: Forbidden: may not specify more than 1 volume type"],
                 id="volume-two-sources"),
    pytest.param({"volumes": [{"name": "data", "emptyDir": {}, "downwardAPI": {}}]},
                 ["spec.volumes[0].downwarAPI: Forbidden: may not specify more than 1 volume type"],
                 id="volume-two-sources-kubernetes-spelling"),
    pytest.param({"volumes": [{"name": "data", "secret": {"defaultMode": 420}}]},
                 ["spec.volumes[0].secret.secretName: Required value"], id="secret-name-required"),
    pytest.param({"volumes": [{"name": "data", "configMap": {"name": "c", "defaultMode": 512}}]},
                 [("spec.volumes[0].configMap.defaultMode: Invalid value: 512: must be a number between 0 and 0777 "
                  "(octal), both inclusive")], id="file-mode"),
    pytest.param({"volumes": [{"name": "data", "hostPath": {"path": "/a/../b", "type": ""}}]},
                 ["spec.volumes[0].hostPath.path: Invalid value: \"/a/../b\": must not contain '..'"],
                 id="host-path-backsteps"),
    pytest.param({"volumes": [{"name": "data", "hostPath": {"path": "/a", "type": "Pipe"}}]},
                 [('spec.volumes[0].hostPath.type: Unsupported value: "Pipe": supported values: "", "BlockDevice", '
                  '"CharDevice", "Directory", "DirectoryOrCreate", "File", "FileOrCreate", "Socket"')],
                 id="host-path-type"),
    pytest.param({"volumes": [{"name": "data", "persistentVolumeClaim": {}}]},
                 ["spec.volumes[0].persistentVolumeClaim.claimName: Required value"], id="claim-name-required"),
    # resources
    pytest.param({"containers": [container(resources={"limits": {"cpu": "1"}, "requests": {"cpu": "2"}})]},
                 [f'{C0}.resources.requests: Invalid value: "2": must be less than or equal to cpu limit of 1'],
                 id="request-above-limit"),
    pytest.param({"containers": [container(resources={"limits": {"cpu": "1000m"},
                                                      "requests": {"cpu": "1500m"}})]},
                 [f'{C0}.resources.requests: Invalid value: "1500m": must be less than or equal to cpu limit of 1'],
                 id="request-above-limit-canonical"),
    pytest.param({"containers": [container(resources={"limits": {"memory": "1Gi"},
                                                      "requests": {"memory": "2048Mi"}})]},
                 [f'{C0}.resources.requests: Invalid value: "2Gi": must be less than or equal to memory limit of 1Gi'],
                 id="memory-request-above-limit"),
    pytest.param({"containers": [container(resources={"limits": {"cpu": "abc"}})]},
                 [f'{C0}.resources.limits[cpu]: Invalid value: "abc": {QUANTITY}'], id="unparsable-quantity"),
    pytest.param({"containers": [container(resources={"requests": {"cpu": "-1"}})]},
                 [f'{C0}.resources.requests[cpu]: Invalid value: "-1": must be greater than or equal to 0'],
                 id="negative-quantity"),
    pytest.param({"containers": [container(resources={"requests": {"gpu": "1"}})]},
                 [(f'{C0}.resources.requests[gpu]: Invalid value: "gpu": must be a standard resource type or fully '
                  "qualified"),
                  f'{C0}.resources.requests[gpu]: Invalid value: "gpu": must be a standard resource for containers'],
                 id="unknown-resource"),
    pytest.param({"containers": [container(resources={"requests": {"example.com/gpu": "1"}})]},
                 [f"{C0}.resources.limits: Required value: Limit must be set for non overcommitable resources"],
                 id="extended-resource-needs-limit"),
    pytest.param({"containers": [container(resources={"limits": {"example.com/gpu": "2"},
                                                      "requests": {"example.com/gpu": "1"}})]},
                 [f'{C0}.resources.requests: Invalid value: "1": must be equal to example.com/gpu limit of 2'],
                 id="extended-resource-request-equals-limit"),
    pytest.param({"containers": [container(resources={"limits": {"example.com/gpu": "500m"}})]},
                 [f'{C0}.resources.limits[example.com/gpu]: Invalid value: "500m": must be an integer'],
                 id="extended-resource-integer"),
    pytest.param({"containers": [container(resources={"limits": {"hugepages-2Mi": "3Mi"}})]},
                 [(f'{C0}.resources.limits[hugepages-2Mi]: Invalid value: "3Mi": 3Mi is not positive integer multiple '
                  "of hugepages-2Mi"),
                  f"{C0}.resources: Forbidden: HugePages require cpu or memory"], id="huge-pages"),
    # probes and lifecycle
    pytest.param({"containers": [container(livenessProbe={"periodSeconds": 10, "successThreshold": 1})]},
                 [f"{C0}.livenessProbe: Required value: must specify a handler type"], id="probe-handler-required"),
    pytest.param({"containers": [container(livenessProbe={"exec": {"command": ["true"]},
                                                          "tcpSocket": {"port": 80},
                                                          "successThreshold": 1})]},
                 [f"{C0}.livenessProbe.tcpSocket: Forbidden: may not specify more than 1 handler type"],
                 id="probe-two-handlers"),
    pytest.param({"containers": [container(livenessProbe={"exec": {"command": ["true"]},
                                                          "successThreshold": 2})]},
                 [f"{C0}.livenessProbe.successThreshold: Invalid value: 2: must be 1"],
                 id="liveness-success-threshold"),
    pytest.param({"containers": [container(readinessProbe={"exec": {"command": ["true"]},
                                                           "terminationGracePeriodSeconds": 5})]},
                 [(f"{C0}.readinessProbe.terminationGracePeriodSeconds: Invalid value: 5: must not be set for "
                  "readinessProbes")], id="readiness-grace"),
    pytest.param({"containers": [container(readinessProbe={"exec": {"command": []}, "periodSeconds": -1})]},
                 [f"{C0}.readinessProbe.exec.command: Required value",
                  f"{C0}.readinessProbe.periodSeconds: Invalid value: -1: must be greater than or equal to 0"],
                 id="probe-exec-and-period"),
    pytest.param({"containers": [container(readinessProbe={"httpGet": {"path": "/", "port": 0,
                                                                       "scheme": "FTP"}})]},
                 [f"{C0}.readinessProbe.httpGet.port: Invalid value: 0: {PORT_RANGE}",
                  f'{C0}.readinessProbe.httpGet.scheme: Unsupported value: "FTP": supported values: "HTTP", "HTTPS"'],
                 id="probe-http-get"),
    pytest.param({"containers": [container(lifecycle={"preStop": {"sleep": {"seconds": 60}}})]},
                 [(f"{C0}.lifecycle.preStop.sleep: Invalid value: 60: must be greater than 0 and less than "
                  "terminationGracePeriodSeconds (30). Enable AllowPodLifecycleSleepActionZeroValue feature gate for "
                  "zero sleep.")], id="sleep-beyond-grace"),
    pytest.param({"initContainers": [container(name="init", livenessProbe={"exec": {"command": ["true"]}})]},
                 [("spec.initContainers[0].livenessProbe: Forbidden: may not be set for init containers without "
                  "restartPolicy=Always")], id="init-container-probe"),
    pytest.param({"initContainers": [container(name="init", restartPolicy="OnFailure")]},
                 ['spec.initContainers[0].restartPolicy: Unsupported value: "OnFailure": supported values: "Always"'],
                 id="init-container-restart-policy"),
    # pod-level fields
    pytest.param({"restartPolicy": "Sometimes"},
                 [('spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", '
                  '"Never"')], id="restart-policy"),
    pytest.param({"restartPolicy": None}, ["spec.restartPolicy: Required value"],
                 id="restart-policy-required"),
    pytest.param({"dnsPolicy": "Google"},
                 [('spec.dnsPolicy: Unsupported value: "Google": supported values: "ClusterFirstWithHostNet", '
                  '"ClusterFirst", "Default", "None"')], id="dns-policy"),
    pytest.param({"dnsPolicy": "None"},
                 ["spec.dnsConfig: Required value: must provide `dnsConfig` when `dnsPolicy` is None"],
                 id="dns-none-needs-config"),
    pytest.param({"terminationGracePeriodSeconds": None},
                 ["spec.terminationGracePeriodSeconds: Required value"],
                 id="grace-required"),
    pytest.param({"activeDeadlineSeconds": 0},
                 ["spec.activeDeadlineSeconds: Invalid value: 0: must be between 1 and 2147483647, inclusive"],
                 id="active-deadline-positive"),
    pytest.param({"preemptionPolicy": "Sometimes"},
                 [('spec.preemptionPolicy: Unsupported value: "Sometimes": supported values: "PreemptLowerPriority", '
                  '"Never"')], id="preemption-policy"),
    pytest.param({"nodeName": "Node_1"}, [f'spec.nodeName: Invalid value: "Node_1": {SUBDOMAIN}'],
                 id="node-name"),
    pytest.param({"hostname": "a.b"}, [f'spec.hostname: Invalid value: "a.b": {LABEL}'], id="hostname"),
    pytest.param({"serviceAccountName": "Default"},
                 [f'spec.serviceAccountName: Invalid value: "Default": {SUBDOMAIN}'],
                 id="service-account-name"),
    pytest.param({"nodeSelector": {"disk": "ssd fast"}},
                 [('spec.nodeSelector: Invalid value: "ssd fast": a valid label must be an empty string or consist of '
                  "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character "
                  "(e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is "
                  "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")], id="node-selector"),
    pytest.param({"os": {"name": "plan9"}},
                 ['spec.os: Unsupported value: "plan9": supported values: "linux", "windows"'],
                 id="os"),
    pytest.param({"securityContext": {"runAsUser": -1}},
                 ["spec.securityContext.runAsUser: Invalid value: -1: must be between 0 and 2147483647, inclusive"],
                 id="run-as-user"),
    pytest.param({"securityContext": {"seccompProfile": {"type": "Strict"}}},
                 [('spec.securityContext.seccompProfile.type: Unsupported value: "Strict": supported values: '
                  '"Localhost", "RuntimeDefault", "Unconfined"')], id="seccomp-type"),
    pytest.param({"containers": [container(securityContext={"privileged": True,
                                                            "allowPrivilegeEscalation": False})]},
                 [(f'{C0}.securityContext: Invalid value: {{"allowPrivilegeEscalation":false,"privileged":true}}: '
                  "cannot set `allowPrivilegeEscalation` to false and `privileged` to true")],
                 id="privileged-without-escalation"),
    pytest.param({"hostNetwork": True, "containers": [container(ports=[{"containerPort": 80, "hostPort": 8080,
                                                                        "protocol": "TCP"}])]},
                 [(f"{C0}.ports[0].hostPort: Invalid value: 8080: must match `containerPort` when `hostNetwork` "
                   "is true")],
                 id="host-network-ports"),
    pytest.param({"ephemeralContainers": [{"name": "debug", "image": "busybox", "imagePullPolicy": "Always",
                                           "terminationMessagePolicy": "File"}]},
                 ["spec.ephemeralContainers: Forbidden: cannot be set on create"], id="ephemeral-on-create"),
    pytest.param({"nodeName": "node-1", "schedulingGates": [{"name": "example.com/wait"}]},
                 ["spec.nodeName: Forbidden: cannot be set until all schedulingGates have been cleared"],
                 id="node-name-with-gates"),
    pytest.param({"schedulingGates": [{"name": "example.com/wait"}, {"name": "example.com/wait"}]},
                 ['spec.schedulingGates[1]: Duplicate value: "example.com/wait"'], id="scheduling-gates-unique"),
    # tolerations
    pytest.param({"tolerations": [{"key": "a", "operator": "Exists", "value": "x"}]},
                 [("spec.tolerations[0].operator: Invalid value: \"x\": value must be empty when `operator` is "
                   "'Exists'")],
                 id="toleration-exists-with-value"),
    pytest.param({"tolerations": [{"key": "a", "operator": "Exists", "effect": "NoSchedule",
                                   "tolerationSeconds": 5}]},
                 [("spec.tolerations[0].effect: Invalid value: \"NoSchedule\": effect must be 'NoExecute' when "
                  "`tolerationSeconds` is set")], id="toleration-seconds-need-no-execute"),
    pytest.param({"tolerations": [{"operator": "Equal", "value": "x"}]},
                 [('spec.tolerations[0].operator: Invalid value: "Equal": operator must be Exists when `key` is empty, '
                  'which means "match all values and all keys"')], id="toleration-empty-key"),
    pytest.param({"tolerations": [{"key": "a", "operator": "Gt"}]},
                 ['spec.tolerations[0].operator: Unsupported value: "Gt": supported values: "Equal", "Exists"'],
                 id="toleration-operator"),
    pytest.param({"tolerations": [{"key": "a", "operator": "Exists", "effect": "NoRun"}]},
                 [('spec.tolerations[0].effect: Unsupported value: "NoRun": supported values: "NoSchedule", '
                  '"PreferNoSchedule", "NoExecute"')], id="toleration-effect"),
    # affinity
    pytest.param({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": []}}}},
                 [("spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms: "
                  "Required value: must have at least one node selector term")], id="node-affinity-no-terms"),
    pytest.param({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "cores", "operator": "Gt",
                                                     "values": ["1", "2"]}]}]}}}},
                 [("spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]."
                  "matchExpressions[0].values: Required value: must be specified single value when `operator` is 'Lt' "
                  "or 'Gt'")], id="node-affinity-gt-one-value"),
    pytest.param({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In"}]}]}}}},
                 [("spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]."
                  "matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'")],
                 id="node-affinity-in-needs-values"),
    pytest.param({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "Exists",
                                                     "values": ["a"]}]}]}}}},
                 [("spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]."
                  "matchExpressions[0].values: Forbidden: may not be specified when `operator` is 'Exists' or "
                  "'DoesNotExist'")], id="node-affinity-exists-no-values"),
    pytest.param({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchFields": [{"key": "spec.nodeName", "operator": "In",
                                                "values": ["a"]}]}]}}}},
                 [("spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]."
                  'matchFields[0].key: Invalid value: "spec.nodeName": not a valid field selector key')],
                 id="node-affinity-match-fields-key"),
    pytest.param({"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 0, "preference": {"matchExpressions": [{"key": "zone", "operator": "Like"}]}}]}}},
                 [("spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid "
                  "value: 0: must be in the range 1-100"),
                  ("spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference."
                  'matchExpressions[0].operator: Invalid value: "Like": not a valid selector operator')],
                 id="preferred-node-affinity"),
    pytest.param({"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchExpressions": [{"key": "app", "operator": "In"}]},
         "topologyKey": "kubernetes.io/hostname"}]}}},
                 [("spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector."
                  "matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'")],
                 id="pod-anti-affinity-selector"),
    # topology spread
    pytest.param({"topologySpreadConstraints": [{"maxSkew": 0, "topologyKey": "zone",
                                                 "whenUnsatisfiable": "DoNotSchedule"}]},
                 ["spec.topologySpreadConstraints[0].maxSkew: Invalid value: 0: must be greater than zero"],
                 id="spread-max-skew"),
    pytest.param({"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone",
                                                 "whenUnsatisfiable": "Maybe"}]},
                 [('spec.topologySpreadConstraints[0].whenUnsatisfiable: Unsupported value: "Maybe": supported values: '
                  '"DoNotSchedule", "ScheduleAnyway"')], id="spread-when-unsatisfiable"),
    pytest.param({"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "",
                                                 "whenUnsatisfiable": "DoNotSchedule"}]},
                 ["spec.topologySpreadConstraints[0].topologyKey: Required value: can not be empty"],
                 id="spread-topology-key"),
    pytest.param({"topologySpreadConstraints": [
        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"},
        {"maxSkew": 2, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]},
                 [('spec.topologySpreadConstraints[0].{topologyKey, whenUnsatisfiable}: Duplicate value: '
                  '"{zone, DoNotSchedule}"')], id="spread-duplicate"),
    pytest.param({"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone", "minDomains": 2,
                                                 "whenUnsatisfiable": "ScheduleAnyway"}]},
                 [("spec.topologySpreadConstraints[0].minDomains: Invalid value: 2: can only use minDomains if "
                  "whenUnsatisfiable=DoNotSchedule, not ScheduleAnyway")], id="spread-min-domains"),
]


@pytest.mark.parametrize(("spec", "expected"), CREATE_CASES)
def test_validate_pod(spec: dict[str, Any], expected: list[str]) -> None:
    assert errors_of(validate_pod(pod(spec))) == expected


def test_pod_affinity_topology_key_is_required() -> None:
    obj = pod({"affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "db"}}}]}}})
    assert ("spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Required value: "
            "can not be empty") in errors_of(validate_pod(obj))


@pytest.mark.parametrize(("metadata", "expected"), [
    pytest.param({"namespace": None}, ["metadata.namespace: Required value"], id="namespace-required"),
    pytest.param({"name": "Web"}, [f'metadata.name: Invalid value: "Web": {SUBDOMAIN}'], id="name"),
    pytest.param({"finalizers": ["cleanup"]},
                 [('metadata.finalizers[0]: Invalid value: "cleanup": name is neither a standard finalizer name nor is '
                  "it fully qualified")], id="unqualified-finalizer"),
    pytest.param({"annotations": {"kubernetes.io/config.mirror": "x"}},
                 [('metadata.annotations[kubernetes.io/config.mirror]: Invalid value: "x": must set spec.nodeName if '
                  "mirror pod annotation is set")], id="mirror-pod-needs-node"),
    pytest.param({"annotations": {"controller.kubernetes.io/pod-deletion-cost": "+10"}},
                 [('metadata.annotations[controller.kubernetes.io/pod-deletion-cost]: Invalid value: "+10": must be a '
                  "32bit integer")], id="deletion-cost"),
    pytest.param({"annotations": {"controller.kubernetes.io/pod-deletion-cost": "-10"}}, [],
                 id="deletion-cost-ok"),
])
def test_validate_pod_metadata(metadata: dict[str, Any], expected: list[str]) -> None:
    assert errors_of(validate_pod(pod(**metadata))) == expected


def test_errors_never_raise_on_nulls() -> None:
    obj = {"metadata": {"name": "web", "namespace": "default"},
           "spec": {"containers": [{"name": "app", "image": "x", "ports": None, "env": None,
                                    "resources": None}],
                    "volumes": None, "affinity": None, "tolerations": None, "securityContext": None}}
    assert "spec.restartPolicy: Required value" in errors_of(validate_pod(obj))


# --- update ------------------------------------------------------------------------------------

UPDATABLE = ("pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,"
             "`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),"
             "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)")


def stored(spec: dict[str, Any] | None = None) -> dict[str, Any]:
    obj = pod(spec)
    obj["metadata"].update(uid="u1", resourceVersion="7", creationTimestamp="2024-05-01T10:00:00Z")
    return obj


def changed(old: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    new = copy.deepcopy(old)
    for key, value in spec.items():
        if value is None:
            new["spec"].pop(key, None)
        else:
            new["spec"][key] = value
    return new


@pytest.mark.parametrize(("old_spec", "new_spec", "expected"), [
    pytest.param({}, {"containers": [container(image="nginx:1.26")]}, [], id="image-may-change"),
    pytest.param({}, {"activeDeadlineSeconds": 60}, [], id="deadline-may-be-set"),
    pytest.param({"activeDeadlineSeconds": 60}, {"activeDeadlineSeconds": 30}, [], id="deadline-may-shrink"),
    pytest.param({"activeDeadlineSeconds": 60}, {"activeDeadlineSeconds": 120},
                 ["spec.activeDeadlineSeconds: Invalid value: 120: must be less than or equal to previous value"],
                 id="deadline-may-not-grow"),
    pytest.param({"activeDeadlineSeconds": 60}, {"activeDeadlineSeconds": None},
                 [("spec.activeDeadlineSeconds: Invalid value: null: must not update from a positive integer to nil "
                  "value")], id="deadline-may-not-be-removed"),
    pytest.param({}, {"containers": [container(), container(name="b")]},
                 ["spec.containers: Forbidden: pod updates may not add or remove containers"], id="no-new-containers"),
    pytest.param({"tolerations": [{"key": "a", "operator": "Exists", "effect": "NoExecute",
                                   "tolerationSeconds": 5}]},
                 {"tolerations": [{"key": "a", "operator": "Exists", "effect": "NoExecute",
                                   "tolerationSeconds": 1},
                                  {"key": "b", "operator": "Exists"}]},
                 [], id="tolerations-added-and-seconds-changed"),
    pytest.param({"tolerations": [{"key": "a", "operator": "Exists"}]},
                 {"tolerations": [{"key": "a", "operator": "Equal", "value": "x"}]},
                 ["spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds"],
                 id="tolerations-not-modified"),
    pytest.param({"schedulingGates": [{"name": "example.com/a"}, {"name": "example.com/b"}]},
                 {"schedulingGates": [{"name": "example.com/b"}]}, [], id="gates-may-be-removed"),
    pytest.param({"schedulingGates": [{"name": "example.com/a"}]},
                 {"schedulingGates": [{"name": "example.com/a"}, {"name": "example.com/c"}]},
                 [("spec.schedulingGates[1].name: Forbidden: only deletion is allowed, but found new scheduling gate "
                  "'example.com/c'")], id="gates-may-not-be-added"),
    pytest.param({"schedulingGates": [{"name": "example.com/a"}], "nodeSelector": {"zone": "a"}},
                 {"nodeSelector": {"zone": "a", "disk": "ssd"}}, [], id="gated-pod-node-selector-additions"),
    pytest.param({"schedulingGates": [{"name": "example.com/a"}], "nodeSelector": {"zone": "a"}},
                 {"nodeSelector": {"zone": "b"}},
                 [('spec.nodeSelector: Invalid value: {"zone":"b"}: only additions to spec.nodeSelector are '
                  "allowed (no mutations or deletions)")], id="gated-pod-node-selector-mutation"),
    pytest.param({"terminationGracePeriodSeconds": -1}, {"terminationGracePeriodSeconds": 1}, [],
                 id="negative-grace-may-become-one"),
])
def test_validate_pod_update(old_spec: dict[str, Any], new_spec: dict[str, Any], expected: list[str]) -> None:
    old = stored(old_spec)
    assert errors_of(validate_pod_update(changed(old, new_spec), old)) == expected


@pytest.mark.parametrize(("new_spec", "diff"), [
    pytest.param({"restartPolicy": "Never"}, ['- spec.restartPolicy: "Always"',
                                              '+ spec.restartPolicy: "Never"'],
                 id="restart-policy"),
    pytest.param({"nodeName": "node-1"}, ['- spec.nodeName: null', '+ spec.nodeName: "node-1"'],
                 id="node-name-only-through-binding"),
    pytest.param({"containers": [container(ports=[{"containerPort": 80, "protocol": "TCP"}])]},
                 ['- spec.containers[0].ports: null',
                  '+ spec.containers[0].ports: [{"containerPort":80,"protocol":"TCP"}]'],
                 id="ports"),
])
def test_pod_spec_is_otherwise_immutable(new_spec: dict[str, Any], diff: list[str]) -> None:
    old = stored()
    errs = validate_pod_update(changed(old, new_spec), old)
    assert [e.field for e in errs] == ["spec"]
    assert errs[0].error_body() == "Forbidden: " + UPDATABLE + "\n" + "\n".join(diff)


def test_pod_update_checks_metadata_too() -> None:
    old = stored()
    new = copy.deepcopy(old)
    new["metadata"]["uid"] = "u2"
    new["metadata"]["annotations"] = {"kubernetes.io/config.mirror": "x"}
    errs = errors_of(validate_pod_update(new, old))
    assert errs[0] == 'metadata.uid: Invalid value: "u2": field is immutable'
    assert "metadata.annotations[kubernetes.io/config.mirror]: Forbidden: may not add mirror pod annotation" in errs


# --- status ------------------------------------------------------------------------------------

def with_status(obj: dict[str, Any], **status: Any) -> dict[str, Any]:
    new = copy.deepcopy(obj)
    new["status"] = status
    return new


def terminated(name: str, exit_code: int) -> dict[str, Any]:
    return {"name": name, "state": {"terminated": {"exitCode": exit_code}}}


def running(name: str) -> dict[str, Any]:
    return {"name": name, "state": {"running": {}}}


@pytest.mark.parametrize(("restart_policy", "exit_code", "expected"), [
    pytest.param("Never", 0,
                 [("status.containerStatuses[0].state: Forbidden: may not be transitioned to non-terminated "
                              "state")], id="never"),
    pytest.param("OnFailure", 0, [("status.containerStatuses[0].state: Forbidden: may not be transitioned to "
                                  "non-terminated state")], id="on-failure-after-success"),
    pytest.param("OnFailure", 1, [], id="on-failure-after-failure"),
    pytest.param("Always", 0, [], id="always"),
])
def test_terminated_containers_stay_terminated(restart_policy: str, exit_code: int,
                                               expected: list[str]) -> None:
    old = with_status(stored({"restartPolicy": restart_policy}),
                      containerStatuses=[terminated("app", exit_code)])
    new = with_status(old, containerStatuses=[running("app")])
    assert errors_of(validate_pod_status_update(new, old)) == expected


@pytest.mark.parametrize(("status", "expected"), [
    pytest.param({"phase": "Running", "podIP": "10.0.0.5",
                  "conditions": [{"type": "Ready", "status": "True"}]}, [],
                 id="valid"),
    pytest.param({"podIP": "10.0.0"},
                 [('status.podIPs[0]: Invalid value: "10.0.0": must be a valid IP address, (e.g. 10.9.8.7 or '
                  "2001:db8::ffff)")], id="pod-ip"),
    pytest.param({"podIPs": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}]},
                 [('status.podIPs: Invalid value: [{"ip":"10.0.0.1"},{"ip":"10.0.0.2"}]: may specify no more than one '
                  "IP for each IP family")], id="pod-ips-one-per-family"),
    pytest.param({"podIPs": [{"ip": "10.0.0.1"}, {"ip": "fd00::1"}]}, [], id="dual-stack"),
    pytest.param({"hostIP": "10.0.0.1", "hostIPs": [{"ip": "10.0.0.2"}]},
                 ['status.hostIPs[0].ip: Invalid value: "10.0.0.2": must be equal to `hostIP`'], id="host-ips"),
    pytest.param({"conditions": [{"type": "bad type", "status": "True"}]},
                 [('metadata.conditions[0].Type: Invalid value: "bad type": name part must consist of alphanumeric '
                  "characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',"
                  "  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?"
                  "[A-Za-z0-9]')")], id="condition-type"),
    pytest.param({"nominatedNodeName": "Node_1"},
                 [f'status.nominatedNodeName: Invalid value: "Node_1": {SUBDOMAIN}'],
                 id="nominated-node-name"),
    pytest.param({"qosClass": "Guaranteed"},
                 ['status.qosClass: Invalid value: "Guaranteed": field is immutable'],
                 id="qos-class-immutable"),
])
def test_validate_pod_status_update(status: dict[str, Any], expected: list[str]) -> None:
    old = with_status(stored(), phase="Pending", qosClass="BestEffort")
    new = with_status(old, **{"qosClass": "BestEffort", **status})
    assert errors_of(validate_pod_status_update(new, old)) == expected


def test_status_update_may_not_move_the_pod() -> None:
    old = stored()
    new = changed(old, {"nodeName": "node-1"})
    expected = ["status.nodeName: Forbidden: may not be changed directly"]
    assert errors_of(validate_pod_status_update(new, old)) == expected


# --- binding -----------------------------------------------------------------------------------

@pytest.mark.parametrize(("target", "expected"), [
    pytest.param({"kind": "Node", "name": "node-1"}, [], id="node"),
    pytest.param({"name": "node-1"}, [], id="kind-may-be-empty"),
    pytest.param({"kind": "Pod", "name": "x"},
                 [('target.kind: Unsupported value: "Pod": supported values: "Node", '
                                                '"<empty>"')], id="kind-must-be-node"),
    pytest.param({"kind": "Node"}, ["target.name: Required value"], id="name-required"),
])
def test_validate_binding(target: dict[str, Any], expected: list[str]) -> None:
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "web"}, "target": target}
    assert errors_of(validate_binding(binding)) == expected
