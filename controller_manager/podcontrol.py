"""Making Pods for a controller: owner references, Pods from templates, and slow-start batches.

Kubernetes keeps these in ``pkg/controller/controller_utils.go``
(``RealPodControl``, ``GetPodFromTemplate``, ``slowStartBatch``); every
workload controller here (ReplicaSet and ReplicationController, StatefulSet,
DaemonSet, Job) builds its Pods with them, so a Pod made by any of them looks
the same: ``generateName`` ``<owner>-`` (unless the controller names it), the
template's labels, annotations and finalizers, its spec, and one controller
reference with ``blockOwnerDeletion``.

Pure functions but for :func:`slow_start_batch`, which awaits the calls it is
given; no state.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, Final

import httpx
from pydantic import BaseModel

from machinery.api.kinds import RESOURCES, ResourceInfo, for_kind
from machinery.api.names import is_dns1123_subdomain
from machinery.client.errors import ApiError
from machinery.client.objects import meta_of, to_wire

SLOW_START_INITIAL_BATCH_SIZE: Final = 1
#: The Status cause the APIServer gives for a create in a namespace that is being deleted.
NAMESPACE_TERMINATING_CAUSE: Final = "NamespaceTerminating"

_BY_MODEL: Final[dict[type[BaseModel], ResourceInfo[Any]]] = {}


def resource_of(obj: BaseModel) -> ResourceInfo[Any]:
    """The built-in resource whose model ``obj`` is (the preferred version when a kind has several)."""
    found = _BY_MODEL.get(type(obj))
    if found is not None:
        return found
    api_version = getattr(obj, "api_version", None)
    kind = getattr(obj, "kind", None)
    resource = for_kind(api_version, kind) if api_version and kind else None
    if resource is None:
        resource = next((r for r in RESOURCES if r.model_name == type(obj).__name__ and r.model is type(obj)), None)
    if resource is None:
        raise LookupError(f"no built-in resource has the model {type(obj).__name__}")
    _BY_MODEL[type(obj)] = resource
    return resource


def owner_reference(owner: BaseModel, resource: ResourceInfo[Any] | None = None) -> dict[str, Any]:
    """``metav1.NewControllerRef``: a controller reference to ``owner`` that blocks its deletion."""
    resource = resource or resource_of(owner)
    meta = meta_of(owner)
    return {"apiVersion": resource.api_version, "kind": resource.kind, "name": meta.name, "uid": meta.uid,
            "controller": True, "blockOwnerDeletion": True}


def pod_prefix(controller_name: str) -> str:
    """``getPodsPrefix``: ``<name>-``, or the bare name when the dash would make an invalid name."""
    prefix = f"{controller_name}-"
    # A generateName prefix may end in a dash; validate it as Kubernetes does, with the dash masked.
    if is_dns1123_subdomain(prefix[:-1] + "a"):
        return controller_name
    return prefix


def pod_from_template(template: BaseModel | Mapping[str, Any] | None, owner: BaseModel,
                      resource: ResourceInfo[Any] | None = None, *, name: str | None = None,
                      ) -> dict[str, Any]:
    """``GetPodFromTemplate``: the Pod to create, in wire form, controlled by ``owner``.

    ``name`` names the Pod (StatefulSets); without it the APIServer generates
    one from ``<owner>-``.
    """
    meta = meta_of(owner)
    wire = to_wire(template) if template is not None else {}
    template_meta: Mapping[str, Any] = wire.get("metadata") or {}
    pod_meta: dict[str, Any] = {"namespace": meta.namespace,
                                "ownerReferences": [owner_reference(owner, resource)]}
    if name is not None:
        pod_meta["name"] = name
    else:
        pod_meta["generateName"] = pod_prefix(meta.name or "")
    for field in ("labels", "annotations", "finalizers"):
        value = template_meta.get(field)
        if value:
            pod_meta[field] = dict(value) if isinstance(value, Mapping) else list(value)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": wire.get("spec") or {}}


Outcome = ApiError | httpx.TransportError | None


async def outcomes(calls: Iterable[Awaitable[None]]) -> list[Outcome]:
    """Await the calls concurrently; each one's API or transport error, or None. Bugs propagate."""
    results: list[Outcome] = []
    for result in await asyncio.gather(*calls, return_exceptions=True):
        if isinstance(result, ApiError | httpx.TransportError) or result is None:
            results.append(result)
        else:
            raise result
    return results


async def slow_start_batch(count: int, initial_batch_size: int, fn: Callable[[], Awaitable[None]],
                           may_continue: Callable[[], bool] = lambda: True,
                           ) -> tuple[int, ApiError | httpx.TransportError | None]:
    """Call ``fn`` ``count`` times in batches of 1, 2, 4..., stopping after the first batch with a failure.

    Returns how many calls succeeded and the first error. ``may_continue`` is
    asked before each batch (a controller that stopped leading sends no more).
    """
    remaining, successes = count, 0
    batch = min(remaining, initial_batch_size)
    while batch > 0 and may_continue():
        errors = [e for e in await outcomes(fn() for _ in range(batch)) if e is not None]
        successes += batch - len(errors)
        if errors:
            return successes, errors[0]
        remaining -= batch
        batch = min(2 * batch, remaining)
    return successes, None
