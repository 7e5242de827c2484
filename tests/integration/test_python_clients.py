"""The official `kubernetes` and `kubernetes_asyncio` clients work against kubesim unmodified."""

from __future__ import annotations

import asyncio
import json

import pytest
from kubernetes import client, config, watch
from kubernetes_asyncio import client as aclient
from kubernetes_asyncio import config as aconfig
from kubernetes_asyncio import watch as awatch

from tests import harness

pytestmark = pytest.mark.integration


@pytest.fixture
def v1(cluster: harness.Cluster) -> client.CoreV1Api:
    # The kubeconfig as kubesim up writes it (embedded CA, admin client certificate), read by the client itself.
    conf = client.Configuration()
    config.load_kube_config(config_file=str(cluster.kubeconfig()), client_configuration=conf)
    with client.ApiClient(conf) as api_client:
        yield client.CoreV1Api(api_client)


def test_crud_binding_and_watch_with_the_official_client(v1: client.CoreV1Api, namespace: str) -> None:
    pod = client.V1Pod(metadata=client.V1ObjectMeta(name="official"),
                       spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="nginx")]))
    created = v1.create_namespaced_pod(namespace, pod)
    assert created.status.phase == "Pending" and created.metadata.uid
    binding = client.V1Binding(metadata=client.V1ObjectMeta(name="official"),
                               target=client.V1ObjectReference(kind="Node", name="node-9", api_version="v1"))
    # The real APIServer answers a binding with a Status, which the generated client cannot
    # deserialize as a V1Binding; everyone calls it with _preload_content=False.
    resp = v1.create_namespaced_binding(namespace, binding, _preload_content=False)
    assert resp.status == 201
    assert json.loads(resp.data)["status"] == "Success"
    events = []
    w = watch.Watch()
    for ev in w.stream(v1.list_namespaced_pod, namespace, timeout_seconds=2):
        events.append((ev["type"], ev["object"].metadata.name, ev["object"].spec.node_name))
    assert events == [("ADDED", "official", "node-9")]
    rv = v1.list_namespaced_pod(namespace).metadata.resource_version
    v1.patch_namespaced_pod("official", namespace, {"metadata": {"labels": {"x": "y"}}})
    resumed = []
    for ev in w.stream(v1.list_namespaced_pod, namespace, resource_version=rv, timeout_seconds=2):
        resumed.append((ev["type"], ev["object"].metadata.labels))
    assert resumed == [("MODIFIED", {"x": "y"})]
    with pytest.raises(client.exceptions.ApiException) as info:
        v1.read_namespaced_pod("missing", namespace)
    assert info.value.status == 404 and json.loads(info.value.body)["reason"] == "NotFound"


def test_every_kind_deserializes(v1: client.CoreV1Api, namespace: str) -> None:
    rc = v1.create_namespaced_replication_controller(namespace, client.V1ReplicationController(
        metadata=client.V1ObjectMeta(name="rc"),
        spec=client.V1ReplicationControllerSpec(
            replicas=1, selector={"a": "b"},
            template=client.V1PodTemplateSpec(metadata=client.V1ObjectMeta(labels={"a": "b"}),
                                              spec=client.V1PodSpec(containers=[client.V1Container(name="c",
                                                                                                   image="x")])))))
    assert rc.status.replicas == 0
    assert v1.read_namespaced_replication_controller_scale("rc", namespace).spec.replicas == 1
    assert [n.metadata.name for n in v1.list_namespace().items if n.metadata.name == namespace] == [namespace]
    assert v1.list_namespaced_event(namespace).items == []
    coord = client.CoordinationV1Api(v1.api_client)
    lease = coord.create_namespaced_lease(namespace, client.V1Lease(
        metadata=client.V1ObjectMeta(name="l"), spec=client.V1LeaseSpec(holder_identity="me",
                                                                         lease_duration_seconds=15)))
    assert lease.spec.holder_identity == "me"


def test_kubernetes_asyncio_client(cluster: harness.Cluster, namespace: str) -> None:
    async def run() -> list[str]:
        conf = aclient.Configuration()
        await aconfig.load_kube_config(config_file=str(cluster.kubeconfig()), client_configuration=conf)
        async with aclient.ApiClient(conf) as api_client:
            v1 = aclient.CoreV1Api(api_client)
            await v1.create_namespaced_pod(namespace, {"metadata": {"name": "aio"},
                                                       "spec": {"containers": [{"name": "c", "image": "x"}]}})
            seen = []
            w = awatch.Watch()
            async for ev in w.stream(v1.list_namespaced_pod, namespace, timeout_seconds=2):
                seen.append(f"{ev['type']} {ev['object'].metadata.name}")
            await w.close()
            return seen
    assert asyncio.run(run()) == ["ADDED aio"]
