"""Why a Pod fits nowhere: the Diagnosis of one cycle and the FailedScheduling message, built in one place.

Users read one sentence, in ``kubectl describe pod`` (the ``FailedScheduling``
Event) and in the Pod's ``PodScheduled`` condition::

    0/5 nodes are available: 2 Insufficient cpu, 3 node(s) had untolerated taint {dedicated: gpu}. preemption: ...

It is built here and nowhere else, exactly as ``FitError.Error()`` builds it:
every reason of every rejected node is counted, the ``"<count> <reason>"``
strings are sorted as strings (so ``10 ...`` sorts before ``2 ...``, as in
Kubernetes), a PreFilter rejection replaces the per-node reasons, and
PostFilter's (preemption's) message follows.

Plain data; no state beyond the objects themselves.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from scheduler.framework.interface import NodeToStatus
from scheduler.framework.types import PodInfo

#: The message of a cycle that found no node at all (``ErrNoNodesAvailable``).
NO_NODES_AVAILABLE: Final = "no nodes available to schedule pods"
#: ``validation.NoteLengthLimit``: the longest Event message Kubernetes accepts.
NOTE_LENGTH_LIMIT: Final = 1024


@dataclass(slots=True)
class Diagnosis:
    """The details of a failed cycle: each rejected node's status, and what PreFilter and PostFilter said."""

    node_to_status: NodeToStatus = field(default_factory=NodeToStatus)
    #: Plugins that rejected the Pod (they decide which cluster events requeue it).
    unschedulable_plugins: set[str] = field(default_factory=set)
    pre_filter_msg: str = ""
    post_filter_msg: str = ""


@dataclass(slots=True)
class FitError:
    """No node fits the Pod: the value a failed scheduling attempt returns."""

    pod: PodInfo
    num_all_nodes: int
    diagnosis: Diagnosis

    @property
    def message(self) -> str:
        return fit_error_message(self.num_all_nodes, self.diagnosis)


def reason_counts(num_all_nodes: int, diagnosis: Diagnosis) -> dict[str, int]:
    """How many nodes gave each reason (nodes never evaluated count with the absent-nodes status)."""
    counts: dict[str, int] = {}
    statuses = diagnosis.node_to_status
    for status in statuses.statuses.values():
        for reason in status.reasons:
            counts[reason] = counts.get(reason, 0) + 1
    if statuses.absent is not None and len(statuses) < num_all_nodes:
        for reason in statuses.absent.reasons:
            counts[reason] = counts.get(reason, 0) + num_all_nodes - len(statuses)
    return counts


def fit_error_message(num_all_nodes: int, diagnosis: Diagnosis) -> str:
    """``FitError.Error()``: ``0/N nodes are available: <PreFilter>. <counted reasons>. <PostFilter>``."""
    message = f"0/{num_all_nodes} nodes are available:"
    if diagnosis.pre_filter_msg:
        # A PreFilter rejection applies to every node; counting it per node would repeat it.
        message += f" {diagnosis.pre_filter_msg}."
    else:
        histogram = sorted(f"{count} {reason}" for reason, count in
                           reason_counts(num_all_nodes, diagnosis).items())
        if histogram:
            message += f" {', '.join(histogram)}."
    if diagnosis.post_filter_msg:
        message += f" {diagnosis.post_filter_msg}"
    return message


def truncate_message(message: str) -> str:
    """An Event message cut to Kubernetes' limit, ending with `` ...`` when cut."""
    if len(message) <= NOTE_LENGTH_LIMIT:
        return message
    suffix = " ..."
    return message[:NOTE_LENGTH_LIMIT - len(suffix)] + suffix
