"""etcd stopped and restarted under a running APIServer: bounded failures, then service again."""

from __future__ import annotations

import time

import pytest

from tests import harness
from tests.kube import WatchReader, pod

pytestmark = pytest.mark.integration


def test_etcd_outage_fails_fast_and_recovers(fresh_cluster: harness.Cluster) -> None:
    url = fresh_cluster.url
    with harness.admin_client(url, timeout=30) as api:
        harness.wait_for(lambda: api.get("/api/v1/namespaces/default").status_code == 200)
        assert api.post("/api/v1/namespaces/default/pods", json=pod("before")).status_code == 201
        rv = api.get("/api/v1/namespaces/default/pods").json()["metadata"]["resourceVersion"]
        with WatchReader(url, "/api/v1/namespaces/default/pods", {"watch": "true", "resourceVersion": rv}) as w:
            fresh_cluster.etcd.process.stop()
            started = time.monotonic()
            r = api.post("/api/v1/namespaces/default/pods", json=pod("during"))
            elapsed = time.monotonic() - started
            assert r.status_code in (503, 504), r.text
            assert r.json()["kind"] == "Status" and r.json()["reason"] in ("ServiceUnavailable", "Timeout")
            assert elapsed < 12, f"a request with etcd down took {elapsed:.1f}s"
            r = api.get("/api/v1/namespaces/default/pods/before")
            assert r.status_code in (503, 504)
            harness.wait_for(lambda: api.get("/readyz").status_code == 500, message="readyz failing")

            fresh_cluster.etcd.process.start()
            fresh_cluster.etcd.process.wait_ready(30)
            harness.wait_for(lambda: api.get("/readyz").status_code == 200, timeout=30, message="ready again")
            r = api.post("/api/v1/namespaces/default/pods", json=pod("after"))
            assert r.status_code == 201, r.text
            # The watch opened before the outage carries on and sees the new object.
            events = w.wait_until(lambda evs: any(e["object"]["metadata"].get("name") == "after" for e in evs),
                                  timeout=30)
        assert [e["object"]["metadata"]["name"] for e in events if e["type"] == "ADDED"] == ["after"]
