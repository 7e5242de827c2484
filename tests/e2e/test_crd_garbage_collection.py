"""The garbage collector and the namespace controller with custom objects (ownerReferences from and to them).

They act on every kind they find through discovery (``machinery.discovery``),
read again every 30 s as Kubernetes' collector does, so a custom kind is
covered within a refresh of its CRD being established.
"""

from __future__ import annotations

import httpx
import pytest

from tests import harness
from tests.crds import CRDS, create_crd, unique_group, widget, widget_crd

pytestmark = pytest.mark.e2e


def test_owned_objects_of_and_by_custom_objects_are_collected(api: httpx.Client, namespace: str) -> None:
    g = unique_group()
    create_crd(api, widget_crd(g))
    coll = f"/apis/{g}/v1/namespaces/{namespace}/widgets"
    owner = api.post(coll, json=widget("owner", g)).json()
    ref = {"apiVersion": f"{g}/v1", "kind": "Widget", "name": "owner", "uid": owner["metadata"]["uid"]}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "owned", "ownerReferences": [ref]},
           "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
    assert api.post(f"/api/v1/namespaces/{namespace}/pods", json=pod).status_code == 201
    cm = api.post(f"/api/v1/namespaces/{namespace}/configmaps",
                  json={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "parent"}}).json()
    child = widget("child", g)
    child["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "ConfigMap", "name": "parent",
                                             "uid": cm["metadata"]["uid"]}]
    assert api.post(coll, json=child).status_code == 201

    assert api.delete(f"{coll}/owner").status_code == 200
    # The collector finds kinds added after it started when it reads discovery again: every 30 s, the
    # period of Kubernetes' garbage collector too.
    harness.wait_for(lambda: api.get(f"/api/v1/namespaces/{namespace}/pods/owned").status_code == 404,
                     timeout=75, message="the Pod owned by a custom object collected")
    assert api.delete(f"/api/v1/namespaces/{namespace}/configmaps/parent").status_code == 200
    harness.wait_for(lambda: api.get(f"{coll}/child").status_code == 404, timeout=75,
                     message="the custom object owned by a ConfigMap collected")
    api.delete(f"{CRDS}/widgets.{g}")


def test_deleting_a_namespace_deletes_its_custom_objects(api: httpx.Client) -> None:
    g = unique_group()
    create_crd(api, widget_crd(g))
    ns = f"crd-{g.split('.')[0]}"
    assert api.post("/api/v1/namespaces", json={"metadata": {"name": ns}}).status_code == 201
    coll = f"/apis/{g}/v1/namespaces/{ns}/widgets"
    for name in ("a", "b"):
        assert api.post(coll, json=widget(name, g)).status_code == 201
    assert api.delete(f"/api/v1/namespaces/{ns}").status_code == 200
    harness.wait_for(lambda: api.get(f"/api/v1/namespaces/{ns}").status_code == 404, timeout=60,
                     message="the namespace gone with its custom objects")
    assert api.get(f"/apis/{g}/v1/widgets").json()["items"] == []
    api.delete(f"{CRDS}/widgets.{g}")
