"""Validation of the core/v1 kinds other than Pods: RCs, Nodes, Namespaces, Events and the rest.

This follows ``pkg/apis/core/validation`` of Kubernetes 1.32 rule by rule,
with the feature gates at their 1.32 defaults, so that a bad object is
refused with the very paths and words a real cluster uses. Where Kubernetes
reports an odd path (``metadata.taints`` for a Node's ``spec.taints``,
``status.Phase``, ``spec.template.labels``) the oddity is kept, because
clients match on it. Pods and Pod templates are in :mod:`.pod`, volumes in
:mod:`.volume`, Services in :mod:`.service`.

Each kind has ``validate_<kind>(obj)`` for a create and
``validate_<kind>_update(new, old)`` for an update; kinds with a status
subresource also have ``validate_<kind>_status_update(new, old)``. They take
wire-form dicts that the APIServer has already type-checked against the
official models and defaulted, and return every problem found (an empty list
means valid); they never raise on bad input.

Pure functions over plain dicts; no state.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any, Final

from apiserver.validation.common import (
    PROTOCOLS,
    SPEC,
    STATUS,
    TAINT_EFFECTS,
    config_map_key_errors,
    enum_errors,
    is_dual_stack,
    kube_finalizer_errors,
    list_of,
    obj_of,
    parse_cidr,
    validate_core_meta,
    validate_core_meta_update,
    validate_ip,
    validate_non_special_ip,
    validate_port_number,
)
from apiserver.validation.field import FieldError, Path
from apiserver.validation.meta import (
    METADATA,
    name_is_dns1123_label,
    name_is_dns1123_subdomain,
    name_is_path_segment,
    validate_dns1123_label,
    validate_immutable,
    validate_nonnegative,
    validate_object_meta,
    validate_object_meta_update,
    validate_qualified_name,
)
from apiserver.validation.pod import validate_pod_template_spec, validate_template_keeps_running
from apiserver.validation.resources import (
    canonical_quantity,
    is_overcommit_allowed,
    is_standard_quota_resource,
    validate_limit_range_resource_name,
    validate_limit_type,
    validate_quantity,
    validate_quota_resource_name,
)
from machinery.api import names
from machinery.api.quantity import parse_quantity

Obj = Mapping[str, Any]


# --- ReplicationController -----------------------------------------------------------------------------

def _validate_rc_spec(spec: Obj, path: Path) -> list[FieldError]:
    errs = validate_nonnegative(spec.get("minReadySeconds"), path.child("minReadySeconds"))
    selector = obj_of(spec.get("selector"))
    if not selector:
        errs.append(FieldError.required(path.child("selector")))
    errs += validate_nonnegative(spec.get("replicas"), path.child("replicas"))
    template_path = path.child("template")
    template = spec.get("template")
    if template is None:
        return [*errs, FieldError.required(template_path)]
    labels = obj_of(template.get("metadata")).get("labels")
    if selector and any(obj_of(labels).get(k) != v for k, v in selector.items()):
        errs.append(FieldError.invalid(template_path.child("metadata", "labels"), labels,
                                       "`selector` does not match template `labels`"))
    errs += validate_pod_template_spec(template, template_path)
    return errs + validate_template_keeps_running(template, template_path, "ReplicationController")


def validate_replication_controller(rc: Obj) -> list[FieldError]:
    errs = validate_core_meta(obj_of(rc.get("metadata")), namespaced=True)
    return errs + _validate_rc_spec(obj_of(rc.get("spec")), SPEC)


def validate_replication_controller_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_core_meta_update(obj_of(new.get("metadata")), obj_of(old.get("metadata")))
    return errs + _validate_rc_spec(obj_of(new.get("spec")), SPEC)


def validate_replication_controller_status_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_core_meta_update(obj_of(new.get("metadata")), obj_of(old.get("metadata")))
    status = obj_of(new.get("status"))
    counts = {key: int(status.get(key) or 0) for key in
              ("replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas",
               "observedGeneration")}
    for key, value in counts.items():
        errs += validate_nonnegative(value, STATUS.child(key))
    for key in ("fullyLabeledReplicas", "readyReplicas", "availableReplicas"):
        if counts[key] > counts["replicas"]:
            errs.append(FieldError.invalid(STATUS.child(key), counts[key],
                                           "cannot be greater than status.replicas"))
    if counts["availableReplicas"] > counts["readyReplicas"]:
        errs.append(FieldError.invalid(STATUS.child("availableReplicas"), counts["availableReplicas"],
                                       "cannot be greater than readyReplicas"))
    return errs


# --- Node ------------------------------------------------------------------------------------

def _validate_taints(taints: Sequence[Obj], path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: set[tuple[str, str]] = set()
    for i, taint in enumerate(taints):
        item_path = path.index(i)
        key, effect = taint.get("key") or "", taint.get("effect") or ""
        errs += validate_qualified_name(key, item_path.child("key"))
        problems = names.is_valid_label_value(taint.get("value") or "")
        if problems:
            errs.append(FieldError.invalid(item_path.child("value"), taint.get("value") or "",
                                           ";".join(problems)))
        if not effect:
            errs.append(FieldError.required(item_path.child("effect")))
        elif effect not in TAINT_EFFECTS:
            errs.append(FieldError.not_supported(item_path.child("effect"), effect, TAINT_EFFECTS))
        if (key, effect) in seen:
            errs.append(FieldError.duplicate(item_path, dict(taint),
                                             "taints must be unique by key and effect pair"))
            continue
        seen.add((key, effect))
    return errs


def _validate_node_resources(status: Obj) -> list[FieldError]:
    errs: list[FieldError] = []
    for key in ("capacity", "allocatable"):
        for resource, raw in obj_of(status.get(key)).items():
            validate_quantity(resource, raw, STATUS.child(key, resource), errs)
    return errs


def _pod_cidrs(spec: Obj) -> list[str]:
    cidrs = [str(c) for c in list_of(spec.get("podCIDRs"))]
    if not cidrs and spec.get("podCIDR"):
        cidrs = [spec["podCIDR"]]
    return cidrs


def validate_node(node: Obj) -> list[FieldError]:
    errs = validate_core_meta(obj_of(node.get("metadata")), namespaced=False)
    spec = obj_of(node.get("spec"))
    # Kubernetes reports spec.taints under metadata.taints.
    errs += _validate_taints(list_of(spec.get("taints")), METADATA.child("taints"))
    errs += _validate_node_resources(obj_of(node.get("status")))
    cidrs = _pod_cidrs(spec)
    cidrs_path = SPEC.child("podCIDRs")
    versions: list[int] = []
    for i, cidr in enumerate(cidrs):
        version = parse_cidr(cidr)
        if version is None:
            errs.append(FieldError.invalid(cidrs_path.index(i), cidr,
                                           "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"))
        else:
            versions.append(version)
    if len(cidrs) > 1:
        if not is_dual_stack(versions) or len(cidrs) > 2:
            errs.append(FieldError.invalid(cidrs_path, cidrs,
                                           "may specify no more than one CIDR for each IP family"))
        seen: set[str] = set()
        for i, cidr in enumerate(cidrs):
            if cidr in seen:
                errs.append(FieldError.duplicate(cidrs_path.index(i), cidr))
            seen.add(cidr)
    return errs


def validate_node_update(new: Obj, old: Obj) -> list[FieldError]:
    """A Node update; Kubernetes validates ``nodes/status`` writes with these same rules."""
    errs = validate_core_meta_update(obj_of(new.get("metadata")), obj_of(old.get("metadata")))
    new_spec, old_spec = obj_of(new.get("spec")), obj_of(old.get("spec"))
    status = obj_of(new.get("status"))
    errs += _validate_node_resources(status)
    seen: list[Any] = []
    for i, address in enumerate(list_of(status.get("addresses"))):
        if address in seen:
            errs.append(FieldError.duplicate(STATUS.child("addresses").index(i), address))
        seen.append(address)
    old_cidrs, new_cidrs = _pod_cidrs(old_spec), _pod_cidrs(new_spec)
    cidr_change = FieldError.forbidden(SPEC.child("podCIDRs"),
                                       'node updates may not change podCIDR except from "" to valid')
    if old_cidrs:
        if len(old_cidrs) != len(new_cidrs):
            errs.append(cidr_change)
        else:
            errs += [cidr_change for a, b in zip(old_cidrs, new_cidrs, strict=True) if a != b]
    old_provider = old_spec.get("providerID") or ""
    if old_provider and old_provider != (new_spec.get("providerID") or ""):
        errs.append(FieldError.forbidden(SPEC.child("providerID"),
                                         'node updates may not change providerID except from "" to valid'))
    errs += _validate_taints(list_of(new_spec.get("taints")), METADATA.child("taints"))
    if (new_spec.get("externalID") or "") != (old_spec.get("externalID") or ""):
        errs.append(FieldError.forbidden(SPEC.child("externalID"), "may not be updated"))
    return errs


validate_node_status_update = validate_node_update


# --- Namespace ---------------------------------------------------------------------------------

def validate_namespace(namespace: Obj) -> list[FieldError]:
    errs = validate_core_meta(obj_of(namespace.get("metadata")), namespaced=False,
                               name_rule=name_is_dns1123_label)
    # Kubernetes names every spec finalizer error by the list, not by its index.
    for finalizer in list_of(obj_of(namespace.get("spec")).get("finalizers")):
        errs += validate_qualified_name(finalizer, SPEC.child("finalizers"))
        errs += kube_finalizer_errors(finalizer, SPEC.child("finalizers"))
    return errs


def validate_namespace_update(new: Obj, old: Obj) -> list[FieldError]:
    return validate_core_meta_update(obj_of(new.get("metadata")), obj_of(old.get("metadata")))


def validate_namespace_status_update(new: Obj, old: Obj) -> list[FieldError]:
    meta = obj_of(new.get("metadata"))
    errs = validate_core_meta_update(meta, obj_of(old.get("metadata")))
    phase = obj_of(new.get("status")).get("phase") or ""
    if not meta.get("deletionTimestamp"):
        if phase != "Active":
            errs.append(FieldError.invalid(STATUS.child("Phase"), phase,
                                           "may only be 'Active' if `deletionTimestamp` is empty"))
    elif phase != "Terminating":
        errs.append(FieldError.invalid(STATUS.child("Phase"), phase,
                                       "may only be 'Terminating' if `deletionTimestamp` is not empty"))
    return errs


def validate_namespace_finalize_update(new: Obj, old: Obj) -> list[FieldError]:
    """A ``namespaces/finalize`` write, which is how spec finalizers are removed."""
    errs = validate_core_meta_update(obj_of(new.get("metadata")), obj_of(old.get("metadata")))
    for i, finalizer in enumerate(list_of(obj_of(new.get("spec")).get("finalizers"))):
        finalizer_path = SPEC.child("finalizers").index(i)
        errs += validate_qualified_name(finalizer, finalizer_path)
        errs += kube_finalizer_errors(finalizer, finalizer_path)
    return errs


# --- Event ---------------------------------------------------------------------------------------

def _validate_legacy_event(event: Obj) -> list[FieldError]:
    """The only rules core/v1 Events get (events.k8s.io/v1 is stricter): namespaces agree, fields fit."""
    errs: list[FieldError] = []
    namespace = obj_of(event.get("metadata")).get("namespace") or ""
    involved_namespace = obj_of(event.get("involvedObject")).get("namespace") or ""
    mismatch = FieldError.invalid(Path("involvedObject", "namespace"), involved_namespace,
                                  "does not match event.namespace")
    if not event.get("eventTime"):
        # Old clients may record cluster-scoped objects' events in "default".
        if (not involved_namespace and namespace not in ("", "default")) or \
                (involved_namespace and namespace != involved_namespace):
            errs.append(mismatch)
    else:
        if not involved_namespace and namespace not in ("default", "kube-system"):
            errs.append(mismatch)
        # core/v1 calls it reportingComponent; Kubernetes names the internal field in the error.
        controller = event.get("reportingComponent") or ""
        if not controller:
            errs.append(FieldError.required(Path("reportingController")))
        errs += [FieldError.invalid(Path("reportingController"), controller, msg)
                 for msg in names.is_qualified_name(controller)]
        for key, limit in (("reportingInstance", 128), ("action", 128), ("reason", 128)):
            value = event.get(key) or ""
            if not value:
                errs.append(FieldError.required(Path(key)))
            if len(value.encode()) > limit:
                errs.append(FieldError.invalid(Path(key), "", f"can have at most {limit} characters"))
        if len((event.get("message") or "").encode()) > 1024:
            errs.append(FieldError.invalid(Path("message"), "", "can have at most 1024 characters"))
    errs += [FieldError.invalid(Path("namespace"), namespace, msg)
             for msg in names.is_dns1123_subdomain(namespace)]
    return errs


def validate_event(event: Obj) -> list[FieldError]:
    """A core/v1 Event; its name need only be a valid path segment, checked once the event rules pass."""
    errs = _validate_legacy_event(event)
    return errs or validate_object_meta(obj_of(event.get("metadata")), namespaced=True,
                                        name_rule=name_is_path_segment)


def validate_event_update(new: Obj, old: Obj) -> list[FieldError]:
    new_meta = obj_of(new.get("metadata"))
    errs = validate_object_meta(new_meta, namespaced=True, name_rule=name_is_path_segment)
    errs += validate_object_meta_update(new_meta, obj_of(old.get("metadata")))
    return errs + _validate_legacy_event(new)


# --- PodTemplate ---------------------------------------------------------------------------------

_TEMPLATE: Final = Path("template")


def validate_pod_template(pod_template: Obj) -> list[FieldError]:
    """A PodTemplate: its metadata and its ``template`` (judged as every workload's template is)."""
    errs = validate_core_meta(obj_of(pod_template.get("metadata")), namespaced=True)
    return errs + validate_pod_template_spec(obj_of(pod_template.get("template")), _TEMPLATE)


def validate_pod_template_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_core_meta_update(obj_of(new.get("metadata")), obj_of(old.get("metadata")))
    return errs + validate_pod_template_spec(obj_of(new.get("template")), _TEMPLATE)


# --- ConfigMap and Secret ------------------------------------------------------------------------

#: The most a Secret's or ConfigMap's data may hold, in bytes (``core.MaxSecretSize``).
MAX_SECRET_SIZE: Final = 1024 * 1024
_IMMUTABLE_SET: Final = "field is immutable when `immutable` is set"
_REDACTED: Final = "<secret contents redacted>"
_SERVICE_ACCOUNT_NAME_KEY: Final = "kubernetes.io/service-account.name"


def decoded_size(value: Any) -> int:
    """The size of a base64 ``data`` value once decoded (the store keeps it in canonical base64)."""
    if not isinstance(value, str):
        return 0
    try:
        return len(base64.b64decode(value))
    except (binascii.Error, ValueError):
        return len(value)


def _validate_data_keys(data: Obj, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    for key in data:
        errs += [FieldError.invalid(path.key(key), key, msg) for msg in config_map_key_errors(key)]
    return errs


def validate_config_map(config_map: Obj) -> list[FieldError]:
    """``ValidateConfigMap``: key names, no key in both ``data`` and ``binaryData``, at most 1 MiB in all."""
    errs = validate_core_meta(obj_of(config_map.get("metadata")), namespaced=True)
    data, binary = obj_of(config_map.get("data")), obj_of(config_map.get("binaryData"))
    total = 0
    for key, value in data.items():
        errs += [FieldError.invalid(Path("data").key(key), key, msg) for msg in config_map_key_errors(key)]
        if key in binary:
            errs.append(FieldError.invalid(Path("data").key(key), key, "duplicate of key present in binaryData"))
        total += len(str(value or "").encode())
    errs += _validate_data_keys(binary, Path("binaryData"))
    total += sum(decoded_size(value) for value in binary.values())
    if total > MAX_SECRET_SIZE:
        # Kubernetes reports the whole object, with an empty field path.
        errs.append(FieldError.too_long("", MAX_SECRET_SIZE))
    return errs


def validate_config_map_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_core_meta_update(obj_of(new.get("metadata")), obj_of(old.get("metadata")))
    if old.get("immutable"):
        if not new.get("immutable"):
            errs.append(FieldError.forbidden("immutable", _IMMUTABLE_SET))
        for key in ("data", "binaryData"):
            if (new.get(key) or None) != (old.get(key) or None):
                errs.append(FieldError.forbidden(key, _IMMUTABLE_SET))
    return errs + validate_config_map(new)


def _go_json_error(raw: bytes) -> str | None:
    """What Go's ``json.Unmarshal`` into a ``map[string]interface{}`` says of ``raw``, or None when it decodes."""
    text = raw.decode("utf-8", "replace")
    if not text.strip():
        return "unexpected end of JSON input"
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        if e.pos >= len(text.rstrip()):
            return "unexpected end of JSON input"
        ch = text[e.pos]
        context = "looking for beginning of value" if e.msg.startswith("Expecting value") else \
            "after top-level value" if e.msg == "Extra data" else "looking for beginning of object key string"
        return f"invalid character {_go_char(ch)} {context}"
    if not isinstance(value, dict):
        kind = {list: "array", str: "string", bool: "bool", type(None): ""}.get(type(value), "number")
        return None if value is None else f"json: cannot unmarshal {kind} into Go value of type map[string]interface {{}}"
    return None


def _go_char(ch: str) -> str:
    """A character as Go's JSON errors quote it (``'x'``, ``'\\n'``)."""
    if ch == "'":
        return "'\\''"
    if ch.isprintable():
        return f"'{ch}'"
    return "'" + ch.encode("unicode_escape").decode() + "'"


def _decoded(data: Obj, key: str) -> bytes | None:
    value = data.get(key)
    if not isinstance(value, str):
        return None if key not in data else b""
    try:
        return base64.b64decode(value)
    except (binascii.Error, ValueError):
        return value.encode()


def validate_secret(secret: Obj) -> list[FieldError]:
    """``ValidateSecret``: key names, 1 MiB in all, and the keys each well-known ``type`` requires."""
    meta = obj_of(secret.get("metadata"))
    errs = validate_core_meta(meta, namespaced=True)
    data = obj_of(secret.get("data"))
    data_path = Path("data")
    errs += _validate_data_keys(data, data_path)
    if sum(decoded_size(value) for value in data.values()) > MAX_SECRET_SIZE:
        errs.append(FieldError.too_long(data_path, MAX_SECRET_SIZE))
    kind = secret.get("type") or ""
    if kind == "kubernetes.io/service-account-token":
        if not obj_of(meta.get("annotations")).get(_SERVICE_ACCOUNT_NAME_KEY):
            errs.append(FieldError.required(METADATA.child("annotations").key(_SERVICE_ACCOUNT_NAME_KEY)))
    elif kind in ("kubernetes.io/dockercfg", "kubernetes.io/dockerconfigjson"):
        key = ".dockercfg" if kind == "kubernetes.io/dockercfg" else ".dockerconfigjson"
        raw = _decoded(data, key)
        if raw is None:
            errs.append(FieldError.required(data_path.key(key)))
        elif (problem := _go_json_error(raw)) is not None:
            errs.append(FieldError.invalid(data_path.key(key), _REDACTED, problem))
    elif kind == "kubernetes.io/basic-auth":
        if "username" not in data and "password" not in data:
            errs.append(FieldError.required(data_path.key("username")))
            errs.append(FieldError.required(data_path.key("password")))
    elif kind == "kubernetes.io/ssh-auth":
        if not _decoded(data, "ssh-privatekey"):
            errs.append(FieldError.required(data_path.key("ssh-privatekey")))
    elif kind == "kubernetes.io/tls":
        for key in ("tls.crt", "tls.key"):
            if key not in data:
                errs.append(FieldError.required(data_path.key(key)))
    return errs


def validate_secret_update(new: Obj, old: Obj) -> list[FieldError]:
    """A Secret update: ``type`` never changes, and an immutable Secret keeps its data."""
    errs = validate_core_meta_update(obj_of(new.get("metadata")), obj_of(old.get("metadata")))
    errs += validate_immutable(new.get("type") or "", old.get("type") or "", Path("type"))
    if old.get("immutable"):
        if not new.get("immutable"):
            errs.append(FieldError.forbidden("immutable", _IMMUTABLE_SET))
        if (new.get("data") or None) != (old.get("data") or None):
            errs.append(FieldError.forbidden("data", _IMMUTABLE_SET))
    return errs + validate_secret(new)


# --- ServiceAccount ------------------------------------------------------------------------------

def validate_service_account(service_account: Obj) -> list[FieldError]:
    return validate_core_meta(obj_of(service_account.get("metadata")), namespaced=True)


def validate_service_account_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_core_meta_update(obj_of(new.get("metadata")), obj_of(old.get("metadata")))
    return errs + validate_service_account(new)


# --- Endpoints -----------------------------------------------------------------------------------

def _validate_endpoint_address(address: Obj, path: Path) -> list[FieldError]:
    ip = address.get("ip") or ""
    errs = validate_ip(ip, path.child("ip"))
    if address.get("hostname"):
        errs += validate_dns1123_label(address["hostname"], path.child("hostname"))
    node_name = address.get("nodeName")
    if node_name is not None:
        errs += [FieldError.invalid(path.child("nodeName"), node_name, msg)
                 for msg in name_is_dns1123_subdomain(node_name, False)]
    return errs + validate_non_special_ip(ip, path.child("ip"))


def _validate_endpoint_port(port: Obj, require_name: bool, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    name = port.get("name") or ""
    if require_name and not name:
        errs.append(FieldError.required(path.child("name")))
    elif name:
        errs += validate_dns1123_label(name, path.child("name"))
    errs += validate_port_number(int(port.get("port") or 0), path.child("port"))
    errs += enum_errors(port.get("protocol"), path.child("protocol"), PROTOCOLS)
    if port.get("appProtocol") is not None:
        errs += validate_qualified_name(port["appProtocol"], path.child("appProtocol"))
    return errs


def validate_endpoints(endpoints: Obj) -> list[FieldError]:
    """``ValidateEndpoints``: every subset has addresses, each a routable IP, and named ports if several."""
    errs = validate_core_meta(obj_of(endpoints.get("metadata")), namespaced=True)
    for i, subset in enumerate(list_of(endpoints.get("subsets"))):
        path = Path("subsets").index(i)
        addresses, not_ready = list_of(subset.get("addresses")), list_of(subset.get("notReadyAddresses"))
        if not addresses and not not_ready:
            errs.append(FieldError.required(path, "must specify `addresses` or `notReadyAddresses`"))
        for key, items in (("addresses", addresses), ("notReadyAddresses", not_ready)):
            for j, address in enumerate(items):
                errs += _validate_endpoint_address(obj_of(address), path.child(key).index(j))
        ports = list_of(subset.get("ports"))
        for j, port in enumerate(ports):
            errs += _validate_endpoint_port(obj_of(port), len(ports) > 1, path.child("ports").index(j))
    return errs


def validate_endpoints_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_core_meta_update(obj_of(new.get("metadata")), obj_of(old.get("metadata")))
    return errs + validate_endpoints(new)


# --- ResourceQuota -------------------------------------------------------------------------------

_QUOTA_SCOPES: Final = ("Terminating", "NotTerminating", "BestEffort", "NotBestEffort", "PriorityClass",
                        "CrossNamespacePodAffinity")
_POD_COUNT_QUOTA: Final = frozenset({"pods"})
_POD_COMPUTE_QUOTA: Final = frozenset({"cpu", "memory", "limits.cpu", "limits.memory", "requests.cpu",
                                       "requests.memory"})
_CONFLICTING_SCOPES: Final = (("BestEffort", "NotBestEffort"), ("Terminating", "NotTerminating"))
_EXISTS_ONLY_SCOPES: Final = frozenset({"BestEffort", "NotBestEffort", "Terminating", "NotTerminating",
                                        "CrossNamespacePodAffinity"})


def _scope_fits_resource(scope: str, resource: str) -> bool:
    """``IsResourceQuotaScopeValidForResource``: which resources a scope can count."""
    if scope in ("Terminating", "NotTerminating", "NotBestEffort", "PriorityClass", "CrossNamespacePodAffinity"):
        return resource in _POD_COUNT_QUOTA or resource in _POD_COMPUTE_QUOTA
    if scope == "BestEffort":
        return resource in _POD_COUNT_QUOTA
    return True


def _validate_quota_resources(resources: Obj, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    for name, raw in resources.items():
        errs += validate_quota_resource_name(name, path.key(name))
        validate_quantity(name, raw, path.key(name), errs)
    return errs


def _validate_quota_spec(spec: Obj, path: Path) -> list[FieldError]:
    hard = obj_of(spec.get("hard"))
    errs = _validate_quota_resources(hard, path.child("hard"))
    scopes = [str(s) for s in list_of(spec.get("scopes"))]
    scopes_path = path.child("scopes")
    standard_hard = sorted(name for name in hard if is_standard_quota_resource(name))
    for scope in scopes:
        if scope not in _QUOTA_SCOPES:
            errs.append(FieldError.invalid(scopes_path, scopes, "unsupported scope"))
        for name in standard_hard:
            if not _scope_fits_resource(scope, name):
                errs.append(FieldError.invalid(scopes_path, scopes, "unsupported scope applied to resource"))
    errs += [FieldError.invalid(scopes_path, scopes, "conflicting scopes")
             for pair in _CONFLICTING_SCOPES if set(pair) <= set(scopes)]
    selector = spec.get("scopeSelector")
    if selector is not None:
        errs += _validate_scope_selector(obj_of(selector), standard_hard, spec.get("scopes"),
                                         path.child("scopeSelector", "matchExpressions"))
    return errs


def _validate_scope_selector(selector: Obj, standard_hard: Sequence[str], scopes: Any,
                             path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: set[str] = set()
    for req in list_of(selector.get("matchExpressions")):
        req = obj_of(req)
        scope, operator = req.get("scopeName") or "", req.get("operator") or ""
        values = list_of(req.get("values"))
        if scope not in _QUOTA_SCOPES:
            errs.append(FieldError.invalid(path.child("scopeName"), scope, "unsupported scope"))
        for name in standard_hard:
            if not _scope_fits_resource(scope, name):
                errs.append(FieldError.invalid(path, dict(selector), "unsupported scope applied to resource"))
        if scope in _EXISTS_ONLY_SCOPES and operator != "Exists":
            errs.append(FieldError.invalid(
                path.child("operator"), operator,
                "must be 'Exists' when scope is any of ResourceQuotaScopeTerminating, "
                "ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or "
                "ResourceQuotaScopeCrossNamespacePodAffinity"))
        if operator in ("In", "NotIn"):
            if not values:
                errs.append(FieldError.required(
                    path.child("values"), "must be at least one value when `operator` is 'In' or 'NotIn' for scope "
                                          "selector"))
        elif operator in ("Exists", "DoesNotExist"):
            if values:
                errs.append(FieldError.invalid(
                    path.child("values"), list(values),
                    "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector"))
        else:
            errs.append(FieldError.invalid(path.child("operator"), operator, "not a valid selector operator"))
        seen.add(scope)
    errs += [FieldError.invalid(path, scopes, "conflicting scopes") for pair in _CONFLICTING_SCOPES
             if set(pair) <= seen]
    return errs


def _validate_quota_status(status: Obj) -> list[FieldError]:
    errs = _validate_quota_resources(obj_of(status.get("hard")), STATUS.child("hard"))
    return errs + _validate_quota_resources(obj_of(status.get("used")), STATUS.child("used"))


def validate_resource_quota(quota: Obj) -> list[FieldError]:
    """``ValidateResourceQuota``: resource names and amounts, and scopes that fit what is limited."""
    errs = validate_core_meta(obj_of(quota.get("metadata")), namespaced=True)
    errs += _validate_quota_spec(obj_of(quota.get("spec")), SPEC)
    return errs + _validate_quota_status(obj_of(quota.get("status")))


def validate_resource_quota_update(new: Obj, old: Obj) -> list[FieldError]:
    """A quota's scopes are fixed at creation."""
    errs = validate_core_meta_update(obj_of(new.get("metadata")), obj_of(old.get("metadata")))
    new_spec = obj_of(new.get("spec"))
    errs += _validate_quota_spec(new_spec, SPEC)
    new_scopes = list_of(new_spec.get("scopes"))
    if set(new_scopes) != set(list_of(obj_of(old.get("spec")).get("scopes"))):
        errs.append(FieldError.invalid(SPEC.child("scopes"), list(new_scopes) or None, "field is immutable"))
    return errs


def validate_resource_quota_status_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_core_meta_update(obj_of(new.get("metadata")), obj_of(old.get("metadata")))
    return errs + _validate_quota_status(obj_of(new.get("status")))


# --- LimitRange ----------------------------------------------------------------------------------

_LIMIT_KEYS: Final = ("max", "min", "default", "defaultRequest", "maxLimitRequestRatio")


def _go_float(value: float) -> str:
    """Go's ``%f``: six decimals, ``+Inf`` for infinity."""
    if value == float("inf"):
        return "+Inf"
    return f"{value:.6f}"


def _validate_limit_item(item: Obj, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    limit_type = str(item.get("type") or "")
    errs += validate_limit_type(limit_type, path.child("type"))
    parsed: dict[str, dict[str, Decimal]] = {key: {} for key in _LIMIT_KEYS}
    shown: dict[str, dict[str, str]] = {key: {} for key in _LIMIT_KEYS}
    for key in _LIMIT_KEYS:
        values = obj_of(item.get(key))
        if limit_type == "Pod" and key in ("default", "defaultRequest"):
            if values:
                errs.append(FieldError.forbidden(path.child(key), "may not be specified when `type` is 'Pod'"))
            continue
        for name, raw in values.items():
            errs += validate_limit_range_resource_name(limit_type, name, path.child(key).key(name))
            try:
                parsed[key][name] = parse_quantity(raw)
            except ValueError as e:
                errs.append(FieldError.invalid(path.child(key).key(name), raw, str(e)))
                continue
            shown[key][name] = canonical_quantity(name, raw)
    if limit_type == "PersistentVolumeClaim" and "storage" not in obj_of(item.get("min")) and \
            "storage" not in obj_of(item.get("max")):
        errs.append(FieldError.required(path.child("limits"),
                                        "either minimum or maximum storage value is required, but neither was "
                                        "provided"))
    names_ = sorted(set().union(*(parsed[key] for key in _LIMIT_KEYS)))
    for name in names_:
        low, high = parsed["min"].get(name), parsed["max"].get(name)
        default, request = parsed["default"].get(name), parsed["defaultRequest"].get(name)
        ratio = parsed["maxLimitRequestRatio"].get(name)

        def q(key: str, name: str = name) -> str:
            return shown[key][name]

        if low is not None and high is not None and low > high:
            errs.append(FieldError.invalid(path.child("min").key(name), q("min"),
                                           f"min value {q('min')} is greater than max value {q('max')}"))
        if request is not None and low is not None and low > request:
            errs.append(FieldError.invalid(path.child("defaultRequest").key(name), q("defaultRequest"),
                                           f"min value {q('min')} is greater than default request value "
                                           f"{q('defaultRequest')}"))
        if request is not None and high is not None and request > high:
            errs.append(FieldError.invalid(path.child("defaultRequest").key(name), q("defaultRequest"),
                                           f"default request value {q('defaultRequest')} is greater than max value "
                                           f"{q('max')}"))
        if request is not None and default is not None and request > default:
            errs.append(FieldError.invalid(path.child("defaultRequest").key(name), q("defaultRequest"),
                                           f"default request value {q('defaultRequest')} is greater than default "
                                           f"limit value {q('default')}"))
        if default is not None and low is not None and low > default:
            errs.append(FieldError.invalid(path.child("default").key(name), q("min"),
                                           f"min value {q('min')} is greater than default value {q('default')}"))
        if default is not None and high is not None and default > high:
            errs.append(FieldError.invalid(path.child("default").key(name), q("max"),
                                           f"default value {q('default')} is greater than max value {q('max')}"))
        if ratio is not None and ratio < 1:
            errs.append(FieldError.invalid(path.child("maxLimitRequestRatio").key(name), q("maxLimitRequestRatio"),
                                           f"ratio {q('maxLimitRequestRatio')} is less than 1"))
        if ratio is not None and low is not None and high is not None:
            limit = float(high) / float(low) if low else float("inf")
            if float(ratio) > limit:
                errs.append(FieldError.invalid(path.child("maxLimitRequestRatio").key(name),
                                               q("maxLimitRequestRatio"),
                                               f"ratio {q('maxLimitRequestRatio')} is greater than max/min = "
                                               f"{_go_float(limit)}"))
        if not is_overcommit_allowed(name) and default is not None and request is not None and default != request:
            errs.append(FieldError.invalid(path.child("defaultRequest").key(name), q("defaultRequest"),
                                           f"default value {q('default')} must equal to defaultRequest value "
                                           f"{q('defaultRequest')} in {name}"))
    return errs


def validate_limit_range(limit_range: Obj) -> list[FieldError]:
    """``ValidateLimitRange``: one item per type, resource names it may limit, and consistent bounds."""
    errs = validate_core_meta(obj_of(limit_range.get("metadata")), namespaced=True)
    seen: set[str] = set()
    path = SPEC.child("limits")
    for i, item in enumerate(list_of(obj_of(limit_range.get("spec")).get("limits"))):
        item = obj_of(item)
        limit_type = str(item.get("type") or "")
        if limit_type in seen:
            errs.append(FieldError.duplicate(path.index(i).child("type"), limit_type))
        seen.add(limit_type)
        errs += _validate_limit_item(item, path.index(i))
    return errs


def validate_limit_range_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_core_meta_update(obj_of(new.get("metadata")), obj_of(old.get("metadata")))
    return errs + validate_limit_range(new)
