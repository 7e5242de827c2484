"""The scheduler's cache: every node with the Pods on it, including Pods assumed but not yet bound.

kube-scheduler decides against its own cache, not the APIServer, and it
counts a Pod on its node from the moment it picks the node ("assume"), so
that the next cycle does not overcommit the node while the binding is in
flight. This cache does the same:

- informer handlers call :meth:`Cache.add_node`, :meth:`Cache.add_pod` and
  friends; a Pod seen bound by the informer *confirms* an assumed Pod (or
  moves it, if someone else bound it elsewhere);
- the scheduling cycle calls :meth:`Cache.assume_pod`, and the binding cycle
  :meth:`Cache.forget_pod` when the binding failed;
- the node list is ordered as Kubernetes' ``nodeTree`` orders it, zones
  interleaved (zone-a's first node, zone-b's first node, zone-a's second...),
  so that a cycle that looks at a tenth of the nodes still spreads over zones.

There is no separate snapshot: Kubernetes copies its cache into a snapshot
because plugins run on many goroutines while informers keep writing. Here a
scheduling cycle is synchronous code on the event loop, from PreFilter to
assume, so it reads this cache directly and nothing can change it meanwhile.
That invariant is why the cycle must never ``await``.

Assumed Pods do not expire (Kubernetes has not expired them since 1.2x): they
stay until the informer confirms them or the binding fails.

Every change to a node (its Node object, a Pod placed on it or taken off, the
node gone) gets the next *generation*, as Kubernetes' NodeInfo generations;
:meth:`Cache.changed_since` names the nodes changed after a generation, so that
a plugin can keep counts across cycles and refresh only what changed.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from kubernetes.client import V1Node, V1Pod

from scheduler.framework.types import NodeInfo, PodInfo

log = logging.getLogger(__name__)

_ZONE_LABELS: Final = (("topology.kubernetes.io/region", "failure-domain.beta.kubernetes.io/region"),
                       ("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone"))


def zone_key(node: V1Node) -> str:
    """``utilnode.GetZoneKey``: ``region:\\x00:zone``, or "" for a node with neither label."""
    labels = (node.metadata.labels if node.metadata is not None else None) or {}
    region = labels.get(_ZONE_LABELS[0][0]) or labels.get(_ZONE_LABELS[0][1]) or ""
    zone = labels.get(_ZONE_LABELS[1][0]) or labels.get(_ZONE_LABELS[1][1]) or ""
    if not region and not zone:
        return ""
    return f"{region}:\x00:{zone}"


@dataclass(slots=True)
class _PodState:
    info: PodInfo
    node: str
    assumed: bool


class Cache:
    """Nodes and the Pods on them, as the scheduler believes them to be (see the module docstring)."""

    def __init__(self) -> None:
        self._nodes: dict[str, NodeInfo] = {}
        self._pods: dict[str, _PodState] = {}
        self._zones: dict[str, list[str]] = {}
        self._zone_of: dict[str, str] = {}
        self._list: list[NodeInfo] | None = None
        self._with_affinity: list[NodeInfo] | None = None
        self._with_anti_affinity: list[NodeInfo] | None = None
        #: Image name -> on how many nodes it is.
        self._image_nodes: dict[str, int] = {}
        self._generation = 0
        #: Node name -> the generation of its last change, oldest change first.
        self._changed: dict[str, int] = {}

    # --- the lister plugins read -------------------------------------------------------------------

    def node_infos(self) -> list[NodeInfo]:
        """Every node with a Node object, zones interleaved as Kubernetes' nodeTree lists them."""
        if self._list is None:
            self._list = self._interleave()
        return self._list

    def get(self, name: str) -> NodeInfo | None:
        info = self._nodes.get(name)
        return info if info is not None and info.node is not None else None

    def have_pods_with_affinity(self) -> Sequence[NodeInfo]:
        if self._with_affinity is None:
            self._with_affinity = [n for n in self.node_infos() if n.pods_with_affinity]
        return self._with_affinity

    def have_pods_with_required_anti_affinity(self) -> Sequence[NodeInfo]:
        if self._with_anti_affinity is None:
            self._with_anti_affinity = [n for n in self.node_infos() if n.pods_with_required_anti_affinity]
        return self._with_anti_affinity

    def image_spread(self, image: str) -> int:
        return self._image_nodes.get(image, 0)

    @property
    def num_nodes(self) -> int:
        return len(self.node_infos())

    @property
    def generation(self) -> int:
        """The generation of the latest change to any node."""
        return self._generation

    def changed_since(self, generation: int) -> list[str]:
        """The nodes changed (or removed) after ``generation``, newest first."""
        out: list[str] = []
        for name, changed in reversed(self._changed.items()):
            if changed <= generation:
                break
            out.append(name)
        return out

    def _touch(self, name: str) -> None:
        self._generation += 1
        self._changed.pop(name, None)
        self._changed[name] = self._generation

    def _interleave(self) -> list[NodeInfo]:
        columns = [self._zones[z] for z in self._zones]
        out: list[NodeInfo] = []
        depth = max((len(c) for c in columns), default=0)
        for i in range(depth):
            for column in columns:
                if i < len(column):
                    out.append(self._nodes[column[i]])
        return out

    def _lists_changed(self) -> None:
        self._list = None
        self._affinity_lists_changed()

    def _affinity_lists_changed(self) -> None:
        self._with_affinity = None
        self._with_anti_affinity = None

    # --- nodes -------------------------------------------------------------------------------------

    def add_node(self, node: V1Node) -> NodeInfo:
        """Add or update a node (an update may move it to another zone)."""
        name = node.metadata.name if node.metadata is not None else None
        if not name:
            raise ValueError("a Node needs metadata.name")
        info = self._nodes.get(name)
        if info is None:
            info = self._nodes[name] = NodeInfo(name)
        if info.node is not None:
            self._count_images(info, -1)
        info.set_node(node)
        self._touch(name)
        self._count_images(info, 1)
        zone = zone_key(node)
        if self._zone_of.get(name) != zone:
            self._leave_zone(name)
            self._zones.setdefault(zone, []).append(name)
            self._zone_of[name] = zone
            self._lists_changed()
        return info

    def remove_node(self, name: str) -> None:
        """Forget a node; its Pods stay counted (on a node-less NodeInfo) until they are deleted."""
        info = self._nodes.get(name)
        if info is None:
            return
        if info.node is not None:
            self._count_images(info, -1)
        self._leave_zone(name)
        self._lists_changed()
        self._touch(name)
        if info.pods:
            info.node = None
        else:
            del self._nodes[name]

    def _leave_zone(self, name: str) -> None:
        zone = self._zone_of.pop(name, None)
        if zone is None:
            return
        members = self._zones[zone]
        members.remove(name)
        if not members:
            del self._zones[zone]

    def _count_images(self, info: NodeInfo, sign: int) -> None:
        for image in info.images:
            count = self._image_nodes.get(image, 0) + sign
            if count > 0:
                self._image_nodes[image] = count
            else:
                self._image_nodes.pop(image, None)

    # --- pods --------------------------------------------------------------------------------------

    def assume_pod(self, pod: PodInfo, node_name: str) -> None:
        """Count ``pod`` on ``node_name`` now, before its binding is written."""
        if pod.uid in self._pods:
            raise ValueError(f"pod {pod.key} is in the cache, so can't be assumed")
        self._place(pod, node_name, assumed=True)

    def forget_pod(self, pod: PodInfo) -> None:
        """Undo :meth:`assume_pod` after a failed binding; a Pod confirmed meanwhile stays."""
        state = self._pods.get(pod.uid)
        if state is None or not state.assumed:
            return
        self._unplace(pod.uid)

    def is_assumed(self, uid: str) -> bool:
        state = self._pods.get(uid)
        return state is not None and state.assumed

    def add_pod(self, pod: V1Pod) -> PodInfo:
        """A Pod seen bound by the informer (new, or a newer version): confirm its assumption, or (re)place it."""
        uid = pod.metadata.uid if pod.metadata is not None else None
        node = (pod.spec.node_name if pod.spec is not None else None) or ""
        state = self._pods.get(uid or "")
        if state is not None:
            info = state.info.with_pod(pod)
            if state.node != node:
                log.info("pod %s was assumed on %s but was bound to %s", info.key, state.node, node)
            self._unplace(info.uid)
            self._place(info, node, assumed=False)
            return info
        info = PodInfo(pod)
        self._place(info, node, assumed=False)
        return info

    def remove_pod(self, uid: str) -> PodInfo | None:
        if uid not in self._pods:
            return None
        return self._unplace(uid)

    def pod(self, uid: str) -> PodInfo | None:
        state = self._pods.get(uid)
        return state.info if state is not None else None

    def _place(self, pod: PodInfo, node_name: str, *, assumed: bool) -> None:
        info = self._nodes.get(node_name)
        if info is None:
            info = self._nodes[node_name] = NodeInfo(node_name)
        info.add_pod(pod)
        self._touch(node_name)
        self._pods[pod.uid] = _PodState(pod, node_name, assumed)
        if pod.has_affinity:
            self._affinity_lists_changed()

    def _unplace(self, uid: str) -> PodInfo | None:
        state = self._pods.pop(uid)
        info = self._nodes.get(state.node)
        if info is None:
            return state.info
        removed = info.remove_pod(uid)
        self._touch(state.node)
        if info.node is None and not info.pods:
            del self._nodes[state.node]
        if state.info.has_affinity:
            self._affinity_lists_changed()
        return removed

    def __len__(self) -> int:
        """How many Pods (bound or assumed) the cache holds."""
        return len(self._pods)
