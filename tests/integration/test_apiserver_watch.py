"""Watch semantics: resume, order, 410 on compaction, selector transitions, bookmarks, timeouts."""

from __future__ import annotations

import asyncio
import json

import aetcd
import httpx
import pytest

from tests import harness
from tests.kube import WatchReader, names, pod

pytestmark = pytest.mark.integration


def test_watch_without_version_sends_current_state_then_changes(cluster: harness.Cluster, api: httpx.Client,
                                                               namespace: str) -> None:
    base = f"/api/v1/namespaces/{namespace}/pods"
    api.post(base, json=pod("first"))
    with WatchReader(cluster.url, base, {"watch": "true"}) as w:
        assert w.status_code == 200
        assert list(names(w.wait_for(1))) == [("ADDED", "first")]
        api.post(base, json=pod("second"))
        api.patch(f"{base}/second", content=b'{"metadata":{"labels":{"x":"y"}}}',
                  headers={"Content-Type": "application/merge-patch+json"})
        api.delete(f"{base}/first")
        events = w.wait_for(4)
    assert list(names(events)) == [("ADDED", "first"), ("ADDED", "second"), ("MODIFIED", "second"),
                                   ("DELETED", "first")]
    rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in events[1:]]
    assert rvs == sorted(rvs) and len(set(rvs)) == 3


@pytest.mark.parametrize("resource,body", [
    ("services", {"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}}),
    ("endpoints", {"metadata": {"name": "e"}}),
], ids=["services/specs", "services/endpoints"])
def test_namespaced_watch_of_kinds_stored_under_two_level_keys(cluster: harness.Cluster, api: httpx.Client,
                                                               namespace: str, resource: str,
                                                               body: dict[str, object]) -> None:
    # Services live under /registry/services/specs/<namespace>/<name>: the namespace is not the key's
    # third segment, and a namespaced watch or list must still find them.
    base = f"/api/v1/namespaces/{namespace}/{resource}"
    rv = api.get(base).json()["metadata"]["resourceVersion"]
    assert api.post(base, json=body).status_code == 201
    with WatchReader(cluster.url, base, {"watch": "true", "resourceVersion": rv}) as w:
        assert [e["type"] for e in w.wait_for(1)] == ["ADDED"]
    with WatchReader(cluster.url, base, {"watch": "true", "labelSelector": "x!=y"}) as w:
        assert [e["type"] for e in w.wait_for(1)] == ["ADDED"]
    assert [i["metadata"]["name"] for i in api.get(base).json()["items"]] == [body["metadata"]["name"]]  # type: ignore[index]


def test_resumed_watch_sees_every_later_event_once_in_order(cluster: harness.Cluster, api: httpx.Client,
                                                           namespace: str) -> None:
    base = f"/api/v1/namespaces/{namespace}/pods"
    start_rv = api.get(base).json()["metadata"]["resourceVersion"]
    expected = []
    for i in range(30):
        r = api.post(base, json=pod(f"w{i}"))
        expected.append(("ADDED", f"w{i}", r.json()["metadata"]["resourceVersion"]))
        if i % 3 == 0:
            r = api.delete(f"{base}/w{i}")
            # The DELETED event carries the revision of the delete itself.
            expected.append(("DELETED", f"w{i}", None))
    with WatchReader(cluster.url, base, {"watch": "1", "resourceVersion": start_rv}) as w:
        events = w.wait_for(len(expected))
    got = [(e["type"], e["object"]["metadata"]["name"]) for e in events]
    assert got == [(t, n) for t, n, _ in expected]
    for (t, _, rv), e in zip(expected, events, strict=True):
        if rv is not None:
            assert e["object"]["metadata"]["resourceVersion"] == rv
    rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert rvs == sorted(rvs) and len(set(rvs)) == len(rvs)


def test_legacy_watch_path_and_single_object_watch(cluster: harness.Cluster, api: httpx.Client,
                                                  namespace: str) -> None:
    base = f"/api/v1/namespaces/{namespace}/pods"
    api.post(base, json=pod("one"))
    api.post(base, json=pod("two"))
    with WatchReader(cluster.url, f"/api/v1/watch/namespaces/{namespace}/pods/two") as w:
        api.delete(f"{base}/one")
        api.delete(f"{base}/two")
        events = w.wait_until(lambda evs: any(e["type"] == "DELETED" for e in evs))
    assert list(names(events)) == [("ADDED", "two"), ("DELETED", "two")]


def test_selector_watch_reports_objects_entering_and_leaving(cluster: harness.Cluster, api: httpx.Client,
                                                            namespace: str) -> None:
    base = f"/api/v1/namespaces/{namespace}/pods"
    api.post(base, json=pod("mover", labels={"app": "other"}))
    rv = api.get(base).json()["metadata"]["resourceVersion"]
    merge = {"Content-Type": "application/merge-patch+json"}
    with WatchReader(cluster.url, base, {"watch": "true", "labelSelector": "app=web",
                                         "resourceVersion": rv}) as w:
        api.patch(f"{base}/mover", content=b'{"metadata":{"labels":{"app":"web"}}}', headers=merge)
        api.patch(f"{base}/mover", content=b'{"metadata":{"labels":{"tier":"x"}}}', headers=merge)
        last = api.patch(f"{base}/mover", content=b'{"metadata":{"labels":{"app":"gone"}}}', headers=merge).json()
        events = w.wait_for(3)
    assert [e["type"] for e in events] == ["ADDED", "MODIFIED", "DELETED"]
    # Leaving the selector is a DELETED carrying the last matching state at the new revision.
    assert events[2]["object"]["metadata"]["labels"]["app"] == "web"
    assert events[2]["object"]["metadata"]["resourceVersion"] == last["metadata"]["resourceVersion"]


def test_field_selector_watch_on_node_name(cluster: harness.Cluster, api: httpx.Client, namespace: str) -> None:
    base = f"/api/v1/namespaces/{namespace}/pods"
    with WatchReader(cluster.url, "/api/v1/pods", {"watch": "true", "fieldSelector": "spec.nodeName=n-7"}) as w:
        api.post(base, json=pod("elsewhere", node="n-1"))
        api.post(base, json=pod("pending"))
        api.post(f"{base}/pending/binding", json={"metadata": {"name": "pending"},
                                                  "target": {"kind": "Node", "name": "n-7"}})
        events = w.wait_for(1)
    assert list(names(events)) == [("ADDED", "pending")]
    assert events[0]["object"]["spec"]["nodeName"] == "n-7"


def test_bookmarks_and_timeout(api: httpx.Client, namespace: str) -> None:
    with harness.cluster(apiserver_args=["--watch-bookmark-interval", "200ms"]) as c, \
            harness.admin_client(c.url) as client:
        client.post("/api/v1/namespaces", json={"metadata": {"name": "bm"}})
        rv = client.get("/api/v1/namespaces/bm/pods").json()["metadata"]["resourceVersion"]
        with WatchReader(c.url, "/api/v1/namespaces/bm/pods",
                         {"watch": "true", "allowWatchBookmarks": "true", "resourceVersion": rv,
                          "timeoutSeconds": "2"}) as w:
            events = w.wait_for(1, timeout=5)
            assert events and events[0]["type"] == "BOOKMARK"
            obj = events[0]["object"]
            assert obj["kind"] == "Pod" and int(obj["metadata"]["resourceVersion"]) >= int(rv)
            assert w.done.wait(5), "the watch should end after timeoutSeconds"


def test_send_initial_events_ends_with_a_bookmark(cluster: harness.Cluster, api: httpx.Client,
                                                  namespace: str) -> None:
    base = f"/api/v1/namespaces/{namespace}/pods"
    api.post(base, json=pod("init"))
    with WatchReader(cluster.url, base, {"watch": "true", "sendInitialEvents": "true", "allowWatchBookmarks": "true",
                                         "resourceVersionMatch": "NotOlderThan", "resourceVersion": ""}) as w:
        events = w.wait_for(2)
    assert events[0]["type"] == "ADDED"
    assert events[1]["type"] == "BOOKMARK"
    assert events[1]["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}


def test_watch_from_a_compacted_revision_is_410(fresh_cluster: harness.Cluster) -> None:
    with harness.admin_client(fresh_cluster.url) as api:
        harness.wait_for(lambda: api.get("/api/v1/namespaces/default").status_code == 200)
        first = api.post("/api/v1/namespaces/default/pods", json=pod("old")).json()["metadata"]["resourceVersion"]
        for i in range(5):
            api.post("/api/v1/namespaces/default/pods", json=pod(f"new{i}"))
        latest = api.get("/api/v1/namespaces/default/pods").json()["metadata"]["resourceVersion"]

    async def compact() -> None:
        async with aetcd.Client(port=fresh_cluster.etcd.port) as etcd:
            await etcd.compact(int(latest))
    asyncio.run(compact())
    # Restart the APIServer so that its watch cache window starts after the compaction.
    fresh_cluster.apiserver.process.restart()
    with WatchReader(fresh_cluster.url, "/api/v1/namespaces/default/pods",
                     {"watch": "true", "resourceVersion": str(int(first) - 1)}) as w:
        events = w.wait_for(1)
    assert events[0]["type"] == "ERROR"
    status = events[0]["object"]
    assert status["code"] == 410 and status["reason"] == "Expired"
    assert status["message"].startswith("too old resource version")


def test_slow_watcher_is_ended_with_410(api: httpx.Client) -> None:
    with harness.cluster(apiserver_args=["--watch-queue-size", "5"]) as c, \
            harness.admin_client(c.url) as client:
        harness.wait_for(lambda: client.get("/api/v1/namespaces/default").status_code == 200)
        # A client that opens a watch and does not read it while 20 MB of events go by:
        # socket buffers fill, then the watcher's queue, and the server must end it.
        stalled = harness.admin_client(c.url, timeout=httpx.Timeout(10, read=20))
        try:
            with stalled.stream("GET", "/api/v1/namespaces/default/pods",
                                params={"watch": "true", "timeoutSeconds": "60"}) as resp:
                big = "x" * 100_000
                for i in range(200):
                    body = pod(f"s{i}")
                    body["metadata"]["annotations"] = {"pad": big}
                    assert client.post("/api/v1/namespaces/default/pods", json=body).status_code == 201
                lines = [line for line in resp.iter_lines() if line.strip()]
        finally:
            stalled.close()
    assert 0 < len(lines) < 200, "the stream must end early"
    last = json.loads(lines[-1])
    assert last["type"] == "ERROR" and last["object"]["code"] == 410
