"""Validation of ``metadata`` and of the building blocks every kind shares (labels, selectors, names).

This is apimachinery's ``pkg/api/validation`` (ObjectMeta) and
``pkg/apis/meta/v1/validation`` (labels, label selectors, managed fields),
on wire-form dicts. The kind validators in ``core.py`` and ``coordination.py``
are built from these pieces, so a label key is judged, and worded, the same
way wherever it appears.

Kubernetes reports some paths without the list index (``metadata.finalizers``,
``metadata.ownerReferences.uid``); those quirks are kept on purpose, since
clients see and match them.

Pure functions over plain dicts; no state.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from apiserver.validation.field import FieldError, Path
from machinery.api import meta as metautil
from machinery.api import names
from machinery.api.names import go_quote

#: A per-resource name rule: ``(name, prefix) -> problems``; ``prefix`` is true for ``generateName``.
NameRule = Callable[[str, bool], list[str]]

METADATA: Final = Path("metadata")
_TOTAL_ANNOTATION_SIZE_LIMIT: Final = 256 * 1024
_FIELD_IMMUTABLE: Final = "field is immutable"
IS_NEGATIVE: Final = "must be greater than or equal to 0"

_FIELD_MANAGER_MAX_LENGTH: Final = 128
_SUBRESOURCE_MAX_LENGTH: Final = 256
_ORPHAN: Final = "orphan"
_FOREGROUND: Final = "foregroundDeletion"


# --- name rules --------------------------------------------------------------------------------

def _mask_trailing_dash(name: str) -> str:
    # A generateName may end in "-" because random characters follow it.
    # Kubernetes masks the dash this way (dropping the character before it
    # too), and the messages it then produces depend on it.
    if len(name) > 1 and name.endswith("-"):
        return name[:-2] + "a"
    return name


def name_is_dns1123_subdomain(name: str, prefix: bool) -> list[str]:
    """The name rule of Pods, ReplicationControllers, Nodes, Leases."""
    return names.is_dns1123_subdomain(_mask_trailing_dash(name) if prefix else name)


def name_is_dns1123_label(name: str, prefix: bool) -> list[str]:
    """The name rule of Namespaces."""
    return names.is_dns1123_label(_mask_trailing_dash(name) if prefix else name)


def name_is_dns1035_label(name: str, prefix: bool) -> list[str]:
    """The name rule of Services (they become DNS names, which must start with a letter)."""
    return names.is_dns1035_label(_mask_trailing_dash(name) if prefix else name)


def name_is_path_segment(name: str, prefix: bool) -> list[str]:
    """The rule every name must meet to be a URL path segment (all core/v1 Events get only this one)."""
    if not prefix and name in (".", ".."):
        return [f"may not be '{name}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in name]


# --- small shared validators -----------------------------------------------------------------

def validate_qualified_name(value: str, path: Path) -> list[FieldError]:
    """A label key, an annotation key, a taint key, a condition type..."""
    return [FieldError.invalid(path, value, msg) for msg in names.is_qualified_name(value)]


def validate_dns1123_label(value: str, path: Path) -> list[FieldError]:
    return [FieldError.invalid(path, value, msg) for msg in names.is_dns1123_label(value)]


def validate_dns1123_subdomain(value: str, path: Path) -> list[FieldError]:
    return [FieldError.invalid(path, value, msg) for msg in names.is_dns1123_subdomain(value)]


def validate_labels(labels: Mapping[str, Any] | None, path: Path) -> list[FieldError]:
    """Label keys and values; every error is reported on the map, not on the key."""
    errs: list[FieldError] = []
    for key, value in (labels or {}).items():
        errs += validate_qualified_name(key, path)
        errs += [FieldError.invalid(path, value, msg) for msg in names.is_valid_label_value(str(value))]
    return errs


def validate_annotations(annotations: Mapping[str, Any] | None, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    size = 0
    for key, value in (annotations or {}).items():
        errs += [FieldError.invalid(path, key, msg) for msg in names.is_qualified_name(key.lower())]
        size += len(key.encode()) + len(str(value).encode())
    if size > _TOTAL_ANNOTATION_SIZE_LIMIT:
        errs.append(FieldError.too_long(path, _TOTAL_ANNOTATION_SIZE_LIMIT))
    return errs


def validate_label_selector(selector: Mapping[str, Any] | None, path: Path, *,
                            allow_invalid_label_value: bool = False) -> list[FieldError]:
    """A ``metav1.LabelSelector``: matchLabels and matchExpressions."""
    if selector is None:
        return []
    errs = validate_labels(selector.get("matchLabels"), path.child("matchLabels"))
    for i, expr in enumerate(selector.get("matchExpressions") or ()):
        errs += _validate_selector_requirement(expr, path.child("matchExpressions").index(i),
                                               allow_invalid_label_value=allow_invalid_label_value)
    return errs


def _validate_selector_requirement(req: Mapping[str, Any], path: Path, *,
                                   allow_invalid_label_value: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    operator = req.get("operator") or ""
    values = req.get("values") or []
    if operator in ("In", "NotIn"):
        if not values:
            errs.append(FieldError.required(path.child("values"),
                                            "must be specified when `operator` is 'In' or 'NotIn'"))
    elif operator in ("Exists", "DoesNotExist"):
        if values:
            errs.append(FieldError.forbidden(
                path.child("values"), "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
    else:
        errs.append(FieldError.invalid(path.child("operator"), operator, "not a valid selector operator"))
    errs += validate_qualified_name(req.get("key") or "", path.child("key"))
    if not allow_invalid_label_value:
        for i, value in enumerate(values):
            errs += [FieldError.invalid(path.child("values").index(i), value, msg)
                     for msg in names.is_valid_label_value(value)]
    return errs


def validate_nonnegative(value: int | None, path: Path) -> list[FieldError]:
    if value is not None and value < 0:
        return [FieldError.invalid(path, value, IS_NEGATIVE)]
    return []


def validate_immutable(new: object, old: object, path: Path) -> list[FieldError]:
    if new != old:
        return [FieldError.invalid(path, new, _FIELD_IMMUTABLE)]
    return []


# --- ObjectMeta ------------------------------------------------------------------------------

def validate_object_meta(meta: Mapping[str, Any] | None, *, namespaced: bool, path: Path = METADATA,
                         name_rule: NameRule = name_is_dns1123_subdomain) -> list[FieldError]:
    """``ValidateObjectMeta`` for a create: names, namespace, labels, annotations, owners, finalizers."""
    meta = meta or {}
    errs: list[FieldError] = []
    generate_name = meta.get("generateName") or ""
    if generate_name:
        errs += [FieldError.invalid(path.child("generateName"), generate_name, msg)
                 for msg in name_rule(generate_name, True)]
    name = meta.get("name") or ""
    if not name:
        errs.append(FieldError.required(path.child("name"), "name or generateName is required"))
    else:
        errs += [FieldError.invalid(path.child("name"), name, msg) for msg in name_rule(name, False)]
    namespace = meta.get("namespace") or ""
    if namespaced:
        if not namespace:
            errs.append(FieldError.required(path.child("namespace")))
        else:
            errs += [FieldError.invalid(path.child("namespace"), namespace, msg)
                     for msg in name_is_dns1123_label(namespace, False)]
    elif namespace:
        errs.append(FieldError.forbidden(path.child("namespace"), "not allowed on this type"))
    errs += validate_nonnegative(meta.get("generation"), path.child("generation"))
    errs += _validate_common(meta, path)
    errs += _validate_finalizers(meta.get("finalizers") or [], path.child("finalizers"))
    return errs


def validate_object_meta_update(new: Mapping[str, Any] | None, old: Mapping[str, Any] | None,
                                path: Path = METADATA) -> list[FieldError]:
    """``ValidateObjectMetaUpdate``: what no update may change, and what it may not add while deleting.

    Kubernetes also requires ``resourceVersion`` here; kubesim's store
    enforces that precondition itself, before and apart from validation.
    """
    new, old = new or {}, old or {}
    errs: list[FieldError] = []
    if old.get("deletionTimestamp"):
        added = sorted(set(new.get("finalizers") or ()) - set(old.get("finalizers") or ()))
        if added:
            errs.append(FieldError.forbidden(
                path.child("finalizers"),
                "no new finalizers can be added if the object is being deleted, found new finalizers "
                + _go_string_slice(added)))
    if int(new.get("generation") or 0) < int(old.get("generation") or 0):
        errs.append(FieldError.invalid(path.child("generation"), new.get("generation") or 0,
                                       "must not be decremented"))
    for key in ("name", "namespace", "uid"):
        errs += validate_immutable(new.get(key) or "", old.get(key) or "", path.child(key))
    for key in ("creationTimestamp", "deletionTimestamp"):
        if not _same_time(new.get(key), old.get(key)):
            errs.append(FieldError.invalid(path.child(key), new.get(key), _FIELD_IMMUTABLE))
    errs += validate_immutable(new.get("deletionGracePeriodSeconds"), old.get("deletionGracePeriodSeconds"),
                               path.child("deletionGracePeriodSeconds"))
    errs += _validate_common(new, path)
    return errs


def _validate_common(meta: Mapping[str, Any], path: Path) -> list[FieldError]:
    """What creates and updates both check: labels, annotations, owners, managed fields."""
    errs = validate_labels(meta.get("labels"), path.child("labels"))
    errs += validate_annotations(meta.get("annotations"), path.child("annotations"))
    errs += _validate_owner_references(meta.get("ownerReferences") or [], path.child("ownerReferences"))
    errs += _validate_managed_fields(meta.get("managedFields") or [], path.child("managedFields"))
    return errs


def _validate_owner_references(refs: Sequence[Mapping[str, Any]], path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    first_controller = ""
    for ref in refs:
        api_version = ref.get("apiVersion") or ""
        kind = ref.get("kind") or ""
        group, version = _split_api_version(api_version)
        if not version:
            errs.append(FieldError.invalid(path.child("apiVersion"), api_version,
                                           "version must not be empty"))
        if not kind:
            errs.append(FieldError.invalid(path.child("kind"), kind, "kind must not be empty"))
        for key in ("name", "uid"):
            if not ref.get(key):
                errs.append(FieldError.invalid(path.child(key), ref.get(key) or "",
                                               f"{key} must not be empty"))
        if (group, version, kind) == ("", "v1", "Event"):
            errs.append(FieldError.invalid(path, dict(ref),
                                           "/v1, Kind=Event is disallowed from being an owner"))
        if ref.get("controller"):
            current = f"{kind}/{ref.get('name') or ''}"
            if first_controller:
                errs.append(FieldError.invalid(
                    path, [dict(r) for r in refs],
                    'Only one reference can have Controller set to true. Found "true" in references for '
                    f"{first_controller} and {current}"))
            else:
                first_controller = current
    return errs


def _split_api_version(api_version: str) -> tuple[str, str]:
    """``ParseGroupVersion``: ``v1`` -> ("", "v1"), ``apps/v1`` -> ("apps", "v1"); else no version."""
    parts = api_version.split("/")
    if len(parts) == 1:
        return "", parts[0]
    if len(parts) == 2:
        return parts[0], parts[1]
    return "", ""


def _validate_finalizers(finalizers: Sequence[str], path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    for finalizer in finalizers:
        errs += validate_qualified_name(finalizer, path)
    if _ORPHAN in finalizers and _FOREGROUND in finalizers:
        errs.append(FieldError.invalid(path, list(finalizers),
                                       f"finalizer {_ORPHAN} and {_FOREGROUND} cannot be both set"))
    return errs


def _validate_managed_fields(entries: Sequence[Mapping[str, Any]], path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, entry in enumerate(entries):
        entry_path = path.index(i)
        operation = entry.get("operation") or ""
        if operation not in ("Apply", "Update"):
            errs.append(FieldError.invalid(entry_path.child("operation"), operation,
                                           "must be `Apply` or `Update`"))
        fields_type = entry.get("fieldsType") or ""
        if fields_type and fields_type != "FieldsV1":
            errs.append(FieldError.invalid(entry_path.child("fieldsType"), fields_type, "must be `FieldsV1`"))
        if len((entry.get("manager") or "").encode()) > _FIELD_MANAGER_MAX_LENGTH:
            errs.append(FieldError.too_long(entry_path.child("manager"), _FIELD_MANAGER_MAX_LENGTH))
        if len((entry.get("subresource") or "").encode()) > _SUBRESOURCE_MAX_LENGTH:
            errs.append(FieldError.too_long(entry_path.child("subresource"), _SUBRESOURCE_MAX_LENGTH))
    return errs


def _same_time(new: str | None, old: str | None) -> bool:
    """Kubernetes compares timestamps as instants, not as the strings a client happened to send."""
    try:
        return metautil.parse_time(new) == metautil.parse_time(old)
    except ValueError:
        return new == old


def _go_string_slice(items: Sequence[str]) -> str:
    """Go's ``%#v`` of a ``[]string``, which this one message still uses."""
    return "[]string{" + ", ".join(go_quote(s) for s in items) + "}"
