"""The scheduler cache: nodes in zone-interleaved order, assumed Pods, confirmations, node-less Pods, images."""

from __future__ import annotations

from scheduler.cache import Cache, zone_key
from scheduler.framework.types import PodInfo
from tests.unit.test_sched_builders import cache_of, node, pod

ZONE = "topology.kubernetes.io/zone"


def test_nodes_are_listed_zone_by_zone_in_turn() -> None:
    nodes = [node("a1", labels={ZONE: "a"}), node("a2", labels={ZONE: "a"}), node("a3", labels={ZONE: "a"}),
             node("b1", labels={ZONE: "b"}), node("c1", labels={ZONE: "c"}), node("b2", labels={ZONE: "b"})]
    cache = cache_of(nodes)
    assert [n.name for n in cache.node_infos()] == ["a1", "b1", "c1", "a2", "b2", "a3"]
    cache.remove_node("b1")
    assert [n.name for n in cache.node_infos()] == ["a1", "b2", "c1", "a2", "a3"]


def test_zone_key_combines_region_and_zone() -> None:
    assert zone_key(node("n", labels={"topology.kubernetes.io/region": "eu", ZONE: "a"})) == "eu:\x00:a"
    assert zone_key(node("n")) == ""


def test_assume_then_confirm_counts_the_pod_once() -> None:
    cache = cache_of([node("n1")])
    p = pod("p", cpu="1")
    info = PodInfo(p)
    cache.assume_pod(info, "n1")
    assert cache.is_assumed(info.uid) and cache.get("n1").req_cpu == 1000
    bound = p.model_copy(update={"spec": p.spec.model_copy(update={"node_name": "n1"})})
    cache.add_pod(bound)
    assert not cache.is_assumed(info.uid)
    assert cache.get("n1").req_cpu == 1000 and len(cache.get("n1").pods) == 1
    cache.forget_pod(info)
    assert len(cache.get("n1").pods) == 1, "a confirmed Pod is not forgotten"


def test_a_pod_bound_elsewhere_moves_from_its_assumed_node() -> None:
    cache = cache_of([node("n1"), node("n2")])
    p = pod("p", cpu="1")
    cache.assume_pod(PodInfo(p), "n1")
    cache.add_pod(p.model_copy(update={"spec": p.spec.model_copy(update={"node_name": "n2"})}))
    assert cache.get("n1").req_cpu == 0 and cache.get("n2").req_cpu == 1000


def test_forget_releases_the_resources() -> None:
    cache = cache_of([node("n1")])
    info = PodInfo(pod("p", cpu="1", memory="1Gi"))
    cache.assume_pod(info, "n1")
    cache.forget_pod(info)
    n1 = cache.get("n1")
    assert (n1.req_cpu, n1.req_memory, n1.free_pods, len(cache)) == (0, 0, 110, 0)


def test_pods_of_a_deleted_node_stay_counted_until_deleted() -> None:
    cache = cache_of([node("n1")], [pod("p", node_name="n1", cpu="1")])
    cache.remove_node("n1")
    assert cache.get("n1") is None and not cache.node_infos() and len(cache) == 1
    cache.add_node(node("n1"))
    assert cache.get("n1").req_cpu == 1000
    assert cache.remove_pod(PodInfo(pod("p")).uid) is not None and cache.get("n1").req_cpu == 0


def test_pods_with_affinity_are_indexed() -> None:
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"a": "b"}}, "topologyKey": "kubernetes.io/hostname"}]}}
    cache = cache_of([node("n1"), node("n2")], [pod("plain", node_name="n1"),
                                                pod("picky", node_name="n2", affinity=anti)])
    assert [n.name for n in cache.have_pods_with_affinity()] == ["n2"]
    assert [n.name for n in cache.have_pods_with_required_anti_affinity()] == ["n2"]
    cache.remove_pod(PodInfo(pod("picky")).uid)
    assert not cache.have_pods_with_affinity()


def test_images_are_counted_per_node() -> None:
    cache = Cache()
    cache.add_node(node("n1", images=[(["nginx:1.25", "docker.io/nginx:1.25"], 100)]))
    cache.add_node(node("n2", images=[(["nginx:1.25"], 100)]))
    assert cache.image_spread("nginx:1.25") == 2 and cache.image_spread("docker.io/nginx:1.25") == 1
    cache.add_node(node("n2"))
    assert cache.image_spread("nginx:1.25") == 1
