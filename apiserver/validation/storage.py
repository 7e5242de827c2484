"""The storage.k8s.io/v1 rules: defaulting and validation of StorageClasses, CSIDrivers, CSINodes,
VolumeAttachments and CSIStorageCapacities.

As ``pkg/apis/storage/v1/defaults.go`` and ``pkg/apis/storage/validation`` of
Kubernetes 1.32 (SELinuxMountReadWriteOncePod on, so CSIDrivers default
``seLinuxMount: false``). A StorageClass's provisioner, parameters, reclaim
policy and binding mode never change; a VolumeAttachment's spec never
changes; a CSIStorageCapacity's topology and class never change.

Not covered: the inline PersistentVolume spec of a VolumeAttachment (its Pod
volume rules are the core group's) and the topology terms of StorageClasses
beyond their keys.

``default_*`` functions mutate what they are handed and are idempotent;
``validate_*`` functions return every problem found. Pure; no state.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from apiserver.validation.field import ErrorType, FieldError, Path
from apiserver.validation.meta import (
    validate_label_selector,
    validate_object_meta,
    validate_object_meta_update,
    validate_qualified_name,
)
from apiserver.validation.values import items, nonnegative, obj, optional_enum
from machinery.api import names
from machinery.api.quantity import parse_quantity

Obj = Mapping[str, Any]
Mut = dict[str, Any]

_RECLAIM_POLICIES: Final = ("Delete", "Retain")
_BINDING_MODES: Final = ("Immediate", "WaitForFirstConsumer")
_FS_GROUP_POLICIES: Final = ("File", "None", "ReadWriteOnceWithFSType")
_LIFECYCLE_MODES: Final = ("Ephemeral", "Persistent")
_MAX_PARAMETERS: Final = 512
_MAX_PARAMETERS_SIZE: Final = 256 * 1024
_MAX_CSI_DRIVER_NAME: Final = 63
_MAX_CSI_NODE_ID: Final = 192
_MAX_ATTACHED_VOLUME_METADATA_SIZE: Final = 256 * 1024
_MAX_VOLUME_ERROR_MESSAGE: Final = 1024
_MIN_TOKEN_EXPIRATION: Final = 600
_MAX_TOKEN_EXPIRATION: Final = 1 << 32
#: The annotations that make a StorageClass the default one.
DEFAULT_CLASS_ANNOTATIONS: Final = ("storageclass.kubernetes.io/is-default-class",
                                    "storageclass.beta.kubernetes.io/is-default-class")


def is_default_class(storage_class: Obj) -> bool:
    """``IsDefaultAnnotation``: the class is annotated as the cluster's default."""
    annotations = obj(obj(storage_class.get("metadata")).get("annotations"))
    return any(annotations.get(key) == "true" for key in DEFAULT_CLASS_ANNOTATIONS)


# --- defaulting -------------------------------------------------------------------------------

def default_storage_class(storage_class: Mut) -> None:
    if storage_class.get("reclaimPolicy") is None:
        storage_class["reclaimPolicy"] = "Delete"
    if storage_class.get("volumeBindingMode") is None:
        storage_class["volumeBindingMode"] = "Immediate"


def default_csi_driver(driver: Mut) -> None:
    spec = driver.get("spec")
    if not isinstance(spec, dict):
        spec = driver["spec"] = {}
    for key, value in (("attachRequired", True), ("podInfoOnMount", False), ("storageCapacity", False),
                       ("fsGroupPolicy", "ReadWriteOnceWithFSType"), ("requiresRepublish", False),
                       ("seLinuxMount", False)):
        if spec.get(key) is None:
            spec[key] = value
    if not spec.get("volumeLifecycleModes"):
        spec["volumeLifecycleModes"] = ["Persistent"]


# --- shared pieces -------------------------------------------------------------------------------

def validate_csi_driver_name(name: str, path: Path) -> list[FieldError]:
    """``ValidateCSIDriverName``: a DNS subdomain of at most 63 characters, case aside."""
    errs: list[FieldError] = []
    if not name:
        errs.append(FieldError.required(path))
    if len(name) > _MAX_CSI_DRIVER_NAME:
        errs.append(FieldError(ErrorType.TOO_LONG, str(path), name,
                               f"may not be more than {_MAX_CSI_DRIVER_NAME} bytes"))
    errs += [FieldError.invalid(path, name, msg) for msg in names.is_dns1123_subdomain(name.lower())]
    return errs


def _nonnegative_quantity(value: Any, path: Path) -> list[FieldError]:
    try:
        negative = parse_quantity(str(value)) < 0
    except (ValueError, TypeError):
        return []
    return [FieldError.invalid(path, str(value), "must be greater than or equal to 0")] if negative else []


# --- StorageClass ---------------------------------------------------------------------------------

def _validate_parameters(params: Obj, path: Path) -> list[FieldError]:
    if len(params) > _MAX_PARAMETERS:
        return [FieldError(ErrorType.TOO_LONG, str(path), "Provisioner Parameters exceeded max allowed",
                           f"may not be more than {_MAX_PARAMETERS} bytes")]
    errs = [FieldError.invalid(path, key, "field can not be empty.") for key in params if not key]
    if sum(len(k) + len(str(v)) for k, v in params.items()) > _MAX_PARAMETERS_SIZE:
        errs.append(FieldError.too_long(path, _MAX_PARAMETERS_SIZE))
    return errs


def validate_storage_class(storage_class: Obj) -> list[FieldError]:
    errs = validate_object_meta(obj(storage_class.get("metadata")), namespaced=False)
    provisioner = storage_class.get("provisioner") or ""
    if not provisioner:
        errs.append(FieldError.required(Path("provisioner")))
    else:
        errs += validate_qualified_name(provisioner.lower(), Path("provisioner"))
    errs += _validate_parameters(obj(storage_class.get("parameters")), Path("parameters"))
    reclaim = storage_class.get("reclaimPolicy")
    if reclaim:
        errs += optional_enum(reclaim, Path("reclaimPolicy"), _RECLAIM_POLICIES)
    mode = storage_class.get("volumeBindingMode")
    if mode is None:
        errs.append(FieldError.required(Path("volumeBindingMode")))
    else:
        errs += optional_enum(mode, Path("volumeBindingMode"), _BINDING_MODES)
    for i, term in enumerate(items(storage_class.get("allowedTopologies"))):
        term_path = Path("allowedTopologies").index(i).child("matchLabelExpressions")
        expressions = items(obj(term).get("matchLabelExpressions"))
        if not expressions:
            errs.append(FieldError.required(term_path))
        for j, expression in enumerate(expressions):
            errs += validate_qualified_name(obj(expression).get("key") or "", term_path.index(j).child("key"))
            if not items(obj(expression).get("values")):
                errs.append(FieldError.required(term_path.index(j).child("values")))
    return errs


def validate_storage_class_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_object_meta_update(obj(new.get("metadata")), obj(old.get("metadata")))
    if obj(new.get("parameters")) != obj(old.get("parameters")):
        errs.append(FieldError.forbidden(Path("parameters"), "updates to parameters are forbidden."))
    if new.get("provisioner") != old.get("provisioner"):
        errs.append(FieldError.forbidden(Path("provisioner"), "updates to provisioner are forbidden."))
    if new.get("reclaimPolicy") != old.get("reclaimPolicy"):
        errs.append(FieldError.forbidden(Path("reclaimPolicy"), "updates to reclaimPolicy are forbidden."))
    if new.get("volumeBindingMode") != old.get("volumeBindingMode"):
        errs.append(FieldError.invalid(Path("volumeBindingMode"), new.get("volumeBindingMode"), "field is immutable"))
    return errs


# --- CSIDriver ------------------------------------------------------------------------------------

def _validate_csi_driver_spec(spec: Obj, path: Path) -> list[FieldError]:
    errs = optional_enum(spec.get("fsGroupPolicy"), path.child("fsGroupPolicy"), _FS_GROUP_POLICIES)
    for i, mode in enumerate(items(spec.get("volumeLifecycleModes"))):
        if mode not in _LIFECYCLE_MODES:
            errs.append(FieldError.not_supported(path.child("volumeLifecycleModes").index(i), mode, _LIFECYCLE_MODES))
    return errs + _validate_token_requests(items(spec.get("tokenRequests")), path.child("tokenRequests"))


def _validate_token_requests(requests: Any, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    audiences: set[str] = set()
    for i, request in enumerate(requests):
        request = obj(request)
        audience = request.get("audience") or ""
        if audience in audiences:
            errs.append(FieldError.duplicate(path.index(i).child("audience"), audience))
        audiences.add(audience)
        expiration = request.get("expirationSeconds")
        if expiration is not None:
            if expiration < _MIN_TOKEN_EXPIRATION:
                errs.append(FieldError.invalid(path.index(i).child("expirationSeconds"), expiration,
                                               "may not specify a duration less than 10 minutes"))
            if expiration > _MAX_TOKEN_EXPIRATION:
                errs.append(FieldError.invalid(path.index(i).child("expirationSeconds"), expiration,
                                               "may not specify a duration larger than 2^32 seconds"))
    return errs


def validate_csi_driver(driver: Obj) -> list[FieldError]:
    # Kubernetes names the field "name" here, not metadata.name.
    errs = validate_csi_driver_name(str(obj(driver.get("metadata")).get("name") or ""), Path("name"))
    return errs + _validate_csi_driver_spec(obj(driver.get("spec")), Path("spec"))


def validate_csi_driver_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_object_meta_update(obj(new.get("metadata")), obj(old.get("metadata")))
    errs += validate_csi_driver(new)
    spec, old_spec = obj(new.get("spec")), obj(old.get("spec"))
    # Kubernetes misspells this path.
    for key, field in (("attachRequired", "attachedRequired"), ("volumeLifecycleModes", "volumeLifecycleModes")):
        if spec.get(key) != old_spec.get(key):
            errs.append(FieldError.invalid(Path("spec", field), spec.get(key), "field is immutable"))
    return errs


# --- CSINode --------------------------------------------------------------------------------------

def _validate_csi_node_drivers(drivers: Any, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, driver in enumerate(drivers):
        driver, driver_path = obj(driver), path.index(i)
        name = str(driver.get("name") or "")
        errs += validate_csi_driver_name(name, driver_path.child("name"))
        if name in seen:
            errs.append(FieldError.duplicate(driver_path.child("name"), name))
        seen.add(name)
        node_id = str(driver.get("nodeID") or "")
        if not node_id:
            errs.append(FieldError.required(driver_path.child("nodeID"), "nodeID cannot be empty"))
        if len(node_id) > _MAX_CSI_NODE_ID:
            errs.append(FieldError.invalid(driver_path.child("nodeID"), node_id,
                                           f"must be {_MAX_CSI_NODE_ID} characters or less"))
        keys: set[str] = set()
        for j, key in enumerate(items(driver.get("topologyKeys"))):
            if not key:
                errs.append(FieldError.required(driver_path.child("topologyKeys"), key))
            if key in keys:
                errs.append(FieldError.duplicate(driver_path.child("topologyKeys").index(j), key))
            keys.add(key)
            errs += validate_qualified_name(key, driver_path.child("topologyKeys"))
        errs += nonnegative(obj(driver.get("allocatable")).get("count"), driver_path.child("allocatable", "count"))
    return errs


def validate_csi_node(node: Obj) -> list[FieldError]:
    errs = validate_object_meta(obj(node.get("metadata")), namespaced=False)
    return errs + _validate_csi_node_drivers(items(obj(node.get("spec")).get("drivers")), Path("spec", "drivers"))


def validate_csi_node_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_object_meta_update(obj(new.get("metadata")), obj(old.get("metadata")))
    errs += _validate_csi_node_drivers(items(obj(new.get("spec")).get("drivers")), Path("spec", "drivers"))
    old_drivers = {obj(d).get("name"): obj(d) for d in items(obj(old.get("spec")).get("drivers"))}
    for i, driver in enumerate(items(obj(new.get("spec")).get("drivers"))):
        before = old_drivers.get(obj(driver).get("name"))
        if before is None:
            continue
        driver_path = Path("spec", "drivers").index(i)
        for key in ("nodeID", "topologyKeys", "allocatable"):
            if obj(driver).get(key) != before.get(key):
                errs.append(FieldError.invalid(driver_path.child(key), obj(driver).get(key), "field is immutable"))
    return errs


# --- VolumeAttachment -----------------------------------------------------------------------------

def _validate_volume_attachment_status(status: Obj, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    metadata = obj(status.get("attachmentMetadata"))
    if sum(len(k) + len(str(v)) for k, v in metadata.items()) > _MAX_ATTACHED_VOLUME_METADATA_SIZE:
        errs.append(FieldError.too_long(path.child("attachmentMetadata"), _MAX_ATTACHED_VOLUME_METADATA_SIZE))
    for key in ("attachError", "detachError"):
        message = str(obj(status.get(key)).get("message") or "")
        if len(message) > _MAX_VOLUME_ERROR_MESSAGE:
            errs.append(FieldError.invalid(path.child(key, "message"), message,
                                           f"must be smaller than {_MAX_VOLUME_ERROR_MESSAGE} characters"))
    return errs


def validate_volume_attachment(attachment: Obj) -> list[FieldError]:
    errs = validate_object_meta(obj(attachment.get("metadata")), namespaced=False)
    spec, path = obj(attachment.get("spec")), Path("spec")
    attacher = str(spec.get("attacher") or "")
    if not attacher:
        errs.append(FieldError.required(path.child("attacher")))
    source = obj(spec.get("source"))
    inline, pv = source.get("inlineVolumeSpec"), source.get("persistentVolumeName")
    message = "must specify exactly one of inlineVolumeSpec and persistentVolumeName"
    if inline is None and pv is None:
        errs.append(FieldError.required(path.child("source"), message))
    elif inline is not None and pv is not None:
        errs.append(FieldError.forbidden(path.child("source"), message))
    elif pv is not None and not pv:
        errs.append(FieldError.required(path.child("source", "persistentVolumeName"),
                                        "must specify non empty persistentVolumeName"))
    node = str(spec.get("nodeName") or "")
    errs += [FieldError.invalid(path.child("nodeName"), node, msg) for msg in names.is_dns1123_subdomain(node)]
    errs += _validate_volume_attachment_status(obj(attachment.get("status")), Path("status"))
    # ValidateVolumeAttachmentV1: the attacher is a CSI driver, the volume a PersistentVolume's name.
    if attacher:
        errs += validate_csi_driver_name(attacher, Path("spec.attacher"))
    if pv:
        errs += [FieldError.invalid(Path("spec.source.persistentVolumeName"), pv, msg)
                 for msg in names.is_dns1123_subdomain(pv)]
    return errs


def validate_volume_attachment_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_object_meta_update(obj(new.get("metadata")), obj(old.get("metadata")))
    errs += validate_volume_attachment(new)
    if obj(new.get("spec")) != obj(old.get("spec")):
        errs.append(FieldError.invalid(Path("spec"), new.get("spec"), "field is immutable"))
    return errs


def validate_volume_attachment_status_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_object_meta_update(obj(new.get("metadata")), obj(old.get("metadata")))
    return errs + _validate_volume_attachment_status(obj(new.get("status")), Path("status"))


# --- CSIStorageCapacity ---------------------------------------------------------------------------

def validate_csi_storage_capacity(capacity: Obj) -> list[FieldError]:
    errs = validate_object_meta(obj(capacity.get("metadata")), namespaced=True)
    errs += validate_label_selector(capacity.get("nodeTopology"), Path("nodeTopology"))
    class_name = str(capacity.get("storageClassName") or "")
    errs += [FieldError.invalid(Path("storageClassName"), class_name, msg)
             for msg in names.is_dns1123_subdomain(class_name)]
    for key in ("capacity", "maximumVolumeSize"):
        if capacity.get(key) is not None:
            errs += _nonnegative_quantity(capacity[key], Path(key))
    return errs


def validate_csi_storage_capacity_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_object_meta_update(obj(new.get("metadata")), obj(old.get("metadata")))
    errs += validate_csi_storage_capacity(new)
    for key in ("nodeTopology", "storageClassName"):
        if new.get(key) != old.get(key):
            errs.append(FieldError.invalid(Path(key), new.get(key), "field is immutable"))
    return errs
