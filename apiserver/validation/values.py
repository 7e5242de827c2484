"""Small checks the API groups' validators share: enumerations, ranges, int-or-percent values.

Kubernetes keeps these beside the kind that first needed them
(``ValidatePositiveIntOrPercent`` is in the apps group and the policy group
calls it there); kubesim keeps them once here, worded as Kubernetes words
them, with readers that take a wire value that may be ``null`` or missing.

Pure functions; no state.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from apiserver.validation.field import FieldError, Path
from apiserver.validation.meta import IS_NEGATIVE
from machinery.api import names

Obj = Mapping[str, Any]

MAX_INT32: Final = 2**31 - 1
_PERCENT: Final = re.compile(r"^[0-9]+%$")
#: ``IsValidPercent``'s message, with RegexError's doubled space before "or".
_PERCENT_MESSAGE: Final = ("a valid percent string must be a numeric string followed by an ending '%' "
                           "(e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')")


def obj(value: Any) -> Obj:
    """A wire value that should be an object: ``{}`` for null or missing."""
    return value if isinstance(value, Mapping) else {}


def items(value: Any) -> Sequence[Any]:
    """A wire value that should be a list: ``[]`` for null or missing."""
    return value if isinstance(value, list) else []


def enum(value: str | None, path: Path, supported: Sequence[str]) -> list[FieldError]:
    """An enumerated field: Required when empty, NotSupported when unknown."""
    if not value:
        return [FieldError.required(path)]
    if value not in supported:
        return [FieldError.not_supported(path, value, supported)]
    return []


def optional_enum(value: str | None, path: Path, supported: Sequence[str]) -> list[FieldError]:
    """An enumerated field that may be left out."""
    if value is None:
        return []
    return [FieldError.not_supported(path, value, supported)] if value not in supported else []


def nonnegative(value: Any, path: Path) -> list[FieldError]:
    """``ValidateNonnegativeField``."""
    if isinstance(value, int) and not isinstance(value, bool) and value < 0:
        return [FieldError.invalid(path, value, IS_NEGATIVE)]
    return []


def positive(value: Any, path: Path) -> list[FieldError]:
    """``ValidatePositiveField``: greater than zero."""
    if isinstance(value, int) and not isinstance(value, bool) and value <= 0:
        return [FieldError.invalid(path, value, "must be greater than zero")]
    return []


def in_range(value: int, path: Path, lo: int, hi: int) -> list[FieldError]:
    if not lo <= value <= hi:
        return [FieldError.invalid(path, value, f"must be between {lo} and {hi}, inclusive")]
    return []


# --- int-or-percent (``intstr.IntOrString``) ---------------------------------------------------

def is_percent(value: Any) -> bool:
    return isinstance(value, str) and _PERCENT.match(value) is not None


def int_or_percent_value(value: Any) -> int:
    """``getIntOrPercentValue``: the number of a percent, an int itself, 0 for anything else."""
    if is_percent(value):
        return int(value[:-1])
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        # IntOrString.IntValue of a string is strconv.Atoi, 0 when that fails.
        try:
            return int(value)
        except ValueError:
            return 0
    return 0


def validate_positive_int_or_percent(value: Any, path: Path) -> list[FieldError]:
    """``ValidatePositiveIntOrPercent``: a non-negative integer or ``N%``."""
    if value is None:
        return []
    if isinstance(value, str):
        return [] if is_percent(value) else [FieldError.invalid(path, value, _PERCENT_MESSAGE)]
    if isinstance(value, int) and not isinstance(value, bool):
        return nonnegative(value, path)
    return [FieldError.invalid(path, value, "must be an integer or percentage (e.g '5%%')")]


def validate_not_more_than_100_percent(value: Any, path: Path) -> list[FieldError]:
    """``IsNotMoreThan100Percent``."""
    if is_percent(value) and int(value[:-1]) > 100:
        return [FieldError.invalid(path, value, "must not be greater than 100%")]
    return []


def format_int_or_string(value: Any) -> str:
    """``IntOrString.String()``."""
    return str(value)


# --- names and paths ---------------------------------------------------------------------------

_PORT_NAME_CHARSET: Final = re.compile(r"^[-a-z0-9]+$")
_HTTP_PATH: Final = re.compile(r"^[A-Za-z0-9/\-._~%!$&'()*+,;=:]+$")


def port_name_errors(port: str) -> list[str]:
    """``IsValidPortName``: an IANA service name."""
    errs: list[str] = []
    if len(port) > 15:
        errs.append("must be no more than 15 characters")
    if not _PORT_NAME_CHARSET.match(port):
        errs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    elif not re.search(r"[a-z]", port):
        errs.append("must contain at least one letter (a-z)")
    if "--" in port:
        errs.append("must not contain consecutive hyphens")
    if port and (port[0] == "-" or port[-1] == "-"):
        errs.append("must not begin or end with a hyphen")
    return errs


def port_number_errors(port: int) -> list[str]:
    """``IsValidPortNum``."""
    return [] if 1 <= port <= 65535 else ["must be between 1 and 65535, inclusive"]


def validate_domain_prefixed_path(value: str, path: Path) -> list[FieldError]:
    """``IsDomainPrefixedPath``: ``example.com/some/path``."""
    if not value:
        return [FieldError.required(path)]
    host, slash, rest = value.partition("/")
    if not slash or not host or not rest:
        return [FieldError.invalid(path, value, 'must be a domain-prefixed path (such as "acme.io/foo")')]
    errs = [FieldError.invalid(path, host, msg) for msg in names.is_dns1123_subdomain(host)]
    if not _HTTP_PATH.match(rest):
        errs.append(FieldError.invalid(path, rest, "Invalid path (regex used for validation is "
                                                   "'[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+')"))
    return errs


_DNS1035_LABEL: Final = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")


def dns1035_label_errors(value: str) -> list[str]:
    """``IsDNS1035Label``: a Service name (it becomes a DNS label that cannot start with a digit)."""
    errs = ["must be no more than 63 characters"] if len(value) > 63 else []
    if not _DNS1035_LABEL.match(value):
        errs.append("a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
                    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
                    "regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')")
    return errs


def template_labels(template: Any) -> dict[str, str]:
    """The labels of a PodTemplateSpec (``{}`` when it has none)."""
    return dict(obj(obj(template).get("metadata")).get("labels") or {})
