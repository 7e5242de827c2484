"""The scheduling.k8s.io/v1 rules: defaulting and validation of PriorityClasses.

As ``pkg/apis/scheduling/v1/defaults.go`` and ``pkg/apis/scheduling/validation``
of Kubernetes 1.32: the ``system-`` prefix belongs to the two system classes
(with their exact values), a user class may not go above one billion, and
neither the value nor the preemption policy changes after creation. That only
one class is ``globalDefault`` is the Priority admission plugin's check.

Pure functions over plain dicts; no state.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from apiserver.validation.field import FieldError, Path
from apiserver.validation.meta import validate_object_meta, validate_object_meta_update
from apiserver.validation.values import obj

Obj = Mapping[str, Any]

SYSTEM_PRIORITY_CLASS_PREFIX: Final = "system-"
HIGHEST_USER_DEFINABLE_PRIORITY: Final = 1_000_000_000
SYSTEM_CRITICAL_PRIORITY: Final = 2 * HIGHEST_USER_DEFINABLE_PRIORITY
#: The system classes: name -> (value, globalDefault).
SYSTEM_PRIORITY_CLASSES: Final = {
    "system-node-critical": (SYSTEM_CRITICAL_PRIORITY + 1000, False),
    "system-cluster-critical": (SYSTEM_CRITICAL_PRIORITY, False),
}
_PREEMPTION_POLICIES: Final = ("PreemptLowerPriority", "Never")


def default_priority_class(pc: dict[str, Any]) -> None:
    if pc.get("preemptionPolicy") is None:
        pc["preemptionPolicy"] = "PreemptLowerPriority"


def _known_system_class(name: str, value: int, global_default: bool) -> str | None:
    """Why ``name`` may not be used as given (``IsKnownSystemPriorityClass``), or ``None``."""
    known = SYSTEM_PRIORITY_CLASSES.get(name)
    if known is None:
        return f"{name} is not a known system priority class"
    if known[0] != value:
        return f"value of {name} PriorityClass must be {known[0]}"
    if known[1] != global_default:
        return f"globalDefault of {name} PriorityClass must be {str(known[1]).lower()}"
    return None


def validate_priority_class(pc: Obj) -> list[FieldError]:
    meta = obj(pc.get("metadata"))
    errs = validate_object_meta(meta, namespaced=False)
    name = str(meta.get("name") or "")
    value = int(pc.get("value") or 0)
    if name.startswith(SYSTEM_PRIORITY_CLASS_PREFIX):
        problem = _known_system_class(name, value, bool(pc.get("globalDefault")))
        if problem is not None:
            errs.append(FieldError.forbidden(Path("metadata", "name"), "priority class names with 'system-' prefix "
                                             f"are reserved for system use only. error: {problem}"))
    elif value > HIGHEST_USER_DEFINABLE_PRIORITY:
        errs.append(FieldError.forbidden(Path("value"), "maximum allowed value of a user defined priority is "
                                                        f"{HIGHEST_USER_DEFINABLE_PRIORITY}"))
    policy = pc.get("preemptionPolicy")
    if policy is not None:
        if not policy:
            errs.append(FieldError.required(Path("preemptionPolicy")))
        elif policy not in _PREEMPTION_POLICIES:
            errs.append(FieldError.not_supported(Path("preemptionPolicy"), policy, _PREEMPTION_POLICIES))
    return errs


def validate_priority_class_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_object_meta_update(obj(new.get("metadata")), obj(old.get("metadata")))
    if int(new.get("value") or 0) != int(old.get("value") or 0):
        errs.append(FieldError.forbidden(Path("value"), "may not be changed in an update."))
    if new.get("preemptionPolicy") != old.get("preemptionPolicy"):
        errs.append(FieldError.invalid(Path("preemptionPolicy"), new.get("preemptionPolicy"), "field is immutable"))
    return errs
