"""Filter plugins against NodeInfo fixtures: every operator, effect and resource, with Kubernetes' reasons and codes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from kubernetes.client import V1Node, V1Pod

from scheduler.framework.interface import Code, CycleState
from scheduler.framework.types import PodInfo
from tests.unit.test_sched_builders import cache_of, framework_for, node, only_plugins, pod, run_filter

OK = (Code.SUCCESS, ())
UNSCHED = Code.UNSCHEDULABLE
UNRESOLVABLE = Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def verdict(plugin: str, the_pod: V1Pod, the_node: V1Node, existing: Sequence[V1Pod] = (),
            args: Mapping[str, Any] | None = None) -> tuple[Code, tuple[str, ...]]:
    cache = cache_of([the_node], existing)
    config = only_plugins(plugin)
    if args is not None:
        config["profiles"][0]["pluginConfig"] = [{"name": plugin, "args": dict(args)}]
    fwk = framework_for(cache, config)
    info = cache.get(the_node.metadata.name)
    status = run_filter(fwk, PodInfo(the_pod), info)
    # The batch fast path must agree with the per-node filter.
    state = CycleState()
    outcome = fwk.run_pre_filter(state, PodInfo(the_pod), [info])
    if outcome.status.is_success():
        passed, _, error = fwk.filter_nodes(state, PodInfo(the_pod), [info])
        assert error.is_success()
        assert bool(passed) == status.is_success()
    return status.code, status.reasons


def on_node(name: str, **requests: str) -> V1Pod:
    return pod(f"existing-{name}-{len(requests)}-{'-'.join(requests.values())}", node_name="n1",
               requests=requests)


@pytest.mark.parametrize(("the_pod", "the_node", "existing", "args", "expected"), [
    pytest.param(pod("p", cpu="1"), node("n1"), [], None, OK, id="fits"),
    pytest.param(pod("p", cpu="1"), node("n1"), [on_node("a", cpu="3500m")], None,
                 (UNSCHED, ("Insufficient cpu",)), id="insufficient-cpu"),
    pytest.param(pod("p", memory="4Gi"), node("n1", memory="8Gi"), [on_node("a", memory="6Gi")], None,
                 (UNSCHED, ("Insufficient memory",)), id="insufficient-memory"),
    pytest.param(pod("p", cpu="1", memory="4Gi"), node("n1", memory="8Gi"),
                 [on_node("a", cpu="3500m", memory="6Gi")], None,
                 (UNSCHED, ("Insufficient cpu", "Insufficient memory")), id="insufficient-cpu-and-memory"),
    pytest.param(pod("p", cpu="5"), node("n1"), [], None, (UNRESOLVABLE, ("Insufficient cpu",)),
                 id="larger-than-the-node-is-unresolvable"),
    pytest.param(pod("p"), node("n1", pods=1), [on_node("a")], None, (UNSCHED, ("Too many pods",)),
                 id="too-many-pods"),
    pytest.param(pod("p", memory="1Gi"), node("n1", cpu="1"), [on_node("a", cpu="2")], None, OK,
                 id="no-cpu-request-ignores-an-overcommitted-cpu"),
    pytest.param(pod("p", cpu="1", init_requests=[{"cpu": "3"}]), node("n1"), [on_node("a", cpu="1500m")], None,
                 (UNSCHED, ("Insufficient cpu",)), id="init-container-sets-the-floor"),
    pytest.param(pod("p", cpu="1", init_requests=[{"cpu": "2"}]), node("n1"), [on_node("a", cpu="1500m")], None,
                 OK, id="init-containers-do-not-add-up"),
    pytest.param(pod("p", requests={"ephemeral-storage": "20Gi"}), node("n1", extra={"ephemeral-storage": "30Gi"}),
                 [on_node("a", **{"ephemeral-storage": "15Gi"})], None,
                 (UNSCHED, ("Insufficient ephemeral-storage",)), id="insufficient-ephemeral-storage"),
    pytest.param(pod("p", requests={"example.com/gpu": "1"}), node("n1"), [], None,
                 (UNRESOLVABLE, ("Insufficient example.com/gpu",)), id="extended-resource-missing"),
    pytest.param(pod("p", requests={"example.com/gpu": "1"}), node("n1", extra={"example.com/gpu": "2"}),
                 [on_node("a", **{"example.com/gpu": "2"})], None,
                 (UNSCHED, ("Insufficient example.com/gpu",)), id="extended-resource-used-up"),
    pytest.param(pod("p", requests={"example.com/gpu": "1"}), node("n1"), [],
                 {"ignoredResources": ["example.com/gpu"]}, OK, id="ignored-resource"),
    pytest.param(pod("p", requests={"example.com/gpu": "1"}), node("n1"), [],
                 {"ignoredResourceGroups": ["example.com"]}, OK, id="ignored-resource-group"),
])
def test_node_resources_fit(the_pod: V1Pod, the_node: V1Node, existing: list[V1Pod], args: dict[str, Any] | None,
                            expected: tuple[Code, tuple[str, ...]]) -> None:
    assert verdict("NodeResourcesFit", the_pod, the_node, existing, args) == expected


def test_assumed_pods_count_like_bound_ones() -> None:
    cache = cache_of([node("n1", cpu="2")])
    fwk = framework_for(cache, only_plugins("NodeResourcesFit"))
    cache.assume_pod(PodInfo(pod("first", cpu="1500m")), "n1")
    assert run_filter(fwk, PodInfo(pod("second", cpu="1")), cache.get("n1")).reasons == ("Insufficient cpu",)
    cache.forget_pod(PodInfo(pod("first", cpu="1500m")))
    assert run_filter(fwk, PodInfo(pod("second", cpu="1")), cache.get("n1")).is_success()


@pytest.mark.parametrize(("node_name", "expected"), [
    pytest.param(None, OK, id="no-node-name"),
    pytest.param("n1", OK, id="same-node"),
    pytest.param("n2", (UNRESOLVABLE, ("node(s) didn't match the requested node name",)), id="other-node"),
])
def test_node_name(node_name: str | None, expected: tuple[Code, tuple[str, ...]]) -> None:
    the_pod = pod("p", nodeName=node_name) if node_name else pod("p")
    assert verdict("NodeName", the_pod, node("n1")) == expected


def port(host_port: int, protocol: str = "TCP", host_ip: str | None = None) -> dict[str, Any]:
    p: dict[str, Any] = {"containerPort": 8080, "hostPort": host_port, "protocol": protocol}
    if host_ip:
        p["hostIP"] = host_ip
    return p


PORT_CONFLICT = (UNSCHED, ("node(s) didn't have free ports for the requested pod ports",))


@pytest.mark.parametrize(("wanted", "used", "expected"), [
    pytest.param([port(8080)], [], OK, id="free"),
    pytest.param([port(8080)], [port(8080)], PORT_CONFLICT, id="same-port"),
    pytest.param([port(8080, "UDP")], [port(8080)], OK, id="other-protocol"),
    pytest.param([port(8080)], [port(8081)], OK, id="other-port"),
    pytest.param([port(8080, host_ip="10.0.0.1")], [port(8080)], PORT_CONFLICT, id="ip-against-any"),
    pytest.param([port(8080)], [port(8080, host_ip="10.0.0.1")], PORT_CONFLICT, id="any-against-ip"),
    pytest.param([port(8080, host_ip="10.0.0.2")], [port(8080, host_ip="10.0.0.1")], OK, id="different-ips"),
    pytest.param([port(8080, host_ip="10.0.0.1")], [port(8080, host_ip="10.0.0.1")], PORT_CONFLICT, id="same-ip"),
])
def test_node_ports(wanted: list[dict[str, Any]], used: list[dict[str, Any]],
                    expected: tuple[Code, tuple[str, ...]]) -> None:
    existing = [pod("existing", node_name="n1", ports=used)] if used else []
    assert verdict("NodePorts", pod("p", ports=wanted), node("n1"), existing) == expected


def required(*terms: list[dict[str, Any]], fields: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    selector_terms: list[dict[str, Any]] = [{"matchExpressions": t} for t in terms]
    if fields is not None:
        selector_terms.append({"matchFields": fields})
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": selector_terms}}}


def expr(key: str, operator: str, *values: str) -> dict[str, Any]:
    e: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        e["values"] = list(values)
    return e


AFFINITY_MISMATCH = (UNRESOLVABLE, ("node(s) didn't match Pod's node affinity/selector",))
LABELS = {"zone": "a", "disk": "ssd", "cores": "8"}


@pytest.mark.parametrize(("spec", "expected"), [
    pytest.param({"nodeSelector": {"zone": "a"}}, OK, id="node-selector-match"),
    pytest.param({"nodeSelector": {"zone": "b"}}, AFFINITY_MISMATCH, id="node-selector-mismatch"),
    pytest.param({"affinity": required([expr("zone", "In", "a", "b")])}, OK, id="in"),
    pytest.param({"affinity": required([expr("zone", "In", "b")])}, AFFINITY_MISMATCH, id="in-mismatch"),
    pytest.param({"affinity": required([expr("zone", "NotIn", "b")])}, OK, id="not-in"),
    pytest.param({"affinity": required([expr("zone", "NotIn", "a")])}, AFFINITY_MISMATCH, id="not-in-mismatch"),
    pytest.param({"affinity": required([expr("disk", "Exists")])}, OK, id="exists"),
    pytest.param({"affinity": required([expr("gpu", "Exists")])}, AFFINITY_MISMATCH, id="exists-mismatch"),
    pytest.param({"affinity": required([expr("gpu", "DoesNotExist")])}, OK, id="does-not-exist"),
    pytest.param({"affinity": required([expr("disk", "DoesNotExist")])}, AFFINITY_MISMATCH,
                 id="does-not-exist-mismatch"),
    pytest.param({"affinity": required([expr("cores", "Gt", "4")])}, OK, id="gt"),
    pytest.param({"affinity": required([expr("cores", "Gt", "8")])}, AFFINITY_MISMATCH, id="gt-mismatch"),
    pytest.param({"affinity": required([expr("cores", "Lt", "16")])}, OK, id="lt"),
    pytest.param({"affinity": required([expr("cores", "Lt", "8")])}, AFFINITY_MISMATCH, id="lt-mismatch"),
    pytest.param({"affinity": required([expr("zone", "In", "b")], [expr("disk", "Exists")])}, OK,
                 id="terms-are-ored"),
    pytest.param({"affinity": required([expr("zone", "In", "a"), expr("disk", "In", "hdd")])}, AFFINITY_MISMATCH,
                 id="expressions-are-anded"),
    pytest.param({"nodeSelector": {"zone": "b"}, "affinity": required([expr("zone", "In", "a")])},
                 AFFINITY_MISMATCH, id="selector-and-affinity-both-apply"),
    pytest.param({"affinity": required(fields=[expr("metadata.name", "In", "n1")])}, OK, id="match-fields"),
    pytest.param({"affinity": required(fields=[expr("metadata.name", "NotIn", "n1")])}, AFFINITY_MISMATCH,
                 id="match-fields-not-in"),
])
def test_node_affinity(spec: dict[str, Any], expected: tuple[Code, tuple[str, ...]]) -> None:
    assert verdict("NodeAffinity", pod("p", **spec), node("n1", labels=LABELS)) == expected


def test_node_affinity_pinned_names_narrow_the_cycle() -> None:
    cache = cache_of([node("n1"), node("n2"), node("n3")])
    fwk = framework_for(cache, only_plugins("NodeAffinity"))
    the_pod = PodInfo(pod("p", affinity=required(fields=[expr("metadata.name", "In", "n2", "n3")])))
    outcome = fwk.run_pre_filter(CycleState(), the_pod, cache.node_infos())
    assert outcome.result is not None and outcome.result.node_names == {"n2", "n3"}


def test_node_affinity_added_by_the_profile() -> None:
    added = {"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [expr("zone", "In", "b")]}]}}}
    assert verdict("NodeAffinity", pod("p"), node("n1", labels=LABELS), args=added) == (
        UNRESOLVABLE, ("node(s) didn't match scheduler-enforced node affinity",))


def taint(key: str, value: str | None, effect: str) -> dict[str, str]:
    t = {"key": key, "effect": effect}
    if value is not None:
        t["value"] = value
    return t


def toleration(key: str | None = None, operator: str | None = None, value: str | None = None,
               effect: str | None = None) -> dict[str, str]:
    return {k: v for k, v in {"key": key, "operator": operator, "value": value, "effect": effect}.items() if v}


@pytest.mark.parametrize(("taints", "tolerations", "expected"), [
    pytest.param([taint("dedicated", "gpu", "NoSchedule")], [],
                 (UNRESOLVABLE, ("node(s) had untolerated taint {dedicated: gpu}",)), id="no-schedule"),
    pytest.param([taint("dedicated", "gpu", "NoExecute")], [],
                 (UNRESOLVABLE, ("node(s) had untolerated taint {dedicated: gpu}",)), id="no-execute"),
    pytest.param([taint("dedicated", "gpu", "PreferNoSchedule")], [], OK, id="prefer-no-schedule-does-not-filter"),
    pytest.param([taint("dedicated", None, "NoSchedule")], [],
                 (UNRESOLVABLE, ("node(s) had untolerated taint {dedicated: }",)), id="taint-without-value"),
    pytest.param([taint("dedicated", "gpu", "NoSchedule")], [toleration("dedicated", "Equal", "gpu", "NoSchedule")],
                 OK, id="equal"),
    pytest.param([taint("dedicated", "gpu", "NoSchedule")], [toleration("dedicated", "Equal", "cpu", "NoSchedule")],
                 (UNRESOLVABLE, ("node(s) had untolerated taint {dedicated: gpu}",)), id="equal-other-value"),
    pytest.param([taint("dedicated", "gpu", "NoSchedule")], [toleration("dedicated", "Exists")], OK,
                 id="exists-any-effect"),
    pytest.param([taint("dedicated", "gpu", "NoExecute")], [toleration("dedicated", "Exists", effect="NoSchedule")],
                 (UNRESOLVABLE, ("node(s) had untolerated taint {dedicated: gpu}",)), id="effect-mismatch"),
    pytest.param([taint("a", "1", "NoSchedule"), taint("b", "2", "NoExecute")], [toleration(operator="Exists")], OK,
                 id="empty-key-exists-tolerates-all"),
    pytest.param([taint("a", "1", "NoSchedule"), taint("b", "2", "NoSchedule")], [toleration("a", "Exists")],
                 (UNRESOLVABLE, ("node(s) had untolerated taint {b: 2}",)), id="first-untolerated-is-reported"),
])
def test_taint_toleration(taints: list[dict[str, str]], tolerations: list[dict[str, str]],
                          expected: tuple[Code, tuple[str, ...]]) -> None:
    assert verdict("TaintToleration", pod("p", tolerations=tolerations), node("n1", taints=taints)) == expected


@pytest.mark.parametrize(("unschedulable", "tolerations", "expected"), [
    pytest.param(False, [], OK, id="schedulable"),
    pytest.param(True, [], (UNRESOLVABLE, ("node(s) were unschedulable",)), id="cordoned"),
    pytest.param(True, [toleration("node.kubernetes.io/unschedulable", "Exists", effect="NoSchedule")], OK,
                 id="tolerates-cordon"),
])
def test_node_unschedulable(unschedulable: bool, tolerations: list[dict[str, str]],
                            expected: tuple[Code, tuple[str, ...]]) -> None:
    assert verdict("NodeUnschedulable", pod("p", tolerations=tolerations),
                   node("n1", unschedulable=unschedulable)) == expected


def gce(name: str, read_only: bool = False) -> dict[str, Any]:
    return {"name": "v", "gcePersistentDisk": {"pdName": name, "readOnly": read_only}}


def ebs(volume_id: str, read_only: bool = False) -> dict[str, Any]:
    return {"name": "v", "awsElasticBlockStore": {"volumeID": volume_id, "readOnly": read_only}}


def iscsi(iqn: str, read_only: bool = False) -> dict[str, Any]:
    return {"name": "v", "iscsi": {"iqn": iqn, "targetPortal": "10.0.0.1:3260", "lun": 0, "readOnly": read_only}}


def rbd(monitors: list[str], image: str, read_only: bool = False) -> dict[str, Any]:
    return {"name": "v", "rbd": {"monitors": monitors, "image": image, "readOnly": read_only}}


DISK_CONFLICT = (UNSCHED, ("node(s) had no available disk",))


@pytest.mark.parametrize(("wanted", "used", "expected"), [
    pytest.param(gce("d1"), gce("d2"), OK, id="gce-other-disk"),
    pytest.param(gce("d1"), gce("d1"), DISK_CONFLICT, id="gce-same-disk"),
    pytest.param(gce("d1", True), gce("d1", True), OK, id="gce-both-read-only"),
    pytest.param(gce("d1", True), gce("d1"), DISK_CONFLICT, id="gce-one-writer"),
    pytest.param(ebs("vol-1"), ebs("vol-2"), OK, id="ebs-other-volume"),
    pytest.param(ebs("vol-1", True), ebs("vol-1", True), DISK_CONFLICT, id="ebs-conflicts-even-read-only"),
    pytest.param(iscsi("iqn.a"), iscsi("iqn.a"), DISK_CONFLICT, id="iscsi-same-iqn"),
    pytest.param(iscsi("iqn.a", True), iscsi("iqn.a", True), OK, id="iscsi-both-read-only"),
    pytest.param(rbd(["m1", "m2"], "img"), rbd(["m2", "m3"], "img"), DISK_CONFLICT, id="rbd-overlapping-monitors"),
    pytest.param(rbd(["m1"], "img"), rbd(["m2"], "img"), OK, id="rbd-other-monitors"),
    pytest.param(rbd(["m1"], "img", True), rbd(["m1"], "img", True), OK, id="rbd-both-read-only"),
])
def test_volume_restrictions(wanted: dict[str, Any], used: dict[str, Any],
                             expected: tuple[Code, tuple[str, ...]]) -> None:
    existing = [pod("existing", node_name="n1", volumes=[used])]
    assert verdict("VolumeRestrictions", pod("p", volumes=[wanted]), node("n1"), existing) == expected


@pytest.mark.parametrize("plugin", ["NodePorts", "VolumeRestrictions", "NodeAffinity", "InterPodAffinity",
                                    "PodTopologySpread"])
def test_plugins_skip_pods_that_give_them_nothing_to_check(plugin: str) -> None:
    cache = cache_of([node("n1")])
    fwk = framework_for(cache, only_plugins(plugin))
    state = CycleState()
    fwk.run_pre_filter(state, PodInfo(pod("plain")), cache.node_infos())
    assert state.skip_filter_plugins == {plugin}
