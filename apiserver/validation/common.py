"""The building blocks of core/v1 validation that several kinds share.

Pieces of ``pkg/apis/core/validation`` that Pods, Services, Endpoints, Nodes
and the rest all use: reading nested wire-form values, enumerations and
ranges, port names and numbers, IP addresses and CIDRs as Go parses them,
config-map keys, and ``ValidateObjectMeta`` with the core group's extra rule
for finalizer names. Kept apart so that every kind's module judges, and words,
these the same way.

Pure functions; no state.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from apiserver.validation.field import FieldError, Path, render_value
from apiserver.validation.meta import (
    METADATA,
    NameRule,
    name_is_dns1123_subdomain,
    validate_object_meta,
    validate_object_meta_update,
)
from machinery.api import names

Obj = Mapping[str, Any]


SPEC: Final = Path("spec")
STATUS: Final = Path("status")

MAX_INT32: Final = 2**31 - 1
NOT_POSITIVE: Final = "must be greater than zero"
PROTOCOLS: Final = ("SCTP", "TCP", "UDP")
TAINT_EFFECTS: Final = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_STANDARD_FINALIZERS: Final = frozenset({"kubernetes", "orphan", "foregroundDeletion"})

_PORT_NAME_CHARSET: Final = re.compile(r"^[-a-z0-9]+$")
_CONFIG_MAP_KEY: Final = re.compile(r"^[-._a-zA-Z0-9]+$")
_IPV4_SLOPPY: Final = re.compile(r"^\d{1,3}(\.\d{1,3}){3}$")



# --- small helpers ---------------------------------------------------------------------------

def obj_of(value: Any) -> Obj:
    """A nested object, or an empty one when absent or null."""
    return value if isinstance(value, Mapping) else {}


def list_of(value: Any) -> Sequence[Any]:
    return value if isinstance(value, list) else []


def enum_errors(value: str | None, path: Path, supported: Sequence[str]) -> list[FieldError]:
    """An enumerated field: Required when empty, NotSupported when unknown."""
    if not value:
        return [FieldError.required(path)]
    if value not in supported:
        return [FieldError.not_supported(path, value, supported)]
    return []


def range_error(lo: int, hi: int) -> str:
    return f"must be between {lo} and {hi}, inclusive"


def in_range(value: int, path: Path, lo: int, hi: int) -> list[FieldError]:
    if lo <= value <= hi:
        return []
    return [FieldError.invalid(path, value, range_error(lo, hi))]


def port_name_errors(port: str) -> list[str]:
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


def validate_port_num_or_name(port: object, path: Path) -> list[FieldError]:
    if isinstance(port, str):
        return [FieldError.invalid(path, port, msg) for msg in port_name_errors(port)]
    if isinstance(port, int):
        return in_range(port, path, 1, 65535)
    return [FieldError.internal(path, f"unknown type: {type(port).__name__}")]


def config_map_key_errors(key: str) -> list[str]:
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


def parse_ip(value: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
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


def parse_cidr(value: str) -> int | None:
    """The IP version of a CIDR as Go's ``ParseCIDRSloppy`` accepts it (host bits allowed), else None."""
    address, slash, prefix = value.partition("/")
    ip = parse_ip(address)
    if not slash or ip is None or not prefix.isdigit() or int(prefix) > ip.max_prefixlen:
        return None
    return ip.version


def validate_ip(value: str, path: Path) -> list[FieldError]:
    if parse_ip(value) is None:
        return [FieldError.invalid(path, value,
                                   "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)")]
    return []


def is_dual_stack(versions: Sequence[int]) -> bool:
    return 4 in versions and 6 in versions


def validate_non_special_ip(value: str, path: Path) -> list[FieldError]:
    """``ValidateNonSpecialIP``: what Endpoints and external IPs may not point at.

    Unspecified, loopback and link-local addresses make no sense as a
    destination others reach (or name the node itself); IPv4-mapped IPv6
    addresses are judged as the IPv4 address they carry, as Go does.
    """
    ip = parse_ip(value)
    if ip is None:
        return [FieldError.invalid(path, value, "must be a valid IP address")]
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    errs: list[FieldError] = []
    if ip.is_unspecified:
        errs.append(FieldError.invalid(path, value, f"may not be unspecified ({value})"))
    if ip.is_loopback:
        errs.append(FieldError.invalid(path, value, "may not be in the loopback range (127.0.0.0/8, ::1/128)"))
    if ip.is_link_local:
        errs.append(FieldError.invalid(path, value, "may not be in the link-local range (169.254.0.0/16, fe80::/10)"))
    raw = ip.packed
    link_local_multicast = (raw[:3] == b"\xe0\x00\x00") if ip.version == 4 else (raw[0] == 0xFF and raw[1] & 0x0F == 2)
    if link_local_multicast:
        errs.append(FieldError.invalid(path, value,
                                       "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)"))
    return errs


def validate_port_number(port: int, path: Path) -> list[FieldError]:
    """``IsValidPortNum``: 1 to 65535."""
    return in_range(port, path, 1, 65535)

# --- comparing objects -------------------------------------------------------------------------

def semantic(value: Any) -> Any:
    """A value as Go's semantic equality sees it: absent, null, empty and zero fields all read the same."""
    if isinstance(value, Mapping):
        out = {k: semantic(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v not in (None, "", False, 0, [], {})}
    if isinstance(value, list):
        return [semantic(v) for v in value]
    return value


def diff_lines(old: Any, new: Any, path: str) -> list[str]:
    """The leaves that differ, one ``-``/``+`` pair each (Kubernetes appends a Go ``cmp.Diff`` here)."""
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        lines: list[str] = []
        for key in sorted(set(old) | set(new)):
            lines += diff_lines(old.get(key), new.get(key), f"{path}.{key}")
        return lines
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [line for i, (a, b) in enumerate(zip(old, new, strict=True))
                for line in diff_lines(a, b, f"{path}[{i}]")]
    if old == new:
        return []
    return [f"- {path}: {render_value(old)}", f"+ {path}: {render_value(new)}"]


# --- metadata shared by the core kinds ----------------------------------------------------------

def kube_finalizer_errors(name: str, path: Path) -> list[FieldError]:
    """The core group's extra finalizer rule: an unqualified name must be one Kubernetes defines."""
    if "/" not in name and name not in _STANDARD_FINALIZERS:
        return [FieldError.invalid(path, name,
                                   "name is neither a standard finalizer name nor is it fully qualified")]
    return []


def validate_core_meta(meta: Obj, *, namespaced: bool,
                        name_rule: NameRule = name_is_dns1123_subdomain) -> list[FieldError]:
    errs = validate_object_meta(meta, namespaced=namespaced, name_rule=name_rule)
    for i, name in enumerate(list_of(meta.get("finalizers"))):
        errs += kube_finalizer_errors(name, METADATA.child("finalizers").index(i))
    return errs


def validate_core_meta_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_object_meta_update(new, old)
    for i, name in enumerate(list_of(new.get("finalizers"))):
        errs += kube_finalizer_errors(name, METADATA.child("finalizers").index(i))
    return errs

