"""core/v1 kinds through the APIServer: Secrets' and ConfigMaps' wire rules, immutability, selectors, watches."""

from __future__ import annotations

import base64
import json
from typing import Any

import httpx
import pytest

from tests import harness

pytestmark = pytest.mark.integration

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
MERGE = {"Content-Type": "application/merge-patch+json"}


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def obj(kind: str, name: str, **fields: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": kind, "metadata": {"name": name}, **fields}


def test_secret_data_must_be_base64_and_string_data_is_folded_in(api: httpx.Client, namespace: str) -> None:
    secrets = f"/api/v1/namespaces/{namespace}/secrets"
    bad = api.post(secrets, json=obj("Secret", "bad", data={"username": "admin"}))
    assert bad.status_code == 400
    assert bad.json()["reason"] == "BadRequest"
    assert bad.json()["message"] == ('Secret in version "v1" cannot be handled as a Secret: illegal base64 data at '
                                     "input byte 4")
    assert api.get(f"{secrets}/bad").status_code == 404
    created = api.post(secrets, json=obj("Secret", "creds", data={"username": b64("old")},
                                         stringData={"username": "admin", "password": "s3cret"}))
    assert created.status_code == 201, created.text
    body = created.json()
    assert body["type"] == "Opaque" and "stringData" not in body
    assert body["data"] == {"username": b64("admin"), "password": b64("s3cret")}
    stored = api.get(f"{secrets}/creds").json()
    assert "stringData" not in stored and stored["data"] == body["data"]
    # A patch of stringData lands in data too.
    patched = api.patch(f"{secrets}/creds", json={"stringData": {"token": "t"}}, headers=MERGE)
    assert patched.status_code == 200, patched.text
    assert patched.json()["data"]["token"] == b64("t") and "stringData" not in patched.json()
    # A bad value in a patch is refused the same way, and nothing is stored.
    refused = api.patch(f"{secrets}/creds", json={"data": {"token": "!"}}, headers=MERGE)
    assert refused.status_code == 400
    assert api.get(f"{secrets}/creds").json()["data"]["token"] == b64("t")


def test_secret_type_is_immutable_and_selectable(api: httpx.Client, namespace: str) -> None:
    secrets = f"/api/v1/namespaces/{namespace}/secrets"
    tls = obj("Secret", "tls", type="kubernetes.io/tls", data={"tls.crt": b64("c"), "tls.key": b64("k")})
    assert api.post(secrets, json=tls).status_code == 201
    assert api.post(secrets, json=obj("Secret", "plain", data={"a": b64("1")})).status_code == 201
    missing = api.post(secrets, json=obj("Secret", "half", type="kubernetes.io/tls", data={"tls.crt": b64("c")}))
    assert missing.status_code == 422
    assert missing.json()["message"] == 'Secret "half" is invalid: data[tls.key]: Required value'
    changed = api.patch(f"{secrets}/plain", json={"type": "kubernetes.io/basic-auth"}, headers=MERGE)
    assert changed.status_code == 422
    # The new type's keys are then required too, as Kubernetes validates the new Secret whole.
    assert changed.json()["details"]["causes"][0] == {"reason": "FieldValueInvalid", "field": "type",
                                                      "message": 'Invalid value: "kubernetes.io/basic-auth": field is '
                                                                 "immutable"}
    selected = api.get(secrets, params={"fieldSelector": "type=kubernetes.io/tls"}).json()["items"]
    assert [s["metadata"]["name"] for s in selected] == ["tls"]
    table = api.get(secrets, headers={"Accept": TABLE}).json()
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Type", "Data", "Age"]
    assert sorted(r["cells"][:3] for r in table["rows"]) == [["plain", "Opaque", 1], ["tls", "kubernetes.io/tls", 2]]


def test_immutable_config_maps(api: httpx.Client, namespace: str) -> None:
    cms = f"/api/v1/namespaces/{namespace}/configmaps"
    assert api.post(cms, json=obj("ConfigMap", "frozen", data={"a": "1"}, binaryData={"b": b64("2")},
                                  immutable=True)).status_code == 201
    changed = api.patch(f"{cms}/frozen", json={"data": {"a": "2"}}, headers=MERGE)
    assert changed.status_code == 422
    assert changed.json()["message"] == ('ConfigMap "frozen" is invalid: data: Forbidden: field is immutable when '
                                         "`immutable` is set")
    # Labels may still change.
    assert api.patch(f"{cms}/frozen", json={"metadata": {"labels": {"x": "y"}}}, headers=MERGE).status_code == 200
    bad_key = api.post(cms, json=obj("ConfigMap", "keys", data={"a/b": "1"}))
    assert bad_key.status_code == 422 and 'data[a/b]: Invalid value: "a/b"' in bad_key.json()["message"]
    bad_binary = api.post(cms, json=obj("ConfigMap", "bin", binaryData={"k": "not base64"}))
    assert bad_binary.status_code == 400
    table = api.get(f"{cms}/frozen", headers={"Accept": TABLE}).json()
    assert table["rows"][0]["cells"][:2] == ["frozen", 2]


def test_claims_are_immutable_but_for_their_size(api: httpx.Client, namespace: str) -> None:
    pvcs = f"/api/v1/namespaces/{namespace}/persistentvolumeclaims"
    claim = obj("PersistentVolumeClaim", "data", spec={"accessModes": ["ReadWriteOnce"],
                                                       "resources": {"requests": {"storage": "1Gi"}}})
    created = api.post(pvcs, json=claim)
    assert created.status_code == 201, created.text
    assert created.json()["status"] == {"phase": "Pending"}
    assert created.json()["spec"]["volumeMode"] == "Filesystem"
    changed = api.patch(f"{pvcs}/data", json={"spec": {"accessModes": ["ReadWriteMany"]}}, headers=MERGE)
    assert changed.status_code == 422
    message = changed.json()["message"]
    assert message.startswith('PersistentVolumeClaim "data" is invalid: spec: Forbidden: spec is immutable after '
                              "creation except resources.requests and volumeAttributesClassName for bound claims")
    # Bound (through /status, as the binder does), the claim may grow.
    bound = api.patch(f"{pvcs}/data/status", json={"status": {"phase": "Bound"}}, headers=MERGE)
    assert bound.status_code == 200, bound.text
    grown = api.patch(f"{pvcs}/data", json={"spec": {"resources": {"requests": {"storage": "2Gi"}}}}, headers=MERGE)
    assert grown.status_code == 200, grown.text
    shrunk = api.patch(f"{pvcs}/data", json={"spec": {"resources": {"requests": {"storage": "1Gi"}}}},
                       headers=MERGE)
    assert shrunk.status_code == 422
    assert "spec.resources.requests.storage: Forbidden: field can not be less than previous value" in \
        shrunk.json()["message"]


def test_quota_status_is_written_through_its_subresource(api: httpx.Client, namespace: str) -> None:
    quotas = f"/api/v1/namespaces/{namespace}/resourcequotas"
    quota = obj("ResourceQuota", "q", spec={"hard": {"pods": "10", "requests.cpu": "4"}},
                status={"hard": {"pods": "1"}})
    created = api.post(quotas, json=quota)
    assert created.status_code == 201, created.text
    assert "status" not in created.json() or not created.json()["status"]
    status = {"status": {"hard": {"pods": "10", "requests.cpu": "4"}, "used": {"pods": "3", "requests.cpu": "500m"}}}
    assert api.patch(f"{quotas}/q/status", json=status, headers=MERGE).status_code == 200
    table = api.get(f"{quotas}/q", headers={"Accept": TABLE}).json()
    assert table["rows"][0]["cells"][1:3] == ["pods: 3/10, requests.cpu: 500m/4", ""]
    bad = api.post(quotas, json=obj("ResourceQuota", "bad", spec={"hard": {"pods": "1.5"}}))
    assert bad.status_code == 422 and 'spec.hard[pods]: Invalid value: "1500m": must be an integer' in \
        bad.json()["message"]


def test_services_are_listed_and_watched_in_their_namespace(api: httpx.Client, cluster: harness.Cluster,
                                                           namespace: str) -> None:
    services = f"/api/v1/namespaces/{namespace}/services"
    rv = api.get(services).json()["metadata"]["resourceVersion"]
    with api.stream("GET", services, params={"watch": "true", "resourceVersion": rv, "labelSelector": "app=web",
                                             "timeoutSeconds": "10"}) as watch:
        svc = obj("Service", "web", spec={"selector": {"app": "web"}, "ports": [{"port": 80}]})
        svc["metadata"]["labels"] = {"app": "web"}
        assert api.post(services, json=svc).status_code == 201
        seen = next(json.loads(line) for line in watch.iter_lines() if line)
    assert (seen["type"], seen["object"]["metadata"]["name"]) == ("ADDED", "web")
    listed = api.get(services, params={"labelSelector": "app=web"}).json()["items"]
    assert [s["metadata"]["name"] for s in listed] == ["web"]
    table = api.get(services, headers={"Accept": TABLE}).json()
    cells = table["rows"][0]["cells"]
    assert cells[0:2] == ["web", "ClusterIP"] and cells[3:5] == ["<none>", "80/TCP"]


def _pod(name: str) -> dict[str, Any]:
    return obj("Pod", name, metadata={"name": name, "labels": {"app": name}},
               spec={"containers": [{"name": "main", "image": "nginx:1.25"}]})


def test_ephemeral_containers_are_added_through_their_subresource_only(api: httpx.Client, namespace: str) -> None:
    pods = f"/api/v1/namespaces/{namespace}/pods"
    assert api.post(pods, json=_pod("web")).status_code == 201
    sub = f"{pods}/web/ephemeralcontainers"
    assert api.get(sub).json()["kind"] == "Pod"
    # The main resource refuses them (pod updates may not change other fields).
    current = api.get(f"{pods}/web").json()
    debug = {"name": "debugger", "image": "busybox", "stdin": True, "tty": True,
             "targetContainerName": "main"}
    current["spec"]["ephemeralContainers"] = [debug]
    refused = api.put(f"{pods}/web", json=current)
    assert refused.status_code == 422
    # kubectl debug's request: a strategic merge patch of the list, and other changes are dropped.
    patch = {"metadata": {"labels": {"app": "changed"}},
             "spec": {"ephemeralContainers": [debug], "activeDeadlineSeconds": 5}}
    added = api.patch(sub, json=patch, headers={"Content-Type": "application/strategic-merge-patch+json"})
    assert added.status_code == 200, added.text
    pod = added.json()
    assert pod["metadata"]["labels"] == {"app": "web"}
    assert "activeDeadlineSeconds" not in pod["spec"]
    [container] = pod["spec"]["ephemeralContainers"]
    assert container["name"] == "debugger" and container["targetContainerName"] == "main"
    assert container["imagePullPolicy"] == "Always"
    assert container["terminationMessagePath"] == "/dev/termination-log"
    assert container["terminationMessagePolicy"] == "File"
    # One already there may not change nor go away, with Kubernetes' messages.
    changed = dict(pod)
    changed["spec"] = {**pod["spec"], "ephemeralContainers": [{**container, "image": "alpine"}]}
    denied = api.put(sub, json=changed)
    assert denied.status_code == 422
    cause = denied.json()["details"]["causes"][0]
    assert cause["field"] == "spec.ephemeralContainers"
    assert cause["message"].startswith('Forbidden: existing ephemeral containers "debugger" may not be changed')
    removed = dict(pod)
    removed["spec"] = {**pod["spec"], "ephemeralContainers": []}
    denied = api.put(sub, json=removed)
    assert denied.status_code == 422
    assert denied.json()["details"]["causes"][0]["message"] == (
        'Forbidden: existing ephemeral containers "debugger" may not be removed\n')
    # Ephemeral containers take no ports, and names are unique across all containers (a strategic
    # merge patch puts the new item first, as Kubernetes' does).
    bad = api.patch(sub, json={"spec": {"ephemeralContainers": [
        {"name": "main", "image": "busybox", "ports": [{"containerPort": 80}]}]}},
        headers={"Content-Type": "application/strategic-merge-patch+json"})
    assert bad.status_code == 422
    fields = {c["field"]: c["message"] for c in bad.json()["details"]["causes"]}
    assert fields["spec.ephemeralContainers[0].name"] == 'Duplicate value: "main"'
    assert fields["spec.ephemeralContainers[0].ports"] == "Forbidden: cannot be set for an Ephemeral Container"
    # A PUT of a Pod that does not exist does not create it.
    ghost = _pod("ghost")
    assert api.put(f"{pods}/ghost/ephemeralcontainers", json=ghost).status_code == 404


def test_componentstatuses_answer_as_kube_apiserver_does(api: httpx.Client) -> None:
    listed = api.get("/api/v1/componentstatuses")
    assert listed.status_code == 200
    assert listed.headers["warning"] == '299 - "v1 ComponentStatus is deprecated in v1.19+"'
    by_name = {i["metadata"]["name"]: i["conditions"][0] for i in listed.json()["items"]}
    assert set(by_name) == {"scheduler", "controller-manager", "etcd-0"}
    assert by_name["etcd-0"] == {"type": "Healthy", "status": "True", "message": "ok"}
    # No scheduler runs here: the failed check is the message, as Kubernetes' HTTP probe reports it.
    assert by_name["scheduler"]["status"] == "False" and by_name["scheduler"]["message"]
    assert "error" not in by_name["scheduler"]
    only = api.get("/api/v1/componentstatuses", params={"fieldSelector": "metadata.name=etcd-0"}).json()
    assert [i["metadata"]["name"] for i in only["items"]] == ["etcd-0"]
    assert api.get("/api/v1/componentstatuses", params={"labelSelector": "a=b"}).json()["items"] == []
    # kube-apiserver answers 500 "Component not found: nope" (a plain error); kubesim a NotFound.
    missing = api.get("/api/v1/componentstatuses/nope")
    assert missing.status_code == 404 and missing.json()["reason"] == "NotFound"


def test_namespace_and_node_field_labels(api: httpx.Client, namespace: str) -> None:
    active = api.get("/api/v1/namespaces", params={"fieldSelector": f"status.phase=Active,metadata.name={namespace}"})
    assert [n["metadata"]["name"] for n in active.json()["items"]] == [namespace]
    assert api.get("/api/v1/namespaces", params={"fieldSelector": "status.phase=Terminating,"
                                                                  f"metadata.name={namespace}"}).json()["items"] == []
    for plural in ("namespaces", "nodes"):
        refused = api.get(f"/api/v1/{plural}", params={"fieldSelector": "metadata.namespace=x"})
        assert refused.status_code == 400
        assert refused.json()["message"] == "field label not supported: metadata.namespace"
