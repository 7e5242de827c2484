"""The node.k8s.io/v1 rules: validation of RuntimeClasses.

As ``pkg/apis/node/validation`` of Kubernetes 1.32: the handler is a DNS
label and never changes; the overhead is a resource list; the scheduling
node selector is a label set.

Pure functions over plain dicts; no state.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from apiserver.validation.field import FieldError, Path
from apiserver.validation.meta import validate_labels, validate_object_meta, validate_object_meta_update
from apiserver.validation.values import obj
from machinery.api import names
from machinery.api.quantity import parse_quantity

Obj = Mapping[str, Any]

_HANDLER: Final = Path("handler")


def validate_runtime_class(runtime_class: Obj) -> list[FieldError]:
    errs = validate_object_meta(obj(runtime_class.get("metadata")), namespaced=False)
    handler = str(runtime_class.get("handler") or "")
    errs += [FieldError.invalid(_HANDLER, handler, msg) for msg in names.is_dns1123_label(handler)]
    for resource, quantity in obj(obj(runtime_class.get("overhead")).get("podFixed")).items():
        try:
            negative = parse_quantity(str(quantity)) < 0
        except (ValueError, TypeError):
            negative = False
        if negative:
            errs.append(FieldError.invalid(Path("overhead", "podFixed").key(resource), str(quantity),
                                           "must be greater than or equal to 0"))
    scheduling = runtime_class.get("scheduling")
    if scheduling is not None:
        errs += validate_labels(obj(scheduling).get("nodeSelector"), Path("scheduling", "nodeSelector"))
    return errs


def validate_runtime_class_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_object_meta_update(obj(new.get("metadata")), obj(old.get("metadata")))
    if new.get("handler") != old.get("handler"):
        errs.append(FieldError.invalid(_HANDLER, new.get("handler"), "field is immutable"))
    return errs
