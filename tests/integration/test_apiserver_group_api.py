"""The non-core groups against a real APIServer and etcd: PDB-guarded eviction, the default StorageClass,
CSR approval, immutable fields and field selectors over HTTP."""

from __future__ import annotations

import base64
from typing import Any

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests import harness

pytestmark = pytest.mark.integration

MERGE = {"Content-Type": "application/merge-patch+json"}


def make_pod(api: httpx.Client, namespace: str, name: str, *, ready: bool, labels: dict[str, str] | None = None) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels or {"app": "web"}},
           "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}}
    r = api.post(f"/api/v1/namespaces/{namespace}/pods", json=pod)
    assert r.status_code == 201, r.text
    status = {"status": {"phase": "Running", "conditions": [
        {"type": "Ready", "status": "True" if ready else "False"}]}}
    r = api.patch(f"/api/v1/namespaces/{namespace}/pods/{name}/status", json=status, headers=MERGE)
    assert r.status_code == 200, r.text


def evict(api: httpx.Client, namespace: str, name: str) -> httpx.Response:
    return api.post(f"/api/v1/namespaces/{namespace}/pods/{name}/eviction",
                    json={"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name}})


def pdb_path(namespace: str, name: str = "web") -> str:
    return f"/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets/{name}"


def make_pdb(api: httpx.Client, namespace: str, name: str = "web", **status: Any) -> None:
    pdb = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name},
           "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}}
    r = api.post(f"/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets", json=pdb)
    assert r.status_code == 201, r.text
    if status:
        set_pdb_status(api, namespace, name, **status)


def set_pdb_status(api: httpx.Client, namespace: str, name: str = "web", **status: Any) -> None:
    r = api.patch(pdb_path(namespace, name) + "/status", json={"status": {"observedGeneration": 1, **status}},
                  headers=MERGE)
    assert r.status_code == 200, r.text


def test_eviction_waits_for_the_disruption_budget(api: httpx.Client, namespace: str) -> None:
    make_pod(api, namespace, "web-1", ready=True)
    make_pdb(api, namespace)
    # The disruption controller has not looked at the budget yet.
    r = evict(api, namespace, "web-1")
    assert r.status_code == 429, r.text
    assert r.headers["Retry-After"] == "10"
    assert r.json()["details"]["causes"] == [{"reason": "DisruptionBudget", "message": (
        "The disruption budget web is still being processed by the server.")}]
    # It has, and allows no disruption: 429 with Kubernetes' message, which kubectl drain retries on.
    set_pdb_status(api, namespace, disruptionsAllowed=0, currentHealthy=1, desiredHealthy=1, expectedPods=1)
    r = evict(api, namespace, "web-1")
    assert r.status_code == 429, r.text
    body = r.json()
    assert (body["reason"], body["message"]) == ("TooManyRequests",
                                                 "Cannot evict pod as it would violate the pod's disruption budget.")
    assert body["details"]["causes"] == [{"reason": "DisruptionBudget",
                                          "message": "The disruption budget web needs 1 healthy pods and has 1 "
                                                     "currently"}]
    assert "Retry-After" not in r.headers
    assert api.get(f"/api/v1/namespaces/{namespace}/pods/web-1").status_code == 200
    # Once the budget allows one disruption, the eviction spends it.
    set_pdb_status(api, namespace, disruptionsAllowed=1, currentHealthy=2, desiredHealthy=1, expectedPods=2)
    r = evict(api, namespace, "web-1")
    assert r.status_code == 201, r.text
    assert r.json()["status"] == "Success"
    assert api.get(f"/api/v1/namespaces/{namespace}/pods/web-1").status_code == 404
    status = api.get(pdb_path(namespace)).json()["status"]
    assert status["disruptionsAllowed"] == 0
    assert set(status["disruptedPods"]) == {"web-1"}
    condition = next(c for c in status["conditions"] if c["type"] == "DisruptionAllowed")
    assert (condition["status"], condition["reason"]) == ("False", "InsufficientPods")


def test_a_dry_run_eviction_spends_nothing(api: httpx.Client, namespace: str) -> None:
    make_pod(api, namespace, "web-1", ready=True)
    make_pdb(api, namespace, disruptionsAllowed=1, currentHealthy=2, desiredHealthy=1, expectedPods=2)
    r = api.post(f"/api/v1/namespaces/{namespace}/pods/web-1/eviction", params={"dryRun": "All"},
                 json={"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "web-1"}})
    assert r.status_code == 201, r.text
    assert api.get(f"/api/v1/namespaces/{namespace}/pods/web-1").status_code == 200
    assert api.get(pdb_path(namespace)).json()["status"]["disruptionsAllowed"] == 1


def test_an_unready_pod_goes_when_the_budget_is_healthy_without_spending_it(api: httpx.Client,
                                                                          namespace: str) -> None:
    make_pod(api, namespace, "web-1", ready=False)
    make_pdb(api, namespace, disruptionsAllowed=0, currentHealthy=2, desiredHealthy=2, expectedPods=3)
    r = evict(api, namespace, "web-1")
    assert r.status_code == 201, r.text
    assert api.get(f"/api/v1/namespaces/{namespace}/pods/web-1").status_code == 404
    assert "disruptedPods" not in api.get(pdb_path(namespace)).json()["status"]


def test_pods_that_disrupt_nothing_and_pods_with_two_budgets(api: httpx.Client, namespace: str) -> None:
    make_pdb(api, namespace, disruptionsAllowed=0, currentHealthy=1, desiredHealthy=1, expectedPods=1)
    # A Pending Pod causes no disruption: the budget is not consulted.
    pending = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "pending", "labels": {"app": "web"}},
               "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}}
    assert api.post(f"/api/v1/namespaces/{namespace}/pods", json=pending).status_code == 201
    assert evict(api, namespace, "pending").status_code == 201
    make_pod(api, namespace, "web-2", ready=True)
    make_pdb(api, namespace, "web-too", disruptionsAllowed=5, currentHealthy=1, desiredHealthy=1, expectedPods=1)
    r = evict(api, namespace, "web-2")
    assert r.status_code == 500, r.text
    assert r.json()["message"] == ("This pod has more than one PodDisruptionBudget, which the eviction subresource "
                                   "does not support.")
    r = api.post(f"/api/v1/namespaces/{namespace}/pods/web-2/eviction",
                 json={"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "other"}})
    assert r.status_code == 400 and r.json()["message"] == "name in URL does not match name in Eviction object"


def test_the_default_storage_class_exists_from_the_first_start(api: httpx.Client) -> None:
    # The APIServer creates it in the background once etcd answers.
    harness.wait_for(lambda: api.get("/apis/storage.k8s.io/v1/storageclasses/standard").status_code == 200)
    r = api.get("/apis/storage.k8s.io/v1/storageclasses/standard")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["metadata"]["annotations"] == {"storageclass.kubernetes.io/is-default-class": "true"}
    assert (body["reclaimPolicy"], body["volumeBindingMode"]) == ("Delete", "Immediate")
    table = api.get("/apis/storage.k8s.io/v1/storageclasses",
                    headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}).json()
    assert "standard (default)" in {row["cells"][0] for row in table["rows"]}


def csr_request() -> str:
    key = ec.generate_private_key(ec.SECP256R1())
    request = x509.CertificateSigningRequestBuilder().subject_name(
        x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "jane")])).sign(key, hashes.SHA256())
    return base64.b64encode(request.public_bytes(serialization.Encoding.PEM)).decode()


def test_certificate_signing_request_approval(api: httpx.Client) -> None:
    name = f"jane-{id(api)}"
    csr = {"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest", "metadata": {"name": name},
           "spec": {"request": csr_request(), "signerName": "kubernetes.io/kube-apiserver-client",
                    "usages": ["client auth"], "expirationSeconds": 86400}}
    path = f"/apis/certificates.k8s.io/v1/certificatesigningrequests/{name}"
    r = api.post("/apis/certificates.k8s.io/v1/certificatesigningrequests", json=csr)
    assert r.status_code == 201, r.text
    try:
        current = r.json()
        # The main endpoint does not approve.
        sneaky = {**current, "status": {"conditions": [{"type": "Approved", "status": "True"}]}}
        assert api.put(path, json=sneaky).json()["status"].get("conditions") is None
        approved = {**current, "status": {"conditions": [{
            "type": "Approved", "status": "True", "reason": "KubectlApprove",
            "message": "This CSR was approved by kubectl certificate approve."}]}}
        r = api.put(path + "/approval", json=approved)
        assert r.status_code == 200, r.text
        condition = r.json()["status"]["conditions"][0]
        assert condition["type"] == "Approved" and condition["lastUpdateTime"] and condition["lastTransitionTime"]
        # Approved and Denied are exclusive, and an approval cannot be taken back.
        both = r.json()
        both["status"]["conditions"].append({"type": "Denied", "status": "True"})
        r = api.put(path + "/approval", json=both)
        assert r.status_code == 422
        assert "Approved and Denied conditions are mutually exclusive" in r.json()["message"]
        removed = api.get(path).json()
        removed["status"]["conditions"] = []
        r = api.put(path + "/approval", json=removed)
        assert r.status_code == 422 and 'updates may not remove a condition of type "Approved"' in r.json()["message"]
        table = api.get(path, headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}).json()
        assert table["rows"][0]["cells"][5] == "Approved"
    finally:
        api.delete(path)


def test_immutable_selector_and_job_field_selector_over_http(api: httpx.Client, namespace: str) -> None:
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                  "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "web"}}, "template": {
                      "metadata": {"labels": {"app": "web"}},
                      "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}}}}
    base = f"/apis/apps/v1/namespaces/{namespace}/deployments"
    created = api.post(base, json=deployment)
    assert created.status_code == 201, created.text
    assert created.json()["spec"]["strategy"]["rollingUpdate"] == {"maxUnavailable": "25%", "maxSurge": "25%"}
    r = api.patch(f"{base}/web", headers=MERGE, json={"spec": {
        "selector": {"matchLabels": {"app": "web", "tier": "front"}},
        "template": {"metadata": {"labels": {"tier": "front"}}}}})
    assert r.status_code == 422, r.text
    assert r.json()["details"]["causes"] == [{
        "reason": "FieldValueInvalid", "field": "spec.selector",
        "message": 'Invalid value: {"matchLabels":{"app":"web","tier":"front"}}: field is immutable'}]
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "pi"}, "spec": {"suspend": True, "template": {
        "spec": {"restartPolicy": "Never", "containers": [{"name": "pi", "image": "perl"}]}}}}
    jobs = f"/apis/batch/v1/namespaces/{namespace}/jobs"
    r = api.post(jobs, json=job)
    assert r.status_code == 201, r.text
    uid = r.json()["metadata"]["uid"]
    assert r.json()["spec"]["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    assert [j["metadata"]["name"] for j in api.get(jobs, params={"fieldSelector": "status.successful=0"})
            .json()["items"]] == ["pi"]
    assert api.get(jobs, params={"fieldSelector": "status.successful=1"}).json()["items"] == []


def test_a_job_deleted_without_a_policy_keeps_its_pods_and_says_so(api: httpx.Client, namespace: str) -> None:
    jobs = f"/apis/batch/v1/namespaces/{namespace}/jobs"
    template = {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}
    for name in ("orphaning", "background"):
        r = api.post(jobs, json={"metadata": {"name": name}, "spec": {"template": template}})
        assert r.status_code == 201, r.text
    warning = ('299 - "child pods are preserved by default when jobs are deleted; set propagationPolicy=Background '
               'to remove them or set propagationPolicy=Orphan to suppress this warning"')
    r = api.delete(f"{jobs}/orphaning")
    assert r.status_code == 200 and r.headers.get("Warning") == warning, (r.headers, r.text)
    # batch/v1's default is to orphan: the garbage collector (not running here) has the finalizer to handle.
    job = api.get(f"{jobs}/orphaning").json()
    assert job["metadata"]["finalizers"] == ["orphan"] and job["metadata"]["deletionTimestamp"]
    r = api.request("DELETE", f"{jobs}/background", json={"propagationPolicy": "Background"})
    assert r.status_code == 200 and "Warning" not in r.headers
    assert api.get(f"{jobs}/background").status_code == 404
