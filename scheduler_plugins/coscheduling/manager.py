"""What Coscheduling decides about a PodGroup, apart from the framework (``coscheduling/core``).

- **PreFilter**: a member of a group is tried only when the PodGroup
  exists, the group did not fail within its backoff, at least ``minMember``
  members exist (``pre-filter pod p cannot find enough sibling pods, current
  pods number: 2, minMember of group: 3``) and, when ``minResources`` is set,
  the cluster has that much free beside what the group's own Pods hold
  (``resource gap: ...``; a passed check is remembered for the permit
  timeout, as upstream's ``permittedPG``);
- **Permit**: a member waits until ``minMember`` members are placed
  (assumed or bound: the cache counts them, the one in this cycle included),
  then they all go; the first member placed asks for its siblings to be
  retried at once;
- **PostFilter**: a member that fits nowhere makes the members waiting at
  Permit give their places back, unless the group already has ``minMember``
  placed or is within 10% of it (upstream's "small gap").

Pure logic over two lookups (the PodGroup, the member Pods) and the
scheduler's node snapshot; the plugin wires them to informers. Used from the
event loop's thread only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from kubernetes.client import V1Pod

from machinery.api.quantity import milli_value
from scheduler.framework.interface import Code, NodeInfoLister, Status
from scheduler.framework.types import NodeInfo, PodInfo
from scheduler_plugins.coscheduling.podgroup import POD_GROUP_LABEL, PodGroup

#: How long a passed ``minResources`` check is trusted, at least (upstream: the permit timeout).
_PERMITTED_FOR: Final = 3.0


def group_name(labels: Mapping[str, str] | None) -> str:
    """The PodGroup a Pod's labels name, or ""."""
    return (labels or {}).get(POD_GROUP_LABEL, "")


def full_name(namespace: str, name: str) -> str:
    return f"{namespace}/{name}"


@dataclass(frozen=True, slots=True)
class Verdict:
    status: Status
    #: Permit's timeout (seconds) when the status is WAIT.
    timeout: float = 0.0
    #: Whether the member's siblings should be retried now.
    activate_siblings: bool = False


class PodGroupManager:
    """Gang rules for one scheduler profile (see the module docstring)."""

    def __init__(self, *, get_group: Callable[[str, str], PodGroup | None],
                 members: Callable[[str, str], Sequence[V1Pod]], snapshot: NodeInfoLister,
                 now: Callable[[], float], permit_timeout: float, backoff: float) -> None:
        self._get_group = get_group
        self._members = members
        self._snapshot = snapshot
        self._now = now
        self._permit_timeout = permit_timeout
        self._backoff = backoff
        #: Group full name -> until when it is backed off / its minResources check holds.
        self._backed_off: dict[str, float] = {}
        self._permitted: dict[str, float] = {}

    def group_of(self, pod: PodInfo) -> tuple[str, PodGroup | None]:
        name = group_name(pod.labels)
        if not name:
            return "", None
        return full_name(pod.namespace, name), self._get_group(pod.namespace, name)

    def timeout_of(self, group: PodGroup) -> float:
        seconds = group.spec.schedule_timeout_seconds
        return float(seconds) if seconds else self._permit_timeout

    # --- PreFilter ---------------------------------------------------------------------------------

    def pre_filter(self, pod: PodInfo) -> Status:
        """SKIP for a Pod of no group; otherwise SUCCESS or why the group cannot be tried now."""
        name, group = self.group_of(pod)
        if not name:
            return Status(Code.SKIP)
        if group is None:
            return Status(Code.UNSCHEDULABLE, f"PodGroup {name} not found")
        until = self._backed_off.get(name)
        if until is not None:
            if until > self._now():
                return Status(Code.UNSCHEDULABLE, f"podGroup {name} failed recently")
            del self._backed_off[name]
        count = len(self._members(pod.namespace, group_name(pod.labels)))
        minimum = group.spec.min_member
        if count < minimum:
            return Status(Code.UNSCHEDULABLE, f"pre-filter pod {pod.name} cannot find enough sibling pods, "
                                              f"current pods number: {count}, minMember of group: {minimum}")
        if not group.spec.min_resources:
            return Status()
        if self._permitted.get(name, 0.0) > self._now():
            return Status()
        gap = self.resource_gap(name, group)
        if gap:
            return Status(Code.UNSCHEDULABLE, "resource gap: " + ", ".join(f"{r}: {q}" for r, q in sorted(gap.items())))
        self._permitted[name] = self._now() + max(self._permit_timeout, _PERMITTED_FOR)
        return Status()

    def resource_gap(self, name: str, group: PodGroup) -> dict[str, int]:
        """What the cluster lacks (milli-units; pods as a count) for the group's ``minResources``.

        The group's own placed Pods count as free, as upstream's ``getNodeResource`` removes them.
        """
        wanted: dict[str, int] = {r: milli_value(str(q)) for r, q in (group.spec.min_resources or {}).items()}
        wanted["pods"] = group.spec.min_member * 1000
        for node in self._snapshot.node_infos():
            free = _free_without_group(node, name)
            for resource in list(wanted):
                wanted[resource] -= free.get(resource, 0)
                if wanted[resource] <= 0:
                    del wanted[resource]
            if not wanted:
                return {}
        return {r: q // 1000 if r == "pods" else q for r, q in wanted.items()}

    # --- Permit ------------------------------------------------------------------------------------

    def assigned(self, namespace: str, name: str) -> int:
        """The group's members on nodes: bound, or assumed by this scheduler (this cycle's Pod included)."""
        count = 0
        for node in self._snapshot.node_infos():
            for member in node.pods.values():
                if member.namespace == namespace and member.labels.get(POD_GROUP_LABEL) == name:
                    count += 1
        return count

    def permit(self, pod: PodInfo) -> Verdict:
        name, group = self.group_of(pod)
        if not name:
            return Verdict(Status())
        if group is None:
            return Verdict(Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "PodGroup not found"))
        placed = self.assigned(pod.namespace, group_name(pod.labels))
        if placed >= group.spec.min_member:
            return Verdict(Status())
        return Verdict(Status(Code.WAIT), self.timeout_of(group), activate_siblings=placed <= 1)

    # --- PostFilter --------------------------------------------------------------------------------

    def should_reject_group(self, pod: PodInfo) -> tuple[str, bool]:
        """(group, whether its waiting members should give their places back) for a member that fits nowhere."""
        name, group = self.group_of(pod)
        if not name or group is None:
            return name, False
        placed = self.assigned(pod.namespace, group_name(pod.labels))
        minimum = group.spec.min_member
        if placed >= minimum:
            return name, False
        # A small gap to the quorum: other members may still make it (upstream's 10% rule).
        if (minimum - placed) / minimum <= 0.1:
            return name, False
        return name, True

    def back_off(self, name: str) -> None:
        """The group failed: refuse its members at PreFilter for the configured backoff."""
        self._permitted.pop(name, None)
        if self._backoff > 0:
            self._backed_off[name] = self._now() + self._backoff


def _free_without_group(node: NodeInfo, group: str) -> dict[str, int]:
    if node.node is None:
        return {}
    cpu, memory, ephemeral, pods = node.free_cpu, node.free_memory, node.free_ephemeral, node.free_pods
    scalars = {name: node.alloc_scalars.get(name, 0) - node.req_scalars.get(name, 0) for name in node.alloc_scalars}
    for member in node.pods.values():
        if full_name(member.namespace, member.labels.get(POD_GROUP_LABEL, "")) != group:
            continue
        cpu, memory, ephemeral, pods = cpu + member.cpu, memory + member.memory, ephemeral + member.ephemeral, pods + 1
        for name, amount in member.scalars.items():
            scalars[name] = scalars.get(name, 0) + amount
    return {"cpu": cpu, "memory": memory, "ephemeral-storage": ephemeral, "pods": pods * 1000, **scalars}
