"""The scheduler's compact view of Pods and nodes: PodInfo and NodeInfo.

kube-scheduler never filters against raw API objects: it keeps, per node, a
``NodeInfo`` with the node's allocatable resources and what the Pods on it
(bound or assumed) request, their host ports, which of them have (anti-)affinity,
and the images present; and per Pod a ``PodInfo`` with what is computed once
(requests, parsed affinity terms). The same is done here, with integers in
slots rather than dictionaries, because the Filter loop touches thousands of
NodeInfos per Pod:

- resources are integers of milli-units (:mod:`machinery.api.quantity`), and
  each NodeInfo keeps ``free_*`` (allocatable minus requested) current, so the
  common fit test is three comparisons;
- a NodeInfo's Pods are a dict by uid (removal is O(1)); the Pods with
  affinity and with required anti-affinity are kept apart, as Kubernetes does,
  because InterPodAffinity only looks at those.

These objects are owned by the scheduler's cache and changed only by it (or
on a :meth:`NodeInfo.clone` by preemption's what-if runs); plugins read them.
Everything runs on the event loop's thread.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from kubernetes.client import V1Node, V1Pod, V1PodAffinityTerm, V1Taint, V1WeightedPodAffinityTerm

from machinery.api import NO_EXECUTE, NO_SCHEDULE, PREFER_NO_SCHEDULE, RequiredNodeAffinity, Selector
from machinery.api.labels import SelectorError
from machinery.api.quantity import node_allocatable, pod_requests

_BIND_ALL: Final = "0.0.0.0"
_NATIVE: Final = frozenset({"cpu", "memory", "ephemeral-storage", "pods"})
_NO_LABELS: Final[Mapping[str, str]] = {}


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    """A parsed ``PodAffinityTerm``: which Pods it selects, and over which topology."""

    namespaces: frozenset[str]
    selector: Selector
    topology_key: str
    namespace_selector: Selector

    def matches(self, pod: PodInfo, namespace_labels: Mapping[str, str] | None) -> bool:
        """Whether ``pod`` is selected (``AffinityTerm.Matches``); unknown namespace labels count as none."""
        if pod.namespace in self.namespaces or self.namespace_selector.matches(namespace_labels or _NO_LABELS):
            return self.selector.matches(pod.labels)
        return False


@dataclass(frozen=True, slots=True)
class WeightedAffinityTerm:
    term: AffinityTerm
    weight: int


def normalized_image_name(name: str) -> str:
    """``image`` with ``:latest`` when it names no tag, as ImageLocality compares images."""
    if name.rfind(":") <= name.rfind("/"):
        return name + ":latest"
    return name


class PodInfo:
    """A Pod and what the scheduler computes once from it."""

    __slots__ = (
        "_required_node_affinity", "affinity_error", "cpu", "ephemeral", "has_affinity",
        "has_required_anti_affinity", "host_ports", "images", "key", "labels", "memory", "name",
        "namespace", "nonzero_cpu", "nonzero_memory", "owner", "pod", "preferred_affinity_terms",
        "preferred_anti_affinity_terms", "priority", "required_affinity_terms",
        "required_anti_affinity_terms", "scalars", "start_time", "terminating", "tolerations", "uid",
    )

    def __init__(self, pod: V1Pod) -> None:
        meta = pod.metadata
        spec = pod.spec
        if meta is None or spec is None:
            raise ValueError("a Pod needs metadata and spec")
        self.pod = pod
        self.uid: str = meta.uid or ""
        self.namespace: str = meta.namespace or ""
        self.name: str = meta.name or ""
        self.key = f"{self.namespace}/{self.name}"
        self.labels: Mapping[str, str] = meta.labels or _NO_LABELS
        #: Whether the Pod has a deletionTimestamp (read in hot loops: a plain attribute).
        self.terminating: bool = meta.deletion_timestamp is not None
        self.priority: int = spec.priority or 0
        self.tolerations = spec.tolerations or []
        requests = pod_requests(pod)
        self.cpu: int = requests.pop("cpu", 0)
        self.memory: int = requests.pop("memory", 0)
        self.ephemeral: int = requests.pop("ephemeral-storage", 0)
        self.scalars: dict[str, int] = {k: v for k, v in requests.items() if k not in _NATIVE}
        nonzero = pod_requests(pod, non_zero=True)
        self.nonzero_cpu: int = nonzero.get("cpu", 0)
        self.nonzero_memory: int = nonzero.get("memory", 0)
        self.host_ports = _host_ports(pod)
        self.images = tuple(normalized_image_name(c.image or "")
                            for c in (*(spec.init_containers or ()), *spec.containers))
        status = pod.status
        self.start_time: dt.datetime | None = status.start_time if status is not None else None
        owner = next((ref for ref in meta.owner_references or () if ref.controller), None)
        self.owner: tuple[str, str, str] | None = (owner.api_version, owner.kind, owner.name) if owner else None
        self._required_node_affinity: RequiredNodeAffinity | None = None
        self.affinity_error: str | None = None
        self.required_affinity_terms: tuple[AffinityTerm, ...] = ()
        self.required_anti_affinity_terms: tuple[AffinityTerm, ...] = ()
        self.preferred_affinity_terms: tuple[WeightedAffinityTerm, ...] = ()
        self.preferred_anti_affinity_terms: tuple[WeightedAffinityTerm, ...] = ()
        affinity = spec.affinity
        pod_affinity = affinity.pod_affinity if affinity is not None else None
        anti_affinity = affinity.pod_anti_affinity if affinity is not None else None
        self.has_affinity = pod_affinity is not None or anti_affinity is not None
        self.has_required_anti_affinity = bool(
            anti_affinity is not None and anti_affinity.required_during_scheduling_ignored_during_execution)
        if self.has_affinity:
            self._parse_affinity(pod_affinity, anti_affinity)

    def _parse_affinity(self, pod_affinity: Any, anti_affinity: Any) -> None:
        try:
            if pod_affinity is not None:
                self.required_affinity_terms = self._terms(
                    pod_affinity.required_during_scheduling_ignored_during_execution)
                self.preferred_affinity_terms = self._weighted(
                    pod_affinity.preferred_during_scheduling_ignored_during_execution)
            if anti_affinity is not None:
                self.required_anti_affinity_terms = self._terms(
                    anti_affinity.required_during_scheduling_ignored_during_execution)
                self.preferred_anti_affinity_terms = self._weighted(
                    anti_affinity.preferred_during_scheduling_ignored_during_execution)
        except SelectorError as err:
            # Kubernetes' API validation refuses such Pods; one that slipped through keeps no terms
            # and InterPodAffinity reports it as unschedulable rather than failing every cycle.
            self.affinity_error = str(err)
            self.required_affinity_terms = self.required_anti_affinity_terms = ()
            self.preferred_affinity_terms = self.preferred_anti_affinity_terms = ()

    def _terms(self, terms: Iterable[V1PodAffinityTerm] | None) -> tuple[AffinityTerm, ...]:
        return tuple(self._term(t) for t in terms or ())

    def _weighted(self, terms: Iterable[V1WeightedPodAffinityTerm] | None) -> tuple[WeightedAffinityTerm, ...]:
        return tuple(WeightedAffinityTerm(self._term(t.pod_affinity_term), t.weight) for t in terms or ())

    def _term(self, term: V1PodAffinityTerm) -> AffinityTerm:
        namespaces = frozenset(term.namespaces or ())
        # No namespaces and no namespaceSelector mean "the Pod's own namespace".
        if not namespaces and term.namespace_selector is None:
            namespaces = frozenset((self.namespace,))
        return AffinityTerm(namespaces, Selector.from_label_selector(term.label_selector), term.topology_key,
                            Selector.from_label_selector(term.namespace_selector))

    @property
    def required_node_affinity(self) -> RequiredNodeAffinity:
        """``nodeSelector`` and required node affinity, compiled on first use."""
        if self._required_node_affinity is None:
            self._required_node_affinity = RequiredNodeAffinity.from_pod(self.pod)
        return self._required_node_affinity

    @property
    def node_name(self) -> str:
        return (self.pod.spec.node_name if self.pod.spec is not None else None) or ""

    def with_pod(self, pod: V1Pod) -> PodInfo:
        """This PodInfo for a newer version of the same Pod, reusing what cannot have changed.

        Kubernetes' ``PodInfo.Update``: a Pod's spec is immutable apart from a
        few fields the scheduler does not read, but labels can change, so only
        a same-uid Pod with the same labels keeps the computed parts.
        """
        meta = pod.metadata
        if meta is None or meta.uid != self.uid or (meta.labels or _NO_LABELS) != self.labels:
            return PodInfo(pod)
        copy = object.__new__(PodInfo)
        for slot in PodInfo.__slots__:
            object.__setattr__(copy, slot, getattr(self, slot))
        copy.pod = pod
        copy.terminating = meta.deletion_timestamp is not None
        status = pod.status
        copy.start_time = status.start_time if status is not None else None
        return copy

    def __repr__(self) -> str:
        return f"PodInfo({self.key})"


def _host_ports(pod: V1Pod) -> tuple[tuple[str, str, int], ...]:
    """(hostIP, protocol, hostPort) of every container port with a hostPort (``GetHostPorts``)."""
    spec = pod.spec
    assert spec is not None
    ports: list[tuple[str, str, int]] = []
    # Init containers only count when they keep running (sidecars).
    containers = [c for c in spec.init_containers or () if c.restart_policy == "Always"] + list(spec.containers)
    for container in containers:
        for port in container.ports or ():
            if port.host_port and port.host_port > 0:
                ports.append((port.host_ip or _BIND_ALL, port.protocol or "TCP", port.host_port))
    return tuple(ports)


class NodeInfo:
    """One node as the scheduler sees it: allocatable, requested and free resources, Pods, ports, images.

    ``node`` is None for a node the cache only knows through Pods bound to it
    (its Node object was deleted or is not listed yet); such a NodeInfo is
    never offered to plugins.
    """

    __slots__ = (
        "alloc_cpu", "alloc_ephemeral", "alloc_memory", "alloc_scalars", "allowed_pods", "free_cpu",
        "free_ephemeral", "free_memory", "free_pods", "hard_taints", "images", "labels", "name", "node",
        "nonzero_cpu", "nonzero_memory", "pods", "pods_with_affinity", "pods_with_required_anti_affinity",
        "prefer_no_schedule_taints", "req_cpu", "req_ephemeral", "req_memory", "req_scalars", "taints",
        "unschedulable", "used_ports",
    )

    def __init__(self, name: str, node: V1Node | None = None) -> None:
        self.name = name
        self.pods: dict[str, PodInfo] = {}
        self.pods_with_affinity: dict[str, PodInfo] = {}
        self.pods_with_required_anti_affinity: dict[str, PodInfo] = {}
        #: (protocol, port) -> {hostIP: number of Pods using it}.
        self.used_ports: dict[tuple[str, int], dict[str, int]] = {}
        self.req_cpu = self.req_memory = self.req_ephemeral = 0
        self.req_scalars: dict[str, int] = {}
        self.nonzero_cpu = self.nonzero_memory = 0
        self.node: V1Node | None = None
        self.labels: Mapping[str, str] = _NO_LABELS
        self.taints: list[V1Taint] = []
        self.hard_taints = False
        self.prefer_no_schedule_taints = False
        self.unschedulable = False
        self.alloc_cpu = self.alloc_memory = self.alloc_ephemeral = self.allowed_pods = 0
        self.alloc_scalars: dict[str, int] = {}
        #: Image name -> size in bytes, for every name of every image the node reports.
        self.images: dict[str, int] = {}
        self.free_cpu = self.free_memory = self.free_ephemeral = self.free_pods = 0
        if node is not None:
            self.set_node(node)

    def set_node(self, node: V1Node) -> None:
        self.node = node
        meta, spec, status = node.metadata, node.spec, node.status
        self.labels = (meta.labels if meta is not None else None) or _NO_LABELS
        self.taints = (spec.taints if spec is not None else None) or []
        self.hard_taints = any(t.effect in (NO_SCHEDULE, NO_EXECUTE) for t in self.taints)
        self.prefer_no_schedule_taints = any(t.effect == PREFER_NO_SCHEDULE for t in self.taints)
        self.unschedulable = bool(spec is not None and spec.unschedulable)
        allocatable = node_allocatable(node)
        self.alloc_cpu = allocatable.pop("cpu", 0)
        self.alloc_memory = allocatable.pop("memory", 0)
        self.alloc_ephemeral = allocatable.pop("ephemeral-storage", 0)
        self.allowed_pods = allocatable.pop("pods", 0) // 1000
        self.alloc_scalars = allocatable
        self.images = {name: image.size_bytes or 0
                       for image in (status.images if status is not None else None) or ()
                       for name in image.names or ()}
        self._refresh_free()

    def _refresh_free(self) -> None:
        self.free_cpu = self.alloc_cpu - self.req_cpu
        self.free_memory = self.alloc_memory - self.req_memory
        self.free_ephemeral = self.alloc_ephemeral - self.req_ephemeral
        self.free_pods = self.allowed_pods - len(self.pods)

    def add_pod(self, pod: PodInfo) -> None:
        self.pods[pod.uid] = pod
        if pod.has_affinity:
            self.pods_with_affinity[pod.uid] = pod
        if pod.has_required_anti_affinity:
            self.pods_with_required_anti_affinity[pod.uid] = pod
        self._account(pod, 1)

    def remove_pod(self, uid: str) -> PodInfo | None:
        pod = self.pods.pop(uid, None)
        if pod is None:
            return None
        self.pods_with_affinity.pop(uid, None)
        self.pods_with_required_anti_affinity.pop(uid, None)
        self._account(pod, -1)
        return pod

    def _account(self, pod: PodInfo, sign: int) -> None:
        self.req_cpu += sign * pod.cpu
        self.req_memory += sign * pod.memory
        self.req_ephemeral += sign * pod.ephemeral
        for name, amount in pod.scalars.items():
            self.req_scalars[name] = self.req_scalars.get(name, 0) + sign * amount
        self.nonzero_cpu += sign * pod.nonzero_cpu
        self.nonzero_memory += sign * pod.nonzero_memory
        for ip, protocol, port in pod.host_ports:
            ips = self.used_ports.setdefault((protocol, port), {})
            count = ips.get(ip, 0) + sign
            if count > 0:
                ips[ip] = count
            else:
                ips.pop(ip, None)
                if not ips:
                    del self.used_ports[(protocol, port)]
        self._refresh_free()

    def port_conflicts(self, ip: str, protocol: str, port: int) -> bool:
        """``HostPortInfo.CheckConflict``: 0.0.0.0 conflicts with every IP on the same protocol and port."""
        ips = self.used_ports.get((protocol, port))
        if not ips:
            return False
        return ip == _BIND_ALL or ip in ips or _BIND_ALL in ips

    def clone(self) -> NodeInfo:
        """A copy whose Pods and accounting can change without touching this one (preemption's what-ifs)."""
        copy = NodeInfo(self.name)
        for slot in NodeInfo.__slots__:
            setattr(copy, slot, getattr(self, slot))
        copy.pods = dict(self.pods)
        copy.pods_with_affinity = dict(self.pods_with_affinity)
        copy.pods_with_required_anti_affinity = dict(self.pods_with_required_anti_affinity)
        copy.used_ports = {key: dict(ips) for key, ips in self.used_ports.items()}
        copy.req_scalars = dict(self.req_scalars)
        return copy

    def __repr__(self) -> str:
        return f"NodeInfo({self.name}, pods={len(self.pods)})"
