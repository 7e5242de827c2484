"""The resources kubesim serves, described once for every component.

Kubernetes keeps this knowledge spread over its scheme, its REST storage and
its discovery documents. kubesim keeps one table: the APIServer builds its
routes, discovery, OpenAPI paths and etcd keys from it, and clients build
their URLs from it, so the two sides cannot disagree about a path.

The table is immutable and built at import time; nothing here does I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, NewType, TypeVar

from kubernetes import client as k8s
from pydantic import BaseModel

#: ``namespace/name`` for namespaced objects, ``name`` for cluster-scoped ones (client-go's MetaNamespaceKey).
ObjectKey = NewType("ObjectKey", str)
#: ``metadata.uid`` of an object.
UID = NewType("UID", str)


@dataclass(frozen=True, slots=True)
class Subresource:
    """A subresource such as ``pods/status`` as discovery lists it."""

    name: str
    kind: str
    verbs: tuple[str, ...]
    group: str = ""
    version: str = ""


M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True, slots=True)
class ResourceInfo(Generic[M]):
    """Everything kubesim needs to know to serve, store and address one resource.

    Generic in the official model of its objects, so that a client call such as
    ``client.get(PODS, ...)`` is typed as returning a ``V1Pod``.
    """

    group: str
    version: str
    plural: str
    singular: str
    kind: str
    namespaced: bool
    model: type[M]
    #: The first segment of the etcd key, as kube-apiserver lays it out
    #: (``/registry/minions/node-1`` for nodes, ``/registry/controllers/...`` for RCs).
    etcd_resource: str
    #: The OpenAPI definition name in Kubernetes' definitions (``io.k8s.api.core.v1.Pod``).
    definition: str
    short_names: tuple[str, ...] = ()
    verbs: tuple[str, ...] = (
        "create", "delete", "deletecollection", "get", "list", "patch", "update", "watch",
    )
    subresources: tuple[Subresource, ...] = ()
    categories: tuple[str, ...] = ()
    #: Whether the object has a status that only ``/status`` may change.
    has_status: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    @property
    def group_resource(self) -> str:
        """``pods`` or ``leases.coordination.k8s.io``, as Kubernetes names resources in messages."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def api_prefix(self) -> str:
        return f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"

    def path(self, namespace: str | None = None, name: str | None = None,
             subresource: str | None = None) -> str:
        """The REST path of a collection, an object or a subresource."""
        parts = [self.api_prefix]
        if self.namespaced and namespace:
            parts.append(f"namespaces/{namespace}")
        parts.append(self.plural)
        if name is not None:
            parts.append(name)
            if subresource:
                parts.append(subresource)
        return "/".join(parts)

    def etcd_prefix(self, namespace: str | None = None) -> str:
        """The etcd key prefix of the whole resource, or of one namespace, with a trailing slash."""
        if self.namespaced and namespace:
            return f"/registry/{self.etcd_resource}/{namespace}/"
        return f"/registry/{self.etcd_resource}/"

    def etcd_key(self, namespace: str | None, name: str) -> str:
        if self.namespaced:
            return f"/registry/{self.etcd_resource}/{namespace}/{name}"
        return f"/registry/{self.etcd_resource}/{name}"


_STATUS = ("get", "patch", "update")

PODS = ResourceInfo(
    group="", version="v1", plural="pods", singular="pod", kind="Pod", namespaced=True,
    model=k8s.V1Pod, etcd_resource="pods", definition="io.k8s.api.core.v1.Pod",
    short_names=("po",), categories=("all",),
    subresources=(
        Subresource("status", "Pod", _STATUS),
        Subresource("binding", "Binding", ("create",)),
        Subresource("eviction", "Eviction", ("create",), group="policy", version="v1"),
        Subresource("log", "Pod", ("get",)),
    ),
)
NODES = ResourceInfo(
    group="", version="v1", plural="nodes", singular="node", kind="Node", namespaced=False,
    model=k8s.V1Node, etcd_resource="minions", definition="io.k8s.api.core.v1.Node",
    short_names=("no",),
    subresources=(Subresource("status", "Node", _STATUS),),
)
NAMESPACES = ResourceInfo(
    group="", version="v1", plural="namespaces", singular="namespace", kind="Namespace",
    namespaced=False, model=k8s.V1Namespace, etcd_resource="namespaces",
    definition="io.k8s.api.core.v1.Namespace", short_names=("ns",),
    verbs=("create", "delete", "get", "list", "patch", "update", "watch"),
    subresources=(
        Subresource("status", "Namespace", _STATUS),
        Subresource("finalize", "Namespace", ("update",)),
    ),
)
REPLICATION_CONTROLLERS = ResourceInfo(
    group="", version="v1", plural="replicationcontrollers", singular="replicationcontroller",
    kind="ReplicationController", namespaced=True, model=k8s.V1ReplicationController,
    etcd_resource="controllers", definition="io.k8s.api.core.v1.ReplicationController",
    short_names=("rc",), categories=("all",),
    subresources=(
        Subresource("status", "ReplicationController", _STATUS),
        Subresource("scale", "Scale", _STATUS, group="autoscaling", version="v1"),
    ),
)
EVENTS = ResourceInfo(
    group="", version="v1", plural="events", singular="event", kind="Event", namespaced=True,
    model=k8s.CoreV1Event, etcd_resource="events", definition="io.k8s.api.core.v1.Event",
    short_names=("ev",), has_status=False,
)
LEASES = ResourceInfo(
    group="coordination.k8s.io", version="v1", plural="leases", singular="lease", kind="Lease",
    namespaced=True, model=k8s.V1Lease, etcd_resource="leases",
    definition="io.k8s.api.coordination.v1.Lease", has_status=False,
)

#: Every stored resource, in the order discovery lists them.
RESOURCES: tuple[ResourceInfo[Any], ...] = (
    NAMESPACES, NODES, PODS, REPLICATION_CONTROLLERS, EVENTS, LEASES,
)

_BY_PLURAL: dict[tuple[str, str, str], ResourceInfo[Any]] = {
    (r.group, r.version, r.plural): r for r in RESOURCES
}
_BY_KIND: dict[tuple[str, str], ResourceInfo[Any]] = {(r.api_version, r.kind): r for r in RESOURCES}


def lookup(group: str, version: str, plural: str) -> ResourceInfo[Any] | None:
    """The resource served at ``/api[s]/<group>/<version>/<plural>``, if any."""
    return _BY_PLURAL.get((group, version, plural))


def for_kind(api_version: str, kind: str) -> ResourceInfo[Any] | None:
    """The resource whose objects have this apiVersion and kind, if any."""
    return _BY_KIND.get((api_version, kind))


def group_versions() -> list[tuple[str, str]]:
    """Every (group, version) served, the core group ("") first."""
    seen: list[tuple[str, str]] = []
    for r in RESOURCES:
        if (r.group, r.version) not in seen:
            seen.append((r.group, r.version))
    return seen


def object_key(namespace: str | None, name: str) -> ObjectKey:
    """client-go's MetaNamespaceKeyFunc: ``ns/name``, or ``name`` when cluster-scoped."""
    return ObjectKey(f"{namespace}/{name}" if namespace else name)


def split_key(key: ObjectKey | str) -> tuple[str | None, str]:
    """The inverse of :func:`object_key`."""
    ns, sep, name = key.partition("/")
    return (ns, name) if sep else (None, ns)
