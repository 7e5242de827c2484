"""Per-node counts kept across scheduling cycles, refreshed from the nodes changed since (kubesim's own).

Kubernetes' PodTopologySpread and InterPodAffinity count, in every PreFilter
(and PreScore), the Pods that a selector matches on every node: 5,000 nodes
times their Pods, spread over 16 goroutines. One Python thread cannot afford
that for every Pod. A :class:`Tally` keeps, for one thing counted (a
selector in a namespace over a topology key, an affinity term...), each
node's topology value and count, and their sums per value; :class:`Tallies`
brings it up to date from the nodes the scheduler's cache reports changed
since the tally last looked (a Pod placed or removed, the Node updated or
gone: see :meth:`scheduler.cache.Cache.changed_since`). The numbers are those
of a full recount, for the cost of the nodes that changed.

Concurrency: none; tallies are read and refreshed inside a scheduling cycle,
which never awaits.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

from scheduler.framework.interface import NodeInfoLister
from scheduler.framework.types import NodeInfo

#: What one node counts: its topology value and its count, or None when the node does not count.
Entry = tuple[str, int] | None


class Tally:
    """Per node, its value and count; per value, the sum over the nodes that count.

    ``totals`` has every value some counting node has, with 0 when none of
    its Pods match (a domain without matching Pods is still a domain).
    """

    __slots__ = ("_nodes_per_value", "generation", "per_node", "totals")

    def __init__(self) -> None:
        self.generation = -1
        self.per_node: dict[str, tuple[str, int]] = {}
        self.totals: dict[str, int] = {}
        self._nodes_per_value: dict[str, int] = {}

    def set(self, name: str, entry: Entry) -> None:
        """Replace what node ``name`` counts (None: it does not count, or is gone)."""
        old = self.per_node.pop(name, None)
        if old is not None:
            value, count = old
            nodes = self._nodes_per_value[value] - 1
            if nodes:
                self._nodes_per_value[value] = nodes
                self.totals[value] -= count
            else:
                del self._nodes_per_value[value]
                del self.totals[value]
        if entry is not None:
            self.per_node[name] = entry
            value, count = entry
            self._nodes_per_value[value] = self._nodes_per_value.get(value, 0) + 1
            self.totals[value] = self.totals.get(value, 0) + count


class Tallies:
    """Tallies by key; the least recently used are dropped beyond ``capacity``."""

    def __init__(self, capacity: int = 64) -> None:
        self._capacity = capacity
        self._tallies: dict[Hashable, Tally] = {}

    def tally(self, lister: NodeInfoLister, key: Hashable, entry: Callable[[NodeInfo], Entry]) -> Tally:
        """The tally of ``key``, up to date with ``lister``; ``entry`` says what one node counts.

        ``entry`` must depend only on the node (its labels and Pods) and on what ``key`` names.
        """
        tally = self._tallies.pop(key, None)
        if tally is None:
            tally = Tally()
            if len(self._tallies) >= self._capacity:
                del self._tallies[next(iter(self._tallies))]
        self._tallies[key] = tally
        generation = lister.generation
        if tally.generation < 0:
            for node in lister.node_infos():
                tally.set(node.name, entry(node))
        elif tally.generation != generation:
            for name in lister.changed_since(tally.generation):
                changed = lister.get(name)
                tally.set(name, entry(changed) if changed is not None else None)
        tally.generation = generation
        return tally
