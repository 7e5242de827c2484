"""The discovery.k8s.io/v1 rules: defaulting and validation of EndpointSlices.

As ``pkg/apis/discovery/v1/defaults.go`` and ``pkg/apis/discovery/validation``
of Kubernetes 1.32: a known address type that never changes, at most 1000
endpoints of at most 100 addresses of that type, unique DNS-label port names,
ports defaulting to an empty name and TCP.

Pure functions over plain dicts; no state.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any, Final

from apiserver.validation.field import ErrorType, FieldError, Path
from apiserver.validation.meta import (
    validate_dns1123_label,
    validate_labels,
    validate_object_meta,
    validate_object_meta_update,
    validate_qualified_name,
)
from apiserver.validation.values import items, obj
from machinery.api import names

Obj = Mapping[str, Any]

ADDRESS_TYPES: Final = ("FQDN", "IPv4", "IPv6")
_PROTOCOLS: Final = ("SCTP", "TCP", "UDP")
_MAX_ENDPOINTS: Final = 1000
_MAX_ADDRESSES: Final = 100
_MAX_PORTS: Final = 20000
_MAX_TOPOLOGY_LABELS: Final = 16
_ZONE_LABEL: Final = "topology.kubernetes.io/zone"


def default_endpoint_slice(slice_: dict[str, Any]) -> None:
    for port in items(slice_.get("ports")):
        if isinstance(port, dict):
            if port.get("name") is None:
                port["name"] = ""
            if port.get("protocol") is None:
                port["protocol"] = "TCP"


def _too_many(path: Path, actual: int, limit: int) -> FieldError:
    return FieldError(ErrorType.TOO_MANY, str(path), actual, f"must have at most {limit} items")


def _address_errors(address: str, kind: str, path: Path) -> list[FieldError]:
    if kind in ("IPv4", "IPv6"):
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            ip = None
        if ip is None or (ip.version == 4) != (kind == "IPv4"):
            return [FieldError.invalid(path, address, f"must be a valid {kind} address")]
        errs: list[FieldError] = []
        if ip.is_unspecified:
            errs.append(FieldError.invalid(path, address, f"may not be unspecified ({address})"))
        if ip.is_loopback:
            errs.append(FieldError.invalid(path, address, "may not be in the loopback range (127.0.0.0/8, ::1/128)"))
        if ip.is_link_local and not ip.is_multicast:
            errs.append(FieldError.invalid(path, address, "may not be in the link-local range (169.254.0.0/16, "
                                                          "fe80::/10)"))
        link_local_multicast = ipaddress.ip_network("224.0.0.0/24" if ip.version == 4 else "ff02::/16")
        if ip in link_local_multicast:
            errs.append(FieldError.invalid(path, address, "may not be in the link-local multicast range "
                                                          "(224.0.0.0/24, ff02::/10)"))
        return errs
    if kind == "FQDN":
        return [FieldError.invalid(path, address, msg) for msg in names.is_dns1123_subdomain(address.rstrip("."))]
    return []


def _validate(slice_: Obj) -> list[FieldError]:
    errs = validate_object_meta(obj(slice_.get("metadata")), namespaced=True)
    kind = slice_.get("addressType") or ""
    if not kind:
        errs.append(FieldError.required(Path("addressType")))
    elif kind not in ADDRESS_TYPES:
        errs.append(FieldError.not_supported(Path("addressType"), kind, ADDRESS_TYPES))
    endpoints = items(slice_.get("endpoints"))
    if len(endpoints) > _MAX_ENDPOINTS:
        errs.append(_too_many(Path("endpoints"), len(endpoints), _MAX_ENDPOINTS))
    else:
        for i, endpoint in enumerate(endpoints):
            endpoint, path = obj(endpoint), Path("endpoints").index(i)
            addresses = items(endpoint.get("addresses"))
            if not addresses:
                errs.append(FieldError.required(path.child("addresses"), "must contain at least 1 address"))
            elif len(addresses) > _MAX_ADDRESSES:
                errs.append(_too_many(path.child("addresses"), len(addresses), _MAX_ADDRESSES))
            for j, address in enumerate(addresses):
                errs += _address_errors(str(address), kind, path.child("addresses").index(j))
            topology = obj(endpoint.get("deprecatedTopology"))
            if len(topology) > _MAX_TOPOLOGY_LABELS:
                errs.append(_too_many(path.child("deprecatedTopology"), len(topology), _MAX_TOPOLOGY_LABELS))
            errs += validate_labels(topology, path.child("deprecatedTopology"))
            if _ZONE_LABEL in topology:
                errs.append(FieldError.internal(path.child("deprecatedTopology").key(_ZONE_LABEL),
                                                "reserved key was not removed in conversion"))
            if endpoint.get("hostname") is not None:
                errs += validate_dns1123_label(endpoint["hostname"], path.child("hostname"))
    ports = items(slice_.get("ports"))
    if len(ports) > _MAX_PORTS:
        return [*errs, _too_many(Path("ports"), len(ports), _MAX_PORTS)]
    seen: set[str] = set()
    for i, port in enumerate(ports):
        port, path = obj(port), Path("ports").index(i)
        name = str(port.get("name") or "")
        if name:
            errs += validate_dns1123_label(name, path.child("name"))
        if name in seen:
            errs.append(FieldError.duplicate(path.child("name"), name))
        seen.add(name)
        protocol = port.get("protocol")
        if protocol is None:
            errs.append(FieldError.required(path.child("protocol")))
        elif protocol not in _PROTOCOLS:
            errs.append(FieldError.not_supported(path.child("protocol"), protocol, _PROTOCOLS))
        if port.get("appProtocol") is not None:
            errs += validate_qualified_name(port["appProtocol"], path.child("appProtocol"))
    return errs


def validate_endpoint_slice(slice_: Obj) -> list[FieldError]:
    return _validate(slice_)


def validate_endpoint_slice_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_object_meta_update(obj(new.get("metadata")), obj(old.get("metadata")))
    errs += _validate(new)
    if new.get("addressType") != old.get("addressType"):
        errs.append(FieldError.invalid(Path("addressType"), new.get("addressType"), "field is immutable"))
    return errs
