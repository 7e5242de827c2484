"""The full per-node results of the last decisions, for ``/debug/decisions/<namespace>/<pod>``.

The explanation annotations (:mod:`scheduler.explain`) must fit a Pod at any
cluster size, so they group rejected nodes and keep only the best scored
ones. A study often needs the rest ("why not node X?"), so the scheduler
also keeps, for its last :data:`DEFAULT_KEPT` scheduling cycles (``--decisions-kept``),
everything the cycle computed: every rejected node with its plugin and
reasons, every feasible node with each Score plugin's raw, normalized and
weighted score, and which nodes the cycle did not reach (the adaptive
``percentageOfNodesToScore`` stops early). ``kubesim explain`` reads them.

Recording costs no copy: a :class:`Decision` holds references to the
statuses and score lists the cycle built anyway; the JSON document is
made only when someone asks (:meth:`Decision.document`). Memory is bounded by
the number kept: at 15,000 nodes a failed cycle holds one status per node
(about 0.7 MB), a successful one a few hundred scored nodes.

Used from the event loop's thread only (the scheduling loop records, the
health server's handler reads, between two awaits).
"""

from __future__ import annotations

import datetime as dt
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Final

from scheduler.framework.diagnosis import FitError
from scheduler.framework.interface import Status
from scheduler.schedule_one import ScheduleResult

#: How many decisions are kept by default.
DEFAULT_KEPT: Final = 100

SCHEDULED: Final = "Scheduled"
UNSCHEDULABLE: Final = "Unschedulable"
ERROR: Final = "Error"


def _status(status: Status) -> dict[str, Any]:
    return {"plugin": status.plugin, "code": str(status.code), "reasons": list(status.reasons)}


@dataclass(slots=True)
class Decision:
    """One scheduling cycle of one Pod."""

    namespace: str
    name: str
    uid: str
    profile: str
    attempt: int
    time: str
    weights: dict[str, int]
    outcome: ScheduleResult | FitError | Status
    #: Set after the cycle: PostFilter's (preemption's) message, or a later Reserve/Permit/bind failure.
    message: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def document(self) -> dict[str, Any]:
        """The JSON document ``/debug/decisions`` serves (see the module docstring)."""
        doc: dict[str, Any] = {"pod": self.key, "uid": self.uid, "profile": self.profile, "attempt": self.attempt,
                               "time": self.time}
        outcome = self.outcome
        if isinstance(outcome, Status):
            doc.update(result=UNSCHEDULABLE if outcome.is_rejected() else ERROR, message=outcome.message,
                       status=_status(outcome))
            doc.update(self.extra)
            return doc
        diagnosis = outcome.diagnosis
        if isinstance(outcome, ScheduleResult):
            doc.update(result=SCHEDULED, selectedNode=outcome.suggested_host, nodes=outcome.num_all_nodes,
                       evaluated=outcome.evaluated_nodes, feasible=outcome.feasible_nodes)
        else:
            doc.update(result=UNSCHEDULABLE, message=outcome.message, nodes=outcome.num_all_nodes,
                       evaluated=len(diagnosis.node_to_status), feasible=0)
        doc["notEvaluated"] = doc["nodes"] - doc["evaluated"]
        absent = diagnosis.node_to_status.absent
        if diagnosis.pre_filter_msg and absent is not None:
            doc["preFilter"] = _status(absent)
        elif absent is not None:
            # PreFilter narrowed the nodes: those left out have this status.
            doc["excludedByPreFilter"] = _status(absent)
        doc["filter"] = {node: _status(status) for node, status in sorted(diagnosis.node_to_status.statuses.items())}
        if isinstance(outcome, ScheduleResult):
            doc["weights"] = dict(self.weights)
            doc["skippedScorePlugins"] = list(outcome.skipped_score_plugins)
            doc["score"] = _scores(outcome)
        if self.message:
            doc["message"] = self.message
        doc.update(self.extra)
        return doc


def _scores(result: ScheduleResult) -> dict[str, Any]:
    """Every feasible node's total and per-plugin scores (a single feasible node is not scored)."""
    if not result.totals:
        return {name: {"total": None, "plugins": {}} for name in result.feasible}
    out: dict[str, Any] = {}
    for i, name in enumerate(result.feasible):
        plugins = {ps.plugin: {"raw": ps.raw[i], "normalized": ps.normalized[i], "weight": ps.weight,
                               "final": ps.normalized[i] * ps.weight} for ps in result.scores}
        out[name] = {"total": result.totals[i], "plugins": plugins}
    return out


class DecisionLog:
    """The last ``kept`` decisions, findable by Pod."""

    def __init__(self, kept: int = DEFAULT_KEPT) -> None:
        self._kept = kept
        self._decisions: deque[Decision] = deque()
        self._by_pod: dict[str, list[Decision]] = {}

    def __len__(self) -> int:
        return len(self._decisions)

    def record(self, decision: Decision) -> Decision:
        if self._kept <= 0:
            return decision
        self._decisions.append(decision)
        self._by_pod.setdefault(decision.key, []).append(decision)
        while len(self._decisions) > self._kept:
            old = self._decisions.popleft()
            same = self._by_pod.get(old.key)
            if same:
                same.remove(old)
                if not same:
                    del self._by_pod[old.key]
        return decision

    def for_pod(self, namespace: str, name: str) -> list[Decision]:
        """The kept decisions about this Pod, oldest first."""
        return list(self._by_pod.get(f"{namespace}/{name}", ()))

    def document(self, namespace: str, name: str) -> dict[str, Any] | None:
        """``/debug/decisions/<namespace>/<pod>``: the Pod's kept decisions, newest last; None if there are none."""
        decisions = self.for_pod(namespace, name)
        if not decisions:
            return None
        return {"pod": f"{namespace}/{name}", "kept": self._kept, "decisions": [d.document() for d in decisions]}

    def index(self) -> dict[str, Any]:
        """``/debug/decisions``: which Pods have decisions kept, and how many."""
        return {"kept": self._kept, "pods": {key: len(ds) for key, ds in sorted(self._by_pod.items())}}


def now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
