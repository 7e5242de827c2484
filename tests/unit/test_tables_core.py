"""The Table columns and cells of the core/v1 kinds, as kube-apiserver 1.32's printers compute them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from apiserver import printers
from apiserver.registry.groups import builtin_resources
from machinery.api import kinds

_PRINTERS = {r.info: r.printer for r in builtin_resources()}
NOW = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
CREATED = (NOW - timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M:%SZ")


def table(ri: kinds.ResourceInfo[Any], obj: dict[str, Any]) -> tuple[list[str], list[Any]]:
    obj = {**obj, "metadata": {"name": "x", "namespace": "default", "creationTimestamp": CREATED,
                               **obj.get("metadata", {})}}
    body = printers.table_for(_PRINTERS.get(ri), [obj], now=NOW)
    return [c["name"] for c in body["columnDefinitions"]], body["rows"][0]["cells"]


@pytest.mark.parametrize(("ri", "obj", "columns", "cells"), [
    pytest.param(kinds.CONFIG_MAPS, {"data": {"a": "1", "b": "2"}, "binaryData": {"c": "Mw=="}},
                 ["Name", "Data", "Age"], ["x", 3, "5m"], id="configmap"),
    pytest.param(kinds.SECRETS, {"type": "kubernetes.io/tls", "data": {"tls.crt": "", "tls.key": ""}},
                 ["Name", "Type", "Data", "Age"], ["x", "kubernetes.io/tls", 2, "5m"], id="secret"),
    pytest.param(kinds.SERVICE_ACCOUNTS, {"secrets": [{"name": "t"}]}, ["Name", "Secrets", "Age"], ["x", 1, "5m"],
                 id="serviceaccount"),
    pytest.param(kinds.ENDPOINTS, {"subsets": [{"addresses": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}],
                                                "ports": [{"port": 80}, {"port": 443}]}]},
                 ["Name", "Endpoints", "Age"], ["x", "10.0.0.1:80,10.0.0.2:80,10.0.0.1:443 + 1 more...", "5m"],
                 id="endpoints-more"),
    pytest.param(kinds.ENDPOINTS, {"subsets": [{"addresses": [{"ip": "fd00::1"}], "ports": [{"port": 80}]}]},
                 ["Name", "Endpoints", "Age"], ["x", "[fd00::1]:80", "5m"], id="endpoints-ipv6"),
    pytest.param(kinds.ENDPOINTS, {"subsets": [{"addresses": [{"ip": "10.0.0.1"}]}]},
                 ["Name", "Endpoints", "Age"], ["x", "10.0.0.1", "5m"], id="endpoints-headless"),
    pytest.param(kinds.ENDPOINTS, {}, ["Name", "Endpoints", "Age"], ["x", "<none>", "5m"], id="endpoints-none"),
    pytest.param(kinds.POD_TEMPLATES, {"template": {"metadata": {"labels": {"b": "2", "a": "1"}}, "spec": {
        "containers": [{"name": "app", "image": "nginx"}, {"name": "side", "image": "busybox"}]}}},
                 ["Name", "Containers", "Images", "Pod Labels"], ["x", "app,side", "nginx,busybox", "a=1,b=2"],
                 id="podtemplate"),
    pytest.param(kinds.RESOURCE_QUOTAS, {"status": {
        "hard": {"pods": "10", "limits.memory": "2Gi", "requests.cpu": "4"},
        "used": {"pods": "3", "requests.cpu": "1500m"}}},
                 ["Name", "Request", "Limit", "Age"],
                 ["x", "pods: 3/10, requests.cpu: 1500m/4", "limits.memory: 0/2Gi", "5m"], id="resourcequota"),
    pytest.param(kinds.LIMIT_RANGES, {}, ["Name", "Created At"], ["x", CREATED], id="limitrange-default-printer"),
    pytest.param(kinds.PERSISTENT_VOLUMES, {
        "metadata": {"annotations": {"volume.beta.kubernetes.io/storage-class": "old"}},
        "spec": {"capacity": {"storage": "1536Mi"}, "accessModes": ["ReadWriteMany", "ReadWriteOnce"],
                 "persistentVolumeReclaimPolicy": "Retain", "claimRef": {"namespace": "ns", "name": "data"},
                 "storageClassName": "standard", "volumeMode": "Filesystem"},
        "status": {"phase": "Bound"}},
                 ["Name", "Capacity", "Access Modes", "Reclaim Policy", "Status", "Claim", "StorageClass",
                  "VolumeAttributesClass", "Reason", "Age", "VolumeMode"],
                 ["x", "1536Mi", "RWO,RWX", "Retain", "Bound", "ns/data", "old", "<unset>", "", "5m", "Filesystem"],
                 id="persistentvolume"),
    pytest.param(kinds.PERSISTENT_VOLUME_CLAIMS, {
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
                 "storageClassName": "standard"},
        "status": {"phase": "Pending"}},
                 ["Name", "Status", "Volume", "Capacity", "Access Modes", "StorageClass", "VolumeAttributesClass",
                  "Age", "VolumeMode"],
                 ["x", "Pending", "", "", "", "standard", "<unset>", "5m", "<unset>"], id="pvc-pending"),
    pytest.param(kinds.PERSISTENT_VOLUME_CLAIMS, {
        "metadata": {"deletionTimestamp": CREATED},
        "spec": {"volumeName": "pv1", "volumeMode": "Block"},
        "status": {"phase": "Bound", "accessModes": ["ReadWriteOncePod"], "capacity": {"storage": "2Gi"}}},
                 ["Name", "Status", "Volume", "Capacity", "Access Modes", "StorageClass", "VolumeAttributesClass",
                  "Age", "VolumeMode"],
                 ["x", "Terminating", "pv1", "2Gi", "RWOP", "", "<unset>", "5m", "Block"], id="pvc-bound-deleting"),
])
def test_core_tables(ri: kinds.ResourceInfo[Any], obj: dict[str, Any], columns: list[str], cells: list[Any]) -> None:
    assert table(ri, obj) == (columns, cells)


def test_wide_columns_are_priority_one() -> None:
    body = printers.table_for(_PRINTERS[kinds.PERSISTENT_VOLUMES], [], now=NOW)
    assert [c["name"] for c in body["columnDefinitions"] if c["priority"] == 1] == ["VolumeMode"]
    # Descriptions come from the OpenAPI definitions, as Kubernetes' SwaggerDoc() does.
    capacity = next(c for c in body["columnDefinitions"] if c["name"] == "Capacity")
    assert capacity["description"].startswith("capacity is the description of the persistent volume's resources")


SVC_COLUMNS = ["Name", "Type", "Cluster-IP", "External-IP", "Port(s)", "Age", "Selector"]


@pytest.mark.parametrize(("spec", "status", "cells"), [
    pytest.param({"type": "ClusterIP", "clusterIPs": ["10.96.0.10"], "selector": {"app": "web", "a": "b"},
                  "ports": [{"port": 80, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}]}, {},
                 ["ClusterIP", "10.96.0.10", "<none>", "80/TCP,53/UDP", "5m", "a=b,app=web"], id="clusterip"),
    pytest.param({"type": "ClusterIP", "clusterIP": "None", "clusterIPs": ["None"]}, {},
                 ["ClusterIP", "None", "<none>", "<none>", "5m", "<none>"], id="headless"),
    pytest.param({"type": "NodePort", "clusterIPs": ["10.96.0.11"], "externalIPs": ["203.0.113.5"],
                  "ports": [{"port": 80, "nodePort": 30080, "protocol": "TCP"}]}, {},
                 ["NodePort", "10.96.0.11", "203.0.113.5", "80:30080/TCP", "5m", "<none>"], id="nodeport"),
    pytest.param({"type": "LoadBalancer", "clusterIPs": ["10.96.0.12"],
                  "ports": [{"port": 443, "nodePort": 31443, "protocol": "TCP"}]}, {"loadBalancer": {}},
                 ["LoadBalancer", "10.96.0.12", "<pending>", "443:31443/TCP", "5m", "<none>"], id="lb-pending"),
    pytest.param({"type": "LoadBalancer", "clusterIPs": ["10.96.0.12"], "externalIPs": ["198.51.100.1"]},
                 {"loadBalancer": {"ingress": [{"ip": "203.0.113.20"}, {"hostname": "lb.example.com"}]}},
                 ["LoadBalancer", "10.96.0.12", "203.0.113.20,...,198.51.100.1", "<none>", "5m", "<none>"],
                 id="lb-ingress-cut-to-16"),
    pytest.param({"type": "ExternalName", "externalName": "db.example.com"}, {},
                 ["ExternalName", "<none>", "db.example.com", "<none>", "5m", "<none>"], id="externalname"),
])
def test_service_table(spec: dict[str, Any], status: dict[str, Any], cells: list[Any]) -> None:
    assert table(kinds.SERVICES, {"spec": spec, "status": status}) == (SVC_COLUMNS, ["x", *cells])


CS_COLUMNS = ["Name", "Status", "Message", "Error"]


@pytest.mark.parametrize(("conditions", "cells"), [
    pytest.param([{"type": "Healthy", "status": "True", "message": "ok"}], ["Healthy", "ok", ""], id="healthy"),
    pytest.param([{"type": "Healthy", "status": "False",
                   "message": 'Get "https://127.0.0.1:10259/healthz": connection refused'}],
                 ["Unhealthy", 'Get "https://127.0.0.1:10259/healthz": connection refused', ""],
                 id="probe-failed"),
    pytest.param([{"type": "Healthy", "status": "Unknown", "error": "timeout"}], ["Unhealthy", "", "timeout"],
                 id="unknown-is-unhealthy"),
    pytest.param([{"type": "Other", "status": "True"}], ["Unknown", "", ""], id="no-healthy-condition"),
    pytest.param([], ["Unknown", "", ""], id="no-conditions"),
])
def test_componentstatus_table(conditions: list[dict[str, Any]], cells: list[Any]) -> None:
    """``printComponentStatus``: the first Healthy condition decides, Unknown when there is none."""
    ri = kinds.builtin("", "v1", "componentstatuses")
    assert table(ri, {"conditions": conditions}) == (CS_COLUMNS, ["x", *cells])
