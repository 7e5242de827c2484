"""What differs between resources: kube-apiserver's "REST strategy", one subclass per kind.

The generic store (``store.py``) does the reads, guarded writes, deletes and
watches the same way for every resource; a Strategy says, for its kind, how
an object is prepared on create and update, defaulted, validated, which fields
can be selected, and how it is deleted (graceful deletion for Pods).

A subresource that writes the object with other rules is the same store with
another strategy, as in Kubernetes: :class:`StatusStrategy` (what ``/status``
may change) is the kind's strategy with ``prepare_for_update`` keeping the
spec and ``validate_update`` checking the status; a Pod's binding, a
Namespace's finalize and a Pod's ephemeral containers are strategies too.

Strategies see plain dicts in wire form and mutate only the object they are
handed. Most are synchronous and stateless; the few that need the cluster
(allocating a Service's ClusterIP, releasing it on delete) use the async hooks
:meth:`Strategy.begin_create`, :meth:`Strategy.begin_update` and
:meth:`Strategy.after_delete`, which get the store's :class:`StoreContext`.
:meth:`Strategy.authorize_write` refuses a write for who sends it, as
kube-apiserver's policy-based storage of RBAC objects does (nobody grants
permissions they do not hold); it runs for client requests, before admission.
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from apiserver.validation.field import FieldError
from apiserver.validation.meta import validate_object_meta, validate_object_meta_update
from machinery.api.kinds import ResourceInfo

if TYPE_CHECKING:
    from apiserver.admission.chain import UserInfo
    from apiserver.registry.store import StoreContext

Obj = dict[str, Any]
#: Called once a write that a ``begin_*`` hook prepared for has succeeded (True) or failed (False),
#: to commit or roll back what the hook reserved (kube-apiserver's FinishFunc).
FinishFunc = Callable[[bool], Awaitable[None]]

#: What a ``/status`` write may carry: the status, and metadata (labels, annotations).
_STATUS_WRITABLE = frozenset({"apiVersion", "kind", "metadata", "status"})


async def _nothing_to_finish(_ok: bool) -> None:
    return None


class Strategy:
    """The create and update rules of one kind. Subclasses override what their kind needs."""

    #: DELETE answers with the object (True) or with a Status (False), as kube-apiserver's store does
    #: (set from discovery, which says so for the kinds whose Kubernetes store returns the object; a
    #: subclass may set it for a kind that does so without saying, as Namespaces do).
    return_deleted_object: bool = False
    #: What a DELETE that names no propagation policy does to the object's dependents: "Background"
    #: (Kubernetes' default, DeleteDependents) or "Orphan" (the kinds whose v1 kept their legacy
    #: default, ReplicationControllers and batch/v1 Jobs: the ``orphan`` finalizer is added).
    default_propagation_policy: ClassVar[str] = "Background"
    allow_create_on_update: ClassVar[bool] = False
    allow_unconditional_update: ClassVar[bool] = True
    #: Fields a field selector may name, beyond metadata.name and metadata.namespace.
    selectable_fields: ClassVar[tuple[str, ...]] = ()
    #: Whether the kind has a spec whose changes bump metadata.generation (what counts as the spec:
    #: :meth:`spec_changed`).
    has_generation: ClassVar[bool] = False
    #: Whether a status that only ``/status`` may change exists (set from discovery).
    has_status: bool = False
    #: What Go always writes of the kind's status (its fields without ``omitempty``, at their zero), or
    #: None where a created object has no status: a created object's status is exactly this, and every
    #: ``/status`` write keeps these fields, at their zero when the client left them out.
    status_zeros: ClassVar[Mapping[str, Any] | None] = None
    #: Whether the object is namespaced (set from discovery).
    namespaced: bool = True

    def __init__(self, info: ResourceInfo[Any] | None = None) -> None:
        if info is not None:
            self.bind(info)

    def bind(self, info: ResourceInfo[Any]) -> None:
        """Take the kind's discovery facts (scope, status subresource)."""
        self.namespaced = info.namespaced
        self.has_status = info.has_status
        self.return_deleted_object = type(self).return_deleted_object or info.delete_returns_object

    # --- fields --------------------------------------------------------------------------

    def fields(self, obj: Obj) -> dict[str, str]:
        meta = obj.get("metadata") or {}
        out = {"metadata.name": meta.get("name") or ""}
        if self.namespaced:
            out["metadata.namespace"] = meta.get("namespace") or ""
        for path in self.selectable_fields:
            out[path] = lookup_field(obj, path)
        return out

    def supports_field(self, path: str) -> bool:
        return path in ("metadata.name", "metadata.namespace") or path in self.selectable_fields

    # --- create and update -----------------------------------------------------------------

    def prepare_for_create(self, obj: Obj) -> None:
        """Reset what a client may not set on create (status, for most kinds: :attr:`status_zeros`)."""
        if self.has_status:
            obj.pop("status", None)
        if self.status_zeros is not None:
            obj["status"] = copy.deepcopy(dict(self.status_zeros))

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        """A spec update keeps the stored status; a changed spec bumps the generation."""
        if self.has_status:
            if "status" in old:
                new["status"] = old["status"]
            else:
                new.pop("status", None)
        if self.has_generation and self.spec_changed(new, old):
            bump_generation(new, old)

    def spec_changed(self, new: Obj, old: Obj) -> bool:
        """Whether an update changed what ``metadata.generation`` counts: ``spec``, for most kinds.

        A kind whose desired state lives elsewhere says so here (a PodTemplate's ``template``, a
        webhook configuration's ``webhooks``), as its Kubernetes strategy compares those fields.
        """
        return new.get("spec") != old.get("spec")

    def default(self, obj: Obj) -> None:
        """Kubernetes' defaulting of the kind, in place (it runs on every create and update)."""

    def validate(self, obj: Obj) -> list[FieldError]:
        return validate_object_meta(obj.get("metadata") or {}, namespaced=self.namespaced)

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})

    def warnings_on_create(self, obj: Obj) -> list[str]:
        return []

    def warnings_on_update(self, new: Obj, old: Obj) -> list[str]:
        return []

    # --- hooks that need the cluster -------------------------------------------------------

    async def begin_create(self, ctx: StoreContext, obj: Obj, *, dry_run: bool) -> FinishFunc:
        """Reserve what the new object needs (an IP, a port) before it is written."""
        return _nothing_to_finish

    async def begin_update(self, ctx: StoreContext, new: Obj, old: Obj, *, dry_run: bool) -> FinishFunc:
        return _nothing_to_finish

    async def after_delete(self, ctx: StoreContext, obj: Obj) -> None:
        """Release what the deleted object held."""

    async def authorize_write(self, ctx: StoreContext, user: UserInfo, obj: Obj, old: Obj | None) -> None:
        """Refuse (raise a 403 APIError) a client's create (``old`` None) or update that ``user`` may not make."""

    # --- delete --------------------------------------------------------------------------

    def warnings_on_delete(self, propagation_policy: str | None) -> list[str]:
        """Warnings for a DELETE (kube-apiserver's REST Delete may add some, as Jobs' does)."""
        return []

    def grace_period(self, obj: Obj, requested: int | None) -> int:
        """Seconds a delete waits before the object goes (0: at once). Only Pods wait."""
        return 0

    def blocks_deletion(self, obj: Obj) -> bool:
        """Whether something besides metadata.finalizers keeps a deleted object (a Namespace's spec.finalizers)."""
        return False

    def mark_deleting(self, obj: Obj) -> None:
        """Changes made when the object gets its deletionTimestamp (a Namespace turns Terminating)."""


class StatusStrategy(Strategy):
    """The ``/status`` rules derived from a kind's strategy: keep the spec, validate the status.

    As in kube-apiserver, metadata such as labels and annotations may change
    through ``/status``; the server-owned metadata is restored by the store.
    Subclasses add the kind's status validation (``validate_update``).
    """

    def __init__(self, main: Strategy) -> None:
        super().__init__()
        self.main = main

    # Scope and status come from the kind's strategy, which the registration binds.
    @property
    def namespaced(self) -> bool:
        return self.main.namespaced

    @namespaced.setter
    def namespaced(self, value: bool) -> None:
        pass

    @property
    def has_status(self) -> bool:
        return self.main.has_status

    @has_status.setter
    def has_status(self, value: bool) -> None:
        pass

    def fields(self, obj: Obj) -> dict[str, str]:
        return self.main.fields(obj)

    def default(self, obj: Obj) -> None:
        """Nothing: the spec is the stored, defaulted one. Kinds with status defaults override this."""

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        for k in [k for k in new if k not in _STATUS_WRITABLE]:
            del new[k]
        for k, v in old.items():
            if k not in _STATUS_WRITABLE:
                new[k] = v
        if self.main.status_zeros:
            status = new.setdefault("status", {})
            for key, zero in self.main.status_zeros.items():
                status.setdefault(key, copy.deepcopy(zero))

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return self.main.validate_update(new, old)

    def grace_period(self, obj: Obj, requested: int | None) -> int:
        return self.main.grace_period(obj, requested)

    def blocks_deletion(self, obj: Obj) -> bool:
        return self.main.blocks_deletion(obj)


def bump_generation(new: Obj, old: Obj) -> None:
    """``metadata.generation`` of the update: the old one + 1 (an object stored without one counts as 1)."""
    old_meta = old.get("metadata") or {}
    new.setdefault("metadata", {})["generation"] = int(old_meta.get("generation") or 1) + 1


def bump_generation_if_spec_changed(new: Obj, old: Obj) -> None:
    """``metadata.generation`` + 1 when the spec changed, as every workload strategy does."""
    if new.get("spec") != old.get("spec"):
        bump_generation(new, old)


def lookup_field(obj: Obj, path: str) -> str:
    """A selectable field's value as field selectors compare it (``true``/``false`` for booleans)."""
    cur: Any = obj
    for part in path.split("."):
        if not isinstance(cur, dict):
            return ""
        cur = cur.get(part)
    if cur is None:
        return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)
