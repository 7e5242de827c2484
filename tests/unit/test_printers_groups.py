"""The server-side Table columns of the non-core kinds, as Kubernetes 1.32's printers fill them.

(The autoscaling/v1 <-> v2 conversion of HorizontalPodAutoscalers is tested in test_hpa_conversion.py.)"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from apiserver import printers
from apiserver.registry.autoscaling import horizontalpodautoscalers as hpas
from apiserver.registry.groups import builtin_resources

NOW = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
PRINTERS = {(r.info.group, r.info.version, r.info.plural): r.printer for r in builtin_resources()}
Obj = dict[str, Any]


def ago(**delta: float) -> str:
    return (NOW - timedelta(**delta)).strftime("%Y-%m-%dT%H:%M:%SZ")


def table(group: str, plural: str, obj: Obj, version: str = "v1") -> tuple[list[str], list[Any]]:
    printer = PRINTERS[(group, version, plural)]
    assert printer is not None, plural
    out = printers.table_for(printer, [obj], now=NOW)
    return [c["name"] for c in out["columnDefinitions"]], out["rows"][0]["cells"]


CONTAINERS = {"spec": {"containers": [{"name": "web", "image": "nginx:1.25"}, {"name": "log", "image": "busybox"}]}}


@pytest.mark.parametrize("group, plural, obj, columns, cells", [
    pytest.param("apps", "deployments", {
        "metadata": {"name": "web", "creationTimestamp": ago(minutes=5)},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}}, "template": CONTAINERS},
        "status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2}},
        ["Name", "Ready", "Up-to-date", "Available", "Age", "Containers", "Images", "Selector"],
        ["web", "2/3", 3, 2, "5m", "web,log", "nginx:1.25,busybox", "app=web"], id="deployment"),
    pytest.param("apps", "replicasets", {
        "metadata": {"name": "web-1", "creationTimestamp": ago(hours=2)},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}}, "template": CONTAINERS},
        "status": {"replicas": 3, "readyReplicas": 1}},
        ["Name", "Desired", "Current", "Ready", "Age", "Containers", "Images", "Selector"],
        ["web-1", 3, 3, 1, "120m", "web,log", "nginx:1.25,busybox", "app=web"], id="replicaset"),
    pytest.param("apps", "statefulsets", {
        "metadata": {"name": "db", "creationTimestamp": ago(days=3)},
        "spec": {"replicas": 3, "template": CONTAINERS}, "status": {"readyReplicas": 3}},
        ["Name", "Ready", "Age", "Containers", "Images"], ["db", "3/3", "3d", "web,log", "nginx:1.25,busybox"],
        id="statefulset"),
    pytest.param("apps", "daemonsets", {
        "metadata": {"name": "agent", "creationTimestamp": ago(seconds=30)},
        "spec": {"selector": {"matchLabels": {"app": "agent"}}, "template": {
            "spec": {"nodeSelector": {"kubernetes.io/os": "linux"}, "containers": [{"name": "a", "image": "a:1"}]}}},
        "status": {"desiredNumberScheduled": 2, "currentNumberScheduled": 2, "numberReady": 1,
                   "updatedNumberScheduled": 2, "numberAvailable": 1}},
        ["Name", "Desired", "Current", "Ready", "Up-to-date", "Available", "Node Selector", "Age", "Containers",
         "Images", "Selector"],
        ["agent", 2, 2, 1, 2, 1, "kubernetes.io/os=linux", "30s", "a", "a:1", "app=agent"], id="daemonset"),
    pytest.param("apps", "controllerrevisions", {
        "metadata": {"name": "agent-7b", "creationTimestamp": ago(minutes=1), "ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "uid": "u", "controller": True}]},
        "revision": 2},
        ["Name", "Controller", "Revision", "Age"], ["agent-7b", "daemonset.apps/agent", 2, "60s"],
        id="controllerrevision"),
    pytest.param("batch", "jobs", {
        "metadata": {"name": "pi", "creationTimestamp": ago(minutes=3)},
        "spec": {"completions": 1, "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "u"}},
                 "template": CONTAINERS},
        "status": {"succeeded": 1, "startTime": ago(minutes=3), "completionTime": ago(minutes=2, seconds=48),
                   "conditions": [{"type": "Complete", "status": "True"}]}},
        ["Name", "Status", "Completions", "Duration", "Age", "Containers", "Images", "Selector"],
        ["pi", "Complete", "1/1", "12s", "3m", "web,log", "nginx:1.25,busybox",
         "batch.kubernetes.io/controller-uid=u"], id="job-complete"),
    pytest.param("batch", "jobs", {
        "metadata": {"name": "queue", "creationTimestamp": ago(minutes=3)},
        "spec": {"parallelism": 3, "template": CONTAINERS}, "status": {"startTime": ago(minutes=1)}},
        None, ["queue", "Running", "0/1 of 3", "60s", "3m", "web,log", "nginx:1.25,busybox", "<none>"],
        id="job-running-work-queue"),
    pytest.param("batch", "jobs", {
        "metadata": {"name": "held", "creationTimestamp": ago(minutes=3)},
        "spec": {"completions": 2, "template": CONTAINERS},
        "status": {"conditions": [{"type": "Suspended", "status": "True"}]}},
        None, ["held", "Suspended", "0/2", "", "3m", "web,log", "nginx:1.25,busybox", "<none>"], id="job-suspended"),
    pytest.param("batch", "cronjobs", {
        "metadata": {"name": "nightly", "creationTimestamp": ago(days=1)},
        "spec": {"schedule": "0 3 * * *", "suspend": False, "jobTemplate": {"spec": {"template": CONTAINERS}}},
        "status": {"active": [{"name": "nightly-1"}], "lastScheduleTime": ago(hours=9)}},
        ["Name", "Schedule", "Timezone", "Suspend", "Active", "Last Schedule", "Age", "Containers", "Images",
         "Selector"],
        ["nightly", "0 3 * * *", "<none>", "False", 1, "9h", "24h", "web,log", "nginx:1.25,busybox", "<none>"],
        id="cronjob"),
    pytest.param("autoscaling", "horizontalpodautoscalers", {
        "metadata": {"name": "web", "creationTimestamp": ago(minutes=2)},
        "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "minReplicas": 1, "maxReplicas": 5,
                 "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {
                     "type": "Utilization", "averageUtilization": 80}}}]},
        "status": {"currentReplicas": 2, "currentMetrics": [{"type": "Resource", "resource": {
            "name": "cpu", "current": {"averageUtilization": 35}}}]}},
        ["Name", "Reference", "Targets", "MinPods", "MaxPods", "Replicas", "Age"],
        ["web", "Deployment/web", "cpu: 35%/80%", "1", 5, 2, "2m"], id="hpa"),
    pytest.param("policy", "poddisruptionbudgets", {
        "metadata": {"name": "web", "creationTimestamp": ago(minutes=2)}, "spec": {"minAvailable": "50%"},
        "status": {"disruptionsAllowed": 1}},
        ["Name", "Min Available", "Max Unavailable", "Allowed Disruptions", "Age"], ["web", "50%", "N/A", 1, "2m"],
        id="pdb"),
    pytest.param("scheduling.k8s.io", "priorityclasses", {
        "metadata": {"name": "high", "creationTimestamp": ago(minutes=2)}, "value": 1000,
        "preemptionPolicy": "PreemptLowerPriority"},
        ["Name", "Value", "Global-Default", "Age", "PreemptionPolicy"],
        ["high", 1000, False, "2m", "PreemptLowerPriority"], id="priorityclass"),
    pytest.param("storage.k8s.io", "storageclasses", {
        "metadata": {"name": "standard", "creationTimestamp": ago(minutes=2),
                     "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
        "provisioner": "kubesim.io/hostpath", "reclaimPolicy": "Delete", "volumeBindingMode": "Immediate"},
        ["Name", "Provisioner", "ReclaimPolicy", "VolumeBindingMode", "AllowVolumeExpansion", "Age"],
        ["standard (default)", "kubesim.io/hostpath", "Delete", "Immediate", False, "2m"], id="storageclass"),
    pytest.param("networking.k8s.io", "ingresses", {
        "metadata": {"name": "web", "creationTimestamp": ago(minutes=2)},
        "spec": {"ingressClassName": "nginx", "rules": [{"host": "a.example.com"}, {"host": "b.example.com"}],
                 "tls": [{"hosts": ["a.example.com"]}]},
        "status": {"loadBalancer": {"ingress": [{"ip": "192.0.2.10"}]}}},
        ["Name", "Class", "Hosts", "Address", "Ports", "Age"],
        ["web", "nginx", "a.example.com,b.example.com", "192.0.2.10", "80, 443", "2m"], id="ingress"),
    pytest.param("networking.k8s.io", "networkpolicies", {
        "metadata": {"name": "deny", "creationTimestamp": ago(minutes=2)}, "spec": {"podSelector": {}}},
        ["Name", "Pod-Selector", "Age"], ["deny", "<none>", "2m"], id="networkpolicy"),
    pytest.param("discovery.k8s.io", "endpointslices", {
        "metadata": {"name": "web-x", "creationTimestamp": ago(minutes=2)}, "addressType": "IPv4",
        "ports": [{"port": 80}], "endpoints": [{"addresses": [f"10.0.0.{i}"]} for i in range(1, 6)]},
        ["Name", "AddressType", "Ports", "Endpoints", "Age"],
        ["web-x", "IPv4", "80", "10.0.0.1,10.0.0.2,10.0.0.3 + 2 more...", "2m"], id="endpointslice"),
    pytest.param("certificates.k8s.io", "certificatesigningrequests", {
        "metadata": {"name": "jane", "creationTimestamp": ago(minutes=2)},
        "spec": {"signerName": "kubernetes.io/kube-apiserver-client", "username": "admin", "expirationSeconds": 86400},
        "status": {"conditions": [{"type": "Approved", "status": "True"}], "certificate": "Zm9v"}},
        ["Name", "Age", "SignerName", "Requestor", "RequestedDuration", "Condition"],
        ["jane", "2m", "kubernetes.io/kube-apiserver-client", "admin", "24h", "Approved,Issued"], id="csr"),
    pytest.param("apiregistration.k8s.io", "apiservices", {
        "metadata": {"name": "v1beta1.metrics.k8s.io", "creationTimestamp": ago(minutes=2)},
        "spec": {"service": {"namespace": "kube-system", "name": "metrics-server"}},
        "status": {"conditions": [{"type": "Available", "status": "False", "reason": "MissingEndpoints"}]}},
        ["Name", "Service", "Available", "Age"],
        ["v1beta1.metrics.k8s.io", "kube-system/metrics-server", "False (MissingEndpoints)", "2m"], id="apiservice"),
])
def test_columns(group: str, plural: str, obj: Obj, columns: list[str] | None, cells: list[Any]) -> None:
    names, row = table(group, plural, obj, "v2" if plural == "horizontalpodautoscalers" else "v1")
    if columns is not None:
        assert names == columns
    assert row == cells


def test_hpa_targets_of_several_metrics() -> None:
    specs = [{"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue",
                                                                            "averageValue": "100Mi"}}},
             {"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"averageValue": "10"}}},
             {"type": "External", "external": {"metric": {"name": "queue"}, "target": {"value": "5"}}}]
    assert hpas.format_metrics(specs, []) == "memory: <unknown>/100Mi, <unknown>/10 + 1 more..."
