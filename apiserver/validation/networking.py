"""The networking.k8s.io/v1 rules: defaulting and validation of Ingresses, IngressClasses and
NetworkPolicies.

As ``pkg/apis/networking/v1/defaults.go`` and ``pkg/apis/networking/validation``
of Kubernetes 1.32. Hosts are DNS names (a leading ``*.`` allowed), paths of
``Exact`` and ``Prefix`` rules are absolute and clean, a backend names a
Service port (by name or number) or a resource; an IngressClass's controller
is a domain-prefixed path that never changes; NetworkPolicy peers and ports
are checked, ports default to TCP and ``policyTypes`` to Ingress (and Egress
when there are egress rules).

``default_*`` functions mutate what they are handed and are idempotent;
``validate_*`` functions return every problem found. Pure; no state.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from typing import Any, Final

from apiserver.validation import values
from apiserver.validation.field import ErrorType, FieldError, Path
from apiserver.validation.meta import (
    validate_label_selector,
    validate_object_meta,
    validate_object_meta_update,
)
from apiserver.validation.values import items, obj
from machinery.api import names

Obj = Mapping[str, Any]
Mut = dict[str, Any]

SPEC: Final = Path("spec")
INGRESS_CLASS_ANNOTATION: Final = "kubernetes.io/ingress.class"
_PATH_TYPES: Final = ("Exact", "ImplementationSpecific", "Prefix")
_INVALID_PATH_SEQUENCES: Final = ("//", "/./", "/../", "%2f", "%2F")
_INVALID_PATH_SUFFIXES: Final = ("/..", "/.")
_MAX_CONTROLLER_LENGTH: Final = 250
_PARAMETER_SCOPES: Final = ("Cluster", "Namespace")
_PROTOCOLS: Final = ("TCP", "UDP", "SCTP")
_POLICY_TYPES: Final = ("Ingress", "Egress")
_WILDCARD_SUBDOMAIN: Final = re.compile(r"^\*\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_WILDCARD_MESSAGE: Final = (
    "a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must consist of "
    "lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character (e.g. '*.example.com', "
    "regex used for validation is '\\*\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
_CIDR_MESSAGE: Final = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"


# --- defaulting -------------------------------------------------------------------------------

def default_network_policy(policy: Mut) -> None:
    spec = policy.get("spec")
    if not isinstance(spec, dict):
        spec = policy["spec"] = {}
    for direction in ("ingress", "egress"):
        for rule in items(spec.get(direction)):
            for port in items(obj(rule).get("ports")):
                if isinstance(port, dict) and port.get("protocol") is None:
                    port["protocol"] = "TCP"
    if not spec.get("policyTypes"):
        spec["policyTypes"] = ["Ingress", "Egress"] if spec.get("egress") else ["Ingress"]


def default_ingress_class(ingress_class: Mut) -> None:
    parameters = obj(ingress_class.get("spec")).get("parameters")
    if isinstance(parameters, dict) and parameters.get("scope") is None:
        parameters["scope"] = "Cluster"


# --- shared pieces ------------------------------------------------------------------------------

def _wildcard_errors(host: str) -> list[str]:
    errs = ["must be no more than 253 characters"] if len(host) > 253 else []
    if not _WILDCARD_SUBDOMAIN.match(host):
        errs.append(_WILDCARD_MESSAGE)
    return errs


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def _validate_typed_reference(ref: Obj, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    if not ref.get("kind"):
        errs.append(FieldError.required(path.child("kind")))
    if not ref.get("name"):
        errs.append(FieldError.required(path.child("name")))
    group = ref.get("apiGroup")
    if group is not None:
        errs += [FieldError.invalid(path.child("apiGroup"), group, msg) for msg in names.is_dns1123_subdomain(group)]
    return errs


# --- Ingress ------------------------------------------------------------------------------------

def _validate_backend(backend: Obj, path: Path) -> list[FieldError]:
    resource, service = backend.get("resource"), backend.get("service")
    if resource is not None and service is not None:
        return [FieldError.invalid(path, "", "cannot set both resource and service backends")]
    if resource is not None:
        return _validate_typed_reference(obj(resource), path.child("resource"))
    if service is None:
        return [FieldError.invalid(path, "", "resource or service backend is required")]
    service = obj(service)
    errs: list[FieldError] = []
    name = str(service.get("name") or "")
    if not name:
        errs.append(FieldError.required(path.child("service", "name")))
    else:
        errs += [FieldError.invalid(path.child("service", "name"), name, msg)
                 for msg in values.dns1035_label_errors(name)]
    port = obj(service.get("port"))
    port_name, number = str(port.get("name") or ""), int(port.get("number") or 0)
    if port_name and number:
        errs.append(FieldError.invalid(path, "", "cannot set both port name & port number"))
    elif port_name:
        errs += [FieldError.invalid(path.child("service", "port", "name"), port_name, msg)
                 for msg in values.port_name_errors(port_name)]
    elif number:
        errs += [FieldError.invalid(path.child("service", "port", "number"), number, msg)
                 for msg in values.port_number_errors(number)]
    else:
        errs.append(FieldError.required(path, "port name or number is required"))
    return errs


def _validate_http_path(http_path: Obj, path: Path) -> list[FieldError]:
    kind = http_path.get("pathType")
    if kind is None:
        return [FieldError.required(path.child("pathType"), "pathType must be specified")]
    value = str(http_path.get("path") or "")
    errs: list[FieldError] = []
    if kind in ("Exact", "Prefix"):
        if not value.startswith("/"):
            errs.append(FieldError.invalid(path.child("path"), value, "must be an absolute path"))
        errs += [FieldError.invalid(path.child("path"), value, f"must not contain '{seq}'")
                 for seq in _INVALID_PATH_SEQUENCES if seq in value]
        errs += [FieldError.invalid(path.child("path"), value, f"cannot end with '{suffix}'")
                 for suffix in _INVALID_PATH_SUFFIXES if value.endswith(suffix)]
    elif kind == "ImplementationSpecific":
        if value and not value.startswith("/"):
            errs.append(FieldError.invalid(path.child("path"), value, "must be an absolute path"))
    else:
        errs.append(FieldError.not_supported(path.child("pathType"), kind, _PATH_TYPES))
    return errs + _validate_backend(obj(http_path.get("backend")), path.child("backend"))


def _validate_rules(rules: Any, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, rule in enumerate(rules):
        rule, rule_path = obj(rule), path.index(i)
        host = str(rule.get("host") or "")
        if host:
            if _is_ip(host):
                errs.append(FieldError.invalid(rule_path.child("host"), host, "must be a DNS name, not an IP address"))
            messages = _wildcard_errors(host) if "*" in host else names.is_dns1123_subdomain(host)
            errs += [FieldError.invalid(rule_path.child("host"), host, msg) for msg in messages]
        http = rule.get("http")
        if http is not None:
            paths = items(obj(http).get("paths"))
            if not paths:
                errs.append(FieldError.required(rule_path.child("http", "paths")))
            for j, http_path in enumerate(paths):
                errs += _validate_http_path(obj(http_path), rule_path.child("http", "paths").index(j))
    return errs


def _validate_ingress_spec(spec: Obj, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    rules = items(spec.get("rules"))
    if not rules and spec.get("defaultBackend") is None:
        errs.append(FieldError.invalid(path, rules, "either `defaultBackend` or `rules` must be specified"))
    if spec.get("defaultBackend") is not None:
        errs += _validate_backend(obj(spec["defaultBackend"]), path.child("defaultBackend"))
    errs += _validate_rules(rules, path.child("rules"))
    for i, tls in enumerate(items(spec.get("tls"))):
        tls, tls_path = obj(tls), path.child("tls").index(i)
        for j, host in enumerate(items(tls.get("hosts"))):
            messages = _wildcard_errors(host) if "*" in host else names.is_dns1123_subdomain(host)
            errs += [FieldError.invalid(tls_path.child("hosts").index(j), host, msg) for msg in messages]
        secret = str(tls.get("secretName") or "")
        if secret:
            errs += [FieldError.invalid(tls_path.child("secretName"), secret, msg)
                     for msg in names.is_dns1123_subdomain(secret)]
    class_name = spec.get("ingressClassName")
    if class_name is not None:
        errs += [FieldError.invalid(path.child("ingressClassName"), class_name, msg)
                 for msg in names.is_dns1123_subdomain(class_name)]
    return errs


def validate_ingress(ingress: Obj) -> list[FieldError]:
    meta, spec = obj(ingress.get("metadata")), obj(ingress.get("spec"))
    errs = validate_object_meta(meta, namespaced=True)
    errs += _validate_ingress_spec(spec, SPEC)
    annotation = obj(meta.get("annotations")).get(INGRESS_CLASS_ANNOTATION)
    if annotation is not None and spec.get("ingressClassName") is not None and annotation != spec["ingressClassName"]:
        errs.append(FieldError.invalid(Path("annotations").child(INGRESS_CLASS_ANNOTATION), annotation,
                                       "must match `ingressClassName` when both are specified"))
    return errs


def validate_ingress_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_object_meta_update(obj(new.get("metadata")), obj(old.get("metadata")))
    return errs + _validate_ingress_spec(obj(new.get("spec")), SPEC)


def validate_ingress_status_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_object_meta_update(obj(new.get("metadata")), obj(old.get("metadata")))
    path = Path("status", "loadBalancer", "ingress")
    for i, entry in enumerate(items(obj(obj(new.get("status")).get("loadBalancer")).get("ingress"))):
        entry = obj(entry)
        ip, hostname = entry.get("ip"), entry.get("hostname")
        if ip and not _is_ip(ip):
            errs.append(FieldError.invalid(path.index(i).child("ip"), ip, "must be a valid IP address"))
        if hostname:
            errs += [FieldError.invalid(path.index(i).child("hostname"), hostname, msg)
                     for msg in names.is_dns1123_subdomain(hostname)]
            if _is_ip(hostname):
                errs.append(FieldError.invalid(path.index(i).child("hostname"), hostname, "must be a DNS name, "
                                                                                         "not an IP address"))
    return errs


# --- IngressClass -------------------------------------------------------------------------------

def _validate_ingress_class_spec(spec: Obj, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    controller = str(spec.get("controller") or "")
    if len(controller) > _MAX_CONTROLLER_LENGTH:
        errs.append(FieldError(ErrorType.TOO_LONG, str(path.child("controller")), controller,
                               f"may not be more than {_MAX_CONTROLLER_LENGTH} bytes"))
    errs += values.validate_domain_prefixed_path(controller, path.child("controller"))
    parameters = spec.get("parameters")
    if parameters is None:
        return errs
    parameters, params_path = obj(parameters), path.child("parameters")
    errs += _validate_typed_reference(parameters, params_path)
    scope = parameters.get("scope")
    if scope is None:
        errs.append(FieldError.required(params_path.child("scope")))
    elif scope not in _PARAMETER_SCOPES:
        errs.append(FieldError.not_supported(params_path.child("scope"), scope, _PARAMETER_SCOPES))
    elif scope == "Namespace":
        namespace = parameters.get("namespace")
        if namespace is None:
            errs.append(FieldError.required(params_path.child("namespace"), "`parameters.scope` is set to "
                                                                            "'Namespace'"))
        else:
            errs += [FieldError.invalid(params_path.child("namespace"), namespace, msg)
                     for msg in names.is_dns1123_label(namespace)]
    elif parameters.get("namespace") is not None:
        errs.append(FieldError.forbidden(params_path.child("namespace"), "`parameters.scope` is set to 'Cluster'"))
    return errs


def validate_ingress_class(ingress_class: Obj) -> list[FieldError]:
    errs = validate_object_meta(obj(ingress_class.get("metadata")), namespaced=False)
    return errs + _validate_ingress_class_spec(obj(ingress_class.get("spec")), SPEC)


def validate_ingress_class_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_object_meta_update(obj(new.get("metadata")), obj(old.get("metadata")))
    controller, old_controller = obj(new.get("spec")).get("controller"), obj(old.get("spec")).get("controller")
    if controller != old_controller:
        errs.append(FieldError.invalid(SPEC.child("controller"), controller, "field is immutable"))
    return errs + validate_ingress_class(new)


# --- NetworkPolicy ------------------------------------------------------------------------------

def _validate_policy_port(port: Obj, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    protocol = port.get("protocol")
    if protocol is not None and protocol not in _PROTOCOLS:
        errs.append(FieldError.not_supported(path.child("protocol"), protocol, _PROTOCOLS))
    number, end = port.get("port"), port.get("endPort")
    if number is None:
        if end is not None:
            errs.append(FieldError.invalid(path.child("endPort"), end, "may not be specified when `port` is not "
                                                                       "specified"))
    elif isinstance(number, int):
        errs += [FieldError.invalid(path.child("port"), number, msg) for msg in values.port_number_errors(number)]
        if end is not None:
            if end < number:
                errs.append(FieldError.invalid(path.child("endPort"), number, "must be greater than or equal to "
                                                                              "`port`"))
            errs += [FieldError.invalid(path.child("endPort"), end, msg) for msg in values.port_number_errors(end)]
    else:
        if end is not None:
            errs.append(FieldError.invalid(path.child("endPort"), end, "may not be specified when `port` is "
                                                                       "non-numeric"))
        errs += [FieldError.invalid(path.child("port"), number, msg) for msg in values.port_name_errors(str(number))]
    return errs


def _cidr(text: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    try:
        return ipaddress.ip_network(text, strict=False)
    except ValueError:
        return None


def _validate_peer(peer: Obj, path: Path) -> list[FieldError]:
    errs: list[FieldError] = []
    count = 0
    for key in ("podSelector", "namespaceSelector"):
        if peer.get(key) is not None:
            count += 1
            errs += validate_label_selector(peer[key], path.child(key))
    block = peer.get("ipBlock")
    if block is not None:
        count += 1
        block, block_path = obj(block), path.child("ipBlock")
        cidr_text = str(block.get("cidr") or "")
        if not cidr_text:
            errs.append(FieldError.required(block_path.child("cidr")))
        else:
            cidr = _cidr(cidr_text)
            if cidr is None:
                errs.append(FieldError.invalid(block_path.child("cidr"), cidr_text, _CIDR_MESSAGE))
            else:
                for i, text in enumerate(items(block.get("except"))):
                    excepted = _cidr(str(text))
                    if excepted is None:
                        errs.append(FieldError.invalid(block_path.child("except").index(i), text, _CIDR_MESSAGE))
                    elif (excepted.version != cidr.version or not cidr.supernet_of(excepted)  # type: ignore[arg-type]
                          or cidr.prefixlen >= excepted.prefixlen):
                        errs.append(FieldError.invalid(block_path.child("except").index(i), text,
                                                       "must be a strict subset of `cidr`"))
    if count == 0:
        errs.append(FieldError.required(path, "must specify a peer"))
    elif count > 1 and block is not None:
        errs.append(FieldError.forbidden(path, "may not specify both ipBlock and another peer"))
    return errs


def _validate_network_policy_spec(spec: Obj, path: Path) -> list[FieldError]:
    errs = validate_label_selector(obj(spec.get("podSelector")), path.child("podSelector"))
    for direction, peers in (("ingress", "from"), ("egress", "to")):
        for i, rule in enumerate(items(spec.get(direction))):
            rule, rule_path = obj(rule), path.child(direction).index(i)
            for j, port in enumerate(items(rule.get("ports"))):
                errs += _validate_policy_port(obj(port), rule_path.child("ports").index(j))
            for j, peer in enumerate(items(rule.get(peers))):
                errs += _validate_peer(obj(peer), rule_path.child(peers).index(j))
    types = items(spec.get("policyTypes"))
    if len(types) > len(_POLICY_TYPES):
        return [*errs, FieldError.invalid(path.child("policyTypes"), types, "may not specify more than two "
                                                                            "policyTypes")]
    for i, kind in enumerate(types):
        if kind not in _POLICY_TYPES:
            errs.append(FieldError.not_supported(path.child("policyTypes").index(i), kind, _POLICY_TYPES))
    return errs


def validate_network_policy(policy: Obj) -> list[FieldError]:
    errs = validate_object_meta(obj(policy.get("metadata")), namespaced=True)
    return errs + _validate_network_policy_spec(obj(policy.get("spec")), SPEC)


def validate_network_policy_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_object_meta_update(obj(new.get("metadata")), obj(old.get("metadata")))
    return errs + _validate_network_policy_spec(obj(new.get("spec")), SPEC)
