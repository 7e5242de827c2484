"""kubectl 1.32 against the non-core groups: the create generators and the columns ``kubectl get`` prints."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests import harness
from tests.kubectl import Kubectl, binary

pytestmark = [pytest.mark.integration, pytest.mark.kubectl]


@pytest.fixture
def kubectl(cluster: harness.Cluster, namespace: str, tmp_path: Path) -> Kubectl:
    return Kubectl(binary("1.32"), cluster.url, tmp_path, namespace)


def header(output: str) -> list[str]:
    return output.splitlines()[0].split()


TEMPLATE = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "nginx", "image": "nginx:1.25"}]}}


# kubectl 1.32 sends these bodies as protobuf.
@pytest.mark.parametrize("args, printed", [
    pytest.param(("deployment", "web", "--image=nginx:1.25", "--replicas=0"), "deployment.apps/web created",
                 id="deployment"),
    pytest.param(("job", "pi", "--image=perl:5.34", "--", "perl", "-e", "1"), "job.batch/pi created", id="job"),
    pytest.param(("cronjob", "nightly", "--image=busybox:1.36", "--schedule=0 3 * * *", "--", "date"),
                 "cronjob.batch/nightly created", id="cronjob"),
    pytest.param(("pdb", "web", "--selector=app=web", "--min-available=1"), "poddisruptionbudget.policy/web created",
                 id="pdb"),
    pytest.param(("priorityclass", "kubectl-high", "--value=1000"),
                 "priorityclass.scheduling.k8s.io/kubectl-high created", id="priorityclass"),
])
def test_kubectl_create_generators(kubectl: Kubectl, args: tuple[str, ...], printed: str) -> None:
    assert printed in kubectl("create", *args)


def test_get_deployment(kubectl: Kubectl) -> None:
    kubectl.apply({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                   "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "web"}}, "template": TEMPLATE}})
    out = kubectl("get", "deploy")
    assert header(out) == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    assert out.splitlines()[1].split()[:4] == ["web", "0/0", "0", "0"]
    wide = kubectl("get", "deploy", "-o", "wide")
    assert header(wide) == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE", "CONTAINERS", "IMAGES", "SELECTOR"]
    assert wide.splitlines()[1].split()[5:] == ["nginx", "nginx:1.25", "app=web"]
    out = kubectl("get", "deploy", "web", "-o", "jsonpath={.spec.strategy.rollingUpdate.maxSurge} "
                                                "{.spec.revisionHistoryLimit} {.spec.progressDeadlineSeconds}")
    assert out == "25% 10 600"
    denied = kubectl.run("patch", "deploy", "web", "--type=merge", "-p",
                         '{"spec":{"selector":{"matchLabels":{"app":"other"}}}}', check=False)
    assert denied.returncode != 0 and "spec.selector: Invalid value" in denied.stderr
    assert "field is immutable" in denied.stderr


def test_get_job_and_cronjob(kubectl: Kubectl) -> None:
    pod = {"spec": {"restartPolicy": "Never", "containers": [{"name": "pi", "image": "perl:5.34"}]}}
    kubectl.apply({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "pi"}, "spec": {"template": pod}})
    out = kubectl("get", "jobs")
    assert header(out) == ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"]
    assert out.splitlines()[1].split()[:3] == ["pi", "Running", "0/1"]
    assert kubectl("get", "jobs", "--field-selector", "status.successful=0", "-o", "name") == "job.batch/pi\n"
    kubectl.apply({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "nightly"}, "spec": {
        "schedule": "0 3 * * *", "jobTemplate": {"spec": {"template": {"spec": {
            "restartPolicy": "OnFailure", "containers": [{"name": "c", "image": "busybox:1.36"}]}}}}}})
    out = kubectl("get", "cj")
    assert header(out) == ["NAME", "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST", "SCHEDULE", "AGE"]
    assert out.splitlines()[1].split()[:8] == ["nightly", "0", "3", "*", "*", "*", "<none>", "False"]
    bad = kubectl.run("patch", "cronjob", "nightly", "--type=merge", "-p", '{"spec":{"schedule":"0 3 * *"}}',
                      check=False)
    assert bad.returncode != 0 and "expected exactly 5 fields, found 4" in bad.stderr


def test_get_pdb_and_priorityclass(kubectl: Kubectl, namespace: str) -> None:
    kubectl.apply({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web"},
                   "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}})
    out = kubectl("get", "pdb")
    assert header(out) == ["NAME", "MIN", "AVAILABLE", "MAX", "UNAVAILABLE", "ALLOWED", "DISRUPTIONS", "AGE"]
    assert out.splitlines()[1].split()[:4] == ["web", "1", "N/A", "0"]
    name = f"high-{namespace}"
    try:
        assert f"priorityclass.scheduling.k8s.io/{name} created" in kubectl.apply(
            {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
             "value": 1000, "description": "important"})
        out = kubectl("get", "pc", name)
        assert header(out) == ["NAME", "VALUE", "GLOBAL-DEFAULT", "AGE", "PREEMPTIONPOLICY"]
        cells = out.splitlines()[1].split()
        assert (cells[:3], cells[-1]) == ([name, "1000", "false"], "PreemptLowerPriority")
        reserved = kubectl.run("apply", "-f", "-", check=False, input=(
            "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: system-mine}\nvalue: 10\n"))
        assert reserved.returncode != 0 and "reserved for system use only" in reserved.stderr
    finally:
        kubectl.run("delete", "priorityclass", name, check=False)


def test_default_storage_class_is_shown(kubectl: Kubectl) -> None:
    # The APIServer creates it in the background once etcd answers.
    harness.wait_for(lambda: "standard" in kubectl("get", "sc", "-o", "name"))
    out = kubectl("get", "sc")
    assert header(out) == ["NAME", "PROVISIONER", "RECLAIMPOLICY", "VOLUMEBINDINGMODE", "ALLOWVOLUMEEXPANSION", "AGE"]
    assert any(line.split()[:2] == ["standard", "(default)"] for line in out.splitlines()[1:])


def test_certificate_approve(kubectl: Kubectl, namespace: str) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    request = x509.CertificateSigningRequestBuilder().subject_name(
        x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "jane")])).sign(key, hashes.SHA256())
    name = f"jane-{namespace}"
    csr = {"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest", "metadata": {"name": name},
           "spec": {"request": base64.b64encode(request.public_bytes(serialization.Encoding.PEM)).decode(),
                    "signerName": "kubernetes.io/kube-apiserver-client", "usages": ["client auth"]}}
    kubectl.apply(csr)
    try:
        assert kubectl("get", "csr", name, "-o", "jsonpath={.metadata.name}") == name
        assert f"certificatesigningrequest.certificates.k8s.io/{name} approved" in kubectl("certificate", "approve",
                                                                                         name)
        out = kubectl("get", "csr", name)
        assert header(out) == ["NAME", "AGE", "SIGNERNAME", "REQUESTOR", "REQUESTEDDURATION", "CONDITION"]
        assert out.splitlines()[1].split()[-1] == "Approved"
    finally:
        kubectl.run("delete", "csr", name, check=False)
