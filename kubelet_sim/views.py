"""Slim views of Pods and Nodes: the fields a simulated kubelet reads, and nothing else.

One kubelet_sim process watches every bound Pod and every Node, and must hold
10,000 Pods and 5,000 Nodes in well under 512 MiB. The official models keep
every field of every nested object (an official ``V1Pod`` with its status costs
about 24 KB of memory; these views about 8 KB), so the informers here decode
into these models instead. They ignore unknown fields rather than forbid them,
which also makes decoding about three times faster.

:data:`POD_VIEWS`, :data:`NODE_VIEWS` and :data:`LEASE_VIEWS` are the resource
table's ``PODS``, ``NODES`` and ``LEASES`` with these models: the client and the
informers take them wherever they take a resource, so the URLs stay the table's.
:data:`WIRE_PODS`, :data:`CONFIG_MAPS` and :data:`SECRETS` read single objects
whole (exec and the process runtime need a container's full spec and its
volumes' data).

Values only; the informers' task builds them and nobody mutates them.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Final, TypeVar, cast

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from machinery.api import kinds
from machinery.api.kinds import LEASES, NODES, PODS, ResourceInfo


class _View(BaseModel):
    # camelCase aliases, except where Kubernetes spells an initialism in capitals (podIP, containerID).
    model_config = ConfigDict(extra="ignore", alias_generator=to_camel, populate_by_name=True)


class MetaView(_View):
    name: str = ""
    namespace: str | None = None
    uid: str = ""
    resource_version: str = ""
    creation_timestamp: str | None = None
    deletion_timestamp: str | None = None
    deletion_grace_period_seconds: int | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None


class PortView(_View):
    container_port: int = 0
    name: str | None = None
    host_port: int | None = None
    host_ip: str | None = Field(default=None, alias="hostIP")
    protocol: str | None = None


class ContainerView(_View):
    name: str = ""
    image: str = ""
    image_pull_policy: str | None = None
    ports: list[PortView] | None = None
    #: Requests and limits in wire form, for ``machinery.api.quantity.pod_requests``.
    resources: dict[str, Any] | None = None
    #: ``Always`` makes an init container a sidecar.
    restart_policy: str | None = None
    command: list[str] | None = None
    args: list[str] | None = None
    stdin: bool | None = None
    stdin_once: bool | None = None
    tty: bool | None = None
    #: Probes in wire form (``kubelet_sim.prober`` reads them).
    startup_probe: dict[str, Any] | None = None
    readiness_probe: dict[str, Any] | None = None
    liveness_probe: dict[str, Any] | None = None


class PodOSView(_View):
    name: str = ""


class PodSpecView(_View):
    node_name: str | None = None
    containers: list[ContainerView] = []
    init_containers: list[ContainerView] | None = None
    restart_policy: str | None = None
    termination_grace_period_seconds: int | None = None
    host_network: bool | None = None
    os: PodOSView | None = None
    # Wire form, for machinery.api's node-affinity, taint and quantity functions.
    node_selector: dict[str, str] | None = None
    affinity: dict[str, Any] | None = None
    tolerations: list[dict[str, Any]] | None = None
    overhead: dict[str, Any] | None = None
    priority: int | None = None


class ConditionView(_View):
    type: str = ""
    status: str = ""
    last_transition_time: str | None = None


class ContainerStatusView(_View):
    name: str = ""
    ready: bool = False
    restart_count: int = 0
    container_id: str | None = Field(default=None, alias="containerID")
    # ContainerState in wire form ({"running": {"startedAt": ...}}).
    state: dict[str, Any] | None = None
    last_state: dict[str, Any] | None = None


class PodStatusView(_View):
    phase: str | None = None
    start_time: str | None = None
    pod_ip: str | None = Field(default=None, alias="podIP")
    conditions: list[ConditionView] | None = None
    container_statuses: list[ContainerStatusView] | None = None
    init_container_statuses: list[ContainerStatusView] | None = None


class PodView(_View):
    metadata: MetaView = MetaView()
    spec: PodSpecView = PodSpecView()
    status: PodStatusView = PodStatusView()


class LeaseView(_View):
    metadata: MetaView = MetaView()


class NodeSpecView(_View):
    pod_cidr: str | None = Field(default=None, alias="podCIDR")
    taints: list[dict[str, Any]] | None = None


class NodeStatusView(_View):
    conditions: list[ConditionView] | None = None


class NodeView(_View):
    metadata: MetaView = MetaView()
    spec: NodeSpecView = NodeSpecView()
    status: NodeStatusView = NodeStatusView()


M = TypeVar("M", bound=BaseModel)


def _decoded_as(resource: ResourceInfo[Any], model: type[M]) -> ResourceInfo[M]:
    """The same resource (same URLs), with its objects decoded into ``model``."""
    return cast("ResourceInfo[M]", dataclasses.replace(resource, model_ref=model))


class WireObject(BaseModel):
    """Any object, kept whole as wire JSON (for the few reads that need all of it: exec, volumes)."""

    model_config = ConfigDict(extra="allow")

    def wire(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


POD_VIEWS: Final = _decoded_as(PODS, PodView)
#: Whole Pods, read one at a time when a container needs its full spec (env, volumes, mounts).
WIRE_PODS: Final = _decoded_as(PODS, WireObject)
#: ConfigMaps and Secrets, read whole for volumes and variables.
CONFIG_MAPS: Final = _decoded_as(kinds.CONFIG_MAPS, WireObject)
SECRETS: Final = _decoded_as(kinds.SECRETS, WireObject)
NODE_VIEWS: Final = _decoded_as(NODES, NodeView)
#: Only the version of what a renewal wrote matters to the node that renews it.
LEASE_VIEWS: Final = _decoded_as(LEASES, LeaseView)
