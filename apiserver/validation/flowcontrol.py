"""The flowcontrol.apiserver.k8s.io/v1 rules: defaulting and validation of FlowSchemas and
PriorityLevelConfigurations (API Priority and Fairness).

As ``pkg/apis/flowcontrol/v1/defaults.go`` and ``pkg/apis/flowcontrol/validation``
of Kubernetes 1.32, on the main points: precedences, subjects and rules of
FlowSchemas; the type, shares, queuing and lending of priority levels. kubesim
stores these objects; it does not do API Priority and Fairness.

Pure functions over plain dicts; no state.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from apiserver.validation.field import FieldError, Path
from apiserver.validation.meta import validate_object_meta, validate_object_meta_update
from apiserver.validation.values import items, obj
from machinery.api import names

Obj = Mapping[str, Any]
Mut = dict[str, Any]

SPEC: Final = Path("spec")
MAX_MATCHING_PRECEDENCE: Final = 10000
_MAX_QUEUES: Final = 512
_DISTINGUISHER_METHODS: Final = ("ByNamespace", "ByUser")
_SUBJECT_KINDS: Final = ("Group", "ServiceAccount", "User")
_VERBS: Final = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
_ENABLEMENTS: Final = ("Exempt", "Limited")
_LIMIT_RESPONSES: Final = ("Queue", "Reject")


def _child(parent: Mut, key: str) -> Mut | None:
    value = parent.get(key)
    return value if isinstance(value, dict) else None


def default_flow_schema(schema: Mut) -> None:
    spec = schema.setdefault("spec", {})
    if not spec.get("matchingPrecedence"):
        spec["matchingPrecedence"] = 1000


def default_priority_level_configuration(level: Mut) -> None:
    spec = level.setdefault("spec", {})
    limited, exempt = _child(spec, "limited"), _child(spec, "exempt")
    if limited is not None:
        if limited.get("nominalConcurrencyShares") is None:
            limited["nominalConcurrencyShares"] = 30
        if limited.get("lendablePercent") is None:
            limited["lendablePercent"] = 0
        queuing = _child(_child(limited, "limitResponse") or {}, "queuing")
        if queuing is not None:
            for key, value in (("handSize", 8), ("queues", 64), ("queueLengthLimit", 50)):
                if not queuing.get(key):
                    queuing[key] = value
    if exempt is not None:
        for key in ("nominalConcurrencyShares", "lendablePercent"):
            if exempt.get(key) is None:
                exempt[key] = 0


def _wildcard_list(values: list[Any], path: Path, what: str, required: str) -> list[FieldError]:
    if not values:
        return [FieldError.required(path, required)]
    if "*" in values and len(values) > 1:
        return [FieldError.invalid(path, values, f"if '*' is present, must not specify other {what}")]
    return []


def _validate_subject(subject: Obj, path: Path) -> list[FieldError]:
    kind = subject.get("kind") or ""
    errs: list[FieldError] = []
    fields = {"User": "user", "Group": "group", "ServiceAccount": "serviceAccount"}
    if kind not in _SUBJECT_KINDS:
        return [FieldError.not_supported(path.child("kind"), kind, _SUBJECT_KINDS)]
    own = fields[kind]
    detail = subject.get(own)
    if detail is None:
        errs.append(FieldError.required(path.child(own), f"{own} is required when subject kind is '{kind}'"))
    else:
        detail = obj(detail)
        if not detail.get("name"):
            what = {"User": "username is required", "Group": "group name is required", "ServiceAccount": ""}[kind]
            errs.append(FieldError.required(path.child(own, "name"), what))
        if kind == "ServiceAccount" and not detail.get("namespace"):
            errs.append(FieldError.required(path.child(own, "namespace")))
    for other_kind, other in fields.items():
        if other != own and subject.get(other) is not None:
            errs.append(FieldError.forbidden(path.child(other), f"{other} is forbidden when subject kind is not "
                                                                f"'{other_kind}'"))
    return errs


def _validate_rule(rule: Obj, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    subjects = items(rule.get("subjects"))
    if not subjects:
        errs.append(FieldError.required(path.child("subjects"), "subjects must contain at least one value"))
    for i, subject in enumerate(subjects):
        errs += _validate_subject(obj(subject), path.child("subjects").index(i))
    resource_rules, non_resource_rules = items(rule.get("resourceRules")), items(rule.get("nonResourceRules"))
    if not resource_rules and not non_resource_rules:
        errs.append(FieldError.required(path, "at least one of resourceRules and nonResourceRules has to be non-empty"))
    for i, resource_rule in enumerate(resource_rules):
        resource_rule, rule_path = obj(resource_rule), path.child("resourceRules").index(i)
        verbs = list(items(resource_rule.get("verbs")))
        errs += _wildcard_list(verbs, rule_path.child("verbs"), "verbs", "verbs must contain at least one value")
        if verbs and "*" not in verbs:
            errs += [FieldError.not_supported(rule_path.child("verbs"), verb, _VERBS)
                     for verb in verbs if verb not in _VERBS]
        errs += _wildcard_list(list(items(resource_rule.get("apiGroups"))), rule_path.child("apiGroups"),
                               "api groups", "resource rules must supply at least one api group")
        errs += _wildcard_list(list(items(resource_rule.get("resources"))), rule_path.child("resources"),
                               "resources", "resource rules must supply at least one resource")
        namespaces = list(items(resource_rule.get("namespaces")))
        if not namespaces and not resource_rule.get("clusterScope"):
            errs.append(FieldError.required(rule_path.child("namespaces"), "resource rules that are not cluster "
                                                                           "scoped must supply at least one "
                                                                           "namespace"))
        elif "*" in namespaces:
            if len(namespaces) > 1:
                errs.append(FieldError.invalid(rule_path.child("namespaces"), namespaces,
                                               "if '*' is present, must not specify other namespaces"))
        else:
            for j, namespace in enumerate(namespaces):
                errs += [FieldError.invalid(rule_path.child("namespaces").index(j), namespace, msg)
                         for msg in names.is_dns1123_label(namespace)]
    for i, non_resource_rule in enumerate(non_resource_rules):
        non_resource_rule, rule_path = obj(non_resource_rule), path.child("nonResourceRules").index(i)
        errs += _wildcard_list(list(items(non_resource_rule.get("verbs"))), rule_path.child("verbs"), "verbs",
                               "verbs must contain at least one value")
        urls = list(items(non_resource_rule.get("nonResourceURLs")))
        errs += _wildcard_list(urls, rule_path.child("nonResourceURLs"), "non-resource URLs",
                               "nonResourceURLs must contain at least one value")
        for j, url in enumerate(urls):
            if url != "*" and not str(url).startswith("/"):
                errs.append(FieldError.invalid(rule_path.child("nonResourceURLs").index(j), url,
                                               "must start with slash"))
    return errs


def _validate_flow_schema_spec(name: str, spec: Obj, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    precedence = int(spec.get("matchingPrecedence") or 0)
    if precedence <= 0:
        errs.append(FieldError.invalid(path.child("matchingPrecedence"), precedence, "must be a positive value"))
    if precedence > MAX_MATCHING_PRECEDENCE:
        errs.append(FieldError.invalid(path.child("matchingPrecedence"), precedence,
                                       f"must not be greater than {MAX_MATCHING_PRECEDENCE}"))
    if precedence == 1 and name != "exempt":
        errs.append(FieldError.invalid(path.child("matchingPrecedence"), precedence,
                                       "only the schema named 'exempt' may have matchingPrecedence 1"))
    method = spec.get("distinguisherMethod")
    if method is not None and obj(method).get("type") not in _DISTINGUISHER_METHODS:
        errs.append(FieldError.not_supported(path.child("distinguisherMethod", "type"), obj(method).get("type") or "",
                                             _DISTINGUISHER_METHODS))
    level = str(obj(spec.get("priorityLevelConfiguration")).get("name") or "")
    level_path = path.child("priorityLevelConfiguration", "name")
    if not level:
        errs.append(FieldError.required(level_path, "must reference a priority level"))
    else:
        errs += [FieldError.invalid(level_path, level, msg) for msg in names.is_dns1123_subdomain(level)]
    for i, rule in enumerate(items(spec.get("rules"))):
        errs += _validate_rule(obj(rule), path.child("rules").index(i))
    return errs


def validate_flow_schema(schema: Obj) -> list[FieldError]:
    meta = obj(schema.get("metadata"))
    errs = validate_object_meta(meta, namespaced=False)
    return errs + _validate_flow_schema_spec(str(meta.get("name") or ""), obj(schema.get("spec")), SPEC)


def validate_flow_schema_update(new: Obj, old: Obj) -> list[FieldError]:
    meta = obj(new.get("metadata"))
    errs = validate_object_meta_update(meta, obj(old.get("metadata")))
    return errs + _validate_flow_schema_spec(str(meta.get("name") or ""), obj(new.get("spec")), SPEC)


def _validate_percent(value: Any, path: Path) -> list[FieldError]:
    if value is not None and not 0 <= value <= 100:
        return [FieldError.invalid(path, value, "must be between 0 and 100, inclusive")]
    return []


def _validate_level_spec(name: str, spec: Obj, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    kind = spec.get("type") or ""
    if (name == "exempt") != (kind == "Exempt"):
        errs.append(FieldError.invalid(path.child("type"), kind, "type must be 'Exempt' if and only if name is "
                                                                 "'exempt'"))
    if kind == "Exempt":
        if spec.get("limited") is not None:
            errs.append(FieldError.forbidden(path.child("limited"), "must be nil if the type is not Limited"))
        exempt = spec.get("exempt")
        if exempt is not None:
            shares = obj(exempt).get("nominalConcurrencyShares")
            if shares is not None and shares < 0:
                errs.append(FieldError.invalid(path.child("exempt", "nominalConcurrencyShares"), shares,
                                               "must be a non-negative integer"))
            errs += _validate_percent(obj(exempt).get("lendablePercent"), path.child("exempt", "lendablePercent"))
    elif kind == "Limited":
        if spec.get("exempt") is not None:
            errs.append(FieldError.forbidden(path.child("exempt"), "must be nil if the type is Limited"))
        limited = spec.get("limited")
        if limited is None:
            errs.append(FieldError.required(path.child("limited"), "must not be empty when type is Limited"))
        else:
            errs += _validate_limited(obj(limited), path.child("limited"))
    else:
        errs.append(FieldError.not_supported(path.child("type"), kind, _ENABLEMENTS))
    return errs


def _validate_limited(limited: Obj, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    shares = limited.get("nominalConcurrencyShares")
    if shares is not None and shares < 0:
        errs.append(FieldError.invalid(path.child("nominalConcurrencyShares"), shares, "must be a non-negative "
                                                                                        "integer"))
    response, response_path = obj(limited.get("limitResponse")), path.child("limitResponse")
    kind = response.get("type") or ""
    queuing = response.get("queuing")
    if kind == "Reject":
        if queuing is not None:
            errs.append(FieldError.forbidden(response_path.child("queuing"), "must be nil if limited.limitResponse.type "
                                                                            "is not Limited"))
    elif kind == "Queue":
        if queuing is None:
            errs.append(FieldError.required(response_path.child("queuing"), "must not be empty if "
                                                                            "limited.limitResponse.type is Queue"))
        else:
            errs += _validate_queuing(obj(queuing), response_path.child("queuing"))
    else:
        errs.append(FieldError.not_supported(response_path.child("type"), kind, _LIMIT_RESPONSES))
    errs += _validate_percent(limited.get("lendablePercent"), path.child("lendablePercent"))
    borrowing = limited.get("borrowingLimitPercent")
    if borrowing is not None and borrowing < 0:
        errs.append(FieldError.invalid(path.child("borrowingLimitPercent"), borrowing,
                                       "if specified, must be a non-negative integer"))
    return errs


def _validate_queuing(queuing: Obj, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    limit, queues, hand = (int(queuing.get(k) or 0) for k in ("queueLengthLimit", "queues", "handSize"))
    if limit <= 0:
        errs.append(FieldError.invalid(path.child("queueLengthLimit"), limit, "must be positive"))
    if queues <= 0:
        errs.append(FieldError.invalid(path.child("queues"), queues, "must be positive"))
    elif queues > _MAX_QUEUES:
        errs.append(FieldError.invalid(path.child("queues"), queues, f"must not be greater than {_MAX_QUEUES}"))
    if hand <= 0:
        errs.append(FieldError.invalid(path.child("handSize"), hand, "must be positive"))
    elif hand > queues:
        errs.append(FieldError.invalid(path.child("handSize"), hand, f"should not be greater than queues ({queues})"))
    return errs


def validate_priority_level_configuration(level: Obj) -> list[FieldError]:
    meta = obj(level.get("metadata"))
    errs = validate_object_meta(meta, namespaced=False)
    return errs + _validate_level_spec(str(meta.get("name") or ""), obj(level.get("spec")), SPEC)


def validate_priority_level_configuration_update(new: Obj, old: Obj) -> list[FieldError]:
    meta = obj(new.get("metadata"))
    errs = validate_object_meta_update(meta, obj(old.get("metadata")))
    return errs + _validate_level_spec(str(meta.get("name") or ""), obj(new.get("spec")), SPEC)
