"""One scheduling decision, as ``schedule_one.go``'s ``schedulePod``: filter, score, pick.

Steps, for a Pod and a profile's framework:

1. PreFilter; a rejection there rejects every node at once;
2. the nominated node first (a Pod that preempted goes where it made room);
3. Filter, starting where the previous cycle stopped (round robin over the
   cache's zone-interleaved node list) and stopping once enough feasible
   nodes are found: ``percentageOfNodesToScore`` of the cluster, by default
   adaptive (50% minus 1% per 125 nodes, at least 5% and at least 100 nodes),
   so a cycle over 5,000 nodes checks about 500;
4. PreScore and Score over the feasible nodes (skipped when only one is left);
5. the highest total wins; ties are broken uniformly at random by reservoir
   sampling over the best nodes, as Kubernetes' ``selectHost`` does, so that
   equal nodes fill evenly.

The outcome is a value: a :class:`ScheduleResult`, a
:class:`~scheduler.framework.diagnosis.FitError` (no node fits), or an
error :class:`~scheduler.framework.interface.Status`. Nothing here talks to
the APIServer or awaits; the scheduler runs it between two awaits, against
its cache (see :mod:`scheduler.cache` for why that is safe).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

from scheduler.cache import Cache
from scheduler.framework.diagnosis import NO_NODES_AVAILABLE, Diagnosis, FitError
from scheduler.framework.interface import Code, CycleState, Status
from scheduler.framework.runtime import Framework, PluginScores
from scheduler.framework.types import NodeInfo, PodInfo

MIN_FEASIBLE_NODES_TO_FIND: Final = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND: Final = 5
#: How many of the best nodes are reported with their scores (``numberOfHighestScoredNodesToReport``).
NODES_TO_REPORT: Final = 3
#: Nodes filtered per batch call when many nodes fail (fewer calls, at the price of some extra checks).
_MIN_CHUNK: Final = 64


def num_feasible_nodes_to_find(percentage: int, num_all_nodes: int) -> int:
    """``numFeasibleNodesToFind``: after how many feasible nodes a cycle stops filtering."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    if percentage == 0:
        percentage = max(50 - num_all_nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    return max(num_all_nodes * percentage // 100, MIN_FEASIBLE_NODES_TO_FIND)


@dataclass(frozen=True, slots=True)
class NodeScore:
    """A node's total and, per Score plugin, (raw score, normalized score, weight)."""

    name: str
    total: int
    plugins: dict[str, tuple[int, int, int]] = field(default_factory=dict)


@dataclass(slots=True)
class ScheduleResult:
    suggested_host: str
    #: Nodes checked by Filter (feasible plus rejected).
    evaluated_nodes: int
    feasible_nodes: int
    num_all_nodes: int
    #: Rejections among the evaluated nodes (the explanation shows them).
    diagnosis: Diagnosis
    #: The best nodes with their scores, the chosen one first; empty when scoring was skipped.
    top: list[NodeScore]
    #: Score plugins that PreScore skipped.
    skipped_score_plugins: tuple[str, ...] = ()
    #: Every feasible node, in the order scored, with every Score plugin's scores and the totals
    #: (references to what the cycle computed, kept for ``/debug/decisions``; nothing is copied).
    feasible: list[str] = field(default_factory=list)
    scores: list[PluginScores] = field(default_factory=list)
    totals: list[int] = field(default_factory=list)


class Algorithm:
    """``schedulePod`` with its state across cycles: where the next cycle starts filtering."""

    def __init__(self, cache: Cache, *, percentage_of_nodes_to_score: int = 0,
                 rng: random.Random | None = None) -> None:
        self._cache = cache
        self._percentage = percentage_of_nodes_to_score
        self._rng = rng or random.Random()
        self.next_start_node_index = 0

    def set_percentage_of_nodes_to_score(self, percentage: int) -> None:
        """The global ``percentageOfNodesToScore`` of a reloaded configuration."""
        self._percentage = percentage

    def schedule_pod(self, fwk: Framework, state: CycleState, pod: PodInfo) -> ScheduleResult | FitError | Status:
        all_nodes = self._cache.node_infos()
        if not all_nodes:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, NO_NODES_AVAILABLE)
        found = self._find_nodes_that_fit(fwk, state, pod, all_nodes)
        if isinstance(found, Status):
            return found
        feasible, diagnosis = found
        if not feasible:
            return FitError(pod, len(all_nodes), diagnosis)
        evaluated = len(feasible) + len(diagnosis.node_to_status)
        if len(feasible) == 1:
            return ScheduleResult(feasible[0].name, evaluated, 1, len(all_nodes), diagnosis, [],
                                  feasible=[feasible[0].name])
        scored = self._prioritize(fwk, state, pod, feasible)
        if isinstance(scored, Status):
            return scored
        plugin_scores, totals = scored
        chosen, top = select_host(totals, self._rng)
        report = [NodeScore(feasible[i].name, totals[i],
                            {ps.plugin: (ps.raw[i], ps.normalized[i], ps.weight) for ps in plugin_scores})
                  for i in top]
        skipped = tuple(p.name for p in fwk.score_plugins if p.name in state.skip_score_plugins)
        return ScheduleResult(feasible[chosen].name, evaluated, len(feasible), len(all_nodes), diagnosis, report,
                              skipped, feasible=[n.name for n in feasible], scores=plugin_scores, totals=totals)

    def _find_nodes_that_fit(self, fwk: Framework, state: CycleState, pod: PodInfo,
                             all_nodes: list[NodeInfo]) -> tuple[list[NodeInfo], Diagnosis] | Status:
        diagnosis = Diagnosis()
        outcome = fwk.run_pre_filter(state, pod, all_nodes)
        diagnosis.unschedulable_plugins = set(outcome.unschedulable_plugins)
        if not outcome.status.is_success():
            if not outcome.status.is_rejected():
                return outcome.status
            diagnosis.node_to_status.absent = outcome.status
            diagnosis.pre_filter_msg = outcome.status.message
            return [], diagnosis
        nominated = pod.pod.status.nominated_node_name if pod.pod.status is not None else None
        if nominated:
            node = self._cache.get(nominated)
            if node is not None:
                passed, rejected, error = fwk.filter_nodes(state, pod, [node])
                if not error.is_success():
                    return error
                if passed:
                    return passed, diagnosis
                self._record(diagnosis, rejected)
        nodes = all_nodes
        if outcome.result is not None and outcome.result.node_names is not None:
            allowed = outcome.result.node_names
            nodes = [n for n in all_nodes if n.name in allowed]
            plugins = " ".join(sorted(outcome.unschedulable_plugins))
            diagnosis.node_to_status.absent = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                                                     f"node(s) didn't satisfy plugin(s) [{plugins}]")
        if not nodes:
            return [], diagnosis
        found = self._find_nodes_that_pass_filters(fwk, state, pod, diagnosis, nodes)
        if isinstance(found, Status):
            return found
        feasible, processed = found
        # Always advance, so that every node gets its turn across cycles.
        self.next_start_node_index = (self.next_start_node_index + processed) % len(all_nodes)
        return feasible, diagnosis

    def _find_nodes_that_pass_filters(self, fwk: Framework, state: CycleState, pod: PodInfo, diagnosis: Diagnosis,
                                      nodes: list[NodeInfo]) -> tuple[list[NodeInfo], int] | Status:
        total = len(nodes)
        percentage = fwk.percentage_of_nodes_to_score
        wanted = num_feasible_nodes_to_find(self._percentage if percentage is None else percentage, total)
        if not fwk.has_score_plugins():
            wanted = 1
        start = self.next_start_node_index % total
        if not fwk.filter_plugins:
            return [nodes[(start + i) % total] for i in range(wanted)], wanted
        feasible: list[NodeInfo] = []
        processed = 0
        while processed < total and len(feasible) < wanted:
            size = min(total - processed, max(wanted - len(feasible), _MIN_CHUNK))
            begin = (start + processed) % total
            chunk = nodes[begin:begin + size]
            if len(chunk) < size:
                chunk += nodes[:size - len(chunk)]
            passed, rejected, error = fwk.filter_nodes(state, pod, chunk)
            if not error.is_success():
                return error
            needed = wanted - len(feasible)
            if len(passed) > needed:
                # Stop at the node that completes the set: nodes after it in the chunk count as not visited.
                position = {id(n): i for i, n in enumerate(chunk)}
                cut = position[id(passed[needed - 1])]
                passed = passed[:needed]
                rejected = [(n, s) for n, s in rejected if position[id(n)] < cut]
                size = cut + 1
            feasible.extend(passed)
            self._record(diagnosis, rejected)
            processed += size
        return feasible, processed

    @staticmethod
    def _record(diagnosis: Diagnosis, rejected: list[tuple[NodeInfo, Status]]) -> None:
        statuses = diagnosis.node_to_status.statuses
        for node, status in rejected:
            statuses[node.name] = status
            if status.is_rejected() and status.plugin:
                diagnosis.unschedulable_plugins.add(status.plugin)

    @staticmethod
    def _prioritize(fwk: Framework, state: CycleState, pod: PodInfo,
                    nodes: Sequence[NodeInfo]) -> tuple[list[PluginScores], list[int]] | Status:
        if not fwk.has_score_plugins():
            # Without Score plugins every node scores 1.
            return [], [1] * len(nodes)
        status = fwk.run_pre_score(state, pod, nodes)
        if not status.is_success():
            return status
        return fwk.run_score(state, pod, nodes)


def select_host(totals: Sequence[int], rng: random.Random) -> tuple[int, list[int]]:
    """The chosen node's index, and the indexes of the best :data:`NODES_TO_REPORT` nodes (chosen first).

    Among the nodes with the highest total each is chosen with probability
    1/k, as Kubernetes' reservoir sampling in ``selectHost`` does (the k-th
    tie replaces the choice with probability 1/k). A reservoir of one item
    over k ties is distributed exactly as one uniform draw among them, so the
    draw is made once: with thousands of equal nodes, k random numbers per
    Pod would cost more than the scoring.
    """
    best = max(totals)
    ties = [i for i, total in enumerate(totals) if total == best]
    chosen = ties[rng.randrange(len(ties))]
    # A C-level sort of a few hundred totals is cheaper than heapq.nlargest's Python loop.
    best_first = sorted(range(len(totals)), key=totals.__getitem__, reverse=True)[:NODES_TO_REPORT]
    return chosen, [chosen, *(i for i in best_first if i != chosen)][:NODES_TO_REPORT]
