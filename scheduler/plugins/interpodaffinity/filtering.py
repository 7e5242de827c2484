"""InterPodAffinity's PreFilter and Filter: required pod affinity and anti-affinity, both ways.

PreFilter counts, per topology pair (``zone=a``, ``kubernetes.io/hostname=node-1``):

- ``existing_anti``: existing Pods whose *required anti-affinity* selects the
  incoming Pod (the symmetric check: a Pod that repels ours keeps ours away);
- ``affinity``: existing Pods matching *all* the incoming Pod's required
  affinity terms;
- ``anti``: existing Pods matching one of its required anti-affinity terms.

Filter then looks up the node's own topology pairs:

- affinity: every term's topology key must be on the node, with a matching
  Pod in that domain; except that a Pod whose terms match no Pod anywhere but
  match itself may go anywhere (the first Pod of a self-affine group);
- anti-affinity: no matching Pod in the node's domain of any term;
- existing anti-affinity: no Pod repelling ours in any domain of the node.

A term's ``namespaceSelector`` is resolved to namespace names in PreFilter
(``mergeAffinityTermNamespacesIfNotEmpty``), so Filter never reads namespaces.

``affinity`` and ``anti`` come from tallies kept across cycles
(:mod:`scheduler.framework.tallies`) when PreFilter is given every node: the
same counts as Kubernetes' walk over every Pod of every node, without the walk.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Final

from machinery.api import Selector
from scheduler.framework.interface import (
    SKIP,
    SUCCESS,
    Code,
    CycleState,
    Handle,
    NodeInfoLister,
    PreFilterResult,
    StateKey,
    Status,
)
from scheduler.framework.tallies import Tallies
from scheduler.framework.types import AffinityTerm, NodeInfo, PodInfo
from scheduler.plugins import names

NAME: Final = names.INTER_POD_AFFINITY
ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH: Final = "node(s) didn't satisfy existing pods anti-affinity rules"
ERR_REASON_AFFINITY_RULES_NOT_MATCH: Final = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH: Final = "node(s) didn't match pod anti-affinity rules"

_REJECT_AFFINITY: Final = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_AFFINITY_RULES_NOT_MATCH,
                                 plugin=NAME)
_REJECT_ANTI_AFFINITY: Final = Status(Code.UNSCHEDULABLE, ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH, plugin=NAME)
_REJECT_EXISTING: Final = Status(Code.UNSCHEDULABLE, ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH, plugin=NAME)

TopologyPair = tuple[str, str]
Counts = dict[TopologyPair, int]


def _bump(counts: Counts, node: NodeInfo, topology_key: str, value: int) -> None:
    topology_value = node.labels.get(topology_key)
    if topology_value is None:
        return
    pair = (topology_key, topology_value)
    total = counts.get(pair, 0) + value
    if total:
        counts[pair] = total
    else:
        counts.pop(pair, None)


def matches_all(terms: Sequence[AffinityTerm], pod: PodInfo) -> bool:
    """Whether ``pod`` matches every term (and there is at least one); the terms' namespaces are merged."""
    return bool(terms) and all(t.matches(pod, None) for t in terms)


def merge_namespaces(term: AffinityTerm, handle: Handle) -> AffinityTerm:
    """The term with its namespaceSelector turned into namespace names (an empty selector stays: it means all)."""
    if term.namespace_selector.empty():
        return term
    matched = handle.namespaces_matching(term.namespace_selector)
    return replace(term, namespaces=term.namespaces | frozenset(matched), namespace_selector=Selector.nothing())


class PreFilterState:
    """The counts above, for one incoming Pod; preemption's what-ifs add and remove Pods from a clone."""

    __slots__ = ("affinity", "affinity_terms", "anti", "anti_terms", "existing_anti", "namespace_labels", "pod")

    def __init__(self, pod: PodInfo, affinity_terms: tuple[AffinityTerm, ...], anti_terms: tuple[AffinityTerm, ...],
                 namespace_labels: Mapping[str, str] | None) -> None:
        self.pod = pod
        self.affinity_terms = affinity_terms
        self.anti_terms = anti_terms
        self.namespace_labels = namespace_labels
        self.existing_anti: Counts = {}
        self.affinity: Counts = {}
        self.anti: Counts = {}

    def clone(self) -> PreFilterState:
        copy = PreFilterState(self.pod, self.affinity_terms, self.anti_terms, self.namespace_labels)
        copy.existing_anti = dict(self.existing_anti)
        copy.affinity = dict(self.affinity)
        copy.anti = dict(self.anti)
        return copy

    def update_with_pod(self, other: PodInfo, node: NodeInfo, multiplier: int) -> None:
        """Count ``other`` (on ``node``) in or out: ``updateWithPod``."""
        for term in other.required_anti_affinity_terms:
            if term.matches(self.pod, self.namespace_labels):
                _bump(self.existing_anti, node, term.topology_key, multiplier)
        if matches_all(self.affinity_terms, other):
            for term in self.affinity_terms:
                _bump(self.affinity, node, term.topology_key, multiplier)
        for term in self.anti_terms:
            if term.matches(other, None):
                _bump(self.anti, node, term.topology_key, multiplier)


_PRE_FILTER_KEY: Final = StateKey[PreFilterState]("PreFilter" + NAME)


def _add_tally(counts: Counts, tallies: Tallies, lister: NodeInfoLister, terms: tuple[AffinityTerm, ...],
               topology_key: str) -> None:
    """Add, per domain of ``topology_key``, the Pods that match all ``terms``, from a kept tally."""
    def entry(node: NodeInfo) -> tuple[str, int] | None:
        value = node.labels.get(topology_key)
        if value is None:
            return None
        return value, sum(1 for p in node.pods.values() if matches_all(terms, p))

    totals = tallies.tally(lister, (terms, topology_key), entry).totals
    for value, count in totals.items():
        if count:
            pair = (topology_key, value)
            counts[pair] = counts.get(pair, 0) + count


def pre_filter(handle: Handle, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo],
               tallies: Tallies | None = None) -> tuple[PreFilterResult | None, Status]:
    """Count what Filter reads; with ``tallies`` and every node, the incoming Pod's terms use kept counts."""
    if pod.affinity_error is not None:
        return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, f"parsing pod: {pod.affinity_error}", plugin=NAME)
    affinity_terms = tuple(merge_namespaces(t, handle) for t in pod.required_affinity_terms)
    anti_terms = tuple(merge_namespaces(t, handle) for t in pod.required_anti_affinity_terms)
    s = PreFilterState(pod, affinity_terms, anti_terms, handle.namespace_labels(pod.namespace))
    for node in handle.snapshot.have_pods_with_required_anti_affinity():
        for existing in node.pods_with_required_anti_affinity.values():
            for term in existing.required_anti_affinity_terms:
                if term.matches(pod, s.namespace_labels):
                    _bump(s.existing_anti, node, term.topology_key, 1)
    if not s.existing_anti and not affinity_terms and not anti_terms:
        return None, SKIP
    if (affinity_terms or anti_terms) and tallies is not None and nodes is handle.snapshot.node_infos():
        for term in affinity_terms:
            _add_tally(s.affinity, tallies, handle.snapshot, affinity_terms, term.topology_key)
        for term in anti_terms:
            _add_tally(s.anti, tallies, handle.snapshot, (term,), term.topology_key)
    elif affinity_terms or anti_terms:
        for node in nodes:
            for existing in node.pods.values():
                if matches_all(affinity_terms, existing):
                    for term in affinity_terms:
                        _bump(s.affinity, node, term.topology_key, 1)
                for term in anti_terms:
                    if term.matches(existing, None):
                        _bump(s.anti, node, term.topology_key, 1)
    state.write(_PRE_FILTER_KEY, s)
    return None, SUCCESS


def add_pod(state: CycleState, other: PodInfo, node: NodeInfo) -> Status:
    state.read(_PRE_FILTER_KEY).update_with_pod(other, node, 1)
    return SUCCESS


def remove_pod(state: CycleState, other: PodInfo, node: NodeInfo) -> Status:
    state.read(_PRE_FILTER_KEY).update_with_pod(other, node, -1)
    return SUCCESS


def _satisfies_affinity(s: PreFilterState, node: NodeInfo) -> bool:
    pods_exist = True
    for term in s.affinity_terms:
        value = node.labels.get(term.topology_key)
        if value is None:
            # Every topology key must be on the node.
            return False
        if s.affinity.get((term.topology_key, value), 0) <= 0:
            pods_exist = False
    if pods_exist:
        return True
    # The first Pod of a group with affinity to itself: nothing anywhere matches its terms
    # yet, but it matches them, so it may go to any node that has the topology keys.
    return not s.affinity and matches_all(s.affinity_terms, s.pod)


def _satisfies_anti_affinity(s: PreFilterState, node: NodeInfo) -> bool:
    if not s.anti:
        return True
    for term in s.anti_terms:
        value = node.labels.get(term.topology_key)
        if value is not None and s.anti.get((term.topology_key, value), 0) > 0:
            return False
    return True


def _satisfies_existing_anti_affinity(s: PreFilterState, node: NodeInfo) -> bool:
    if not s.existing_anti:
        return True
    return not any(s.existing_anti.get(pair, 0) > 0 for pair in node.labels.items())


def filter_node(state: CycleState, node: NodeInfo) -> Status:
    s = state.read(_PRE_FILTER_KEY)
    if not _satisfies_affinity(s, node):
        return _REJECT_AFFINITY
    if not _satisfies_anti_affinity(s, node):
        return _REJECT_ANTI_AFFINITY
    if not _satisfies_existing_anti_affinity(s, node):
        return _REJECT_EXISTING
    return SUCCESS
