"""Metadata-only reads (``as=PartialObjectMetadata``): what client-go's metadata client and
controller-runtime's metadata-only watches ask for, for built-in and custom kinds alike."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests import harness
from tests.crds import CRDS, create_crd, unique_group, widget, widget_crd
from tests.kube import WatchReader

pytestmark = pytest.mark.integration

ONE = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"


@pytest.fixture
def collections(api: httpx.Client, namespace: str) -> Iterator[list[str]]:
    g = unique_group()
    create_crd(api, widget_crd(g))
    widgets = f"/apis/{g}/v1/namespaces/{namespace}/widgets"
    configmaps = f"/api/v1/namespaces/{namespace}/configmaps"
    assert api.post(widgets, json={**widget("a", g), "metadata": {"name": "a", "labels": {"x": "y"}}}).status_code == 201
    assert api.post(configmaps, json={"metadata": {"name": "a", "labels": {"x": "y"}}, "data": {"k": "v"}}
                    ).status_code == 201
    yield [configmaps, widgets]
    api.delete(f"{CRDS}/widgets.{g}")


def test_get_and_list_answer_metadata_only(api: httpx.Client, collections: list[str]) -> None:
    for coll in collections:
        one = api.get(f"{coll}/a", headers={"Accept": ONE})
        assert one.status_code == 200, one.text
        body = one.json()
        assert (body["kind"], body["apiVersion"]) == ("PartialObjectMetadata", "meta.k8s.io/v1")
        assert set(body) == {"kind", "apiVersion", "metadata"} and body["metadata"]["labels"] == {"x": "y"}
        listed = api.get(coll, headers={"Accept": LIST}).json()
        assert (listed["kind"], listed["apiVersion"]) == ("PartialObjectMetadataList", "meta.k8s.io/v1")
        assert listed["metadata"]["resourceVersion"]
        assert [(i["kind"], i["metadata"]["name"], set(i)) for i in listed["items"]] == [
            ("PartialObjectMetadata", "a", {"kind", "apiVersion", "metadata"})]
        paged = api.get(coll, params={"limit": "1"}, headers={"Accept": LIST.replace("v=v1", "v=v1beta1")}).json()
        assert paged["apiVersion"] == "meta.k8s.io/v1beta1" and len(paged["items"]) == 1
        wrong = api.get(coll, headers={"Accept": ONE})
        assert wrong.status_code == 406 and wrong.json()["reason"] == "NotAcceptable"
        assert "you requested PartialObjectMetadata, but the requested object is a list" in wrong.json()["message"]


def test_watch_events_and_bookmarks_are_metadata_only(cluster: harness.Cluster, api: httpx.Client,
                                                      collections: list[str]) -> None:
    for coll in collections:
        with WatchReader(cluster.url, coll, headers={"Accept": ONE}, params={
                "watch": "true", "sendInitialEvents": "true", "resourceVersionMatch": "NotOlderThan",
                "allowWatchBookmarks": "true"}) as w:
            events = w.wait_until(lambda evs: any(e["type"] == "BOOKMARK" for e in evs))
        assert [(e["type"], e["object"]["kind"], e["object"]["apiVersion"]) for e in events] == [
            ("ADDED", "PartialObjectMetadata", "meta.k8s.io/v1"), ("BOOKMARK", "PartialObjectMetadata", "meta.k8s.io/v1")]
        assert set(events[0]["object"]) == {"kind", "apiVersion", "metadata"}
