"""From a URL to the resource it names: kube-apiserver's RequestInfo, and the request it travels with.

:func:`resolve` turns the path after ``/api/v1/`` or ``/apis/<group>/<version>/``
into (resource, namespace, name, subresource), as Kubernetes'
``RequestInfoFactory`` does, looking the resource up in the live
:class:`~apiserver.registry.registry.Registry` (so a CustomResourceDefinition
established a moment ago is found). A :class:`Call` is one resolved request:
what every handler, subresource and virtual resource receives.

Pure data and one pure function; nothing here does I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from starlette.datastructures import QueryParams
from starlette.requests import Request

from apiserver import errors
from apiserver.admission import ANONYMOUS, BoundChain, UserInfo
from apiserver.registry.resource import Resource
from machinery.api.kinds import ResourceInfo

if TYPE_CHECKING:
    from apiserver.registry.registry import Registry
    from apiserver.registry.store import Store
    from apiserver.server import APIServer

#: The ASGI scope key under which the authentication filter leaves the request's user.
USER_SCOPE_KEY = "kubesim.user"


@dataclass(slots=True)
class Target:
    """What a resource path names."""

    resource: Resource
    namespace: str | None
    name: str | None
    subresource: str | None
    watch_path: bool


def resolve(registry: Registry, group: str, version: str, path: str) -> Target:
    """Interpret the path after ``/api/v1/`` or ``/apis/<g>/<v>/``."""
    parts = [p for p in path.split("/") if p]
    watch_path = False
    if parts and parts[0] == "watch":
        watch_path = True
        parts = parts[1:]
    namespace: str | None = None
    if len(parts) >= 3 and parts[0] == "namespaces" and not (
            group == "" and len(parts) == 3 and registry.has_subresource("", version, "namespaces", parts[2])):
        # /namespaces/{ns}/{resource}...; but /namespaces/{name}/status and /finalize are the
        # Namespace's own subresources (the one case Kubernetes' RequestInfoFactory singles out).
        namespace = parts[1]
        parts = parts[2:]
    if not parts:
        raise errors.path_not_found()
    plural = parts[0]
    resource = registry.lookup(group, version, plural)
    if resource is None:
        raise errors.path_not_found()
    info = resource.info
    name = parts[1] if len(parts) >= 2 else None
    sub = parts[2] if len(parts) >= 3 else None
    # Only the proxy subresources take a path after them (pods/NAME/proxy/some/path).
    if len(parts) > 3 and sub != "proxy":
        raise errors.path_not_found()
    if namespace is not None and not info.namespaced:
        raise errors.path_not_found()
    if sub is not None and sub not in resource.subresources:
        raise errors.path_not_found()
    if name is not None and info.namespaced and namespace is None:
        raise errors.path_not_found()
    return Target(resource, namespace, name, sub, watch_path)


@dataclass(slots=True)
class Call:
    """One resolved API request: the HTTP request, the server, and what it addresses."""

    request: Request
    server: APIServer
    resource: Resource
    namespace: str | None
    name: str | None
    subresource: str | None
    watch_path: bool = False

    @property
    def info(self) -> ResourceInfo[Any]:
        return self.resource.info

    @property
    def query(self) -> QueryParams:
        return self.request.query_params

    @property
    def store(self) -> Store:
        """The generic store of the resource (of the resource it is stored in, for another version).

        Another version with rules of its own (events.k8s.io/v1 validates Events more strictly than
        core/v1) writes through that store with its own strategy.
        """
        store = self.server.store(self.resource.storage_info)
        strategy = self.resource.strategy
        if self.resource.storage_of is not None and strategy is not None and strategy is not store.strategy:
            return store.using(strategy)
        return store

    @property
    def user(self) -> UserInfo:
        user = self.request.scope.get(USER_SCOPE_KEY)
        return user if isinstance(user, UserInfo) else ANONYMOUS

    def admission(self, *, dry_run: bool, subresource: str | None = None) -> BoundChain:
        """The admission chain bound to this request."""
        return self.server.admission.bind(self.server, resource=self.resource.storage_info,
                                          subresource=subresource if subresource is not None else self.subresource,
                                          namespace=self.namespace, name=self.name, dry_run=dry_run,
                                          user=self.user)
