"""Traces: the portable form of objects, the file format and its errors, client actions, filters."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import orjson
import pytest

from kubesim.studies import tracefilter, traceformat
from kubesim.studies.actions import client_actions, initial_objects
from kubesim.studies.objects import DATA_REMOVED, ControlPlaneMade, portable
from kubesim.studies.traceformat import Header, Record, Trace, TraceError

# --- portable objects -----------------------------------------------------------------------------------


def test_server_set_metadata_and_status_go_a_nodes_shape_stays() -> None:
    node = {"kind": "Node", "apiVersion": "v1",
            "metadata": {"name": "n", "uid": "u", "resourceVersion": "9", "creationTimestamp": "t",
                         "managedFields": [{}], "annotations": {"kubesim.io/adopt-node": "true", "a": "b"}},
            "spec": {"podCIDR": "10.0.0.0/24"},
            "status": {"capacity": {"cpu": "4"}, "allocatable": {"cpu": "3"}, "nodeInfo": {"x": 1},
                       "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "m",
                                       "lastHeartbeatTime": "t1", "lastTransitionTime": "t2"}]}}
    out = portable(node)
    assert list(out) == ["apiVersion", "kind", "metadata", "spec", "status"]
    assert out["metadata"] == {"annotations": {"a": "b"}, "name": "n"}
    assert out["status"] == {"allocatable": {"cpu": "3"}, "capacity": {"cpu": "4"},
                             "conditions": [{"message": "m", "reason": "KubeletReady", "status": "True",
                                             "type": "Ready"}]}
    pod = portable({"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "p", "ownerReferences": [
        {"apiVersion": "v1", "kind": "ReplicationController", "name": "rc", "uid": "x", "controller": True}]},
        "spec": {"nodeName": "n"}, "status": {"phase": "Running"}})
    assert pod == {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "ownerReferences": [
        {"apiVersion": "v1", "controller": True, "kind": "ReplicationController", "name": "rc"}]},
        "spec": {"nodeName": "n"}}


def test_secret_data_is_never_copied() -> None:
    out = portable({"kind": "Secret", "apiVersion": "v1", "metadata": {"name": "s"}, "type": "Opaque",
                    "data": {"password": "aHVudGVyMg=="}, "stringData": {"token": "plain"}})
    assert out["data"] == {"password": "", "token": ""} and "stringData" not in out
    assert out["metadata"]["annotations"] == {DATA_REMOVED: "true"}
    docker = portable({"kind": "Secret", "apiVersion": "v1", "metadata": {"name": "d"},
                       "type": "kubernetes.io/dockerconfigjson", "data": {".dockerconfigjson": "eyJhdXRocyI6e319"}})
    assert docker["data"] == {".dockerconfigjson": "e30="}

    # kubectl apply keeps the whole Secret, data in clear, in an annotation: it goes too, data or not.
    applied = orjson.dumps({"apiVersion": "v1", "kind": "Secret", "data": {"password": "aHVudGVyMg=="}}).decode()
    for data in ({"password": "aHVudGVyMg=="}, {}):
        out = portable({"kind": "Secret", "apiVersion": "v1", "type": "Opaque", "data": data, "metadata": {
            "name": "s", "annotations": {"kubectl.kubernetes.io/last-applied-configuration": applied, "team": "a"}}})
        assert out["metadata"]["annotations"] == {"team": "a", DATA_REMOVED: "true"}
        assert "aHVudGVyMg" not in orjson.dumps(out).decode()
    # Other kinds keep it: it is what their clients applied.
    cm = portable({"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "c", "annotations": {
        "kubectl.kubernetes.io/last-applied-configuration": "{}"}}})
    assert cm["metadata"]["annotations"] == {"kubectl.kubernetes.io/last-applied-configuration": "{}"}


def test_a_jobs_selector_generated_from_its_uid_goes() -> None:
    generated = {"batch.kubernetes.io/controller-uid": "u1", "controller-uid": "u1",
                 "batch.kubernetes.io/job-name": "pi", "job-name": "pi"}
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "pi", "uid": "u1"},
           "spec": {"selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "u1"}},
                    "template": {"metadata": {"labels": {**generated, "app": "pi"}},
                                 "spec": {"containers": [{"name": "c", "image": "i"}]}}}}
    out = portable(job)
    assert "selector" not in out["spec"] and out["spec"]["template"]["metadata"]["labels"] == {"app": "pi"}
    assert job["spec"]["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": "u1"}}  # not changed
    bare = portable({**job, "spec": {**job["spec"], "template": {"metadata": {"labels": generated}, "spec": {}}}})
    assert bare["spec"]["template"] == {"metadata": {}, "spec": {}}
    # A manual selector is the client's own.
    manual = {**job, "spec": {**job["spec"], "manualSelector": True}}
    assert portable(manual)["spec"]["selector"] == job["spec"]["selector"]
    assert portable(manual)["spec"]["template"]["metadata"]["labels"] == {**generated, "app": "pi"}


# --- the file format --------------------------------------------------------------------------------------


def obj(kind: str, name: str, namespace: str = "default", api_version: str = "v1", **fields: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    meta.update(fields.pop("meta", {}))
    return {"apiVersion": api_version, "kind": kind, "metadata": meta, **fields}


def trace_of(*records: tuple[float, str, dict[str, Any]] | tuple[float, str, dict[str, Any], dict[str, Any]]) -> Trace:
    out = []
    for i, r in enumerate(records, start=1):
        out.append(Record(i, r[0], r[1], r[2], r[3] if len(r) > 3 else {}))  # type: ignore[arg-type, misc]
    return Trace(Header("2026-01-01T00:00:00.000000Z"), out, records[-1][0] if records else 0.0)


SAMPLE = trace_of((0.0, "INITIAL", obj("Namespace", "default", "")),
                  (1.5, "ADDED", obj("ConfigMap", "c", data={"a": "1"})),
                  (2.0, "DELETED", obj("ConfigMap", "c", data={"a": "1"})))


@pytest.mark.parametrize("name", ["t.jsonl", "t.jsonl.gz"])
def test_a_trace_reads_back_as_written(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    traceformat.write(path, SAMPLE)
    assert (path.read_bytes()[:2] == b"\x1f\x8b") == name.endswith(".gz")
    back = traceformat.read(path)
    assert back.records == SAMPLE.records and back.header.start_time == SAMPLE.header.start_time


def lines(path: Path) -> list[bytes]:
    traceformat.write(path, SAMPLE)
    return path.read_bytes().splitlines(keepends=True)


@pytest.mark.parametrize(("edit", "message"), [
    pytest.param(lambda ls: ls[:-1], "line 5: no end line after record 3: the trace was cut short (truncated)",
                 id="no-end-line"),
    pytest.param(lambda ls: [*ls[:3], ls[3][:20]], "line 4: not a JSON object (the last line is cut: truncated?)",
                 id="cut-mid-line"),
    pytest.param(lambda ls: [ls[0], ls[2], ls[1], *ls[3:]], "line 2: record seq 2 where 1 was expected: lines are "
                 "missing or out of order", id="reordered"),
    pytest.param(lambda ls: [ls[0], ls[1], ls[3], ls[4]], "line 3: record seq 3 where 2 was expected", id="missing"),
    pytest.param(lambda ls: [ls[0].replace(b'"kubesimTrace":1', b'"kubesimTrace":2'), *ls[1:]],
                 "line 1: trace format version 2 is newer than this kubesim reads (1)", id="newer-version"),
    pytest.param(lambda ls: [ls[0], ls[1].replace(b'"INITIAL"', b'"PATCHED"'), *ls[2:]],
                 "line 2: unknown record type 'PATCHED'", id="unknown-type"),
    pytest.param(lambda ls: [ls[0], ls[1], ls[2].replace(b'"t":1.5', b'"t":-1.0'), *ls[3:]],
                 "line 3: time goes back from 0.0 to -1.0", id="time-goes-back"),
    pytest.param(lambda ls: [b'{"hello": 1}\n', *ls[1:]], "line 1: not a kubesim trace", id="not-a-trace"),
])
def test_bad_traces_are_reported_with_their_line(tmp_path: Path, edit: Any, message: str) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"".join(edit(lines(path))))
    with pytest.raises(TraceError) as err:
        traceformat.read(path)
    assert message in str(err.value)
    assert str(path) in str(err.value)


def test_a_truncated_compressed_trace_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl.gz"
    traceformat.write(path, trace_of(*[(float(i), "ADDED", obj("ConfigMap", f"c{i}", data={"x": "y" * 50}))
                                       for i in range(200)]))
    data = path.read_bytes()
    path.write_bytes(data[:len(data) // 2])
    with pytest.raises(TraceError, match="the trace ends in the middle of its compressed data"):
        traceformat.read(path)
    assert gzip.decompress(data)


# --- client actions ----------------------------------------------------------------------------------------


RC = obj("ReplicationController", "web", spec={"replicas": 2, "selector": {"app": "web"}})
OWNED = {"ownerReferences": [{"apiVersion": "v1", "kind": "ReplicationController", "name": "web",
                              "controller": True}]}


def test_client_actions_leave_out_what_the_cluster_did() -> None:
    pod = obj("Pod", "bare", spec={"containers": [{"name": "c", "image": "i"}]})
    bound = {**pod, "spec": {**pod["spec"], "nodeName": "n1"},
             "metadata": {**pod["metadata"], "annotations": {"kubesim.io/selected-node": "n1"}}}
    owned = obj("Pod", "web-x", meta=OWNED, spec={"containers": [{"name": "c", "image": "i"}]})
    victim = obj("Pod", "victim", spec={"containers": [{"name": "c", "image": "i"}]})
    node = obj("Node", "n9", "", spec={}, status={"capacity": {"cpu": "4"}})
    trace = trace_of(
        (0.0, "INITIAL", obj("Namespace", "default", "")),
        (0.0, "INITIAL", victim),
        (1.0, "ADDED", RC),
        (1.1, "ADDED", owned),                                                     # the RC's: not an action
        (1.2, "MODIFIED", {**owned, "spec": {**owned["spec"], "nodeName": "n1"}}),  # scheduled
        (2.0, "ADDED", pod),
        (2.1, "MODIFIED", bound),                                                  # bound: not an action
        (3.0, "MODIFIED", {**RC, "spec": {**RC["spec"], "replicas": 5}}),          # scale
        (3.5, "MODIFIED", {**RC, "spec": {**RC["spec"], "replicas": 5},
                           "metadata": {**RC["metadata"], "labels": {"tier": "web"}}}),  # update
        (4.0, "MODIFIED", victim, {"deleting": True, "disruption": "PreemptionByScheduler"}),
        (4.1, "DELETED", victim, {"disruption": "PreemptionByScheduler"}),
        (5.0, "ADDED", node),
        (5.5, "MODIFIED", {**node, "spec": {"taints": [{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]},
                           "status": {"capacity": {"cpu": "4"}, "conditions": [{"type": "Ready"}]}}),
        (6.0, "MODIFIED", bound, {"deleting": True}),
        (6.2, "DELETED", bound),
        (7.0, "DELETED", node),
    )
    got = [(a.t, a.verb, a.kind, a.key[2], a.replicas) for a in client_actions(trace.records)]
    assert got == [(1.0, "create", "ReplicationController", "web", None),
                   (2.0, "create", "Pod", "bare", None),
                   (3.0, "scale", "ReplicationController", "web", 5),
                   (3.5, "update", "ReplicationController", "web", None),
                   (5.0, "create", "Node", "n9", None),
                   (6.0, "delete", "Pod", "bare", None),
                   (7.0, "delete", "Node", "n9", None)]


def test_a_namespaces_contents_go_with_it() -> None:
    ns = obj("Namespace", "lab", "")
    cm = obj("ConfigMap", "c", "lab")
    trace = trace_of((1.0, "ADDED", ns), (1.1, "ADDED", cm), (2.0, "MODIFIED", ns, {"deleting": True}),
                     (2.1, "DELETED", cm), (2.5, "DELETED", ns))
    assert [(a.verb, a.kind) for a in client_actions(trace.records)] == [
        ("create", "Namespace"), ("create", "ConfigMap"), ("delete", "Namespace")]



def test_what_the_control_plane_makes_without_an_owner_is_not_an_action() -> None:
    web = obj("Service", "web", spec={"selector": {"app": "web"}, "ports": [{"port": 80}]})
    external = obj("Service", "db", spec={"ports": [{"port": 5432}]})
    subsets = [{"addresses": [{"ip": "10.0.0.7"}], "ports": [{"port": 80}]}]
    trace = trace_of(
        (0.0, "INITIAL", obj("Service", "kubernetes", spec={"ports": [{"port": 443}]})),
        (0.0, "INITIAL", obj("Endpoints", "kubernetes", subsets=subsets)),
        (1.0, "ADDED", obj("Namespace", "lab", "")),
        (1.1, "ADDED", obj("ConfigMap", "kube-root-ca.crt", "lab", data={"ca.crt": "x"})),  # the CA publisher's
        (1.2, "ADDED", obj("ServiceAccount", "default", "lab")),                           # the SA controller's
        (1.3, "MODIFIED", obj("ServiceAccount", "default", "lab", imagePullSecrets=[{"name": "r"}])),  # a client's
        (2.0, "ADDED", web),
        (2.1, "ADDED", obj("Endpoints", "web", subsets=subsets)),                          # the Endpoints controller's
        (2.2, "MODIFIED", obj("Endpoints", "web", subsets=[])),
        (3.0, "ADDED", external),
        (3.1, "ADDED", obj("Endpoints", "db", subsets=subsets)),                           # a client's: no selector
        (4.0, "MODIFIED", web, {"deleting": True}),
        (4.1, "DELETED", web),
        (4.2, "DELETED", obj("Endpoints", "web", subsets=[])),                             # gone with its Service
    )
    got = [(a.verb, a.kind, a.key[2]) for a in client_actions(trace.records)]
    assert got == [("create", "Namespace", "lab"), ("update", "ServiceAccount", "default"),
                   ("create", "Service", "web"), ("create", "Service", "db"),
                   ("create", "Endpoints", "db"), ("delete", "Service", "web")]
    # A replay's starting state leaves them to the target too.
    assert [o["kind"] for o in initial_objects(trace)] == []
    made = ControlPlaneMade.among([web, external])
    assert made(obj("Endpoints", "web")) and not made(obj("Endpoints", "db"))
    assert made(obj("EndpointSlice", "kubernetes", api_version="discovery.k8s.io/v1"))
    assert not made(obj("Service", "kubernetes", "lab")) and not made(obj("ConfigMap", "kube-root-ca.crt2"))

# --- filters -------------------------------------------------------------------------------------------------


def test_filters_edit_the_trace() -> None:
    trace = trace_of((0.0, "INITIAL", obj("Namespace", "kube-system", "")),
                     (1.0, "ADDED", obj("ConfigMap", "sys", "kube-system")),
                     (2.0, "ADDED", RC), (10.0, "ADDED", obj("Pod", "p")))
    ops = tracefilter.parse(["drop-namespace kube-system", "multiply-replicas 3", "shift 30s", "stretch 2"])
    out = tracefilter.apply(trace, ops)
    assert [(r.seq, r.t, r.object["metadata"]["name"]) for r in out.records] == [(1, 64.0, "web"), (2, 80.0, "p")]
    assert out.records[0].object["spec"]["replicas"] == 6
    assert tracefilter.apply(trace, tracefilter.parse(["shift -5s"])).records[1].t == 0.0
    assert len(tracefilter.apply(trace, tracefilter.parse(["keep-namespace other"])).records) == 0
    kept = tracefilter.apply(trace_of(*[(float(i), "ADDED", obj("Pod", f"p{i}")) for i in range(400)]),
                             tracefilter.parse(["sample 0.25"], seed=7))
    assert 60 < len(kept.records) < 140


@pytest.mark.parametrize(("text", "message"), [
    ("explode 3", "unknown operation 'explode'"), ("shift", "shift takes 1 argument"),
    ("stretch 0", "the factor must be above 0"), ("multiply-replicas x", "'x' is not a number"),
    ("sample 2", "between 0 and 1"),
])
def test_bad_filters(text: str, message: str) -> None:
    with pytest.raises(tracefilter.FilterError, match=message):
        tracefilter.parse([text])


def test_the_builtin_trace_is_a_valid_trace() -> None:
    from kubesim.studies.replay import trace_path
    trace = traceformat.read(trace_path("builtin:spread-vs-pack"))
    actions = client_actions(trace.records)
    assert sum(a.kind == "Node" and a.verb == "create" for a in actions) >= 4
    assert orjson.dumps(trace.header.line())
