"""Taking over Nodes that already exist: ``python -m kubelet_sim --adopt-nodes``.

KWOK simulates every Node that carries its annotation, whoever created it;
kubesim's kubelets do the same for Nodes annotated :data:`ADOPT_ANNOTATION`
(``kubesim.io/adopt-node: "true"``), which is how ``kubesim snapshot load``
brings a saved (or production) cluster's nodes to life and ``kubesim replay``
adds nodes. Such a Node keeps what it says about itself: its capacity,
allocatable, labels, taints, podCIDR and conditions (a node that was
``Ready=False`` or under ``MemoryPressure`` goes on reporting so, with
heartbeats, as its kubelet would); only the kubelet's own fields (addresses,
daemonEndpoints, nodeInfo) are this process's. Pods bound to it are then run
as on any simulated node. When the Node is deleted, it is gone: unlike a
node of the profile it is not registered again.

Concurrency: the Node informer's handler only queues names; one work queue
reads each Node once and hands it to the :class:`~kubelet_sim.node.NodeManager`.
"""

from __future__ import annotations

import ipaddress
import logging
from typing import Final

import httpx

from kubelet_sim.node import NodeManager
from kubelet_sim.profile import LABEL_ARCH, LABEL_HOSTNAME, LABEL_OS, NodeGroup, PlannedNode
from kubelet_sim.views import NodeView
from machinery.api.kinds import NODES
from machinery.client import ApiError, Client, NotFound
from machinery.workqueue import ItemExponentialFailureRateLimiter, WorkQueue, run_workers

log = logging.getLogger("kubelet_sim.adopt")

#: The annotation that asks kubelet_sim to simulate an existing Node.
ADOPT_ANNOTATION: Final = "kubesim.io/adopt-node"


def wants_adoption(view: NodeView) -> bool:
    return (view.metadata.annotations or {}).get(ADOPT_ANNOTATION) == "true"


def planned_from(node: dict[str, object], pod_cidr: str) -> tuple[PlannedNode, tuple[tuple[str, str, str, str], ...] | None]:
    """The node to simulate and the conditions to report, from a Node in wire form."""
    meta = _mapping(node.get("metadata"))
    spec = _mapping(node.get("spec"))
    status = _mapping(node.get("status"))
    name = str(meta.get("name") or "")
    labels = {str(k): str(v) for k, v in _mapping(meta.get("labels")).items()}
    # The labels a kubelet always sets (updateDefaultLabels), from the Node's own values where it has them.
    os_name, arch = labels.get(LABEL_OS, "linux"), labels.get(LABEL_ARCH, "amd64")
    for key, value in ((LABEL_HOSTNAME, name), (LABEL_OS, os_name), (LABEL_ARCH, arch),
                       ("beta.kubernetes.io/os", os_name), ("beta.kubernetes.io/arch", arch)):
        labels.setdefault(key, value)
    capacity = {str(k): str(v) for k, v in _mapping(status.get("capacity")).items()}
    allocatable = dict(capacity)
    allocatable.update({str(k): str(v) for k, v in _mapping(status.get("allocatable")).items()})
    capacity = capacity or dict(allocatable)
    taints = tuple({k: str(v) for k, v in _mapping(t).items() if k in ("key", "value", "effect")}
                   for t in _list(spec.get("taints")))
    group = NodeGroup(name=f"adopted {name}", count=1, name_pattern=name, capacity=capacity,
                      allocatable=allocatable, labels=labels, taints=taints, os=os_name, arch=arch)
    conditions = tuple((str(c.get("type") or ""), str(c.get("status") or ""), str(c.get("reason") or ""),
                        str(c.get("message") or ""))
                       for c in map(_mapping, _list(status.get("conditions"))) if c.get("type"))
    cidr = str(spec.get("podCIDR") or pod_cidr)
    return PlannedNode(name, group, labels, cidr), (conditions or None)


class Adopter:
    """Queues annotated Nodes nobody hosts, reads each once, and adds it to the node manager."""

    def __init__(self, client: Client, nodes: NodeManager, *, cluster_cidr: ipaddress.IPv4Network |
                 ipaddress.IPv6Network, node_cidr_mask_size: int, first_index: int) -> None:
        self._client = client
        self._nodes = nodes
        self._subnets = cluster_cidr.subnets(new_prefix=node_cidr_mask_size)
        self._skip = first_index
        self._queue: WorkQueue[str] = WorkQueue("node-adoption",
                                                rate_limiter=ItemExponentialFailureRateLimiter(0.1, 7.0))

    def on_unknown_node(self, view: NodeView) -> None:
        if wants_adoption(view) and view.metadata.name not in self._nodes.nodes:
            self._queue.add(view.metadata.name)

    async def run(self) -> None:
        await run_workers(self._queue, self._adopt, workers=8, drain_timeout=0)

    def _next_pod_cidr(self) -> str:
        """A podCIDR for a Node that has none: the profile's subnets after those of its own nodes."""
        while self._skip > 0:
            next(self._subnets)
            self._skip -= 1
        return str(next(self._subnets, ipaddress.ip_network("10.255.255.0/24")))

    async def _adopt(self, name: str) -> None:
        if name in self._nodes.nodes:
            return
        try:
            node = await self._client.get(NODES, name)
        except NotFound:
            self._queue.forget(name)
            return
        except (ApiError, httpx.TransportError) as err:
            log.warning("cannot read node %s to adopt it, will retry: %s", name, err)
            self._queue.add_rate_limited(name)
            return
        self._queue.forget(name)
        wire = node.model_dump(by_alias=True, exclude_none=True, mode="json")
        if (wire.get("metadata") or {}).get("annotations", {}).get(ADOPT_ANNOTATION) != "true":
            return
        pod_cidr = "" if (wire.get("spec") or {}).get("podCIDR") else self._next_pod_cidr()
        planned, reported = planned_from(wire, pod_cidr)
        self._nodes.add_node(planned, reported=reported)
        log.info("adopting node %s (%s)", name, ", ".join(f"{k} {v}" for k, v in planned.group.allocatable.items()
                                                        if k in ("cpu", "memory", "pods")))


def _mapping(value: object) -> dict[str, object]:
    return value if isinstance(value, dict) else {}


def _list(value: object) -> list[object]:
    return value if isinstance(value, list) else []
