"""DefaultPreemption (PostFilter): make room for a Pod that fits nowhere by evicting lower-priority Pods.

Kubernetes' evaluator, step by step:

1. eligibility: not with ``preemptionPolicy: Never``, and not while Pods it
   already preempted on its nominated node are still terminating;
2. candidates: nodes where the Filter rejection was resolvable
   (Unschedulable, not UnschedulableAndUnresolvable); from a random offset,
   each is dry-run on a clone of the node and of the cycle state: remove every
   lower-priority Pod, check the Pod fits, then put back ("reprieve") as many
   as possible, most important first, so the victims are a minimal set; the
   dry run stops after ``max(10% of nodes, 100)`` candidates;
3. choice, in order: fewest PDB violations (kubesim has no PDBs), lowest
   highest-priority victim, lowest sum of priorities, fewest victims, latest
   start among the highest-priority victims, first node;
4. the victims are evicted in the background (DisruptionTarget condition,
   delete, Event ``Preempted``) and the Pod is nominated to the node
   (``status.nominatedNodeName``); it is scheduled when the victims are gone.

Messages are Kubernetes': ``preemption: not eligible due to preemptionPolicy=Never.``,
``preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.``
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from scheduler import metrics
from scheduler.framework.diagnosis import Diagnosis, fit_error_message
from scheduler.framework.interface import (
    SUCCESS,
    Code,
    CycleState,
    Handle,
    NodeToStatus,
    PostFilterResult,
    Status,
)
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.plugins import names
from scheduler.plugins.helper import int_arg, plugin_args

NAME: Final = names.DEFAULT_PREEMPTION
NOT_ELIGIBLE_NEVER: Final = "not eligible due to preemptionPolicy=Never."
NOT_ELIGIBLE_TERMINATING: Final = "not eligible due to a terminating pod on the nominated node."
NO_VICTIMS: Final = "No preemption victims found for incoming pod"
NOT_HELPFUL: Final = "Preemption is not helpful for scheduling"
#: What the DisruptionTarget condition of a victim says (``v1.PodReasonPreemptionByScheduler``).
PREEMPTION_BY_SCHEDULER: Final = "PreemptionByScheduler"

_NOT_HELPFUL: Final = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, NOT_HELPFUL)
_NO_VICTIMS: Final = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, NO_VICTIMS, plugin=NAME)
_INT32_OFFSET: Final = (1 << 31)


@dataclass(frozen=True, slots=True)
class Candidate:
    node: str
    #: The victims, most important first.
    victims: list[PodInfo]


def _start(pod: PodInfo) -> dt.datetime:
    # Pods not started yet (assumed, bound but not running) count as starting now, as in Kubernetes.
    return pod.start_time or dt.datetime.now(dt.UTC)


def importance_key(pod: PodInfo) -> tuple[int, dt.datetime]:
    """Sort key putting more important Pods first: higher priority, then earlier start (``MoreImportantPod``)."""
    return -pod.priority, _start(pod)


def terminating_by_preemption(pod: PodInfo) -> bool:
    if not pod.terminating or pod.pod.status is None:
        return False
    for condition in pod.pod.status.conditions or ():
        if condition.type == "DisruptionTarget":
            return condition.status == "True" and condition.reason == PREEMPTION_BY_SCHEDULER
    return False


class DefaultPreemption:
    name = NAME

    def __init__(self, handle: Handle, *, min_percentage: int, min_absolute: int,
                 rng: random.Random | None = None) -> None:
        self._handle = handle
        self._min_percentage = min_percentage
        self._min_absolute = min_absolute
        self._rng = rng or random.Random()

    def post_filter(self, state: CycleState, pod: PodInfo,
                    statuses: NodeToStatus) -> tuple[PostFilterResult | None, Status]:
        metrics.PREEMPTION_ATTEMPTS.inc()
        result, status = self._preempt(state, pod, statuses)
        if status.message:
            return result, Status(status.code, f"preemption: {status.message}", plugin=NAME)
        return result, status

    def _preempt(self, state: CycleState, pod: PodInfo,
                 statuses: NodeToStatus) -> tuple[PostFilterResult | None, Status]:
        nominated = pod.pod.status.nominated_node_name if pod.pod.status is not None else None
        eligible, reason = self.eligible(pod, statuses.get(nominated) if nominated else None)
        if not eligible:
            return None, Status(Code.UNSCHEDULABLE, reason, plugin=NAME)
        all_nodes = self._handle.snapshot.node_infos()
        potential: list[NodeInfo] = []
        outcome = Diagnosis()
        outcome.node_to_status.absent = _NOT_HELPFUL
        for node in all_nodes:
            if statuses.get(node.name).code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                outcome.node_to_status.statuses[node.name] = _NOT_HELPFUL
            else:
                potential.append(node)
        candidates = self._dry_run(state, pod, potential, outcome.node_to_status) if potential else []
        if not candidates:
            # A FitError of its own, so that kubectl shows why preemption could not help on each node.
            message = fit_error_message(len(all_nodes), outcome)
            return PostFilterResult(""), Status(Code.UNSCHEDULABLE, message, plugin=NAME)
        best = select_candidate(candidates)
        metrics.PREEMPTION_VICTIMS.observe(len(best.victims))
        self._handle.preempt(pod, best.node, best.victims)
        return PostFilterResult(best.node), SUCCESS

    def eligible(self, pod: PodInfo, nominated_status: Status | None) -> tuple[bool, str]:
        """``PodEligibleToPreemptOthers``: whether the Pod may preempt, and if not why."""
        spec = pod.pod.spec
        if spec is not None and spec.preemption_policy == "Never":
            return False, NOT_ELIGIBLE_NEVER
        nominated = pod.pod.status.nominated_node_name if pod.pod.status is not None else None
        if nominated:
            # A nominated node that became hopeless does not hold the Pod back from preempting elsewhere.
            if nominated_status is not None and nominated_status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return True, ""
            node = self._handle.snapshot.get(nominated)
            if node is not None and any(p.priority < pod.priority and terminating_by_preemption(p)
                                        for p in node.pods.values()):
                return False, NOT_ELIGIBLE_TERMINATING
        return True, ""

    def _num_candidates(self, num_nodes: int) -> int:
        return min(max(num_nodes * self._min_percentage // 100, self._min_absolute), num_nodes)

    def _dry_run(self, state: CycleState, pod: PodInfo, potential: list[NodeInfo],
                 statuses: NodeToStatus) -> list[Candidate]:
        wanted = self._num_candidates(len(potential))
        offset = self._rng.randrange(len(potential))
        candidates: list[Candidate] = []
        for i in range(len(potential)):
            node = potential[(offset + i) % len(potential)]
            victims, status = self.select_victims(state.clone(), pod, node.clone())
            if status.is_success() and victims:
                candidates.append(Candidate(node.name, victims))
                if len(candidates) >= wanted:
                    break
                continue
            if status.is_success():
                status = Status.from_error(f'expected at least one victim pod on node "{node.name}"', plugin=NAME)
            statuses.statuses[node.name] = status
        return candidates

    def select_victims(self, state: CycleState, pod: PodInfo, node: NodeInfo) -> tuple[list[PodInfo], Status]:
        """The fewest lower-priority Pods to evict from (a clone of) ``node`` so that ``pod`` fits."""
        handle = self._handle
        potential = [p for p in node.pods.values() if p.priority < pod.priority]
        if not potential:
            return [], _NO_VICTIMS
        for victim in potential:
            node.remove_pod(victim.uid)
            status = handle.run_pre_filter_extension_remove_pod(state, pod, victim, node)
            if not status.is_success():
                return [], status
        status = handle.run_filter_plugins_with_nominated_pods(state, pod, node)
        if not status.is_success():
            return [], status
        victims: list[PodInfo] = []
        for candidate in sorted(potential, key=importance_key):
            node.add_pod(candidate)
            status = handle.run_pre_filter_extension_add_pod(state, pod, candidate, node)
            if not status.is_success():
                return [], status
            if handle.run_filter_plugins_with_nominated_pods(state, pod, node).is_success():
                continue
            node.remove_pod(candidate.uid)
            status = handle.run_pre_filter_extension_remove_pod(state, pod, candidate, node)
            if not status.is_success():
                return [], status
            victims.append(candidate)
        return victims, SUCCESS


def _earliest_start_of_highest(victims: Sequence[PodInfo]) -> float:
    highest = max(v.priority for v in victims)
    return min(_start(v) for v in victims if v.priority == highest).timestamp()


def select_candidate(candidates: Sequence[Candidate]) -> Candidate:
    """``pickOneNodeForPreemption``: apply each criterion in turn, keeping the best nodes, until one is left."""
    criteria = (
        lambda c: -max(v.priority for v in c.victims),
        lambda c: -sum(v.priority + _INT32_OFFSET for v in c.victims),
        lambda c: -len(c.victims),
        lambda c: _earliest_start_of_highest(c.victims),
    )
    remaining = list(candidates)
    for criterion in criteria:
        scores = [criterion(c) for c in remaining]
        best = max(scores)
        remaining = [c for c, s in zip(remaining, scores, strict=True) if s == best]
        if len(remaining) == 1:
            break
    return remaining[0]


def new(args: Mapping[str, Any] | None, handle: Handle) -> DefaultPreemption:
    parsed = plugin_args(args, ("minCandidateNodesPercentage", "minCandidateNodesAbsolute"), NAME)
    percentage = int_arg(parsed, "minCandidateNodesPercentage", 10, low=0, high=100)
    absolute = int_arg(parsed, "minCandidateNodesAbsolute", 100, low=0, high=(1 << 31) - 1)
    if percentage == 0 and absolute == 0:
        raise ValueError("minCandidateNodesPercentage, minCandidateNodesAbsolute: Invalid value: both cannot "
                         "be zero")
    return DefaultPreemption(handle, min_percentage=percentage, min_absolute=absolute, rng=handle.rng)
