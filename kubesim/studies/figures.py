"""The figures ``kubesim compare`` reports, computed from what a run observed.

- **allocation spread**: each node's requested share of its allocatable cpu
  (and memory), summarised by mean, standard deviation (population) and the
  Gini coefficient (0: every node equally loaded; towards 1: the load sits on
  few nodes). Spreading lowers the deviation and the Gini; packing raises them;
- **fragmentation**: how many Pods of the trace's median size (its median
  cpu and memory requests) would still fit on the free room the nodes have,
  and the share of the free cpu that lies on nodes where no such Pod fits;
- **nodes used**: nodes with at least one Pod;
- **latency** percentiles (nearest rank);
- **placements that differ** between two runs: Pods are matched by
  namespace and controller (Pods of one controller are alike, so the multisets
  of their nodes are compared) or by name for Pods of their own;
- **decided by**: for a placement, the Score plugin whose weighted score
  most favoured the chosen node over the runner-up, read from the Pod's
  ``kubesim.io/score-result`` (``(one feasible node)`` when Filter left a
  single node, so scoring did not run).

Pure functions.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from kubesim.studies.observe import Placement

ONE_FEASIBLE = "(one feasible node)"
NO_EXPLANATION = "(no explanation)"


def gini(values: Sequence[float]) -> float:
    """The Gini coefficient of non-negative values (0 when all are equal or all are 0)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    total = sum(ordered)
    if total <= 0:
        return 0.0
    n = len(ordered)
    weighted = sum((i + 1) * v for i, v in enumerate(ordered))
    return (2 * weighted) / (n * total) - (n + 1) / n


@dataclass(frozen=True, slots=True)
class Spread:
    mean: float
    stddev: float
    gini: float

    def as_dict(self) -> dict[str, float]:
        return {"mean": round(self.mean, 4), "stddev": round(self.stddev, 4), "gini": round(self.gini, 4)}


def spread(values: Sequence[float]) -> Spread:
    if not values:
        return Spread(0.0, 0.0, 0.0)
    mean = sum(values) / len(values)
    variance = sum((v - mean) ** 2 for v in values) / len(values)
    return Spread(mean, math.sqrt(variance), gini(values))


def percentile(values: Sequence[float], p: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


def requested_by_node(placements: Sequence[Placement]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for p in placements:
        if p.node:
            used = out.setdefault(p.node, {"cpu": 0, "memory": 0, "pods": 0})
            used["cpu"] += p.cpu
            used["memory"] += p.memory
            used["pods"] += 1
    return out


def allocation(placements: Sequence[Placement], allocatable: Mapping[str, Mapping[str, int]],
               resource: str) -> list[float]:
    """Each node's requested share of its allocatable ``resource``, in node-name order."""
    used = requested_by_node(placements)
    return [used.get(node, {}).get(resource, 0) / alloc[resource] if alloc.get(resource) else 0.0
            for node, alloc in sorted(allocatable.items())]


def median_size(placements: Sequence[Placement]) -> tuple[int, int]:
    """The median cpu and memory requests (milli-units) of the Pods."""
    if not placements:
        return 0, 0
    cpus = sorted(p.cpu for p in placements)
    memories = sorted(p.memory for p in placements)
    return cpus[(len(cpus) - 1) // 2], memories[(len(memories) - 1) // 2]


@dataclass(frozen=True, slots=True)
class Fragmentation:
    median_pods_that_fit: int
    stranded_cpu: float

    def as_dict(self) -> dict[str, float]:
        return {"medianPodsThatFit": self.median_pods_that_fit, "strandedCpuShare": round(self.stranded_cpu, 4)}


def fragmentation(placements: Sequence[Placement], allocatable: Mapping[str, Mapping[str, int]],
                  size: tuple[int, int]) -> Fragmentation:
    cpu, memory = size
    used = requested_by_node(placements)
    fit = 0
    free_total = stranded = 0
    for node, alloc in allocatable.items():
        have = used.get(node, {"cpu": 0, "memory": 0, "pods": 0})
        free_cpu = max(0, alloc.get("cpu", 0) - have["cpu"])
        free_memory = max(0, alloc.get("memory", 0) - have["memory"])
        free_pods = max(0, alloc.get("pods", 0) - have["pods"])
        here = free_pods
        if cpu:
            here = min(here, free_cpu // cpu)
        if memory:
            here = min(here, free_memory // memory)
        fit += here
        free_total += free_cpu
        if here == 0:
            stranded += free_cpu
    return Fragmentation(fit, stranded / free_total if free_total else 0.0)


def nodes_used(placements: Sequence[Placement]) -> int:
    return len({p.node for p in placements if p.node})


def _group(p: Placement) -> tuple[str, str]:
    return p.namespace, p.owner or f"Pod/{p.name}"


def grouped(placements: Sequence[Placement]) -> dict[tuple[str, str], Counter[str]]:
    """Each controller's (or Pod's own) multiset of nodes."""
    out: dict[tuple[str, str], Counter[str]] = {}
    for p in placements:
        out.setdefault(_group(p), Counter())[p.node or "(pending)"] += 1
    return out


def differing(a: Sequence[Placement], b: Sequence[Placement]) -> tuple[list[Placement], list[Placement]]:
    """The Pods of each run placed where the other run placed none of their kind."""
    ga, gb = grouped(a), grouped(b)
    extra_a = {key: ga.get(key, Counter()) - gb.get(key, Counter()) for key in ga}
    extra_b = {key: gb.get(key, Counter()) - ga.get(key, Counter()) for key in gb}
    return _pick(a, extra_a), _pick(b, extra_b)


def _pick(placements: Sequence[Placement], extra: Mapping[tuple[str, str], Counter[str]]) -> list[Placement]:
    left = {k: Counter(v) for k, v in extra.items()}
    out = []
    for p in placements:
        counter = left.get(_group(p))
        node = p.node or "(pending)"
        if counter and counter[node] > 0:
            counter[node] -= 1
            out.append(p)
    return out


def decided_by(score_result: str) -> str:
    """The Score plugin that put the chosen node ahead (see the module docstring)."""
    if not score_result:
        return NO_EXPLANATION
    try:
        doc: Any = orjson.loads(score_result)
    except orjson.JSONDecodeError:
        return NO_EXPLANATION
    nodes = doc.get("nodes") or []
    if len(nodes) < 2:
        return ONE_FEASIBLE
    chosen = nodes[0]
    runner = max(nodes[1:], key=lambda n: n.get("total", 0))
    gaps: dict[str, float] = {}
    for plugin, scores in (chosen.get("scores") or {}).items():
        other = ((runner.get("scores") or {}).get(plugin) or {}).get("final", 0)
        gaps[plugin] = scores.get("final", 0) - other
    if not gaps or max(gaps.values()) <= 0:
        return "(a tie, broken at random)"
    return max(sorted(gaps), key=lambda plugin: gaps[plugin])
