"""Validation of ``rbac.authorization.k8s.io/v1`` Roles, ClusterRoles and their bindings.

Follows ``pkg/apis/rbac/validation`` of Kubernetes 1.32: names need only be
valid path segments; a rule has verbs and either resources (with API groups)
or, in ClusterRoles only, non-resource URLs, never both; an aggregation rule
has at least one valid selector; a binding's ``roleRef`` names a Role or
ClusterRole of this group (a ClusterRoleBinding only a ClusterRole) and
never changes; subjects are Users or Groups of this group, or ServiceAccounts
(with a namespace, in a ClusterRoleBinding). The v1 defaults (subjects'
and roleRefs' ``apiGroup``) are :func:`default_binding`'s.

Pure functions over plain dicts; no state.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from apiserver.validation.field import FieldError, Path
from apiserver.validation.meta import (
    name_is_dns1123_subdomain,
    name_is_path_segment,
    validate_label_selector,
    validate_object_meta,
    validate_object_meta_update,
)

Obj = Mapping[str, Any]
GROUP: Final = "rbac.authorization.k8s.io"
_SUBJECT_KINDS: Final = ("ServiceAccount", "User", "Group")


def default_binding(binding: dict[str, Any]) -> None:
    """``SetDefaults_RoleBinding`` / ``_Subject``: the RBAC group where a roleRef or User/Group subject omits it."""
    ref = binding.get("roleRef")
    if isinstance(ref, dict) and not ref.get("apiGroup"):
        ref["apiGroup"] = GROUP
    for subject in binding.get("subjects") or ():
        if isinstance(subject, dict) and not subject.get("apiGroup") and subject.get("kind") in ("User", "Group"):
            subject["apiGroup"] = GROUP


def _validate_rule(rule: Any, path: Path, *, namespaced: bool) -> list[FieldError]:
    if not isinstance(rule, Mapping):
        return [FieldError.invalid(path, rule, "must be an object")]
    errs: list[FieldError] = []
    if not rule.get("verbs"):
        errs.append(FieldError.required(path.child("verbs"), "verbs must contain at least one value"))
    urls = rule.get("nonResourceURLs") or []
    if urls:
        if namespaced:
            errs.append(FieldError.invalid(path.child("nonResourceURLs"), urls,
                                           "namespaced rules cannot apply to non-resource URLs"))
        if rule.get("apiGroups") or rule.get("resources") or rule.get("resourceNames"):
            errs.append(FieldError.invalid(path.child("nonResourceURLs"), urls,
                                           "rules cannot apply to both regular resources and non-resource URLs"))
        return errs
    if not rule.get("apiGroups"):
        errs.append(FieldError.required(path.child("apiGroups"), "resource rules must supply at least one api group"))
    if not rule.get("resources"):
        errs.append(FieldError.required(path.child("resources"), "resource rules must supply at least one resource"))
    return errs


def _validate_rules(rules: Any, *, namespaced: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, rule in enumerate(rules or ()):
        errs += _validate_rule(rule, Path("rules").index(i), namespaced=namespaced)
    return errs


def validate_role(role: Obj) -> list[FieldError]:
    errs = validate_object_meta(role.get("metadata"), namespaced=True, name_rule=name_is_path_segment)
    return errs + _validate_rules(role.get("rules"), namespaced=True)


def validate_role_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_object_meta_update(new.get("metadata"), old.get("metadata"))
    return errs + validate_role(new)


def validate_cluster_role(role: Obj) -> list[FieldError]:
    errs = validate_object_meta(role.get("metadata"), namespaced=False, name_rule=name_is_path_segment)
    errs += _validate_rules(role.get("rules"), namespaced=False)
    aggregation = role.get("aggregationRule")
    if aggregation is not None:
        path = Path("aggregationRule", "clusterRoleSelectors")
        selectors = (aggregation or {}).get("clusterRoleSelectors") or []
        if not selectors:
            errs.append(FieldError.required(path, "at least one clusterRoleSelector required if aggregationRule "
                                                  "is non-nil"))
        for i, selector in enumerate(selectors):
            errs += validate_label_selector(selector, path.index(i))
    return errs


def validate_cluster_role_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_object_meta_update(new.get("metadata"), old.get("metadata"))
    return errs + validate_cluster_role(new)


def _validate_subject(subject: Any, path: Path, *, namespaced: bool) -> list[FieldError]:
    if not isinstance(subject, Mapping):
        return [FieldError.invalid(path, subject, "must be an object")]
    errs: list[FieldError] = []
    name = subject.get("name") or ""
    kind = subject.get("kind") or ""
    group = subject.get("apiGroup") or ""
    if not name:
        errs.append(FieldError.required(path.child("name")))
    if kind == "ServiceAccount":
        if name:
            errs += [FieldError.invalid(path.child("name"), name, msg) for msg in name_is_dns1123_subdomain(name, False)]
        if group:
            errs.append(FieldError.not_supported(path.child("apiGroup"), group, [""]))
        if not namespaced and not subject.get("namespace"):
            errs.append(FieldError.required(path.child("namespace")))
    elif kind in ("User", "Group"):
        if group != GROUP:
            errs.append(FieldError.not_supported(path.child("apiGroup"), group, [GROUP]))
    else:
        errs.append(FieldError.not_supported(path.child("kind"), kind, _SUBJECT_KINDS))
    return errs


def _validate_binding(binding: Obj, *, namespaced: bool) -> list[FieldError]:
    errs = validate_object_meta(binding.get("metadata"), namespaced=namespaced, name_rule=name_is_path_segment)
    ref = binding.get("roleRef") or {}
    ref_path = Path("roleRef")
    if (ref.get("apiGroup") or "") != GROUP:
        errs.append(FieldError.not_supported(ref_path.child("apiGroup"), ref.get("apiGroup") or "", [GROUP]))
    kinds = ("Role", "ClusterRole") if namespaced else ("ClusterRole",)
    if (ref.get("kind") or "") not in kinds:
        errs.append(FieldError.not_supported(ref_path.child("kind"), ref.get("kind") or "", kinds))
    name = ref.get("name") or ""
    if not name:
        errs.append(FieldError.required(ref_path.child("name")))
    else:
        errs += [FieldError.invalid(ref_path.child("name"), name, msg) for msg in name_is_path_segment(name, False)]
    for i, subject in enumerate(binding.get("subjects") or ()):
        errs += _validate_subject(subject, Path("subjects").index(i), namespaced=namespaced)
    return errs


def validate_role_binding(binding: Obj) -> list[FieldError]:
    return _validate_binding(binding, namespaced=True)


def validate_cluster_role_binding(binding: Obj) -> list[FieldError]:
    return _validate_binding(binding, namespaced=False)


def _validate_binding_update(new: Obj, old: Obj, *, namespaced: bool) -> list[FieldError]:
    errs = validate_object_meta_update(new.get("metadata"), old.get("metadata"))
    errs += _validate_binding(new, namespaced=namespaced)
    if (new.get("roleRef") or {}) != (old.get("roleRef") or {}):
        errs.append(FieldError.invalid("roleRef", new.get("roleRef"), "cannot change roleRef"))
    return errs


def validate_role_binding_update(new: Obj, old: Obj) -> list[FieldError]:
    return _validate_binding_update(new, old, namespaced=True)


def validate_cluster_role_binding_update(new: Obj, old: Obj) -> list[FieldError]:
    return _validate_binding_update(new, old, namespaced=False)
