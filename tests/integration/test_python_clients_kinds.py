"""The official ``kubernetes`` and ``kubernetes_asyncio`` clients on the kinds beyond Pods, unmodified.

Typed create, read, list, watch, patch and delete for Deployment, DaemonSet,
Job, ConfigMap, Service, RBAC Role and APIService, each answer deserialized
into the client's models; and ``utils.create_from_yaml`` /
``create_from_directory`` on multi-document files and directories, including
a second run, which raises ``FailToCreateError`` holding one 409
AlreadyExists per object, as against Kubernetes.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, config, utils, watch
from kubernetes_asyncio import client as aclient
from kubernetes_asyncio import config as aconfig
from kubernetes_asyncio import utils as autils
from kubernetes_asyncio import watch as awatch

from tests import harness

pytestmark = pytest.mark.integration

TEMPLATE = {"metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}}


@dataclass(frozen=True)
class Kind:
    """How the generated clients name one resource: ``<verb>_namespaced_<suffix>`` on ``api``."""

    kind: str
    api: str
    suffix: str
    namespaced: bool
    body: dict[str, Any]
    model: str

    def method(self, verb: str) -> str:
        return f"{verb}_namespaced_{self.suffix}" if self.namespaced else f"{verb}_{self.suffix}"

    def name(self, namespace: str) -> str:
        return f"v1.{namespace}.example.com" if self.kind == "APIService" else f"{self.suffix.replace('_', '-')}-1"


KINDS = [
    Kind("Deployment", "AppsV1Api", "deployment", True,
         {"spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}, "template": TEMPLATE}},
         "V1Deployment"),
    Kind("DaemonSet", "AppsV1Api", "daemon_set", True,
         {"spec": {"selector": {"matchLabels": {"app": "web"}}, "template": TEMPLATE}}, "V1DaemonSet"),
    Kind("Job", "BatchV1Api", "job", True,
         {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}],
                                         "restartPolicy": "Never"}}}}, "V1Job"),
    Kind("ConfigMap", "CoreV1Api", "config_map", True, {"data": {"a": "1"}}, "V1ConfigMap"),
    Kind("Service", "CoreV1Api", "service", True,
         {"spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]}}, "V1Service"),
    Kind("Role", "RbacAuthorizationV1Api", "role", True,
         {"rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}, "V1Role"),
    Kind("APIService", "ApiregistrationV1Api", "api_service", False,
         {"spec": {"group": "{ns}.example.com", "version": "v1", "groupPriorityMinimum": 1000,
                   "versionPriority": 15}}, "V1APIService"),
]


def _body(kind: Kind, namespace: str) -> dict[str, Any]:
    body = json.loads(json.dumps(kind.body).replace("{ns}", namespace))
    return {"metadata": {"name": kind.name(namespace), "labels": {"made-by": "client"}}, **body}


def _args(kind: Kind, namespace: str, *before: Any) -> list[Any]:
    return [*before, namespace] if kind.namespaced else list(before)


def _configuration(cluster: harness.Cluster) -> client.Configuration:
    """The official client's configuration from the admin kubeconfig (CA, client certificate)."""
    conf = client.Configuration()
    config.load_kube_config(config_file=str(cluster.kubeconfig()), client_configuration=conf)
    return conf


async def _aconfiguration(cluster: harness.Cluster) -> aclient.Configuration:
    conf = aclient.Configuration()
    await aconfig.load_kube_config(config_file=str(cluster.kubeconfig()), client_configuration=conf)
    return conf


@pytest.fixture
def api_client(cluster: harness.Cluster) -> Iterator[client.ApiClient]:
    with client.ApiClient(_configuration(cluster)) as c:
        yield c


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.kind)
def test_typed_crud_and_watch(api_client: client.ApiClient, namespace: str, kind: Kind) -> None:
    api = getattr(client, kind.api)(api_client)
    name = kind.name(namespace)
    created = getattr(api, kind.method("create"))(*_args(kind, namespace), _body(kind, namespace))
    try:
        assert type(created).__name__ == kind.model and created.metadata.name == name and created.metadata.uid
        read = getattr(api, kind.method("read"))(*_args(kind, namespace, name))
        assert read.metadata.uid == created.metadata.uid and read.metadata.labels == {"made-by": "client"}
        listed = getattr(api, kind.method("list"))(*_args(kind, namespace),
                                                   label_selector="made-by=client")
        assert [i.metadata.name for i in listed.items if i.metadata.name == name] == [name]
        rv = listed.metadata.resource_version
        patched = getattr(api, kind.method("patch"))(*_args(kind, namespace, name),
                                                     {"metadata": {"labels": {"patched": "yes"}}})
        assert patched.metadata.labels == {"made-by": "client", "patched": "yes"}
        events = []
        for ev in watch.Watch().stream(getattr(api, kind.method("list")), *_args(kind, namespace),
                                       resource_version=rv, timeout_seconds=2):
            events.append((ev["type"], type(ev["object"]).__name__, ev["object"].metadata.labels.get("patched")))
        # The patch, seen once; an APIService may be MODIFIED again by the aggregator's availability
        # status (its Available condition), as kube-aggregator's controller writes it.
        assert events[0] == ("MODIFIED", kind.model, "yes") and set(events) == {events[0]}
        assert len(events) == 1 or kind.kind == "APIService"
    finally:
        # Background, as kubectl sends: without a policy a Job (like an RC) is kept for the garbage
        # collector to orphan its Pods, and this cluster runs no controller-manager.
        getattr(api, kind.method("delete"))(*_args(kind, namespace, name), propagation_policy="Background")
    with pytest.raises(client.exceptions.ApiException) as info:
        getattr(api, kind.method("read"))(*_args(kind, namespace, name))
    assert info.value.status == 404 and json.loads(info.value.body)["reason"] == "NotFound"


@pytest.mark.parametrize("kind", KINDS, ids=[k.kind for k in KINDS])
def test_asyncio_typed_crud_and_watch(cluster: harness.Cluster, namespace: str, kind: Kind) -> None:
    async def run() -> list[tuple[str, str]]:
        async with aclient.ApiClient(await _aconfiguration(cluster)) as api_client:
            api = getattr(aclient, kind.api)(api_client)
            name = kind.name(namespace)
            created = await getattr(api, kind.method("create"))(*_args(kind, namespace), _body(kind, namespace))
            assert type(created).__name__ == kind.model
            read = await getattr(api, kind.method("read"))(*_args(kind, namespace, name))
            assert read.metadata.uid == created.metadata.uid
            listed = await getattr(api, kind.method("list"))(*_args(kind, namespace))
            assert name in [i.metadata.name for i in listed.items]
            await getattr(api, kind.method("patch"))(*_args(kind, namespace, name),
                                                     {"metadata": {"annotations": {"seen": "yes"}}})
            seen = []
            w = awatch.Watch()
            async for ev in w.stream(getattr(api, kind.method("list")), *_args(kind, namespace),
                                     resource_version=listed.metadata.resource_version, timeout_seconds=2):
                seen.append((ev["type"], ev["object"].metadata.annotations.get("seen")))
            await w.close()
            await getattr(api, kind.method("delete"))(*_args(kind, namespace, name),
                                                      propagation_policy="Background")
            try:
                await getattr(api, kind.method("read"))(*_args(kind, namespace, name))
            except aclient.exceptions.ApiException as e:
                seen.append(("read after delete", str(e.status)))
            return seen
    seen = asyncio.run(run())
    if kind.kind == "APIService":
        # The aggregator's availability status may modify it again after the patch (see above).
        seen = [seen[0], *[e for e in seen[1:] if e != ("MODIFIED", "yes")]]
    assert seen == [("MODIFIED", "yes"), ("read after delete", "404")]


MANIFEST = [
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}, "data": {"a": "1"}},
    {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
     "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}}, "template": TEMPLATE}},
    {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
     "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}},
]
LISTED = {"apiVersion": "v1", "kind": "List", "items": [
    {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "once"},
     "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}], "restartPolicy": "Never"}}}},
    {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "reader"},
     "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]},
]}


def _conflicts(error: Any) -> list[tuple[int, str]]:
    return [(e.status, json.loads(e.body)["reason"]) for e in error.api_exceptions]


def test_create_from_yaml_file_and_directory_with_conflicts(api_client: client.ApiClient, namespace: str,
                                                            tmp_path: Path) -> None:
    manifest = tmp_path / "app.yaml"
    manifest.write_text(yaml.safe_dump_all(MANIFEST))
    created = utils.create_from_yaml(api_client, str(manifest), namespace=namespace)
    assert [type(o[0]).__name__ for o in created] == ["V1ConfigMap", "V1Deployment", "V1Service"]
    with pytest.raises(utils.FailToCreateError) as info:
        utils.create_from_yaml(api_client, str(manifest), namespace=namespace)
    assert _conflicts(info.value) == [(409, "AlreadyExists")] * 3

    directory = tmp_path / "dir"
    directory.mkdir()
    (directory / "listed.yaml").write_text(yaml.safe_dump(LISTED))
    (directory / "sa.json").write_text(json.dumps({"apiVersion": "v1", "kind": "ServiceAccount",
                                                   "metadata": {"name": "robot"}}))
    made = utils.create_from_directory(api_client, str(directory), namespace=namespace)
    names = sorted(item.metadata.name for per_file in made for objects in per_file for item in objects)
    assert names == ["once", "reader", "robot"]
    with pytest.raises(utils.FailToCreateError) as info:
        utils.create_from_directory(api_client, str(directory), namespace=namespace)
    assert sorted(_conflicts(info.value)) == [(409, "AlreadyExists")] * 3
    core = client.CoreV1Api(api_client)
    assert core.read_namespaced_service_account("robot", namespace).metadata.namespace == namespace


def test_asyncio_create_from_yaml_with_conflicts(cluster: harness.Cluster, namespace: str, tmp_path: Path) -> None:
    manifest = tmp_path / "app.yaml"
    manifest.write_text(yaml.safe_dump_all(MANIFEST))

    async def run() -> tuple[list[str], list[tuple[int, str]]]:
        async with aclient.ApiClient(await _aconfiguration(cluster)) as api_client:
            created = await autils.create_from_yaml(api_client, str(manifest), namespace=namespace)
            kinds = [type(o[0]).__name__ for o in created]
            try:
                await autils.create_from_yaml(api_client, str(manifest), namespace=namespace)
            except autils.FailToCreateError as e:
                # kubernetes_asyncio nests one FailToCreateError per document.
                return kinds, [(x.status, json.loads(x.body)["reason"])
                               for per_document in e.api_exceptions for x in per_document.api_exceptions]
            return kinds, []
    kinds, conflicts = asyncio.run(run())
    assert kinds == ["V1ConfigMap", "V1Deployment", "V1Service"]
    assert conflicts == [(409, "AlreadyExists")] * 3
