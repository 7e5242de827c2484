"""Which requests each kubectl (1.27 to 1.33) sends as protobuf, and that kubesim reads every one as kubectl meant.

Every command runs through a recording proxy (``tests/recording_proxy.py``)
between kubectl and the APIServer, so the test sees each request's
Content-Type and body. Found this way: kubectl 1.32 and 1.33 send the objects
of their typed clients as ``application/vnd.kubernetes.protobuf`` (every
``create <kind>`` generator, ``create token``'s TokenRequest, ``auth can-i``'s
SelfSubjectAccessReview, ``auth whoami``'s SelfSubjectReview, the Pod of
``debug node``); 1.27 to 1.31 send the same requests as JSON. ``expose``,
``run``, ``scale``, ``label``, ``set image``, ``rollout restart``,
``cordon``, ``apply``, ``delete`` and ``drain``'s Eviction are JSON in every
version. The test asserts that split, so a kubectl that starts sending
protobuf elsewhere is noticed.

Each protobuf body is decoded with :func:`apiserver.protobuf.decode` and
compared with the JSON that the same kubectl prints for the same command with
``--dry-run=client -o json`` (Go's own JSON encoding of the object it sent):
the decoder must give exactly what Go's JSON encoder gives, zero values and
``omitempty`` included.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from apiserver import protobuf
from tests import harness
from tests.kubectl import ALL_VERSIONS, Kubectl, binary
from tests.recording_proxy import RecordingProxy

pytestmark = [pytest.mark.integration, pytest.mark.kubectl]

PROTOBUF_SINCE = (1, 32)
DATA = Path(__file__).parent.parent / "data"

#: (label, arguments, whether `--dry-run=client -o json` prints the object sent). ``{ns}`` is the namespace.
TYPED = [
    ("create namespace", ["create", "namespace", "{ns}-made"], True),
    ("create deployment", ["create", "deployment", "web", "--image=nginx:1.25", "--replicas=0", "--port=80"], True),
    ("create job", ["create", "job", "once", "--image=busybox", "--", "date"], True),
    ("create cronjob", ["create", "cronjob", "tick", "--image=busybox", "--schedule=*/5 * * * *", "--", "date"],
     True),
    ("create job --from", ["create", "job", "manual", "--from=cronjob/tick"], True),
    ("create configmap", ["create", "configmap", "cfg", "--from-literal=a=1", "--from-literal=empty=",
                          f"--from-file={DATA / 'example-tls.crt'}"], True),
    ("create secret generic", ["create", "secret", "generic", "gen", "--from-literal=a=1"], True),
    ("create secret tls", ["create", "secret", "tls", "tls", f"--cert={DATA / 'example-tls.crt'}",
                           f"--key={DATA / 'example-tls.key'}"], True),
    ("create secret docker-registry", ["create", "secret", "docker-registry", "reg", "--docker-server=r.example.com",
                                       "--docker-username=u", "--docker-password=p"], True),
    ("create service clusterip", ["create", "service", "clusterip", "svc-c", "--tcp=80:8080", "--tcp=443:https"],
     True),
    ("create service nodeport", ["create", "service", "nodeport", "svc-n", "--tcp=80:8080", "--node-port=0"], True),
    ("create service loadbalancer", ["create", "service", "loadbalancer", "svc-l", "--tcp=80:8080"], True),
    ("create service externalname", ["create", "service", "externalname", "svc-e", "--external-name=example.com"],
     True),
    ("create serviceaccount", ["create", "serviceaccount", "robot"], True),
    ("create token", ["create", "token", "robot", "--duration=10m", "--audience=api"], False),
    ("create quota", ["create", "quota", "q", "--hard=pods=10,cpu=2,memory=1Gi", "--scopes=NotBestEffort"], True),
    ("create pdb", ["create", "pdb", "guard", "--selector=app=web", "--max-unavailable=50%"], True),
    ("create priorityclass", ["create", "priorityclass", "{ns}-pc", "--value=0", "--preemption-policy=Never"], True),
    ("create role", ["create", "role", "reader", "--verb=get,list", "--resource=pods,deployments.apps"], True),
    ("create clusterrole", ["create", "clusterrole", "{ns}-cr", "--verb=get", "--resource=nodes",
                            "--non-resource-url=/healthz"], True),
    ("create clusterrole --aggregation-rule", ["create", "clusterrole", "{ns}-agg",
                                               "--aggregation-rule=rbac.example.com/aggregate=true"], True),
    ("create rolebinding", ["create", "rolebinding", "rb", "--role=reader", "--user=alice",
                            "--serviceaccount={ns}:robot"], True),
    ("create clusterrolebinding", ["create", "clusterrolebinding", "{ns}-crb", "--clusterrole={ns}-cr",
                                   "--group=devs"], True),
    ("create ingress", ["create", "ingress", "site", "--class=nginx", "--rule=example.com/api*=svc-c:80",
                        "--rule=example.com/=svc-c:https,tls=site-cert", "--annotation=a=b"], True),
    ("auth can-i", ["auth", "can-i", "create", "deployments.apps", "--subresource=scale"], False),
    ("auth whoami", ["auth", "whoami"], False),
    ("debug node", ["debug", "node/{node}", "--image=busybox"], False),
]
#: Commands whose requests are JSON in every version.
UNTYPED = [
    ("expose", ["expose", "deployment", "web", "--port=80", "--name=web-svc"]),
    ("run", ["run", "p", "--image=nginx", "--restart=Never"]),
    ("scale", ["scale", "deployment", "web", "--replicas=3"]),
    ("label", ["label", "deployment", "web", "x=y"]),
    ("set image", ["set", "image", "deployment/web", "nginx=nginx:1.26"]),
    ("rollout restart", ["rollout", "restart", "deployment/web"]),
    ("cordon", ["cordon", "{node}"]),
    ("apply", ["apply", "-f", "-"]),
    ("delete", ["delete", "configmap", "cfg"]),
]
APPLIED = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\ndata:\n  a: '1'\n"


def _version(v: str) -> tuple[int, int]:
    major, minor = v.split(".")
    return int(major), int(minor)


def _dry_run(args: list[str]) -> list[str]:
    """The same command printing its object instead of sending it (flags go before a ``--``)."""
    flags = ["--dry-run=client", "-o", "json"]
    if "--" in args:
        at = args.index("--")
        return [*args[:at], *flags, *args[at:]]
    return [*args, *flags]


def _without_nulls(value: Any) -> Any:
    """Go's JSON writes ``null`` for a nil pointer or the zero Time; the decoder leaves such fields out."""
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


@pytest.fixture(scope="module")
def proxy(cluster: harness.Cluster) -> Iterator[RecordingProxy]:
    with RecordingProxy(cluster.url) as p:
        yield p


@pytest.mark.parametrize("version", ALL_VERSIONS, ids=[f"kubectl-{v}" for v in ALL_VERSIONS])
def test_what_each_kubectl_sends_as_protobuf_is_read_as_sent(version: str, proxy: RecordingProxy,
                                                             api: httpx.Client, namespace: str,
                                                             tmp_path: Path) -> None:
    kubectl = Kubectl(binary(version), proxy.url, tmp_path, namespace)
    node = f"{namespace}-node"
    assert api.post("/api/v1/nodes", json={"metadata": {"name": node}}).status_code == 201
    cleanup = [f"/api/v1/nodes/{node}", f"/api/v1/namespaces/{namespace}-made",
               f"/apis/scheduling.k8s.io/v1/priorityclasses/{namespace}-pc",
               f"/apis/rbac.authorization.k8s.io/v1/clusterroles/{namespace}-cr",
               f"/apis/rbac.authorization.k8s.io/v1/clusterroles/{namespace}-agg",
               f"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/{namespace}-crb"]
    sends_protobuf = _version(version) >= PROTOBUF_SINCE
    seen: dict[str, list[str]] = {}
    try:
        for label, raw_args, has_dry_run in TYPED:
            if label == "auth whoami" and version == "1.27":
                continue  # 1.27 asks for authentication.k8s.io/v1beta1, which a 1.32 server does not serve
            args = [a.format(ns=namespace, node=node) for a in raw_args]
            proxy.take()
            done = kubectl.run(*args, check=False)
            assert done.returncode == 0, f"{label}: {done.stderr}"
            bodies = [r for r in proxy.take() if r.protobuf]
            seen[label] = [f"{r.method} {r.path.split('?')[0]}" for r in bodies]
            assert bool(bodies) == sends_protobuf, f"{label}: protobuf requests {seen[label]}"
            for r in bodies:
                obj = protobuf.decode(r.body)
                if has_dry_run:
                    printed = json.loads(kubectl(*_dry_run(args)))
                    assert obj == _without_nulls(printed), label
                _check_shape(label, obj, namespace, node)
        for label, raw_args in UNTYPED:
            args = [a.format(ns=namespace, node=node) for a in raw_args]
            proxy.take()
            done = kubectl.run(*args, input=APPLIED if label == "apply" else None, check=False)
            assert done.returncode == 0, f"{label}: {done.stderr}"
            assert [r.path for r in proxy.take() if r.protobuf] == [], label
    finally:
        for path in cleanup:
            api.delete(path)


def _check_shape(label: str, obj: dict[str, Any], namespace: str, node: str) -> None:
    """What the commands without a client dry-run sent, as the server must read it."""
    if label == "create token":
        # status.token has no omitempty in Go (required in the definition), so its "" stays, as in JSON;
        # the zero expirationTimestamp is JSON's null and goes.
        assert obj == {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "metadata": {},
                       "spec": {"audiences": ["api"], "expirationSeconds": 600}, "status": {"token": ""}}
    elif label == "auth can-i":
        assert obj["kind"] == "SelfSubjectAccessReview"
        assert obj["spec"]["resourceAttributes"] == {"namespace": namespace, "verb": "create", "group": "apps",
                                                     "resource": "deployments", "subresource": "scale"}
    elif label == "auth whoami":
        assert obj == {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview", "metadata": {},
                       "status": {"userInfo": {}}}
    elif label == "debug node":
        assert obj["kind"] == "Pod" and obj["spec"]["nodeName"] == node
        assert obj["spec"]["hostPID"] is True and obj["spec"]["hostNetwork"] is True
        assert obj["spec"]["volumes"] == [{"name": "host-root", "hostPath": {"path": "/"}}]
        [c] = obj["spec"]["containers"]
        assert c["image"] == "busybox" and {"name": "host-root", "mountPath": "/host"} in c["volumeMounts"]
