"""Every kind Kubernetes 1.32 stores is stored, read, listed, watched, patched and deleted like Pods are.

The objects are ``tests/data/every-kind.yaml``: one of each kind, valid by
Kubernetes' validation. Kinds whose controllers kubesim does not run yet are
still kept exactly as written.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from machinery.api import kinds

pytestmark = pytest.mark.integration

DOCUMENTS: list[dict[str, Any]] = list(yaml.safe_load_all((Path(__file__).parent.parent / "data" /
                                                           "every-kind.yaml").read_text()))


def info_of(doc: dict[str, Any]) -> kinds.ResourceInfo[Any]:
    info = kinds.for_kind(doc["apiVersion"], doc["kind"])
    assert info is not None, doc["kind"]
    return info


def test_the_file_holds_every_stored_builtin_kind() -> None:
    stored = {(r.group, r.kind) for r in kinds.RESOURCES if "watch" in r.verbs}
    written = {(info_of(d).group, d["kind"]) for d in DOCUMENTS}
    # events.k8s.io Events are core Events (tested below); Pods, Nodes and Namespaces have tests of
    # their own; a CertificateSigningRequest needs a real signed request, made where it is tested.
    assert stored - written == {("events.k8s.io", "Event"), ("", "Pod"), ("", "Node"), ("", "Namespace"),
                                ("certificates.k8s.io", "CertificateSigningRequest")}
    assert written <= stored


@pytest.mark.parametrize("doc", DOCUMENTS, ids=lambda d: f"{d['apiVersion']}/{d['kind']}")
def test_crud_and_watch(api: httpx.Client, namespace: str, doc: dict[str, Any]) -> None:
    info = info_of(doc)
    ns = namespace if info.namespaced else None
    name = doc["metadata"]["name"]
    if doc["kind"] == "Event":
        # An Event is about an object of its own namespace.
        doc = {**doc, "involvedObject": {**doc["involvedObject"], "namespace": ns}}
    collection = info.path(ns)
    r = api.post(collection, json=doc)
    assert r.status_code == 201, r.text
    created = r.json()
    assert (created["kind"], created["apiVersion"], created["metadata"]["name"]) == (doc["kind"],
                                                                                      doc["apiVersion"], name)
    try:
        got = api.get(info.path(ns, name))
        assert got.status_code == 200 and got.json()["metadata"]["uid"] == created["metadata"]["uid"]
        listed = api.get(collection)
        assert listed.status_code == 200
        body = listed.json()
        assert body["kind"] == f"{doc['kind']}List"
        assert name in {i["metadata"]["name"] for i in body["items"]}
        rv = body["metadata"]["resourceVersion"]
        with api.stream("GET", collection, params={"watch": "true", "resourceVersion": rv,
                                                   "timeoutSeconds": "10"}) as watch:
            patched = api.patch(info.path(ns, name), json={"metadata": {"labels": {"every": "kind"}}},
                                headers={"Content-Type": "application/merge-patch+json"})
            assert patched.status_code == 200, patched.text
            assert patched.json()["metadata"]["labels"]["every"] == "kind"
            for line in watch.iter_lines():
                event = json.loads(line)
                if event["object"]["metadata"]["name"] == name:
                    assert event["type"] == "MODIFIED"
                    # Another writer may come first (the availability controller writes an APIService's
                    # status): the patch is the event that carries the label.
                    if (event["object"]["metadata"].get("labels") or {}).get("every") == "kind":
                        break
            else:
                raise AssertionError("no MODIFIED event carried the patch")
        table = api.get(info.path(ns, name), headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"})
        assert table.json()["kind"] == "Table" and table.json()["rows"][0]["cells"]
    finally:
        deleted = api.delete(info.path(ns, name))
        assert deleted.status_code in (200, 202), deleted.text
    after = api.get(info.path(ns, name))
    # Gone, or (for kinds protected by finalizers, such as PVCs in use) marked for deletion.
    assert after.status_code == 404 or after.json()["metadata"].get("deletionTimestamp"), after.text


def test_events_are_served_in_both_groups(api: httpx.Client, namespace: str) -> None:
    core = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "both"},
            "involvedObject": {"kind": "Pod", "name": "p", "namespace": namespace}, "reason": "Seen",
            "message": "in core", "type": "Normal", "source": {"component": "test"}}
    assert api.post(f"/api/v1/namespaces/{namespace}/events", json=core).status_code == 201
    new = api.get(f"/apis/events.k8s.io/v1/namespaces/{namespace}/events/both")
    assert new.status_code == 200, new.text
    body = new.json()
    assert (body["apiVersion"], body["note"], body["regarding"]["name"]) == ("events.k8s.io/v1", "in core", "p")
    assert body["deprecatedSource"] == {"component": "test"}
    merge = {"Content-Type": "application/merge-patch+json"}
    # What an event reports does not change through events.k8s.io/v1 (Kubernetes' ValidateEventUpdate)...
    refused = api.patch(f"/apis/events.k8s.io/v1/namespaces/{namespace}/events/both", json={"note": "changed"},
                        headers=merge)
    assert refused.status_code == 422, refused.text
    assert refused.json()["details"]["causes"] == [
        {"reason": "FieldValueInvalid", "message": 'Invalid value: "changed": field is immutable', "field": "message"}]
    # ...its metadata does, and core/v1 keeps its legacy rules.
    patched = api.patch(f"/apis/events.k8s.io/v1/namespaces/{namespace}/events/both",
                        json={"metadata": {"labels": {"seen": "twice"}}}, headers=merge)
    assert patched.status_code == 200, patched.text
    assert patched.json()["metadata"]["labels"] == {"seen": "twice"}
    assert api.patch(f"/api/v1/namespaces/{namespace}/events/both", json={"message": "changed"},
                     headers=merge).status_code == 200
    assert api.get(f"/apis/events.k8s.io/v1/namespaces/{namespace}/events/both").json()["note"] == "changed"


def test_events_k8s_io_creates_are_validated_strictly(api: httpx.Client, namespace: str) -> None:
    legacy = {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "old-style"},
              "regarding": {"kind": "Pod", "name": "p", "namespace": namespace}, "reason": "Seen", "note": "n",
              "type": "Normal", "deprecatedSource": {"component": "test"}}
    r = api.post(f"/apis/events.k8s.io/v1/namespaces/{namespace}/events", json=legacy)
    assert r.status_code == 422, r.text
    fields = {c["field"] for c in r.json()["details"]["causes"]}
    assert fields == {"eventTime", "source"}
    new = {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "new-style"},
           "regarding": {"kind": "Pod", "name": "p", "namespace": namespace}, "reason": "Seen", "note": "n",
           "type": "Normal", "eventTime": "2024-05-01T12:00:00.000000Z", "action": "Looked",
           "reportingController": "example.com/tester", "reportingInstance": "tester-1"}
    r = api.post(f"/apis/events.k8s.io/v1/namespaces/{namespace}/events", json=new)
    assert r.status_code == 201, r.text
    missing = {k: v for k, v in new.items() if k != "reportingInstance"} | {"metadata": {"name": "no-instance"}}
    r = api.post(f"/apis/events.k8s.io/v1/namespaces/{namespace}/events", json=missing)
    assert r.status_code == 422 and "reportingInstance: Required value" in r.json()["message"], r.text


def test_hpas_are_served_in_both_versions(api: httpx.Client, namespace: str) -> None:
    v1 = {"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "web"},
          "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                   "minReplicas": 1, "maxReplicas": 5, "targetCPUUtilizationPercentage": 60}}
    r = api.post(f"/apis/autoscaling/v1/namespaces/{namespace}/horizontalpodautoscalers", json=v1)
    assert r.status_code == 201, r.text
    assert r.json()["spec"]["targetCPUUtilizationPercentage"] == 60
    v2 = api.get(f"/apis/autoscaling/v2/namespaces/{namespace}/horizontalpodautoscalers/web").json()
    assert v2["spec"]["metrics"] == [{"type": "Resource", "resource": {
        "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}}}]
