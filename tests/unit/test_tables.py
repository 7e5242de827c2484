"""Server-side Tables: Accept negotiation, ages, and the cells kube-apiserver's printers produce."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from apiserver import negotiation, printers
from apiserver.errors import APIError
from apiserver.registry.groups import builtin_resources
from machinery.api import kinds

_PRINTERS = {r.info: r.printer for r in builtin_resources()}


class tables:
    """Negotiation and printing, addressed by resource as the APIServer prints them."""

    wants_table = staticmethod(negotiation.wants_table)
    parse_accept = staticmethod(negotiation.parse_accept)
    negotiate = staticmethod(negotiation.negotiate)
    human_duration = staticmethod(printers.human_duration)

    @staticmethod
    def table_for(ri: kinds.ResourceInfo[Any], objects: list[dict[str, Any]], **kwargs: Any) -> dict[str, Any]:
        return printers.table_for(_PRINTERS.get(ri), objects, **kwargs)

NOW = datetime(2024, 5, 1, 12, 0, 0, tzinfo=UTC)
KUBECTL_ACCEPT = ("application/json;as=Table;v=v1;g=meta.k8s.io,"
                  "application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json")


def ago(**delta: float) -> str:
    return (NOW - timedelta(**delta)).strftime("%Y-%m-%dT%H:%M:%SZ")


# --- negotiation ------------------------------------------------------------------------------


@pytest.mark.parametrize("accept, expected", [
    pytest.param(KUBECTL_ACCEPT, True, id="kubectl-get"),
    pytest.param("application/json;as=Table;v=v1beta1;g=meta.k8s.io", True, id="v1beta1"),
    pytest.param("application/yaml;as=Table;v=v1;g=meta.k8s.io", True, id="yaml-table"),
    pytest.param("application/json", False, id="plain-json"),
    pytest.param(None, False, id="no-header"),
    pytest.param("", False, id="empty-header"),
    pytest.param("application/json, application/json;as=Table;v=v1;g=meta.k8s.io", False,
                 id="plain-json-listed-first-wins"),
    pytest.param("application/json;q=0.5, application/json;as=Table;v=v1;g=meta.k8s.io", True,
                 id="higher-q-table-wins"),
    pytest.param("application/json;as=Table;v=v2;g=meta.k8s.io,application/json;as=Table;v=v1;g=meta.k8s.io",
                 True, id="unknown-table-version-skipped"),
    pytest.param("application/json;as=Table;v=v2;g=meta.k8s.io", False, id="only-unknown-table-version"),
    pytest.param("application/json;as=Table", False, id="table-without-group-version"),
    pytest.param("application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io,application/json", False,
                 id="protobuf-table-not-served"),
    pytest.param("*/*;as=Table;v=v1;g=meta.k8s.io", True, id="wildcard-table"),
    pytest.param("application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io", False,
                 id="partial-metadata-is-not-a-table"),
    pytest.param("text/html,application/json;as=Table;v=v1;g=meta.k8s.io", True, id="unserved-type-skipped"),
    pytest.param("application/json;stream=watch;as=Table;v=v1;g=meta.k8s.io", True, id="watch-stream"),
    pytest.param("garbage,,;;", False, id="malformed"),
])
def test_wants_table(accept: str | None, expected: bool) -> None:
    assert tables.wants_table(accept) is expected


def test_parse_accept_orders_like_goautoneg() -> None:
    clauses = tables.parse_accept("*/*;q=0.8, text/*, application/json;as=Table, text/html;q=0.9")
    assert [(c.type, c.subtype) for c in clauses] == [
        ("application", "json"), ("text", "*"), ("text", "html"), ("*", "*")]
    assert clauses[0].params == {"as": "Table"}
    assert clauses[-1].q == pytest.approx(0.8)


def test_negotiate_reports_nothing_acceptable_as_none() -> None:
    assert tables.negotiate("text/html", subtypes=("json",), conversions=()) is None


# --- ages -------------------------------------------------------------------------------------


@pytest.mark.parametrize("seconds, expected", [
    pytest.param(-3, "<invalid>", id="future-beyond-skew"),
    pytest.param(-1.5, "0s", id="clock-skew"),
    pytest.param(0, "0s", id="zero"),
    pytest.param(5, "5s", id="seconds"),
    pytest.param(119, "119s", id="under-two-minutes"),
    pytest.param(120, "2m", id="two-minutes"),
    pytest.param(192, "3m12s", id="minutes-seconds"),
    pytest.param(599, "9m59s", id="under-ten-minutes"),
    pytest.param(600, "10m", id="ten-minutes"),
    pytest.param(179 * 60 + 59, "179m", id="under-three-hours"),
    pytest.param(3 * 3600 + 5 * 60, "3h5m", id="hours-minutes"),
    pytest.param(8 * 3600 + 59 * 60, "8h", id="eight-hours"),
    pytest.param(47 * 3600, "47h", id="under-two-days"),
    pytest.param(51 * 3600, "2d3h", id="days-hours"),
    pytest.param(7 * 86400, "7d", id="week"),
    pytest.param(8 * 86400 + 5 * 3600, "8d", id="eight-days"),
    pytest.param(729 * 86400, "729d", id="under-two-years"),
    pytest.param(730 * 86400, "2y", id="two-years"),
    pytest.param(735 * 86400, "2y5d", id="years-days"),
    pytest.param(9 * 365 * 86400, "9y", id="many-years"),
])
def test_human_duration(seconds: float, expected: str) -> None:
    assert tables.human_duration(timedelta(seconds=seconds)) == expected


# --- pods -------------------------------------------------------------------------------------


def container(name: str = "c", **state: Any) -> dict[str, Any]:
    return {"name": name, "image": "nginx", **state}


def pod(*, phase: str = "Running", statuses: list[dict[str, Any]] | None = None,
        init: list[dict[str, Any]] | None = None, init_statuses: list[dict[str, Any]] | None = None,
        containers: int = 1, **extra: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [container(f"c{i}") for i in range(containers)]}
    if init is not None:
        spec["initContainers"] = init
    status: dict[str, Any] = {"phase": phase, **extra.pop("status", {})}
    if statuses is not None:
        status["containerStatuses"] = statuses
    if init_statuses is not None:
        status["initContainerStatuses"] = init_statuses
    metadata = {"name": "web", "namespace": "default", "creationTimestamp": ago(minutes=5),
                **extra.pop("metadata", {})}
    return {"metadata": metadata, "spec": {**spec, **extra.pop("spec", {})}, "status": status}


def running(name: str = "c0", restarts: int = 0, **extra: Any) -> dict[str, Any]:
    return {"name": name, "ready": True, "restartCount": restarts,
            "state": {"running": {"startedAt": ago(minutes=4)}}, **extra}


def waiting(reason: str, name: str = "c0", restarts: int = 0, **extra: Any) -> dict[str, Any]:
    return {"name": name, "ready": False, "restartCount": restarts, "state": {"waiting": {"reason": reason}},
            **extra}


def terminated(name: str = "c0", restarts: int = 0, **state: Any) -> dict[str, Any]:
    return {"name": name, "ready": False, "restartCount": restarts, "state": {"terminated": state}}


READY = {"conditions": [{"type": "Ready", "status": "True"}]}
DELETING = {"deletionTimestamp": ago(seconds=10)}

POD_CASES = [
    pytest.param(pod(phase="Pending"), "0/1", "Pending", "0", id="pending-unscheduled"),
    pytest.param(pod(phase="Pending", statuses=[waiting("ContainerCreating")]), "0/1", "ContainerCreating", "0",
                 id="container-creating"),
    pytest.param(pod(statuses=[running()], status=READY), "1/1", "Running", "0", id="running"),
    pytest.param(pod(statuses=[running(restarts=5, lastState={"terminated": {
        "exitCode": 1, "finishedAt": ago(minutes=5)}})], status=READY), "1/1", "Running", "5 (5m ago)",
                 id="running-after-restarts"),
    pytest.param(pod(statuses=[waiting("CrashLoopBackOff", restarts=3, lastState={"terminated": {
        "exitCode": 1, "finishedAt": ago(seconds=40)}})]), "0/1", "CrashLoopBackOff", "3 (40s ago)",
                 id="crash-loop-back-off"),
    pytest.param(pod(phase="Succeeded", statuses=[terminated(exitCode=0, reason="Completed")]), "0/1",
                 "Completed", "0", id="completed"),
    pytest.param(pod(phase="Failed", statuses=[terminated(exitCode=1, reason="Error")]), "0/1", "Error", "0",
                 id="error"),
    pytest.param(pod(phase="Failed", statuses=[terminated(exitCode=2)]), "0/1", "ExitCode:2", "0",
                 id="exit-code-without-reason"),
    pytest.param(pod(phase="Failed", statuses=[terminated(exitCode=137, signal=9)]), "0/1", "Signal:9", "0",
                 id="signal-without-reason"),
    pytest.param(pod(phase="Failed", status={"reason": "OutOfcpu"}), "0/1", "OutOfcpu", "0",
                 id="out-of-cpu"),
    pytest.param(pod(statuses=[running()], status=READY, metadata=DELETING), "1/1", "Terminating", "0",
                 id="terminating"),
    pytest.param(pod(phase="Succeeded", statuses=[terminated(exitCode=0, reason="Completed")],
                     metadata=DELETING), "0/1", "Completed", "0", id="deleted-after-completion"),
    pytest.param(pod(statuses=[running()], status={"reason": "NodeLost"}, metadata=DELETING), "1/1",
                 "Unknown", "0", id="node-lost-and-deleted"),
    pytest.param(pod(statuses=[running()], status={"reason": "NodeLost"}), "1/1", "NodeLost", "0",
                 id="node-lost"),
    pytest.param(pod(phase="Pending", init=[container("init")], init_statuses=[
        waiting("PodInitializing", name="init")], statuses=[waiting("PodInitializing")]), "0/1", "Init:0/1",
                 "0", id="init-0-of-1"),
    pytest.param(pod(phase="Pending", init=[container("a"), container("b")], init_statuses=[
        terminated(name="a", exitCode=0, reason="Completed"), {"name": "b", "state": {"running": {}}}]),
                 "0/1", "Init:1/2", "0", id="init-1-of-2"),
    pytest.param(pod(phase="Pending", init=[container("init")], init_statuses=[
        waiting("CrashLoopBackOff", name="init", restarts=2)]), "0/1", "Init:CrashLoopBackOff", "2",
                 id="init-crash-loop"),
    pytest.param(pod(phase="Pending", init=[container("init")], init_statuses=[
        terminated(name="init", exitCode=1, reason="Error")]), "0/1", "Init:Error", "0", id="init-error"),
    pytest.param(pod(phase="Pending", init=[container("init")], init_statuses=[
        terminated(name="init", exitCode=3)]), "0/1", "Init:ExitCode:3", "0", id="init-exit-code"),
    pytest.param(pod(phase="Pending", status={"conditions": [
        {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}]}), "0/1", "SchedulingGated",
                 "0", id="scheduling-gated"),
    pytest.param(pod(containers=2, statuses=[terminated(name="c0", exitCode=0, reason="Completed"),
                                             running("c1")]), "1/2", "NotReady", "0",
                 id="one-completed-one-running-not-ready"),
    pytest.param(pod(containers=2, statuses=[terminated(name="c0", exitCode=0, reason="Completed"),
                                             running("c1")], status=READY), "1/2", "Running", "0",
                 id="one-completed-one-running-ready"),
    pytest.param(pod(init=[{**container("proxy"), "restartPolicy": "Always"}],
                     init_statuses=[{**running("proxy", restarts=1), "started": True}],
                     statuses=[running()], status={**READY, "conditions": [
                         {"type": "Initialized", "status": "True"}, {"type": "Ready", "status": "True"}]}),
                 "2/2", "Running", "1", id="sidecar-counts-as-a-container"),
]


@pytest.mark.parametrize("obj, ready, status, restarts", POD_CASES)
def test_pod_status_cells(obj: dict[str, Any], ready: str, status: str, restarts: str) -> None:
    row = tables.table_for(kinds.PODS, [obj], now=NOW)["rows"][0]
    assert row["cells"][:5] == ["web", ready, status, restarts, "5m"]


def test_pod_wide_cells() -> None:
    obj = pod(statuses=[running()], spec={"nodeName": "node-1", "readinessGates": [
        {"conditionType": "example.com/lb"}, {"conditionType": "example.com/dns"}]},
              status={"podIPs": [{"ip": "10.0.0.7"}], "nominatedNodeName": "node-2",
                      "conditions": [{"type": "example.com/lb", "status": "True"}]})
    assert tables.table_for(kinds.PODS, [obj], now=NOW)["rows"][0]["cells"][5:] == [
        "10.0.0.7", "node-1", "node-2", "1/2"]
    bare = tables.table_for(kinds.PODS, [pod(phase="Pending")], now=NOW)["rows"][0]["cells"]
    assert bare[5:] == ["<none>", "<none>", "<none>", "<none>"]


@pytest.mark.parametrize("phase, reason", [("Succeeded", "Succeeded"), ("Failed", "Failed")])
def test_finished_pods_carry_a_completed_row_condition(phase: str, reason: str) -> None:
    row = tables.table_for(kinds.PODS, [pod(phase=phase)], now=NOW)["rows"][0]
    assert [(c["type"], c["status"], c["reason"]) for c in row["conditions"]] == [("Completed", "True", reason)]
    running_row = tables.table_for(kinds.PODS, [pod()], now=NOW)["rows"][0]
    assert "conditions" not in running_row


# --- nodes, RCs, events, namespaces, leases ---------------------------------------------------


def node(*, ready: str | None = "True", unschedulable: bool = False,
         labels: dict[str, str] | None = None) -> dict[str, Any]:
    status: dict[str, Any] = {
        "nodeInfo": {"kubeletVersion": "v1.32.0", "osImage": "Ubuntu 24.04", "kernelVersion": "6.8.0",
                     "containerRuntimeVersion": "containerd://1.7"},
        "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}, {"type": "Hostname", "address": "n1"}],
    }
    if ready is not None:
        status["conditions"] = [{"type": "MemoryPressure", "status": "False"}, {"type": "Ready", "status": ready}]
    return {"metadata": {"name": "node-1", "creationTimestamp": ago(days=2, hours=3), "labels": labels or {}},
            "spec": {"unschedulable": unschedulable}, "status": status}


@pytest.mark.parametrize("obj, status, roles", [
    pytest.param(node(), "Ready", "<none>", id="ready"),
    pytest.param(node(ready="False"), "NotReady", "<none>", id="not-ready"),
    pytest.param(node(ready="Unknown"), "NotReady", "<none>", id="ready-unknown"),
    pytest.param(node(ready=None), "Unknown", "<none>", id="no-conditions"),
    pytest.param(node(unschedulable=True), "Ready,SchedulingDisabled", "<none>", id="cordoned"),
    pytest.param(node(labels={"node-role.kubernetes.io/control-plane": "", "node-role.kubernetes.io/": "x",
                              "kubernetes.io/role": "edge"}), "Ready", "control-plane,edge", id="roles"),
])
def test_node_cells(obj: dict[str, Any], status: str, roles: str) -> None:
    cells = tables.table_for(kinds.NODES, [obj], now=NOW)["rows"][0]["cells"]
    assert cells == ["node-1", status, roles, "2d3h", "v1.32.0", "10.0.0.1", "<none>", "Ubuntu 24.04",
                     "6.8.0", "containerd://1.7"]


def test_node_without_node_info_prints_unknown() -> None:
    obj = {"metadata": {"name": "n"}, "status": {}}
    assert tables.table_for(kinds.NODES, [obj], now=NOW)["rows"][0]["cells"] == [
        "n", "Unknown", "<none>", "<unknown>", "", "<none>", "<none>", "<unknown>", "<unknown>", "<unknown>"]


def test_replication_controller_cells() -> None:
    rc = {"metadata": {"name": "web", "creationTimestamp": ago(minutes=3, seconds=12)},
          "spec": {"replicas": 3, "selector": {"tier": "fe", "app": "web"},
                   "template": {"spec": {"containers": [container("a"), {"name": "b", "image": "redis"}]}}},
          "status": {"replicas": 2, "readyReplicas": 1}}
    assert tables.table_for(kinds.REPLICATION_CONTROLLERS, [rc], now=NOW)["rows"][0]["cells"] == [
        "web", 3, 2, 1, "3m12s", "a,b", "nginx,redis", "app=web,tier=fe"]
    bare = {"metadata": {"name": "x"}, "spec": {}}
    assert tables.table_for(kinds.REPLICATION_CONTROLLERS, [bare], now=NOW)["rows"][0]["cells"] == [
        "x", 1, 0, 0, "<unknown>", "", "", "<none>"]


@pytest.mark.parametrize("event, cells", [
    pytest.param({"metadata": {"name": "web.17a"}, "type": "Normal", "reason": "Scheduled",
                  "message": " Successfully assigned default/web to node-2\n",
                  "involvedObject": {"kind": "Pod", "name": "web", "fieldPath": "spec.containers{c}"},
                  "source": {"component": "default-scheduler"}, "firstTimestamp": ago(minutes=10),
                  "lastTimestamp": ago(minutes=2), "count": 4},
                 ["2m", "Normal", "Scheduled", "pod/web", "spec.containers{c}", "default-scheduler",
                  "Successfully assigned default/web to node-2", "10m", 4, "web.17a"], id="core-event"),
    pytest.param({"metadata": {"name": "e"}, "type": "Warning", "reason": "Failed", "message": "m",
                  "involvedObject": {"kind": "Node"}, "source": {"component": "kubelet", "host": "node-1"},
                  "firstTimestamp": ago(seconds=30)},
                 ["30s", "Warning", "Failed", "node", "", "kubelet, node-1", "m", "30s", 1, "e"],
                 id="no-last-timestamp-no-name-no-count"),
    pytest.param({"metadata": {"name": "e"}, "type": "Normal", "reason": "R", "message": "m",
                  "involvedObject": {"kind": "Lease", "name": "l"}, "eventTime": "2024-05-01T11:59:00.000000Z",
                  "reportingComponent": "ctrl", "reportingInstance": "ctrl-1",
                  "series": {"count": 7, "lastObservedTime": "2024-05-01T11:59:50.000000Z"}},
                 ["10s", "Normal", "R", "lease/l", "", "ctrl, ctrl-1", "m", "60s", 7, "e"],
                 id="events-api-series"),
])
def test_event_cells(event: dict[str, Any], cells: list[Any]) -> None:
    assert tables.table_for(kinds.EVENTS, [event], now=NOW)["rows"][0]["cells"] == cells


def test_namespace_lease_and_default_cells() -> None:
    ns = {"metadata": {"name": "prod", "creationTimestamp": ago(hours=3, minutes=5)},
          "status": {"phase": "Terminating"}}
    assert tables.table_for(kinds.NAMESPACES, [ns], now=NOW)["rows"][0]["cells"] == ["prod", "Terminating", "3h5m"]
    lease = {"metadata": {"name": "kube-scheduler", "creationTimestamp": ago(seconds=42)},
             "spec": {"holderIdentity": "sched-1_abc"}}
    assert tables.table_for(kinds.LEASES, [lease], now=NOW)["rows"][0]["cells"] == [
        "kube-scheduler", "sched-1_abc", "42s"]
    assert tables.table_for(kinds.LEASES, [{"metadata": {"name": "x"}}], now=NOW)["rows"][0]["cells"] == [
        "x", "", "<unknown>"]
    other = kinds.ResourceInfo(group="example.com", version="v1", plural="widgets", singular="widget",
                               kind="Widget", namespaced=True, model_ref=kinds.PODS.model, etcd_resource="widgets",
                               definition="io.k8s.api.core.v1.Pod")
    table = tables.table_for(other, [{"metadata": {"name": "w", "creationTimestamp": ago(days=1)}}], now=NOW)
    assert [(c["name"], c["type"]) for c in table["columnDefinitions"]] == [("Name", "string"),
                                                                            ("Created At", "date")]
    assert table["rows"][0]["cells"] == ["w", "2024-04-30T12:00:00Z"]


# --- the Table itself ---------------------------------------------------------------------------


@pytest.mark.parametrize("ri, columns", [
    pytest.param(kinds.PODS, [("Name", 0), ("Ready", 0), ("Status", 0), ("Restarts", 0), ("Age", 0), ("IP", 1),
                              ("Node", 1), ("Nominated Node", 1), ("Readiness Gates", 1)], id="pods"),
    pytest.param(kinds.NODES, [("Name", 0), ("Status", 0), ("Roles", 0), ("Age", 0), ("Version", 0),
                               ("Internal-IP", 1), ("External-IP", 1), ("OS-Image", 1), ("Kernel-Version", 1),
                               ("Container-Runtime", 1)], id="nodes"),
    pytest.param(kinds.REPLICATION_CONTROLLERS, [("Name", 0), ("Desired", 0), ("Current", 0), ("Ready", 0),
                                                 ("Age", 0), ("Containers", 1), ("Images", 1), ("Selector", 1)],
                 id="replicationcontrollers"),
    pytest.param(kinds.EVENTS, [("Last Seen", 0), ("Type", 0), ("Reason", 0), ("Object", 0), ("Subobject", 1),
                                ("Source", 1), ("Message", 0), ("First Seen", 1), ("Count", 1), ("Name", 1)],
                 id="events"),
    pytest.param(kinds.NAMESPACES, [("Name", 0), ("Status", 0), ("Age", 0)], id="namespaces"),
    pytest.param(kinds.LEASES, [("Name", 0), ("Holder", 0), ("Age", 0)], id="leases"),
])
def test_column_definitions(ri: kinds.ResourceInfo, columns: list[tuple[str, int]]) -> None:
    defs = tables.table_for(ri, [], now=NOW)["columnDefinitions"]
    assert [(d["name"], d["priority"]) for d in defs] == columns
    assert all(d["description"] for d in defs)
    assert all(set(d) == {"name", "type", "format", "description", "priority"} for d in defs)
    assert [d["name"] for d in defs if d["format"] == "name"] == ["Name"]


def test_table_envelope_and_list_metadata() -> None:
    table = tables.table_for(kinds.PODS, [pod()], resource_version="42", continue_token="abc",
                             remaining_item_count=7, now=NOW)
    assert table["kind"] == "Table" and table["apiVersion"] == "meta.k8s.io/v1"
    assert table["metadata"] == {"resourceVersion": "42", "continue": "abc", "remainingItemCount": 7}
    assert tables.table_for(kinds.PODS, [], now=NOW)["metadata"] == {}


@pytest.mark.parametrize("include, expected", [
    pytest.param("Metadata", "partial", id="metadata"),
    pytest.param("", "partial", id="empty-means-metadata"),
    pytest.param("Object", "object", id="object"),
    pytest.param("None", None, id="none"),
])
def test_include_object(include: str, expected: str | None) -> None:
    obj = pod()
    row = tables.table_for(kinds.PODS, [obj], include_object=include, now=NOW)["rows"][0]
    if expected == "partial":
        assert row["object"] == {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                                 "metadata": obj["metadata"]}
    elif expected == "object":
        assert row["object"] is obj
    else:
        assert row["object"] is None


def test_invalid_include_object_is_a_bad_request() -> None:
    with pytest.raises(APIError) as caught:
        tables.table_for(kinds.PODS, [pod()], include_object="Everything", now=NOW)
    assert caught.value.code == 400 and caught.value.reason == "BadRequest"
    assert caught.value.message == ("includeObject: Invalid value: \"Everything\": "
                                    "must be 'Metadata', 'Object', 'None', or empty")


def test_editing_one_table_does_not_change_the_next() -> None:
    tables.table_for(kinds.PODS, [], now=NOW)["columnDefinitions"][0]["name"] = "changed"
    assert tables.table_for(kinds.PODS, [], now=NOW)["columnDefinitions"][0]["name"] == "Name"


def test_ten_thousand_pods_make_ten_thousand_rows_in_order() -> None:
    pods = []
    for i in range(10_000):
        obj = pod(statuses=[running(restarts=i % 3, lastState={"terminated": {
            "exitCode": 1, "finishedAt": ago(minutes=i % 50)}})], status=READY)
        obj["metadata"]["name"] = f"web-{i}"
        pods.append(obj)
    table = tables.table_for(kinds.PODS, pods, now=NOW)
    assert len(table["rows"]) == 10_000 and table["rows"][-1]["cells"][0] == "web-9999"
