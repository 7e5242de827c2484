"""The registry: every resource the APIServer serves, looked up by path, kind or storage.

Built at start from the built-in groups' registrations
(:data:`apiserver.registry.groups.GROUPS`); CustomResourceDefinitions
:meth:`add <Registry.add>` and :meth:`remove <Registry.remove>` theirs while it
runs. Discovery, OpenAPI, routing and the protobuf reader ask the registry at
request time, so a change is served at once; caches built from it key on
:attr:`Registry.generation`, which every change bumps.

A registration that is not served (``Resource.served`` False: a CRD's storage
version with ``served: false``) is kept apart: what clients reach
(:meth:`~Registry.lookup`, :meth:`~Registry.resources`,
:meth:`~Registry.serves`, :meth:`~Registry.group_versions`, so discovery,
OpenAPI and routing) never sees it, as kube-apiserver answers 404 for an
unserved version; what keeps objects (:meth:`~Registry.get`,
:meth:`~Registry.stored`, so stores and watch caches) does, since the served
versions read and write its keys.

Concurrency: one event loop changes the registry (:meth:`add`, :meth:`remove`),
so a request on the loop sees it before or after a change, never half of one.
Discovery and OpenAPI documents are built in the thread pool meanwhile, so the
maps are copied on write, never changed in place: a builder's iteration never
meets a map changing under it, and each lookup reads each map once. A builder
that spans a change may mix two generations; :meth:`Registry.memo` does not keep
what it built.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Final, TypeVar

from apiserver.registry.resource import Resource
from machinery.api.kinds import PREFERRED_VERSIONS, ResourceInfo

#: kube-aggregator's priorities of the built-in groups (higher first), and of each version in a group.
GROUP_PRIORITIES: Final = {
    "apiregistration.k8s.io": 18000, "apps": 17800, "events.k8s.io": 17750, "authentication.k8s.io": 17700,
    "authorization.k8s.io": 17600, "autoscaling": 17500, "batch": 17400, "certificates.k8s.io": 17300,
    "networking.k8s.io": 17200, "policy": 17100, "rbac.authorization.k8s.io": 17000, "storage.k8s.io": 16800,
    "admissionregistration.k8s.io": 16700, "apiextensions.k8s.io": 16700, "scheduling.k8s.io": 16600,
    "coordination.k8s.io": 16500, "node.k8s.io": 16300, "discovery.k8s.io": 16200,
    "flowcontrol.apiserver.k8s.io": 16100,
}
#: The priority Kubernetes gives a group it does not know (a custom resource's group).
DEFAULT_GROUP_PRIORITY: Final = 1000
_MISSING: Final = object()


class Registry:
    def __init__(self, resources: Iterable[Resource]) -> None:
        #: Served resources by (group, version, plural); the only map clients' requests reach.
        self._by_path: dict[tuple[str, str, str], Resource] = {}
        #: Resources registered only for their objects (not served), by the same key.
        self._unserved: dict[tuple[str, str, str], Resource] = {}
        self._version_priority: dict[tuple[str, str], int] = {}
        self._group_priority: dict[str, int] = {}
        self.generation = 0
        #: Documents built from the registry (discovery, OpenAPI), dropped on every change.
        self.documents: dict[Any, Any] = {}
        self._listeners: list[Callable[[], None]] = []
        for resource in resources:
            self._put(resource)

    # --- lookups ---------------------------------------------------------------------------------

    def lookup(self, group: str, version: str, plural: str) -> Resource | None:
        """The served resource at a path, or None (an unserved one answers 404 like an unknown one)."""
        return self._by_path.get((group, version, plural))

    def get(self, info: ResourceInfo[Any]) -> Resource:
        """The registration of ``info``, served or kept only for its objects."""
        key = (info.group, info.version, info.plural)
        resource = self._by_path.get(key) or self._unserved.get(key)
        if resource is None:
            raise LookupError(f"{info.group_resource}/{info.version} is not registered")
        return resource

    def for_kind(self, api_version: str, kind: str) -> Resource | None:
        group, _, version = api_version.rpartition("/")
        for resource in self._by_path.values():
            info = resource.info
            if info.group == group and info.version == version and info.kind == kind:
                return resource
        return None

    def serves(self, group: str, version: str) -> bool:
        return (group, version) in self._version_priority

    def has_subresource(self, group: str, version: str, plural: str, subresource: str) -> bool:
        resource = self._by_path.get((group, version, plural))
        return resource is not None and subresource in resource.subresources

    def resources(self) -> list[Resource]:
        """Every served resource, sorted by group, version and name."""
        return sorted(self._by_path.values(), key=lambda r: (r.info.group, r.info.version, r.info.plural))

    def stored(self) -> list[ResourceInfo[Any]]:
        """The resources whose objects are kept in etcd, one per set of keys, served or not."""
        seen: dict[str, ResourceInfo[Any]] = {}
        every = [*self._by_path.values(), *self._unserved.values()]
        for resource in sorted(every, key=lambda r: (r.info.group, r.info.version, r.info.plural)):
            if resource.stored and resource.storage_of is None:
                seen.setdefault(resource.info.etcd_resource, resource.info)
        return list(seen.values())

    def group_versions(self) -> list[tuple[str, str]]:
        """Every served (group, version): the core group first, then groups by priority, versions by priority."""
        versions, groups = self._version_priority, self._group_priority
        return sorted(versions, key=lambda gv: (gv[0] != "", -groups.get(gv[0], DEFAULT_GROUP_PRIORITY),
                                                gv[0], -versions[gv]))

    def preferred_version(self, group: str) -> str:
        versions = [v for g, v in self.group_versions() if g == group]
        return versions[0]

    # --- changes -----------------------------------------------------------------------------------

    def add(self, resource: Resource, *, group_priority: int = DEFAULT_GROUP_PRIORITY,
            version_priority: int = 15) -> None:
        """Register ``resource`` (a custom resource) from now on: served, unless it says otherwise.

        Registering a path again replaces what was there, served or not (a CRD's version that
        became served, or stopped being served, keeps its store but moves between the two).
        """
        self._put(resource, group_priority=group_priority, version_priority=version_priority)
        self._changed()

    def remove(self, info: ResourceInfo[Any]) -> None:
        """Forget ``info``, served or not; its group-version goes when it has no served resource left."""
        key = (info.group, info.version, info.plural)
        self._by_path = _without(self._by_path, key)
        self._unserved = _without(self._unserved, key)
        self._forget_version_if_empty(info.group, info.version)
        self._changed()

    def on_change(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` after every change (caches of discovery and OpenAPI drop their documents)."""
        self._listeners.append(listener)

    def _put(self, resource: Resource, *, group_priority: int | None = None, version_priority: int = 15) -> None:
        info = resource.info
        key = (info.group, info.version, info.plural)
        if not resource.served:
            self._by_path = _without(self._by_path, key)
            self._unserved = {**self._unserved, key: resource}
            self._forget_version_if_empty(info.group, info.version)
            return
        self._unserved = _without(self._unserved, key)
        self._by_path = {**self._by_path, key: resource}
        gv = (info.group, info.version)
        if gv not in self._version_priority:
            preferred = PREFERRED_VERSIONS.get(info.group)
            self._version_priority = {**self._version_priority,
                                      gv: 30 if preferred == info.version else version_priority}
        if info.group and info.group not in self._group_priority:
            self._group_priority = {**self._group_priority, info.group: GROUP_PRIORITIES.get(
                info.group, group_priority if group_priority is not None else DEFAULT_GROUP_PRIORITY)}

    def _forget_version_if_empty(self, group: str, version: str) -> None:
        """A group-version is served while one of its resources is (and a group while one of its versions is)."""
        if not any((r.info.group, r.info.version) == (group, version) for r in self._by_path.values()):
            self._version_priority = _without(self._version_priority, (group, version))

    def memo(self, key: Any, build: Callable[[], Any]) -> Any:
        """``build()``'s result, kept until the registry changes.

        Documents are built in the thread pool while the event loop may change
        the registry, so each is kept under the generation it was started at: one
        built across a change is returned to its caller but never found again. A
        build that fails across a change (it met a CRD's version whose definitions
        had gone) is started again on the new registry; one that fails otherwise
        raises.
        """
        while True:
            generation = self.generation
            found = self.documents.get((generation, key), _MISSING)
            if found is not _MISSING:
                return found
            try:
                found = build()
            except Exception:
                if self.generation != generation:
                    continue
                raise
            self.documents[(generation, key)] = found
            return found

    def _changed(self) -> None:
        self.generation += 1
        self.documents.clear()
        for listener in self._listeners:
            listener()


K = TypeVar("K")
V = TypeVar("V")


def _without(mapping: dict[K, V], key: K) -> dict[K, V]:
    """A copy of ``mapping`` without ``key`` (the same dict when it has none)."""
    if key not in mapping:
        return mapping
    return {k: v for k, v in mapping.items() if k != key}
