"""InterPodAffinity's PreScore, Score and NormalizeScore: preferred (anti-)affinity, both ways.

PreScore sums weights per topology pair: the incoming Pod's preferred
affinity terms add their weight for each existing Pod they select (anti-
affinity terms subtract it); existing Pods' required affinity terms that
select the incoming Pod add ``hardPodAffinityWeight``, and their preferred
terms add or subtract their weight. A node scores the sum over its own
topology pairs; normalization maps the lowest to 0 and the highest to 100.

Without preferred terms of its own, only nodes hosting Pods with affinity
are looked at; with no topology score at all, the plugin is skipped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from scheduler.framework.interface import MAX_NODE_SCORE, SKIP, SUCCESS, CycleState, Handle, StateKey, Status
from scheduler.framework.types import AffinityTerm, NodeInfo, PodInfo, WeightedAffinityTerm
from scheduler.plugins.interpodaffinity.filtering import NAME, merge_namespaces

#: topology key -> topology value -> summed weight.
ScoreMap = dict[str, dict[str, int]]


class PreScoreState:
    __slots__ = ("scores",)

    def __init__(self, scores: ScoreMap) -> None:
        self.scores = scores

    def clone(self) -> PreScoreState:
        return self


_PRE_SCORE_KEY: Final = StateKey[PreScoreState]("PreScore" + NAME)


def _process(scores: ScoreMap, term: AffinityTerm, weight: int, pod: PodInfo,
             namespace_labels: Mapping[str, str] | None, node: NodeInfo, multiplier: int) -> None:
    if not node.labels:
        return
    value = node.labels.get(term.topology_key)
    if value is not None and term.matches(pod, namespace_labels):
        by_value = scores.setdefault(term.topology_key, {})
        by_value[value] = by_value.get(value, 0) + weight * multiplier


def pre_score(handle: Handle, state: CycleState, pod: PodInfo, *, hard_pod_affinity_weight: int,
              ignore_preferred_terms_of_existing_pods: bool) -> Status:
    has_constraints = bool(pod.preferred_affinity_terms or pod.preferred_anti_affinity_terms)
    if ignore_preferred_terms_of_existing_pods and not has_constraints:
        return SKIP
    if pod.affinity_error is not None:
        # Kubernetes ignores parsing errors here, for backwards compatibility.
        return SKIP
    preferred = [WeightedAffinityTerm(merge_namespaces(w.term, handle), w.weight)
                 for w in pod.preferred_affinity_terms]
    preferred_anti = [WeightedAffinityTerm(merge_namespaces(w.term, handle), w.weight)
                      for w in pod.preferred_anti_affinity_terms]
    namespace_labels = handle.namespace_labels(pod.namespace)
    snapshot = handle.snapshot
    nodes: Sequence[NodeInfo] = snapshot.node_infos() if has_constraints else snapshot.have_pods_with_affinity()
    scores: ScoreMap = {}
    for node in nodes:
        existing_pods = node.pods if has_constraints else node.pods_with_affinity
        for existing in existing_pods.values():
            for w in preferred:
                _process(scores, w.term, w.weight, existing, None, node, 1)
            for w in preferred_anti:
                _process(scores, w.term, w.weight, existing, None, node, -1)
            if hard_pod_affinity_weight > 0:
                for term in existing.required_affinity_terms:
                    _process(scores, term, hard_pod_affinity_weight, pod, namespace_labels, node, 1)
            for w in existing.preferred_affinity_terms:
                _process(scores, w.term, w.weight, pod, namespace_labels, node, 1)
            for w in existing.preferred_anti_affinity_terms:
                _process(scores, w.term, w.weight, pod, namespace_labels, node, -1)
    if not scores:
        return SKIP
    state.write(_PRE_SCORE_KEY, PreScoreState(scores))
    return SUCCESS


def score(state: CycleState, nodes: Sequence[NodeInfo]) -> list[int]:
    scores = state.read(_PRE_SCORE_KEY).scores
    out: list[int] = []
    for node in nodes:
        total = 0
        for key, by_value in scores.items():
            value = node.labels.get(key)
            if value is not None:
                total += by_value.get(value, 0)
        out.append(total)
    return out


def normalize_score(scores: list[int]) -> list[int]:
    if not scores:
        return []
    low, high = min(scores), max(scores)
    if high == low:
        return [0] * len(scores)
    return [int(MAX_NODE_SCORE * ((s - low) / (high - low))) for s in scores]
