"""Volumes: the sources a Pod mounts, and PersistentVolumes and their claims.

Pods and PersistentVolumes share most volume sources and the file and path
rules inside them (modes, relative paths, downward-API selectors), so they live
here once, as in ``pkg/apis/core/validation``.

Pure functions; no state.
"""

from __future__ import annotations

import functools
import posixpath
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from apiserver.validation.common import (
    NOT_POSITIVE,
    SPEC,
    STATUS,
    diff_lines,
    list_of,
    obj_of,
    semantic,
    validate_core_meta,
    validate_core_meta_update,
)
from apiserver.validation.field import FieldError, Path
from apiserver.validation.meta import (
    METADATA,
    name_is_dns1123_subdomain,
    validate_annotations,
    validate_dns1123_label,
    validate_immutable,
    validate_label_selector,
    validate_labels,
    validate_qualified_name,
)
from apiserver.validation.nodeselector import validate_node_selector_term
from apiserver.validation.resources import canonical_quantity, validate_quantity
from machinery.api import names
from machinery.api.quantity import parse_quantity
from machinery.api.quantity import value as whole_value

Obj = Mapping[str, Any]


_FILE_MODE: Final = "must be a number between 0 and 0777 (octal), both inclusive"
_MULTIPLE_VOLUME_TYPES: Final = "may not specify more than 1 volume type"
_HOST_PATH_TYPES: Final = ("", "BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate", "File",
                           "FileOrCreate", "Socket")
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

_VOLUME_FIELD_PATHS: Final = ("metadata.annotations", "metadata.labels", "metadata.name",
                              "metadata.namespace", "metadata.uid")
#: Every field path the downward API can convert (``ConvertDownwardAPIFieldLabel``).
#: Every field path the downward API can convert (``ConvertDownwardAPIFieldLabel``).
_DOWNWARD_API_FIELD_PATHS: Final = frozenset({
    "metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid",
    "spec.nodeName", "spec.restartPolicy", "spec.serviceAccountName", "spec.schedulerName", "status.phase",
    "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs", "spec.host",
})
_RESOURCE_FIELD_PATHS: Final = ("limits.cpu", "limits.ephemeral-storage", "limits.memory", "requests.cpu",
                                "requests.ephemeral-storage", "requests.memory")



# --- Pod: paths and files ------------------------------------------------------------------------

def validate_local_descending_path(target: str, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    if target.startswith("/"):
        errs.append(FieldError.invalid(path, target, "must be a relative path"))
    return errs + validate_no_backsteps(target, path)


def validate_no_backsteps(target: str, path: Path) -> list[FieldError]:
    if ".." in target.split("/"):
        return [FieldError.invalid(path, target, "must not contain '..'")]
    return []


def validate_local_non_reserved_path(target: str, path: Path) -> list[FieldError]:
    errs = validate_local_descending_path(target, path)
    if target.startswith("..") and not target.startswith("../"):
        errs.append(FieldError.invalid(path, target, "must not start with '..'"))
    return errs


def validate_mode(mode: int | None, path: Path) -> list[FieldError]:
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
    errs += validate_local_non_reserved_path(target, path.child("path"))
    return errs + validate_mode(item.get("mode"), path.child("mode"))


def validate_object_field_selector(selector: Obj, supported: Sequence[str], path: Path) -> list[FieldError]:
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


def validate_resource_field_selector(selector: Obj, path: Path, *, in_volume: bool) -> list[FieldError]:
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
    errs += validate_local_non_reserved_path(target, path.child("path"))
    field_ref, resource_ref = item.get("fieldRef"), item.get("resourceFieldRef")
    if field_ref is not None:
        errs += validate_object_field_selector(field_ref, _VOLUME_FIELD_PATHS, path.child("fieldRef"))
        if resource_ref is not None:
            errs.append(FieldError.invalid(
                path, "resource", "fieldRef and resourceFieldRef can not be specified simultaneously"))
    elif resource_ref is not None:
        errs += validate_resource_field_selector(resource_ref, path.child("resourceFieldRef"),
                                                  in_volume=True)
    else:
        errs.append(FieldError.required(path, "one of fieldRef and resourceFieldRef is required"))
    return errs + validate_mode(item.get("mode"), path.child("mode"))

# --- Pod: volumes ------------------------------------------------------------------------------

def validate_volumes(volumes: Sequence[Obj], path: Path) -> tuple[dict[str, Obj], list[FieldError]]:
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
            errs += check(obj_of(source), path.child(key))
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
    errs = validate_no_backsteps(target, path.child("path"))
    kind = source.get("type")
    if kind is not None and kind not in _HOST_PATH_TYPES:
        errs.append(FieldError.not_supported(path.child("type"), kind, _HOST_PATH_TYPES))
    return errs


def _check_git_repo(source: Obj, path: Path) -> list[FieldError]:
    errs = [] if source.get("repository") else [FieldError.required(path.child("repository"))]
    return errs + validate_local_descending_path(source.get("directory") or "", path.child("directory"))


def _check_keys_source(source: Obj, path: Path, *, name_key: str) -> list[FieldError]:
    """A Secret or ConfigMap volume: the object's name, a file mode, and the keys to project."""
    errs = [] if source.get(name_key) else [FieldError.required(path.child(name_key))]
    errs += validate_mode(source.get("defaultMode"), path.child("defaultMode"))
    for i, item in enumerate(list_of(source.get("items"))):
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
    errs = validate_mode(source.get("defaultMode"), path.child("defaultMode"))
    for item in list_of(source.get("items")):
        errs += _validate_downward_api_file(item, path)
    return errs


def _check_projected(source: Obj, path: Path) -> list[FieldError]:
    errs = validate_mode(source.get("defaultMode"), path.child("defaultMode"))
    seen: set[str] = set()

    def claim_path(target: str, value: object) -> None:
        if target in seen:
            errs.append(FieldError.invalid(path, value, "conflicting duplicate paths"))
        seen.add(target)

    for i, projection in enumerate(list_of(source.get("sources"))):
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
            for j, item in enumerate(list_of(ref.get("items"))):
                errs += _validate_key_to_path(item, kind_path.child("items").index(j))
                if item.get("path"):
                    claim_path(item["path"], ref.get("name") or "")
        downward = projection.get("downwardAPI")
        if downward is not None:
            count += 1
            for item in list_of(downward.get("items")):
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
                errs += validate_local_non_reserved_path(token["path"], path.child("path"))
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
    template = source.get("volumeClaimTemplate")
    if template is None:
        return [FieldError.required(path.child("volumeClaimTemplate"))]
    return _validate_claim_template(obj_of(template), path.child("volumeClaimTemplate"))


_VOLUME_SOURCE_CHECKS: Final[dict[str, Callable[[Obj, Path], list[FieldError]]]] = {
    "emptyDir": _check_empty_dir, "hostPath": _check_host_path, "gitRepo": _check_git_repo,
    "secret": functools.partial(_check_keys_source, name_key="secretName"),
    "configMap": functools.partial(_check_keys_source, name_key="name"),
    "persistentVolumeClaim": _check_claim,
    "nfs": _check_nfs, "downwardAPI": _check_downward_api, "projected": _check_projected, "csi": _check_csi,
    "ephemeral": _check_ephemeral,
}



# --- PersistentVolume ------------------------------------------------------------------------------

_ACCESS_MODES: Final = ("ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod")
_RECLAIM_POLICIES: Final = ("Delete", "Recycle", "Retain")
_VOLUME_MODES: Final = ("Block", "Filesystem")
_BETA_STORAGE_CLASS: Final = "volume.beta.kubernetes.io/storage-class"

#: A PersistentVolume's sources in the order Kubernetes checks them, with the path its checks report
#: (``gcePersistentDisk`` is checked under ``persistentDisk``, ``cephfs`` reported as ``cephFS``).
_PV_SOURCES: Final = (
    ("hostPath", "hostPath", "hostPath"), ("gcePersistentDisk", "gcePersistentDisk", "persistentDisk"),
    ("awsElasticBlockStore", "awsElasticBlockStore", "awsElasticBlockStore"),
    ("glusterfs", "glusterfs", "glusterfs"), ("flocker", "flocker", "flocker"), ("nfs", "nfs", "nfs"),
    ("rbd", "rbd", "rbd"), ("quobyte", "quobyte", "quobyte"), ("cephfs", "cephFS", "cephfs"),
    ("iscsi", "iscsi", "iscsi"), ("cinder", "cinder", "cinder"), ("fc", "fc", "fc"),
    ("flexVolume", "flexVolume", "flexVolume"), ("azureFile", "azureFile", "azureFile"),
    ("vsphereVolume", "vsphereVolume", "vsphereVolume"),
    ("photonPersistentDisk", "photonPersistentDisk", "photonPersistentDisk"),
    ("portworxVolume", "portworxVolume", "portworxVolume"), ("azureDisk", "azureDisk", "azureDisk"),
    ("scaleIO", "scaleIO", "scaleIO"), ("local", "local", "local"), ("storageos", "storageos", "storageos"),
    ("csi", "csi", "csi"),
)
PV_SOURCE_KEYS: Final = tuple(key for key, _, _ in _PV_SOURCES)


def _check_local(source: Obj, path: Path) -> list[FieldError]:
    target = source.get("path") or ""
    if not target:
        return [FieldError.required(path.child("path"))]
    return validate_no_backsteps(target, path.child("path"))


def _check_secret_reference(ref: Obj, path: Path) -> list[FieldError]:
    """``validatePVSecretReference``: a Secret named in another namespace."""
    errs: list[FieldError] = []
    name, namespace = ref.get("name") or "", ref.get("namespace") or ""
    if not name:
        errs.append(FieldError.required(path.child("name")))
    else:
        errs += [FieldError.invalid(path.child("name"), name, msg) for msg in names.is_dns1123_subdomain(name)]
    if not namespace:
        errs.append(FieldError.required(path.child("namespace")))
    else:
        errs += [FieldError.invalid(path.child("namespace"), namespace, msg)
                 for msg in names.is_dns1123_label(namespace)]
    return errs


def _check_csi_pv(source: Obj, path: Path) -> list[FieldError]:
    driver = source.get("driver") or ""
    errs: list[FieldError] = []
    if not driver:
        errs.append(FieldError.required(path.child("driver")))
    if len(driver) > 63:
        errs.append(FieldError.too_long(path.child("driver"), 63))
    errs += [FieldError.invalid(path.child("driver"), driver, msg)
             for msg in names.is_dns1123_subdomain(driver.lower())]
    if not source.get("volumeHandle"):
        errs.append(FieldError.required(path.child("volumeHandle")))
    for key in ("controllerPublishSecretRef", "controllerExpandSecretRef", "nodePublishSecretRef",
                "nodeExpandSecretRef"):
        if source.get(key) is not None:
            errs += _check_secret_reference(obj_of(source[key]), path.child(key))
    return errs


_PV_SOURCE_CHECKS: Final[dict[str, Callable[[Obj, Path], list[FieldError]]]] = {
    "hostPath": _check_host_path, "nfs": _check_nfs, "local": _check_local, "csi": _check_csi_pv,
}


def validate_node_selector(selector: Obj, path: Path, *, allow_invalid_values: bool = False) -> list[FieldError]:
    """``ValidateNodeSelector``: at least one term, each valid."""
    terms_path = path.child("nodeSelectorTerms")
    terms = list_of(selector.get("nodeSelectorTerms"))
    if not terms:
        return [FieldError.required(terms_path, "must have at least one node selector term")]
    errs: list[FieldError] = []
    for i, term in enumerate(terms):
        errs += validate_node_selector_term(obj_of(term), terms_path.index(i),
                                            allow_invalid_values=allow_invalid_values)
    return errs


def _validate_access_modes(modes: Sequence[Any], path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    once_pod = other = False
    for mode in modes:
        if mode not in _ACCESS_MODES:
            errs.append(FieldError.not_supported(path, mode, _ACCESS_MODES))
        elif mode == "ReadWriteOncePod":
            once_pod = True
        else:
            other = True
    if once_pod and other:
        errs.append(FieldError.forbidden(path, "may not use ReadWriteOncePod with other access modes"))
    return errs


def _validate_class_name(name: str, path: Path) -> list[FieldError]:
    return [FieldError.invalid(path, name, msg) for msg in name_is_dns1123_subdomain(name, False)]


def validate_persistent_volume_spec(spec: Obj, path: Path) -> list[FieldError]:
    """``ValidatePersistentVolumeSpec`` of a PersistentVolume object (not an inline CSI volume)."""
    errs: list[FieldError] = []
    modes = list_of(spec.get("accessModes"))
    if not modes:
        errs.append(FieldError.required(path.child("accessModes")))
    errs += _validate_access_modes(modes, path.child("accessModes"))
    capacity = obj_of(spec.get("capacity"))
    capacity_path = path.child("capacity")
    if not capacity:
        errs.append(FieldError.required(capacity_path))
    if "storage" not in capacity or len(capacity) > 1:
        errs.append(FieldError.not_supported(capacity_path, dict(capacity), ("storage",)))
    for resource, raw in capacity.items():
        errs += _validate_positive_quantity(resource, raw, capacity_path.key(resource))
    policy = spec.get("persistentVolumeReclaimPolicy") or ""
    if policy and policy not in _RECLAIM_POLICIES:
        errs.append(FieldError.not_supported(path.child("persistentVolumeReclaimPolicy"), policy, _RECLAIM_POLICIES))
    affinity_set = spec.get("nodeAffinity") is not None
    if affinity_set:
        required = obj_of(spec["nodeAffinity"]).get("required")
        affinity_path = path.child("nodeAffinity")
        if required is None:
            errs.append(FieldError.required(affinity_path.child("required"), "must specify required node constraints"))
        else:
            errs += validate_node_selector(obj_of(required), affinity_path.child("required"))
    count = 0
    for key, name_in_error, checked_at in _PV_SOURCES:
        source = spec.get(key)
        if source is None:
            continue
        # Kubernetes counts flexVolume without checking for a second source first.
        if count and key != "flexVolume":
            errs.append(FieldError.forbidden(path.child(name_in_error), _MULTIPLE_VOLUME_TYPES))
            continue
        count += 1
        check = _PV_SOURCE_CHECKS.get(key)
        if check is not None:
            errs += check(obj_of(source), path.child(checked_at))
        if key == "local" and not affinity_set:
            errs.append(FieldError.required(path.child("nodeAffinity"), "Local volume requires node affinity"))
    if not count:
        errs.append(FieldError.required(path, "must specify a volume type"))
    host_path = obj_of(spec.get("hostPath")).get("path")
    if host_path is not None and posixpath.normpath(host_path) in ("/", "//") and policy == "Recycle":
        errs.append(FieldError.forbidden(path.child("persistentVolumeReclaimPolicy"),
                                         "may not be 'recycle' for a hostPath mount of '/'"))
    if spec.get("storageClassName"):
        errs += _validate_class_name(spec["storageClassName"], path.child("storageClassName"))
    mode = spec.get("volumeMode")
    if mode is not None and mode not in _VOLUME_MODES:
        errs.append(FieldError.not_supported(path.child("volumeMode"), mode, _VOLUME_MODES))
    return errs


def _validate_positive_quantity(resource: str, raw: Any, path: Path) -> list[FieldError]:
    """``validateBasicResource`` and ``ValidatePositiveQuantityValue`` of a capacity."""
    try:
        amount = parse_quantity(raw)
    except ValueError as e:
        return [FieldError.invalid(path, raw, str(e))]
    errs: list[FieldError] = []
    if amount < 0:
        errs.append(FieldError.invalid(path, whole_value(raw), "must be a valid resource quantity"))
    if amount <= 0:
        errs.append(FieldError.invalid(path, canonical_quantity(resource, raw), NOT_POSITIVE))
    return errs


def validate_persistent_volume(pv: Obj) -> list[FieldError]:
    errs = validate_core_meta(obj_of(pv.get("metadata")), namespaced=False)
    return errs + validate_persistent_volume_spec(obj_of(pv.get("spec")), SPEC)


def _pv_source(spec: Obj) -> dict[str, Any]:
    return {key: spec[key] for key in PV_SOURCE_KEYS if spec.get(key) is not None}


def validate_persistent_volume_update(new: Obj, old: Obj) -> list[FieldError]:
    """A PV update: its source, volume mode and (once set) node affinity are fixed at creation."""
    errs = validate_core_meta_update(obj_of(new.get("metadata")), obj_of(old.get("metadata")))
    new_spec, old_spec = obj_of(new.get("spec")), obj_of(old.get("spec"))
    errs += validate_persistent_volume(new)
    new_source, old_source = _pv_source(new_spec), _pv_source(old_spec)
    # A CSI volume may gain the secret its controller expands it with.
    old_csi, new_csi = obj_of(old_source.get("csi")), obj_of(new_source.get("csi"))
    if "csi" in old_source and "csi" in new_source and old_csi.get("controllerExpandSecretRef") is None:
        new_source["csi"] = {k: v for k, v in new_csi.items() if k != "controllerExpandSecretRef"}
    if semantic(new_source) != semantic(old_source):
        diff = "\n".join(diff_lines(semantic(old_source), semantic(new_source), "PersistentVolumeSource"))
        errs.append(FieldError.forbidden(SPEC.child("persistentvolumesource"),
                                         f"spec.persistentvolumesource is immutable after creation\n{diff}"))
    errs += validate_immutable(new_spec.get("volumeMode"), old_spec.get("volumeMode"), Path("volumeMode"))
    if old_spec.get("nodeAffinity") is not None and \
            semantic(new_spec.get("nodeAffinity")) != semantic(old_spec.get("nodeAffinity")):
        errs.append(FieldError.invalid(Path("nodeAffinity"), new_spec.get("nodeAffinity"),
                                       "field is immutable, except for updating from beta label to GA"))
    return errs


def validate_persistent_volume_status_update(new: Obj, old: Obj) -> list[FieldError]:
    return validate_core_meta_update(obj_of(new.get("metadata")), obj_of(old.get("metadata")))


# --- PersistentVolumeClaim -------------------------------------------------------------------------

_STORAGE: Final = "storage"
_CLAIM_TEMPLATE_META: Final = frozenset({"labels", "annotations"})


def _validate_data_source(source: Obj, path: Path, *, namespaced: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    if not source.get("name"):
        errs.append(FieldError.required(path.child("name")))
    kind = source.get("kind") or ""
    if not kind:
        errs.append(FieldError.required(path.child("kind")))
    group = source.get("apiGroup") or ""
    if not group and kind != "PersistentVolumeClaim":
        errs.append(FieldError.invalid(path, kind, "must be 'PersistentVolumeClaim' when referencing the default "
                                                   "apiGroup"))
    if group:
        errs += [FieldError.invalid(path.child("apiGroup"), group, msg) for msg in names.is_dns1123_subdomain(group)]
    namespace = source.get("namespace") if namespaced else None
    if namespace:
        errs += [FieldError.invalid(path.child("namespace"), namespace, msg)
                 for msg in names.is_dns1123_label(namespace)]
    return errs


def validate_persistent_volume_claim_spec(spec: Obj, path: Path) -> list[FieldError]:
    """``ValidatePersistentVolumeClaimSpec``: access modes, a positive storage request, a valid class."""
    errs: list[FieldError] = []
    modes = list_of(spec.get("accessModes"))
    if not modes:
        errs.append(FieldError.required(path.child("accessModes"), "at least 1 access mode is required"))
    if spec.get("selector") is not None:
        errs += validate_label_selector(obj_of(spec["selector"]), path.child("selector"))
    errs += _validate_access_modes(modes, path.child("accessModes"))
    # Kubernetes reports the storage request under spec.resources[storage].
    storage_path = path.child("resources").key(_STORAGE)
    requests = obj_of(obj_of(spec.get("resources")).get("requests"))
    if _STORAGE not in requests:
        errs.append(FieldError.required(storage_path))
    else:
        positive = _validate_positive_quantity(_STORAGE, requests[_STORAGE], storage_path)
        errs += positive or _quantity_errors(_STORAGE, requests[_STORAGE], storage_path)
    if spec.get("storageClassName"):
        errs += _validate_class_name(spec["storageClassName"], path.child("storageClassName"))
    mode = spec.get("volumeMode")
    if mode is not None and mode not in _VOLUME_MODES:
        errs.append(FieldError.not_supported(path.child("volumeMode"), mode, _VOLUME_MODES))
    source, ref = spec.get("dataSource"), spec.get("dataSourceRef")
    if source is not None:
        errs += _validate_data_source(obj_of(source), path.child("dataSource"), namespaced=False)
    if ref is not None:
        errs += _validate_data_source(obj_of(ref), path.child("dataSourceRef"), namespaced=True)
    if ref is not None and obj_of(ref).get("namespace"):
        if source is not None:
            errs.append(FieldError.invalid(path, str(path.child("dataSource")),
                                           "may not be specified when dataSourceRef.namespace is specified"))
    elif source is not None and ref is not None and \
            any(obj_of(source).get(k) != obj_of(ref).get(k) for k in ("apiGroup", "kind", "name")):
        errs.append(FieldError.invalid(path, str(path.child("dataSource")), "must match dataSourceRef"))
    return errs


def _quantity_errors(resource: str, raw: Any, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    validate_quantity(resource, raw, path, errs)
    return errs


def _validate_claim_template(template: Obj, path: Path) -> list[FieldError]:
    """``ValidatePersistentVolumeClaimTemplate``: only labels and annotations in its metadata, a valid spec."""
    meta = obj_of(template.get("metadata"))
    meta_path = path.child("metadata")
    errs = validate_annotations(meta.get("annotations"), meta_path.child("annotations"))
    errs += validate_labels(meta.get("labels"), meta_path.child("labels"))
    for key in meta:
        if key not in _CLAIM_TEMPLATE_META and meta[key] not in (None, "", [], {}, 0):
            errs.append(FieldError.forbidden(meta_path.child(key), "cannot be set"))
    return errs + validate_persistent_volume_claim_spec(obj_of(template.get("spec")), path.child("spec"))


def validate_persistent_volume_claim(pvc: Obj) -> list[FieldError]:
    errs = validate_core_meta(obj_of(pvc.get("metadata")), namespaced=True)
    return errs + validate_persistent_volume_claim_spec(obj_of(pvc.get("spec")), SPEC)


def validate_persistent_volume_claim_update(new: Obj, old: Obj) -> list[FieldError]:
    """A claim's spec is fixed at creation, except its storage request (which may grow) once bound.

    ``volumeName`` may be set once (the volume binder does), and a claim
    without a class may be given one.
    """
    new_meta, old_meta = obj_of(new.get("metadata")), obj_of(old.get("metadata"))
    errs = validate_core_meta_update(new_meta, old_meta)
    errs += validate_persistent_volume_claim(new)
    new_spec, old_spec = dict(obj_of(new.get("spec"))), dict(obj_of(old.get("spec")))
    new_annotations, old_annotations = obj_of(new_meta.get("annotations")), obj_of(old_meta.get("annotations"))
    if not old_spec.get("volumeName"):
        old_spec["volumeName"] = new_spec.get("volumeName")
    old_class = old_annotations.get(_BETA_STORAGE_CLASS)
    if old_class is not None and old_spec.get("storageClassName") is None and \
            new_spec.get("storageClassName") == old_class and \
            new_annotations.get(_BETA_STORAGE_CLASS, old_class) == old_class:
        new_spec.pop("storageClassName", None)
    else:
        errs += validate_immutable(new_annotations.get(_BETA_STORAGE_CLASS) or "", old_class or "",
                                   METADATA.child("annotations", _BETA_STORAGE_CLASS))
        if new_spec.get("storageClassName") is not None and old_spec.get("storageClassName") is None and \
                (old_class is None or new_spec["storageClassName"] == old_class):
            new_spec["storageClassName"] = None
            old_spec["storageClassName"] = None
    new_requests = obj_of(obj_of(new_spec.get("resources")).get("requests"))
    old_requests = obj_of(obj_of(old_spec.get("resources")).get("requests"))
    if obj_of(new.get("status")).get("phase") == "Bound" and new_requests:
        resources = dict(obj_of(new_spec.get("resources")))
        requests = dict(new_requests)
        if _STORAGE in old_requests:
            requests[_STORAGE] = old_requests[_STORAGE]
        else:
            requests.pop(_STORAGE, None)
        resources["requests"] = requests
        new_spec["resources"] = resources
    if semantic(new_spec) != semantic(old_spec):
        diff = "\n".join(diff_lines(semantic(old_spec), semantic(new_spec), "PersistentVolumeClaimSpec"))
        errs.append(FieldError.forbidden(SPEC, "spec is immutable after creation except resources.requests and "
                                               f"volumeAttributesClassName for bound claims\n{diff}"))
    try:
        shrunk = parse_quantity(new_requests.get(_STORAGE, 0)) < parse_quantity(old_requests.get(_STORAGE, 0))
    except ValueError:
        shrunk = False
    if shrunk:
        errs.append(FieldError.forbidden(SPEC.child("resources", "requests", _STORAGE),
                                         "field can not be less than previous value"))
    errs += validate_immutable(obj_of(new.get("spec")).get("volumeMode"), obj_of(old.get("spec")).get("volumeMode"),
                               Path("volumeMode"))
    return errs


def validate_persistent_volume_claim_status_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_core_meta_update(obj_of(new.get("metadata")), obj_of(old.get("metadata")))
    if not list_of(obj_of(new.get("spec")).get("accessModes")):
        errs.append(FieldError.required(Path("Spec", "accessModes")))
    for resource, raw in obj_of(obj_of(new.get("status")).get("capacity")).items():
        try:
            negative = parse_quantity(raw) < 0
        except ValueError as e:
            errs.append(FieldError.invalid(STATUS.child("capacity").key(resource), raw, str(e)))
            continue
        if negative:
            errs.append(FieldError.invalid(STATUS.child("capacity").key(resource), whole_value(raw),
                                           "must be a valid resource quantity"))
    return errs
