"""Validation of Pods and of the Pod templates every workload kind embeds.

This is the Pod half of ``pkg/apis/core/validation`` of Kubernetes 1.32, rule
by rule, with the feature gates at their 1.32 defaults. The public entry
points are:

- :func:`validate_pod`, :func:`validate_pod_update`, :func:`validate_pod_status_update`,
  :func:`validate_pod_ephemeral_containers_update` and :func:`validate_binding` for the
  ``pods`` resource and its subresources;
- :func:`validate_pod_template_spec` (``ValidatePodTemplateSpec``) for the
  ``spec.template`` of a Deployment, ReplicaSet, StatefulSet, DaemonSet, Job,
  CronJob, ReplicationController or PodTemplate: call it with the template and
  its path, and add the kind's own rules (the restart policies it allows, its
  selector) beside it, with :func:`validate_template_matches_selector` and
  :func:`validate_template_keeps_running` where the kind has those rules;
- :func:`validate_pod_spec` for a bare PodSpec.

Not covered, because kubesim has nothing they could act on: Windows and
AppArmor options, resource claims (DRA), seccomp/AppArmor annotations, the
deeper checks of cloud volume sources (their presence still counts towards
"exactly one volume source"), and downward-API divisors.

Pure functions over plain dicts; no state.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from apiserver.validation.common import (
    MAX_INT32,
    NOT_POSITIVE,
    PROTOCOLS,
    SPEC,
    STATUS,
    TAINT_EFFECTS,
    config_map_key_errors,
    diff_lines,
    enum_errors,
    in_range,
    is_dual_stack,
    list_of,
    obj_of,
    parse_ip,
    port_name_errors,
    range_error,
    semantic,
    validate_core_meta,
    validate_core_meta_update,
    validate_ip,
    validate_port_num_or_name,
)
from apiserver.validation.field import FieldError, Path
from apiserver.validation.meta import (
    METADATA,
    name_is_dns1123_label,
    name_is_dns1123_subdomain,
    validate_annotations,
    validate_dns1123_label,
    validate_dns1123_subdomain,
    validate_immutable,
    validate_label_selector,
    validate_labels,
    validate_nonnegative,
    validate_qualified_name,
)
from apiserver.validation.nodeselector import (
    validate_node_selector_term,
)
from apiserver.validation.resources import (
    canonical_quantity,
    is_huge_pages,
    is_overcommit_allowed,
    validate_container_resource,
)
from apiserver.validation.values import template_labels
from apiserver.validation.volume import (
    validate_local_descending_path,
    validate_object_field_selector,
    validate_resource_field_selector,
    validate_volumes,
)
from machinery.api import names
from machinery.api.labels import Selector
from machinery.api.names import go_quote

Obj = Mapping[str, Any]


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
_PREEMPTION_POLICIES: Final = ("PreemptLowerPriority", "Never")
_TOLERATION_OPERATORS: Final = ("Equal", "Exists")
_SCHEMES: Final = ("HTTP", "HTTPS")
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
#: The fields of an ephemeral container that must stay unset, in the order Kubernetes reports them
#: (the fields of ``EphemeralContainerCommon`` outside its allow-list).
_EPHEMERAL_CONTAINER_FORBIDDEN: Final = ("ports", "resources", "resizePolicy", "restartPolicy", "livenessProbe",
                                         "readinessProbe", "startupProbe", "lifecycle")
_SYSTEM_POD_CONDITIONS: Final = frozenset({"PodScheduled", "Ready", "Initialized"})
_ENV_FIELD_PATHS: Final = ("metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName",
                           "spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP",
                           "status.podIPs")
_UPDATABLE_POD_SPEC_FIELDS: Final = (
    "`spec.containers[*].image`",
    "`spec.initContainers[*].image`",
    "`spec.activeDeadlineSeconds`",
    "`spec.tolerations` (only additions to existing tolerations)",
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
)

_HTTP_HEADER_NAME: Final = re.compile(r"^[-A-Za-z0-9]+$")
_SYSCTL_SEGMENT: Final = "[a-z0-9]([-_a-z0-9]*[a-z0-9])?"
_SYSCTL_NAME: Final = re.compile(rf"^({_SYSCTL_SEGMENT}[\./])*{_SYSCTL_SEGMENT}$")


def _relaxed_env_var_name_errors(name: str) -> list[str]:
    # Kubernetes 1.32 enables RelaxedEnvironmentVariableValidation by default.
    if any(not 0x20 <= ord(ch) <= 0x7E or ch == "=" for ch in name):
        return [_RELAXED_ENV_VAR_NAME]
    return []


def validate_resource_requirements(requirements: Obj, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    lim_path, req_path = path.child("limits"), path.child("requests")
    limits, requests = obj_of(requirements.get("limits")), obj_of(requirements.get("requests"))
    parsed_limits = {resource: validate_container_resource(resource, raw, lim_path.key(resource), errs)
                     for resource, raw in limits.items()}
    for resource, raw in requests.items():
        quantity = validate_container_resource(resource, raw, req_path.key(resource), errs)
        if resource not in limits:
            if not is_overcommit_allowed(resource):
                errs.append(FieldError.required(lim_path,
                                                "Limit must be set for non overcommitable resources"))
            continue
        limit = parsed_limits[resource]
        if quantity is None or limit is None:
            continue
        # Kubernetes reports these on the requests map, not on the entry.
        shown, shown_limit = canonical_quantity(resource, raw), canonical_quantity(resource, limits[resource])
        if quantity != limit and not is_overcommit_allowed(resource):
            errs.append(FieldError.invalid(req_path, shown,
                                           f"must be equal to {resource} limit of {shown_limit}"))
        elif quantity > limit:
            errs.append(FieldError.invalid(
                req_path, shown, f"must be less than or equal to {resource} limit of {shown_limit}"))
    named = set(limits) | set(requests)
    if any(is_huge_pages(r) for r in named) and not named & _QOS_RESOURCES:
        errs.append(FieldError.forbidden(path, "HugePages require cpu or memory"))
    return errs

# --- Pod: containers ---------------------------------------------------------------------------

def _validate_ports(ports: Sequence[Obj], path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, port in enumerate(ports):
        port_path = path.index(i)
        name = port.get("name") or ""
        if name:
            problems = port_name_errors(name)
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
            errs += in_range(container_port, port_path.child("containerPort"), 1, 65535)
        host_port = int(port.get("hostPort") or 0)
        if host_port != 0:
            errs += in_range(host_port, port_path.child("hostPort"), 1, 65535)
        protocol = port.get("protocol") or ""
        if not protocol:
            errs.append(FieldError.required(port_path.child("protocol")))
        elif protocol not in PROTOCOLS:
            errs.append(FieldError.not_supported(port_path.child("protocol"), protocol, PROTOCOLS))
    return errs


def _validate_key_selector(selector: Obj, path: Path) -> list[FieldError]:
    name = selector.get("name") or ""
    errs = [FieldError.invalid(path.child("name"), name, msg)
            for msg in name_is_dns1123_subdomain(name, False)]
    key = selector.get("key") or ""
    if not key:
        errs.append(FieldError.required(path.child("key")))
    else:
        errs += [FieldError.invalid(path.child("key"), key, msg) for msg in config_map_key_errors(key)]
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
        errs += validate_object_field_selector(source["fieldRef"], _ENV_FIELD_PATHS, path.child("fieldRef"))
    if source.get("resourceFieldRef") is not None:
        count += 1
        errs += validate_resource_field_selector(source["resourceFieldRef"], path.child("resourceFieldRef"),
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
    devices = {d.get("name") or "": d.get("devicePath") or "" for d in list_of(container.get("volumeDevices"))}
    mount_paths: set[str] = set()
    privileged = bool(obj_of(container.get("securityContext")).get("privileged"))
    for i, mount in enumerate(list_of(container.get("volumeMounts"))):
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
            errs += validate_local_descending_path(sub_path, path.child("subPath"))
        if sub_path_expr:
            if sub_path:
                errs.append(FieldError.invalid(item_path.child("subPathExpr"), sub_path_expr,
                                               "subPathExpr and subPath are mutually exclusive"))
            errs += validate_local_descending_path(sub_path_expr, path.child("subPathExpr"))
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
    mounts = {m.get("name") or "": m.get("mountPath") or "" for m in list_of(container.get("volumeMounts"))}
    device_paths: set[str] = set()
    device_names: set[str] = set()
    for i, device in enumerate(list_of(container.get("volumeDevices"))):
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
            errs += validate_local_descending_path(local, path.child("localhostProfile"))
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
            errs += in_range(context[key], path.child(key), 0, MAX_INT32)
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
        if "CAP_SYS_ADMIN" in list_of(obj_of(context.get("capabilities")).get("add")):
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
    errs += enum_errors(container.get("terminationMessagePolicy"), path.child("terminationMessagePolicy"),
                  _TERMINATION_MESSAGE_POLICIES)
    errs += _validate_ports(list_of(container.get("ports")), path.child("ports"))
    errs += _validate_env(list_of(container.get("env")), path.child("env"))
    errs += _validate_env_from(list_of(container.get("envFrom")), path.child("envFrom"))
    errs += _validate_volume_mounts(container, volumes, path.child("volumeMounts"))
    errs += _validate_volume_devices(container, volumes, path.child("volumeDevices"))
    errs += enum_errors(container.get("imagePullPolicy"), path.child("imagePullPolicy"), _PULL_POLICIES)
    errs += validate_resource_requirements(obj_of(container.get("resources")), path.child("resources"))
    errs += _validate_resize_policy(list_of(container.get("resizePolicy")), path.child("resizePolicy"),
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
        errs += _validate_action(kind, obj_of(action), grace, path.child(kind))
    if not count:
        errs.append(FieldError.required(path, "must specify a handler type"))
    return errs


def _validate_action(kind: str, action: Obj, grace: int | None, path: Path) -> list[FieldError]:
    if kind == "exec":
        return [] if action.get("command") else [FieldError.required(path.child("command"))]
    if kind == "httpGet":
        errs = [] if action.get("path") else [FieldError.required(path.child("path"))]
        errs += validate_port_num_or_name(action.get("port"), path.child("port"))
        scheme = action.get("scheme") or ""
        if scheme not in _SCHEMES:
            errs.append(FieldError.not_supported(path.child("scheme"), scheme, _SCHEMES))
        for header in list_of(action.get("httpHeaders")):
            header_name = header.get("name") or ""
            if not _HTTP_HEADER_NAME.match(header_name):
                errs.append(FieldError.invalid(
                    path.child("httpHeaders"), header_name,
                    "a valid HTTP header must consist of alphanumeric characters or '-' "
                    "(e.g. 'X-Header-Name', regex used for validation is '[-A-Za-z0-9]+')"))
        return errs
    if kind in ("tcpSocket", "grpc"):
        return validate_port_num_or_name(action.get("port"), path.child("port"))
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
        for j, port in enumerate(list_of(container.get("ports"))):
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
    containers = list_of(spec.get("containers"))
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
    seen = {c.get("name") or "" for c in list_of(spec.get("containers"))}
    errs: list[FieldError] = []
    for i, container in enumerate(list_of(spec.get("initContainers"))):
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


def _is_set(key: str, value: Any) -> bool:
    """Whether a field differs from Go's zero value: ``resources`` is a struct, the others pointers or lists."""
    if key == "resources":
        return isinstance(value, Mapping) and any(v is not None for v in value.values())
    return value is not None


def _validate_ephemeral_containers(spec: Obj, volumes: Mapping[str, Obj], path: Path) -> list[FieldError]:
    """``validateEphemeralContainers``: debugging containers may not claim what the Pod's own do.

    Names are unique across every kind of container, a target container must
    be a regular or init container, and only the fields of
    ``_EPHEMERAL_CONTAINER_FORBIDDEN``'s complement may be set.
    """
    containers = list_of(spec.get("ephemeralContainers"))
    if not containers:
        return []
    others = {c.get("name") or "" for key in ("containers", "initContainers") for c in list_of(spec.get(key))}
    seen = set(others)
    errs: list[FieldError] = []
    for i, container in enumerate(containers):
        item_path = path.index(i)
        errs += _validate_container_common(container, volumes, spec, item_path)
        image = container.get("image") or ""
        if image != image.strip():
            errs.append(FieldError.invalid(item_path.child("image"), image, _WHITESPACE))
        name = container.get("name") or ""
        if name in seen:
            errs.append(FieldError.duplicate(item_path.child("name"), name))
        else:
            seen.add(name)
        target = container.get("targetContainerName") or ""
        if target and target not in others:
            errs.append(FieldError.not_found(item_path.child("targetContainerName"), target))
        for key in _EPHEMERAL_CONTAINER_FORBIDDEN:
            if _is_set(key, container.get(key)):
                errs.append(FieldError.forbidden(item_path.child(key), "cannot be set for an Ephemeral Container"))
        for j, mount in enumerate(list_of(container.get("volumeMounts"))):
            for key in ("subPath", "subPathExpr"):
                if mount.get(key):
                    errs.append(FieldError.forbidden(item_path.child("volumeMounts").index(j).child(key),
                                                     "cannot be set for an Ephemeral Container"))
    return errs

# --- Pod: scheduling -----------------------------------------------------------------------------

def validate_tolerations(tolerations: Sequence[Obj], path: Path) -> list[FieldError]:
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
        if effect and effect not in TAINT_EFFECTS:
            errs.append(FieldError.not_supported(item_path.child("effect"), effect, TAINT_EFFECTS))
    return errs


def _validate_node_affinity(affinity: Obj, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
    if required is not None:
        terms_path = path.child("requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")
        terms = list_of(required.get("nodeSelectorTerms"))
        if not terms:
            errs.append(FieldError.required(terms_path, "must have at least one node selector term"))
        for i, term in enumerate(terms):
            errs += validate_node_selector_term(term, terms_path.index(i), allow_invalid_values=False)
    preferred_path = path.child("preferredDuringSchedulingIgnoredDuringExecution")
    for i, term in enumerate(list_of(affinity.get("preferredDuringSchedulingIgnoredDuringExecution"))):
        weight = int(term.get("weight") or 0)
        if not 0 < weight <= 100:
            errs.append(FieldError.invalid(preferred_path.index(i).child("weight"), weight,
                                           "must be in the range 1-100"))
        # Preferred terms may name label values that no node has yet.
        errs += validate_node_selector_term(obj_of(term.get("preference")),
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
    for namespace in list_of(term.get("namespaces")):
        errs += [FieldError.invalid(path.child("namespace"), namespace, msg)
                 for msg in name_is_dns1123_label(namespace, False)]
    match_keys, mismatch_keys = list_of(term.get("matchLabelKeys")), list_of(term.get("mismatchLabelKeys"))
    errs += _validate_label_keys(match_keys, selector, path.child("matchLabelKeys"))
    errs += _validate_label_keys(mismatch_keys, selector, path.child("mismatchLabelKeys"))
    if selector is not None:
        selector_keys = set(obj_of(selector.get("matchLabels")))
        positions = {key: i for i, key in enumerate(match_keys)}
        for expr in list_of(selector.get("matchExpressions")):
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
    for i, term in enumerate(list_of(affinity.get("requiredDuringSchedulingIgnoredDuringExecution"))):
        errs += _validate_pod_affinity_term(term, required_path.index(i))
    preferred_path = path.child("preferredDuringSchedulingIgnoredDuringExecution")
    for i, weighted in enumerate(list_of(affinity.get("preferredDuringSchedulingIgnoredDuringExecution"))):
        weight = int(weighted.get("weight") or 0)
        if not 0 < weight <= 100:
            errs.append(FieldError.invalid(preferred_path.index(i).child("weight"), weight,
                                           "must be in the range 1-100"))
        errs += _validate_pod_affinity_term(obj_of(weighted.get("podAffinityTerm")),
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
            errs.append(FieldError.invalid(item_path.child("maxSkew"), max_skew, NOT_POSITIVE))
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
                errs.append(FieldError.invalid(item_path.child("minDomains"), min_domains, NOT_POSITIVE))
            if action != "DoNotSchedule":
                errs.append(FieldError.invalid(
                    item_path.child("minDomains"), min_domains,
                    f"can only use minDomains if whenUnsatisfiable=DoNotSchedule, not {action}"))
        for key in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
            policy = constraint.get(key)
            if policy is not None and policy not in _NODE_INCLUSION_POLICIES:
                errs.append(FieldError.not_supported(item_path.child(key), policy, _NODE_INCLUSION_POLICIES))
        selector = constraint.get("labelSelector")
        match_keys = list_of(constraint.get("matchLabelKeys"))
        if match_keys:
            keys_path = item_path.child("matchLabelKeys")
            selector_keys: set[str] = set()
            if selector is None:
                errs.append(FieldError.forbidden(keys_path,
                                                 "must not be specified when labelSelector is not set"))
            else:
                selector_keys = set(obj_of(selector.get("matchLabels")))
                selector_keys |= {e.get("key") or "" for e in list_of(selector.get("matchExpressions"))}
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
            errs += in_range(context[key], path.child(key), 0, MAX_INT32)
    for i, gid in enumerate(list_of(context.get("supplementalGroups"))):
        errs += in_range(gid, path.child("supplementalGroups").index(i), 0, MAX_INT32)
    if spec.get("shareProcessNamespace") and spec.get("hostPID"):
        errs.append(FieldError.invalid(path.child("shareProcessNamespace"), True,
                                       "ShareProcessNamespace and HostPID cannot both be enabled"))
    seen: set[str] = set()
    for i, sysctl in enumerate(list_of(context.get("sysctls"))):
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
    nameservers = list_of(config.get("nameservers"))
    if len(nameservers) > 3:
        errs.append(FieldError.invalid(path.child("nameservers"), nameservers,
                                       "must not have more than 3 nameservers"))
    for i, server in enumerate(nameservers):
        errs += validate_ip(server, path.child("nameservers").index(i))
    searches = list_of(config.get("searches"))
    if len(searches) > 32:
        errs.append(FieldError.invalid(path.child("searches"), searches,
                                       "must not have more than 32 search paths"))
    if len(" ".join(searches)) > 2048:
        errs.append(FieldError.invalid(
            path.child("searches"), searches,
            "must not have more than 2048 characters (including spaces) in the search list"))
    for i, search in enumerate(searches):
        errs += validate_dns1123_subdomain(search.removesuffix("."), path.child("searches").index(i))
    for i, option in enumerate(list_of(config.get("options"))):
        if not option.get("name"):
            errs.append(FieldError.required(path.child("options").index(i), "must not be empty"))
    return errs


def _validate_host_network_ports(spec: Obj, path: Path, *, is_pod: bool) -> list[FieldError]:
    if not spec.get("hostNetwork"):
        return []
    errs: list[FieldError] = []
    for i, container in enumerate(list_of(spec.get("containers"))):
        for j, port in enumerate(list_of(container.get("ports"))):
            host_port, container_port = int(port.get("hostPort") or 0), int(port.get("containerPort") or 0)
            # A template may leave hostPort to the Pod's defaulting; a Pod may not.
            if (is_pod or host_port != 0) and host_port != container_port:
                port_path = path.child("containers").index(i).child("ports").index(j).child("hostPort")
                errs.append(FieldError.invalid(port_path, host_port,
                                               "must match `containerPort` when `hostNetwork` is true"))
    return errs


def validate_pod_spec(spec: Obj, path: Path, *, is_pod: bool = False) -> list[FieldError]:
    """``ValidatePodSpec``: a PodSpec at ``path``, of a Pod (``is_pod``) or of a template.

    A template may leave what the Pod's own defaulting fills in (host ports on
    the host network); everything else is judged alike.
    """
    errs: list[FieldError] = []
    if spec.get("terminationGracePeriodSeconds") is None:
        errs.append(FieldError.required(path.child("terminationGracePeriodSeconds")))
    volumes, volume_errs = validate_volumes(list_of(spec.get("volumes")), path.child("volumes"))
    errs += volume_errs
    errs += _validate_containers(spec, volumes, path.child("containers"))
    errs += _validate_init_containers(spec, volumes, path.child("initContainers"))
    errs += _validate_ephemeral_containers(spec, volumes, path.child("ephemeralContainers"))
    errs += _validate_host_network_ports(spec, path, is_pod=is_pod)
    errs += enum_errors(spec.get("restartPolicy"), path.child("restartPolicy"), _RESTART_POLICIES)
    errs += enum_errors(spec.get("dnsPolicy"), path.child("dnsPolicy"), _DNS_POLICIES)
    errs += validate_labels(spec.get("nodeSelector"), path.child("nodeSelector"))
    errs += _validate_pod_security_context(spec, path.child("securityContext"))
    errs += _validate_affinity(spec.get("affinity"), path.child("affinity"))
    errs += _validate_dns_config(spec, path.child("dnsConfig"))
    for i, gate in enumerate(list_of(spec.get("readinessGates"))):
        errs += validate_qualified_name(gate.get("conditionType") or "",
                                        path.child("readinessGates").index(i).child("conditionType"))
    seen_gates: set[str] = set()
    for i, gate in enumerate(list_of(spec.get("schedulingGates"))):
        gate_name = gate.get("name") or ""
        errs += validate_qualified_name(gate_name, path.child("schedulingGates").index(i))
        if gate_name in seen_gates:
            errs.append(FieldError.duplicate(path.child("schedulingGates").index(i), gate_name))
        seen_gates.add(gate_name)
    errs += _validate_topology_spread(list_of(spec.get("topologySpreadConstraints")),
                                      path.child("topologySpreadConstraints"))
    for key in ("serviceAccountName", "nodeName"):
        if spec.get(key):
            errs += [FieldError.invalid(path.child(key), spec[key], msg)
                     for msg in name_is_dns1123_subdomain(spec[key], False)]
    deadline = spec.get("activeDeadlineSeconds")
    if deadline is not None:
        errs += in_range(deadline, path.child("activeDeadlineSeconds"), 1, MAX_INT32)
    for key in ("hostname", "subdomain"):
        if spec.get(key):
            errs += validate_dns1123_label(spec[key], path.child(key))
    errs += validate_tolerations(list_of(spec.get("tolerations")), path.child("tolerations"))
    for i, alias in enumerate(list_of(spec.get("hostAliases"))):
        alias_path = path.child("hostAliases").index(i)
        errs += validate_ip(alias.get("ip") or "", alias_path.child("ip"))
        for j, hostname in enumerate(list_of(alias.get("hostnames"))):
            errs += validate_dns1123_subdomain(hostname, alias_path.child("hostnames").index(j))
    if spec.get("priorityClassName"):
        errs += [FieldError.invalid(path.child("priorityClassName"), spec["priorityClassName"], msg)
                 for msg in name_is_dns1123_subdomain(spec["priorityClassName"], False)]
    if spec.get("runtimeClassName") is not None:
        errs += [FieldError.invalid(path.child("runtimeClassName"), spec["runtimeClassName"], msg)
                 for msg in name_is_dns1123_subdomain(spec["runtimeClassName"], False)]
    if spec.get("preemptionPolicy") is not None:
        errs += enum_errors(spec["preemptionPolicy"], path.child("preemptionPolicy"), _PREEMPTION_POLICIES)
    if spec.get("overhead") is not None:
        errs += validate_resource_requirements({"limits": spec["overhead"]}, path.child("overhead"))
    operating_system = spec.get("os")
    if operating_system is not None:
        os_name = operating_system.get("name") or ""
        if not os_name:
            errs.append(FieldError.required(path.child("os", "name"), "cannot be empty"))
        elif os_name not in _OPERATING_SYSTEMS:
            errs.append(FieldError.not_supported(path.child("os"), os_name, _OPERATING_SYSTEMS))
    return errs


def validate_pod_template_spec(template: Obj, path: Path) -> list[FieldError]:
    """``ValidatePodTemplateSpec``: the ``spec.template`` every workload kind embeds, at ``path``.

    Checks the template's labels and annotations (reported as
    ``<path>.labels`` and ``<path>.annotations``, as Kubernetes does), its
    PodSpec, and that it holds no ephemeral containers. The template should
    have been defaulted first (:func:`apiserver.validation.defaults.default_pod_template`).
    What only some kinds require (``restartPolicy: Always``, a selector
    matching the labels, no ``activeDeadlineSeconds``) is for the caller to add
    (:func:`validate_template_keeps_running`, :func:`validate_template_matches_selector`).

    >>> validate_pod_template_spec({"spec": {}}, Path("spec", "template"))[0].field
    'spec.template.spec.terminationGracePeriodSeconds'
    """
    template_meta = obj_of(template.get("metadata"))
    template_spec = obj_of(template.get("spec"))
    errs = validate_labels(template_meta.get("labels"), path.child("labels"))
    errs += validate_annotations(template_meta.get("annotations"), path.child("annotations"))
    errs += validate_pod_annotations(obj_of(template_meta.get("annotations")), template_spec,
                                     path.child("annotations"))
    errs += validate_pod_spec(template_spec, path.child("spec"))
    if template_spec.get("ephemeralContainers"):
        errs.append(FieldError.forbidden(path.child("spec", "ephemeralContainers"),
                                         "ephemeral containers not allowed in pod template"))
    return errs


def validate_template_matches_selector(selector: Selector, template: Obj | None, path: Path) -> list[FieldError]:
    """A controller's selector must select its own template's Pods: the check every workload kind makes.

    ``path`` is the template's. A nil selector (:meth:`Selector.nothing`) matches no labels, so
    it never matches; an empty one matches every template.
    """
    if selector.matches(template_labels(template)):
        return []
    labels = obj_of(obj_of(template).get("metadata")).get("labels")
    return [FieldError.invalid(path.child("metadata", "labels"), labels, "`selector` does not match template `labels`")]


def validate_template_keeps_running(template: Obj | None, path: Path, kind: str) -> list[FieldError]:
    """The template of a controller that keeps Pods running: ``restartPolicy: Always``, no ``activeDeadlineSeconds``.

    What ReplicationControllers, ReplicaSets, Deployments, StatefulSets and DaemonSets
    require of their template at ``path``, in Kubernetes' words (``kind`` names the
    controller in the Forbidden message).
    """
    spec = obj_of(obj_of(template).get("spec"))
    errs: list[FieldError] = []
    if spec.get("restartPolicy") != "Always":
        errs.append(FieldError.not_supported(path.child("spec", "restartPolicy"), spec.get("restartPolicy") or "",
                                             ("Always",)))
    if spec.get("activeDeadlineSeconds") is not None:
        errs.append(FieldError.forbidden(path.child("spec", "activeDeadlineSeconds"),
                                         f"activeDeadlineSeconds in {kind} is not Supported"))
    return errs


# --- Pod -----------------------------------------------------------------------------------------

def validate_pod_annotations(annotations: Obj, spec: Obj, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    if _MIRROR_POD_ANNOTATION in annotations and not spec.get("nodeName"):
        errs.append(FieldError.invalid(path.key(_MIRROR_POD_ANNOTATION), annotations[_MIRROR_POD_ANNOTATION],
                                       "must set spec.nodeName if mirror pod annotation is set"))
    if _DELETION_COST_ANNOTATION in annotations:
        cost = str(annotations[_DELETION_COST_ANNOTATION])
        # Kubernetes refuses "+10" and "010": the cost must read back exactly as written.
        if not re.fullmatch(r"-?(0|[1-9][0-9]*)", cost) or not -(2**31) <= int(cost) <= MAX_INT32:
            errs.append(FieldError.invalid(path.key(_DELETION_COST_ANNOTATION), cost,
                                           "must be a 32bit integer"))
    return errs


def _validate_pod_metadata_and_spec(pod: Obj) -> list[FieldError]:
    meta, spec = obj_of(pod.get("metadata")), obj_of(pod.get("spec"))
    errs = validate_core_meta(meta, namespaced=True)
    errs += validate_pod_annotations(obj_of(meta.get("annotations")), spec, METADATA.child("annotations"))
    errs += validate_pod_spec(spec, SPEC, is_pod=True)
    if not spec.get("serviceAccountName"):
        for i, volume in enumerate(list_of(spec.get("volumes"))):
            for j, source in enumerate(list_of(obj_of(volume.get("projected")).get("sources"))):
                if source.get("serviceAccountToken") is not None:
                    sources_path = SPEC.child("volumes").index(i).child("projected", "sources")
                    errs.append(FieldError.forbidden(
                        sources_path.index(j).child("serviceAccountToken"),
                        "must not be specified when serviceAccountName is not set"))
    for key in ("containers", "initContainers"):
        for i, container in enumerate(list_of(spec.get(key))):
            image = container.get("image") or ""
            if image != image.strip():
                errs.append(FieldError.invalid(SPEC.child(key).index(i).child("image"), image, _WHITESPACE))
    return errs


def validate_pod(pod: Obj) -> list[FieldError]:
    """A Pod being created (``ValidatePodCreate``)."""
    errs = _validate_pod_metadata_and_spec(pod)
    spec = obj_of(pod.get("spec"))
    if spec.get("ephemeralContainers"):
        errs.append(FieldError.forbidden(SPEC.child("ephemeralContainers"), "cannot be set on create"))
    if spec.get("nodeName") and spec.get("schedulingGates"):
        errs.append(FieldError.forbidden(SPEC.child("nodeName"),
                                         "cannot be set until all schedulingGates have been cleared"))
    return errs


def _validate_pod_annotation_updates(new: Obj, old: Obj) -> list[FieldError]:
    path = METADATA.child("annotations")
    new_annotations = obj_of(obj_of(new.get("metadata")).get("annotations"))
    old_annotations = obj_of(obj_of(old.get("metadata")).get("annotations"))
    errs: list[FieldError] = []
    if _MIRROR_POD_ANNOTATION in old_annotations and \
            new_annotations.get(_MIRROR_POD_ANNOTATION) != old_annotations[_MIRROR_POD_ANNOTATION]:
        errs.append(FieldError.forbidden(path.key(_MIRROR_POD_ANNOTATION),
                                         "may not remove or update mirror pod annotation"))
    if _MIRROR_POD_ANNOTATION in new_annotations and _MIRROR_POD_ANNOTATION not in old_annotations:
        errs.append(FieldError.forbidden(path.key(_MIRROR_POD_ANNOTATION),
                                         "may not add mirror pod annotation"))
    return errs + validate_pod_annotations(new_annotations, obj_of(new.get("spec")), path)


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


def _validate_only_added_tolerations(new: Sequence[Obj], old: Sequence[Obj], path: Path) -> list[FieldError]:
    def without_seconds(toleration: Obj) -> Any:
        return semantic({k: v for k, v in toleration.items() if k != "tolerationSeconds"})

    candidates = [without_seconds(t) for t in new]
    for toleration in old:
        if without_seconds(toleration) not in candidates:
            return [FieldError.forbidden(
                path, "existing toleration can not be modified except its tolerationSeconds")]
    return validate_tolerations(new, path)


def _munge_gated_pod_fields(munged: dict[str, Any], old_spec: Obj) -> list[FieldError]:
    """A Pod still held by scheduling gates may gain node selector entries and node affinity requirements."""
    errs: list[FieldError] = []
    new_selector, old_selector = obj_of(munged.get("nodeSelector")), obj_of(old_spec.get("nodeSelector"))
    if semantic(new_selector) != semantic(old_selector):
        if any(new_selector.get(k) != v for k, v in old_selector.items()):
            errs.append(FieldError.invalid(
                SPEC.child("nodeSelector"), dict(new_selector),
                "only additions to spec.nodeSelector are allowed (no mutations or deletions)"))
        munged["nodeSelector"] = old_spec.get("nodeSelector")
    old_affinity = obj_of(old_spec.get("affinity")).get("nodeAffinity")
    new_affinity = obj_of(munged.get("affinity")).get("nodeAffinity")
    if semantic(old_affinity) == semantic(new_affinity):
        return errs
    terms_path = SPEC.child("affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution",
                            "nodeSelectorTerms")
    old_terms = list_of(obj_of(obj_of(old_affinity).get("requiredDuringSchedulingIgnoredDuringExecution"))
                      .get("nodeSelectorTerms"))
    new_terms = list_of(obj_of(obj_of(new_affinity).get("requiredDuringSchedulingIgnoredDuringExecution"))
                      .get("nodeSelectorTerms"))
    if old_terms and len(old_terms) != len(new_terms):
        errs.append(FieldError.invalid(
            terms_path, list(new_terms),
            "no additions/deletions to non-empty NodeSelectorTerms list are allowed"))
    else:
        for i, old_term in enumerate(old_terms):
            if not _only_additions(obj_of(new_terms[i]), obj_of(old_term)):
                errs.append(FieldError.invalid(terms_path.index(i), new_terms[i],
                                               "only additions are allowed (no mutations or deletions)"))
    affinity = dict(obj_of(munged.get("affinity")))
    if old_affinity is None:
        affinity.pop("nodeAffinity", None)
    else:
        affinity["nodeAffinity"] = old_affinity
    munged["affinity"] = affinity or None
    return errs


def _only_additions(new_term: Obj, old_term: Obj) -> bool:
    for key in ("matchExpressions", "matchFields"):
        old_reqs, new_reqs = list_of(old_term.get(key)), list_of(new_term.get(key))
        if semantic(new_reqs[:len(old_reqs)]) != semantic(old_reqs):
            return False
    return bool(old_term.get("matchExpressions") or old_term.get("matchFields")) or \
        not (new_term.get("matchExpressions") or new_term.get("matchFields"))


def validate_pod_update(new: Obj, old: Obj) -> list[FieldError]:
    """A spec update of a Pod: only images, the deadline, added tolerations and a few more may change."""
    errs = validate_core_meta_update(obj_of(new.get("metadata")), obj_of(old.get("metadata")))
    errs += _validate_pod_metadata_and_spec(new)
    errs += _validate_pod_annotation_updates(new, old)
    new_spec, old_spec = obj_of(new.get("spec")), obj_of(old.get("spec"))
    for key in ("containers", "initContainers"):
        container_errs, stop = _validate_container_updates(list_of(new_spec.get(key)), list_of(old_spec.get(key)),
                                                           SPEC.child(key))
        errs += container_errs
        if stop:
            return errs

    deadline_path = SPEC.child("activeDeadlineSeconds")
    new_deadline, old_deadline = new_spec.get("activeDeadlineSeconds"), old_spec.get("activeDeadlineSeconds")
    if new_deadline is not None:
        if not 0 <= new_deadline <= MAX_INT32:
            return [*errs, FieldError.invalid(deadline_path, new_deadline, range_error(0, MAX_INT32))]
        if old_deadline is not None and old_deadline < new_deadline:
            return [*errs, FieldError.invalid(deadline_path, new_deadline,
                                              "must be less than or equal to previous value")]
    elif old_deadline is not None:
        errs.append(FieldError.invalid(deadline_path, None,
                                       "must not update from a positive integer to nil value"))

    errs += _validate_only_added_tolerations(list_of(new_spec.get("tolerations")),
                                             list_of(old_spec.get("tolerations")),
                                             SPEC.child("tolerations"))
    old_gates = {g.get("name") for g in list_of(old_spec.get("schedulingGates"))}
    for i, gate in enumerate(list_of(new_spec.get("schedulingGates"))):
        if gate.get("name") not in old_gates:
            errs.append(FieldError.forbidden(SPEC.child("schedulingGates").index(i).child("name"),
                                             f"only deletion is allowed, but found new scheduling gate "
                                             f"'{gate.get('name') or ''}'"))

    if semantic(new_spec) == semantic(old_spec):
        return errs
    # Put back what may change, then anything still different may not.
    munged = copy.deepcopy(dict(new_spec))
    for key in ("containers", "initContainers"):
        for container, old_container in zip(list_of(munged.get(key)), list_of(old_spec.get(key)), strict=True):
            container["image"] = old_container.get("image")
    for key in ("activeDeadlineSeconds", "schedulingGates", "tolerations"):
        munged[key] = old_spec.get(key)
    old_grace = old_spec.get("terminationGracePeriodSeconds")
    if old_grace is not None and old_grace < 0 and munged.get("terminationGracePeriodSeconds") == 1:
        munged["terminationGracePeriodSeconds"] = old_grace
    if old_spec.get("schedulingGates"):
        errs += _munge_gated_pod_fields(munged, old_spec)
    if semantic(munged) != semantic(old_spec):
        diff = "\n".join(diff_lines(semantic(old_spec), semantic(munged), "spec"))
        errs.append(FieldError.forbidden(SPEC, "pod updates may not change fields other than "
                                         + ",".join(_UPDATABLE_POD_SPEC_FIELDS) + "\n" + diff))
    return errs


def validate_pod_ephemeral_containers_update(new: Obj, old: Obj) -> list[FieldError]:
    """A ``pods/ephemeralcontainers`` write (``ValidatePodEphemeralContainersUpdate``).

    The new Pod must be valid as a whole; ephemeral containers may only be
    added: one that exists may be neither removed nor changed. Static (mirror)
    Pods take none.
    """
    new_meta = obj_of(new.get("metadata"))
    errs = validate_core_meta_update(new_meta, obj_of(old.get("metadata")))
    errs += _validate_pod_metadata_and_spec(new)
    errs += _validate_pod_annotation_updates(new, old)
    if _MIRROR_POD_ANNOTATION in obj_of(obj_of(old.get("metadata")).get("annotations")):
        return [FieldError.forbidden("", "static pods do not support ephemeral containers")]
    path = SPEC.child("ephemeralContainers")
    current = {c.get("name"): c for c in list_of(obj_of(new.get("spec")).get("ephemeralContainers"))}
    for existing in list_of(obj_of(old.get("spec")).get("ephemeralContainers")):
        name = existing.get("name") or ""
        if name not in current:
            errs.append(FieldError.forbidden(path, f"existing ephemeral containers {go_quote(name)} may not be "
                                                   "removed\n"))
        elif semantic(current[name]) != semantic(existing):
            diff = "\n".join(diff_lines(semantic(existing), semantic(current[name]), "EphemeralContainer"))
            errs.append(FieldError.forbidden(path, f"existing ephemeral containers {go_quote(name)} may not be "
                                                   f"changed\n{diff}"))
    return errs


def _validate_state_transitions(new: Sequence[Obj], old: Sequence[Obj], path: Path, restart_policy: str,
                                restartable: frozenset[str] = frozenset()) -> list[FieldError]:
    """A container that terminated for good may not come back."""
    if restart_policy == "Always":
        return []
    errs: list[FieldError] = []
    for i, old_status in enumerate(old):
        terminated = obj_of(old_status.get("state")).get("terminated")
        name = old_status.get("name")
        if terminated is None or name in restartable:
            continue
        if int(terminated.get("exitCode") or 0) != 0 and restart_policy == "OnFailure":
            continue
        for new_status in new:
            if new_status.get("name") == name and obj_of(new_status.get("state")).get("terminated") is None:
                errs.append(FieldError.forbidden(path.index(i).child("state"), _NOT_TERMINATED))
    return errs


def _pod_ips(status: Obj, plural: str, singular: str) -> list[str]:
    """The IPs as Kubernetes sees them after conversion: the list, or else the single field."""
    ips = [entry.get("ip") or "" for entry in list_of(status.get(plural))]
    if not ips and status.get(singular):
        ips = [status[singular]]
    return ips


def _validate_ip_list(ips: Sequence[str], path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, ip in enumerate(ips):
        errs += validate_ip(ip, path.index(i))
    if len(ips) > 1:
        parsed = [parse_ip(ip) for ip in ips]
        versions = [p.version for p in parsed if p is not None]
        if not is_dual_stack(versions) or len(ips) > 2:
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
    new_meta = obj_of(new.get("metadata"))
    errs = validate_core_meta_update(new_meta, obj_of(old.get("metadata")))
    errs += _validate_pod_annotation_updates(new, old)
    new_spec, old_spec = obj_of(new.get("spec")), obj_of(old.get("spec"))
    new_status, old_status = obj_of(new.get("status")), obj_of(old.get("status"))
    for i, condition in enumerate(list_of(new_status.get("conditions"))):
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
    errs += _validate_state_transitions(list_of(new_status.get("containerStatuses")),
                                        list_of(old_status.get("containerStatuses")),
                                        STATUS.child("containerStatuses"), restart_policy)
    restartable = frozenset(c.get("name") for c in list_of(old_spec.get("initContainers"))
                            if c.get("restartPolicy") == "Always")
    errs += _validate_state_transitions(list_of(new_status.get("initContainerStatuses")),
                                        list_of(old_status.get("initContainerStatuses")),
                                        STATUS.child("initContainerStatuses"), restart_policy, restartable)
    # The kubelet never restarts an ephemeral container.
    errs += _validate_state_transitions(list_of(new_status.get("ephemeralContainerStatuses")),
                                        list_of(old_status.get("ephemeralContainerStatuses")),
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
    target = obj_of(binding.get("target"))
    errs: list[FieldError] = []
    kind = target.get("kind") or ""
    if kind and kind != "Node":
        errs.append(FieldError.not_supported(Path("target", "kind"), kind, ("Node", "<empty>")))
    if not target.get("name"):
        errs.append(FieldError.required(Path("target", "name")))
    return errs

