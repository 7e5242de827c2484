"""InterPodAffinity and PodTopologySpread: required and preferred, by hostname, zone and any label, both ways."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from kubernetes.client import V1Node, V1Pod

from scheduler.framework.interface import Code, CycleState, Status
from scheduler.framework.types import PodInfo
from tests.unit.test_sched_builders import FakeCluster, cache_of, node, only_plugins, pod, run_filter

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
NODES = [node("n1", labels={ZONE: "a"}), node("n2", labels={ZONE: "a"}), node("n3", labels={ZONE: "b"})]

AFFINITY = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("node(s) didn't match pod affinity rules",))
ANTI = (Code.UNSCHEDULABLE, ("node(s) didn't match pod anti-affinity rules",))
EXISTING = (Code.UNSCHEDULABLE, ("node(s) didn't satisfy existing pods anti-affinity rules",))
OK = (Code.SUCCESS, ())
SKEW = (Code.UNSCHEDULABLE, ("node(s) didn't match pod topology spread constraints",))
MISSING = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
           ("node(s) didn't match pod topology spread constraints (missing required label)",))


def term(labels: Mapping[str, str], key: str, *, namespaces: Sequence[str] | None = None,
         namespace_selector: Mapping[str, Any] | None = None) -> dict[str, Any]:
    t: dict[str, Any] = {"labelSelector": {"matchLabels": dict(labels)}, "topologyKey": key}
    if namespaces is not None:
        t["namespaces"] = list(namespaces)
    if namespace_selector is not None:
        t["namespaceSelector"] = dict(namespace_selector)
    return t


def affinity(kind: str, *terms: dict[str, Any], preferred: Sequence[tuple[int, dict[str, Any]]] = ()) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if terms:
        spec["requiredDuringSchedulingIgnoredDuringExecution"] = list(terms)
    if preferred:
        spec["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": w, "podAffinityTerm": t} for w, t in preferred]
    return {kind: spec}


def verdicts(plugin: str, the_pod: V1Pod, existing: Sequence[V1Pod], nodes: Sequence[V1Node] = NODES,
             namespaces: Mapping[str, Mapping[str, str]] | None = None,
             rc_selectors: Mapping[tuple[str, str], Mapping[str, str]] | None = None) -> list[tuple[Code, tuple[str, ...]]]:
    cache = cache_of(nodes, existing)
    fwk = FakeCluster(cache, namespaces=namespaces or {"default": {}, "other": {"team": "x"}},
                      rc_selectors=rc_selectors).framework(only_plugins(plugin))
    statuses = [run_filter(fwk, PodInfo(the_pod), cache.get(n.metadata.name)) for n in nodes]
    return [(s.code, s.reasons) for s in statuses]


def on(node_name: str, name: str, labels: Mapping[str, str], namespace: str = "default", **spec: Any) -> V1Pod:
    return pod(name, node_name=node_name, labels=labels, namespace=namespace, **spec)


@pytest.mark.parametrize(("the_pod", "existing", "expected"), [
    pytest.param(pod("p", affinity=affinity("podAffinity", term({"app": "db"}, ZONE))),
                 [on("n1", "db", {"app": "db"})], [OK, OK, AFFINITY], id="affinity-by-zone"),
    pytest.param(pod("p", affinity=affinity("podAffinity", term({"app": "db"}, HOST))),
                 [on("n1", "db", {"app": "db"})], [OK, AFFINITY, AFFINITY], id="affinity-by-hostname"),
    pytest.param(pod("p", affinity=affinity("podAffinity", term({"app": "db"}, "rack"))),
                 [on("n1", "db", {"app": "db"})], [AFFINITY] * 3, id="affinity-needs-the-topology-key"),
    pytest.param(pod("p", affinity=affinity("podAntiAffinity", term({"app": "web"}, HOST))),
                 [on("n1", "web", {"app": "web"})], [ANTI, OK, OK], id="anti-affinity-by-hostname"),
    pytest.param(pod("p", affinity=affinity("podAntiAffinity", term({"app": "web"}, ZONE))),
                 [on("n1", "web", {"app": "web"})], [ANTI, ANTI, OK], id="anti-affinity-by-zone"),
    pytest.param(pod("p", labels={"app": "new"}),
                 [on("n1", "guard", {}, affinity=affinity("podAntiAffinity", term({"app": "new"}, ZONE)))],
                 [EXISTING, EXISTING, OK], id="existing-pods-anti-affinity-is-symmetric"),
    pytest.param(pod("p", labels={"app": "cache"}, affinity=affinity("podAffinity", term({"app": "cache"}, HOST))),
                 [], [OK, OK, OK], id="first-pod-of-a-self-affine-group-goes-anywhere"),
    pytest.param(pod("p", labels={"app": "cache"}, affinity=affinity("podAffinity", term({"app": "cache"}, HOST))),
                 [on("n2", "cache-0", {"app": "cache"})], [AFFINITY, OK, AFFINITY],
                 id="second-pod-of-the-group-follows-the-first"),
    pytest.param(pod("p", affinity=affinity("podAffinity", term({"app": "db"}, ZONE, namespaces=["other"]))),
                 [on("n1", "db", {"app": "db"})], [AFFINITY] * 3, id="namespaces-restrict-the-term"),
    pytest.param(pod("p", affinity=affinity("podAffinity", term({"app": "db"}, ZONE, namespace_selector={
        "matchLabels": {"team": "x"}}))),
                 [on("n3", "db", {"app": "db"}, namespace="other")], [AFFINITY, AFFINITY, OK],
                 id="namespace-selector"),
    pytest.param(pod("p", affinity=affinity("podAffinity", term({"app": "db"}, ZONE, namespace_selector={}))),
                 [on("n3", "db", {"app": "db"}, namespace="other")], [AFFINITY, AFFINITY, OK],
                 id="empty-namespace-selector-means-all-namespaces"),
    pytest.param(pod("p", namespace="other", labels={"app": "new"}),
                 [on("n1", "guard", {}, affinity=affinity("podAntiAffinity", term(
                     {"app": "new"}, HOST, namespace_selector={"matchLabels": {"team": "x"}})))],
                 [EXISTING, OK, OK], id="existing-anti-affinity-with-namespace-selector"),
])
def test_inter_pod_affinity_filter(the_pod: V1Pod, existing: list[V1Pod],
                                   expected: list[tuple[Code, tuple[str, ...]]]) -> None:
    assert verdicts("InterPodAffinity", the_pod, existing) == expected


def score_of(plugin: str, the_pod: V1Pod, existing: Sequence[V1Pod], nodes: Sequence[V1Node] = NODES,
             rc_selectors: Mapping[tuple[str, str], Mapping[str, str]] | None = None,
             objects: Mapping[str, list[Mapping[str, Any]]] | None = None) -> list[int] | None:
    """Normalized scores, or None when PreScore skipped the plugin."""
    cache = cache_of(nodes, existing)
    fwk = FakeCluster(cache, rc_selectors=rc_selectors, objects=objects).framework(only_plugins(plugin))
    state = CycleState()
    infos = [cache.get(n.metadata.name) for n in nodes]
    assert fwk.run_pre_score(state, PodInfo(the_pod), infos).is_success()
    result = fwk.run_score(state, PodInfo(the_pod), infos)
    assert not isinstance(result, Status)
    return result[0][0].normalized if result[0] else None


@pytest.mark.parametrize(("the_pod", "existing", "expected"), [
    pytest.param(pod("p", affinity=affinity("podAffinity", preferred=[(50, term({"app": "db"}, ZONE))])),
                 [on("n1", "db", {"app": "db"})], [100, 100, 0], id="preferred-affinity"),
    pytest.param(pod("p", affinity=affinity("podAntiAffinity", preferred=[(50, term({"app": "db"}, ZONE))])),
                 [on("n1", "db", {"app": "db"})], [0, 0, 100], id="preferred-anti-affinity"),
    pytest.param(pod("p", labels={"app": "web"}),
                 [on("n3", "cache", {}, affinity=affinity("podAffinity", preferred=[(10, term({"app": "web"},
                                                                                              HOST))]))],
                 [0, 0, 100], id="existing-pods-preferences-are-symmetric"),
    pytest.param(pod("p", labels={"app": "web"}),
                 [on("n2", "cache", {}, affinity=affinity("podAffinity", term({"app": "web"}, HOST)))],
                 [0, 100, 0], id="existing-pods-required-affinity-counts-with-hard-weight"),
    pytest.param(pod("p"), [], None, id="nothing-to-score-skips"),
])
def test_inter_pod_affinity_score(the_pod: V1Pod, existing: list[V1Pod], expected: list[int] | None) -> None:
    assert score_of("InterPodAffinity", the_pod, existing) == expected


def spread(max_skew: int, key: str, labels: Mapping[str, str], when: str = "DoNotSchedule",
           **extra: Any) -> list[dict[str, Any]]:
    return [{"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": when,
             "labelSelector": {"matchLabels": dict(labels)}, **extra}]


WEB = {"app": "web"}


@pytest.mark.parametrize(("the_pod", "existing", "nodes", "expected"), [
    pytest.param(pod("p", labels=WEB, topologySpreadConstraints=spread(1, ZONE, WEB)),
                 [on("n1", "w1", WEB), on("n2", "w2", WEB)], NODES, [SKEW, SKEW, OK], id="max-skew-by-zone"),
    pytest.param(pod("p", labels=WEB, topologySpreadConstraints=spread(2, ZONE, WEB)),
                 [on("n1", "w1", WEB), on("n2", "w2", WEB)], NODES, [SKEW, SKEW, OK], id="max-skew-2"),
    pytest.param(pod("p", labels=WEB, topologySpreadConstraints=spread(3, ZONE, WEB)),
                 [on("n1", "w1", WEB), on("n2", "w2", WEB)], NODES, [OK, OK, OK], id="max-skew-3"),
    pytest.param(pod("p", topologySpreadConstraints=spread(1, ZONE, WEB)),
                 [on("n1", "w1", WEB)], NODES, [OK, OK, OK], id="pod-not-matching-its-selector"),
    pytest.param(pod("p", labels=WEB, topologySpreadConstraints=spread(1, HOST, WEB)),
                 [on("n1", "w1", WEB)], NODES, [SKEW, OK, OK], id="by-hostname"),
    pytest.param(pod("p", labels=WEB, topologySpreadConstraints=spread(1, ZONE, WEB, minDomains=3)),
                 [on("n3", "w1", WEB)], NODES, [OK, OK, SKEW], id="min-domains-counts-missing-domains-as-zero"),
    pytest.param(pod("p", labels=WEB, topologySpreadConstraints=spread(1, ZONE, WEB)),
                 [], [*NODES, node("n4")], [OK, OK, OK, MISSING], id="node-without-the-key"),
    pytest.param(pod("p", labels=WEB, nodeSelector={ZONE: "a"}, topologySpreadConstraints=spread(1, HOST, WEB)),
                 [on("n1", "w1", WEB), on("n2", "w2", WEB)], NODES, [OK, OK, OK],
                 id="node-affinity-policy-honor-leaves-out-nodes-the-pod-cannot-use"),
    pytest.param(pod("p", labels=WEB, nodeSelector={ZONE: "a"},
                     topologySpreadConstraints=spread(1, HOST, WEB, nodeAffinityPolicy="Ignore")),
                 [on("n1", "w1", WEB), on("n2", "w2", WEB)], NODES, [SKEW, SKEW, OK],
                 id="node-affinity-policy-ignore-counts-every-node"),
])
def test_pod_topology_spread_filter(the_pod: V1Pod, existing: list[V1Pod], nodes: list[V1Node],
                                    expected: list[tuple[Code, tuple[str, ...]]]) -> None:
    assert verdicts("PodTopologySpread", the_pod, existing, nodes) == expected


def test_pod_topology_spread_scores_emptier_domains_higher() -> None:
    the_pod = pod("p", labels=WEB, topologySpreadConstraints=spread(1, ZONE, WEB, when="ScheduleAnyway"))
    scores = score_of("PodTopologySpread", the_pod, [on("n1", "w1", WEB), on("n2", "w2", WEB)])
    assert scores is not None
    assert scores[2] == 100
    assert scores[0] == scores[1] < 100


def test_default_spreading_applies_to_pods_of_a_replication_controller() -> None:
    owner = {"apiVersion": "v1", "kind": "ReplicationController", "name": "web", "uid": "rc-uid", "controller": True}
    existing = [on("n1", "w1", WEB), on("n1", "w2", WEB), on("n1", "w3", WEB), on("n1", "w4", WEB)]
    the_pod = pod("p", labels=WEB)
    the_pod.metadata.owner_references = [owner]
    scores = score_of("PodTopologySpread", the_pod, existing, rc_selectors={("default", "web"): WEB})
    assert scores is not None
    assert scores[0] < scores[1]
    assert score_of("PodTopologySpread", pod("orphan", labels=WEB), existing) is None


@pytest.mark.parametrize(("kind", "objects"), [
    pytest.param("ReplicaSet", {"replicasets": [{"metadata": {"name": "web", "namespace": "default"},
                                                 "spec": {"selector": {"matchLabels": WEB}}}]}, id="replicaset"),
    pytest.param("StatefulSet", {"statefulsets": [{"metadata": {"name": "web", "namespace": "default"},
                                                   "spec": {"selector": {"matchLabels": WEB}, "serviceName": "web",
                                                            "template": {"metadata": {"labels": WEB}}}}]},
                 id="statefulset"),
    pytest.param(None, {"services": [{"metadata": {"name": "web", "namespace": "default"},
                                      "spec": {"selector": WEB}}]}, id="service-only"),
])
def test_default_spreading_uses_services_replica_sets_and_stateful_sets(
        kind: str | None, objects: Mapping[str, list[Mapping[str, Any]]]) -> None:
    existing = [on("n1", "w1", WEB), on("n1", "w2", WEB), on("n1", "w3", WEB), on("n1", "w4", WEB)]
    the_pod = pod("p", labels=WEB)
    if kind is not None:
        the_pod.metadata.owner_references = [{"apiVersion": "apps/v1", "kind": kind, "name": "web", "uid": "u",
                                              "controller": True}]
    the_pod = type(the_pod).model_validate(the_pod.model_dump(by_alias=True, exclude_none=True))
    scores = score_of("PodTopologySpread", the_pod, existing, objects=objects)
    assert scores is not None, "a default selector was found"
    assert scores[0] < scores[1]
    # Without the owner or Service in the listers, no default applies.
    assert score_of("PodTopologySpread", the_pod, existing) is None
