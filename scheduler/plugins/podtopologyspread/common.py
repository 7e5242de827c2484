"""What PodTopologySpread's filtering and scoring share: parsed constraints and Pod counting."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from machinery.api import NO_EXECUTE, NO_SCHEDULE, Selector, find_untolerated_taint, selector_from_set
from machinery.api.kinds import REPLICA_SETS, REPLICATION_CONTROLLERS, SERVICES, STATEFUL_SETS
from machinery.api.labels import Operator, Requirement
from machinery.informer.store import NAMESPACE_INDEX
from scheduler.framework.interface import Handle, NodeInfoLister
from scheduler.framework.tallies import Tallies, Tally
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler.plugins import names

NAME: Final = names.POD_TOPOLOGY_SPREAD
HOSTNAME_LABEL: Final = "kubernetes.io/hostname"
ZONE_LABEL: Final = "topology.kubernetes.io/zone"
DO_NOT_SCHEDULE: Final = "DoNotSchedule"
SCHEDULE_ANYWAY: Final = "ScheduleAnyway"

#: The constraints a Pod without its own gets when ``defaultingType`` is System (and it has an owner).
SYSTEM_DEFAULT_CONSTRAINTS: Final = (
    {"maxSkew": 3, "topologyKey": HOSTNAME_LABEL, "whenUnsatisfiable": SCHEDULE_ANYWAY},
    {"maxSkew": 5, "topologyKey": ZONE_LABEL, "whenUnsatisfiable": SCHEDULE_ANYWAY},
)
_DO_NOT_SCHEDULE_TAINTS: Final = frozenset((NO_SCHEDULE, NO_EXECUTE))


@dataclass(frozen=True, slots=True)
class Constraint:
    """A parsed ``TopologySpreadConstraint`` of one action (DoNotSchedule or ScheduleAnyway)."""

    max_skew: int
    topology_key: str
    selector: Selector
    min_domains: int = 1
    #: nodeAffinityPolicy Honor (default): only nodes matching the Pod's node affinity count.
    honor_node_affinity: bool = True
    #: nodeTaintsPolicy Honor (default Ignore): only nodes whose taints the Pod tolerates count.
    honor_node_taints: bool = False

    def includes(self, pod: PodInfo, node: NodeInfo) -> bool:
        """``matchNodeInclusionPolicies``: whether this node's Pods count for the constraint."""
        if self.honor_node_affinity and not pod.required_node_affinity.matches(node.name, node.labels):
            return False
        return not (self.honor_node_taints and node.hard_taints
                    and find_untolerated_taint(node.taints, pod.tolerations, _DO_NOT_SCHEDULE_TAINTS) is not None)


def _field(c: Any, wire: str, attr: str) -> Any:
    return c.get(wire) if isinstance(c, Mapping) else getattr(c, attr)


def parse_constraints(constraints: Iterable[Any], pod: PodInfo, action: str,
                      selector: Selector | None = None) -> list[Constraint]:
    """The constraints of one ``whenUnsatisfiable`` action, as ``filterTopologySpreadConstraints``.

    Each constraint is a model or a wire dict; ``selector`` replaces their
    labelSelector (the default constraints take the Pod's owners' selector).
    """
    out: list[Constraint] = []
    for c in constraints:
        if _field(c, "whenUnsatisfiable", "when_unsatisfiable") != action:
            continue
        sel = selector if selector is not None else Selector.from_label_selector(
            _field(c, "labelSelector", "label_selector"))
        match_keys = _field(c, "matchLabelKeys", "match_label_keys") or ()
        match_labels = {k: pod.labels[k] for k in match_keys if k in pod.labels}
        if match_labels:
            sel = _merge(match_labels, sel)
        min_domains = _field(c, "minDomains", "min_domains")
        out.append(Constraint(
            max_skew=_field(c, "maxSkew", "max_skew"), topology_key=_field(c, "topologyKey", "topology_key"),
            selector=sel, min_domains=min_domains if min_domains is not None else 1,
            honor_node_affinity=_field(c, "nodeAffinityPolicy", "node_affinity_policy") != "Ignore",
            honor_node_taints=_field(c, "nodeTaintsPolicy", "node_taints_policy") == "Honor"))
    return out


def _merge(match_labels: Mapping[str, str], selector: Selector) -> Selector:
    """``mergeLabelSetWithSelector``: the label set ANDed with the selector (a nil selector adds nothing)."""
    if selector == Selector.nothing():
        return selector_from_set(match_labels)
    extra = [Requirement(k, Operator.EQUALS, (v,)) for k, v in match_labels.items()]
    return Selector((*selector.requirements, *extra))


def default_selector(handle: Handle, pod: PodInfo) -> Selector:
    """``helper.DefaultSelector``: what the Services selecting the Pod and its controller select.

    The selectors of the Services whose selector matches the Pod are merged,
    then those of its controller, if it is a ReplicationController, a
    ReplicaSet or a StatefulSet, are added; a Pod with none of them gets the
    empty selector (no default constraints apply).
    """
    merged: dict[str, str] = {}
    services = handle.lister(SERVICES)
    if services is not None:
        for service in services.by_index(NAMESPACE_INDEX, pod.namespace) if services.has_index(NAMESPACE_INDEX) \
                else (s for s in services.list() if s.metadata is not None and s.metadata.namespace == pod.namespace):
            selector = service.spec.selector if service.spec is not None else None
            if selector and selector_from_set(selector).matches(pod.labels):
                merged.update(selector)
    result = selector_from_set(merged) if merged else Selector.everything()
    if pod.owner is None:
        return result
    api_version, kind, name = pod.owner
    key = f"{pod.namespace}/{name}"
    if (api_version, kind) == ("v1", "ReplicationController"):
        rcs = handle.lister(REPLICATION_CONTROLLERS)
        rc = rcs.get(key) if rcs is not None else None
        if rc is not None and rc.spec is not None and rc.spec.selector:
            merged.update(rc.spec.selector)
            return selector_from_set(merged)
        return result
    if (api_version, kind) in (("apps/v1", "ReplicaSet"), ("apps/v1", "StatefulSet")):
        owners = handle.lister(REPLICA_SETS if kind == "ReplicaSet" else STATEFUL_SETS)
        owner = owners.get(key) if owners is not None else None
        label_selector = owner.spec.selector if owner is not None and owner.spec is not None else None
        if label_selector is not None:
            other = Selector.from_label_selector(label_selector)
            return Selector((*(result.requirements if merged else ()), *other.requirements))
    return result


def node_has_topology_keys(node: NodeInfo, constraints: Sequence[Constraint]) -> bool:
    labels = node.labels
    return all(c.topology_key in labels for c in constraints)


def count_matching(pods: Iterable[PodInfo], selector: Selector, namespace: str) -> int:
    """Pods of ``namespace`` that ``selector`` selects, terminating ones left out (Kubernetes #87621)."""
    count = 0
    for pod in pods:
        if pod.namespace == namespace and not pod.terminating and selector.matches(pod.labels):
            count += 1
    return count


def includes_every_node(constraint: Constraint, pod: PodInfo) -> bool:
    """Whether the node inclusion policies admit every node for this Pod (no affinity or taints to honour)."""
    if constraint.honor_node_taints:
        return False
    return not constraint.honor_node_affinity or pod.required_node_affinity.matches_every_node


_TallyKey = tuple[str, Selector, str, tuple[str, ...]]


class MatchCounts:
    """Matching-Pod counts kept across cycles (see :mod:`scheduler.framework.tallies`).

    One tally per (namespace, selector, topology key, required keys): a node
    counts when it has every required key, with its value of the topology
    key ("" when it has none) and its matching Pods. The plugin uses them
    only when the Pod's node inclusion policies admit every node
    (:func:`includes_every_node`); otherwise it counts as Kubernetes does.
    """

    def __init__(self, capacity: int = 64) -> None:
        self._tallies = Tallies(capacity)

    def tally(self, lister: NodeInfoLister, namespace: str, selector: Selector, topology_key: str,
              required_keys: tuple[str, ...]) -> Tally:
        """The tally of this key, up to date with ``lister`` (the scheduler's cache)."""
        def entry(node: NodeInfo) -> tuple[str, int] | None:
            labels = node.labels
            if required_keys and not all(k in labels for k in required_keys):
                return None
            return labels.get(topology_key, ""), count_matching(node.pods.values(), selector, namespace)

        key: _TallyKey = (namespace, selector, topology_key, required_keys)
        return self._tallies.tally(lister, key, entry)
