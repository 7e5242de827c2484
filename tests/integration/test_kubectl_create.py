"""kubectl 1.32's generators and the commands around them, as a user runs them, against a real APIServer.

Every ``kubectl create <kind>`` generator, ``expose``, ``get all``,
``api-resources`` (row by row against Kubernetes 1.32's list), ``explain``
on a kind of each group, ``apply`` of one object of every kind (twice: the
second time every line says ``unchanged``), ``delete -f``, ``auth can-i``,
``auth whoami`` and ``cluster-info``. Each test reads what kubectl printed
and checks the object in the API. Only the APIServer runs here; commands that
need the scheduler or kubelets are in ``tests/e2e/test_kubectl_versions.py``.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests import harness
from tests.kubectl import Kubectl, binary

pytestmark = [pytest.mark.integration, pytest.mark.kubectl]

EVERY_KIND = Path(__file__).parent.parent / "data" / "every-kind.yaml"


@pytest.fixture
def kubectl(cluster: harness.Cluster, namespace: str, tmp_path: Path) -> Kubectl:
    return Kubectl(binary("1.32"), cluster.url, tmp_path, namespace)


def get(api: httpx.Client, path: str) -> dict[str, Any]:
    r = api.get(path)
    assert r.status_code == 200, f"{path}: {r.status_code} {r.text}"
    body: dict[str, Any] = r.json()
    return body


#: A throwaway self-signed pair (CN example.com, valid for 100 years) for `kubectl create secret tls`.
TLS_CERT = Path(__file__).parent.parent / "data" / "example-tls.crt"
TLS_KEY = Path(__file__).parent.parent / "data" / "example-tls.key"


# --- the generators ------------------------------------------------------------------------------

def test_create_deployment(kubectl: Kubectl, api: httpx.Client, namespace: str) -> None:
    out = kubectl("create", "deployment", "web", "--image=nginx:1.25", "--replicas=0", "--port=80")
    assert out.strip() == "deployment.apps/web created"
    d = get(api, f"/apis/apps/v1/namespaces/{namespace}/deployments/web")
    # replicas: 0 is a pointer the protobuf body carries; it must not become the default 1.
    assert d["spec"]["replicas"] == 0
    assert d["spec"]["selector"] == {"matchLabels": {"app": "web"}}
    [c] = d["spec"]["template"]["spec"]["containers"]
    assert (c["name"], c["image"], c["ports"][0]["containerPort"]) == ("nginx", "nginx:1.25", 80)


def test_generated_deployment_is_defaulted_as_kubernetes_does(kubectl: Kubectl, api: httpx.Client,
                                                              namespace: str) -> None:
    kubectl("create", "deployment", "web", "--image=nginx:1.25", "--port=80")
    spec = get(api, f"/apis/apps/v1/namespaces/{namespace}/deployments/web")["spec"]
    assert spec["replicas"] == 1 and spec["revisionHistoryLimit"] == 10 and spec["progressDeadlineSeconds"] == 600
    assert spec["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}}
    [c] = spec["template"]["spec"]["containers"]
    assert c["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
    assert (c["imagePullPolicy"], c["terminationMessagePolicy"]) == ("IfNotPresent", "File")


def test_create_job_and_cronjob(kubectl: Kubectl, api: httpx.Client, namespace: str) -> None:
    assert kubectl("create", "cronjob", "tick", "--image=busybox", "--schedule=*/5 * * * *", "--",
                   "date").strip() == "cronjob.batch/tick created"
    cj = get(api, f"/apis/batch/v1/namespaces/{namespace}/cronjobs/tick")
    assert cj["spec"]["schedule"] == "*/5 * * * *"
    template = cj["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    assert template["containers"][0]["command"] == ["date"] and template["restartPolicy"] == "OnFailure"
    assert kubectl("create", "job", "once", "--image=busybox", "--", "echo", "hi").strip() == "job.batch/once created"
    job = get(api, f"/apis/batch/v1/namespaces/{namespace}/jobs/once")
    assert job["spec"]["template"]["spec"]["containers"][0]["command"] == ["echo", "hi"]
    assert job["spec"]["template"]["spec"]["restartPolicy"] == "Never"
    assert kubectl("create", "job", "manual", "--from=cronjob/tick").strip() == "job.batch/manual created"
    manual = get(api, f"/apis/batch/v1/namespaces/{namespace}/jobs/manual")
    assert manual["metadata"]["annotations"]["cronjob.kubernetes.io/instantiate"] == "manual"
    [owner] = manual["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"]) == ("CronJob", "tick", cj["metadata"]["uid"])


def test_create_configmap_and_secrets(kubectl: Kubectl, api: httpx.Client, namespace: str, tmp_path: Path) -> None:
    blob = tmp_path / "blob.bin"
    blob.write_bytes(b"\x00\xff\xfe")
    assert kubectl("create", "configmap", "cfg", "--from-literal=a=1", "--from-literal=empty=",
                   f"--from-file={blob}").strip() == "configmap/cfg created"
    cm = get(api, f"/api/v1/namespaces/{namespace}/configmaps/cfg")
    assert cm["data"] == {"a": "1", "empty": ""}
    assert cm["binaryData"] == {"blob.bin": base64.b64encode(b"\x00\xff\xfe").decode()}

    assert kubectl("create", "secret", "generic", "gen", "--from-literal=password=s3cret").strip() == \
        "secret/gen created"
    s = get(api, f"/api/v1/namespaces/{namespace}/secrets/gen")
    assert base64.b64decode(s["data"]["password"]) == b"s3cret"

    assert kubectl("create", "secret", "tls", "tls", f"--cert={TLS_CERT}", f"--key={TLS_KEY}").strip() == \
        "secret/tls created"
    s = get(api, f"/api/v1/namespaces/{namespace}/secrets/tls")
    assert s["type"] == "kubernetes.io/tls"
    assert base64.b64decode(s["data"]["tls.crt"]) == TLS_CERT.read_bytes()

    assert kubectl("create", "secret", "docker-registry", "reg", "--docker-server=registry.example.com",
                   "--docker-username=u", "--docker-password=p").strip() == "secret/reg created"
    s = get(api, f"/api/v1/namespaces/{namespace}/secrets/reg")
    assert s["type"] == "kubernetes.io/dockerconfigjson"
    config = json.loads(base64.b64decode(s["data"][".dockerconfigjson"]))
    assert config["auths"]["registry.example.com"]["username"] == "u"


SERVICES = [
    ("clusterip", ["--tcp=80:8080"], {"type": "ClusterIP"}),
    ("nodeport", ["--tcp=80:8080"], {"type": "NodePort"}),
    ("loadbalancer", ["--tcp=80:8080"], {"type": "LoadBalancer"}),
    ("externalname", ["--external-name=db.example.com"], {"type": "ExternalName", "externalName": "db.example.com"}),
]


def test_generic_secret_is_opaque(kubectl: Kubectl, api: httpx.Client, namespace: str) -> None:
    kubectl("create", "secret", "generic", "untyped", "--from-literal=a=b")
    assert get(api, f"/api/v1/namespaces/{namespace}/secrets/untyped")["type"] == "Opaque"


@pytest.mark.parametrize("kind,args,spec", SERVICES, ids=[s[0] for s in SERVICES])
def test_create_service(kubectl: Kubectl, api: httpx.Client, namespace: str, kind: str, args: list[str],
                        spec: dict[str, Any]) -> None:
    name = f"svc-{kind}"
    assert kubectl("create", "service", kind, name, *args).strip() == f"service/{name} created"
    svc = get(api, f"/api/v1/namespaces/{namespace}/services/{name}")
    assert spec.items() <= svc["spec"].items()
    if kind != "externalname":
        [port] = svc["spec"]["ports"]
        assert (port["name"], port["port"], port["targetPort"], port["protocol"]) == ("80-8080", 80, 8080, "TCP")
        assert svc["spec"]["selector"] == {"app": name}


@pytest.mark.parametrize("kind", ["clusterip", "nodeport", "loadbalancer"])
def test_created_services_get_addresses(kubectl: Kubectl, api: httpx.Client, namespace: str, kind: str) -> None:
    kubectl("create", "service", kind, "addressed", "--tcp=80:8080")
    svc = get(api, f"/api/v1/namespaces/{namespace}/services/addressed")
    assert svc["spec"]["clusterIP"] and svc["spec"]["clusterIP"] != "None"
    assert svc["spec"]["clusterIPs"] == [svc["spec"]["clusterIP"]]
    if kind != "clusterip":
        assert 30000 <= svc["spec"]["ports"][0]["nodePort"] <= 32767


def test_create_serviceaccount_quota_pdb(kubectl: Kubectl, api: httpx.Client, namespace: str) -> None:
    assert kubectl("create", "serviceaccount", "robot").strip() == "serviceaccount/robot created"
    get(api, f"/api/v1/namespaces/{namespace}/serviceaccounts/robot")
    assert kubectl("create", "quota", "q", "--hard=pods=10,cpu=2,memory=1Gi").strip() == \
        "resourcequota/q created"
    quota = get(api, f"/api/v1/namespaces/{namespace}/resourcequotas/q")
    assert quota["spec"]["hard"] == {"pods": "10", "cpu": "2", "memory": "1Gi"}
    assert kubectl("create", "pdb", "guard", "--selector=app=web", "--min-available=1").strip() == \
        "poddisruptionbudget.policy/guard created"
    pdb = get(api, f"/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets/guard")
    assert pdb["spec"]["minAvailable"] == 1 and pdb["spec"]["selector"] == {"matchLabels": {"app": "web"}}


def test_create_token(kubectl: Kubectl, api: httpx.Client, namespace: str) -> None:
    kubectl("create", "serviceaccount", "tokened")
    token = kubectl("create", "token", "tokened", "--duration=10m").strip()
    assert token.count(".") == 2  # a JWT
    # The token authenticates as the ServiceAccount (TokenReview answers from the real authenticator).
    review = api.post("/apis/authentication.k8s.io/v1/tokenreviews", json={
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}}).json()
    assert review["status"]["authenticated"] is True
    assert review["status"]["user"]["username"] == f"system:serviceaccount:{namespace}:tokened"


def test_create_priorityclass(kubectl: Kubectl, api: httpx.Client, namespace: str) -> None:
    name = f"{namespace}-high"
    try:
        assert kubectl("create", "priorityclass", name, "--value=1000", "--description=important",
                       "--preemption-policy=Never").strip() == f"priorityclass.scheduling.k8s.io/{name} created"
        pc = get(api, f"/apis/scheduling.k8s.io/v1/priorityclasses/{name}")
        assert (pc["value"], pc["description"], pc["preemptionPolicy"]) == (1000, "important", "Never")
        # globalDefault: false is a plain bool in Go; the protobuf body writes it and JSON omits it.
        assert pc.get("globalDefault", False) is False
    finally:
        api.delete(f"/apis/scheduling.k8s.io/v1/priorityclasses/{name}")


def test_create_rbac(kubectl: Kubectl, api: httpx.Client, namespace: str) -> None:
    cluster_role, binding = f"{namespace}-reader", f"{namespace}-readers"
    rbac = "/apis/rbac.authorization.k8s.io/v1"
    try:
        assert kubectl("create", "role", "pod-reader", "--verb=get,list,watch", "--resource=pods,pods/log").strip() \
            == "role.rbac.authorization.k8s.io/pod-reader created"
        role = get(api, f"{rbac}/namespaces/{namespace}/roles/pod-reader")
        assert role["rules"] == [{"apiGroups": [""], "resources": ["pods", "pods/log"],
                                  "verbs": ["get", "list", "watch"]}]
        assert kubectl("create", "clusterrole", cluster_role, "--verb=get", "--resource=nodes",
                       "--non-resource-url=/healthz").strip() == \
            f"clusterrole.rbac.authorization.k8s.io/{cluster_role} created"
        cr = get(api, f"{rbac}/clusterroles/{cluster_role}")
        assert {"nonResourceURLs": ["/healthz"], "verbs": ["get"]} in cr["rules"]
        assert kubectl("create", "rolebinding", "readers", "--role=pod-reader", "--user=alice",
                       f"--serviceaccount={namespace}:default").strip() == \
            "rolebinding.rbac.authorization.k8s.io/readers created"
        rb = get(api, f"{rbac}/namespaces/{namespace}/rolebindings/readers")
        assert rb["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pod-reader"}
        assert {"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"} in rb["subjects"]
        assert {"kind": "ServiceAccount", "name": "default", "namespace": namespace} in rb["subjects"]
        assert kubectl("create", "clusterrolebinding", binding, f"--clusterrole={cluster_role}",
                       "--group=devs").strip() == f"clusterrolebinding.rbac.authorization.k8s.io/{binding} created"
        crb = get(api, f"{rbac}/clusterrolebindings/{binding}")
        assert crb["subjects"] == [{"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "devs"}]
    finally:
        api.delete(f"{rbac}/clusterroles/{cluster_role}")
        api.delete(f"{rbac}/clusterrolebindings/{binding}")


def test_create_ingress(kubectl: Kubectl, api: httpx.Client, namespace: str) -> None:
    out = kubectl("create", "ingress", "site", "--class=nginx", "--rule=example.com/api*=api:8080",
                  "--rule=example.com/=web:http,tls=site-cert")
    assert out.strip() == "ingress.networking.k8s.io/site created"
    ing = get(api, f"/apis/networking.k8s.io/v1/namespaces/{namespace}/ingresses/site")
    assert ing["spec"]["ingressClassName"] == "nginx"
    [rule] = ing["spec"]["rules"]
    paths = {p["path"]: p for p in rule["http"]["paths"]}
    assert paths["/api"]["pathType"] == "Prefix"
    assert paths["/api"]["backend"] == {"service": {"name": "api", "port": {"number": 8080}}}
    assert paths["/"]["backend"] == {"service": {"name": "web", "port": {"name": "http"}}}
    assert ing["spec"]["tls"] == [{"hosts": ["example.com"], "secretName": "site-cert"}]


@pytest.mark.parametrize("resource,create,columns", [
    pytest.param("deployments", ["deployment", "x", "--image=nginx"], "NAME READY UP-TO-DATE AVAILABLE AGE",
                 id="deployments"),
    pytest.param("jobs", ["job", "x", "--image=busybox"], "NAME STATUS COMPLETIONS DURATION AGE", id="jobs"),
    pytest.param("cronjobs", ["cronjob", "x", "--image=busybox", "--schedule=@daily"],
                 "NAME SCHEDULE TIMEZONE SUSPEND ACTIVE LAST SCHEDULE AGE", id="cronjobs"),
    pytest.param("services", ["service", "clusterip", "x", "--tcp=80"], "NAME TYPE CLUSTER-IP EXTERNAL-IP PORT(S) AGE",
                 id="services"),
    pytest.param("secrets", ["secret", "generic", "x", "--from-literal=a=b"], "NAME TYPE DATA AGE", id="secrets"),
    pytest.param("configmaps", ["configmap", "x", "--from-literal=a=b"], "NAME DATA AGE", id="configmaps"),
    pytest.param("serviceaccounts", ["serviceaccount", "x"], "NAME SECRETS AGE", id="serviceaccounts"),
    pytest.param("resourcequotas", ["quota", "x", "--hard=pods=1"], "NAME REQUEST LIMIT AGE", id="resourcequotas"),
    pytest.param("poddisruptionbudgets", ["pdb", "x", "--selector=a=b", "--min-available=1"],
                 "NAME MIN AVAILABLE MAX UNAVAILABLE ALLOWED DISRUPTIONS AGE", id="poddisruptionbudgets"),
    pytest.param("roles", ["role", "x", "--verb=get", "--resource=pods"], "NAME CREATED AT", id="roles"),
    pytest.param("ingresses", ["ingress", "x", "--rule=a.example.com/=svc:80"], "NAME CLASS HOSTS ADDRESS PORTS AGE",
                 id="ingresses"),
])
def test_get_prints_kubernetes_columns(kubectl: Kubectl, resource: str, create: list[str], columns: str) -> None:
    kubectl("create", *create)
    rows = kubectl("get", resource).splitlines()
    assert rows[0].split() == columns.split()
    assert rows[1].split()[0] == "x"


def test_create_namespace(kubectl: Kubectl, api: httpx.Client) -> None:
    name = f"{kubectl.namespace}-ns"
    try:
        assert kubectl("create", "namespace", name).strip() == f"namespace/{name} created"
        assert get(api, f"/api/v1/namespaces/{name}")["status"]["phase"] == "Active"
    finally:
        api.delete(f"/api/v1/namespaces/{name}")


# --- expose, get all ---------------------------------------------------------------------------

def test_expose_deployment_and_get_all(kubectl: Kubectl, api: httpx.Client, namespace: str) -> None:
    kubectl("create", "deployment", "web", "--image=nginx", "--port=80")
    assert kubectl("expose", "deployment", "web", "--port=8080", "--target-port=80").strip() == \
        "service/web exposed"
    svc = get(api, f"/api/v1/namespaces/{namespace}/services/web")
    assert svc["spec"]["selector"] == {"app": "web"}
    assert svc["spec"]["ports"][0]["port"] == 8080 and svc["spec"]["ports"][0]["targetPort"] == 80
    kubectl("create", "cronjob", "tick", "--image=busybox", "--schedule=@hourly")
    out = kubectl("get", "all")
    names = {line.split()[0] for line in out.splitlines() if line and not line.startswith("NAME")}
    assert {"service/web", "deployment.apps/web", "cronjob.batch/tick"} <= names


# --- api-resources and explain -------------------------------------------------------------------

#: `kubectl api-resources` of a Kubernetes 1.32 cluster with its default API (GA group-versions only).
KUBERNETES_1_32 = """
bindings                                         v1                                true    Binding
componentstatuses                 cs             v1                                false   ComponentStatus
configmaps                        cm             v1                                true    ConfigMap
endpoints                         ep             v1                                true    Endpoints
events                            ev             v1                                true    Event
limitranges                       limits         v1                                true    LimitRange
namespaces                        ns             v1                                false   Namespace
nodes                             no             v1                                false   Node
persistentvolumeclaims            pvc            v1                                true    PersistentVolumeClaim
persistentvolumes                 pv             v1                                false   PersistentVolume
pods                              po             v1                                true    Pod
podtemplates                                     v1                                true    PodTemplate
replicationcontrollers            rc             v1                                true    ReplicationController
resourcequotas                    quota          v1                                true    ResourceQuota
secrets                                          v1                                true    Secret
serviceaccounts                   sa             v1                                true    ServiceAccount
services                          svc            v1                                true    Service
mutatingwebhookconfigurations                    admissionregistration.k8s.io/v1   false   MutatingWebhookConfiguration
validatingadmissionpolicies                      admissionregistration.k8s.io/v1   false   ValidatingAdmissionPolicy
validatingadmissionpolicybindings                admissionregistration.k8s.io/v1   false   ValidatingAdmissionPolicyBinding
validatingwebhookconfigurations                  admissionregistration.k8s.io/v1   false   ValidatingWebhookConfiguration
customresourcedefinitions         crd,crds       apiextensions.k8s.io/v1           false   CustomResourceDefinition
apiservices                                      apiregistration.k8s.io/v1         false   APIService
controllerrevisions                              apps/v1                           true    ControllerRevision
daemonsets                        ds             apps/v1                           true    DaemonSet
deployments                       deploy         apps/v1                           true    Deployment
replicasets                       rs             apps/v1                           true    ReplicaSet
statefulsets                      sts            apps/v1                           true    StatefulSet
selfsubjectreviews                               authentication.k8s.io/v1          false   SelfSubjectReview
tokenreviews                                     authentication.k8s.io/v1          false   TokenReview
localsubjectaccessreviews                        authorization.k8s.io/v1           true    LocalSubjectAccessReview
selfsubjectaccessreviews                         authorization.k8s.io/v1           false   SelfSubjectAccessReview
selfsubjectrulesreviews                          authorization.k8s.io/v1           false   SelfSubjectRulesReview
subjectaccessreviews                             authorization.k8s.io/v1           false   SubjectAccessReview
horizontalpodautoscalers          hpa            autoscaling/v2                    true    HorizontalPodAutoscaler
cronjobs                          cj             batch/v1                          true    CronJob
jobs                                             batch/v1                          true    Job
certificatesigningrequests        csr            certificates.k8s.io/v1            false   CertificateSigningRequest
leases                                           coordination.k8s.io/v1            true    Lease
endpointslices                                   discovery.k8s.io/v1               true    EndpointSlice
events                            ev             events.k8s.io/v1                  true    Event
flowschemas                                      flowcontrol.apiserver.k8s.io/v1   false   FlowSchema
prioritylevelconfigurations                      flowcontrol.apiserver.k8s.io/v1   false   PriorityLevelConfiguration
ingressclasses                                   networking.k8s.io/v1              false   IngressClass
ingresses                         ing            networking.k8s.io/v1              true    Ingress
networkpolicies                   netpol         networking.k8s.io/v1              true    NetworkPolicy
runtimeclasses                                   node.k8s.io/v1                    false   RuntimeClass
poddisruptionbudgets              pdb            policy/v1                         true    PodDisruptionBudget
clusterrolebindings                              rbac.authorization.k8s.io/v1      false   ClusterRoleBinding
clusterroles                                     rbac.authorization.k8s.io/v1      false   ClusterRole
rolebindings                                     rbac.authorization.k8s.io/v1      true    RoleBinding
roles                                            rbac.authorization.k8s.io/v1      true    Role
priorityclasses                   pc             scheduling.k8s.io/v1              false   PriorityClass
csidrivers                                       storage.k8s.io/v1                 false   CSIDriver
csinodes                                         storage.k8s.io/v1                 false   CSINode
csistoragecapacities                             storage.k8s.io/v1                 true    CSIStorageCapacity
storageclasses                    sc             storage.k8s.io/v1                 false   StorageClass
volumeattachments                                storage.k8s.io/v1                 false   VolumeAttachment
"""


def _rows(text: str) -> dict[tuple[str, str], tuple[str, ...]]:
    """api-resources rows by (name, apiVersion): (shortnames, namespaced, kind)."""
    out = {}
    for line in text.strip().splitlines():
        parts = line.split()
        if parts[0] == "NAME":
            continue
        if len(parts) == 4:
            parts.insert(1, "")
        name, short, version, namespaced, kind = parts
        out[(name, version)] = (short, namespaced, kind)
    return out


def test_api_resources_lists_what_kubernetes_1_32_lists(kubectl: Kubectl) -> None:
    got = _rows(kubectl("api-resources"))
    want = _rows(KUBERNETES_1_32)
    # Nothing may be missing (flowcontrol may be left out by issue 12, but kubesim serves it) ...
    assert sorted(set(want) - set(got)) == []
    # ... nothing listed that Kubernetes does not list ...
    assert sorted(set(got) - set(want)) == []
    # ... and each row says what Kubernetes' row says.
    assert {k: v for k, v in got.items() if v != want[k]} == {}
    assert kubectl("api-resources", "--api-group=apps", "-o", "name").split() == [
        "controllerrevisions.apps", "daemonsets.apps", "deployments.apps", "replicasets.apps", "statefulsets.apps"]
    wide = kubectl("api-resources", "-o", "wide").splitlines()
    assert wide[0].split() == ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND", "VERBS", "CATEGORIES"]
    deploy = next(line for line in wide if line.startswith("deployments "))
    assert deploy.split()[-1] == "all"
    assert "create,delete,deletecollection,get,list,patch,update,watch" in deploy


@pytest.mark.parametrize("path,fields", [
    ("deployment.spec.strategy.rollingUpdate", ["maxSurge", "maxUnavailable"]),
    ("configmap.data", []),
    ("cronjob.spec.jobTemplate.spec", ["backoffLimit", "template"]),
    ("hpa.spec.metrics", ["resource", "type"]),
    ("pdb.spec", ["maxUnavailable", "minAvailable", "selector"]),
    ("role.rules", ["apiGroups", "verbs"]),
    ("ingress.spec.rules.http.paths", ["backend", "path", "pathType"]),
    ("networkpolicies.spec", ["podSelector", "policyTypes"]),
    ("storageclass", ["provisioner", "reclaimPolicy"]),
    ("priorityclass", ["value", "globalDefault"]),
    ("runtimeclass", ["handler"]),
    ("endpointslices", ["addressType", "endpoints"]),
    ("lease.spec", ["holderIdentity"]),
    ("csr.spec", ["request", "signerName"]),
    ("validatingwebhookconfiguration.webhooks", ["clientConfig", "rules"]),
    ("apiservice.spec", ["group", "service"]),
    ("events --api-version=events.k8s.io/v1", ["reportingController", "eventTime"]),
    ("selfsubjectaccessreview.spec", ["resourceAttributes"]),
    ("tokenreview.spec", ["token"]),
    ("flowschemas.spec", ["priorityLevelConfiguration"]),
    ("crd.spec", ["group", "names", "versions"]),
], ids=lambda v: v if isinstance(v, str) else None)
def test_explain_a_kind_of_each_group(kubectl: Kubectl, path: str, fields: list[str]) -> None:
    out = kubectl("explain", *path.split())
    assert "KIND:" in out and "DESCRIPTION:" in out
    for field in fields:
        assert f"\n  {field}\t" in out, f"{field} missing from explain {path}:\n{out}"


# --- apply and delete of every kind ---------------------------------------------------------------

def test_apply_every_kind_twice_then_delete(kubectl: Kubectl, api: httpx.Client, namespace: str,
                                           tmp_path: Path) -> None:
    # The file's Event is about an object of the namespace it lands in, which Kubernetes checks.
    docs = list(yaml.safe_load_all(EVERY_KIND.read_text()))
    for doc in docs:
        if doc["kind"] == "Event":
            doc["involvedObject"]["namespace"] = namespace
    every_kind = tmp_path / "every-kind.yaml"
    every_kind.write_text(yaml.safe_dump_all(docs))
    first = kubectl.run("apply", "-f", str(every_kind), check=False)
    assert first.returncode == 0, first.stderr
    lines = first.stdout.strip().splitlines()
    assert len(lines) == 45 and all(line.endswith(" created") for line in lines), first.stdout
    again = kubectl.run("apply", "-f", str(every_kind), check=False)
    assert again.returncode == 0, again.stderr
    # Against Kubernetes too, these four are always "configured": kubectl's client-side three-way diff
    # compares the file with the live object, and
    # - a Secret's stringData is folded into data and never stored (kubernetes/kubernetes#87736);
    # - Endpoints' subsets and a LimitRange's limits are atomic lists that the server defaults (ports'
    #   protocol; defaultRequest and default), so the live list never equals the file's;
    # - a PodDisruptionBudget's selector has the "replace" patch strategy.
    assert [line for line in again.stdout.strip().splitlines() if not line.endswith(" unchanged")] == [
        "secret/every-secret configured", "endpoints/every-ep configured", "limitrange/every-limits configured",
        "poddisruptionbudget.policy/every-pdb configured"]
    gone = kubectl.run("delete", "-f", str(every_kind), "--wait=false", check=False)
    assert gone.returncode == 0, gone.stderr
    assert len(gone.stdout.strip().splitlines()) == 45
    assert all(" deleted" in line for line in gone.stdout.strip().splitlines())
    assert api.get(f"/api/v1/namespaces/{namespace}/configmaps/every-cm").status_code == 404


# --- auth and cluster-info -----------------------------------------------------------------------

def test_auth_can_i(kubectl: Kubectl) -> None:
    assert kubectl("auth", "can-i", "create", "deployments").strip() == "yes"
    assert kubectl("auth", "can-i", "delete", "nodes").strip() == "yes"
    listed = kubectl("auth", "can-i", "--list")
    assert listed.splitlines()[0].split()[:2] == ["Resources", "Non-Resource"]


def test_auth_whoami(kubectl: Kubectl) -> None:
    out = kubectl("auth", "whoami").splitlines()
    assert out[0].split() == ["ATTRIBUTE", "VALUE"]
    assert out[1].split()[0] == "Username"
    as_json = json.loads(kubectl("auth", "whoami", "-o", "json"))
    assert as_json["kind"] == "SelfSubjectReview" and "username" in as_json["status"]["userInfo"]


def test_cluster_info(kubectl: Kubectl, cluster: harness.Cluster) -> None:
    out = kubectl("cluster-info")
    assert f"Kubernetes control plane is running at {cluster.url}" in out


def test_invalid_generated_objects_are_kubernetes_errors(kubectl: Kubectl) -> None:
    err = kubectl.run("create", "deployment", "bad_name", "--image=nginx", check=False)
    assert err.returncode == 1
    assert 'Deployment.apps "bad_name" is invalid' in err.stderr
