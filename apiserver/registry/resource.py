"""One resource's registration: everything the APIServer needs to serve it, in one object.

Kubernetes adds a built-in kind with one ``storage.go`` (a generic store filled
in with the kind's strategies, table convertor and TTL, plus one REST object per
subresource) and one line in its group's storage map. kubesim follows that
shape: each resource module under ``apiserver/registry/<group>/`` exports one
:class:`Resource`, and its group's ``RESOURCES`` list is the only registration
point. Discovery, OpenAPI, routing, etcd keys, watch caches, Tables, admission
and the protobuf reader all read the :class:`~apiserver.registry.registry.Registry`
built from those lists; CustomResourceDefinitions add :class:`Resource` objects
to it at run time.

A resource is one of three shapes:

- **stored** (most): a :class:`~apiserver.registry.strategy.Strategy` over the
  generic store, which keeps the objects in etcd under ``info.etcd_resource``;
- **stored in another resource's keys** (``storage_of``): another group or
  version of the same objects, as ``events.k8s.io/v1`` Events are core Events
  and ``autoscaling/v1`` HPAs are ``autoscaling/v2`` ones; a
  :class:`Converter` turns objects between the two forms;
- **virtual** (``rest``): answered by code, never stored (the review APIs,
  componentstatuses, core ``bindings``).

Any of them is **served** (routed, in discovery and OpenAPI) unless it says
``served=False``: a CustomResourceDefinition's storage version may be unserved,
and is still registered, for its store and watch cache hold the objects the
served versions read and write (``storage_of``).

Subresources are objects keyed by name (:class:`Subresource`): a status
endpoint is the store with the status strategy, a scale endpoint is given
accessors, binding, eviction, log, finalize, token and the streaming ones are
their own classes.

Everything here is immutable after import; requests share it freely.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from apiserver import errors
from apiserver.codec import PATCH_TYPES
from apiserver.printers import Printer
from apiserver.registry.strategy import Obj, Strategy
from machinery.api.kinds import ResourceInfo

if TYPE_CHECKING:
    from starlette.responses import Response

    from apiserver.endpoints.request import Call
    from apiserver.settings import Settings


class Subresource:
    """One ``<resource>/<name>/<subresource>`` endpoint (kube-apiserver's REST object of a subresource).

    Each HTTP method maps to a verb method (GET ``get``, POST ``create``, PUT
    ``update``, PATCH ``patch``, DELETE ``delete``); a verb the subresource does
    not serve answers 405. A connecter (exec, attach, portforward, proxy) takes
    every method in :meth:`connect`. What discovery lists for the subresource
    comes from Kubernetes' data (:class:`~machinery.api.kinds.Subresource`); a
    test checks that every listed verb is implemented.
    """

    #: True for connect-style endpoints: every method goes to :meth:`connect`.
    connects: ClassVar[bool] = False

    async def get(self, call: Call) -> Response:
        raise errors.method_not_allowed()

    async def create(self, call: Call) -> Response:
        raise errors.method_not_allowed()

    async def update(self, call: Call) -> Response:
        raise errors.method_not_allowed()

    async def patch(self, call: Call) -> Response:
        raise errors.method_not_allowed()

    async def delete(self, call: Call) -> Response:
        raise errors.method_not_allowed()

    async def connect(self, call: Call) -> Response:
        raise errors.method_not_allowed()

    def implements(self, verb: str) -> bool:
        """Whether this endpoint serves ``verb`` (a discovery verb: get, create, update, patch, delete)."""
        if self.connects:
            return type(self).connect is not Subresource.connect
        method = getattr(type(self), verb, None)
        return method is not None and method is not getattr(Subresource, verb)


class VirtualREST(Protocol):
    """A resource answered by code rather than stored: the review APIs, componentstatuses, bindings.

    It implements the collection and object verbs its discovery entry lists;
    the dispatcher calls them by name (``create``, ``get``, ``list``) and
    answers 405 for any other.
    """


class Converter(Protocol):
    """Turns objects between a served version and the version they are stored in."""

    def to_storage(self, obj: Obj) -> Obj: ...

    def from_storage(self, obj: Obj) -> Obj: ...


@dataclass(frozen=True, kw_only=True, slots=True)
class Resource:
    """The registration of one resource: its facts, its strategy and everything served beside it."""

    info: ResourceInfo[Any]
    #: The create/update/delete rules; ``None`` for a virtual resource.
    strategy: Strategy | None = None
    subresources: Mapping[str, Subresource] = field(default_factory=dict)
    #: The Table columns; ``None`` for the default (Name, Created At). For another version of a
    #: stored resource, rows are computed from the stored form, as Kubernetes prints internal objects.
    printer: Printer | None = None
    #: Seconds an object lives in etcd, from the APIServer's settings (Events: ``--event-ttl``).
    ttl: Callable[[Settings], int] | None = None
    #: For a virtual resource: the object implementing its verbs.
    rest: Any = None
    #: The resource whose etcd keys and watch cache hold these objects, when it is another one.
    storage_of: ResourceInfo[Any] | None = None
    #: How objects of this version become the stored version and back (with ``storage_of``; for the
    #: stored version itself, what reading changes, such as a custom resource's defaults).
    converter: Converter | None = None
    #: The PATCH content types served (custom resources take no strategic merge patch).
    patch_types: tuple[str, ...] = PATCH_TYPES
    #: Whether clients reach it (routes, discovery, OpenAPI). False only for a resource kept for its
    #: objects: a CRD's storage version that is not served, whose keys the served versions use.
    served: bool = True

    def __post_init__(self) -> None:
        if not self.served and (self.strategy is None or self.storage_of is not None):
            raise ValueError(f"{self.info.group_resource}/{self.info.version}: only a resource that holds its "
                             "objects is registered without being served")
        # Another version of a stored resource shares that resource's strategy, bound there.
        if self.strategy is not None and self.storage_of is None:
            self.strategy.bind(self.info)

    @property
    def stored(self) -> bool:
        return self.strategy is not None

    @property
    def storage_info(self) -> ResourceInfo[Any]:
        """The resource whose keys hold the objects (itself unless ``storage_of`` says otherwise)."""
        return self.storage_of or self.info
