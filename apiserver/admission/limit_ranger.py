"""LimitRanger: a namespace's LimitRanges default and bound the resources of its Pods and claims.

As Kubernetes' ``plugin/pkg/admission/limitranger``:

- **Defaults** (Pod CREATE): each container without a limit gets the
  ``type: Container`` range's ``default``, without a request its
  ``defaultRequest`` (or, as the API then defaults it, the limit); the Pod is
  annotated ``kubernetes.io/limit-ranger: "LimitRanger plugin set: cpu, memory
  request for container app; cpu, memory limit for container app"``.
- **Bounds** (Pod CREATE and UPDATE, PVC CREATE): a container's requests at
  least ``min``, its limits at most ``max``, limit/request at most
  ``maxLimitRequestRatio``; the same over the whole Pod for ``type: Pod``, and
  ``storage`` for ``type: PersistentVolumeClaim``. Violations refuse the
  request with Kubernetes' 403 ("maximum cpu usage per Container is 1, but
  limit is 2").

LimitRanges are read from the watch cache.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from apiserver import errors
from apiserver.admission.chain import Attributes, Plugin
from machinery.api import kinds
from machinery.api.quantity import format_quantity, milli_value, pod_limits, pod_requests

ANNOTATION: Final = "kubernetes.io/limit-ranger"


class LimitRanger(Plugin):
    name = "LimitRanger"
    operations = frozenset({"CREATE", "UPDATE"})

    def handles(self, attrs: Attributes) -> bool:
        return (super().handles(attrs) and not attrs.subresource and attrs.object is not None
                and (attrs.resource is kinds.PODS
                     or (attrs.resource is kinds.PERSISTENT_VOLUME_CLAIMS and attrs.operation == "CREATE")))

    def _limits(self, attrs: Attributes) -> list[dict[str, Any]]:
        cache = attrs.context.store(kinds.LIMIT_RANGES).cache
        return [item for entry in cache.sorted_entries(attrs.namespace)
                for item in (entry.obj.get("spec") or {}).get("limits") or () if isinstance(item, dict)]

    async def admit(self, attrs: Attributes) -> None:
        if attrs.resource is not kinds.PODS or attrs.operation != "CREATE":
            return
        pod = attrs.object or {}
        limits = [item for item in self._limits(attrs) if item.get("type") == "Container"]
        if not limits:
            return
        notes: list[str] = []
        spec = pod.get("spec")
        containers = spec.get("containers") if isinstance(spec, dict) else None
        for container in containers if isinstance(containers, list) else ():
            if not isinstance(container, dict):
                continue
            resources = container.setdefault("resources", {})
            if not isinstance(resources, dict) or not all(
                    isinstance(resources.get(k, {}), dict) for k in ("limits", "requests")):
                # Malformed: validation refuses it with the field's path.
                continue
            set_requests: list[str] = []
            set_limits: list[str] = []
            for item in limits:
                for name, amount in (item.get("default") or {}).items():
                    if name not in (resources.get("limits") or {}):
                        resources.setdefault("limits", {})[name] = amount
                        set_limits.append(name)
                defaults = {**(item.get("default") or {}), **(item.get("defaultRequest") or {})}
                for name, amount in defaults.items():
                    if name not in (resources.get("requests") or {}):
                        limit = (resources.get("limits") or {}).get(name)
                        # A limit the user set, without a request, is the request (as the API defaults it).
                        chosen = limit if limit is not None and name not in set_limits else amount
                        resources.setdefault("requests", {})[name] = chosen
                        set_requests.append(name)
            cname = container.get("name", "")
            if set_requests:
                notes.append(f"{', '.join(sorted(set(set_requests)))} request for container {cname}")
            if set_limits:
                notes.append(f"{', '.join(sorted(set(set_limits)))} limit for container {cname}")
        if notes:
            annotations = pod.setdefault("metadata", {}).setdefault("annotations", {})
            annotations[ANNOTATION] = "LimitRanger plugin set: " + "; ".join(notes)

    async def validate(self, attrs: Attributes) -> None:
        obj = attrs.object or {}
        try:
            problems = self._problems(attrs, obj)
        except (ValueError, TypeError, AttributeError):
            # A quantity or a field no validation has checked yet (a malformed LimitRange or object):
            # nothing to bound it by.
            return
        if problems:
            meta = obj.get("metadata") or {}
            name = meta.get("name") or meta.get("generateName") or ""
            why = problems[0] if len(problems) == 1 else f"[{', '.join(problems)}]"
            raise errors.forbidden(attrs.resource, name, why)

    def _problems(self, attrs: Attributes, obj: dict[str, Any]) -> list[str]:
        problems: list[str] = []
        for item in self._limits(attrs):
            kind = item.get("type")
            if attrs.resource is kinds.PODS and kind == "Container":
                for container in (obj.get("spec") or {}).get("containers") or ():
                    resources = (container.get("resources") or {}) if isinstance(container, dict) else {}
                    problems += _check(item, "Container", resources.get("requests") or {},
                                       resources.get("limits") or {})
            elif attrs.resource is kinds.PODS and kind == "Pod":
                requests = {k: format_quantity(v, k) for k, v in pod_requests(obj).items()}
                limits = {k: format_quantity(v, k) for k, v in pod_limits(obj).items()}
                problems += _check(item, "Pod", requests, limits)
            elif attrs.resource is kinds.PERSISTENT_VOLUME_CLAIMS and kind == "PersistentVolumeClaim":
                resources = (obj.get("spec") or {}).get("resources") or {}
                problems += _check(item, "PersistentVolumeClaim", resources.get("requests") or {},
                                   resources.get("limits") or {})
        return problems


def _check(item: Mapping[str, Any], what: str, requests: Mapping[str, Any], limits: Mapping[str, Any]) -> list[str]:
    problems: list[str] = []
    for name, bound in sorted((item.get("min") or {}).items()):
        request = requests.get(name)
        if request is None:
            problems.append(f"minimum {name} usage per {what} is {bound}.  No request is specified")
        elif milli_value(request) < milli_value(bound):
            problems.append(f"minimum {name} usage per {what} is {bound}, but request is {request}")
    for name, bound in sorted((item.get("max") or {}).items()):
        limit = limits.get(name)
        if limit is None:
            problems.append(f"maximum {name} usage per {what} is {bound}.  No limit is specified")
        elif milli_value(limit) > milli_value(bound):
            problems.append(f"maximum {name} usage per {what} is {bound}, but limit is {limit}")
    for name, bound in sorted((item.get("maxLimitRequestRatio") or {}).items()):
        request, limit = requests.get(name), limits.get(name)
        if request is None or limit is None or milli_value(request) == 0:
            continue
        ratio = milli_value(limit) / milli_value(request)
        if ratio > milli_value(bound) / 1000:
            problems.append(f"{name} max limit to request ratio per {what} is {bound}, but provided ratio is "
                            f"{ratio:f}")
    return problems
