"""Custom resources through the official client's CustomObjectsApi and dynamic client, and kubesim's own."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import httpx
import pytest
from kubernetes import client, config, dynamic, watch

from apiserver.apiextensions.customresource import definition_name
from machinery.api.kinds import ResourceInfo, Subresource
from machinery.api.unstructured import Unstructured
from machinery.client import Client
from machinery.informer.shared import SharedInformer
from tests import harness
from tests.crds import create_crd, unique_group, widget, widget_crd

pytestmark = pytest.mark.integration


@pytest.fixture
def group(api: httpx.Client) -> Iterator[str]:
    g = unique_group()
    create_crd(api, widget_crd(g))
    yield g
    api.delete(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.{g}")


@pytest.fixture
def api_client(cluster: harness.Cluster) -> Iterator[client.ApiClient]:
    # The official client as the admin, from the kubeconfig (CA and client certificate).
    conf = client.Configuration()
    config.load_kube_config(config_file=str(cluster.kubeconfig()), client_configuration=conf)
    with client.ApiClient(conf) as c:
        yield c


def test_custom_objects_api(api_client: client.ApiClient, group: str, namespace: str) -> None:
    co = client.CustomObjectsApi(api_client)
    created = co.create_namespaced_custom_object(group, "v1", namespace, "widgets", widget("c1", group, size=4))
    assert created["spec"] == {"color": "red", "size": 4} and created["metadata"]["generation"] == 1
    listed = co.list_namespaced_custom_object(group, "v1", namespace, "widgets")
    assert [i["metadata"]["name"] for i in listed["items"]] == ["c1"]
    rv = listed["metadata"]["resourceVersion"]
    patched = co.patch_namespaced_custom_object(group, "v1", namespace, "widgets", "c1", {"spec": {"size": 6}})
    assert patched["spec"]["size"] == 6 and patched["metadata"]["generation"] == 2
    patched["status"] = {"phase": "Ready", "replicas": 1}
    status = co.replace_namespaced_custom_object_status(group, "v1", namespace, "widgets", "c1", patched)
    assert status["status"] == {"phase": "Ready", "replicas": 1} and status["metadata"]["generation"] == 2
    status = co.patch_namespaced_custom_object_status(group, "v1", namespace, "widgets", "c1",
                                                      {"status": {"phase": "Done"}})
    assert status["status"]["phase"] == "Done"
    scale = co.get_namespaced_custom_object_scale(group, "v1", namespace, "widgets", "c1")
    assert scale["status"]["replicas"] == 1
    events = [(e["type"], e["object"]["metadata"]["name"])
              for e in watch.Watch().stream(co.list_namespaced_custom_object, group, "v1", namespace, "widgets",
                                            resource_version=rv, timeout_seconds=2)]
    assert events == [("MODIFIED", "c1")] * 3
    with pytest.raises(client.exceptions.ApiException) as e:
        co.create_namespaced_custom_object(group, "v1", namespace, "widgets", widget("bad", group, size=0))
    assert e.value.status == 422
    co.delete_namespaced_custom_object(group, "v1", namespace, "widgets", "c1")
    assert co.list_cluster_custom_object(group, "v1", "widgets")["items"] == []


def test_dynamic_client(api_client: client.ApiClient, group: str, namespace: str) -> None:
    dyn = dynamic.DynamicClient(api_client)
    widgets = dyn.resources.get(api_version=f"{group}/v1", kind="Widget")
    assert widgets.namespaced and widgets.short_names == ["wd"]
    created = widgets.create(body=widget("d1", group), namespace=namespace)
    assert created.spec.size == 3
    assert [w.metadata.name for w in widgets.get(namespace=namespace).items] == ["d1"]
    patched = widgets.patch(name="d1", namespace=namespace, body={"spec": {"color": "blue"}},
                            content_type="application/merge-patch+json")
    assert patched.spec.color == "blue"
    status = dyn.resources.get(api_version=f"{group}/v1", kind="Widget").status
    done = status.patch(name="d1", namespace=namespace, body={"status": {"phase": "Ready"}},
                        content_type="application/merge-patch+json")
    assert done.status.phase == "Ready"
    seen = []
    for event in widgets.watch(namespace=namespace, timeout=2):
        seen.append((event["type"], event["object"].metadata.name, event["object"].spec.color))
    assert seen == [("ADDED", "d1", "blue")]
    widgets.delete(name="d1", namespace=namespace)
    assert widgets.get(namespace=namespace).items == []


def test_the_official_client_reads_openapi_v2(api_client: client.ApiClient, group: str) -> None:
    """The official client asks with its own headers (JSON, gzip) and gets the Swagger 2.0 document."""
    response = api_client.call_api("GET", api_client.configuration.host + "/openapi/v2",
                                   header_params={"Accept": "application/json", "Accept-Encoding": "gzip"})
    response.read()
    assert response.status == 200 and response.getheader("content-encoding") == "gzip"
    doc = json.loads(response.data)
    assert doc["swagger"] == "2.0"
    widget_def = doc["definitions"][definition_name(group, "v1", "Widget")]
    assert widget_def["x-kubernetes-group-version-kind"] == [{"group": group, "kind": "Widget", "version": "v1"}]
    assert widget_def["properties"]["spec"]["properties"]["color"]["enum"] == ["red", "green", "blue"]


async def test_kubesims_typed_client_and_informer(cluster: harness.Cluster, group: str, namespace: str) -> None:
    info: ResourceInfo[Unstructured] = ResourceInfo(
        group=group, version="v1", plural="widgets", singular="widget", kind="Widget", namespaced=True,
        model_ref=Unstructured, etcd_resource=f"{group}/widgets", definition=definition_name(group, "v1", "Widget"),
        subresources=(Subresource("status", "Widget", ("get", "patch", "update")),))
    async with Client(cluster.config()) as c:
        informer = SharedInformer(c, info, namespace=namespace)
        task = asyncio.create_task(informer.run())
        try:
            await asyncio.wait_for(informer.wait_synced(), 10)
            created = await c.create(info, Unstructured.model_validate(widget("i1", group)), namespace=namespace)
            assert created.metadata is not None and created.metadata.name == "i1"
            assert (created.model_extra or {}).get("spec") == {"color": "red", "size": 3}
            for _ in range(100):
                if informer.store.get(f"{namespace}/i1") is not None:
                    break
                await asyncio.sleep(0.05)
            cached = informer.store.get(f"{namespace}/i1")
            assert cached is not None and (cached.model_extra or {})["spec"]["size"] == 3
        finally:
            task.cancel()
