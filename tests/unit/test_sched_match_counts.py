"""PodTopologySpread's and InterPodAffinity's kept counts equal a full recount after any cache changes.

The tallies are refreshed from the nodes the cache reports changed, so a
change the cache forgot to report would leave a stale count: random changes
of every kind (nodes added, relabelled, removed; Pods assumed, forgotten,
confirmed, relabelled, terminating, deleted) are checked against counting
every node from scratch.
"""

from __future__ import annotations

import datetime as dt
import random

import pytest
from kubernetes.client import V1Node, V1Pod

from machinery.api import Selector
from scheduler.cache import Cache
from scheduler.framework.types import PodInfo
from scheduler.plugins.podtopologyspread.common import HOSTNAME_LABEL, ZONE_LABEL, MatchCounts, count_matching
from tests.unit.test_sched_builders import node, pod

NAMESPACES = ("default", "other")
APPS = ("web", "db")
KEYS = [(ZONE_LABEL, ()), (ZONE_LABEL, (HOSTNAME_LABEL, ZONE_LABEL)), (HOSTNAME_LABEL, ())]


def recount(cache: Cache, namespace: str, selector: Selector, key: str,
            required: tuple[str, ...]) -> tuple[dict[str, tuple[str, int]], dict[str, int]]:
    per_node: dict[str, tuple[str, int]] = {}
    totals: dict[str, int] = {}
    for info in cache.node_infos():
        if required and not all(k in info.labels for k in required):
            continue
        value = info.labels.get(key, "")
        count = count_matching(info.pods.values(), selector, namespace)
        per_node[info.name] = (value, count)
        totals[value] = totals.get(value, 0) + count
    return per_node, totals


def _node(rng: random.Random, name: str) -> V1Node:
    zone = rng.choice(["a", "b", "c", None])
    return node(name, labels={ZONE_LABEL: zone} if zone else {})


def _pod(rng: random.Random, i: int, node_name: str | None = None, *, terminating: bool = False) -> V1Pod:
    p = pod(f"p{i}", namespace=rng.choice(NAMESPACES), labels={"app": rng.choice(APPS)}, node_name=node_name)
    if terminating:
        p.metadata = p.metadata.model_copy(update={"deletion_timestamp": dt.datetime.now(dt.UTC)})
    return p


@pytest.mark.parametrize("seed", range(8))
def test_kept_counts_equal_a_recount(seed: int) -> None:
    rng = random.Random(seed)
    cache = Cache()
    memo = MatchCounts(capacity=4)
    names = [f"n{i}" for i in range(12)]
    for name in names[:6]:
        cache.add_node(_node(rng, name))
    bound: dict[str, object] = {}
    assumed: dict[str, PodInfo] = {}
    for step in range(400):
        op = rng.randrange(8)
        if op == 0:
            cache.add_node(_node(rng, rng.choice(names)))
        elif op == 1 and cache.node_infos():
            cache.remove_node(rng.choice(cache.node_infos()).name)
        elif op in (2, 3) and cache.node_infos():
            p = _pod(rng, step, rng.choice(cache.node_infos()).name, terminating=rng.random() < 0.2)
            cache.add_pod(p)
            bound[p.metadata.uid] = p
        elif op == 4 and bound:
            uid = rng.choice(sorted(bound))
            del bound[uid]
            cache.remove_pod(uid)
        elif op == 5 and bound:
            # A newer version of a bound Pod with other labels, or now terminating.
            uid = rng.choice(sorted(bound))
            old = bound[uid]
            p = old.model_copy(update={"metadata": old.metadata.model_copy(
                update={"labels": {"app": rng.choice(APPS)},
                        "deletion_timestamp": dt.datetime.now(dt.UTC) if rng.random() < 0.3 else None})})
            cache.add_pod(p)
            bound[uid] = p
        elif op == 6 and cache.node_infos():
            info = PodInfo(_pod(rng, step))
            cache.assume_pod(info, rng.choice(cache.node_infos()).name)
            assumed[info.uid] = info
        elif op == 7 and assumed:
            cache.forget_pod(assumed.pop(rng.choice(sorted(assumed))))
        # Check a few tallies each step (not all: a tally left alone must catch up over many changes).
        for _ in range(2):
            namespace = rng.choice(NAMESPACES)
            selector = Selector.parse(f"app={rng.choice(APPS)}")
            key, required = rng.choice(KEYS)
            tally = memo.tally(cache, namespace, selector, key, required)
            assert (tally.per_node, tally.totals) == recount(cache, namespace, selector, key, required), step


def test_a_domain_without_matching_pods_is_still_a_domain() -> None:
    cache = Cache()
    cache.add_node(node("n1", labels={ZONE_LABEL: "a"}))
    cache.add_node(node("n2", labels={ZONE_LABEL: "b"}))
    cache.add_pod(pod("p", labels={"app": "web"}, node_name="n1"))
    tally = MatchCounts().tally(cache, "default", Selector.parse("app=web"), ZONE_LABEL, ())
    assert tally.totals == {"a": 1, "b": 0}
    cache.remove_node("n2")
    tally = MatchCounts().tally(cache, "default", Selector.parse("app=web"), ZONE_LABEL, ())
    assert tally.totals == {"a": 1}


def _affine_pod(rng: random.Random, name: str, node_name: str | None = None) -> V1Pod:
    def term() -> dict:
        return {"labelSelector": {"matchLabels": {"app": rng.choice(APPS)}},
                "topologyKey": rng.choice([ZONE_LABEL, HOSTNAME_LABEL]),
                **({"namespaces": list(NAMESPACES)} if rng.random() < 0.3 else {})}

    affinity = {}
    if rng.random() < 0.5:
        affinity["podAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution":
                                   [term() for _ in range(rng.randint(1, 2))]}
    if rng.random() < 0.7:
        affinity["podAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": [term()]}
    return pod(name, namespace=rng.choice(NAMESPACES), labels={"app": rng.choice(APPS)}, node_name=node_name,
               affinity=affinity or None)


@pytest.mark.parametrize("seed", range(6))
def test_inter_pod_affinity_counts_from_tallies_equal_a_recount(seed: int) -> None:
    from scheduler.framework.interface import CycleState
    from scheduler.framework.tallies import Tallies
    from scheduler.plugins.interpodaffinity import filtering
    from tests.unit.test_sched_builders import framework_for

    rng = random.Random(seed)
    cache = Cache()
    names = [f"n{i}" for i in range(10)]
    for name in names[:6]:
        cache.add_node(_node(rng, name))
    fwk = framework_for(cache, namespaces={ns: {} for ns in NAMESPACES})
    tallies = Tallies(capacity=4)
    bound: list[str] = []
    for step in range(250):
        op = rng.randrange(5)
        if op == 0:
            cache.add_node(_node(rng, rng.choice(names)))
        elif op == 1 and cache.node_infos():
            cache.remove_node(rng.choice(cache.node_infos()).name)
        elif op in (2, 3) and cache.node_infos():
            p = _affine_pod(rng, f"p{step}", rng.choice(cache.node_infos()).name)
            cache.add_pod(p)
            bound.append(p.metadata.uid)
        elif op == 4 and bound:
            cache.remove_pod(bound.pop(rng.randrange(len(bound))))
        incoming = PodInfo(_affine_pod(rng, "incoming"))
        kept, counted = CycleState(), CycleState()
        got = filtering.pre_filter(fwk, kept, incoming, cache.node_infos(), tallies)
        want = filtering.pre_filter(fwk, counted, incoming, list(cache.node_infos()))
        assert got[1].code == want[1].code, step
        if want[1].is_success():
            a, b = kept.read(filtering._PRE_FILTER_KEY), counted.read(filtering._PRE_FILTER_KEY)
            assert (a.affinity, a.anti, a.existing_anti) == (b.affinity, b.anti, b.existing_anti), step
