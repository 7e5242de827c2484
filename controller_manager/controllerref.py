"""Claiming dependents: adopt the orphans a selector matches, release the owned ones it no longer does.

Kubernetes' ``ControllerRefManager`` (``pkg/controller/controller_ref_manager.go``),
once for every kind of dependent: the Deployment controller claims
ReplicaSets, the StatefulSet, DaemonSet and Job controllers claim Pods (the
ReplicaSet controller has its own copy on its hot path). Adoption is a
strategic merge patch adding a controller reference, guarded by the
dependent's uid; release removes it. Before adopting anything the owner is
read again from the APIServer (``RecheckDeletionTimestamp``): the cache may not
show yet that it is being deleted, and adopting then would keep its
dependents alive after it.

Concurrency: one call per sync; the patches of one call run concurrently.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from pydantic import BaseModel

from controller_manager.podcontrol import outcomes, owner_reference
from controller_manager.podutil import controller_of
from machinery.api.kinds import ResourceInfo
from machinery.api.labels import Selector
from machinery.client.errors import Invalid, NotFound
from machinery.client.objects import meta_of
from machinery.client.rest import Client, PatchType

D = TypeVar("D", bound=BaseModel)


async def claim(client: Client, owner: BaseModel, owner_resource: ResourceInfo[Any],
                dependents: ResourceInfo[D], selector: Selector, candidates: Iterable[D], *,
                filter: Callable[[D], bool] = lambda _d: True) -> list[D]:
    """The dependents ``owner`` controls after claiming ``candidates`` (its own and the orphans around it)."""
    meta = meta_of(owner)
    uid = meta.uid or ""
    deleting = meta.deletion_timestamp is not None
    claimed: list[D] = []
    to_adopt: list[D] = []
    to_release: list[D] = []
    for obj in candidates:
        ref = controller_of(meta_of(obj))
        labels: Mapping[str, str] = meta_of(obj).labels or {}
        if ref is not None:
            if ref.uid != uid:
                continue
            if selector.matches(labels):
                claimed.append(obj)
            elif not deleting:
                to_release.append(obj)
            continue
        if deleting or meta_of(obj).deletion_timestamp is not None or not filter(obj):
            continue
        if not selector.empty() and selector.matches(labels):
            to_adopt.append(obj)
    if to_adopt and not await _can_adopt(client, owner, owner_resource):
        to_adopt = []
    reference = owner_reference(owner, owner_resource)
    adopted = await outcomes(_patch(client, dependents, obj, {"metadata": {
        "ownerReferences": [reference], "uid": meta_of(obj).uid}}) for obj in to_adopt)
    released = await outcomes(_patch(client, dependents, obj, {"metadata": {
        "ownerReferences": [{"$patch": "delete", "uid": uid}], "uid": meta_of(obj).uid}}) for obj in to_release)
    errors: list[BaseException] = []
    for obj, outcome in zip(to_adopt, adopted, strict=True):
        if outcome is None:
            claimed.append(obj)
        elif not isinstance(outcome, NotFound):
            errors.append(outcome)
    errors.extend(e for e in released if e is not None and not isinstance(e, NotFound | Invalid))
    if errors:
        raise errors[0]
    return claimed


async def _can_adopt(client: Client, owner: BaseModel, resource: ResourceInfo[Any]) -> bool:
    meta = meta_of(owner)
    try:
        fresh = await client.get(resource, meta.name or "", namespace=meta.namespace)
    except NotFound:
        return False
    fresh_meta = meta_of(fresh)
    return fresh_meta.uid == meta.uid and fresh_meta.deletion_timestamp is None


async def _patch(client: Client, resource: ResourceInfo[Any], obj: BaseModel, patch: Mapping[str, Any]) -> None:
    meta = meta_of(obj)
    await client.patch(resource, meta.name or "", patch, namespace=meta.namespace,
                       patch_type=PatchType.STRATEGIC_MERGE)


def owned_by(objs: Sequence[D], uid: str) -> list[D]:
    """Those of ``objs`` whose controller is ``uid``."""
    return [o for o in objs if (ref := controller_of(meta_of(o))) is not None and ref.uid == uid]
