"""Kubernetes' name and label syntax rules, with Kubernetes' own error messages.

These mirror ``k8s.io/apimachinery/pkg/util/validation``: each ``is_*``
function returns a list of human-readable problems (empty when valid), worded
exactly as Kubernetes words them, because those words reach users through
``422 Invalid`` responses and kubectl prints them verbatim.

Pure functions; the only state is a bounded cache of verdicts on label keys and values
(``functools.lru_cache``, thread-safe): safe from any task or thread.
"""

from __future__ import annotations

import functools
import re
from typing import Final

DNS1123_LABEL_MAX_LENGTH: Final = 63
DNS1123_SUBDOMAIN_MAX_LENGTH: Final = 253
LABEL_VALUE_MAX_LENGTH: Final = 63
QUALIFIED_NAME_MAX_LENGTH: Final = 63

_DNS1123_LABEL_FMT: Final = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FMT: Final = rf"{_DNS1123_LABEL_FMT}(\.{_DNS1123_LABEL_FMT})*"
_QUALIFIED_NAME_FMT: Final = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE_FMT: Final = f"({_QUALIFIED_NAME_FMT})?"

_DNS1035_LABEL_FMT: Final = "[a-z]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL_RE: Final = re.compile(f"^{_DNS1123_LABEL_FMT}$")
_DNS1035_LABEL_RE: Final = re.compile(f"^{_DNS1035_LABEL_FMT}$")
_DNS1123_SUBDOMAIN_RE: Final = re.compile(f"^{_DNS1123_SUBDOMAIN_FMT}$")
_QUALIFIED_NAME_RE: Final = re.compile(f"^{_QUALIFIED_NAME_FMT}$")
_LABEL_VALUE_RE: Final = re.compile(f"^{_LABEL_VALUE_FMT}$")


def _max_len(n: int) -> str:
    return f"must be no more than {n} characters"


def _regex_error(msg: str, fmt: str, *examples: str) -> str:
    """Kubernetes' RegexError wording, including its doubled space before "or"."""
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    text = msg + " (e.g. "
    for i, example in enumerate(examples):
        if i > 0:
            text += " or "
        text += f"'{example}', "
    return text + f"regex used for validation is '{fmt}')"


def is_dns1123_label(value: str) -> list[str]:
    """RFC 1123 label: namespaces, node names in labels, container names."""
    errs: list[str] = []
    if len(value) > DNS1123_LABEL_MAX_LENGTH:
        errs.append(_max_len(DNS1123_LABEL_MAX_LENGTH))
    if not _DNS1123_LABEL_RE.match(value):
        errs.append(_regex_error(
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
            "and must start and end with an alphanumeric character",
            _DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errs


def is_dns1035_label(value: str) -> list[str]:
    """RFC 1035 label (starts with a letter): the names of Services."""
    errs: list[str] = []
    if len(value) > DNS1123_LABEL_MAX_LENGTH:
        errs.append(_max_len(DNS1123_LABEL_MAX_LENGTH))
    if not _DNS1035_LABEL_RE.match(value):
        errs.append(_regex_error(
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
            "alphabetic character, and end with an alphanumeric character",
            _DNS1035_LABEL_FMT, "my-name", "abc-123"))
    return errs


def is_dns1123_subdomain(value: str) -> list[str]:
    """RFC 1123 subdomain: the names of most objects (Pods, Nodes, RCs, Events, Leases)."""
    errs: list[str] = []
    if len(value) > DNS1123_SUBDOMAIN_MAX_LENGTH:
        errs.append(_max_len(DNS1123_SUBDOMAIN_MAX_LENGTH))
    if not _DNS1123_SUBDOMAIN_RE.match(value):
        errs.append(_regex_error(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
            "'-' or '.', and must start and end with an alphanumeric character",
            _DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs


def is_qualified_name(value: str) -> list[str]:
    """A label or annotation key: an optional DNS subdomain prefix and ``/``, then a name."""
    return list(_qualified_name_problems(value))


def is_valid_label_value(value: str) -> list[str]:
    """A label value: empty, or up to 63 characters of a qualified name's alphabet."""
    return list(_label_value_problems(value))


# Label keys and values are judged on every write of every object that has labels, a workload's
# three or four times per request (its own, its selector's, its template's, the compiled selector's),
# and mostly the same few strings across requests: the verdicts on a bounded number of them are kept.

@functools.lru_cache(maxsize=8192)
def _qualified_name_problems(value: str) -> tuple[str, ...]:
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs.extend("prefix part " + m for m in is_dns1123_subdomain(prefix))
    else:
        return (_regex_error(
            "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must "
            "start and end with an alphanumeric character",
            _QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",)
    if not name:
        errs.append("name part must be non-empty")
    elif len(name) > QUALIFIED_NAME_MAX_LENGTH:
        errs.append("name part " + _max_len(QUALIFIED_NAME_MAX_LENGTH))
    # Kubernetes checks the pattern even for an empty name, so "" gets both errors.
    if not _QUALIFIED_NAME_RE.match(name):
        errs.append("name part " + _regex_error(
            "must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
            "with an alphanumeric character",
            _QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc"))
    return tuple(errs)


@functools.lru_cache(maxsize=8192)
def _label_value_problems(value: str) -> tuple[str, ...]:
    errs: list[str] = []
    if len(value) > LABEL_VALUE_MAX_LENGTH:
        errs.append(_max_len(LABEL_VALUE_MAX_LENGTH))
    if not _LABEL_VALUE_RE.match(value):
        errs.append(_regex_error(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', "
            "'_' or '.', and must start and end with an alphanumeric character",
            _LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return tuple(errs)


_GO_ESCAPES: Final = {"\a": r"\a", "\b": r"\b", "\f": r"\f", "\n": r"\n", "\r": r"\r", "\t": r"\t",
                      "\v": r"\v", "\\": r"\\", '"': r"\""}


def go_quote(text: str) -> str:
    """Go's ``strconv.Quote``, as Kubernetes' messages print values: printable characters stay,
    the rest become Go escapes."""
    out = ['"']
    for ch in text:
        escaped = _GO_ESCAPES.get(ch)
        if escaped is not None:
            out.append(escaped)
        elif ch.isprintable():
            out.append(ch)
        elif ord(ch) < 0x80:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) < 0x10000:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    out.append('"')
    return "".join(out)
