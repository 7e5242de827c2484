"""The admissionregistration.k8s.io/v1 rules: defaulting and validation of webhook configurations,
ValidatingAdmissionPolicies and their bindings.

As ``pkg/apis/admissionregistration/v1/defaults.go`` and
``pkg/apis/admissionregistration/validation`` of Kubernetes 1.32 on the main
points: webhook names, rules, client configs, side effects, timeouts and
AdmissionReview versions; a policy's match constraints and validations; a
binding's policy and actions. CEL expressions are stored, not compiled, and
kubesim does not call webhooks nor evaluate policies: these objects are kept
for the clients and operators that manage them.

Pure functions over plain dicts; no state.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import urlsplit

from apiserver.validation import values
from apiserver.validation.field import FieldError, Path
from apiserver.validation.meta import (
    validate_label_selector,
    validate_object_meta,
    validate_object_meta_update,
)
from apiserver.validation.values import items, obj
from machinery.api import names

Obj = Mapping[str, Any]
Mut = dict[str, Any]

_FAILURE_POLICIES: Final = ("Fail", "Ignore")
_MATCH_POLICIES: Final = ("Equivalent", "Exact")
_SIDE_EFFECTS: Final = ("None", "NoneOnDryRun")
_REINVOCATION_POLICIES: Final = ("IfNeeded", "Never")
_OPERATIONS: Final = ("*", "CONNECT", "CREATE", "DELETE", "UPDATE")
_SCOPES: Final = ("*", "Cluster", "Namespaced")
_REVIEW_VERSIONS: Final = ("v1", "v1beta1")
_VALIDATION_ACTIONS: Final = ("Audit", "Deny", "Warn")


# --- defaulting -------------------------------------------------------------------------------

def _default_rules(rules: Any) -> None:
    for rule in items(rules):
        if isinstance(rule, dict) and rule.get("scope") is None:
            rule["scope"] = "*"


def _default_selectors(holder: Mut) -> None:
    for key in ("namespaceSelector", "objectSelector"):
        if holder.get(key) is None:
            holder[key] = {}


def default_webhook_configuration(configuration: Mut, *, mutating: bool) -> None:
    for hook in items(configuration.get("webhooks")):
        if not isinstance(hook, dict):
            continue
        if hook.get("matchPolicy") is None:
            hook["matchPolicy"] = "Equivalent"
        if hook.get("failurePolicy") is None:
            hook["failurePolicy"] = "Fail"
        _default_selectors(hook)
        if hook.get("timeoutSeconds") is None:
            hook["timeoutSeconds"] = 10
        if mutating and hook.get("reinvocationPolicy") is None:
            hook["reinvocationPolicy"] = "Never"
        _default_rules(hook.get("rules"))
        service = obj(hook.get("clientConfig")).get("service")
        if isinstance(service, dict) and service.get("port") is None:
            service["port"] = 443


def default_validating_admission_policy(policy: Mut) -> None:
    spec = policy.setdefault("spec", {})
    if spec.get("failurePolicy") is None:
        spec["failurePolicy"] = "Fail"
    constraints = spec.get("matchConstraints")
    if isinstance(constraints, dict):
        _default_match_resources(constraints)


def _default_match_resources(match: Mut) -> None:
    if match.get("matchPolicy") is None:
        match["matchPolicy"] = "Equivalent"
    _default_selectors(match)
    _default_rules(match.get("resourceRules"))
    _default_rules(match.get("excludeResourceRules"))


def default_validating_admission_policy_binding(binding: Mut) -> None:
    match = obj(binding.get("spec")).get("matchResources")
    if isinstance(match, dict):
        _default_match_resources(match)


# --- shared pieces ------------------------------------------------------------------------------

def _validate_rule(rule: Obj, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    operations = list(items(rule.get("operations")))
    if not operations:
        errs.append(FieldError.required(path.child("operations")))
    if "*" in operations and len(operations) > 1:
        errs.append(FieldError.invalid(path.child("operations"), operations,
                                       "if '*' is present, must not specify other operations"))
    for i, operation in enumerate(operations):
        if operation not in _OPERATIONS:
            errs.append(FieldError.not_supported(path.child("operations").index(i), operation, _OPERATIONS))
    for key in ("apiGroups", "apiVersions", "resources"):
        listed = list(items(rule.get(key)))
        if not listed:
            errs.append(FieldError.required(path.child(key)))
        elif "*" in listed and len(listed) > 1:
            errs.append(FieldError.invalid(path.child(key), listed, f"if '*' is present, must not specify other "
                                                                    f"{key.lower()}"))
    scope = rule.get("scope")
    if scope is not None and scope not in _SCOPES:
        errs.append(FieldError.not_supported(path.child("scope"), scope, _SCOPES))
    return errs


def _validate_client_config(config: Obj, path: Path) -> list[FieldError]:
    url, service = config.get("url"), config.get("service")
    if (url is None) == (service is None):
        return [FieldError.required(path, "exactly one of url or service is required")]
    if url is not None:
        parts = urlsplit(str(url))
        errs: list[FieldError] = []
        if parts.scheme != "https":
            errs.append(FieldError.invalid(path.child("url"), url, "'https' is the only allowed URL scheme"))
        if not parts.hostname:
            errs.append(FieldError.invalid(path.child("url"), url, "host must be specified"))
        if parts.username or parts.password:
            errs.append(FieldError.invalid(path.child("url"), url, "user information is not permitted in the URL"))
        if parts.fragment:
            errs.append(FieldError.invalid(path.child("url"), url, "fragments are not permitted in the URL"))
        if parts.query:
            errs.append(FieldError.invalid(path.child("url"), url, "query parameters are not permitted in the URL"))
        return errs
    service, service_path = obj(service), path.child("service")
    errs = []
    for key in ("name", "namespace"):
        value = str(service.get(key) or "")
        if not value:
            errs.append(FieldError.required(service_path.child(key), f"service {key} is required"))
        else:
            messages = values.dns1035_label_errors(value) if key == "name" else names.is_dns1123_label(value)
            errs += [FieldError.invalid(service_path.child(key), value, msg) for msg in messages]
    port = int(service.get("port") or 0)
    errs += [FieldError.invalid(service_path.child("port"), port, f"port is not valid: {msg}")
             for msg in values.port_number_errors(port)]
    web_path = service.get("path")
    if web_path is not None and not str(web_path).startswith("/"):
        errs.append(FieldError.invalid(service_path.child("path"), web_path, "must start with a '/'"))
    return errs


def _validate_review_versions(versions: list[Any], path: Path) -> list[FieldError]:
    if not versions:
        return [FieldError.required(path, "must specify one of " + ", ".join(_REVIEW_VERSIONS))]
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, version in enumerate(versions):
        if version in seen:
            errs.append(FieldError.invalid(path.index(i), version, "duplicate version"))
            continue
        seen.add(version)
        errs += [FieldError.invalid(path.index(i), version, msg) for msg in values.dns1035_label_errors(str(version))]
    if not seen & set(_REVIEW_VERSIONS):
        errs.append(FieldError.invalid(path, versions, "must include at least one of " + ", ".join(_REVIEW_VERSIONS)))
    return errs


def _validate_webhook(hook: Obj, path: Path, *, mutating: bool) -> list[FieldError]:
    name = str(hook.get("name") or "")
    errs = [FieldError.invalid(path.child("name"), name, msg) for msg in names.is_dns1123_subdomain(name)]
    if name.count(".") < 2:
        errs.append(FieldError.invalid(path.child("name"), name, "should be a domain with at least three segments "
                                                                 "separated by dots"))
    for i, rule in enumerate(items(hook.get("rules"))):
        errs += _validate_rule(obj(rule), path.child("rules").index(i))
    errs += values.optional_enum(hook.get("failurePolicy"), path.child("failurePolicy"), _FAILURE_POLICIES)
    errs += values.optional_enum(hook.get("matchPolicy"), path.child("matchPolicy"), _MATCH_POLICIES)
    side_effects = hook.get("sideEffects")
    if side_effects is None:
        errs.append(FieldError.required(path.child("sideEffects"), "must specify one of " + ", ".join(_SIDE_EFFECTS)))
    else:
        errs += values.optional_enum(side_effects, path.child("sideEffects"), _SIDE_EFFECTS)
    timeout = hook.get("timeoutSeconds")
    if timeout is not None and not 1 <= timeout <= 30:
        errs.append(FieldError.invalid(path.child("timeoutSeconds"), timeout, "the timeout value must be between 1 "
                                                                              "and 30 seconds"))
    for key in ("namespaceSelector", "objectSelector"):
        errs += validate_label_selector(hook.get(key), path.child(key))
    if mutating:
        errs += values.optional_enum(hook.get("reinvocationPolicy"), path.child("reinvocationPolicy"),
                                     _REINVOCATION_POLICIES)
    errs += _validate_client_config(obj(hook.get("clientConfig")), path.child("clientConfig"))
    errs += _validate_review_versions(list(items(hook.get("admissionReviewVersions"))),
                                      path.child("admissionReviewVersions"))
    return errs


# --- webhook configurations -------------------------------------------------------------------

def validate_webhook_configuration(configuration: Obj, *, mutating: bool) -> list[FieldError]:
    errs = validate_object_meta(obj(configuration.get("metadata")), namespaced=False)
    seen: set[str] = set()
    for i, hook in enumerate(items(configuration.get("webhooks"))):
        hook, path = obj(hook), Path("webhooks").index(i)
        errs += _validate_webhook(hook, path, mutating=mutating)
        name = str(hook.get("name") or "")
        if name and name in seen:
            errs.append(FieldError.duplicate(path.child("name"), name))
        seen.add(name)
    return errs


def validate_webhook_configuration_update(new: Obj, old: Obj, *, mutating: bool) -> list[FieldError]:
    errs = validate_object_meta_update(obj(new.get("metadata")), obj(old.get("metadata")))
    return errs + validate_webhook_configuration(new, mutating=mutating)


# --- ValidatingAdmissionPolicy ------------------------------------------------------------------

def _validate_match_resources(match: Obj, path: Path, *, required_rules: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    rules = items(match.get("resourceRules"))
    if required_rules and not rules:
        errs.append(FieldError.required(path.child("resourceRules")))
    for key in ("resourceRules", "excludeResourceRules"):
        for i, rule in enumerate(items(match.get(key))):
            errs += _validate_rule(obj(rule), path.child(key).index(i))
    errs += values.optional_enum(match.get("matchPolicy"), path.child("matchPolicy"), _MATCH_POLICIES)
    for key in ("namespaceSelector", "objectSelector"):
        errs += validate_label_selector(match.get(key), path.child(key))
    return errs


def validate_validating_admission_policy(policy: Obj) -> list[FieldError]:
    errs = validate_object_meta(obj(policy.get("metadata")), namespaced=False)
    spec, path = obj(policy.get("spec")), Path("spec")
    errs += values.optional_enum(spec.get("failurePolicy"), path.child("failurePolicy"), _FAILURE_POLICIES)
    constraints = spec.get("matchConstraints")
    if constraints is None:
        errs.append(FieldError.required(path.child("matchConstraints")))
    else:
        errs += _validate_match_resources(obj(constraints), path.child("matchConstraints"), required_rules=True)
    validations, annotations = items(spec.get("validations")), items(spec.get("auditAnnotations"))
    if not validations and not annotations:
        errs.append(FieldError.required(path.child("validations"), "validations or auditAnnotations must contain at "
                                                                   "least one item"))
    for i, validation in enumerate(validations):
        validation, validation_path = obj(validation), path.child("validations").index(i)
        if not str(validation.get("expression") or "").strip():
            errs.append(FieldError.required(validation_path.child("expression")))
        message = validation.get("message")
        if message is not None and "\n" in str(message):
            errs.append(FieldError.invalid(validation_path.child("message"), message, "message must not contain "
                                                                                      "line breaks"))
    param_kind = spec.get("paramKind")
    if param_kind is not None:
        for key in ("apiVersion", "kind"):
            if not obj(param_kind).get(key):
                errs.append(FieldError.required(path.child("paramKind", key)))
    return errs


def validate_validating_admission_policy_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_object_meta_update(obj(new.get("metadata")), obj(old.get("metadata")))
    return errs + validate_validating_admission_policy(new)


def validate_validating_admission_policy_binding(binding: Obj) -> list[FieldError]:
    errs = validate_object_meta(obj(binding.get("metadata")), namespaced=False)
    spec, path = obj(binding.get("spec")), Path("spec")
    if not spec.get("policyName"):
        errs.append(FieldError.required(path.child("policyName")))
    actions = list(items(spec.get("validationActions")))
    if not actions:
        errs.append(FieldError.required(path.child("validationActions")))
    seen: set[str] = set()
    for i, action in enumerate(actions):
        if action not in _VALIDATION_ACTIONS:
            errs.append(FieldError.not_supported(path.child("validationActions").index(i), action,
                                                 _VALIDATION_ACTIONS))
        if action in seen:
            errs.append(FieldError.duplicate(path.child("validationActions").index(i), action))
        seen.add(action)
    if {"Deny", "Warn"} <= seen:
        errs.append(FieldError.invalid(path.child("validationActions"), actions,
                                       "must not contain both Deny and Warn (repeating the same validation failure "
                                       "information in the API response and headers serves no purpose)"))
    match = spec.get("matchResources")
    if match is not None:
        errs += _validate_match_resources(obj(match), path.child("matchResources"), required_rules=False)
    param_ref = spec.get("paramRef")
    if param_ref is not None:
        param_ref, ref_path = obj(param_ref), path.child("paramRef")
        if param_ref.get("name") and param_ref.get("selector") is not None:
            errs.append(FieldError.forbidden(ref_path.child("name"), "name and selector are mutually exclusive"))
        if not param_ref.get("name") and param_ref.get("selector") is None:
            errs.append(FieldError.required(ref_path, "one of name or selector must be set"))
        action = param_ref.get("parameterNotFoundAction")
        if action is None:
            errs.append(FieldError.required(ref_path.child("parameterNotFoundAction")))
        else:
            errs += values.optional_enum(action, ref_path.child("parameterNotFoundAction"), ("Allow", "Deny"))
    return errs


def validate_validating_admission_policy_binding_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_object_meta_update(obj(new.get("metadata")), obj(old.get("metadata")))
    return errs + validate_validating_admission_policy_binding(new)
