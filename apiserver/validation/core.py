"""Validation of the core/v1 kinds kubesim serves: Pods, Bindings, RCs, Nodes, Namespaces and Events.

This follows ``pkg/apis/core/validation`` of Kubernetes 1.32 rule by rule,
with the feature gates at their 1.32 defaults, so that a bad object is
refused with the very paths and words a real cluster uses. Where Kubernetes
reports an odd path (``metadata.taints`` for a Node's ``spec.taints``,
``status.Phase``, ``spec.template.labels``) the oddity is kept, because
clients match on it.

Each kind has ``validate_<kind>(obj)`` for a create and
``validate_<kind>_update(new, old)`` for an update; kinds with a status
subresource also have ``validate_<kind>_status_update(new, old)``. They take
wire-form dicts that the APIServer has already type-checked against the
official models and defaulted, and return every problem found (an empty list
means valid); they never raise on bad input.

Not covered, because kubesim has nothing they could act on: Windows and
AppArmor options, resource claims (DRA), seccomp/AppArmor annotations, the
deeper checks of cloud volume sources (their presence still counts towards
"exactly one volume source"), and downward-API divisors.

Pure functions over plain dicts; no state.
"""

from __future__ import annotations

import copy
import functools
import ipaddress
import re
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal
from typing import Any, Final

from apiserver.validation.field import FieldError, Path, render_value
from apiserver.validation.meta import (
    IS_NEGATIVE,
    METADATA,
    NameRule,
    name_is_dns1123_label,
    name_is_dns1123_subdomain,
    name_is_path_segment,
    validate_annotations,
    validate_dns1123_label,
    validate_dns1123_subdomain,
    validate_immutable,
    validate_label_selector,
    validate_labels,
    validate_nonnegative,
    validate_object_meta,
    validate_object_meta_update,
    validate_qualified_name,
)
from machinery.api import names
from machinery.api.quantity import QuantityValue, format_quantity, milli_value, parse_quantity
from machinery.api.quantity import value as whole_value

Obj = Mapping[str, Any]

SPEC: Final = Path("spec")
STATUS: Final = Path("status")

_MAX_INT32: Final = 2**31 - 1
_NOT_POSITIVE: Final = "must be greater than zero"
_FILE_MODE: Final = "must be a number between 0 and 0777 (octal), both inclusive"
_MULTIPLE_VOLUME_TYPES: Final = "may not specify more than 1 volume type"
_MULTIPLE_HANDLERS: Final = "may not specify more than 1 handler type"
_WHITESPACE: Final = "must not have leading or trailing whitespace"
_NOT_TERMINATED: Final = "may not be transitioned to non-terminated state"
_RELAXED_ENV_VAR_NAME: Final = ("a valid environment variable name must consist only of printable ASCII "
                                "characters other than '='")

_MIRROR_POD_ANNOTATION: Final = "kubernetes.io/config.mirror"
_DELETION_COST_ANNOTATION: Final = "controller.kubernetes.io/pod-deletion-cost"

_RESTART_POLICIES: Final = ("Always", "OnFailure", "Never")
_DNS_POLICIES: Final = ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None")
_PULL_POLICIES: Final = ("Always", "IfNotPresent", "Never")
_TERMINATION_MESSAGE_POLICIES: Final = ("File", "FallbackToLogsOnError")
_PROTOCOLS: Final = ("SCTP", "TCP", "UDP")
_PREEMPTION_POLICIES: Final = ("PreemptLowerPriority", "Never")
_TAINT_EFFECTS: Final = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_TOLERATION_OPERATORS: Final = ("Equal", "Exists")
_SCHEMES: Final = ("HTTP", "HTTPS")
_HOST_PATH_TYPES: Final = ("", "BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate", "File",
                           "FileOrCreate", "Socket")
_MOUNT_PROPAGATIONS: Final = ("Bidirectional", "HostToContainer", "None")
_RECURSIVE_READ_ONLY: Final = ("Disabled", "Enabled", "IfPossible")
_SECCOMP_TYPES: Final = ("Localhost", "RuntimeDefault", "Unconfined")
_PROC_MOUNTS: Final = ("Default", "Unmasked")
_FS_GROUP_CHANGE_POLICIES: Final = ("Always", "OnRootMismatch")
_WHEN_UNSATISFIABLE: Final = ("DoNotSchedule", "ScheduleAnyway")
_NODE_INCLUSION_POLICIES: Final = ("Honor", "Ignore")
_OPERATING_SYSTEMS: Final = ("linux", "windows")
_RESIZE_RESOURCES: Final = ("cpu", "memory")
#: Huge pages alone do not make a Pod's QoS: Kubernetes wants cpu or memory beside them.
_QOS_RESOURCES: Final = frozenset({"cpu", "memory"})
_RESIZE_POLICIES: Final = ("NotRequired", "RestartContainer")
_SYSTEM_POD_CONDITIONS: Final = frozenset({"PodScheduled", "Ready", "Initialized"})
_STANDARD_FINALIZERS: Final = frozenset({"kubernetes", "orphan", "foregroundDeletion"})

_STANDARD_CONTAINER_RESOURCES: Final = frozenset({"cpu", "memory", "ephemeral-storage"})
_STANDARD_RESOURCES: Final = frozenset({
    "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory", "requests.ephemeral-storage",
    "limits.cpu", "limits.memory", "limits.ephemeral-storage", "pods", "resourcequotas", "services",
    "replicationcontrollers", "secrets", "configmaps", "persistentvolumeclaims", "storage",
    "requests.storage", "services.nodeports", "services.loadbalancers",
})
_INTEGER_RESOURCES: Final = frozenset({
    "pods", "resourcequotas", "services", "replicationcontrollers", "secrets", "configmaps",
    "persistentvolumeclaims", "services.nodeports", "services.loadbalancers",
})

#: The volume sources in the order Kubernetes checks them, with the name its
#: "more than 1 volume type" error uses (two of them differ from the wire key).
_VOLUME_SOURCES: Final = (
    ("emptyDir", "emptyDir"), ("hostPath", "hostPath"), ("gitRepo", "gitRepo"),
    ("gcePersistentDisk", "gcePersistentDisk"), ("awsElasticBlockStore", "awsElasticBlockStore"),
    ("secret", "secret"), ("nfs", "nfs"), ("iscsi", "iscsi"), ("glusterfs", "glusterfs"),
    ("flocker", "flocker"), ("persistentVolumeClaim", "persistentVolumeClaim"), ("rbd", "rbd"),
    ("cinder", "cinder"), ("cephfs", "cephFS"), ("quobyte", "quobyte"), ("downwardAPI", "downwarAPI"),
    ("fc", "fc"), ("flexVolume", "flexVolume"), ("configMap", "configMap"), ("azureFile", "azureFile"),
    ("vsphereVolume", "vsphereVolume"), ("photonPersistentDisk", "photonPersistentDisk"),
    ("portworxVolume", "portworxVolume"), ("azureDisk", "azureDisk"), ("storageos", "storageos"),
    ("projected", "projected"), ("scaleIO", "scaleIO"), ("csi", "csi"), ("ephemeral", "ephemeral"),
    ("image", "image"),
)

_ENV_FIELD_PATHS: Final = ("metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName",
                           "spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP",
                           "status.podIPs")
_VOLUME_FIELD_PATHS: Final = ("metadata.annotations", "metadata.labels", "metadata.name",
                              "metadata.namespace", "metadata.uid")
#: Every field path the downward API can convert (``ConvertDownwardAPIFieldLabel``).
_DOWNWARD_API_FIELD_PATHS: Final = frozenset({
    "metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid",
    "spec.nodeName", "spec.restartPolicy", "spec.serviceAccountName", "spec.schedulerName", "status.phase",
    "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs", "spec.host",
})
_RESOURCE_FIELD_PATHS: Final = ("limits.cpu", "limits.ephemeral-storage", "limits.memory", "requests.cpu",
                                "requests.ephemeral-storage", "requests.memory")

_UPDATABLE_POD_SPEC_FIELDS: Final = (
    "`spec.containers[*].image`",
    "`spec.initContainers[*].image`",
    "`spec.activeDeadlineSeconds`",
    "`spec.tolerations` (only additions to existing tolerations)",
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
)

_PORT_NAME_CHARSET: Final = re.compile(r"^[-a-z0-9]+$")
_HTTP_HEADER_NAME: Final = re.compile(r"^[-A-Za-z0-9]+$")
_CONFIG_MAP_KEY: Final = re.compile(r"^[-._a-zA-Z0-9]+$")
_SYSCTL_SEGMENT: Final = "[a-z0-9]([-_a-z0-9]*[a-z0-9])?"
_SYSCTL_NAME: Final = re.compile(rf"^({_SYSCTL_SEGMENT}[\./])*{_SYSCTL_SEGMENT}$")
_IPV4_SLOPPY: Final = re.compile(r"^\d{1,3}(\.\d{1,3}){3}$")


# --- small helpers ---------------------------------------------------------------------------

def _obj(value: Any) -> Obj:
    """A nested object, or an empty one when absent or null."""
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> Sequence[Any]:
    return value if isinstance(value, list) else []


def _enum(value: str | None, path: Path, supported: Sequence[str]) -> list[FieldError]:
    """An enumerated field: Required when empty, NotSupported when unknown."""
    if not value:
        return [FieldError.required(path)]
    if value not in supported:
        return [FieldError.not_supported(path, value, supported)]
    return []


def _range_error(lo: int, hi: int) -> str:
    return f"must be between {lo} and {hi}, inclusive"


def _in_range(value: int, path: Path, lo: int, hi: int) -> list[FieldError]:
    if lo <= value <= hi:
        return []
    return [FieldError.invalid(path, value, _range_error(lo, hi))]


def _port_name_errors(port: str) -> list[str]:
    errs: list[str] = []
    if len(port) > 15:
        errs.append("must be no more than 15 characters")
    if not _PORT_NAME_CHARSET.match(port):
        errs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not re.search("[a-z]", port):
        errs.append("must contain at least one letter (a-z)")
    if "--" in port:
        errs.append("must not contain consecutive hyphens")
    if port and (port[0] == "-" or port[-1] == "-"):
        errs.append("must not begin or end with a hyphen")
    return errs


def _validate_port_num_or_name(port: object, path: Path) -> list[FieldError]:
    if isinstance(port, str):
        return [FieldError.invalid(path, port, msg) for msg in _port_name_errors(port)]
    if isinstance(port, int):
        return _in_range(port, path, 1, 65535)
    return [FieldError.internal(path, f"unknown type: {type(port).__name__}")]


def _relaxed_env_var_name_errors(name: str) -> list[str]:
    # Kubernetes 1.32 enables RelaxedEnvironmentVariableValidation by default.
    if any(not 0x20 <= ord(ch) <= 0x7E or ch == "=" for ch in name):
        return [_RELAXED_ENV_VAR_NAME]
    return []


def _config_map_key_errors(key: str) -> list[str]:
    errs: list[str] = []
    if len(key) > names.DNS1123_SUBDOMAIN_MAX_LENGTH:
        errs.append(f"must be no more than {names.DNS1123_SUBDOMAIN_MAX_LENGTH} characters")
    if not _CONFIG_MAP_KEY.match(key):
        errs.append("a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. "
                    "'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is "
                    "'[-._a-zA-Z0-9]+')")
    if key == ".":
        errs.append("must not be '.'")
    elif key == "..":
        errs.append("must not be '..'")
    elif key.startswith(".."):
        errs.append("must not start with '..'")
    return errs


def _parse_ip(value: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """Go's ``ParseIPSloppy``: like ``net.ParseIP``, but IPv4 octets may have leading zeros."""
    if "%" in value:
        return None
    try:
        return ipaddress.ip_address(value)
    except ValueError:
        pass
    if _IPV4_SLOPPY.match(value) and all(int(part) <= 255 for part in value.split(".")):
        return ipaddress.IPv4Address(".".join(str(int(part)) for part in value.split(".")))
    return None


def _parse_cidr(value: str) -> int | None:
    """The IP version of a CIDR as Go's ``ParseCIDRSloppy`` accepts it (host bits allowed), else None."""
    address, slash, prefix = value.partition("/")
    ip = _parse_ip(address)
    if not slash or ip is None or not prefix.isdigit() or int(prefix) > ip.max_prefixlen:
        return None
    return ip.version


def _validate_ip(value: str, path: Path) -> list[FieldError]:
    if _parse_ip(value) is None:
        return [FieldError.invalid(path, value,
                                   "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)")]
    return []


def _is_dual_stack(versions: Sequence[int]) -> bool:
    return 4 in versions and 6 in versions


# --- resources -------------------------------------------------------------------------------

def _is_native_resource(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


def _is_huge_pages(name: str) -> bool:
    return name.startswith("hugepages-")


def _is_extended_resource(name: str) -> bool:
    if _is_native_resource(name) or name.startswith("requests."):
        return False
    return not names.is_qualified_name("requests." + name)


def _is_overcommit_allowed(name: str) -> bool:
    return _is_native_resource(name) and not _is_huge_pages(name)


def _is_integer_resource(name: str) -> bool:
    return name in _INTEGER_RESOURCES or _is_extended_resource(name)


def _validate_resource_name(name: str, path: Path) -> list[FieldError]:
    errs = validate_qualified_name(name, path)
    if errs:
        return errs
    standard = name in _STANDARD_RESOURCES or name.startswith(("hugepages-", "requests.hugepages-"))
    if "/" not in name and not standard:
        return [FieldError.invalid(path, name, "must be a standard resource type or fully qualified")]
    return []


def _validate_container_resource_name(name: str, path: Path) -> list[FieldError]:
    errs = _validate_resource_name(name, path)
    if "/" not in name:
        if name not in _STANDARD_CONTAINER_RESOURCES and not _is_huge_pages(name):
            errs.append(FieldError.invalid(path, name, "must be a standard resource for containers"))
    elif not _is_native_resource(name) and not _is_extended_resource(name):
        errs.append(FieldError.invalid(path, name, "doesn't follow extended resource name standard"))
    return errs


def _canonical(resource: str, raw: QuantityValue) -> str:
    """A quantity as Kubernetes prints it back in messages (``2000m`` reads ``2``)."""
    return format_quantity(milli_value(raw), resource)


def _validate_quantity(resource: str, raw: QuantityValue, path: Path,
                       errs: list[FieldError]) -> Decimal | None:
    """``ValidateResourceQuantityValue``; returns the parsed quantity, or None when it does not parse.

    Kubernetes refuses an unparsable quantity while decoding, with this same
    message; kubesim decodes into plain dicts, so it reports it here.
    """
    try:
        quantity = parse_quantity(raw)
    except ValueError as e:
        errs.append(FieldError.invalid(path, raw, str(e)))
        return None
    if quantity < 0:
        errs.append(FieldError.invalid(path, _canonical(resource, raw), IS_NEGATIVE))
    if _is_integer_resource(resource) and milli_value(raw) % 1000 != 0:
        errs.append(FieldError.invalid(path, _canonical(resource, raw), "must be an integer"))
    return quantity


def _validate_container_resource(resource: str, raw: QuantityValue, path: Path,
                                 errs: list[FieldError]) -> Decimal | None:
    """One entry of a container's limits or requests: its name, its quantity, and whole huge pages."""
    errs += _validate_container_resource_name(resource, path)
    quantity = _validate_quantity(resource, raw, path, errs)
    if quantity is not None and _is_huge_pages(resource):
        size = resource.removeprefix("hugepages-")
        try:
            page = milli_value(size)
            whole_pages = page > 0 and page % 1000 == 0 and whole_value(raw) % whole_value(size) == 0
        except ValueError:
            whole_pages = False
        if not whole_pages:
            shown = _canonical(resource, raw)
            errs.append(FieldError.invalid(path, shown,
                                           f"{shown} is not positive integer multiple of {resource}"))
    return quantity


def _validate_resource_requirements(requirements: Obj, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    lim_path, req_path = path.child("limits"), path.child("requests")
    limits, requests = _obj(requirements.get("limits")), _obj(requirements.get("requests"))
    parsed_limits = {resource: _validate_container_resource(resource, raw, lim_path.key(resource), errs)
                     for resource, raw in limits.items()}
    for resource, raw in requests.items():
        quantity = _validate_container_resource(resource, raw, req_path.key(resource), errs)
        if resource not in limits:
            if not _is_overcommit_allowed(resource):
                errs.append(FieldError.required(lim_path,
                                                "Limit must be set for non overcommitable resources"))
            continue
        limit = parsed_limits[resource]
        if quantity is None or limit is None:
            continue
        # Kubernetes reports these on the requests map, not on the entry.
        shown, shown_limit = _canonical(resource, raw), _canonical(resource, limits[resource])
        if quantity != limit and not _is_overcommit_allowed(resource):
            errs.append(FieldError.invalid(req_path, shown,
                                           f"must be equal to {resource} limit of {shown_limit}"))
        elif quantity > limit:
            errs.append(FieldError.invalid(
                req_path, shown, f"must be less than or equal to {resource} limit of {shown_limit}"))
    named = set(limits) | set(requests)
    if any(_is_huge_pages(r) for r in named) and not named & _QOS_RESOURCES:
        errs.append(FieldError.forbidden(path, "HugePages require cpu or memory"))
    return errs


# --- metadata shared by the core kinds ----------------------------------------------------------

def _kube_finalizer_errors(name: str, path: Path) -> list[FieldError]:
    """The core group's extra finalizer rule: an unqualified name must be one Kubernetes defines."""
    if "/" not in name and name not in _STANDARD_FINALIZERS:
        return [FieldError.invalid(path, name,
                                   "name is neither a standard finalizer name nor is it fully qualified")]
    return []


def _validate_core_meta(meta: Obj, *, namespaced: bool,
                        name_rule: NameRule = name_is_dns1123_subdomain) -> list[FieldError]:
    errs = validate_object_meta(meta, namespaced=namespaced, name_rule=name_rule)
    for i, name in enumerate(_list(meta.get("finalizers"))):
        errs += _kube_finalizer_errors(name, METADATA.child("finalizers").index(i))
    return errs


def _validate_core_meta_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_object_meta_update(new, old)
    for i, name in enumerate(_list(new.get("finalizers"))):
        errs += _kube_finalizer_errors(name, METADATA.child("finalizers").index(i))
    return errs


# --- Pod: paths and files ------------------------------------------------------------------------

def _validate_local_descending_path(target: str, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    if target.startswith("/"):
        errs.append(FieldError.invalid(path, target, "must be a relative path"))
    return errs + _validate_no_backsteps(target, path)


def _validate_no_backsteps(target: str, path: Path) -> list[FieldError]:
    if ".." in target.split("/"):
        return [FieldError.invalid(path, target, "must not contain '..'")]
    return []


def _validate_local_non_reserved_path(target: str, path: Path) -> list[FieldError]:
    errs = _validate_local_descending_path(target, path)
    if target.startswith("..") and not target.startswith("../"):
        errs.append(FieldError.invalid(path, target, "must not start with '..'"))
    return errs


def _validate_mode(mode: int | None, path: Path) -> list[FieldError]:
    if mode is not None and not 0 <= mode <= 0o777:
        return [FieldError.invalid(path, mode, _FILE_MODE)]
    return []


def _validate_key_to_path(item: Obj, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    if not item.get("key"):
        errs.append(FieldError.required(path.child("key")))
    target = item.get("path") or ""
    if not target:
        errs.append(FieldError.required(path.child("path")))
    errs += _validate_local_non_reserved_path(target, path.child("path"))
    return errs + _validate_mode(item.get("mode"), path.child("mode"))


def _validate_object_field_selector(selector: Obj, supported: Sequence[str], path: Path) -> list[FieldError]:
    api_version = selector.get("apiVersion") or ""
    if not api_version:
        return [FieldError.required(path.child("apiVersion"))]
    field_path = selector.get("fieldPath") or ""
    if not field_path:
        return [FieldError.required(path.child("fieldPath"))]
    subscripted, subscript = _split_subscript(field_path)
    if api_version != "v1":
        problem = f"unsupported pod version: {api_version}"
    elif subscript is not None and subscripted not in ("metadata.annotations", "metadata.labels"):
        problem = f"field label does not support subscript: {field_path}"
    elif subscript is None and field_path not in _DOWNWARD_API_FIELD_PATHS:
        problem = f"field label not supported: {field_path}"
    else:
        problem = ""
    if problem:
        return [FieldError.invalid(path.child("fieldPath"), field_path,
                                   f"error converting fieldPath: {problem}")]
    if subscript is not None:
        key = subscript.lower() if subscripted == "metadata.annotations" else subscript
        return validate_qualified_name(key, path)
    converted = "spec.nodeName" if field_path == "spec.host" else field_path
    if converted not in supported:
        return [FieldError.not_supported(path.child("fieldPath"), converted, sorted(supported))]
    return []


def _split_subscript(field_path: str) -> tuple[str, str | None]:
    """``metadata.labels['app']`` -> (``metadata.labels``, ``app``); anything else has no subscript."""
    if not field_path.endswith("']"):
        return field_path, None
    head, sep, subscript = field_path[:-2].partition("['")
    if not sep or not head:
        return field_path, None
    return head, subscript


def _validate_resource_field_selector(selector: Obj, path: Path, *, in_volume: bool) -> list[FieldError]:
    resource = selector.get("resource") or ""
    if in_volume and not selector.get("containerName"):
        return [FieldError.required(path.child("containerName"))]
    if not resource:
        return [FieldError.required(path.child("resource"))]
    huge_pages = resource.startswith(("requests.hugepages-", "limits.hugepages-"))
    if resource not in _RESOURCE_FIELD_PATHS and not huge_pages:
        return [FieldError.not_supported(path.child("resource"), resource, _RESOURCE_FIELD_PATHS)]
    return []


def _validate_downward_api_file(item: Obj, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    target = item.get("path") or ""
    if not target:
        errs.append(FieldError.required(path.child("path")))
    errs += _validate_local_non_reserved_path(target, path.child("path"))
    field_ref, resource_ref = item.get("fieldRef"), item.get("resourceFieldRef")
    if field_ref is not None:
        errs += _validate_object_field_selector(field_ref, _VOLUME_FIELD_PATHS, path.child("fieldRef"))
        if resource_ref is not None:
            errs.append(FieldError.invalid(
                path, "resource", "fieldRef and resourceFieldRef can not be specified simultaneously"))
    elif resource_ref is not None:
        errs += _validate_resource_field_selector(resource_ref, path.child("resourceFieldRef"),
                                                  in_volume=True)
    else:
        errs.append(FieldError.required(path, "one of fieldRef and resourceFieldRef is required"))
    return errs + _validate_mode(item.get("mode"), path.child("mode"))


# --- Pod: volumes ------------------------------------------------------------------------------

def _validate_volumes(volumes: Sequence[Obj], path: Path) -> tuple[dict[str, Obj], list[FieldError]]:
    """The volumes, and those of them that are valid, by name (only those can be mounted)."""
    errs: list[FieldError] = []
    valid: dict[str, Obj] = {}
    for i, volume in enumerate(volumes):
        volume_path = path.index(i)
        name = volume.get("name") or ""
        problems = _validate_volume_source(volume, volume_path)
        if not name:
            problems.append(FieldError.required(volume_path.child("name")))
        else:
            problems += validate_dns1123_label(name, volume_path.child("name"))
        if name in valid:
            problems.append(FieldError.duplicate(volume_path.child("name"), name))
        if problems:
            errs += problems
        else:
            valid[name] = volume
    return valid, errs


def _validate_volume_source(volume: Obj, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    count = 0
    for key, name_in_error in _VOLUME_SOURCES:
        source = volume.get(key)
        if source is None:
            continue
        if count:
            errs.append(FieldError.forbidden(path.child(name_in_error), _MULTIPLE_VOLUME_TYPES))
            continue
        count += 1
        check = _VOLUME_SOURCE_CHECKS.get(key)
        if check is not None:
            errs += check(_obj(source), path.child(key))
    if not count:
        errs.append(FieldError.required(path, "must specify a volume type"))
    return errs


def _check_empty_dir(source: Obj, path: Path) -> list[FieldError]:
    limit = source.get("sizeLimit")
    if limit is not None:
        try:
            negative = parse_quantity(limit) < 0
        except ValueError:
            negative = True
        if negative:
            return [FieldError.forbidden(path.child("sizeLimit"),
                                         "SizeLimit field must be a valid resource quantity")]
    return []


def _check_host_path(source: Obj, path: Path) -> list[FieldError]:
    target = source.get("path") or ""
    if not target:
        return [FieldError.required(path.child("path"))]
    errs = _validate_no_backsteps(target, path.child("path"))
    kind = source.get("type")
    if kind is not None and kind not in _HOST_PATH_TYPES:
        errs.append(FieldError.not_supported(path.child("type"), kind, _HOST_PATH_TYPES))
    return errs


def _check_git_repo(source: Obj, path: Path) -> list[FieldError]:
    errs = [] if source.get("repository") else [FieldError.required(path.child("repository"))]
    return errs + _validate_local_descending_path(source.get("directory") or "", path.child("directory"))


def _check_keys_source(source: Obj, path: Path, *, name_key: str) -> list[FieldError]:
    """A Secret or ConfigMap volume: the object's name, a file mode, and the keys to project."""
    errs = [] if source.get(name_key) else [FieldError.required(path.child(name_key))]
    errs += _validate_mode(source.get("defaultMode"), path.child("defaultMode"))
    for i, item in enumerate(_list(source.get("items"))):
        errs += _validate_key_to_path(item, path.child("items").index(i))
    return errs


def _check_claim(source: Obj, path: Path) -> list[FieldError]:
    return [] if source.get("claimName") else [FieldError.required(path.child("claimName"))]


def _check_nfs(source: Obj, path: Path) -> list[FieldError]:
    errs = [] if source.get("server") else [FieldError.required(path.child("server"))]
    target = source.get("path") or ""
    if not target:
        errs.append(FieldError.required(path.child("path")))
    if not target.startswith("/"):
        errs.append(FieldError.invalid(path.child("path"), target, "must be an absolute path"))
    return errs


def _check_downward_api(source: Obj, path: Path) -> list[FieldError]:
    errs = _validate_mode(source.get("defaultMode"), path.child("defaultMode"))
    for item in _list(source.get("items")):
        errs += _validate_downward_api_file(item, path)
    return errs


def _check_projected(source: Obj, path: Path) -> list[FieldError]:
    errs = _validate_mode(source.get("defaultMode"), path.child("defaultMode"))
    seen: set[str] = set()

    def claim_path(target: str, value: object) -> None:
        if target in seen:
            errs.append(FieldError.invalid(path, value, "conflicting duplicate paths"))
        seen.add(target)

    for i, projection in enumerate(_list(source.get("sources"))):
        source_path = path.child("sources").index(i)
        count = 0
        for kind in ("secret", "configMap"):
            ref = projection.get(kind)
            if ref is None:
                continue
            count += 1
            kind_path = source_path.child(kind)
            if not ref.get("name"):
                errs.append(FieldError.required(kind_path.child("name")))
            for j, item in enumerate(_list(ref.get("items"))):
                errs += _validate_key_to_path(item, kind_path.child("items").index(j))
                if item.get("path"):
                    claim_path(item["path"], ref.get("name") or "")
        downward = projection.get("downwardAPI")
        if downward is not None:
            count += 1
            for item in _list(downward.get("items")):
                errs += _validate_downward_api_file(item, source_path.child("downwardAPI"))
                if item.get("path"):
                    claim_path(item["path"], item["path"])
        token = projection.get("serviceAccountToken")
        if token is not None:
            count += 1
            seconds = int(token.get("expirationSeconds") or 0)
            seconds_path = source_path.child("serviceAccountToken", "expirationSeconds")
            if seconds < 600:
                errs.append(FieldError.invalid(seconds_path, seconds,
                                               "may not specify a duration less than 10 minutes"))
            if seconds > 1 << 32:
                errs.append(FieldError.invalid(seconds_path, seconds,
                                               "may not specify a duration larger than 2^32 seconds"))
            if not token.get("path"):
                errs.append(FieldError.required(path.child("path")))
            else:
                errs += _validate_local_non_reserved_path(token["path"], path.child("path"))
        if count > 1:
            errs.append(FieldError.forbidden(source_path,
                                             "may not specify more than 1 volume type per source"))
    return errs


def _check_csi(source: Obj, path: Path) -> list[FieldError]:
    driver = source.get("driver") or ""
    errs: list[FieldError] = []
    if not driver:
        errs.append(FieldError.required(path.child("driver")))
    if len(driver) > 63:
        errs.append(FieldError.too_long(path.child("driver"), 63))
    errs += [FieldError.invalid(path.child("driver"), driver, msg)
             for msg in names.is_dns1123_subdomain(driver.lower())]
    secret = source.get("nodePublishSecretRef")
    if secret is not None:
        secret_name = secret.get("name") or ""
        if not secret_name:
            errs.append(FieldError.required(path.child("nodePublishSecretRef", "name")))
        else:
            errs += [FieldError.invalid(path.child("name"), secret_name, msg)
                     for msg in name_is_dns1123_subdomain(secret_name, False)]
    return errs


def _check_ephemeral(source: Obj, path: Path) -> list[FieldError]:
    if source.get("volumeClaimTemplate") is None:
        return [FieldError.required(path.child("volumeClaimTemplate"))]
    return []


_VOLUME_SOURCE_CHECKS: Final[dict[str, Callable[[Obj, Path], list[FieldError]]]] = {
    "emptyDir": _check_empty_dir, "hostPath": _check_host_path, "gitRepo": _check_git_repo,
    "secret": functools.partial(_check_keys_source, name_key="secretName"),
    "configMap": functools.partial(_check_keys_source, name_key="name"),
    "persistentVolumeClaim": _check_claim,
    "nfs": _check_nfs, "downwardAPI": _check_downward_api, "projected": _check_projected, "csi": _check_csi,
    "ephemeral": _check_ephemeral,
}


# --- Pod: containers ---------------------------------------------------------------------------

def _validate_ports(ports: Sequence[Obj], path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, port in enumerate(ports):
        port_path = path.index(i)
        name = port.get("name") or ""
        if name:
            problems = _port_name_errors(name)
            if problems:
                errs += [FieldError.invalid(port_path.child("name"), name, msg) for msg in problems]
            elif name in seen:
                errs.append(FieldError.duplicate(port_path.child("name"), name))
            else:
                seen.add(name)
        container_port = int(port.get("containerPort") or 0)
        if container_port == 0:
            errs.append(FieldError.required(port_path.child("containerPort")))
        else:
            errs += _in_range(container_port, port_path.child("containerPort"), 1, 65535)
        host_port = int(port.get("hostPort") or 0)
        if host_port != 0:
            errs += _in_range(host_port, port_path.child("hostPort"), 1, 65535)
        protocol = port.get("protocol") or ""
        if not protocol:
            errs.append(FieldError.required(port_path.child("protocol")))
        elif protocol not in _PROTOCOLS:
            errs.append(FieldError.not_supported(port_path.child("protocol"), protocol, _PROTOCOLS))
    return errs


def _validate_key_selector(selector: Obj, path: Path) -> list[FieldError]:
    name = selector.get("name") or ""
    errs = [FieldError.invalid(path.child("name"), name, msg)
            for msg in name_is_dns1123_subdomain(name, False)]
    key = selector.get("key") or ""
    if not key:
        errs.append(FieldError.required(path.child("key")))
    else:
        errs += [FieldError.invalid(path.child("key"), key, msg) for msg in _config_map_key_errors(key)]
    return errs


def _validate_env(env: Sequence[Obj], path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, var in enumerate(env):
        var_path = path.index(i)
        name = var.get("name") or ""
        if not name:
            errs.append(FieldError.required(var_path.child("name")))
        else:
            errs += [FieldError.invalid(var_path.child("name"), name, msg)
                     for msg in _relaxed_env_var_name_errors(name)]
        errs += _validate_env_value_from(var, var_path.child("valueFrom"))
    return errs


def _validate_env_value_from(var: Obj, path: Path) -> list[FieldError]:
    source = var.get("valueFrom")
    if source is None:
        return []
    errs: list[FieldError] = []
    count = 0
    if source.get("fieldRef") is not None:
        count += 1
        errs += _validate_object_field_selector(source["fieldRef"], _ENV_FIELD_PATHS, path.child("fieldRef"))
    if source.get("resourceFieldRef") is not None:
        count += 1
        errs += _validate_resource_field_selector(source["resourceFieldRef"], path.child("resourceFieldRef"),
                                                  in_volume=False)
    for key in ("configMapKeyRef", "secretKeyRef"):
        if source.get(key) is not None:
            count += 1
            errs += _validate_key_selector(source[key], path.child(key))
    if count == 0:
        errs.append(FieldError.invalid(path, "", "must specify one of: `fieldRef`, `resourceFieldRef`, "
                                                 "`configMapKeyRef` or `secretKeyRef`"))
    elif var.get("value"):
        errs.append(FieldError.invalid(path, "", "may not be specified when `value` is not empty"))
    elif count > 1:
        errs.append(FieldError.invalid(path, "", "may not have more than one field specified at a time"))
    return errs


def _validate_env_from(sources: Sequence[Obj], path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, source in enumerate(sources):
        source_path = path.index(i)
        prefix = source.get("prefix") or ""
        if prefix:
            errs += [FieldError.invalid(source_path.child("prefix"), prefix, msg)
                     for msg in _relaxed_env_var_name_errors(prefix)]
        count = 0
        for key in ("configMapRef", "secretRef"):
            ref = source.get(key)
            if ref is None:
                continue
            count += 1
            name = ref.get("name") or ""
            if not name:
                errs.append(FieldError.required(source_path.child(key, "name")))
            else:
                errs += [FieldError.invalid(source_path.child(key, "name"), name, msg)
                         for msg in name_is_dns1123_subdomain(name, True)]
        if count == 0:
            errs.append(FieldError.invalid(path, "", "must specify one of: `configMapRef` or `secretRef`"))
        elif count > 1:
            errs.append(FieldError.invalid(path, "", "may not have more than one field specified at a time"))
    return errs


def _validate_volume_mounts(container: Obj, volumes: Mapping[str, Obj], path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    devices = {d.get("name") or "": d.get("devicePath") or "" for d in _list(container.get("volumeDevices"))}
    mount_paths: set[str] = set()
    privileged = bool(_obj(container.get("securityContext")).get("privileged"))
    for i, mount in enumerate(_list(container.get("volumeMounts"))):
        item_path = path.index(i)
        name = mount.get("name") or ""
        target = mount.get("mountPath") or ""
        if not name:
            errs.append(FieldError.required(item_path.child("name")))
        if name not in volumes:
            errs.append(FieldError.not_found(item_path.child("name"), name))
        if not target:
            errs.append(FieldError.required(item_path.child("mountPath")))
        if target in mount_paths:
            errs.append(FieldError.invalid(item_path.child("mountPath"), target, "must be unique"))
        mount_paths.add(target)
        if name in devices:
            errs.append(FieldError.invalid(item_path.child("name"), name,
                                           "must not already exist in volumeDevices"))
        if target in devices.values():
            errs.append(FieldError.invalid(item_path.child("mountPath"), target,
                                           "must not already exist as a path in volumeDevices"))
        sub_path, sub_path_expr = mount.get("subPath") or "", mount.get("subPathExpr") or ""
        if name in volumes and volumes[name].get("image") is not None:
            if sub_path:
                errs.append(FieldError.invalid(item_path.child("subPath"), sub_path,
                                               "not allowed in image volume sources"))
            if sub_path_expr:
                errs.append(FieldError.invalid(item_path.child("subPathExpr"), sub_path_expr,
                                               "not allowed in image volume sources"))
        if sub_path:
            errs += _validate_local_descending_path(sub_path, path.child("subPath"))
        if sub_path_expr:
            if sub_path:
                errs.append(FieldError.invalid(item_path.child("subPathExpr"), sub_path_expr,
                                               "subPathExpr and subPath are mutually exclusive"))
            errs += _validate_local_descending_path(sub_path_expr, path.child("subPathExpr"))
        propagation = mount.get("mountPropagation")
        if propagation is not None:
            if propagation not in _MOUNT_PROPAGATIONS:
                errs.append(FieldError.not_supported(path.child("mountPropagation"), propagation,
                                                     _MOUNT_PROPAGATIONS))
            if propagation == "Bidirectional" and not privileged:
                errs.append(FieldError.forbidden(
                    path.child("mountPropagation"),
                    "Bidirectional mount propagation is available only to privileged containers"))
        errs += _validate_recursive_read_only(mount, path.child("recursiveReadOnly"))
    return errs


def _validate_recursive_read_only(mount: Obj, path: Path) -> list[FieldError]:
    value = mount.get("recursiveReadOnly")
    if value is None or value == "Disabled":
        return []
    if value not in _RECURSIVE_READ_ONLY:
        return [FieldError.not_supported(path, value, _RECURSIVE_READ_ONLY)]
    errs: list[FieldError] = []
    if not mount.get("readOnly"):
        errs.append(FieldError.forbidden(path, "may only be specified when readOnly is true"))
    if mount.get("mountPropagation") not in (None, "None"):
        errs.append(FieldError.forbidden(
            path, "may only be specified when mountPropagation is None or not specified"))
    return errs


def _validate_volume_devices(container: Obj, volumes: Mapping[str, Obj], path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    mounts = {m.get("name") or "": m.get("mountPath") or "" for m in _list(container.get("volumeMounts"))}
    device_paths: set[str] = set()
    device_names: set[str] = set()
    for i, device in enumerate(_list(container.get("volumeDevices"))):
        device_path = path.index(i)
        name, target = device.get("name") or "", device.get("devicePath") or ""
        volume = volumes.get(name)
        if not name:
            errs.append(FieldError.required(device_path.child("name")))
        if name in device_names:
            errs.append(FieldError.invalid(device_path.child("name"), name, "must be unique"))
        if volume is not None and volume.get("persistentVolumeClaim") is None and \
                volume.get("ephemeral") is None:
            errs.append(FieldError.invalid(
                device_path.child("name"), name,
                "can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode"))
        if volume is None:
            errs.append(FieldError.not_found(device_path.child("name"), name))
        if not target:
            errs.append(FieldError.required(device_path.child("devicePath")))
        if target in device_paths:
            errs.append(FieldError.invalid(device_path.child("devicePath"), target, "must be unique"))
        if target and ".." in target.split("/"):
            errs.append(FieldError.invalid(device_path.child("devicePath"), target,
                                           "can not contain backsteps ('..')"))
        else:
            device_paths.add(target)
        if name in mounts:
            errs.append(FieldError.invalid(device_path.child("name"), name,
                                           "must not already exist in volumeMounts"))
        if target in mounts.values():
            errs.append(FieldError.invalid(device_path.child("devicePath"), target,
                                           "must not already exist as a path in volumeMounts"))
        if name:
            device_names.add(name)
    return errs


def _validate_resize_policy(policies: Sequence[Obj], path: Path, restart_policy: str) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, policy in enumerate(policies):
        resource = policy.get("resourceName") or ""
        if resource in seen:
            errs.append(FieldError.duplicate(path.index(i), resource))
        seen.add(resource)
        restart = policy.get("restartPolicy") or ""
        for value, supported in ((resource, _RESIZE_RESOURCES), (restart, _RESIZE_POLICIES)):
            if not value:
                errs.append(FieldError.required(path))
            elif value not in supported:
                errs.append(FieldError.not_supported(path, value, supported))
        if restart_policy == "Never" and restart != "NotRequired":
            errs.append(FieldError.invalid(path, restart,
                                           "must be 'NotRequired' when `restartPolicy` is 'Never'"))
    return errs


def _validate_seccomp_profile(profile: Obj | None, path: Path) -> list[FieldError]:
    if profile is None:
        return []
    errs: list[FieldError] = []
    kind = profile.get("type") or ""
    if not kind:
        errs.append(FieldError.required(path.child("type"), "type is required when seccompProfile is set"))
    elif kind not in _SECCOMP_TYPES:
        errs.append(FieldError.not_supported(path.child("type"), kind, _SECCOMP_TYPES))
    local = profile.get("localhostProfile")
    if kind == "Localhost":
        if local is None:
            errs.append(FieldError.required(path.child("localhostProfile"),
                                            "must be set when seccomp type is Localhost"))
        else:
            errs += _validate_local_descending_path(local, path.child("localhostProfile"))
    elif local is not None:
        errs.append(FieldError.invalid(path.child("localhostProfile"), dict(profile),
                                       "can only be set when seccomp type is Localhost"))
    return errs


def _validate_container_security_context(context: Obj | None, path: Path, *,
                                         host_users: bool) -> list[FieldError]:
    if context is None:
        return []
    errs: list[FieldError] = []
    for key in ("runAsUser", "runAsGroup"):
        if context.get(key) is not None:
            errs += _in_range(context[key], path.child(key), 0, _MAX_INT32)
    proc_mount = context.get("procMount")
    if proc_mount is not None:
        if proc_mount not in _PROC_MOUNTS:
            errs.append(FieldError.not_supported(path.child("procMount"), proc_mount, _PROC_MOUNTS))
        if host_users and proc_mount == "Unmasked":
            errs.append(FieldError.invalid(path.child("procMount"), proc_mount,
                                           "`hostUsers` must be false to use `Unmasked`"))
    errs += _validate_seccomp_profile(context.get("seccompProfile"), path.child("seccompProfile"))
    if context.get("allowPrivilegeEscalation") is False:
        if context.get("privileged"):
            errs.append(FieldError.invalid(
                path, dict(context),
                "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"))
        if "CAP_SYS_ADMIN" in _list(_obj(context.get("capabilities")).get("add")):
            errs.append(FieldError.invalid(
                path, dict(context),
                "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN"))
    return errs


def _validate_container_common(container: Obj, volumes: Mapping[str, Obj], spec: Obj,
                               path: Path) -> list[FieldError]:
    """What regular and init containers share: name, image, ports, env, mounts, resources..."""
    errs: list[FieldError] = []
    name = container.get("name") or ""
    if not name:
        errs.append(FieldError.required(path.child("name")))
    else:
        errs += validate_dns1123_label(name, path.child("name"))
    if not container.get("image"):
        errs.append(FieldError.required(path.child("image")))
    errs += _enum(container.get("terminationMessagePolicy"), path.child("terminationMessagePolicy"),
                  _TERMINATION_MESSAGE_POLICIES)
    errs += _validate_ports(_list(container.get("ports")), path.child("ports"))
    errs += _validate_env(_list(container.get("env")), path.child("env"))
    errs += _validate_env_from(_list(container.get("envFrom")), path.child("envFrom"))
    errs += _validate_volume_mounts(container, volumes, path.child("volumeMounts"))
    errs += _validate_volume_devices(container, volumes, path.child("volumeDevices"))
    errs += _enum(container.get("imagePullPolicy"), path.child("imagePullPolicy"), _PULL_POLICIES)
    errs += _validate_resource_requirements(_obj(container.get("resources")), path.child("resources"))
    errs += _validate_resize_policy(_list(container.get("resizePolicy")), path.child("resizePolicy"),
                                    spec.get("restartPolicy") or "")
    host_users = spec.get("hostUsers") is not False
    errs += _validate_container_security_context(container.get("securityContext"),
                                                 path.child("securityContext"),
                                                 host_users=host_users)
    return errs


def _validate_handler(handler: Obj, kinds: Sequence[str], grace: int | None, path: Path) -> list[FieldError]:
    """Exactly one of the handler kinds (exec, httpGet, tcpSocket, grpc or sleep)."""
    errs: list[FieldError] = []
    count = 0
    for kind in kinds:
        action = handler.get(kind)
        if action is None:
            continue
        if count:
            errs.append(FieldError.forbidden(path.child(kind), _MULTIPLE_HANDLERS))
            continue
        count += 1
        errs += _validate_action(kind, _obj(action), grace, path.child(kind))
    if not count:
        errs.append(FieldError.required(path, "must specify a handler type"))
    return errs


def _validate_action(kind: str, action: Obj, grace: int | None, path: Path) -> list[FieldError]:
    if kind == "exec":
        return [] if action.get("command") else [FieldError.required(path.child("command"))]
    if kind == "httpGet":
        errs = [] if action.get("path") else [FieldError.required(path.child("path"))]
        errs += _validate_port_num_or_name(action.get("port"), path.child("port"))
        scheme = action.get("scheme") or ""
        if scheme not in _SCHEMES:
            errs.append(FieldError.not_supported(path.child("scheme"), scheme, _SCHEMES))
        for header in _list(action.get("httpHeaders")):
            header_name = header.get("name") or ""
            if not _HTTP_HEADER_NAME.match(header_name):
                errs.append(FieldError.invalid(
                    path.child("httpHeaders"), header_name,
                    "a valid HTTP header must consist of alphanumeric characters or '-' "
                    "(e.g. 'X-Header-Name', regex used for validation is '[-A-Za-z0-9]+')"))
        return errs
    if kind in ("tcpSocket", "grpc"):
        return _validate_port_num_or_name(action.get("port"), path.child("port"))
    seconds = int(action.get("seconds") or 0)
    if grace is not None and (seconds <= 0 or seconds > grace):
        return [FieldError.invalid(
            path, seconds,
            f"must be greater than 0 and less than terminationGracePeriodSeconds ({grace}). Enable "
            "AllowPodLifecycleSleepActionZeroValue feature gate for zero sleep.")]
    return []


def _validate_lifecycle(lifecycle: Obj, grace: int | None, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    for hook in ("postStart", "preStop"):
        if lifecycle.get(hook) is not None:
            errs += _validate_handler(lifecycle[hook], ("exec", "httpGet", "tcpSocket", "sleep"), grace,
                                      path.child(hook))
    return errs


def _validate_probe(probe: Obj | None, kind: str, grace: int | None, path: Path) -> list[FieldError]:
    """A liveness, readiness or startup probe."""
    if probe is None:
        return []
    errs = _validate_handler(probe, ("exec", "httpGet", "tcpSocket", "grpc"), grace, path)
    for key in ("initialDelaySeconds", "timeoutSeconds", "periodSeconds", "successThreshold",
                "failureThreshold"):
        errs += validate_nonnegative(int(probe.get(key) or 0), path.child(key))
    grace_override = probe.get("terminationGracePeriodSeconds")
    if grace_override is not None and grace_override <= 0:
        errs.append(FieldError.invalid(path.child("terminationGracePeriodSeconds"), grace_override,
                                       "must be greater than 0"))
    if kind == "readinessProbe":
        if grace_override is not None:
            errs.append(FieldError.invalid(path.child("terminationGracePeriodSeconds"), grace_override,
                                           "must not be set for readinessProbes"))
    elif (success := int(probe.get("successThreshold") or 0)) != 1:
        errs.append(FieldError.invalid(path.child("successThreshold"), success, "must be 1"))
    return errs


def _validate_probes_and_lifecycle(container: Obj, grace: int | None, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    if container.get("lifecycle") is not None:
        errs += _validate_lifecycle(container["lifecycle"], grace, path.child("lifecycle"))
    for kind in ("livenessProbe", "readinessProbe", "startupProbe"):
        errs += _validate_probe(container.get(kind), kind, grace, path.child(kind))
    return errs


def _check_host_port_conflicts(containers: Sequence[Obj], path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, container in enumerate(containers):
        for j, port in enumerate(_list(container.get("ports"))):
            host_port = int(port.get("hostPort") or 0)
            if host_port == 0:
                continue
            key = f"{port.get('protocol') or ''}/{port.get('hostIP') or ''}/{host_port}"
            if key in seen:
                errs.append(FieldError.duplicate(path.index(i).child("ports").index(j).child("hostPort"),
                                                 key))
            seen.add(key)
    return errs


def _validate_containers(spec: Obj, volumes: Mapping[str, Obj], path: Path) -> list[FieldError]:
    containers = _list(spec.get("containers"))
    if not containers:
        return [FieldError.required(path)]
    grace = spec.get("terminationGracePeriodSeconds")
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, container in enumerate(containers):
        container_path = path.index(i)
        errs += _validate_container_common(container, volumes, spec, container_path)
        name = container.get("name") or ""
        if name in seen:
            errs.append(FieldError.duplicate(container_path.child("name"), name))
        seen.add(name)
        errs += _validate_probes_and_lifecycle(container, grace, container_path)
        if container.get("restartPolicy") is not None:
            errs.append(FieldError.forbidden(container_path.child("restartPolicy"),
                                             "may not be set for non-init containers"))
    return errs + _check_host_port_conflicts(containers, path)


def _validate_init_containers(spec: Obj, volumes: Mapping[str, Obj], path: Path) -> list[FieldError]:
    grace = spec.get("terminationGracePeriodSeconds")
    seen = {c.get("name") or "" for c in _list(spec.get("containers"))}
    errs: list[FieldError] = []
    for i, container in enumerate(_list(spec.get("initContainers"))):
        container_path = path.index(i)
        errs += _validate_container_common(container, volumes, spec, container_path)
        restart_policy = container.get("restartPolicy")
        if restart_policy is not None and restart_policy != "Always":
            errs.append(FieldError.not_supported(container_path.child("restartPolicy"), restart_policy,
                                                 ("Always",)))
        name = container.get("name") or ""
        if name in seen:
            errs.append(FieldError.duplicate(container_path.child("name"), name))
        elif name:
            seen.add(name)
        # Init containers run one at a time, so only ports within one of them
        # can clash (and Kubernetes reports them all at index 0).
        errs += _check_host_port_conflicts([container], path)
        if restart_policy == "Always":
            errs += _validate_probes_and_lifecycle(container, grace, container_path)
        else:
            for key in ("lifecycle", "livenessProbe", "readinessProbe", "startupProbe"):
                if container.get(key) is not None:
                    errs.append(FieldError.forbidden(
                        container_path.child(key),
                        "may not be set for init containers without restartPolicy=Always"))
        if container.get("resizePolicy"):
            errs.append(FieldError.invalid(container_path.child("resizePolicy"), container["resizePolicy"],
                                           "must not be set for init containers"))
    return errs


# --- Pod: scheduling -----------------------------------------------------------------------------

def _validate_tolerations(tolerations: Sequence[Obj], path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, toleration in enumerate(tolerations):
        item_path = path.index(i)
        key = toleration.get("key") or ""
        operator = toleration.get("operator") or ""
        effect = toleration.get("effect") or ""
        value = toleration.get("value") or ""
        if key:
            errs += validate_qualified_name(key, item_path.child("key"))
        if not key and operator != "Exists":
            errs.append(FieldError.invalid(
                item_path.child("operator"), operator,
                'operator must be Exists when `key` is empty, which means "match all values and all keys"'))
        if toleration.get("tolerationSeconds") is not None and effect != "NoExecute":
            errs.append(FieldError.invalid(item_path.child("effect"), effect,
                                           "effect must be 'NoExecute' when `tolerationSeconds` is set"))
        if operator in ("Equal", ""):
            problems = names.is_valid_label_value(value)
            if problems:
                errs.append(FieldError.invalid(item_path.child("operator"), value, ";".join(problems)))
        elif operator == "Exists":
            if value:
                errs.append(FieldError.invalid(item_path.child("operator"), value,
                                               "value must be empty when `operator` is 'Exists'"))
        else:
            errs.append(FieldError.not_supported(item_path.child("operator"), operator,
                                                 _TOLERATION_OPERATORS))
        if effect and effect not in _TAINT_EFFECTS:
            errs.append(FieldError.not_supported(item_path.child("effect"), effect, _TAINT_EFFECTS))
    return errs


def _validate_node_selector_requirement(req: Obj, path: Path, *,
                                        allow_invalid_values: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    operator = req.get("operator") or ""
    values = _list(req.get("values"))
    if operator in ("In", "NotIn"):
        if not values:
            errs.append(FieldError.required(path.child("values"),
                                            "must be specified when `operator` is 'In' or 'NotIn'"))
    elif operator in ("Exists", "DoesNotExist"):
        if values:
            errs.append(FieldError.forbidden(
                path.child("values"), "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
    elif operator in ("Gt", "Lt"):
        if len(values) != 1:
            errs.append(FieldError.required(path.child("values"),
                                            "must be specified single value when `operator` is 'Lt' or 'Gt'"))
    else:
        errs.append(FieldError.invalid(path.child("operator"), operator, "not a valid selector operator"))
    errs += validate_qualified_name(req.get("key") or "", path.child("key"))
    if not allow_invalid_values:
        for i, value in enumerate(values):
            errs += [FieldError.invalid(path.child("values").index(i), value, msg)
                     for msg in names.is_valid_label_value(value)]
    return errs


def _validate_node_field_requirement(req: Obj, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    operator = req.get("operator") or ""
    values = _list(req.get("values"))
    if operator in ("In", "NotIn"):
        if len(values) != 1:
            errs.append(FieldError.required(
                path.child("values"),
                "must be only one value when `operator` is 'In' or 'NotIn' for node field selector"))
    else:
        errs.append(FieldError.invalid(path.child("operator"), operator, "not a valid selector operator"))
    key = req.get("key") or ""
    if key != "metadata.name":
        errs.append(FieldError.invalid(path.child("key"), key, "not a valid field selector key"))
    else:
        for i, value in enumerate(values):
            errs += [FieldError.invalid(path.child("values").index(i), value, msg)
                     for msg in name_is_dns1123_subdomain(value, False)]
    return errs


def _validate_node_selector_term(term: Obj, path: Path, *, allow_invalid_values: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    for j, req in enumerate(_list(term.get("matchExpressions"))):
        errs += _validate_node_selector_requirement(req, path.child("matchExpressions").index(j),
                                                    allow_invalid_values=allow_invalid_values)
    for j, req in enumerate(_list(term.get("matchFields"))):
        errs += _validate_node_field_requirement(req, path.child("matchFields").index(j))
    return errs


def _validate_node_affinity(affinity: Obj, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is not None:
        terms_path = path.child("requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")
        terms = _list(required.get("nodeSelectorTerms"))
        if not terms:
            errs.append(FieldError.required(terms_path, "must have at least one node selector term"))
        for i, term in enumerate(terms):
            errs += _validate_node_selector_term(term, terms_path.index(i), allow_invalid_values=False)
    preferred_path = path.child("preferredDuringSchedulingIgnoredDuringExecution")
    for i, term in enumerate(_list(affinity.get("preferredDuringSchedulingIgnoredDuringExecution"))):
        weight = int(term.get("weight") or 0)
        if not 0 < weight <= 100:
            errs.append(FieldError.invalid(preferred_path.index(i).child("weight"), weight,
                                           "must be in the range 1-100"))
        # Preferred terms may name label values that no node has yet.
        errs += _validate_node_selector_term(_obj(term.get("preference")),
                                             preferred_path.index(i).child("preference"),
                                             allow_invalid_values=True)
    return errs


def _validate_label_keys(keys: Sequence[str], selector: Obj | None, path: Path) -> list[FieldError]:
    if not keys:
        return []
    if selector is None:
        return [FieldError.forbidden(path, "must not be specified when labelSelector is not set")]
    errs: list[FieldError] = []
    for i, key in enumerate(keys):
        errs += validate_qualified_name(key, path.index(i))
    return errs


def _validate_pod_affinity_term(term: Obj, path: Path) -> list[FieldError]:
    selector = term.get("labelSelector")
    errs = validate_label_selector(selector, path.child("labelSelector"))
    errs += validate_label_selector(term.get("namespaceSelector"), path.child("namespaceSelector"))
    for namespace in _list(term.get("namespaces")):
        errs += [FieldError.invalid(path.child("namespace"), namespace, msg)
                 for msg in name_is_dns1123_label(namespace, False)]
    match_keys, mismatch_keys = _list(term.get("matchLabelKeys")), _list(term.get("mismatchLabelKeys"))
    errs += _validate_label_keys(match_keys, selector, path.child("matchLabelKeys"))
    errs += _validate_label_keys(mismatch_keys, selector, path.child("mismatchLabelKeys"))
    if selector is not None:
        selector_keys = set(_obj(selector.get("matchLabels")))
        positions = {key: i for i, key in enumerate(match_keys)}
        for expr in _list(selector.get("matchExpressions")):
            key = expr.get("key") or ""
            if key in positions and key in selector_keys:
                errs.append(FieldError.invalid(path.index(positions[key]), key,
                                               "exists in both matchLabelKeys and labelSelector"))
            selector_keys.add(key)
    for i, key in enumerate(match_keys):
        if key in mismatch_keys:
            errs.append(FieldError.invalid(path.child("matchLabelKeys").index(i), key,
                                           "exists in both matchLabelKeys and mismatchLabelKeys"))
    topology_key = term.get("topologyKey") or ""
    if not topology_key:
        errs.append(FieldError.required(path.child("topologyKey"), "can not be empty"))
    return errs + validate_qualified_name(topology_key, path.child("topologyKey"))


def _validate_pod_affinity(affinity: Obj, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    required_path = path.child("requiredDuringSchedulingIgnoredDuringExecution")
    for i, term in enumerate(_list(affinity.get("requiredDuringSchedulingIgnoredDuringExecution"))):
        errs += _validate_pod_affinity_term(term, required_path.index(i))
    preferred_path = path.child("preferredDuringSchedulingIgnoredDuringExecution")
    for i, weighted in enumerate(_list(affinity.get("preferredDuringSchedulingIgnoredDuringExecution"))):
        weight = int(weighted.get("weight") or 0)
        if not 0 < weight <= 100:
            errs.append(FieldError.invalid(preferred_path.index(i).child("weight"), weight,
                                           "must be in the range 1-100"))
        errs += _validate_pod_affinity_term(_obj(weighted.get("podAffinityTerm")),
                                            preferred_path.index(i).child("podAffinityTerm"))
    return errs


def _validate_affinity(affinity: Obj | None, path: Path) -> list[FieldError]:
    if affinity is None:
        return []
    errs: list[FieldError] = []
    if affinity.get("nodeAffinity") is not None:
        errs += _validate_node_affinity(affinity["nodeAffinity"], path.child("nodeAffinity"))
    for key in ("podAffinity", "podAntiAffinity"):
        if affinity.get(key) is not None:
            errs += _validate_pod_affinity(affinity[key], path.child(key))
    return errs


def _validate_topology_spread(constraints: Sequence[Obj], path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, constraint in enumerate(constraints):
        item_path = path.index(i)
        max_skew = int(constraint.get("maxSkew") or 0)
        if max_skew <= 0:
            errs.append(FieldError.invalid(item_path.child("maxSkew"), max_skew, _NOT_POSITIVE))
        topology_key = constraint.get("topologyKey") or ""
        if not topology_key:
            errs.append(FieldError.required(item_path.child("topologyKey"), "can not be empty"))
        action = constraint.get("whenUnsatisfiable") or ""
        if action not in _WHEN_UNSATISFIABLE:
            errs.append(FieldError.not_supported(item_path.child("whenUnsatisfiable"), action,
                                                 _WHEN_UNSATISFIABLE))
        for later in constraints[i + 1:]:
            if (later.get("topologyKey") or "") == topology_key and \
                    (later.get("whenUnsatisfiable") or "") == action:
                errs.append(FieldError.duplicate(item_path.child("{topologyKey, whenUnsatisfiable}"),
                                                 f"{{{topology_key}, {action}}}"))
                break
        min_domains = constraint.get("minDomains")
        if min_domains is not None:
            if min_domains <= 0:
                errs.append(FieldError.invalid(item_path.child("minDomains"), min_domains, _NOT_POSITIVE))
            if action != "DoNotSchedule":
                errs.append(FieldError.invalid(
                    item_path.child("minDomains"), min_domains,
                    f"can only use minDomains if whenUnsatisfiable=DoNotSchedule, not {action}"))
        for key in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
            policy = constraint.get(key)
            if policy is not None and policy not in _NODE_INCLUSION_POLICIES:
                errs.append(FieldError.not_supported(item_path.child(key), policy, _NODE_INCLUSION_POLICIES))
        selector = constraint.get("labelSelector")
        match_keys = _list(constraint.get("matchLabelKeys"))
        if match_keys:
            keys_path = item_path.child("matchLabelKeys")
            selector_keys: set[str] = set()
            if selector is None:
                errs.append(FieldError.forbidden(keys_path,
                                                 "must not be specified when labelSelector is not set"))
            else:
                selector_keys = set(_obj(selector.get("matchLabels")))
                selector_keys |= {e.get("key") or "" for e in _list(selector.get("matchExpressions"))}
            for j, key in enumerate(match_keys):
                errs += validate_qualified_name(key, keys_path.index(j))
                if key in selector_keys:
                    errs.append(FieldError.invalid(keys_path.index(j), key,
                                                   "exists in both matchLabelKeys and labelSelector"))
        errs += validate_label_selector(selector, item_path.child("labelSelector"))
    return errs


# --- Pod: spec -----------------------------------------------------------------------------------

def _validate_pod_security_context(spec: Obj, path: Path) -> list[FieldError]:
    context = spec.get("securityContext")
    if context is None:
        return []
    errs: list[FieldError] = []
    for key in ("fsGroup", "runAsUser", "runAsGroup"):
        if context.get(key) is not None:
            errs += _in_range(context[key], path.child(key), 0, _MAX_INT32)
    for i, gid in enumerate(_list(context.get("supplementalGroups"))):
        errs += _in_range(gid, path.child("supplementalGroups").index(i), 0, _MAX_INT32)
    if spec.get("shareProcessNamespace") and spec.get("hostPID"):
        errs.append(FieldError.invalid(path.child("shareProcessNamespace"), True,
                                       "ShareProcessNamespace and HostPID cannot both be enabled"))
    seen: set[str] = set()
    for i, sysctl in enumerate(_list(context.get("sysctls"))):
        name_path = path.child("sysctls").index(i).child("name")
        name = sysctl.get("name") or ""
        if not name:
            errs.append(FieldError.required(name_path))
        elif len(name) > 253 or not _SYSCTL_NAME.match(name):
            errs.append(FieldError.invalid(
                name_path, name, f"must have at most 253 characters and match regex {_SYSCTL_NAME.pattern}"))
        elif name in seen:
            errs.append(FieldError.duplicate(name_path, name))
        seen.add(name)
    policy = context.get("fsGroupChangePolicy")
    if policy is not None and policy not in _FS_GROUP_CHANGE_POLICIES:
        errs.append(FieldError.not_supported(path.child("fsGroupChangePolicy"), policy,
                                             _FS_GROUP_CHANGE_POLICIES))
    return errs + _validate_seccomp_profile(context.get("seccompProfile"), path.child("seccompProfile"))


def _validate_dns_config(spec: Obj, path: Path) -> list[FieldError]:
    config = spec.get("dnsConfig")
    if spec.get("dnsPolicy") == "None":
        if config is None:
            return [FieldError.required(path, "must provide `dnsConfig` when `dnsPolicy` is None")]
        if not config.get("nameservers"):
            return [FieldError.required(path.child("nameservers"),
                                        "must provide at least one DNS nameserver when `dnsPolicy` is None")]
    if config is None:
        return []
    errs: list[FieldError] = []
    nameservers = _list(config.get("nameservers"))
    if len(nameservers) > 3:
        errs.append(FieldError.invalid(path.child("nameservers"), nameservers,
                                       "must not have more than 3 nameservers"))
    for i, server in enumerate(nameservers):
        errs += _validate_ip(server, path.child("nameservers").index(i))
    searches = _list(config.get("searches"))
    if len(searches) > 32:
        errs.append(FieldError.invalid(path.child("searches"), searches,
                                       "must not have more than 32 search paths"))
    if len(" ".join(searches)) > 2048:
        errs.append(FieldError.invalid(
            path.child("searches"), searches,
            "must not have more than 2048 characters (including spaces) in the search list"))
    for i, search in enumerate(searches):
        errs += validate_dns1123_subdomain(search.removesuffix("."), path.child("searches").index(i))
    for i, option in enumerate(_list(config.get("options"))):
        if not option.get("name"):
            errs.append(FieldError.required(path.child("options").index(i), "must not be empty"))
    return errs


def _validate_host_network_ports(spec: Obj, path: Path, *, is_pod: bool) -> list[FieldError]:
    if not spec.get("hostNetwork"):
        return []
    errs: list[FieldError] = []
    for i, container in enumerate(_list(spec.get("containers"))):
        for j, port in enumerate(_list(container.get("ports"))):
            host_port, container_port = int(port.get("hostPort") or 0), int(port.get("containerPort") or 0)
            # A template may leave hostPort to the Pod's defaulting; a Pod may not.
            if (is_pod or host_port != 0) and host_port != container_port:
                port_path = path.child("containers").index(i).child("ports").index(j).child("hostPort")
                errs.append(FieldError.invalid(port_path, host_port,
                                               "must match `containerPort` when `hostNetwork` is true"))
    return errs


def _validate_pod_spec(spec: Obj, path: Path, *, is_pod: bool) -> list[FieldError]:
    """``ValidatePodSpec``, for a Pod or for the template of a controller."""
    errs: list[FieldError] = []
    if spec.get("terminationGracePeriodSeconds") is None:
        errs.append(FieldError.required(path.child("terminationGracePeriodSeconds")))
    volumes, volume_errs = _validate_volumes(_list(spec.get("volumes")), path.child("volumes"))
    errs += volume_errs
    errs += _validate_containers(spec, volumes, path.child("containers"))
    errs += _validate_init_containers(spec, volumes, path.child("initContainers"))
    errs += _validate_host_network_ports(spec, path, is_pod=is_pod)
    errs += _enum(spec.get("restartPolicy"), path.child("restartPolicy"), _RESTART_POLICIES)
    errs += _enum(spec.get("dnsPolicy"), path.child("dnsPolicy"), _DNS_POLICIES)
    errs += validate_labels(spec.get("nodeSelector"), path.child("nodeSelector"))
    errs += _validate_pod_security_context(spec, path.child("securityContext"))
    errs += _validate_affinity(spec.get("affinity"), path.child("affinity"))
    errs += _validate_dns_config(spec, path.child("dnsConfig"))
    for i, gate in enumerate(_list(spec.get("readinessGates"))):
        errs += validate_qualified_name(gate.get("conditionType") or "",
                                        path.child("readinessGates").index(i).child("conditionType"))
    seen_gates: set[str] = set()
    for i, gate in enumerate(_list(spec.get("schedulingGates"))):
        gate_name = gate.get("name") or ""
        errs += validate_qualified_name(gate_name, path.child("schedulingGates").index(i))
        if gate_name in seen_gates:
            errs.append(FieldError.duplicate(path.child("schedulingGates").index(i), gate_name))
        seen_gates.add(gate_name)
    errs += _validate_topology_spread(_list(spec.get("topologySpreadConstraints")),
                                      path.child("topologySpreadConstraints"))
    for key in ("serviceAccountName", "nodeName"):
        if spec.get(key):
            errs += [FieldError.invalid(path.child(key), spec[key], msg)
                     for msg in name_is_dns1123_subdomain(spec[key], False)]
    deadline = spec.get("activeDeadlineSeconds")
    if deadline is not None:
        errs += _in_range(deadline, path.child("activeDeadlineSeconds"), 1, _MAX_INT32)
    for key in ("hostname", "subdomain"):
        if spec.get(key):
            errs += validate_dns1123_label(spec[key], path.child(key))
    errs += _validate_tolerations(_list(spec.get("tolerations")), path.child("tolerations"))
    for i, alias in enumerate(_list(spec.get("hostAliases"))):
        alias_path = path.child("hostAliases").index(i)
        errs += _validate_ip(alias.get("ip") or "", alias_path.child("ip"))
        for j, hostname in enumerate(_list(alias.get("hostnames"))):
            errs += validate_dns1123_subdomain(hostname, alias_path.child("hostnames").index(j))
    if spec.get("priorityClassName"):
        errs += [FieldError.invalid(path.child("priorityClassName"), spec["priorityClassName"], msg)
                 for msg in name_is_dns1123_subdomain(spec["priorityClassName"], False)]
    if spec.get("runtimeClassName") is not None:
        errs += [FieldError.invalid(path.child("runtimeClassName"), spec["runtimeClassName"], msg)
                 for msg in name_is_dns1123_subdomain(spec["runtimeClassName"], False)]
    if spec.get("preemptionPolicy") is not None:
        errs += _enum(spec["preemptionPolicy"], path.child("preemptionPolicy"), _PREEMPTION_POLICIES)
    if spec.get("overhead") is not None:
        errs += _validate_resource_requirements({"limits": spec["overhead"]}, path.child("overhead"))
    operating_system = spec.get("os")
    if operating_system is not None:
        os_name = operating_system.get("name") or ""
        if not os_name:
            errs.append(FieldError.required(path.child("os", "name"), "cannot be empty"))
        elif os_name not in _OPERATING_SYSTEMS:
            errs.append(FieldError.not_supported(path.child("os"), os_name, _OPERATING_SYSTEMS))
    return errs


# --- Pod -----------------------------------------------------------------------------------------

def _validate_pod_annotations(annotations: Obj, spec: Obj, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    if _MIRROR_POD_ANNOTATION in annotations and not spec.get("nodeName"):
        errs.append(FieldError.invalid(path.key(_MIRROR_POD_ANNOTATION), annotations[_MIRROR_POD_ANNOTATION],
                                       "must set spec.nodeName if mirror pod annotation is set"))
    if _DELETION_COST_ANNOTATION in annotations:
        cost = str(annotations[_DELETION_COST_ANNOTATION])
        # Kubernetes refuses "+10" and "010": the cost must read back exactly as written.
        if not re.fullmatch(r"-?(0|[1-9][0-9]*)", cost) or not -(2**31) <= int(cost) <= _MAX_INT32:
            errs.append(FieldError.invalid(path.key(_DELETION_COST_ANNOTATION), cost,
                                           "must be a 32bit integer"))
    return errs


def _validate_pod_metadata_and_spec(pod: Obj) -> list[FieldError]:
    meta, spec = _obj(pod.get("metadata")), _obj(pod.get("spec"))
    errs = _validate_core_meta(meta, namespaced=True)
    errs += _validate_pod_annotations(_obj(meta.get("annotations")), spec, METADATA.child("annotations"))
    errs += _validate_pod_spec(spec, SPEC, is_pod=True)
    if not spec.get("serviceAccountName"):
        for i, volume in enumerate(_list(spec.get("volumes"))):
            for j, source in enumerate(_list(_obj(volume.get("projected")).get("sources"))):
                if source.get("serviceAccountToken") is not None:
                    sources_path = SPEC.child("volumes").index(i).child("projected", "sources")
                    errs.append(FieldError.forbidden(
                        sources_path.index(j).child("serviceAccountToken"),
                        "must not be specified when serviceAccountName is not set"))
    for key in ("containers", "initContainers"):
        for i, container in enumerate(_list(spec.get(key))):
            image = container.get("image") or ""
            if image != image.strip():
                errs.append(FieldError.invalid(SPEC.child(key).index(i).child("image"), image, _WHITESPACE))
    return errs


def validate_pod(pod: Obj) -> list[FieldError]:
    """A Pod being created (``ValidatePodCreate``)."""
    errs = _validate_pod_metadata_and_spec(pod)
    spec = _obj(pod.get("spec"))
    if spec.get("ephemeralContainers"):
        errs.append(FieldError.forbidden(SPEC.child("ephemeralContainers"), "cannot be set on create"))
    if spec.get("nodeName") and spec.get("schedulingGates"):
        errs.append(FieldError.forbidden(SPEC.child("nodeName"),
                                         "cannot be set until all schedulingGates have been cleared"))
    return errs


def _validate_pod_annotation_updates(new: Obj, old: Obj) -> list[FieldError]:
    path = METADATA.child("annotations")
    new_annotations = _obj(_obj(new.get("metadata")).get("annotations"))
    old_annotations = _obj(_obj(old.get("metadata")).get("annotations"))
    errs: list[FieldError] = []
    if _MIRROR_POD_ANNOTATION in old_annotations and \
            new_annotations.get(_MIRROR_POD_ANNOTATION) != old_annotations[_MIRROR_POD_ANNOTATION]:
        errs.append(FieldError.forbidden(path.key(_MIRROR_POD_ANNOTATION),
                                         "may not remove or update mirror pod annotation"))
    if _MIRROR_POD_ANNOTATION in new_annotations and _MIRROR_POD_ANNOTATION not in old_annotations:
        errs.append(FieldError.forbidden(path.key(_MIRROR_POD_ANNOTATION),
                                         "may not add mirror pod annotation"))
    return errs + _validate_pod_annotations(new_annotations, _obj(new.get("spec")), path)


def _validate_container_updates(new: Sequence[Obj], old: Sequence[Obj],
                                path: Path) -> tuple[list[FieldError], bool]:
    """Image checks for an update, and True when the lists differ in length (then nothing else is checked)."""
    if len(new) != len(old):
        return [FieldError.forbidden(path, "pod updates may not add or remove containers")], True
    errs: list[FieldError] = []
    for i, container in enumerate(new):
        image = container.get("image") or ""
        if not image:
            errs.append(FieldError.required(path.index(i).child("image")))
        if image != image.strip():
            errs.append(FieldError.invalid(path.index(i).child("image"), image, _WHITESPACE))
    return errs, False


def _semantic(value: Any) -> Any:
    """A value as Go's semantic equality sees it: absent, null, empty and zero fields all read the same."""
    if isinstance(value, Mapping):
        out = {k: _semantic(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v not in (None, "", False, 0, [], {})}
    if isinstance(value, list):
        return [_semantic(v) for v in value]
    return value


def _validate_only_added_tolerations(new: Sequence[Obj], old: Sequence[Obj], path: Path) -> list[FieldError]:
    def without_seconds(toleration: Obj) -> Any:
        return _semantic({k: v for k, v in toleration.items() if k != "tolerationSeconds"})

    candidates = [without_seconds(t) for t in new]
    for toleration in old:
        if without_seconds(toleration) not in candidates:
            return [FieldError.forbidden(
                path, "existing toleration can not be modified except its tolerationSeconds")]
    return _validate_tolerations(new, path)


def _diff(old: Any, new: Any, path: str) -> list[str]:
    """The leaves that differ, one ``-``/``+`` pair each (Kubernetes appends a Go ``cmp.Diff`` here)."""
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        lines: list[str] = []
        for key in sorted(set(old) | set(new)):
            lines += _diff(old.get(key), new.get(key), f"{path}.{key}")
        return lines
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [line for i, (a, b) in enumerate(zip(old, new, strict=True))
                for line in _diff(a, b, f"{path}[{i}]")]
    if old == new:
        return []
    return [f"- {path}: {render_value(old)}", f"+ {path}: {render_value(new)}"]


def _munge_gated_pod_fields(munged: dict[str, Any], old_spec: Obj) -> list[FieldError]:
    """A Pod still held by scheduling gates may gain node selector entries and node affinity requirements."""
    errs: list[FieldError] = []
    new_selector, old_selector = _obj(munged.get("nodeSelector")), _obj(old_spec.get("nodeSelector"))
    if _semantic(new_selector) != _semantic(old_selector):
        if any(new_selector.get(k) != v for k, v in old_selector.items()):
            errs.append(FieldError.invalid(
                SPEC.child("nodeSelector"), dict(new_selector),
                "only additions to spec.nodeSelector are allowed (no mutations or deletions)"))
        munged["nodeSelector"] = old_spec.get("nodeSelector")
    old_affinity = _obj(old_spec.get("affinity")).get("nodeAffinity")
    new_affinity = _obj(munged.get("affinity")).get("nodeAffinity")
    if _semantic(old_affinity) == _semantic(new_affinity):
        return errs
    terms_path = SPEC.child("affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution",
                            "nodeSelectorTerms")
    old_terms = _list(_obj(_obj(old_affinity).get("requiredDuringSchedulingIgnoredDuringExecution"))
                      .get("nodeSelectorTerms"))
    new_terms = _list(_obj(_obj(new_affinity).get("requiredDuringSchedulingIgnoredDuringExecution"))
                      .get("nodeSelectorTerms"))
    if old_terms and len(old_terms) != len(new_terms):
        errs.append(FieldError.invalid(
            terms_path, list(new_terms),
            "no additions/deletions to non-empty NodeSelectorTerms list are allowed"))
    else:
        for i, old_term in enumerate(old_terms):
            if not _only_additions(_obj(new_terms[i]), _obj(old_term)):
                errs.append(FieldError.invalid(terms_path.index(i), new_terms[i],
                                               "only additions are allowed (no mutations or deletions)"))
    affinity = dict(_obj(munged.get("affinity")))
    if old_affinity is None:
        affinity.pop("nodeAffinity", None)
    else:
        affinity["nodeAffinity"] = old_affinity
    munged["affinity"] = affinity or None
    return errs


def _only_additions(new_term: Obj, old_term: Obj) -> bool:
    for key in ("matchExpressions", "matchFields"):
        old_reqs, new_reqs = _list(old_term.get(key)), _list(new_term.get(key))
        if _semantic(new_reqs[:len(old_reqs)]) != _semantic(old_reqs):
            return False
    return bool(old_term.get("matchExpressions") or old_term.get("matchFields")) or \
        not (new_term.get("matchExpressions") or new_term.get("matchFields"))


def validate_pod_update(new: Obj, old: Obj) -> list[FieldError]:
    """A spec update of a Pod: only images, the deadline, added tolerations and a few more may change."""
    errs = _validate_core_meta_update(_obj(new.get("metadata")), _obj(old.get("metadata")))
    errs += _validate_pod_metadata_and_spec(new)
    errs += _validate_pod_annotation_updates(new, old)
    new_spec, old_spec = _obj(new.get("spec")), _obj(old.get("spec"))
    for key in ("containers", "initContainers"):
        container_errs, stop = _validate_container_updates(_list(new_spec.get(key)), _list(old_spec.get(key)),
                                                           SPEC.child(key))
        errs += container_errs
        if stop:
            return errs

    deadline_path = SPEC.child("activeDeadlineSeconds")
    new_deadline, old_deadline = new_spec.get("activeDeadlineSeconds"), old_spec.get("activeDeadlineSeconds")
    if new_deadline is not None:
        if not 0 <= new_deadline <= _MAX_INT32:
            return [*errs, FieldError.invalid(deadline_path, new_deadline, _range_error(0, _MAX_INT32))]
        if old_deadline is not None and old_deadline < new_deadline:
            return [*errs, FieldError.invalid(deadline_path, new_deadline,
                                              "must be less than or equal to previous value")]
    elif old_deadline is not None:
        errs.append(FieldError.invalid(deadline_path, None,
                                       "must not update from a positive integer to nil value"))

    errs += _validate_only_added_tolerations(_list(new_spec.get("tolerations")),
                                             _list(old_spec.get("tolerations")),
                                             SPEC.child("tolerations"))
    old_gates = {g.get("name") for g in _list(old_spec.get("schedulingGates"))}
    for i, gate in enumerate(_list(new_spec.get("schedulingGates"))):
        if gate.get("name") not in old_gates:
            errs.append(FieldError.forbidden(SPEC.child("schedulingGates").index(i).child("name"),
                                             f"only deletion is allowed, but found new scheduling gate "
                                             f"'{gate.get('name') or ''}'"))

    if _semantic(new_spec) == _semantic(old_spec):
        return errs
    # Put back what may change, then anything still different may not.
    munged = copy.deepcopy(dict(new_spec))
    for key in ("containers", "initContainers"):
        for container, old_container in zip(_list(munged.get(key)), _list(old_spec.get(key)), strict=True):
            container["image"] = old_container.get("image")
    for key in ("activeDeadlineSeconds", "schedulingGates", "tolerations"):
        munged[key] = old_spec.get(key)
    old_grace = old_spec.get("terminationGracePeriodSeconds")
    if old_grace is not None and old_grace < 0 and munged.get("terminationGracePeriodSeconds") == 1:
        munged["terminationGracePeriodSeconds"] = old_grace
    if old_spec.get("schedulingGates"):
        errs += _munge_gated_pod_fields(munged, old_spec)
    if _semantic(munged) != _semantic(old_spec):
        diff = "\n".join(_diff(_semantic(old_spec), _semantic(munged), "spec"))
        errs.append(FieldError.forbidden(SPEC, "pod updates may not change fields other than "
                                         + ",".join(_UPDATABLE_POD_SPEC_FIELDS) + "\n" + diff))
    return errs


def _validate_state_transitions(new: Sequence[Obj], old: Sequence[Obj], path: Path, restart_policy: str,
                                restartable: frozenset[str] = frozenset()) -> list[FieldError]:
    """A container that terminated for good may not come back."""
    if restart_policy == "Always":
        return []
    errs: list[FieldError] = []
    for i, old_status in enumerate(old):
        terminated = _obj(old_status.get("state")).get("terminated")
        name = old_status.get("name")
        if terminated is None or name in restartable:
            continue
        if int(terminated.get("exitCode") or 0) != 0 and restart_policy == "OnFailure":
            continue
        for new_status in new:
            if new_status.get("name") == name and _obj(new_status.get("state")).get("terminated") is None:
                errs.append(FieldError.forbidden(path.index(i).child("state"), _NOT_TERMINATED))
    return errs


def _pod_ips(status: Obj, plural: str, singular: str) -> list[str]:
    """The IPs as Kubernetes sees them after conversion: the list, or else the single field."""
    ips = [entry.get("ip") or "" for entry in _list(status.get(plural))]
    if not ips and status.get(singular):
        ips = [status[singular]]
    return ips


def _validate_ip_list(ips: Sequence[str], path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, ip in enumerate(ips):
        errs += _validate_ip(ip, path.index(i))
    if len(ips) > 1:
        parsed = [_parse_ip(ip) for ip in ips]
        versions = [p.version for p in parsed if p is not None]
        if not _is_dual_stack(versions) or len(ips) > 2:
            errs.append(FieldError.invalid(path, [{"ip": ip} for ip in ips],
                                           "may specify no more than one IP for each IP family"))
        seen: set[str] = set()
        for i, ip in enumerate(ips):
            if ip in seen:
                errs.append(FieldError.duplicate(path.index(i), {"ip": ip}))
            seen.add(ip)
    return errs


def validate_pod_status_update(new: Obj, old: Obj) -> list[FieldError]:
    """A ``pods/status`` write: conditions, container state transitions, IPs; the node may not change here."""
    new_meta = _obj(new.get("metadata"))
    errs = _validate_core_meta_update(new_meta, _obj(old.get("metadata")))
    errs += _validate_pod_annotation_updates(new, old)
    new_spec, old_spec = _obj(new.get("spec")), _obj(old.get("spec"))
    new_status, old_status = _obj(new.get("status")), _obj(old.get("status"))
    for i, condition in enumerate(_list(new_status.get("conditions"))):
        if condition.get("type") not in _SYSTEM_POD_CONDITIONS:
            errs += validate_qualified_name(condition.get("type") or "",
                                            METADATA.child("conditions").index(i).child("Type"))
    if (new_spec.get("nodeName") or "") != (old_spec.get("nodeName") or ""):
        errs.append(FieldError.forbidden(STATUS.child("nodeName"), "may not be changed directly"))
    nominated = new_status.get("nominatedNodeName") or ""
    if nominated and nominated != (old_status.get("nominatedNodeName") or ""):
        errs += [FieldError.invalid(STATUS.child("nominatedNodeName"), nominated, msg)
                 for msg in name_is_dns1123_subdomain(nominated, False)]
    errs += validate_immutable(new_status.get("qosClass") or "", old_status.get("qosClass") or "",
                               STATUS.child("qosClass"))
    restart_policy = old_spec.get("restartPolicy") or ""
    errs += _validate_state_transitions(_list(new_status.get("containerStatuses")),
                                        _list(old_status.get("containerStatuses")),
                                        STATUS.child("containerStatuses"), restart_policy)
    restartable = frozenset(c.get("name") for c in _list(old_spec.get("initContainers"))
                            if c.get("restartPolicy") == "Always")
    errs += _validate_state_transitions(_list(new_status.get("initContainerStatuses")),
                                        _list(old_status.get("initContainerStatuses")),
                                        STATUS.child("initContainerStatuses"), restart_policy, restartable)
    # The kubelet never restarts an ephemeral container.
    errs += _validate_state_transitions(_list(new_status.get("ephemeralContainerStatuses")),
                                        _list(old_status.get("ephemeralContainerStatuses")),
                                        STATUS.child("ephemeralContainerStatuses"), "Never")
    errs += _validate_ip_list(_pod_ips(new_status, "podIPs", "podIP"), STATUS.child("podIPs"))
    host_ips = _pod_ips(new_status, "hostIPs", "hostIP")
    if host_ips:
        if (new_status.get("hostIP") or "") != host_ips[0]:
            errs.append(FieldError.invalid(STATUS.child("hostIPs").index(0).child("ip"), host_ips[0],
                                           "must be equal to `hostIP`"))
        errs += _validate_ip_list(host_ips, STATUS.child("hostIPs"))
    return errs


def validate_binding(binding: Obj) -> list[FieldError]:
    """A ``pods/binding`` request: the target must name a Node."""
    target = _obj(binding.get("target"))
    errs: list[FieldError] = []
    kind = target.get("kind") or ""
    if kind and kind != "Node":
        errs.append(FieldError.not_supported(Path("target", "kind"), kind, ("Node", "<empty>")))
    if not target.get("name"):
        errs.append(FieldError.required(Path("target", "name")))
    return errs


# --- ReplicationController -----------------------------------------------------------------------------

def _validate_rc_spec(spec: Obj, path: Path) -> list[FieldError]:
    errs = validate_nonnegative(spec.get("minReadySeconds"), path.child("minReadySeconds"))
    selector = _obj(spec.get("selector"))
    if not selector:
        errs.append(FieldError.required(path.child("selector")))
    errs += validate_nonnegative(spec.get("replicas"), path.child("replicas"))
    template_path = path.child("template")
    template = spec.get("template")
    if template is None:
        return [*errs, FieldError.required(template_path)]
    template_meta = _obj(template.get("metadata"))
    labels = template_meta.get("labels")
    if selector and any(_obj(labels).get(k) != v for k, v in selector.items()):
        errs.append(FieldError.invalid(template_path.child("metadata", "labels"), labels,
                                       "`selector` does not match template `labels`"))
    template_spec = _obj(template.get("spec"))
    errs += validate_labels(labels, template_path.child("labels"))
    errs += validate_annotations(template_meta.get("annotations"), template_path.child("annotations"))
    errs += _validate_pod_annotations(_obj(template_meta.get("annotations")), template_spec,
                                      template_path.child("annotations"))
    errs += _validate_pod_spec(template_spec, template_path.child("spec"), is_pod=False)
    if template_spec.get("ephemeralContainers"):
        errs.append(FieldError.forbidden(template_path.child("spec", "ephemeralContainers"),
                                         "ephemeral containers not allowed in pod template"))
    if template_spec.get("restartPolicy") != "Always":
        errs.append(FieldError.not_supported(template_path.child("spec", "restartPolicy"),
                                             template_spec.get("restartPolicy") or "", ("Always",)))
    if template_spec.get("activeDeadlineSeconds") is not None:
        errs.append(FieldError.forbidden(template_path.child("spec", "activeDeadlineSeconds"),
                                         "activeDeadlineSeconds in ReplicationController is not Supported"))
    return errs


def validate_replication_controller(rc: Obj) -> list[FieldError]:
    errs = _validate_core_meta(_obj(rc.get("metadata")), namespaced=True)
    return errs + _validate_rc_spec(_obj(rc.get("spec")), SPEC)


def validate_replication_controller_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = _validate_core_meta_update(_obj(new.get("metadata")), _obj(old.get("metadata")))
    return errs + _validate_rc_spec(_obj(new.get("spec")), SPEC)


def validate_replication_controller_status_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = _validate_core_meta_update(_obj(new.get("metadata")), _obj(old.get("metadata")))
    status = _obj(new.get("status"))
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
        elif effect not in _TAINT_EFFECTS:
            errs.append(FieldError.not_supported(item_path.child("effect"), effect, _TAINT_EFFECTS))
        if (key, effect) in seen:
            errs.append(FieldError.duplicate(item_path, dict(taint),
                                             "taints must be unique by key and effect pair"))
            continue
        seen.add((key, effect))
    return errs


def _validate_node_resources(status: Obj) -> list[FieldError]:
    errs: list[FieldError] = []
    for key in ("capacity", "allocatable"):
        for resource, raw in _obj(status.get(key)).items():
            _validate_quantity(resource, raw, STATUS.child(key, resource), errs)
    return errs


def _pod_cidrs(spec: Obj) -> list[str]:
    cidrs = [str(c) for c in _list(spec.get("podCIDRs"))]
    if not cidrs and spec.get("podCIDR"):
        cidrs = [spec["podCIDR"]]
    return cidrs


def validate_node(node: Obj) -> list[FieldError]:
    errs = _validate_core_meta(_obj(node.get("metadata")), namespaced=False)
    spec = _obj(node.get("spec"))
    # Kubernetes reports spec.taints under metadata.taints.
    errs += _validate_taints(_list(spec.get("taints")), METADATA.child("taints"))
    errs += _validate_node_resources(_obj(node.get("status")))
    cidrs = _pod_cidrs(spec)
    cidrs_path = SPEC.child("podCIDRs")
    versions: list[int] = []
    for i, cidr in enumerate(cidrs):
        version = _parse_cidr(cidr)
        if version is None:
            errs.append(FieldError.invalid(cidrs_path.index(i), cidr,
                                           "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"))
        else:
            versions.append(version)
    if len(cidrs) > 1:
        if not _is_dual_stack(versions) or len(cidrs) > 2:
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
    errs = _validate_core_meta_update(_obj(new.get("metadata")), _obj(old.get("metadata")))
    new_spec, old_spec = _obj(new.get("spec")), _obj(old.get("spec"))
    status = _obj(new.get("status"))
    errs += _validate_node_resources(status)
    seen: list[Any] = []
    for i, address in enumerate(_list(status.get("addresses"))):
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
    errs += _validate_taints(_list(new_spec.get("taints")), METADATA.child("taints"))
    if (new_spec.get("externalID") or "") != (old_spec.get("externalID") or ""):
        errs.append(FieldError.forbidden(SPEC.child("externalID"), "may not be updated"))
    return errs


validate_node_status_update = validate_node_update


# --- Namespace ---------------------------------------------------------------------------------

def validate_namespace(namespace: Obj) -> list[FieldError]:
    errs = _validate_core_meta(_obj(namespace.get("metadata")), namespaced=False,
                               name_rule=name_is_dns1123_label)
    # Kubernetes names every spec finalizer error by the list, not by its index.
    for finalizer in _list(_obj(namespace.get("spec")).get("finalizers")):
        errs += validate_qualified_name(finalizer, SPEC.child("finalizers"))
        errs += _kube_finalizer_errors(finalizer, SPEC.child("finalizers"))
    return errs


def validate_namespace_update(new: Obj, old: Obj) -> list[FieldError]:
    return _validate_core_meta_update(_obj(new.get("metadata")), _obj(old.get("metadata")))


def validate_namespace_status_update(new: Obj, old: Obj) -> list[FieldError]:
    meta = _obj(new.get("metadata"))
    errs = _validate_core_meta_update(meta, _obj(old.get("metadata")))
    phase = _obj(new.get("status")).get("phase") or ""
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
    errs = _validate_core_meta_update(_obj(new.get("metadata")), _obj(old.get("metadata")))
    for i, finalizer in enumerate(_list(_obj(new.get("spec")).get("finalizers"))):
        finalizer_path = SPEC.child("finalizers").index(i)
        errs += validate_qualified_name(finalizer, finalizer_path)
        errs += _kube_finalizer_errors(finalizer, finalizer_path)
    return errs


# --- Event ---------------------------------------------------------------------------------------

def _validate_legacy_event(event: Obj) -> list[FieldError]:
    """The only rules core/v1 Events get (events.k8s.io/v1 is stricter): namespaces agree, fields fit."""
    errs: list[FieldError] = []
    namespace = _obj(event.get("metadata")).get("namespace") or ""
    involved_namespace = _obj(event.get("involvedObject")).get("namespace") or ""
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
    return errs or validate_object_meta(_obj(event.get("metadata")), namespaced=True,
                                        name_rule=name_is_path_segment)


def validate_event_update(new: Obj, old: Obj) -> list[FieldError]:
    new_meta = _obj(new.get("metadata"))
    errs = validate_object_meta(new_meta, namespaced=True, name_rule=name_is_path_segment)
    errs += validate_object_meta_update(new_meta, _obj(old.get("metadata")))
    return errs + _validate_legacy_event(new)
