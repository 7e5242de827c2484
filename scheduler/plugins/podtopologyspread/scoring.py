"""PodTopologySpread's PreScore, Score and NormalizeScore: ``whenUnsatisfiable: ScheduleAnyway`` constraints.

Among the feasible nodes with the topology keys, each domain gets its count
of matching Pods (on all nodes that pass the inclusion policies); a node
scores ``sum(count * log(domains + 2) + maxSkew - 1)`` over the constraints
(counting its own Pods for hostname constraints), and normalization gives
the emptiest domain 100: fewer matching Pods, higher score. Nodes without a
topology key score 0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Final

from scheduler.framework.interface import MAX_NODE_SCORE, SKIP, SUCCESS, CycleState, Handle, StateKey, Status
from scheduler.framework.tallies import Tally
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.plugins.podtopologyspread.common import (
    HOSTNAME_LABEL,
    NAME,
    Constraint,
    MatchCounts,
    count_matching,
    includes_every_node,
    node_has_topology_keys,
)


class PreScoreState:
    __slots__ = ("constraints", "counts", "hosts", "ignored", "weights")

    def __init__(self, constraints: list[Constraint]) -> None:
        self.constraints = constraints
        #: Node names missing a topology key; they score 0.
        self.ignored: set[str] = set()
        #: Per constraint: topology value -> matching Pods (hostname constraints are counted in Score).
        self.counts: list[dict[str, int]] = [{} for _ in constraints]
        #: Per hostname constraint, the kept tally Score reads each node's count from (None: count in Score).
        self.hosts: list[Tally | None] = [None] * len(constraints)
        self.weights: list[float] = []

    def clone(self) -> PreScoreState:
        return self


_PRE_SCORE_KEY: Final = StateKey[PreScoreState]("PreScore" + NAME)


def pre_score(handle: Handle, state: CycleState, pod: PodInfo, constraints: list[Constraint],
              feasible: Sequence[NodeInfo], *, require_all_topologies: bool,
              memo: MatchCounts | None = None) -> Status:
    """Count the matching Pods per domain among the feasible nodes' domains, over all nodes.

    With ``memo``, the counts come from the tallies kept across cycles when the
    Pod's inclusion policies admit every node, and Score reads hostname counts
    from them; else they are counted node by node, as Kubernetes does.
    """
    lister = handle.snapshot
    all_nodes = lister.node_infos()
    if not all_nodes or not constraints:
        return SKIP
    s = PreScoreState(constraints)
    sizes = [0] * len(constraints)
    for node in feasible:
        if require_all_topologies and not node_has_topology_keys(node, constraints):
            s.ignored.add(node.name)
            continue
        for i, c in enumerate(constraints):
            if c.topology_key == HOSTNAME_LABEL:
                continue
            value = node.labels.get(c.topology_key, "")
            if value not in s.counts[i]:
                s.counts[i][value] = 0
                sizes[i] += 1
    for i, c in enumerate(constraints):
        size = len(feasible) - len(s.ignored) if c.topology_key == HOSTNAME_LABEL else sizes[i]
        s.weights.append(math.log(size + 2))
    required = tuple(c.topology_key for c in constraints) if require_all_topologies else ()
    if memo is not None:
        # Score's per-node counts of hostname constraints ignore the inclusion policies, as Kubernetes'.
        for i, c in enumerate(constraints):
            if c.topology_key == HOSTNAME_LABEL:
                s.hosts[i] = memo.tally(lister, pod.namespace, c.selector, HOSTNAME_LABEL, ())
    if memo is not None and all(includes_every_node(c, pod) for c in constraints):
        for i, c in enumerate(constraints):
            counts = s.counts[i]
            if c.topology_key == HOSTNAME_LABEL or not counts:
                continue
            totals = memo.tally(lister, pod.namespace, c.selector, c.topology_key, required).totals
            for value in counts:
                counts[value] = totals.get(value, 0)
    else:
        for node in all_nodes:
            if required and not node_has_topology_keys(node, constraints):
                continue
            for i, c in enumerate(constraints):
                counts = s.counts[i]
                if not counts:
                    continue
                value = node.labels.get(c.topology_key, "")
                if value in counts and c.includes(pod, node):
                    counts[value] += count_matching(node.pods.values(), c.selector, pod.namespace)
    state.write(_PRE_SCORE_KEY, s)
    return SUCCESS


def score(state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[int]:
    s = state.read(_PRE_SCORE_KEY)
    out: list[int] = []
    for node in nodes:
        if node.name in s.ignored:
            out.append(0)
            continue
        total = 0.0
        for i, c in enumerate(s.constraints):
            value = node.labels.get(c.topology_key)
            if value is None:
                continue
            if c.topology_key == HOSTNAME_LABEL:
                host = s.hosts[i]
                if host is not None:
                    count = host.per_node[node.name][1]
                else:
                    count = count_matching(node.pods.values(), c.selector, pod.namespace)
            else:
                count = s.counts[i].get(value, 0)
            total += count * s.weights[i] + (c.max_skew - 1)
        # Go's math.Round: halves away from zero (the total is never negative).
        out.append(math.floor(total + 0.5))
    return out


def normalize_score(state: CycleState, nodes: Sequence[NodeInfo], scores: list[int]) -> list[int]:
    s = state.read(_PRE_SCORE_KEY)
    valid = [score for node, score in zip(nodes, scores, strict=True) if node.name not in s.ignored]
    low = min(valid, default=0)
    high = max(valid, default=0)
    out: list[int] = []
    for node, value in zip(nodes, scores, strict=True):
        if node.name in s.ignored:
            out.append(0)
        elif high == 0:
            out.append(MAX_NODE_SCORE)
        else:
            out.append(MAX_NODE_SCORE * (high + low - value) // high)
    return out
