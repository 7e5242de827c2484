"""Node profiles: the packaged default, scaling with --nodes, and every mistake reported with its path."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kubelet_sim.profile import ProfileError, Timings, load_profile, parse_profile


def _profile(groups: list[dict[str, Any]], **top: Any) -> dict[str, Any]:
    return {"apiVersion": "kubesim.io/v1alpha1", "kind": "NodeProfile", "nodeGroups": groups, **top}


def _group(name: str = "worker", count: int = 1, **fields: Any) -> dict[str, Any]:
    return {"name": name, "count": count, "capacity": {"cpu": "4", "memory": "16Gi"}, **fields}


def test_default_profile_is_three_nodes_of_a_small_real_cluster() -> None:
    profile = load_profile()
    nodes = profile.plan()
    assert [n.name for n in nodes] == ["node-1", "node-2", "node-3"]
    assert [n.labels["topology.kubernetes.io/zone"] for n in nodes] == ["zone-a", "zone-b", "zone-c"]
    first = nodes[0]
    assert {k: first.labels[k] for k in ("kubernetes.io/hostname", "kubernetes.io/os", "kubernetes.io/arch",
                                         "beta.kubernetes.io/os", "beta.kubernetes.io/arch")} == {
        "kubernetes.io/hostname": "node-1", "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64"}
    assert [n.pod_cidr for n in nodes] == ["10.0.0.0/24", "10.0.1.0/24", "10.0.2.0/24"]
    assert first.group.capacity["pods"] == "110"
    assert first.group.allocatable["cpu"] == "3800m"
    assert profile.timings == Timings()


@pytest.mark.parametrize(("counts", "nodes", "expected"), [
    pytest.param([3], 5000, [5000], id="one-group-takes-all"),
    pytest.param([2, 1], 6, [4, 2], id="proportional"),
    pytest.param([1, 1, 1], 4, [2, 1, 1], id="remainder-to-the-first"),
    pytest.param([1, 3], 2, [1, 1], id="largest-remainder"),
    pytest.param([0, 2], 3, [0, 3], id="empty-group-stays-empty"),
])
def test_nodes_flag_scales_groups_in_proportion(counts: list[int], nodes: int, expected: list[int]) -> None:
    groups = [_group(f"g{i}", count, namePattern=f"g{i}-{{index}}") for i, count in enumerate(counts)]
    planned = parse_profile(_profile(groups)).plan(nodes)
    assert [sum(1 for p in planned if p.group.name == f"g{i}") for i in range(len(counts))] == expected


def test_groups_get_their_labels_taints_and_consecutive_subnets() -> None:
    profile = parse_profile(_profile([
        _group("cpu", 2, namePattern="cpu-{index}", labels={"tier": "general"}),
        _group("gpu", 1, namePattern="gpu-{index}", region="eu", zones=["z1"],
               taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}],
               capacity={"cpu": "8", "memory": "32Gi", "example.com/gpu": "2"}, allocatable={"cpu": "7"}),
    ], clusterCIDR="10.244.0.0/16", nodeCIDRMaskSize=24))
    nodes = profile.plan()
    assert [(n.name, n.pod_cidr) for n in nodes] == [
        ("cpu-1", "10.244.0.0/24"), ("cpu-2", "10.244.1.0/24"), ("gpu-1", "10.244.2.0/24")]
    gpu = nodes[2]
    assert gpu.labels["topology.kubernetes.io/region"] == "eu"
    assert gpu.labels["topology.kubernetes.io/zone"] == "z1"
    assert gpu.group.taints == ({"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},)
    assert gpu.group.allocatable == {"cpu": "7", "memory": "32Gi", "example.com/gpu": "2", "pods": "110"}
    assert nodes[0].labels["tier"] == "general"


def test_shards_of_one_profile_make_the_cluster_one_process_would() -> None:
    profile = load_profile()
    whole = profile.plan(6)
    shards = profile.plan(3) + profile.plan(3, offset=3)
    assert [(n.name, n.pod_cidr, n.labels) for n in shards] == [(n.name, n.pod_cidr, n.labels) for n in whole]
    assert shards[3].name == "node-4"


def test_shards_fit_the_cluster_cidr_and_need_one_group() -> None:
    tight = parse_profile(_profile([_group(namePattern="n-{index}")], clusterCIDR="10.0.0.0/23",
                                   nodeCIDRMaskSize=24))
    assert [n.pod_cidr for n in tight.plan(1, offset=1)] == ["10.0.1.0/24"]
    with pytest.raises(ProfileError, match="holds 2 subnets of /24, not enough for 3 nodes"):
        tight.plan(2, offset=1)
    two = parse_profile(_profile([_group("a", namePattern="a-{index}"), _group("b", namePattern="b-{index}")]))
    with pytest.raises(ProfileError, match="--node-offset needs a node profile with one node group"):
        two.plan(2, offset=2)


def test_timings_accept_go_durations_and_seconds() -> None:
    profile = parse_profile(_profile([_group()], timings={
        "containerStartDelay": "250ms", "containerStartJitter": 0, "nodeLeaseDurationSeconds": 20,
        "nodeLeaseRenewInterval": "5s", "nodeStatusUpdateFrequency": 3, "nodeStatusReportFrequency": "1m"}))
    assert profile.timings == Timings(0.25, 0.0, 20, 5.0, 3.0, 60.0)


@pytest.mark.parametrize(("doc", "message"), [
    pytest.param(_profile([_group(capacity={"cpu": "four", "memory": "1Gi"})]),
                 'nodeGroups[0].capacity.cpu: Invalid value: "four": quantities must match',
                 id="bad-quantity"),
    pytest.param(_profile([_group(capacity={"memory": "1Gi"})]), "nodeGroups[0].capacity.cpu: Required value",
                 id="missing-cpu"),
    pytest.param(_profile([_group(allocatable={"cpu": "5"})]),
                 'nodeGroups[0].allocatable.cpu: Invalid value: "5": more than the capacity 4',
                 id="over-capacity"),
    pytest.param(_profile([_group(capcity={"cpu": "1"})]),
                 'nodeGroups[0].capcity: Invalid value: unknown field "capcity"', id="unknown-field"),
    pytest.param(_profile([_group(taints=[{"key": "k", "effect": "NoRun"}])]),
                 'nodeGroups[0].taints[0].effect: Unsupported value: "NoRun"', id="bad-taint-effect"),
    pytest.param(_profile([_group(labels={"bad key!": "v"})]),
                 'nodeGroups[0].labels: Invalid value: "bad key!"', id="bad-label-key"),
    pytest.param(_profile([_group(count=2, namePattern="same")]),
                 'namePattern: Invalid value: "same": must contain {index}', id="pattern-without-index"),
    pytest.param(_profile([_group(namePattern="Node_{index}")]), 'namePattern: Invalid value: "Node_{index}"',
                 id="name-not-dns"),
    pytest.param(_profile([_group(allocatable={"pods": "300"}, capacity={"cpu": "1", "memory": "1Gi",
                                                                          "pods": "300"})]),
                 "more Pods than the 253 addresses of a /24 podCIDR", id="pods-beyond-podcidr"),
    pytest.param(_profile([_group()], timings={"nodeLeaseRenewInterval": "soon"}),
                 'timings.nodeLeaseRenewInterval: Invalid value: \'soon\': time: invalid duration "soon"',
                 id="bad-duration"),
    pytest.param(_profile([_group()], clusterCIDR="10.0.0.0/33"), "clusterCIDR: Invalid value",
                 id="bad-cidr"),
    pytest.param(_profile([_group()], kind="Pod"), 'kind: Unsupported value: "Pod"', id="wrong-kind"),
    pytest.param(_profile([]), "nodeGroups: Required value", id="no-groups"),
    pytest.param(["not", "a", "mapping"], "profile: Invalid value: must be a mapping", id="not-a-mapping"),
])
def test_invalid_profiles_are_reported_with_their_path(doc: Any, message: str) -> None:
    with pytest.raises(ProfileError) as err:
        parse_profile(doc, "test.yaml")
    assert "node profile test.yaml is invalid" in str(err.value)
    assert message in str(err.value)


def test_every_problem_is_reported_at_once() -> None:
    with pytest.raises(ProfileError) as err:
        parse_profile(_profile([_group(capacity={"cpu": "x"}, labels={"a b": "c"})]))
    assert all(field in str(err.value) for field in ("capacity.cpu", "labels", "capacity.memory"))


@pytest.mark.parametrize(("doc", "nodes", "message"), [
    pytest.param(_profile([_group(namePattern="n-{index}")], clusterCIDR="10.0.0.0/24", nodeCIDRMaskSize=24),
                 2, "clusterCIDR 10.0.0.0/24 holds 1 subnets of /24, not enough for 2 nodes",
                 id="cidr-too-small"),
    pytest.param(_profile([_group("a", namePattern="n-{index}"), _group("b", namePattern="n-{index}")]), None,
                 'node group "b" names a node "n-1" that another group also names', id="duplicate-names"),
])
def test_plans_that_cannot_be_registered_are_refused(doc: dict[str, Any], nodes: int | None,
                                                     message: str) -> None:
    profile = parse_profile(doc)
    with pytest.raises(ProfileError, match=message):
        profile.plan(nodes)


def test_files_that_cannot_be_read_or_parsed_are_reported(tmp_path: Path) -> None:
    with pytest.raises(ProfileError, match="cannot read node profile .*missing.yaml"):
        load_profile(tmp_path / "missing.yaml")
    broken = tmp_path / "broken.yaml"
    broken.write_text("nodeGroups: [\n")
    with pytest.raises(ProfileError, match="is not valid YAML"):
        load_profile(broken)
    good = tmp_path / "good.yaml"
    good.write_text(yaml.safe_dump(_profile([_group("edge", 2, namePattern="edge-{index}")])))
    assert [n.name for n in load_profile(good).plan()] == ["edge-1", "edge-2"]
