"""The validation of a CustomResourceDefinition itself (Kubernetes' ``ValidateCustomResourceDefinition``).

Every problem is reported, so that one 422 lists every cause: the name
(``<plural>.<group>``), the group (a DNS subdomain with a dot), the names
(plural, singular, kind, listKind, shortNames, categories), the scope
(immutable), the API approval annotation of the community's groups
(``*.k8s.io``), the versions (at least one, exactly one storage version, at least
one served, unique DNS-1035 names), each version's schema (structural, see
:mod:`.structural`; CEL rules that compile, see :mod:`.cel`; defaults that
validate), printer columns, selectable fields, the scale subresource's paths,
and the conversion strategy.

Pure functions over the CRD as JSON.
"""

from __future__ import annotations

import json
import re
import urllib.parse
from typing import Any, Final

from apiserver.apiextensions import jsonpath, structural
from apiserver.apiextensions.validation import SchemaValidator
from apiserver.validation.field import FieldError
from machinery.api.names import is_dns1123_label, is_dns1123_subdomain

_DNS1035: Final = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_DNS1035_MESSAGE: Final = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start "
                           "with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  "
                           "or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')")
_COLUMN_TYPES: Final = ("integer", "number", "string", "boolean", "date")
_COLUMN_FORMATS: Final = ("int32", "int64", "float", "double", "byte", "date", "date-time", "password", "name")
CLEANUP_FINALIZER: Final = "customresourcecleanup.apiextensions.k8s.io"
#: The annotation CRDs in the community's groups (``*.k8s.io``, ``*.kubernetes.io``) must carry (KEP 1111).
API_APPROVAL_ANNOTATION: Final = "api-approved.kubernetes.io"
_API_APPROVAL_KEP: Final = "see https://github.com/kubernetes/enhancements/pull/1111"


def is_protected_group(group: Any) -> bool:
    """Groups owned by the Kubernetes community: a CRD there needs the API approval annotation."""
    return isinstance(group, str) and any(group == g or group.endswith("." + g) for g in ("k8s.io", "kubernetes.io"))


def api_approval(annotations: Any) -> tuple[str, str]:
    """(state, message) of a CRD's API approval annotation, as Kubernetes' ``GetAPIApprovalState``.

    The state is the reason of the ``KubernetesAPIApprovalPolicyConformant`` condition:
    ``MissingAnnotation``, ``UnapprovedAnnotation`` (a value starting with "unapproved"),
    ``ApprovedAnnotation`` (an absolute URL) or ``InvalidAnnotation``.
    """
    value = _obj(annotations).get(API_APPROVAL_ANNOTATION)
    value = value if isinstance(value, str) else ""
    if not value:
        return "MissingAnnotation", (f'protected groups must have approval annotation "{API_APPROVAL_ANNOTATION}", '
                                     f"{_API_APPROVAL_KEP}")
    if value.startswith("unapproved"):
        return "UnapprovedAnnotation", f"not approved: {_go_quote(value)}"
    try:
        url = urllib.parse.urlsplit(value)
    except ValueError:
        url = None
    if url is not None and url.scheme and url.netloc and " " not in value:
        return "ApprovedAnnotation", f"approved in {value}"
    return "InvalidAnnotation", (f'protected groups must have approval annotation "{API_APPROVAL_ANNOTATION}" with '
                                 f'either a URL or a reason starting with "unapproved", {_API_APPROVAL_KEP}')


def _go_quote(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _validate_api_approval(crd: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    """A CRD in a protected group needs the approval annotation (checked again only when it changes)."""
    if not is_protected_group(_obj(crd.get("spec")).get("group")):
        return []
    annotations = _obj(_obj(crd.get("metadata")).get("annotations"))
    if old is not None and annotations.get(API_APPROVAL_ANNOTATION) == \
            _obj(_obj(old.get("metadata")).get("annotations")).get(API_APPROVAL_ANNOTATION):
        return []
    state, message = api_approval(annotations)
    field = f"metadata.annotations[{API_APPROVAL_ANNOTATION}]"
    if state == "MissingAnnotation":
        return [FieldError.required(field, message)]
    if state == "InvalidAnnotation":
        return [FieldError.invalid(field, annotations.get(API_APPROVAL_ANNOTATION), message)]
    return []


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _dns1035(value: Any, path: str) -> list[FieldError]:
    if not isinstance(value, str) or not _DNS1035.match(value) or len(value) > 63:
        return [FieldError.invalid(path, value, _DNS1035_MESSAGE)]
    return []


def validate_crd(crd: dict[str, Any]) -> list[FieldError]:
    """Every problem of a CustomResourceDefinition being created."""
    return _validate_crd(crd) + _validate_api_approval(crd, None)


def _validate_crd(crd: dict[str, Any]) -> list[FieldError]:
    meta = crd.get("metadata") or {}
    spec = _obj(crd.get("spec"))
    errs: list[FieldError] = []
    group = spec.get("group")
    names = _obj(spec.get("names"))
    plural = names.get("plural")
    if meta.get("name") != f"{plural}.{group}":
        errs.append(FieldError.invalid("metadata.name", meta.get("name") or "",
                                       'must be spec.names.plural+"."+spec.group'))
    if not group:
        errs.append(FieldError.required("spec.group", ""))
    elif not isinstance(group, str) or is_dns1123_subdomain(group):
        errs.append(FieldError.invalid("spec.group", group, "; ".join(is_dns1123_subdomain(str(group)))))
    elif "." not in group:
        errs.append(FieldError.invalid("spec.group", group, "should be a domain with at least one dot"))
    scope = spec.get("scope")
    if not scope:
        errs.append(FieldError.required("spec.scope", ""))
    elif scope not in ("Namespaced", "Cluster"):
        errs.append(FieldError.not_supported("spec.scope", scope, ("Cluster", "Namespaced")))
    errs.extend(validate_names(names, "spec.names"))
    errs.extend(_validate_versions(spec))
    conversion = _obj(spec.get("conversion"))
    strategy = conversion.get("strategy", "None")
    if strategy not in ("None", "Webhook"):
        errs.append(FieldError.not_supported("spec.conversion.strategy", strategy, ("None", "Webhook")))
    elif strategy == "Webhook" and not isinstance(conversion.get("webhook"), dict):
        errs.append(FieldError.required("spec.conversion.webhook", "required when strategy is set to Webhook"))
    elif strategy == "None" and conversion.get("webhook") is not None:
        errs.append(FieldError.forbidden("spec.conversion.webhook", "should not be set when strategy is not set "
                                         "to Webhook"))
    if spec.get("preserveUnknownFields") is True:
        errs.append(FieldError.invalid("spec.preserveUnknownFields", True,
                                       "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in "
                                       "spec.versions[*].schema instead"))
    return errs


def validate_names(names: dict[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    plural, singular, kind, list_kind = (names.get(k) for k in ("plural", "singular", "kind", "listKind"))
    if not plural:
        errs.append(FieldError.required(f"{path}.plural", ""))
    elif is_dns1123_label(str(plural)):
        errs.append(FieldError.invalid(f"{path}.plural", plural, "; ".join(is_dns1123_label(str(plural)))))
    if singular and is_dns1123_label(str(singular)):
        errs.append(FieldError.invalid(f"{path}.singular", singular, "; ".join(is_dns1123_label(str(singular)))))
    if not kind:
        errs.append(FieldError.required(f"{path}.kind", ""))
    elif _dns1035(str(kind).lower(), f"{path}.kind"):
        errs.append(FieldError.invalid(f"{path}.kind", kind, "may have mixed case, but should otherwise match: "
                                       "[a-z]([-a-z0-9]*[a-z0-9])?"))
    if list_kind:
        if _dns1035(str(list_kind).lower(), f"{path}.listKind"):
            errs.append(FieldError.invalid(f"{path}.listKind", list_kind, "may have mixed case, but should "
                                           "otherwise match: [a-z]([-a-z0-9]*[a-z0-9])?"))
        if list_kind == kind:
            errs.append(FieldError.invalid(f"{path}.listKind", list_kind,
                                           "kind and listKind may not be the same or parsing will fail"))
    for key in ("shortNames", "categories"):
        values = names.get(key) or []
        if not isinstance(values, list):
            errs.append(FieldError.invalid(f"{path}.{key}", values, "must be a list of strings"))
            continue
        seen: set[str] = set()
        for i, value in enumerate(values):
            if not isinstance(value, str) or is_dns1123_label(value):
                errs.append(FieldError.invalid(f"{path}.{key}[{i}]", value,
                                               "; ".join(is_dns1123_label(str(value)))))
            if value in seen:
                errs.append(FieldError.duplicate(f"{path}.{key}[{i}]", value))
            seen.add(value)
    return errs


def _validate_versions(spec: dict[str, Any]) -> list[FieldError]:
    errs: list[FieldError] = []
    versions = spec.get("versions")
    if not isinstance(versions, list) or not versions:
        return [FieldError.invalid("spec.versions", versions or [], "must have exactly one version marked as "
                                   "storage version")] if versions is not None else [
            FieldError.required("spec.versions", "")]
    storage = [v for v in versions if isinstance(v, dict) and v.get("storage") is True]
    if len(storage) != 1:
        errs.append(FieldError.invalid("spec.versions", [v.get("name") for v in versions if isinstance(v, dict)],
                                       "must have exactly one version marked as storage version"))
    if not any(isinstance(v, dict) and v.get("served") is True for v in versions):
        errs.append(FieldError.invalid("spec.versions", [v.get("name") for v in versions if isinstance(v, dict)],
                                       "must have at least one served version"))
    seen: set[str] = set()
    for i, version in enumerate(versions):
        path = f"spec.versions[{i}]"
        if not isinstance(version, dict):
            errs.append(FieldError.invalid(path, version, "must be an object"))
            continue
        name = version.get("name")
        if not name:
            errs.append(FieldError.required(f"{path}.name", ""))
        else:
            errs.extend(_dns1035(name, f"{path}.name"))
            if name in seen:
                errs.append(FieldError.duplicate(f"{path}.name", name))
            seen.add(name)
        for flag in ("served", "storage"):
            if not isinstance(version.get(flag), bool):
                errs.append(FieldError.required(f"{path}.{flag}", ""))
        errs.extend(validate_schema(version.get("schema"), f"{path}.schema", spec))
        errs.extend(_validate_columns(version.get("additionalPrinterColumns"), f"{path}.additionalPrinterColumns"))
        errs.extend(_validate_selectable(version.get("selectableFields"), f"{path}.selectableFields"))
        errs.extend(_validate_subresources(version.get("subresources"), f"{path}.subresources"))
    return errs


def validate_schema(validation: Any, path: str, spec: dict[str, Any]) -> list[FieldError]:
    if not isinstance(validation, dict) or not isinstance(validation.get("openAPIV3Schema"), dict):
        return [FieldError.required(f"{path}.openAPIV3Schema", "schemas are required")]
    schema = validation["openAPIV3Schema"]
    schema_path = f"{path}.openAPIV3Schema"
    errs = structural.check(schema, schema_path)
    if errs:
        return errs
    validator = SchemaValidator(schema)
    for where, index, message, rule in validator.rule_errors:
        errs.append(FieldError.invalid(f"{schema_path}{where}.x-kubernetes-validations[{index}].rule", rule,
                                       message))
    errs.extend(_validate_defaults(schema, schema_path))
    return errs


def _validate_defaults(schema: dict[str, Any], path: str) -> list[FieldError]:
    """Every ``default`` must itself satisfy the schema of its field."""
    errs: list[FieldError] = []
    stack: list[tuple[Any, str, bool]] = [(schema, path, False)]
    while stack:
        node, where, under_meta = stack.pop()
        if not isinstance(node, dict):
            continue
        if "default" in node:
            if under_meta:
                errs.append(FieldError.forbidden(f"{where}.default", "must not be set in metadata"))
            else:
                for e in SchemaValidator({k: v for k, v in node.items() if k != "x-kubernetes-validations"}
                                         ).validate(node["default"]):
                    field = f"{where}.default" + (f".{e.field}" if e.field else "")
                    errs.append(FieldError(e.type, field, e.bad_value, e.detail))
        for name, sub in (node.get("properties") or {}).items():
            stack.append((sub, f"{where}.properties[{name}]", under_meta or (where == path and name == "metadata")))
        for key in ("items", "additionalProperties"):
            if isinstance(node.get(key), dict):
                stack.append((node[key], f"{where}.{key}", under_meta))
    return errs


def _validate_columns(columns: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, col in enumerate(columns or []):
        where = f"{path}[{i}]"
        if not isinstance(col, dict):
            errs.append(FieldError.invalid(where, col, "must be an object"))
            continue
        if not col.get("name"):
            errs.append(FieldError.required(f"{where}.name", ""))
        if not col.get("type"):
            errs.append(FieldError.required(f"{where}.type", ""))
        elif col["type"] not in _COLUMN_TYPES:
            errs.append(FieldError.not_supported(f"{where}.type", col["type"], _COLUMN_TYPES))
        if col.get("format") and col["format"] not in _COLUMN_FORMATS:
            errs.append(FieldError.not_supported(f"{where}.format", col["format"], _COLUMN_FORMATS))
        if not col.get("jsonPath"):
            errs.append(FieldError.required(f"{where}.jsonPath", ""))
        else:
            try:
                jsonpath.parse(str(col["jsonPath"]))
            except jsonpath.JSONPathError as e:
                errs.append(FieldError.invalid(f"{where}.jsonPath", col["jsonPath"], f"must be a valid JSON path: {e}"))
        if not isinstance(col.get("priority", 0), int) or col.get("priority", 0) < 0:
            errs.append(FieldError.invalid(f"{where}.priority", col.get("priority"), "must be greater than or "
                                           "equal to 0"))
    return errs


def _validate_selectable(fields: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, f in enumerate(fields or []):
        where = f"{path}[{i}].jsonPath"
        jp = f.get("jsonPath") if isinstance(f, dict) else None
        if not jp:
            errs.append(FieldError.required(where, ""))
            continue
        try:
            parts = jsonpath.simple_fields(jp)
        except jsonpath.JSONPathError as e:
            errs.append(FieldError.invalid(where, jp, str(e)))
            continue
        if parts[0] == "metadata":
            errs.append(FieldError.invalid(where, jp, "must not start with 'metadata'"))
        if jp in seen:
            errs.append(FieldError.duplicate(where, jp))
        seen.add(jp)
    return errs


def _validate_subresources(subresources: Any, path: str) -> list[FieldError]:
    if not isinstance(subresources, dict):
        return []
    errs: list[FieldError] = []
    scale = subresources.get("scale")
    if isinstance(scale, dict):
        for key, required, under in (("specReplicasPath", True, "spec"), ("statusReplicasPath", True, "status"),
                                     ("labelSelectorPath", False, "")):
            value = scale.get(key)
            where = f"{path}.scale.{key}"
            if not value:
                if required:
                    errs.append(FieldError.required(where, ""))
                continue
            try:
                parts = jsonpath.simple_fields(value)
            except jsonpath.JSONPathError:
                errs.append(FieldError.invalid(where, value, "must be a valid json path"))
                continue
            if under and parts[0] != under:
                errs.append(FieldError.invalid(where, value, f"should be a json path under .{under}"))
            elif not under and parts[0] not in ("spec", "status"):
                errs.append(FieldError.invalid(where, value, "should be a json path under either .spec or .status"))
    return errs


def validate_crd_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    """As ``ValidateCustomResourceDefinitionUpdate``: group and plural never change (they make the name);
    scope and kind not once the CRD is established (its objects are stored under them)."""
    errs = _validate_crd(new) + _validate_api_approval(new, old)
    new_spec, old_spec = _obj(new.get("spec")), _obj(old.get("spec"))
    new_names, old_names = _obj(new_spec.get("names")), _obj(old_spec.get("names"))
    established = any(isinstance(c, dict) and c.get("type") == "Established" and c.get("status") == "True"
                      for c in _obj(old.get("status")).get("conditions") or ())
    if established and new_spec.get("scope") != old_spec.get("scope"):
        errs.append(FieldError.invalid("spec.scope", new_spec.get("scope"), "field is immutable"))
    if established and new_names.get("kind") != old_names.get("kind"):
        errs.append(FieldError.invalid("spec.names.kind", new_names.get("kind"), "field is immutable"))
    if new_spec.get("group") != old_spec.get("group"):
        errs.append(FieldError.invalid("spec.group", new_spec.get("group"), "field is immutable"))
    if new_names.get("plural") != old_names.get("plural"):
        errs.append(FieldError.invalid("spec.names.plural", new_names.get("plural"), "field is immutable"))
    stored = ((old.get("status") or {}).get("storedVersions") or [])
    names = [v.get("name") for v in new_spec.get("versions") or [] if isinstance(v, dict)]
    for i, version in enumerate(stored):
        if version not in names:
            errs.append(FieldError.invalid(f"status.storedVersions[{i}]", version,
                                           "must appear in spec.versions"))
    return errs
