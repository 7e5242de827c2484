"""The other non-core groups: defaults, validation and immutable fields, table-driven.

PriorityClasses, StorageClasses and CSI objects, Ingresses, IngressClasses,
NetworkPolicies, EndpointSlices, RuntimeClasses, PodDisruptionBudgets, HPAs,
APIServices, FlowSchemas, priority levels, webhook configurations,
CertificateSigningRequests and events.k8s.io Events, each judged through its
registered strategy as the store runs it.
"""

from __future__ import annotations

import base64
import copy
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from apiserver.registry.groups import builtin_resources
from apiserver.registry.resource import Resource
from apiserver.validation.field import invalid_message

Obj = dict[str, Any]
BY_KIND = {(r.info.group, r.info.kind): r for r in builtin_resources() if r.storage_of is None and r.stored}
EVENTS_V1 = next(r for r in builtin_resources() if r.info.group == "events.k8s.io")


def resource(group: str, kind: str) -> Resource:
    return BY_KIND[(group, kind)]


def created(res: Resource, obj: Obj) -> tuple[Obj, str]:
    strategy = res.strategy
    assert strategy is not None
    obj = copy.deepcopy(obj)
    meta = obj.setdefault("metadata", {})
    if res.info.namespaced:
        meta.setdefault("namespace", "default")
    meta.update(uid="u-1", creationTimestamp="2024-05-01T12:00:00Z")
    strategy.prepare_for_create(obj)
    strategy.default(obj)
    errs = strategy.validate(obj)
    return obj, invalid_message(res.info.kind, meta["name"], errs) if errs else ""


def updated(res: Resource, old: Obj, new: Obj) -> tuple[Obj, str]:
    strategy = res.strategy
    assert strategy is not None
    new = copy.deepcopy(new)
    strategy.prepare_for_update(new, old)
    strategy.default(new)
    errs = strategy.validate_update(new, old)
    return new, invalid_message(res.info.kind, new["metadata"]["name"], errs) if errs else ""


def csr_request() -> str:
    key = ec.generate_private_key(ec.SECP256R1())
    request = x509.CertificateSigningRequestBuilder().subject_name(
        x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "jane")])).sign(key, hashes.SHA256())
    return base64.b64encode(request.public_bytes(serialization.Encoding.PEM)).decode()


PC = ("scheduling.k8s.io", "PriorityClass")
SC = ("storage.k8s.io", "StorageClass")
ING = ("networking.k8s.io", "Ingress")
NETPOL = ("networking.k8s.io", "NetworkPolicy")
PDB = ("policy", "PodDisruptionBudget")
HPA = ("autoscaling", "HorizontalPodAutoscaler")
CSR = ("certificates.k8s.io", "CertificateSigningRequest")
BACKEND = {"service": {"name": "web", "port": {"number": 80}}}


@pytest.mark.parametrize("kind, obj, path, expected", [
    pytest.param(PC, {"metadata": {"name": "high"}, "value": 10}, ("preemptionPolicy",), "PreemptLowerPriority",
                 id="priorityclass-preemption"),
    pytest.param(SC, {"metadata": {"name": "fast"}, "provisioner": "example.com/fast"}, ("reclaimPolicy",), "Delete",
                 id="storageclass-reclaim"),
    pytest.param(SC, {"metadata": {"name": "fast"}, "provisioner": "example.com/fast"}, ("volumeBindingMode",),
                 "Immediate", id="storageclass-binding"),
    pytest.param(("storage.k8s.io", "CSIDriver"), {"metadata": {"name": "csi.example.com"}}, ("spec",),
                 {"attachRequired": True, "podInfoOnMount": False, "storageCapacity": False,
                  "fsGroupPolicy": "ReadWriteOnceWithFSType", "requiresRepublish": False, "seLinuxMount": False,
                  "volumeLifecycleModes": ["Persistent"]}, id="csidriver"),
    pytest.param(NETPOL, {"metadata": {"name": "np"}, "spec": {"podSelector": {}, "egress": [
        {"ports": [{"port": 53}]}]}}, ("spec",),
                 {"podSelector": {}, "egress": [{"ports": [{"port": 53, "protocol": "TCP"}]}],
                  "policyTypes": ["Ingress", "Egress"]}, id="networkpolicy"),
    pytest.param(("discovery.k8s.io", "EndpointSlice"), {"metadata": {"name": "s"}, "addressType": "IPv4",
                                                         "endpoints": [], "ports": [{"port": 80}]},
                 ("ports",), [{"port": 80, "name": "", "protocol": "TCP"}], id="endpointslice-port"),
    pytest.param(HPA, {"metadata": {"name": "h"}, "spec": {
        "scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 3}}, ("spec", "metrics"),
                 [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization",
                                                                            "averageUtilization": 80}}}],
                 id="hpa-cpu-metric"),
    pytest.param(HPA, {"metadata": {"name": "h"}, "spec": {
        "scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 3,
        "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}}}, ("spec", "behavior"),
                 {"scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max", "policies": [
                     {"type": "Pods", "value": 4, "periodSeconds": 15},
                     {"type": "Percent", "value": 100, "periodSeconds": 15}]},
                  "scaleDown": {"stabilizationWindowSeconds": 60, "selectPolicy": "Max", "policies": [
                      {"type": "Percent", "value": 100, "periodSeconds": 15}]}}, id="hpa-behavior"),
    pytest.param(("admissionregistration.k8s.io", "MutatingWebhookConfiguration"), {
        "metadata": {"name": "m"}, "webhooks": [{"name": "a.b.example.com", "sideEffects": "None",
                                                 "admissionReviewVersions": ["v1"],
                                                 "clientConfig": {"service": {"namespace": "x", "name": "y"}},
                                                 "rules": [{"operations": ["CREATE"], "apiGroups": [""],
                                                            "apiVersions": ["v1"], "resources": ["pods"]}]}]},
                 ("webhooks",), [{"name": "a.b.example.com", "sideEffects": "None", "admissionReviewVersions": ["v1"],
                                  "clientConfig": {"service": {"namespace": "x", "name": "y", "port": 443}},
                                  "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                                             "resources": ["pods"], "scope": "*"}],
                                  "matchPolicy": "Equivalent", "failurePolicy": "Fail", "namespaceSelector": {},
                                  "objectSelector": {}, "timeoutSeconds": 10, "reinvocationPolicy": "Never"}],
                 id="mutating-webhook"),
    pytest.param(("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"), {
        "metadata": {"name": "p"}, "spec": {"type": "Limited", "limited": {"limitResponse": {
            "type": "Queue", "queuing": {}}}}}, ("spec", "limited"),
                 {"nominalConcurrencyShares": 30, "lendablePercent": 0, "limitResponse": {
                     "type": "Queue", "queuing": {"handSize": 8, "queues": 64, "queueLengthLimit": 50}}},
                 id="priority-level"),
])
def test_defaults(kind: tuple[str, str], obj: Obj, path: tuple[str, ...], expected: Any) -> None:
    out, problem = created(resource(*kind), obj)
    assert problem == ""
    for key in path:
        out = out[key]
    assert out == expected


@pytest.mark.parametrize("kind, obj, message", [
    pytest.param(PC, {"metadata": {"name": "system-mine"}, "value": 10},
                 "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use "
                 "only. error: system-mine is not a known system priority class", id="pc-system-prefix"),
    pytest.param(PC, {"metadata": {"name": "system-node-critical"}, "value": 10},
                 "error: value of system-node-critical PriorityClass must be 2000001000", id="pc-system-value"),
    pytest.param(PC, {"metadata": {"name": "huge"}, "value": 1_000_000_001},
                 "value: Forbidden: maximum allowed value of a user defined priority is 1000000000", id="pc-too-high"),
    pytest.param(PC, {"metadata": {"name": "p"}, "value": 1, "preemptionPolicy": "Sometimes"},
                 'preemptionPolicy: Unsupported value: "Sometimes": supported values: "PreemptLowerPriority", '
                 '"Never"', id="pc-policy"),
    pytest.param(SC, {"metadata": {"name": "s"}}, "provisioner: Required value", id="sc-no-provisioner"),
    pytest.param(SC, {"metadata": {"name": "s"}, "provisioner": "p", "reclaimPolicy": "Recycle"},
                 'reclaimPolicy: Unsupported value: "Recycle": supported values: "Delete", "Retain"', id="sc-reclaim"),
    pytest.param(("storage.k8s.io", "CSIDriver"), {"metadata": {"name": "CSI_Driver"}},
                 'name: Invalid value: "CSI_Driver"', id="csidriver-name"),
    pytest.param(("storage.k8s.io", "VolumeAttachment"), {"metadata": {"name": "va"}, "spec": {
        "attacher": "csi.example.com", "nodeName": "n1", "source": {}}},
                 "spec.source: Required value: must specify exactly one of inlineVolumeSpec and persistentVolumeName",
                 id="volumeattachment-source"),
    pytest.param(ING, {"metadata": {"name": "i"}, "spec": {}},
                 "spec: Invalid value: []: either `defaultBackend` or `rules` must be specified", id="ingress-empty"),
    pytest.param(ING, {"metadata": {"name": "i"}, "spec": {"rules": [{"host": "10.0.0.1", "http": {"paths": [
        {"path": "/", "pathType": "Prefix", "backend": BACKEND}]}}]}},
                 'spec.rules[0].host: Invalid value: "10.0.0.1": must be a DNS name, not an IP address', id="ingress-ip"),
    pytest.param(ING, {"metadata": {"name": "i"}, "spec": {"rules": [{"http": {"paths": [
        {"path": "api", "pathType": "Exact", "backend": BACKEND}]}}]}},
                 'spec.rules[0].http.paths[0].path: Invalid value: "api": must be an absolute path',
                 id="ingress-relative-path"),
    pytest.param(ING, {"metadata": {"name": "i"}, "spec": {"rules": [{"http": {"paths": [
        {"path": "/", "backend": BACKEND}]}}]}},
                 "spec.rules[0].http.paths[0].pathType: Required value: pathType must be specified",
                 id="ingress-no-path-type"),
    pytest.param(ING, {"metadata": {"name": "i"}, "spec": {"defaultBackend": {"service": {"name": "web",
                                                                                         "port": {}}}}},
                 "spec.defaultBackend: Required value: port name or number is required", id="ingress-no-port"),
    pytest.param(("networking.k8s.io", "IngressClass"), {"metadata": {"name": "c"}, "spec": {"controller": "nginx"}},
                 'spec.controller: Invalid value: "nginx": must be a domain-prefixed path (such as "acme.io/foo")',
                 id="ingressclass-controller"),
    pytest.param(NETPOL, {"metadata": {"name": "np"}, "spec": {"podSelector": {}, "ingress": [{"from": [
        {"ipBlock": {"cidr": "10.0.0.0/8", "except": ["192.168.0.0/16"]}}]}]}},
                 'spec.ingress[0].from[0].ipBlock.except[0]: Invalid value: "192.168.0.0/16": must be a strict '
                 "subset of `cidr`", id="netpol-except"),
    pytest.param(NETPOL, {"metadata": {"name": "np"}, "spec": {"podSelector": {}, "ingress": [{"from": [{}]}]}},
                 "spec.ingress[0].from[0]: Required value: must specify a peer", id="netpol-empty-peer"),
    pytest.param(("discovery.k8s.io", "EndpointSlice"), {"metadata": {"name": "s"}, "addressType": "IPv4",
                                                         "endpoints": [{"addresses": ["fe80::1"]}]},
                 'endpoints[0].addresses[0]: Invalid value: "fe80::1": must be a valid IPv4 address',
                 id="endpointslice-address"),
    pytest.param(("node.k8s.io", "RuntimeClass"), {"metadata": {"name": "r"}, "handler": "Run_C"},
                 'handler: Invalid value: "Run_C"', id="runtimeclass-handler"),
    pytest.param(PDB, {"metadata": {"name": "p"}, "spec": {"minAvailable": 1, "maxUnavailable": 1}},
                 "minAvailable and maxUnavailable cannot be both set", id="pdb-both"),
    pytest.param(PDB, {"metadata": {"name": "p"}, "spec": {"minAvailable": "120%"}},
                 'spec.minAvailable: Invalid value: "120%": must not be greater than 100%', id="pdb-percent"),
    pytest.param(HPA, {"metadata": {"name": "h"}, "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"},
                                                           "minReplicas": 5, "maxReplicas": 3}},
                 "spec.maxReplicas: Invalid value: 3: must be greater than or equal to `minReplicas`", id="hpa-max"),
    pytest.param(HPA, {"metadata": {"name": "h"}, "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"},
                                                           "maxReplicas": 3, "metrics": [{"type": "Pods"}]}},
                 "spec.metrics[0].pods: Required value: must populate information for the given metric source",
                 id="hpa-metric-source"),
    pytest.param(("apiregistration.k8s.io", "APIService"), {"metadata": {"name": "v1.wrong"}, "spec": {
        "group": "example.com", "version": "v1", "groupPriorityMinimum": 100, "versionPriority": 10}},
                 'metadata.name: Invalid value: "v1.wrong": must be `spec.version+"."+spec.group`: "v1.example.com"',
                 id="apiservice-name"),
    pytest.param(("flowcontrol.apiserver.k8s.io", "FlowSchema"), {"metadata": {"name": "f"}, "spec": {
        "matchingPrecedence": 20000, "priorityLevelConfiguration": {"name": "p"}}},
                 "spec.matchingPrecedence: Invalid value: 20000: must not be greater than 10000", id="flowschema"),
    pytest.param(("admissionregistration.k8s.io", "ValidatingWebhookConfiguration"), {
        "metadata": {"name": "v"}, "webhooks": [{"name": "short.example", "clientConfig": {},
                                                 "admissionReviewVersions": ["v1"]}]},
                 'webhooks[0].name: Invalid value: "short.example": should be a domain with at least three segments '
                 "separated by dots", id="webhook-name"),
    pytest.param(CSR, {"metadata": {"name": "c"}, "spec": {"request": base64.b64encode(b"hello").decode(),
                                                         "signerName": "example.com/signer", "usages": ["client auth"]}},
                 "spec.request: Invalid value", id="csr-request"),
    pytest.param(CSR, {"metadata": {"name": "c"}, "spec": {"request": csr_request(), "signerName": "signer",
                                                         "usages": ["client auth"]}},
                 "spec.signerName: Invalid value: \"signer\": must be a fully qualified domain and path of the form "
                 "'example.com/signer-name'", id="csr-signer"),
    pytest.param(CSR, {"metadata": {"name": "c"}, "spec": {"request": csr_request(),
                                                         "signerName": "example.com/signer", "usages": ["flying"]}},
                 'spec.usages[0]: Unsupported value: "flying"', id="csr-usage"),
])
def test_invalid(kind: tuple[str, str], obj: Obj, message: str) -> None:
    assert message in created(resource(*kind), obj)[1]


@pytest.mark.parametrize("kind, obj, change, message", [
    pytest.param(PC, {"metadata": {"name": "p"}, "value": 10}, {"value": 11},
                 "value: Forbidden: may not be changed in an update.", id="pc-value"),
    pytest.param(SC, {"metadata": {"name": "s"}, "provisioner": "p"}, {"provisioner": "q"},
                 "provisioner: Forbidden: updates to provisioner are forbidden.", id="sc-provisioner"),
    pytest.param(SC, {"metadata": {"name": "s"}, "provisioner": "p"}, {"parameters": {"type": "ssd"}},
                 "parameters: Forbidden: updates to parameters are forbidden.", id="sc-parameters"),
    pytest.param(("networking.k8s.io", "IngressClass"), {"metadata": {"name": "c"},
                                                         "spec": {"controller": "example.com/a"}},
                 {"spec": {"controller": "example.com/b"}},
                 'spec.controller: Invalid value: "example.com/b": field is immutable', id="ingressclass-controller"),
    pytest.param(("node.k8s.io", "RuntimeClass"), {"metadata": {"name": "r"}, "handler": "runc"}, {"handler": "kata"},
                 'handler: Invalid value: "kata": field is immutable', id="runtimeclass-handler"),
    pytest.param(("discovery.k8s.io", "EndpointSlice"), {"metadata": {"name": "s"}, "addressType": "IPv4",
                                                         "endpoints": []},
                 {"addressType": "IPv6"}, 'addressType: Invalid value: "IPv6": field is immutable', id="slice-type"),
])
def test_immutable(kind: tuple[str, str], obj: Obj, change: Obj, message: str) -> None:
    res = resource(*kind)
    old, problem = created(res, obj)
    assert problem == ""
    assert message in updated(res, old, {**copy.deepcopy(old), **change})[1]


def test_events_k8s_io_rules() -> None:
    strategy = EVENTS_V1.strategy
    assert strategy is not None
    core_form = {"metadata": {"name": "e", "namespace": "default"},
                 "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"}, "reason": "Seen",
                 "message": "m", "type": "Normal", "count": 2, "source": {"component": "x"}}
    message = invalid_message("Event", "e", strategy.validate(core_form))
    assert message == ('Event "e" is invalid: [eventTime: Required value, count: Invalid value: "": needs to be unset, '
                       'source: Invalid value: "": needs to be unset]')
    good = {**core_form, "eventTime": "2024-05-01T12:00:00.000000Z", "reportingComponent": "example.com/x",
            "reportingInstance": "x-1", "action": "Look"}
    good.pop("count")
    good.pop("source")
    assert strategy.validate(good) == []
    changed = {**good, "reason": "Other"}
    assert 'reason: Invalid value: "Other": field is immutable' in invalid_message(
        "Event", "e", strategy.validate_update(changed, good))
