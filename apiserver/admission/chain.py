"""The admission chain: plugins that change or refuse a write after it is decoded and before it is stored.

kube-apiserver runs its admission plugins in a fixed order, mutating ones
first (``Admit``), validating ones after the strategy validated the object
(``Validate``). kubesim keeps that shape: a :class:`Plugin` implements
``admit`` and/or ``validate`` for the operations it handles; a :class:`Chain`
holds the enabled plugins in Kubernetes' order and, bound to one request
(:meth:`Chain.bind`), is what the generic store calls
(:class:`~apiserver.registry.store.Admission`).

Plugins read the cluster through the APIServer's watch caches (the store
context), never by listing etcd per request. They raise
:class:`~apiserver.errors.APIError` to refuse, with Kubernetes' messages.

Concurrency: plugins are shared by every request; they keep no per-request
state, and state they keep (none today) would be mutated only between awaits.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from machinery.api.kinds import ResourceInfo

if TYPE_CHECKING:
    from apiserver.registry.store import StoreContext

Obj = dict[str, Any]
Operation = Literal["CREATE", "UPDATE", "DELETE", "CONNECT"]


@dataclass(frozen=True, slots=True)
class UserInfo:
    """Who sent the request, as the authenticator found it (``user.Info``)."""

    name: str
    groups: tuple[str, ...] = ()
    uid: str = ""
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()


#: The user of a request nothing authenticated.
ANONYMOUS = UserInfo("system:anonymous", ("system:unauthenticated",))


@dataclass(slots=True)
class Attributes:
    """One admission decision's inputs (``admission.Attributes``)."""

    operation: Operation
    resource: ResourceInfo[Any]
    subresource: str
    namespace: str | None
    name: str
    object: Obj | None
    old_object: Obj | None
    dry_run: bool
    user: UserInfo
    context: StoreContext


class Plugin:
    """An admission plugin. Subclasses set :attr:`name` and override what they do."""

    name: ClassVar[str]
    #: The operations this plugin looks at.
    operations: ClassVar[frozenset[Operation]] = frozenset({"CREATE", "UPDATE", "DELETE", "CONNECT"})

    def handles(self, attrs: Attributes) -> bool:
        return attrs.operation in self.operations

    async def admit(self, attrs: Attributes) -> None:
        """Change ``attrs.object`` (mutating admission)."""

    async def validate(self, attrs: Attributes) -> None:
        """Refuse the request by raising (validating admission)."""


class Chain:
    """The enabled plugins, in Kubernetes' order."""

    def __init__(self, plugins: Sequence[Plugin]) -> None:
        self.plugins = tuple(plugins)

    @property
    def names(self) -> list[str]:
        return [p.name for p in self.plugins]

    def bind(self, context: StoreContext, *, resource: ResourceInfo[Any], subresource: str | None,
             namespace: str | None, name: str | None, dry_run: bool, user: UserInfo | None) -> BoundChain:
        return BoundChain(self, context, resource, subresource or "", namespace, name or "", dry_run,
                          user or ANONYMOUS)

    async def run(self, attrs: Attributes, *, mutating: bool) -> None:
        for plugin in self.plugins:
            if plugin.handles(attrs):
                if mutating:
                    await plugin.admit(attrs)
                else:
                    await plugin.validate(attrs)


class BoundChain:
    """The chain bound to one request: what :class:`~apiserver.registry.store.Store` calls."""

    __slots__ = ("chain", "context", "dry_run", "name", "namespace", "resource", "subresource", "user")

    def __init__(self, chain: Chain, context: StoreContext, resource: ResourceInfo[Any], subresource: str,
                 namespace: str | None, name: str, dry_run: bool, user: UserInfo) -> None:
        self.chain = chain
        self.context = context
        self.resource = resource
        self.subresource = subresource
        self.namespace = namespace
        self.name = name
        self.dry_run = dry_run
        self.user = user

    def attributes(self, operation: Operation, obj: Obj | None, old: Obj | None) -> Attributes:
        name = self.name or ((obj or old or {}).get("metadata") or {}).get("name") or ""
        return Attributes(operation, self.resource, self.subresource, self.namespace, name, obj, old,
                          self.dry_run, self.user, self.context)

    async def mutate(self, obj: Obj, old: Obj | None) -> None:
        await self.chain.run(self.attributes("CREATE" if old is None else "UPDATE", obj, old), mutating=True)

    async def validate(self, obj: Obj, old: Obj | None) -> None:
        await self.chain.run(self.attributes("CREATE" if old is None else "UPDATE", obj, old), mutating=False)

    async def validate_delete(self, obj: Obj) -> None:
        attrs = self.attributes("DELETE", None, obj)
        await self.chain.run(attrs, mutating=True)
        await self.chain.run(attrs, mutating=False)

    async def connect(self) -> None:
        attrs = self.attributes("CONNECT", None, None)
        await self.chain.run(attrs, mutating=True)
        await self.chain.run(attrs, mutating=False)
