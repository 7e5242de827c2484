"""The APIServer's REST semantics against a real etcd: metadata, spec/status, conflicts, deletion, lists."""

from __future__ import annotations

import concurrent.futures
import threading

import httpx
import pytest

from tests import harness
from tests.kube import node, pod, rc

pytestmark = pytest.mark.integration


def test_system_namespaces_exist_from_the_first_start(api: httpx.Client) -> None:
    def have_all() -> bool:
        items = api.get("/api/v1/namespaces").json()["items"]
        got = {n["metadata"]["name"] for n in items}
        return {"default", "kube-system", "kube-public", "kube-node-lease"} <= got
    harness.wait_for(have_all, message="system namespaces")


def test_create_sets_server_metadata_and_get_returns_it(api: httpx.Client, namespace: str) -> None:
    r = api.post(f"/api/v1/namespaces/{namespace}/pods", json=pod("web"))
    assert r.status_code == 201, r.text
    created = r.json()
    meta = created["metadata"]
    assert created["kind"] == "Pod" and created["apiVersion"] == "v1"
    assert meta["uid"] and meta["creationTimestamp"].endswith("Z")
    assert int(meta["resourceVersion"]) > 0
    assert meta["namespace"] == namespace
    assert created["status"]["phase"] == "Pending"
    # Defaults were applied (the scheduler and kubelet rely on them).
    assert created["spec"]["schedulerName"] == "default-scheduler"
    assert created["spec"]["restartPolicy"] == "Always"
    got = api.get(f"/api/v1/namespaces/{namespace}/pods/web").json()
    assert got == created


def test_generate_name_gets_a_random_suffix(api: httpx.Client, namespace: str) -> None:
    body = pod("")
    body["metadata"] = {"generateName": "web-"}
    seen = set()
    for _ in range(5):
        r = api.post(f"/api/v1/namespaces/{namespace}/pods", json=body)
        assert r.status_code == 201, r.text
        name = r.json()["metadata"]["name"]
        assert name.startswith("web-") and len(name) == len("web-") + 5
        seen.add(name)
    assert len(seen) == 5


def test_create_existing_name_is_already_exists(api: httpx.Client, namespace: str) -> None:
    assert api.post(f"/api/v1/namespaces/{namespace}/pods", json=pod("dup")).status_code == 201
    r = api.post(f"/api/v1/namespaces/{namespace}/pods", json=pod("dup"))
    assert r.status_code == 409
    body = r.json()
    assert body["kind"] == "Status" and body["reason"] == "AlreadyExists"
    assert body["message"] == 'pods "dup" already exists'
    assert body["details"] == {"name": "dup", "kind": "pods"}


def test_generation_bumps_only_on_spec_changes(api: httpx.Client, namespace: str) -> None:
    base = f"/api/v1/namespaces/{namespace}/replicationcontrollers"
    created = api.post(base, json=rc("web", 1)).json()
    assert created["metadata"]["generation"] == 1
    created["metadata"]["labels"] = {"touched": "yes"}
    after_labels = api.put(f"{base}/web", json=created).json()
    assert after_labels["metadata"]["generation"] == 1
    after_labels["spec"]["replicas"] = 3
    after_spec = api.put(f"{base}/web", json=after_labels).json()
    assert after_spec["metadata"]["generation"] == 2


def test_spec_update_ignores_status_and_status_update_ignores_spec(api: httpx.Client, namespace: str) -> None:
    base = f"/api/v1/namespaces/{namespace}/replicationcontrollers"
    created = api.post(base, json=rc("split", 1)).json()
    created["status"] = {"replicas": 7}
    created["spec"]["replicas"] = 2
    updated = api.put(f"{base}/split", json=created).json()
    assert updated["spec"]["replicas"] == 2
    assert updated["status"]["replicas"] == 0

    updated["status"] = {"replicas": 2, "readyReplicas": 1}
    updated["spec"]["replicas"] = 9
    updated["metadata"]["annotations"] = {"seen-by": "status-writer"}
    after = api.put(f"{base}/split/status", json=updated).json()
    assert after["status"]["replicas"] == 2 and after["status"]["readyReplicas"] == 1
    assert after["spec"]["replicas"] == 2
    # As in kube-apiserver, metadata (not spec) may change through /status.
    assert after["metadata"]["annotations"] == {"seen-by": "status-writer"}


def test_stale_update_is_a_conflict(api: httpx.Client, namespace: str) -> None:
    base = f"/api/v1/namespaces/{namespace}/replicationcontrollers"
    created = api.post(base, json=rc("race", 1)).json()
    first = dict(created, spec={**created["spec"], "replicas": 2})
    assert api.put(f"{base}/race", json=first).status_code == 200
    second = dict(created, spec={**created["spec"], "replicas": 3})
    r = api.put(f"{base}/race", json=second)
    assert r.status_code == 409
    assert r.json()["reason"] == "Conflict"
    assert "the object has been modified" in r.json()["message"]


def test_racing_updates_exactly_one_wins(cluster: harness.Cluster, namespace: str) -> None:
    with harness.admin_client(cluster.url) as c:
        base = f"/api/v1/namespaces/{namespace}/replicationcontrollers"
        created = c.post(base, json=rc("racing", 1)).json()
    barrier = threading.Barrier(8)

    def attempt(i: int) -> int:
        with harness.admin_client(cluster.url) as client:
            body = dict(created, spec={**created["spec"], "replicas": i + 2})
            barrier.wait()
            return client.put(f"{base}/racing", json=body).status_code

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        codes = list(pool.map(attempt, range(8)))
    assert sorted(codes) == [200] + [409] * 7


def test_racing_bindings_exactly_one_wins(cluster: harness.Cluster, namespace: str) -> None:
    with harness.admin_client(cluster.url) as c:
        assert c.post(f"/api/v1/namespaces/{namespace}/pods", json=pod("bindme")).status_code == 201
    barrier = threading.Barrier(6)

    def bind(i: int) -> int:
        with harness.admin_client(cluster.url) as client:
            barrier.wait()
            return client.post(f"/api/v1/namespaces/{namespace}/pods/bindme/binding", json={
                "apiVersion": "v1", "kind": "Binding", "metadata": {"name": "bindme"},
                "target": {"apiVersion": "v1", "kind": "Node", "name": f"node-{i}"}}).status_code

    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        codes = list(pool.map(bind, range(6)))
    assert sorted(codes) == [201] + [409] * 5
    with harness.admin_client(cluster.url) as c:
        bound = c.get(f"/api/v1/namespaces/{namespace}/pods/bindme").json()
    assert bound["spec"]["nodeName"].startswith("node-")
    cond = [x for x in bound["status"]["conditions"] if x["type"] == "PodScheduled"]
    assert cond and cond[0]["status"] == "True"


def test_binding_answers_a_201_status_and_rejects_a_missing_pod(api: httpx.Client, namespace: str) -> None:
    api.post(f"/api/v1/namespaces/{namespace}/pods", json=pod("b1"))
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "b1"},
               "target": {"kind": "Node", "name": "n1"}}
    r = api.post(f"/api/v1/namespaces/{namespace}/bindings", json=binding)
    assert r.status_code == 201
    assert r.json() == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}
    r = api.post(f"/api/v1/namespaces/{namespace}/pods/nope/binding",
                 json={**binding, "metadata": {"name": "nope"}})
    assert r.status_code == 404 and r.json()["reason"] == "NotFound"
    r = api.post(f"/api/v1/namespaces/{namespace}/pods/b1/binding", json=binding)
    assert r.status_code == 409 and 'already assigned to node "n1"' in r.json()["message"]


def test_namespace_must_exist(api: httpx.Client) -> None:
    r = api.post("/api/v1/namespaces/does-not-exist/pods", json=pod("x"))
    assert r.status_code == 404
    assert r.json()["message"] == 'namespaces "does-not-exist" not found'


def test_terminating_namespace_refuses_new_content(api: httpx.Client) -> None:
    name = "terminating-ns-test"
    api.post("/api/v1/namespaces", json={"metadata": {"name": name}})
    r = api.delete(f"/api/v1/namespaces/{name}")
    assert r.status_code == 200
    body = r.json()
    assert body["status"]["phase"] == "Terminating" and body["metadata"]["deletionTimestamp"]
    r = api.post(f"/api/v1/namespaces/{name}/pods", json=pod("x"))
    assert r.status_code == 403
    assert r.json()["reason"] == "Forbidden"
    assert "because it is being terminated" in r.json()["message"]
    # Finalizing it (what the namespace controller does once it is empty) deletes it.
    ns = api.get(f"/api/v1/namespaces/{name}").json()
    ns["spec"]["finalizers"] = []
    r = api.put(f"/api/v1/namespaces/{name}/finalize", json=ns)
    assert r.status_code == 200, r.text
    assert api.get(f"/api/v1/namespaces/{name}").status_code == 404


def test_delete_preconditions(api: httpx.Client, namespace: str) -> None:
    created = api.post(f"/api/v1/namespaces/{namespace}/pods", json=pod("pre")).json()
    r = api.request("DELETE", f"/api/v1/namespaces/{namespace}/pods/pre",
                    json={"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"uid": "wrong"}})
    assert r.status_code == 409 and "Precondition failed: UID in precondition: wrong" in r.json()["message"]
    r = api.request("DELETE", f"/api/v1/namespaces/{namespace}/pods/pre",
                    json={"preconditions": {"resourceVersion": "1"}})
    assert r.status_code == 409
    r = api.request("DELETE", f"/api/v1/namespaces/{namespace}/pods/pre",
                    json={"preconditions": {"uid": created["metadata"]["uid"],
                                            "resourceVersion": created["metadata"]["resourceVersion"]}})
    assert r.status_code == 200
    assert api.get(f"/api/v1/namespaces/{namespace}/pods/pre").status_code == 404


def test_bound_pod_deletion_waits_for_the_kubelet(api: httpx.Client, namespace: str) -> None:
    base = f"/api/v1/namespaces/{namespace}/pods"
    api.post(base, json=pod("unbound"))
    r = api.delete(f"{base}/unbound")
    assert r.status_code == 200
    assert api.get(f"{base}/unbound").status_code == 404

    api.post(base, json=pod("bound", node="n1", terminationGracePeriodSeconds=20))
    r = api.delete(f"{base}/bound")
    assert r.status_code == 200
    marked = api.get(f"{base}/bound").json()
    assert marked["metadata"]["deletionTimestamp"]
    assert marked["metadata"]["deletionGracePeriodSeconds"] == 20
    # A second delete may only shorten the period.
    api.delete(f"{base}/bound", params={"gracePeriodSeconds": 60})
    assert api.get(f"{base}/bound").json()["metadata"]["deletionGracePeriodSeconds"] == 20
    # The kubelet's final delete.
    r = api.delete(f"{base}/bound", params={"gracePeriodSeconds": 0})
    assert r.status_code == 200
    assert api.get(f"{base}/bound").status_code == 404


def test_finalizers_keep_a_deleted_object_until_removed(api: httpx.Client, namespace: str) -> None:
    base = f"/api/v1/namespaces/{namespace}/replicationcontrollers"
    body = rc("fin")
    body["metadata"]["finalizers"] = ["example.com/hold"]
    api.post(base, json=body)
    r = api.delete(f"{base}/fin", params={"propagationPolicy": "Background"})
    assert r.status_code == 200
    held = api.get(f"{base}/fin").json()
    assert held["metadata"]["deletionTimestamp"] and held["metadata"]["finalizers"] == ["example.com/hold"]
    r = api.patch(f"{base}/fin", content=b'{"metadata":{"finalizers":null}}',
                  headers={"Content-Type": "application/merge-patch+json"})
    assert r.status_code == 200, r.text
    assert api.get(f"{base}/fin").status_code == 404


@pytest.mark.parametrize("policy,finalizer", [("Foreground", "foregroundDeletion"), ("Orphan", "orphan")],
                         ids=["foreground", "orphan"])
def test_propagation_policy_is_recorded_as_a_finalizer(api: httpx.Client, namespace: str, policy: str,
                                                      finalizer: str) -> None:
    base = f"/api/v1/namespaces/{namespace}/replicationcontrollers"
    api.post(base, json=rc(f"prop-{finalizer.lower()}"))
    r = api.request("DELETE", f"{base}/prop-{finalizer.lower()}", json={"propagationPolicy": policy})
    assert r.status_code == 200
    held = api.get(f"{base}/prop-{finalizer.lower()}").json()
    assert held["metadata"]["finalizers"] == [finalizer]
    assert held["metadata"]["deletionTimestamp"]


def test_rc_delete_answers_a_success_status(api: httpx.Client, namespace: str) -> None:
    base = f"/api/v1/namespaces/{namespace}/replicationcontrollers"
    uid = api.post(base, json=rc("gone")).json()["metadata"]["uid"]
    r = api.delete(f"{base}/gone", params={"propagationPolicy": "Background"})
    assert r.status_code == 200
    assert r.json() == {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 200,
                        "details": {"name": "gone", "kind": "replicationcontrollers", "uid": uid}}


def test_rc_delete_without_a_policy_is_kept_for_the_garbage_collector_to_orphan(
        api: httpx.Client, namespace: str) -> None:
    # core/v1's default for an RC is Orphan: the RC is answered as it now is, held by the orphan
    # finalizer until the garbage collector has released its Pods.
    base = f"/api/v1/namespaces/{namespace}/replicationcontrollers"
    api.post(base, json=rc("kept"))
    r = api.delete(f"{base}/kept")
    assert r.status_code == 200
    assert r.json()["kind"] == "ReplicationController"
    assert r.json()["metadata"]["finalizers"] == ["orphan"] and r.json()["metadata"]["deletionTimestamp"]


def test_label_and_field_selectors(api: httpx.Client, namespace: str) -> None:
    base = f"/api/v1/namespaces/{namespace}/pods"
    api.post(base, json=pod("a", labels={"app": "web", "tier": "fe"}))
    api.post(base, json=pod("b", labels={"app": "web", "tier": "be"}, node="n2"))
    api.post(base, json=pod("c", labels={"app": "db"}))

    def listed(**params: str) -> list[str]:
        r = api.get(base, params=params)
        assert r.status_code == 200, r.text
        return [p["metadata"]["name"] for p in r.json()["items"]]

    assert listed(labelSelector="app=web") == ["a", "b"]
    assert listed(labelSelector="app=web,tier!=fe") == ["b"]
    assert listed(labelSelector="tier in (fe,be),app") == ["a", "b"]
    assert listed(labelSelector="!tier") == ["c"]
    assert listed(fieldSelector="spec.nodeName=n2") == ["b"]
    assert listed(fieldSelector="spec.nodeName=") == ["a", "c"]
    assert listed(fieldSelector="metadata.name=c,status.phase=Pending") == ["c"]
    r = api.get(base, params={"fieldSelector": "spec.bogus=1"})
    assert r.status_code == 400 and r.json()["message"] == "field label not supported: spec.bogus"
    r = api.get(base, params={"labelSelector": "app in (x"})
    assert r.status_code == 400 and r.json()["kind"] == "Status"


def test_all_namespace_list(api: httpx.Client, namespace: str) -> None:
    api.post(f"/api/v1/namespaces/{namespace}/pods", json=pod("everywhere", labels={"find": namespace}))
    r = api.get("/api/v1/pods", params={"labelSelector": f"find={namespace}"})
    assert [p["metadata"]["namespace"] for p in r.json()["items"]] == [namespace]


def test_pagination_returns_every_object_exactly_once(cluster: harness.Cluster, namespace: str) -> None:
    base = f"/api/v1/namespaces/{namespace}/pods"

    def make(i: int) -> None:
        with harness.admin_client(cluster.url) as c:
            for j in range(i, 1000, 8):
                assert c.post(base, json=pod(f"p-{j:04d}", labels={"even": str(j % 2 == 0).lower()})) \
                    .status_code == 201

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        list(pool.map(make, range(8)))
    with harness.admin_client(cluster.url) as c:
        seen: list[str] = []
        token = None
        rvs = set()
        while True:
            params = {"limit": "137"}
            if token:
                params["continue"] = token
            page = c.get(base, params=params).json()
            seen += [p["metadata"]["name"] for p in page["items"]]
            rvs.add(page["metadata"]["resourceVersion"])
            token = page["metadata"].get("continue")
            if page["items"] and token:
                assert page["metadata"]["remainingItemCount"] == 1000 - len(seen)
            # Writes between pages must not show up: every page reads one snapshot.
            c.post(base, json=pod(f"z-late-{len(seen)}"))
            if not token:
                break
        assert seen == sorted(f"p-{j:04d}" for j in range(1000))
        assert len(rvs) == 1
        # With a selector, pages still hold `limit` matches.
        page = c.get(base, params={"limit": "10", "labelSelector": "even=true"}).json()
        assert len(page["items"]) == 10 and page["metadata"]["continue"]


def test_list_resource_version_semantics(api: httpx.Client, namespace: str) -> None:
    base = f"/api/v1/namespaces/{namespace}/pods"
    rv = int(api.post(base, json=pod("rv1")).json()["metadata"]["resourceVersion"])
    consistent = api.get(base).json()
    assert int(consistent["metadata"]["resourceVersion"]) >= rv
    assert [p["metadata"]["name"] for p in consistent["items"]] == ["rv1"]
    cached = api.get(base, params={"resourceVersion": "0"}).json()
    assert int(cached["metadata"]["resourceVersion"]) > 0
    exact = api.get(base, params={"resourceVersion": str(rv - 1), "resourceVersionMatch": "Exact"}).json()
    assert exact["items"] == []


def test_cluster_scoped_nodes_and_selector_on_unschedulable(api: httpx.Client) -> None:
    api.post("/api/v1/nodes", json=node("crud-node-1"))
    r = api.get("/api/v1/nodes", params={"fieldSelector": "spec.unschedulable=false,metadata.name=crud-node-1"})
    assert [n["metadata"]["name"] for n in r.json()["items"]] == ["crud-node-1"]
    assert "namespace" not in r.json()["items"][0]["metadata"]
    assert api.delete("/api/v1/nodes/crud-node-1").status_code == 200


def test_scale_subresource_reads_and_writes_replicas(api: httpx.Client, namespace: str) -> None:
    base = f"/api/v1/namespaces/{namespace}/replicationcontrollers"
    api.post(base, json=rc("scaled", 2))
    scale = api.get(f"{base}/scaled/scale").json()
    assert scale["kind"] == "Scale" and scale["apiVersion"] == "autoscaling/v1"
    assert scale["spec"]["replicas"] == 2 and scale["status"]["selector"] == "app=scaled"
    scale["spec"]["replicas"] = 5
    assert api.put(f"{base}/scaled/scale", json=scale).json()["spec"]["replicas"] == 5
    r = api.patch(f"{base}/scaled/scale", content=b'{"spec":{"replicas":1}}',
                  headers={"Content-Type": "application/merge-patch+json"})
    assert r.json()["spec"]["replicas"] == 1
    assert api.get(f"{base}/scaled").json()["spec"]["replicas"] == 1


def test_scale_patches_racing_other_writes_all_apply(cluster: harness.Cluster, namespace: str) -> None:
    # A patch of /scale applies to the object as each write attempt reads it (kube-apiserver patches
    # inside GuaranteedUpdate): writers racing it, as a controller writing status does, never make it 409.
    base = f"/api/v1/namespaces/{namespace}/replicationcontrollers"
    with harness.admin_client(cluster.url) as c:
        assert c.post(base, json=rc("raced", 0)).status_code == 201
    barrier = threading.Barrier(8)
    merge = {"Content-Type": "application/merge-patch+json"}

    def write(i: int) -> int:
        with harness.admin_client(cluster.url) as client:
            barrier.wait()
            codes = []
            for round_ in range(5):
                if i % 2:
                    r = client.patch(f"{base}/raced/scale", json={"spec": {"replicas": i + round_}}, headers=merge)
                else:
                    r = client.patch(f"{base}/raced/status", json={"status": {"observedGeneration": round_}},
                                     headers=merge)
                codes.append(r.status_code)
            return max(codes)

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        assert list(pool.map(write, range(8))) == [200] * 8
    # A patch that names a resourceVersion is still guarded by it.
    with harness.admin_client(cluster.url) as c:
        stale = c.patch(f"{base}/raced/scale", json={"metadata": {"resourceVersion": "1"}, "spec": {"replicas": 9}},
                        headers=merge)
    assert stale.status_code == 409, stale.text


def test_many_patches_of_one_object_at_once_all_apply(cluster: harness.Cluster, namespace: str) -> None:
    # Patches that name no resourceVersion never fail on each other: the store retries its lost races
    # for as long as the request may take, as kube-apiserver's GuaranteedUpdate does.
    path = f"/api/v1/namespaces/{namespace}/configmaps/contended"
    with harness.admin_client(cluster.url) as c:
        assert c.post(f"/api/v1/namespaces/{namespace}/configmaps",
                      json={"metadata": {"name": "contended"}}).status_code == 201
    writers = 40
    barrier = threading.Barrier(writers)

    def write(i: int) -> list[int]:
        with harness.admin_client(cluster.url, timeout=60) as client:
            barrier.wait()
            return [client.patch(path, json={"data": {f"k{i}": str(round_)}},
                                 headers={"Content-Type": "application/merge-patch+json"}).status_code
                    for round_ in range(3)]

    with concurrent.futures.ThreadPoolExecutor(writers) as pool:
        codes = [code for result in pool.map(write, range(writers)) for code in result]
    assert codes == [200] * (3 * writers)
    with harness.admin_client(cluster.url) as c:
        assert c.get(path).json()["data"] == {f"k{i}": "2" for i in range(writers)}


def test_uid_in_an_update_is_a_precondition(api: httpx.Client, namespace: str) -> None:
    base = f"/api/v1/namespaces/{namespace}/pods"
    created = api.post(base, json=pod("uidpre")).json()
    r = api.patch(f"{base}/uidpre", content=b'{"metadata":{"uid":"not-mine","labels":{"a":"b"}}}',
                  headers={"Content-Type": "application/merge-patch+json"})
    assert r.status_code == 409
    assert "Precondition failed: UID in precondition: not-mine" in r.json()["message"]
    r = api.patch(f"{base}/uidpre", json={"metadata": {"uid": created["metadata"]["uid"], "labels": {"a": "b"}}},
                  headers={"Content-Type": "application/merge-patch+json"})
    assert r.status_code == 200


def test_empty_owner_references_are_not_stored(api: httpx.Client, namespace: str) -> None:
    base = f"/api/v1/namespaces/{namespace}/pods"
    body = pod("owned")
    body["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "ReplicationController", "name": "x",
                                            "uid": "u-1", "controller": True}]
    api.post(base, json=body)
    patch = {"metadata": {"ownerReferences": [{"$patch": "delete", "uid": "u-1"}]}}
    r = api.patch(f"{base}/owned", json=patch, headers={"Content-Type": "application/strategic-merge-patch+json"})
    assert r.status_code == 200, r.text
    assert "ownerReferences" not in r.json()["metadata"]


def test_generated_names_of_long_prefixes_stay_valid(api: httpx.Client, namespace: str) -> None:
    body = pod("")
    body["metadata"] = {"generateName": "x" * 70 + "-"}
    r = api.post(f"/api/v1/namespaces/{namespace}/pods", json=body)
    assert r.status_code == 201, r.text
    assert len(r.json()["metadata"]["name"]) == 63


def test_default_toleration_seconds_are_configurable() -> None:
    with harness.cluster(apiserver_args=["--default-unreachable-toleration-seconds", "7"]) as c, \
            harness.admin_client(c.url) as api:
        harness.wait_for(lambda: api.get("/api/v1/namespaces/default").status_code == 200)
        created = api.post("/api/v1/namespaces/default/pods", json=pod("tol")).json()
        seconds = {t["key"]: t["tolerationSeconds"] for t in created["spec"]["tolerations"]}
        assert seconds == {"node.kubernetes.io/not-ready": 300, "node.kubernetes.io/unreachable": 7}


def test_deletecollection_with_a_selector(api: httpx.Client, namespace: str) -> None:
    base = f"/api/v1/namespaces/{namespace}/pods"
    for name, app in (("dc-a", "x"), ("dc-b", "x"), ("dc-c", "y")):
        api.post(base, json=pod(name, labels={"app": app}))
    r = api.delete(base, params={"labelSelector": "app=x"})
    assert r.status_code == 200, r.text
    assert r.json()["kind"] == "PodList"
    assert sorted(p["metadata"]["name"] for p in r.json()["items"]) == ["dc-a", "dc-b"]
    assert [p["metadata"]["name"] for p in api.get(base).json()["items"]] == ["dc-c"]


def test_removing_the_last_finalizer_races_with_another_write_without_losing_either(cluster: harness.Cluster,
                                                                                    namespace: str) -> None:
    """A guarded patch that removes the last finalizer and loses a race is a 409, never a silent 200."""
    import asyncio
    import json

    async def race() -> list[tuple[int, int]]:
        outcomes = []
        async with httpx.AsyncClient(base_url=cluster.url, verify=harness.admin_tls()) as client:
            base = f"/api/v1/namespaces/{namespace}/replicationcontrollers"
            for i in range(40):
                name = f"race-{i}"
                body = rc(name, 0)
                body["metadata"]["finalizers"] = ["orphan"]
                await client.post(base, json=body)
                await client.delete(f"{base}/{name}")
                obj = (await client.get(f"{base}/{name}")).json()
                rv = obj["metadata"]["resourceVersion"]
                obj["status"] = {"replicas": 0, "observedGeneration": 7}
                status_put = client.put(f"{base}/{name}/status", json=obj)
                patch = client.patch(f"{base}/{name}",
                                     content=json.dumps({"metadata": {"resourceVersion": rv, "finalizers": None}}),
                                     headers={"Content-Type": "application/merge-patch+json"})
                _, patched = await asyncio.gather(status_put, patch)
                after = await client.get(f"{base}/{name}")
                outcomes.append((patched.status_code, after.status_code))
        return outcomes

    for patched, after in asyncio.run(race()):
        # Either the patch won (the object is gone) or it lost to the status write (409, the
        # object stays with its finalizer for the writer to retry).
        assert (patched, after) in ((200, 404), (409, 200)), (patched, after)


def test_eviction_marks_the_pod_then_deletes_it(api: httpx.Client, namespace: str) -> None:
    base = f"/api/v1/namespaces/{namespace}/pods"
    api.post(base, json=pod("evicted", node="n1"))
    r = api.post(f"{base}/evicted/eviction", json={"apiVersion": "policy/v1", "kind": "Eviction",
                                                   "metadata": {"name": "evicted", "namespace": namespace}})
    assert r.status_code == 201, r.text
    gone = api.get(f"{base}/evicted").json()
    # Bound to a node: it waits for the kubelet, with the reason it goes.
    assert gone["metadata"]["deletionTimestamp"]
    target = [c for c in gone["status"]["conditions"] if c["type"] == "DisruptionTarget"]
    assert target and target[0]["reason"] == "EvictionByEvictionAPI" and target[0]["status"] == "True"
    r = api.post(f"{base}/nope/eviction", json={"apiVersion": "policy/v1", "kind": "Eviction",
                                                "metadata": {"name": "nope"}})
    assert r.status_code == 404


def test_metrics_count_requests_and_their_cpu_by_kind(api: httpx.Client, namespace: str) -> None:
    pod = {"metadata": {"name": "measured"}, "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}}
    assert api.post(f"/api/v1/namespaces/{namespace}/pods", json=pod).status_code == 201
    text = api.get("/metrics").text
    created = [line for line in text.splitlines()
               if line.startswith('apiserver_request_total{') and 'verb="create"' in line
               and 'resource="pods"' in line and 'code="201"' in line]
    assert created and float(created[0].split()[-1]) >= 1
    cpu = [line for line in text.splitlines() if line.startswith("kubesim_apiserver_request_cpu_seconds_total{")
           and 'verb="create"' in line and 'resource="pods"' in line and 'subresource=""' in line]
    assert cpu and float(cpu[0].split()[-1]) > 0
    assert "kubesim_apiserver_watch_fanout_cpu_seconds_total{" in text
