"""Priority: a Pod's ``priorityClassName`` becomes its ``spec.priority`` and ``preemptionPolicy``.

As Kubernetes' plugin (``plugin/pkg/admission/priority``):

- a Pod naming a PriorityClass gets that class's value and preemption policy;
  naming a class that does not exist is ``403 Forbidden`` (``no PriorityClass
  with name X was found``);
- a Pod naming none gets the class marked ``globalDefault`` (its name too), or
  priority 0 and ``PreemptLowerPriority`` when there is none;
- a Pod that writes an integer priority or a preemption policy different from
  what its class gives is refused;
- on update, the priority set at creation is kept;
- PriorityClasses themselves: only one may be ``globalDefault``.

Classes are read from the APIServer's watch cache of priorityclasses, and a
class the cache does not have from etcd (it may have been created a moment ago).
"""

from __future__ import annotations

from typing import Any, Final

from apiserver import errors
from apiserver.admission.chain import Attributes, Plugin
from machinery.api import kinds

_PREEMPT_LOWER: Final = "PreemptLowerPriority"


class Priority(Plugin):
    name = "Priority"
    operations = frozenset({"CREATE", "UPDATE"})

    def handles(self, attrs: Attributes) -> bool:
        return super().handles(attrs) and not attrs.subresource and attrs.resource in (
            kinds.PODS, kinds.PRIORITY_CLASSES)

    async def admit(self, attrs: Attributes) -> None:
        if attrs.resource is kinds.PODS and attrs.object is not None:
            await self._admit_pod(attrs)

    async def validate(self, attrs: Attributes) -> None:
        if attrs.resource is kinds.PRIORITY_CLASSES and attrs.object is not None:
            self._validate_class(attrs)

    @staticmethod
    def _classes(attrs: Attributes) -> list[dict[str, Any]]:
        cache = attrs.context.store(kinds.PRIORITY_CLASSES).cache
        return [e.obj for e in cache.sorted_entries()]

    @staticmethod
    async def _class(attrs: Attributes, name: str) -> dict[str, Any] | None:
        entry = await attrs.context.store(kinds.PRIORITY_CLASSES).lookup(None, name)
        return entry.obj if entry is not None else None

    async def _admit_pod(self, attrs: Attributes) -> None:
        pod = attrs.object
        assert pod is not None
        spec = pod.setdefault("spec", {})
        if attrs.operation == "UPDATE":
            old_spec = (attrs.old_object or {}).get("spec") or {}
            for key in ("priority", "preemptionPolicy"):
                if spec.get(key) is None and old_spec.get(key) is not None:
                    spec[key] = old_spec[key]
            return
        class_name = spec.get("priorityClassName") or ""
        if class_name:
            cls = await self._class(attrs, class_name)
            if cls is None:
                raise errors.forbidden(attrs.resource, attrs.name,
                                       f"no PriorityClass with name {class_name} was found")
        else:
            cls = next((c for c in self._classes(attrs) if c.get("globalDefault")), None)
            if cls is not None:
                spec["priorityClassName"] = cls["metadata"]["name"]
        priority = int(cls.get("value", 0)) if cls is not None else 0
        policy = (cls.get("preemptionPolicy") if cls is not None else None) or _PREEMPT_LOWER
        given = spec.get("priority")
        if given is not None and given != priority:
            raise errors.forbidden(attrs.resource, attrs.name,
                                   f"the integer value of priority ({given}) must not be provided in pod spec; "
                                   f"priority admission controller computed {priority} from the given "
                                   "PriorityClass name")
        spec["priority"] = priority
        given_policy = spec.get("preemptionPolicy")
        if given_policy is not None and given_policy != policy:
            raise errors.forbidden(attrs.resource, attrs.name,
                                   f"the string value of PreemptionPolicy ({given_policy}) must not be provided "
                                   f"in pod spec; priority admission controller computed {policy} from the given "
                                   "PriorityClass name")
        spec["preemptionPolicy"] = policy

    def _validate_class(self, attrs: Attributes) -> None:
        obj = attrs.object
        assert obj is not None
        if not obj.get("globalDefault"):
            return
        name = (obj.get("metadata") or {}).get("name")
        for other in self._classes(attrs):
            if other.get("globalDefault") and other["metadata"]["name"] != name:
                raise errors.forbidden(attrs.resource, attrs.name,
                                       f"PriorityClass {other['metadata']['name']} is already marked as default. "
                                       "Only one default can exist")
