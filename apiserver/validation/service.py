"""Validation of Services, rule by rule as ``ValidateService`` and its helpers in Kubernetes 1.32.

A Service is a discriminated union on ``spec.type``: ClusterIP, NodePort,
LoadBalancer (each with ClusterIPs, possibly one per IP family, or headless
``None``) and ExternalName (a DNS alias with no IPs). The rules here check
each field against the type, the linked ``clusterIP``/``clusterIPs``/
``ipFamilies``/``ipFamilyPolicy`` quartet
(:func:`validate_service_cluster_ips_related_fields`, which the allocation
code also calls before reserving anything), ports, traffic policies and, on
update, that ClusterIPs and IP families only change by upgrading or
downgrading dual-stack.

Pure functions over wire-form dicts; no state.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from apiserver.validation.common import (
    PROTOCOLS,
    SPEC,
    STATUS,
    enum_errors,
    list_of,
    obj_of,
    parse_cidr,
    parse_ip,
    validate_core_meta,
    validate_core_meta_update,
    validate_ip,
    validate_non_special_ip,
    validate_port_num_or_name,
    validate_port_number,
)
from apiserver.validation.field import FieldError, Path
from apiserver.validation.meta import (
    METADATA,
    name_is_dns1035_label,
    validate_dns1123_label,
    validate_dns1123_subdomain,
    validate_labels,
    validate_qualified_name,
)
from machinery.api.names import go_quote

Obj = Mapping[str, Any]

CLUSTER_IP_NONE: Final = "None"
SERVICE_TYPES: Final = ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort")
_SESSION_AFFINITIES: Final = ("ClientIP", "None")
_TRAFFIC_POLICIES: Final = ("Cluster", "Local")
_IP_FAMILIES: Final = ("IPv4", "IPv6")
_IP_FAMILY_POLICIES: Final = ("PreferDualStack", "RequireDualStack", "SingleStack")
_IP_MODES: Final = ("Proxy", "VIP")
_TRAFFIC_DISTRIBUTIONS: Final = ("PreferClose",)
#: The longest ClientIP session affinity Kubernetes allows (a day).
MAX_CLIENT_IP_AFFINITY_SECONDS: Final = 86400
_TOPOLOGY_MODE: Final = "service.kubernetes.io/topology-mode"
_TOPOLOGY_HINTS: Final = "service.kubernetes.io/topology-aware-hints"
_SOURCE_RANGES: Final = "service.beta.kubernetes.io/load-balancer-source-ranges"
_CIDR_ERROR: Final = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"


def _spec(svc: Obj) -> Obj:
    return obj_of(svc.get("spec"))


def cluster_ips(svc: Obj) -> list[str]:
    return [str(ip) for ip in list_of(_spec(svc).get("clusterIPs"))]


def is_headless(svc: Obj) -> bool:
    return cluster_ips(svc) == [CLUSTER_IP_NONE]


def externally_accessible(svc: Obj) -> bool:
    """``ExternallyAccessible``: reachable from outside the cluster, so ``externalTrafficPolicy`` applies."""
    spec = _spec(svc)
    kind = spec.get("type")
    return kind in ("LoadBalancer", "NodePort") or (kind == "ClusterIP" and bool(list_of(spec.get("externalIPs"))))


def needs_health_check(svc: Obj) -> bool:
    spec = _spec(svc)
    return spec.get("type") == "LoadBalancer" and spec.get("externalTrafficPolicy") == "Local"


def _validate_cidr(value: str, path: Path) -> list[FieldError]:
    if parse_cidr(value) is None:
        return [FieldError.invalid(path, value, _CIDR_ERROR)]
    return []


def _internal_port(port: Obj) -> dict[str, Any]:
    """A port as Kubernetes' duplicate error shows it: the internal ``ServicePort`` with only protocol and port."""
    return {"Name": "", "Protocol": port.get("protocol") or "", "AppProtocol": None, "Port": port.get("port") or 0,
            "TargetPort": 0, "NodePort": 0}


def _validate_service_port(port: Obj, require_name: bool, names_seen: set[str], path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    name = port.get("name") or ""
    if require_name and not name:
        errs.append(FieldError.required(path.child("name")))
    elif name:
        errs += validate_dns1123_label(name, path.child("name"))
        if name in names_seen:
            errs.append(FieldError.duplicate(path.child("name"), name))
        else:
            names_seen.add(name)
    errs += validate_port_number(int(port.get("port") or 0), path.child("port"))
    errs += enum_errors(port.get("protocol"), path.child("protocol"), PROTOCOLS)
    target = port.get("targetPort")
    errs += validate_port_num_or_name(0 if target is None else target, path.child("targetPort"))
    if port.get("appProtocol") is not None:
        errs += validate_qualified_name(port["appProtocol"], path.child("appProtocol"))
    return errs


def _validate_session_affinity(spec: Obj) -> list[FieldError]:
    affinity = spec.get("sessionAffinity") or ""
    path = SPEC.child("sessionAffinity")
    errs = enum_errors(affinity, path, _SESSION_AFFINITIES)
    config_path = SPEC.child("sessionAffinityConfig")
    config = spec.get("sessionAffinityConfig")
    if affinity == "ClientIP":
        why = "when session affinity type is ClientIP"
        if config is None:
            return [*errs, FieldError.required(config_path, why)]
        client_ip = obj_of(config).get("clientIP")
        if client_ip is None:
            return [*errs, FieldError.required(config_path.child("clientIP"), why)]
        timeout = obj_of(client_ip).get("timeoutSeconds")
        timeout_path = config_path.child("clientIP", "timeoutSeconds")
        if timeout is None:
            return [*errs, FieldError.required(timeout_path, why)]
        if not 0 < int(timeout) <= MAX_CLIENT_IP_AFFINITY_SECONDS:
            errs.append(FieldError.invalid(timeout_path, timeout, f"must be greater than 0 and less than "
                                                                  f"{MAX_CLIENT_IP_AFFINITY_SECONDS}"))
    elif affinity == "None" and config is not None:
        errs.append(FieldError.forbidden(config_path, "must not be set when session affinity is None"))
    return errs


def validate_service_cluster_ips_related_fields(svc: Obj) -> list[FieldError]:
    """``ValidateServiceClusterIPsRelatedFields``: clusterIP and clusterIPs agree, families fit the IPs."""
    spec = _spec(svc)
    if spec.get("type") == "ExternalName":
        return []
    errs: list[FieldError] = []
    ips_path, families_path = SPEC.child("clusterIPs"), SPEC.child("ipFamilies")
    ips = cluster_ips(svc)
    cluster_ip = spec.get("clusterIP") or ""
    if cluster_ip:
        if not ips:
            errs.append(FieldError.required(ips_path))
        elif ips[0] != cluster_ip:
            errs.append(FieldError.invalid(ips_path, ips, "first value must match `clusterIP`"))
    elif ips:
        errs.append(FieldError.invalid(ips_path, ips, "must be empty when `clusterIP` is not specified"))
    families = [str(f) for f in list_of(spec.get("ipFamilies"))]
    seen: set[str] = set()
    for i, family in enumerate(families):
        if family not in _IP_FAMILIES:
            errs.append(FieldError.not_supported(families_path.index(i), family, _IP_FAMILIES))
        if family in seen:
            errs.append(FieldError.duplicate(families_path.index(i), family))
        seen.add(family)
    policy = spec.get("ipFamilyPolicy")
    if policy is not None and policy not in _IP_FAMILY_POLICIES:
        errs.append(FieldError.not_supported(SPEC.child("ipFamilyPolicy"), policy, _IP_FAMILY_POLICIES))
    invalid_ips = False
    for i, ip in enumerate(ips):
        if i == 0 and ip == CLUSTER_IP_NONE:
            if len(ips) > 1:
                invalid_ips = True
                errs.append(FieldError.invalid(ips_path, ips, "'None' must be the first and only value"))
            continue
        problems = validate_ip(ip, ips_path.index(i))
        invalid_ips = invalid_ips or bool(problems)
        errs += problems
    if len(ips) > 2:
        errs.append(FieldError.invalid(ips_path, ips, "may only hold up to 2 values"))
    if invalid_ips:
        return errs
    if len(ips) > 1:
        versions = {p.version for p in (parse_ip(ip) for ip in ips) if p is not None}
        if versions != {4, 6} or len(ips) != 2:
            errs.append(FieldError.invalid(ips_path, ips, "may specify no more than one IP for each IP family"))
    if not is_headless(svc) and ips and families:
        for i, ip in enumerate(ips[:len(families)]):
            parsed = parse_ip(ip)
            v6 = parsed is not None and parsed.version == 6
            if families[i] == "IPv4" and v6:
                errs.append(FieldError.invalid(ips_path.index(i), ip,
                                               f"expected an IPv4 value as indicated by `ipFamilies[{i}]`"))
            if families[i] == "IPv6" and not v6:
                errs.append(FieldError.invalid(ips_path.index(i), ip,
                                               f"expected an IPv6 value as indicated by `ipFamilies[{i}]`"))
    return errs


def _validate_by_type(svc: Obj) -> list[FieldError]:
    spec = _spec(svc)
    kind = spec.get("type")
    errs: list[FieldError] = []
    if kind in ("LoadBalancer", "NodePort") and is_headless(svc):
        errs.append(FieldError.invalid(SPEC.child("clusterIPs").index(0), CLUSTER_IP_NONE,
                                       f"may not be set to 'None' for {kind} services"))
    elif kind == "ExternalName":
        for key in ("clusterIPs", "ipFamilies"):
            if list_of(spec.get(key)):
                errs.append(FieldError.forbidden(SPEC.child(key), "may not be set for ExternalName services"))
        if spec.get("ipFamilyPolicy") is not None:
            errs.append(FieldError.forbidden(SPEC.child("ipFamilyPolicy"), "may not be set for ExternalName services"))
        # The name (a CNAME) may end with a dot, as a fully qualified name does.
        cname = str(spec.get("externalName") or "").removesuffix(".")
        if cname:
            errs += validate_dns1123_subdomain(cname, SPEC.child("externalName"))
        else:
            errs.append(FieldError.required(SPEC.child("externalName")))
    return errs


def _validate_ports(svc: Obj) -> list[FieldError]:
    spec = _spec(svc)
    ports = [obj_of(p) for p in list_of(spec.get("ports"))]
    ports_path = SPEC.child("ports")
    errs: list[FieldError] = []
    names_seen: set[str] = set()
    for i, port in enumerate(ports):
        errs += _validate_service_port(port, len(ports) > 1, names_seen, ports_path.index(i))
    return errs


def _validate_port_uniqueness(spec: Obj) -> list[FieldError]:
    ports = [obj_of(p) for p in list_of(spec.get("ports"))]
    path = SPEC.child("ports")
    errs: list[FieldError] = []
    if spec.get("type") == "ClusterIP":
        for i, port in enumerate(ports):
            if port.get("nodePort"):
                errs.append(FieldError.forbidden(path.index(i).child("nodePort"),
                                                 "may not be used when `type` is 'ClusterIP'"))
    seen_node_ports: set[tuple[str, int]] = set()
    for i, port in enumerate(ports):
        node_port = int(port.get("nodePort") or 0)
        if not node_port:
            continue
        key = (str(port.get("protocol") or ""), node_port)
        if key in seen_node_ports:
            errs.append(FieldError.duplicate(path.index(i).child("nodePort"), node_port))
        seen_node_ports.add(key)
    seen_ports: set[tuple[str, int]] = set()
    for i, port in enumerate(ports):
        key = (str(port.get("protocol") or ""), int(port.get("port") or 0))
        if key in seen_ports:
            errs.append(FieldError.duplicate(path.index(i), _internal_port(port)))
        seen_ports.add(key)
    return errs


def _validate_source_ranges(svc: Obj) -> list[FieldError]:
    spec = _spec(svc)
    errs: list[FieldError] = []
    ranges = list_of(spec.get("loadBalancerSourceRanges"))
    annotations = obj_of(obj_of(svc.get("metadata")).get("annotations"))
    lb_only = "may only be used when `type` is 'LoadBalancer'"
    if ranges:
        # Kubernetes spells this path with a capital L.
        path = SPEC.child("LoadBalancerSourceRanges")
        if spec.get("type") != "LoadBalancer":
            errs.append(FieldError.forbidden(path, lb_only))
        for i, value in enumerate(ranges):
            errs += _validate_cidr(str(value).strip(), path.index(i))
    elif _SOURCE_RANGES in annotations:
        path = METADATA.child("annotations").key(_SOURCE_RANGES)
        if spec.get("type") != "LoadBalancer":
            errs.append(FieldError.forbidden(path, lb_only))
        text = str(annotations[_SOURCE_RANGES]).strip()
        if text:
            for value in text.split(","):
                errs += _validate_cidr(value.strip(), path)
    return errs


def _validate_traffic(svc: Obj) -> list[FieldError]:
    spec = _spec(svc)
    errs: list[FieldError] = []
    kind = spec.get("type")
    if spec.get("allocateLoadBalancerNodePorts") is not None and kind != "LoadBalancer":
        errs.append(FieldError.forbidden(SPEC.child("allocateLoadBalancerNodePorts"),
                                         "may only be used when `type` is 'LoadBalancer'"))
    if kind == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is None:
        # Kubernetes names this field without its "spec." prefix.
        errs.append(FieldError.required("allocateLoadBalancerNodePorts"))
    errs += _validate_load_balancer_class(svc, None)
    policy = spec.get("externalTrafficPolicy") or ""
    policy_path = SPEC.child("externalTrafficPolicy")
    if not externally_accessible(svc):
        if policy:
            errs.append(FieldError.invalid(policy_path, policy, "may only be set for externally-accessible services"))
    else:
        errs += enum_errors(policy, policy_path, _TRAFFIC_POLICIES)
    health = int(spec.get("healthCheckNodePort") or 0)
    health_path = SPEC.child("healthCheckNodePort")
    if not needs_health_check(svc):
        if health:
            errs.append(FieldError.invalid(health_path, health, "may only be set when `type` is 'LoadBalancer' and "
                                                                "`externalTrafficPolicy` is 'Local'"))
    elif not health:
        errs.append(FieldError.required(health_path))
    else:
        errs += validate_port_number(health, health_path)
    internal = spec.get("internalTrafficPolicy")
    internal_path = SPEC.child("internalTrafficPolicy")
    if internal is None:
        # Other types are not refused for it: stored objects predate the field.
        if kind in ("NodePort", "LoadBalancer", "ClusterIP"):
            errs.append(FieldError.required(internal_path))
    elif internal not in _TRAFFIC_POLICIES:
        errs.append(FieldError.not_supported(internal_path, internal, _TRAFFIC_POLICIES))
    distribution = spec.get("trafficDistribution")
    if distribution is not None and distribution not in _TRAFFIC_DISTRIBUTIONS:
        errs.append(FieldError.not_supported(SPEC.child("trafficDistribution"), distribution,
                                             _TRAFFIC_DISTRIBUTIONS))
    return errs


def _validate_load_balancer_class(svc: Obj, old: Obj | None) -> list[FieldError]:
    spec = _spec(svc)
    path = SPEC.child("loadBalancerClass")
    errs: list[FieldError] = []
    value = spec.get("loadBalancerClass")
    if old is not None and _spec(old).get("type") == "LoadBalancer" and spec.get("type") == "LoadBalancer" and \
            _spec(old).get("loadBalancerClass") != value:
        errs.append(FieldError.invalid(path, value, "may not change once set"))
    if spec.get("type") == "LoadBalancer":
        if value is not None:
            errs += validate_qualified_name(str(value), path)
    elif value is not None:
        errs.append(FieldError.forbidden(path, "may only be used when `type` is 'LoadBalancer'"))
    return errs


def validate_service(svc: Obj) -> list[FieldError]:
    """``ValidateService``: a Service as it is about to be stored (defaulted, with its IPs allocated)."""
    meta = obj_of(svc.get("metadata"))
    errs = validate_core_meta(meta, namespaced=True, name_rule=name_is_dns1035_label)
    annotations = obj_of(meta.get("annotations"))
    if _TOPOLOGY_MODE in annotations and _TOPOLOGY_HINTS in annotations and \
            annotations[_TOPOLOGY_MODE] != annotations[_TOPOLOGY_HINTS]:
        errs.append(FieldError.invalid(METADATA.child("annotations").key(_TOPOLOGY_MODE), annotations[_TOPOLOGY_MODE],
                                       f"must match annotations[{_TOPOLOGY_HINTS}] when both are specified"))
    spec = _spec(svc)
    if not list_of(spec.get("ports")) and not is_headless(svc) and spec.get("type") != "ExternalName":
        errs.append(FieldError.required(SPEC.child("ports")))
    errs += _validate_by_type(svc)
    errs += _validate_ports(svc)
    if spec.get("selector") is not None:
        errs += validate_labels(obj_of(spec.get("selector")), SPEC.child("selector"))
    errs += _validate_session_affinity(spec)
    errs += validate_service_cluster_ips_related_fields(svc)
    for i, ip in enumerate(list_of(spec.get("externalIPs"))):
        path = SPEC.child("externalIPs").index(i)
        problems = validate_ip(str(ip), path)
        errs += problems or validate_non_special_ip(str(ip), path)
    errs += enum_errors(spec.get("type"), SPEC.child("type"), SERVICE_TYPES)
    errs += _validate_port_uniqueness(spec)
    errs += _validate_source_ranges(svc)
    return errs + _validate_traffic(svc)


def _upgrade_downgrade_cluster_ips(old: Obj, new: Obj) -> list[FieldError]:
    """``validateUpgradeDowngradeClusterIPs``: the primary IP never changes; a secondary only by policy."""
    if _spec(new).get("type") == "ExternalName" or _spec(old).get("type") == "ExternalName":
        return []
    if is_headless(old) and is_headless(new):
        return []
    old_ips, new_ips = cluster_ips(old), cluster_ips(new)
    path = SPEC.child("clusterIPs")
    errs: list[FieldError] = []
    if len(old_ips) == len(new_ips):
        errs += [FieldError.invalid(path.index(i), new_ips, "may not change once set")
                 for i, ip in enumerate(old_ips) if ip != new_ips[i]]
    elif len(old_ips) > len(new_ips):
        if not new_ips:
            errs.append(FieldError.invalid(path.index(0), new_ips, "primary clusterIP can not be unset"))
        if old_ips and new_ips and new_ips[0] != old_ips[0]:
            errs.append(FieldError.invalid(path.index(0), new_ips, "may not change once set"))
        if len(new_ips) == 1 and _spec(new).get("ipFamilyPolicy") != "SingleStack":
            errs.append(FieldError.invalid(SPEC.child("ipFamilyPolicy"), _spec(new).get("ipFamilyPolicy"),
                                           "must be set to 'SingleStack' when releasing the secondary clusterIP"))
    elif old_ips and new_ips[0] != old_ips[0]:
        errs.append(FieldError.invalid(path.index(0), new_ips, "may not change once set"))
    return errs


def _upgrade_downgrade_ip_families(old: Obj, new: Obj) -> list[FieldError]:
    """``validateUpgradeDowngradeIPFamilies``: the primary family never changes (headless Services aside)."""
    if _spec(new).get("type") == "ExternalName" or _spec(old).get("type") == "ExternalName":
        return []
    if is_headless(old) != is_headless(new) or is_headless(new):
        return []
    old_families = [str(f) for f in list_of(_spec(old).get("ipFamilies"))]
    new_families = [str(f) for f in list_of(_spec(new).get("ipFamilies"))]
    path = SPEC.child("ipFamilies").index(0)
    errs: list[FieldError] = []
    if len(old_families) == len(new_families):
        errs += [FieldError.invalid(path, new_families, "may not change once set")
                 for i, family in enumerate(old_families) if family != new_families[i]]
    elif len(old_families) > len(new_families):
        if not cluster_ips(new):
            errs.append(FieldError.invalid(path, new_families, "primary ipFamily can not be unset"))
        if new_families and new_families[0] != old_families[0]:
            errs.append(FieldError.invalid(path, cluster_ips(new), "may not change once set"))
        if len(new_families) == 1 and _spec(new).get("ipFamilyPolicy") != "SingleStack":
            errs.append(FieldError.invalid(SPEC.child("ipFamilyPolicy"), _spec(new).get("ipFamilyPolicy"),
                                           "must be set to 'SingleStack' when releasing the secondary ipFamily"))
    elif old_families and new_families and new_families[0] != old_families[0]:
        errs.append(FieldError.invalid(path, cluster_ips(new), "may not change once set"))
    return errs


def validate_service_update(new: Obj, old: Obj) -> list[FieldError]:
    """``ValidateServiceUpdate``: ClusterIPs and families are fixed (but for dual-stack changes), and so is the
    health-check port while one is needed."""
    errs = validate_core_meta_update(obj_of(new.get("metadata")), obj_of(old.get("metadata")))
    errs += _upgrade_downgrade_cluster_ips(old, new)
    errs += _upgrade_downgrade_ip_families(old, new)
    errs += _validate_load_balancer_class(new, old)
    if needs_health_check(old) and needs_health_check(new) and \
            _spec(new).get("healthCheckNodePort") != _spec(old).get("healthCheckNodePort"):
        errs.append(FieldError.forbidden(SPEC.child("healthCheckNodePort"), "field is immutable"))
    return errs + validate_service(new)


def validate_load_balancer_status(status: Obj, spec: Obj, path: Path) -> list[FieldError]:
    """``ValidateLoadBalancerStatus``: ingress points, only on LoadBalancers."""
    ingress_path = path.child("ingress")
    ingress = [obj_of(i) for i in list_of(status.get("ingress"))]
    if spec.get("type") != "LoadBalancer" and ingress:
        return [FieldError.forbidden(ingress_path, "may only be used when `spec.type` is 'LoadBalancer'")]
    errs: list[FieldError] = []
    for i, point in enumerate(ingress):
        item = ingress_path.index(i)
        ip, mode, hostname = point.get("ip") or "", point.get("ipMode"), point.get("hostname") or ""
        if ip:
            errs += validate_ip(ip, item.child("ip"))
        if mode is None:
            if ip:
                errs.append(FieldError.required(item.child("ipMode"), "must be specified when `ip` is set"))
        elif not ip:
            errs.append(FieldError.forbidden(item.child("ipMode"), "may not be specified when `ip` is not set"))
        elif mode not in _IP_MODES:
            errs.append(FieldError.not_supported(item.child("ipMode"), mode, _IP_MODES))
        if hostname:
            errs += validate_dns1123_subdomain(hostname, item.child("hostname"))
            if parse_ip(hostname) is not None:
                errs.append(FieldError.invalid(item.child("hostname"), hostname,
                                               "must be a DNS name, not an IP address"))
    return errs


def validate_service_status_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_core_meta_update(obj_of(new.get("metadata")), obj_of(old.get("metadata")))
    return errs + validate_load_balancer_status(obj_of(obj_of(new.get("status")).get("loadBalancer")), _spec(new),
                                                STATUS.child("loadBalancer"))


def _ip_warnings(path: Path, value: str) -> list[str]:
    """``GetWarningsForIP``: addresses that Kubernetes will refuse one day."""
    parsed = parse_ip(value)
    if parsed is None:
        return []
    if parsed.version == 4 and str(parsed) != value:
        return [(f"{path}: non-standard IP address {go_quote(value)} will be considered invalid in a future "
                f"Kubernetes release: use {go_quote(str(parsed))}")]
    mapped = getattr(parsed, "ipv4_mapped", None)
    if mapped is not None:
        return [(f"{path}: IPv4-mapped IPv6 address {go_quote(value)} is deprecated and will be considered invalid "
                f"in a future Kubernetes release: use {go_quote(str(mapped))}")]
    return []


def service_warnings(svc: Obj) -> list[str]:
    """``GetWarningsForService``: deprecated annotations, odd IPs, fields the type ignores."""
    spec = _spec(svc)
    warnings: list[str] = []
    if _TOPOLOGY_HINTS in obj_of(obj_of(svc.get("metadata")).get("annotations")):
        warnings.append(f"annotation {_TOPOLOGY_HINTS} is deprecated, please use {_TOPOLOGY_MODE} instead")
    if spec.get("clusterIP") not in (None, "", CLUSTER_IP_NONE):
        for i, ip in enumerate(cluster_ips(svc)):
            warnings += _ip_warnings(SPEC.child("clusterIPs").index(i), ip)
    for i, ip in enumerate(list_of(spec.get("externalIPs"))):
        warnings += _ip_warnings(SPEC.child("externalIPs").index(i), str(ip))
    if spec.get("loadBalancerIP"):
        warnings += _ip_warnings(SPEC.child("loadBalancerIP"), str(spec["loadBalancerIP"]))
    if spec.get("type") == "ExternalName" and list_of(spec.get("externalIPs")):
        warnings.append('spec.externalIPs is ignored when spec.type is "ExternalName"')
    if spec.get("type") != "ExternalName" and spec.get("externalName"):
        warnings.append('spec.externalName is ignored when spec.type is not "ExternalName"')
    return warnings


def service_ports(svc: Obj) -> Sequence[Obj]:
    return [obj_of(p) for p in list_of(_spec(svc).get("ports"))]
