"""Quota usage: what one object costs against a ResourceQuota (``pkg/quota/v1/evaluator/core``).

Shared by the ResourceQuota admission plugin (the cost of the object being
created) and the ResourceQuota controller (the sum over the live objects), so
the two always agree:

- **Pods** that are not finished (and not past their deletion grace period)
  cost ``pods`` / ``count/pods`` 1, and their effective requests and limits
  (``requests.cpu`` and its legacy name ``cpu``, ``requests.memory`` /
  ``memory``, ``limits.cpu``, ``limits.memory``, ``requests.ephemeral-storage``,
  extended resources as ``requests.<name>``).
- **PersistentVolumeClaims** cost ``persistentvolumeclaims`` 1,
  ``requests.storage``, and the same per storage class
  (``<class>.storageclass.storage.k8s.io/requests.storage``).
- **Services** cost ``services`` 1, ``services.nodeports`` per node port,
  ``services.loadbalancers`` 1 for type LoadBalancer.
- Every object costs ``count/<resource>.<group>`` (``count/<resource>`` in the
  core group) 1, and the core kinds with a legacy name (configmaps, secrets,
  replicationcontrollers, resourcequotas) that name 1.
- **Scopes** (``Terminating``, ``NotTerminating``, ``BestEffort``,
  ``NotBestEffort``) restrict a quota to the Pods they match; a scoped quota
  tracks only Pod resources.

Amounts are milli-units (as :mod:`machinery.api.quantity` keeps them). Pure.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from typing import Any, Final

from machinery.api.meta import parse_time, utcnow
from machinery.api.quantity import format_quantity, milli_value, pod_limits, pod_requests

Obj = Mapping[str, Any]
Usage = dict[str, int]

_LEGACY_COUNTS: Final = {("", "services"): "services", ("", "configmaps"): "configmaps",
                         ("", "secrets"): "secrets", ("", "persistentvolumeclaims"): "persistentvolumeclaims",
                         ("", "replicationcontrollers"): "replicationcontrollers",
                         ("", "resourcequotas"): "resourcequotas", ("", "pods"): "pods"}
_POD_RESOURCES: Final = ("cpu", "memory", "ephemeral-storage")
#: What a quota with scopes may track (``podComputeAndCountResources``).
_SCOPED_RESOURCES: Final = frozenset({"pods", "count/pods", "cpu", "memory", "ephemeral-storage",
                                      "requests.cpu", "requests.memory", "requests.ephemeral-storage",
                                      "limits.cpu", "limits.memory", "limits.ephemeral-storage"})
STORAGE_CLASS_SUFFIX: Final = ".storageclass.storage.k8s.io/"


def count_name(group: str, plural: str) -> str:
    return f"count/{plural}.{group}" if group else f"count/{plural}"


def usage(group: str, plural: str, obj: Obj, now: dt.datetime | None = None) -> Usage:
    """What ``obj`` (an object of ``group``/``plural``) costs, by quota resource name."""
    result: Usage = {count_name(group, plural): 1000}
    legacy = _LEGACY_COUNTS.get((group, plural))
    if (group, plural) == ("", "pods"):
        if not pod_counts(obj, now or utcnow()):
            return {}
        result["pods"] = 1000
        requests = pod_requests(obj)
        limits = pod_limits(obj)
        for name in _POD_RESOURCES:
            if name in requests:
                result[f"requests.{name}"] = requests[name]
                result[name] = requests[name]
            if name in limits:
                result[f"limits.{name}"] = limits[name]
        for name, amount in requests.items():
            if name not in _POD_RESOURCES and "/" in name or name.startswith("hugepages-"):
                result[f"requests.{name}"] = amount
        return result
    if legacy is not None:
        result[legacy] = 1000
    spec: Mapping[str, Any] = obj.get("spec") or {}
    if (group, plural) == ("", "persistentvolumeclaims"):
        storage = milli_value((((spec.get("resources") or {}).get("requests")) or {}).get("storage", "0"))
        result["requests.storage"] = storage
        cls = spec.get("storageClassName")
        if cls:
            result[f"{cls}{STORAGE_CLASS_SUFFIX}requests.storage"] = storage
            result[f"{cls}{STORAGE_CLASS_SUFFIX}persistentvolumeclaims"] = 1000
    if (group, plural) == ("", "services"):
        ports = [p for p in spec.get("ports") or () if isinstance(p, Mapping)]
        if spec.get("type") in ("NodePort", "LoadBalancer"):
            result["services.nodeports"] = 1000 * len(ports)
        if spec.get("type") == "LoadBalancer":
            result["services.loadbalancers"] = 1000
    return result


def pod_counts(pod: Obj, now: dt.datetime) -> bool:
    """``QuotaV1Pod``: a Pod counts until it finishes or its deletion grace period is over."""
    phase = (pod.get("status") or {}).get("phase")
    if phase in ("Succeeded", "Failed"):
        return False
    meta: Mapping[str, Any] = pod.get("metadata") or {}
    deleted = parse_time(meta.get("deletionTimestamp"))
    grace = meta.get("deletionGracePeriodSeconds")
    return not (deleted is not None and grace is not None and now > deleted + dt.timedelta(seconds=int(grace)))


def matches_scopes(quota: Obj, group: str, plural: str, obj: Obj) -> bool:
    """Whether a quota's scopes select this object (unscoped quotas select everything)."""
    scopes = list((quota.get("spec") or {}).get("scopes") or ())
    for expression in ((quota.get("spec") or {}).get("scopeSelector") or {}).get("matchExpressions") or ():
        scopes.append(expression.get("scopeName"))
    if not scopes:
        return True
    if (group, plural) != ("", "pods"):
        return False
    spec: Mapping[str, Any] = obj.get("spec") or {}
    best_effort = not pod_requests(obj) and not pod_limits(obj)
    for scope in scopes:
        if scope == "Terminating" and spec.get("activeDeadlineSeconds") is None:
            return False
        if scope == "NotTerminating" and spec.get("activeDeadlineSeconds") is not None:
            return False
        if scope == "BestEffort" and not best_effort:
            return False
        if scope == "NotBestEffort" and best_effort:
            return False
    return True


def tracked(quota: Obj) -> set[str]:
    """The resources a quota limits (those of a scoped quota that scopes can apply to)."""
    hard = set((quota.get("spec") or {}).get("hard") or {})
    scoped = bool((quota.get("spec") or {}).get("scopes") or (quota.get("spec") or {}).get("scopeSelector"))
    return {r for r in hard if r in _SCOPED_RESOURCES} if scoped else hard


def total(quota: Obj, objects: Iterable[tuple[str, str, Obj]], now: dt.datetime | None = None) -> Usage:
    """The quota's usage over these (group, plural, object) triples, for every resource it tracks."""
    names = tracked(quota)
    used: Usage = {name: 0 for name in names}
    for group, plural, obj in objects:
        if not matches_scopes(quota, group, plural, obj):
            continue
        for name, amount in usage(group, plural, obj, now).items():
            if name in used:
                used[name] += amount
    return used


def wire(used: Mapping[str, int]) -> dict[str, str]:
    """A usage as a ResourceList (``{"pods": "2", "requests.memory": "1Gi"}``)."""
    return {name: format_quantity(amount, _base(name)) for name, amount in sorted(used.items())}


def _base(name: str) -> str:
    """The resource whose printing a quota resource follows (``limits.memory`` prints as memory)."""
    tail = name.rsplit("/", 1)[-1]
    return tail.split(".", 1)[1] if tail.startswith(("requests.", "limits.")) else tail
