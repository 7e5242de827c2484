"""apiextensions.k8s.io/v1 CustomResourceDefinition: a kind defined at run time.

The registration of the CRD kind itself (Kubernetes'
``registry/customresourcedefinition``): defaulting (listKind, singular,
conversion strategy), the validation of :mod:`apiserver.apiextensions.crdvalidation`
(one 422 listing every cause), ``status.storedVersions`` kept by the server,
generation bumped by spec changes, and deletion as Kubernetes does it: the
first DELETE adds the ``customresourcecleanup.apiextensions.k8s.io``
finalizer and the ``Terminating`` condition, so the CRD stays (answering
``kubectl get``) until the APIServer's cleanup (see
:mod:`apiserver.apiextensions.controller`) has removed every custom object.
What the CRD serves is built by :mod:`apiserver.apiextensions.customresource`.
"""

from __future__ import annotations

from typing import Any, Final

from apiserver.apiextensions import crdvalidation
from apiserver.registry.generic import StatusREST
from apiserver.registry.resource import Resource
from apiserver.registry.strategy import Obj, StatusStrategy, Strategy, bump_generation_if_spec_changed
from apiserver.validation.field import FieldError
from apiserver.validation.meta import validate_object_meta, validate_object_meta_update
from machinery.api import kinds
from machinery.api.meta import now_time


def set_condition(crd: Obj, ctype: str, status: str, reason: str, message: str) -> bool:
    """Set a status condition (its lastTransitionTime changes with its status); True when anything changed."""
    conditions: list[dict[str, Any]] = crd.setdefault("status", {}).setdefault("conditions", [])
    for cond in conditions:
        if cond.get("type") == ctype:
            if (cond.get("status"), cond.get("reason"), cond.get("message")) == (status, reason, message):
                return False
            if cond.get("status") != status:
                cond["lastTransitionTime"] = now_time()
            cond.update(status=status, reason=reason, message=message)
            return True
    conditions.append({"type": ctype, "status": status, "lastTransitionTime": now_time(), "reason": reason,
                       "message": message})
    return True


def _storage_name(crd: Obj) -> str | None:
    for v in (crd.get("spec") or {}).get("versions") or []:
        if isinstance(v, dict) and v.get("storage"):
            return str(v.get("name"))
    return None


class CustomResourceDefinitionStrategy(Strategy):
    """The create, update and delete rules of CustomResourceDefinitions."""

    has_generation = True

    def default(self, obj: Obj) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        names = spec.get("names")
        if isinstance(names, dict) and isinstance(names.get("kind"), str):
            names.setdefault("singular", names["kind"].lower())
            names.setdefault("listKind", names["kind"] + "List")
        conversion = spec.setdefault("conversion", {})
        if isinstance(conversion, dict):
            conversion.setdefault("strategy", "None")
            webhook = conversion.get("webhook")
            if isinstance(webhook, dict):
                service = (webhook.get("clientConfig") or {}).get("service")
                if isinstance(service, dict):
                    service.setdefault("port", 443)

    def prepare_for_create(self, obj: Obj) -> None:
        storage = _storage_name(obj)
        obj["status"] = {"storedVersions": [storage] if storage else []}

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        status = dict(old.get("status") or {})
        stored = list(status.get("storedVersions") or [])
        storage = _storage_name(new)
        if storage and storage not in stored:
            stored.append(storage)
        status["storedVersions"] = stored
        new["status"] = status
        bump_generation_if_spec_changed(new, old)

    def validate(self, obj: Obj) -> list[FieldError]:
        return validate_object_meta(obj.get("metadata") or {}, namespaced=False) + crdvalidation.validate_crd(obj)

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        return (validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {}) +
                crdvalidation.validate_crd_update(new, old))

    def blocks_deletion(self, obj: Obj) -> bool:
        # The first delete only marks the CRD: its cleanup finalizer is added by mark_deleting.
        return not (obj.get("metadata") or {}).get("deletionTimestamp")

    def mark_deleting(self, obj: Obj) -> None:
        finalizers = obj["metadata"].setdefault("finalizers", [])
        if crdvalidation.CLEANUP_FINALIZER not in finalizers:
            finalizers.append(crdvalidation.CLEANUP_FINALIZER)
        set_condition(obj, "Terminating", "True", "InstanceDeletionPending",
                      "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon")


class CustomResourceDefinitionStatusStrategy(StatusStrategy):
    """``/status``: conditions, accepted names and stored versions (which must name spec versions)."""

    def validate_update(self, new: Obj, old: Obj) -> list[FieldError]:
        errs = validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
        names = [v.get("name") for v in (new.get("spec") or {}).get("versions") or [] if isinstance(v, dict)]
        stored = (new.get("status") or {}).get("storedVersions") or []
        for i, version in enumerate(stored):
            if version not in names:
                errs.append(FieldError.invalid(f"status.storedVersions[{i}]", version,
                                               "must appear in spec.versions"))
        if not stored:
            errs.append(FieldError.invalid("status.storedVersions", stored, "must have at least one stored version"))
        accepted = (new.get("status") or {}).get("acceptedNames")
        if isinstance(accepted, dict) and accepted.get("plural"):
            errs.extend(crdvalidation.validate_names(accepted, "status.acceptedNames"))
        return errs


_STRATEGY: Final = CustomResourceDefinitionStrategy()

RESOURCE: Final = Resource(
    info=kinds.CUSTOM_RESOURCE_DEFINITIONS,
    strategy=_STRATEGY,
    subresources={"status": StatusREST(CustomResourceDefinitionStatusStrategy(_STRATEGY))},
)
