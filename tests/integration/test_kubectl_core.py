"""kubectl 1.32 on the core/v1 kinds: its generators, ``get`` columns, ``expose``, ``debug`` and ``describe``.

kubectl's ``create configmap|secret|service|quota`` generators send their
object as protobuf; the same objects also go through ``--dry-run=client -o
yaml`` and ``kubectl create -f -`` (JSON), and both must give the same result.
"""

from __future__ import annotations

import base64
import json
import subprocess
from pathlib import Path

import pytest
import yaml

from tests import harness
from tests.kubectl import Kubectl, binary

pytestmark = [pytest.mark.integration, pytest.mark.kubectl]

@pytest.fixture
def kubectl(cluster: harness.Cluster, namespace: str, tmp_path: Path) -> Kubectl:
    return Kubectl(binary("1.32"), cluster.url, tmp_path, namespace)


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    where = tmp_path_factory.mktemp("tls")
    cert, key = where / "tls.crt", where / "tls.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=web",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    return cert, key


def via_json(kubectl: Kubectl, *generator: str) -> str:
    """A generator's object, made by kubectl on the client and created from JSON."""
    manifest = kubectl(*generator, "--dry-run=client", "-o", "json")
    return kubectl("create", "-f", "-", input=manifest)


def rows(out: str) -> list[list[str]]:
    return [line.split() for line in out.strip().splitlines()]


def _generators(tls: tuple[Path, Path], node_port: int) -> list[tuple[str, ...]]:
    cert, key = tls
    return [
        ("create", "configmap", "settings", "--from-literal=a=1", "--from-literal=b=2"),
        ("create", "secret", "generic", "creds", "--from-literal=user=admin", "--from-literal=password=s3cret"),
        ("create", "secret", "tls", "web-tls", f"--cert={cert}", f"--key={key}"),
        ("create", "secret", "docker-registry", "registry", "--docker-server=registry.example.com",
         "--docker-username=u", "--docker-password=p", "--docker-email=u@example.com"),
        ("create", "service", "clusterip", "web", "--tcp=80:8080"),
        ("create", "service", "clusterip", "headless", "--clusterip=None"),
        ("create", "service", "nodeport", "np", "--tcp=80:8080", f"--node-port={node_port}"),
        ("create", "service", "loadbalancer", "lb", "--tcp=443:8443"),
        ("create", "service", "externalname", "db", "--external-name=db.example.com"),
        ("create", "quota", "compute", "--hard=pods=10,requests.cpu=2,limits.memory=4Gi"),
    ]


def test_create_generators_send_protobuf(kubectl: Kubectl, tls_files: tuple[Path, Path]) -> None:
    for generator in _generators(tls_files, 30070):
        kubectl(*generator)


def test_generated_objects_are_stored_as_kubernetes_stores_them(kubectl: Kubectl,
                                                                tls_files: tuple[Path, Path]) -> None:
    for generator in _generators(tls_files, 30071):
        assert "created" in via_json(kubectl, *generator)
    secrets = {s["metadata"]["name"]: s for s in json.loads(kubectl("get", "secrets", "-o", "json"))["items"]}
    assert secrets["creds"]["type"] == "Opaque"
    assert base64.b64decode(secrets["creds"]["data"]["password"]) == b"s3cret"
    assert secrets["web-tls"]["type"] == "kubernetes.io/tls"
    assert set(secrets["web-tls"]["data"]) == {"tls.crt", "tls.key"}
    assert secrets["registry"]["type"] == "kubernetes.io/dockerconfigjson"
    config = json.loads(base64.b64decode(secrets["registry"]["data"][".dockerconfigjson"]))
    assert config["auths"]["registry.example.com"]["username"] == "u"
    got = rows(kubectl("get", "secrets"))
    assert got[0] == ["NAME", "TYPE", "DATA", "AGE"]
    assert [r[:3] for r in got[1:]] == [["creds", "Opaque", "2"], ["registry", "kubernetes.io/dockerconfigjson", "1"],
                                        ["web-tls", "kubernetes.io/tls", "2"]]
    assert [r[:2] for r in rows(kubectl("get", "configmaps"))] == [["NAME", "DATA"], ["settings", "2"]]
    # The field selector Kubernetes has for Secrets.
    assert kubectl("get", "secrets", "--field-selector=type=kubernetes.io/tls", "-o", "name").split() == [
        "secret/web-tls"]


def test_get_services_prints_kubernetes_columns(kubectl: Kubectl, tls_files: tuple[Path, Path]) -> None:
    for generator in _generators(tls_files, 30080):
        if generator[1] == "service":
            via_json(kubectl, *generator)
    got = {r[0]: r for r in rows(kubectl("get", "svc"))}
    assert got["NAME"] == ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE"]
    web, np, lb = got["web"], got["np"], got["lb"]
    assert web[1] == "ClusterIP" and web[2].startswith("10.") and web[3:5] == ["<none>", "80/TCP"]
    assert got["headless"][1:5] == ["ClusterIP", "None", "<none>", "<none>"]
    assert np[1] == "NodePort" and np[3:5] == ["<none>", "80:30080/TCP"]
    assert lb[1] == "LoadBalancer" and lb[3] == "<pending>" and lb[4].startswith("443:")
    node_port = int(lb[4].split(":")[1].split("/")[0])
    assert 30000 <= node_port <= 32767
    assert got["db"][1:5] == ["ExternalName", "<none>", "db.example.com", "<none>"]
    assert len({web[2], np[2], lb[2]}) == 3
    wide = rows(kubectl("get", "svc", "web", "-o", "wide"))
    assert wide[0][-1] == "SELECTOR" and wide[1][-1] == "app=web"
    # The defaults the API server gives a generated ClusterIP Service.
    svc = json.loads(kubectl("get", "svc", "web", "-o", "json"))
    assert svc["spec"]["sessionAffinity"] == "None" and svc["spec"]["internalTrafficPolicy"] == "Cluster"
    assert svc["spec"]["ipFamilies"] == ["IPv4"] and svc["spec"]["ipFamilyPolicy"] == "SingleStack"
    assert svc["spec"]["ports"] == [{"name": "80-8080", "port": 80, "protocol": "TCP", "targetPort": 8080}]
    assert svc["spec"]["clusterIPs"] == [svc["spec"]["clusterIP"]]
    # A taken NodePort is refused with Kubernetes' message.
    taken = kubectl.run("create", "-f", "-", check=False, input=json.dumps({
        "apiVersion": "v1", "kind": "Service", "metadata": {"name": "np2"},
        "spec": {"type": "NodePort", "ports": [{"port": 80, "nodePort": 30080}]}}))
    assert taken.returncode == 1
    assert ('The Service "np2" is invalid: spec.ports[0].nodePort: Invalid value: 30080: provided port is already '
            "allocated") in taken.stderr
    describe = kubectl("describe", "svc", "np")
    assert "Type:                     NodePort" in describe
    assert "NodePort:                 80-8080  30080/TCP" in describe


def test_the_kubernetes_service_is_listed_in_default(kubectl: Kubectl) -> None:
    got = rows(kubectl("get", "svc", "kubernetes", "-n", "default"))
    assert got[1][:5] == ["kubernetes", "ClusterIP", "10.96.0.1", "<none>", "443/TCP"]
    endpoints = rows(kubectl("get", "endpoints", "kubernetes", "-n", "default"))
    assert endpoints[0][:2] == ["NAME", "ENDPOINTS"] and endpoints[1][0] == "kubernetes"


def test_expose_makes_a_service_of_a_pods_labels(kubectl: Kubectl) -> None:
    kubectl("run", "app", "--image=nginx", "--labels=app=shop,tier=fe", "--port=80")
    assert "service/shop exposed" in kubectl("expose", "pod", "app", "--name=shop", "--port=8080",
                                             "--target-port=80")
    svc = json.loads(kubectl("get", "svc", "shop", "-o", "json"))
    assert svc["spec"]["selector"] == {"app": "shop", "tier": "fe"}
    assert svc["spec"]["ports"] == [{"port": 8080, "protocol": "TCP", "targetPort": 80}]
    assert svc["spec"]["type"] == "ClusterIP"
    wide = rows(kubectl("get", "svc", "shop", "-o", "wide"))
    assert wide[1][1] == "ClusterIP" and wide[1][4] == "8080/TCP" and wide[1][-1] == "app=shop,tier=fe"


def test_quota_columns_and_describe(kubectl: Kubectl) -> None:
    via_json(kubectl, "create", "quota", "compute", "--hard=pods=10,requests.cpu=2,limits.memory=4Gi")
    got = rows(kubectl("get", "quota"))
    assert got[0] == ["NAME", "REQUEST", "LIMIT", "AGE"]
    assert got[1][0] == "compute"
    spec = json.loads(kubectl("get", "quota", "compute", "-o", "json"))["spec"]
    assert spec == {"hard": {"limits.memory": "4Gi", "pods": "10", "requests.cpu": "2"}}
    bad = kubectl.run("create", "-f", "-", check=False, input=yaml.safe_dump({
        "apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "bad"},
        "spec": {"hard": {"pods": "-1"}}}))
    assert bad.returncode == 1
    assert 'spec.hard[pods]: Invalid value: "-1": must be greater than or equal to 0' in bad.stderr


def test_debug_adds_an_ephemeral_container(kubectl: Kubectl) -> None:
    kubectl("run", "target", "--image=nginx")
    out = kubectl.run("debug", "target", "--image=busybox", "--profile=general", "--container=debugger")
    assert out.returncode == 0, out.stderr
    pod = json.loads(kubectl("get", "pod", "target", "-o", "json"))
    [debug] = pod["spec"]["ephemeralContainers"]
    assert debug["name"] == "debugger" and debug["image"] == "busybox"
    assert debug["imagePullPolicy"] == "Always" and debug["terminationMessagePolicy"] == "File"
    # The same name again merges into the existing one, which may not change.
    again = kubectl.run("debug", "target", "--image=alpine", "--profile=general", "--container=debugger",
                        check=False)
    assert again.returncode != 0
    assert ('The Pod "target" is invalid: spec.ephemeralContainers: Forbidden: existing ephemeral containers '
            '"debugger" may not be changed') in again.stderr
    # Another one is added next to it.
    kubectl("debug", "target", "--image=busybox", "--profile=general", "--container=second")
    pod = json.loads(kubectl("get", "pod", "target", "-o", "json"))
    assert [c["name"] for c in pod["spec"]["ephemeralContainers"]] == ["debugger", "second"]
