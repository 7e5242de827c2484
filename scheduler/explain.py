"""Why this node: the ``kubesim.io/*`` annotations that explain each scheduling decision.

People use kubesim to learn and to study scheduling, so every decision
leaves its reasons on the Pod (as the kube-scheduler-simulator keeps them):

- ``kubesim.io/filter-result``: how many nodes the cycle looked at, how many
  fit, and the rejected nodes grouped by plugin and reasons, with the first
  node names of each group (a 5,000-node cluster rejects in a few groups, not
  5,000 entries)::

      {"nodes": 5000, "evaluated": 612, "feasible": 500,
       "rejected": [{"plugin": "NodeResourcesFit", "reasons": ["Insufficient cpu"], "count": 112,
                     "nodes": ["node-17", "node-4012", ...]}]}

  A PreFilter rejection applies to every node and reads
  ``"allNodes": {"plugin": ..., "reasons": [...]}``;
- ``kubesim.io/score-result``: the profile's weights, the Score plugins
  PreScore skipped, and the best nodes with each plugin's raw score and
  weighted normalized score (``final``), the chosen node first;
- ``kubesim.io/selected-node``: the node the Pod was bound to.

Each annotation stays under :data:`MAX_ANNOTATION_BYTES` whatever the
cluster size: node lists are cut first, then the smallest groups.

Pure functions; JSON by orjson (a few microseconds per Pod).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import orjson

from scheduler.framework.diagnosis import Diagnosis
from scheduler.framework.interface import Status
from scheduler.schedule_one import ScheduleResult

FILTER_RESULT: Final = "kubesim.io/filter-result"
SCORE_RESULT: Final = "kubesim.io/score-result"
SELECTED_NODE: Final = "kubesim.io/selected-node"
#: The largest any one explanation annotation gets (together they stay under 32 KiB).
MAX_ANNOTATION_BYTES: Final = 12 * 1024
#: Node names listed per group of rejected nodes, before size limits cut further.
_NODES_PER_GROUP: Final = (20, 5, 1, 0)


def _dumps(value: Any) -> str:
    return orjson.dumps(value).decode()


def _groups(diagnosis: Diagnosis) -> list[dict[str, Any]]:
    grouped: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for node, status in diagnosis.node_to_status.statuses.items():
        grouped.setdefault((status.plugin, status.reasons), []).append(node)
    groups: list[dict[str, Any]] = [{"plugin": plugin, "reasons": list(reasons), "count": len(nodes), "nodes": sorted(nodes)}
              for (plugin, reasons), nodes in grouped.items()]
    groups.sort(key=lambda g: (-g["count"], g["plugin"], g["reasons"]))
    return groups


def filter_result(diagnosis: Diagnosis, *, num_all_nodes: int, evaluated: int, feasible: int) -> str:
    """The ``kubesim.io/filter-result`` annotation of one cycle."""
    doc: dict[str, Any] = {"nodes": num_all_nodes, "evaluated": evaluated, "feasible": feasible}
    absent = diagnosis.node_to_status.absent
    if diagnosis.pre_filter_msg and absent is not None:
        doc["allNodes"] = _status_doc(absent)
    groups = _groups(diagnosis)
    if not groups:
        return _dumps(doc)
    for limit in _NODES_PER_GROUP:
        doc["rejected"] = [dict(g, nodes=g["nodes"][:limit]) for g in groups]
        text = _dumps(doc)
        if len(text) <= MAX_ANNOTATION_BYTES:
            return text
    # Too many distinct reasons even without node names: keep the biggest groups.
    kept: list[dict[str, Any]] = doc["rejected"]
    while kept and len(text) > MAX_ANNOTATION_BYTES:
        kept = kept[:len(kept) // 2]
        doc["rejected"] = kept
        doc["omittedGroups"] = len(groups) - len(kept)
        text = _dumps(doc)
    return text


def _status_doc(status: Status) -> dict[str, Any]:
    return {"plugin": status.plugin, "reasons": list(status.reasons)}


def score_result(result: ScheduleResult, weights: Mapping[str, int]) -> str:
    """The ``kubesim.io/score-result`` annotation of a successful cycle."""
    doc: dict[str, Any] = {
        "weights": dict(weights),
        "skipped": list(result.skipped_score_plugins),
        "nodes": [{"node": n.name, "total": n.total,
                   "scores": {plugin: {"raw": raw, "final": normalized * weight}
                              for plugin, (raw, normalized, weight) in n.plugins.items()}}
                  for n in result.top],
    }
    return _dumps(doc)


def success_annotations(result: ScheduleResult, weights: Mapping[str, int]) -> dict[str, str]:
    """The three annotations the Binding carries onto the Pod."""
    return {
        FILTER_RESULT: filter_result(result.diagnosis, num_all_nodes=result.num_all_nodes,
                                     evaluated=result.evaluated_nodes, feasible=result.feasible_nodes),
        SCORE_RESULT: score_result(result, weights),
        SELECTED_NODE: result.suggested_host,
    }


def failure_annotations(diagnosis: Diagnosis, num_all_nodes: int) -> dict[str, str]:
    """The annotation of a failed cycle (no score, no node)."""
    evaluated = len(diagnosis.node_to_status)
    return {FILTER_RESULT: filter_result(diagnosis, num_all_nodes=num_all_nodes, evaluated=evaluated, feasible=0)}
