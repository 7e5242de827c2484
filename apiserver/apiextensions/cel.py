"""CEL for ``x-kubernetes-validations``: compiled once per CRD, run on every write of a custom object.

The CEL engine is ``cel-expr-python``, Google's C++ CEL (cel-cpp) with its
parser, type checker, standard library, the ``strings``, ``optional`` and
``bindings`` (``cel.bind``) extensions, and a comprehension iteration budget
(a rule that would iterate without bound is stopped, as Kubernetes' runtime
cost limit stops it). kubesim
adds the Kubernetes CEL libraries rules use, written here against the CEL
values the engine hands Python:

- lists: ``isSorted``, ``sum``, ``min``, ``max``, ``indexOf``, ``lastIndexOf``;
- regex: ``find``, ``findAll``;
- URLs: ``url``, ``isURL``, ``getScheme``, ``getHost``, ``getHostname``, ``getPort``,
  ``getEscapedPath``, ``getQuery``;
- quantities: ``quantity``, ``isQuantity``, ``sign``, ``isInteger``, ``asInteger``,
  ``asApproximateFloat``, ``add``, ``sub``, ``isGreaterThan``, ``isLessThan``, ``compareTo``;
- IPs and CIDRs: ``ip``, ``isIP``, ``cidr``, ``isCIDR``, ``family``, ``isLoopback``,
  ``isUnspecified``, ``isGlobalUnicast``, ``isLinkLocalUnicast``, ``isLinkLocalMulticast``,
  ``containsIP``, ``containsCIDR``, ``prefixLength``;
- sets: ``sets.contains``, ``sets.equivalent``, ``sets.intersects``.

Quantities, URLs, IPs and CIDRs are opaque types in Kubernetes; the engine
cannot carry a Python object of its own type, so they travel as one-key maps
(``{"__quantity__": "1500m"}``) holding a canonical form, which keeps ``==``
meaningful. A rule calling a Kubernetes CEL function kubesim does not
implement (``semver``, ``format.*``, ``authorizer``...) is refused when the
CRD is written, with a 422 naming the rule and the function: never skipped.

``self`` and ``oldSelf`` are dynamically typed, so a reference to a field the
schema does not declare is found when the rule runs (``no such key``), not
when the CRD is written as in Kubernetes. Kubernetes' static cost estimate is
not computed; the engine's iteration budget bounds the work of one rule.

Programs are immutable and shared; the environment is built once.
"""

from __future__ import annotations

import functools
import ipaddress
import re
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any, Final

from cel_expr_python import cel
from cel_expr_python.ext import ext_bindings, ext_optional, ext_strings

from machinery.api.quantity import parse_quantity

_D: Final = cel.Type.DYN
_QUANTITY_KEY: Final = "__quantity__"
_URL_KEY: Final = "__url__"
_IP_KEY: Final = "__ip__"
_CIDR_KEY: Final = "__cidr__"

#: Functions of Kubernetes' CEL libraries that kubesim does not implement: a rule calling one is refused.
UNSUPPORTED_KUBERNETES_FUNCTIONS: Final = frozenset({
    "semver", "isSemver", "authorizer", "masked", "getMajor", "getMinor", "getPatch",
    "format",  # the format library (format.dns1123Label() ...), Kubernetes 1.31+
})

#: CEL reserved words that Kubernetes escapes in property names (``__in__``).
_RESERVED: Final = frozenset({
    "true", "false", "null", "in", "as", "break", "const", "continue", "else", "for", "function", "if",
    "import", "let", "loop", "package", "namespace", "return", "var", "void", "while",
})


class CELError(Exception):
    """A rule that does not compile, or calls what kubesim cannot run."""


# --- the Kubernetes libraries --------------------------------------------------------------------

def _quantity(text: str) -> dict[str, str]:
    try:
        amount = parse_quantity(text)
    except (ValueError, ArithmeticError) as e:
        raise ValueError(f"quantities must match the regular expression: {text!r}") from e
    return {_QUANTITY_KEY: _canonical(amount)}


def _canonical(amount: Decimal) -> str:
    normalized = amount.normalize()
    return format(normalized, "f") if normalized == normalized.to_integral() else str(normalized)


def _amount(q: Any) -> Decimal:
    if isinstance(q, dict) and _QUANTITY_KEY in q:
        return Decimal(q[_QUANTITY_KEY])
    raise ValueError("no such overload: not a quantity")


def _is_quantity(text: str) -> bool:
    try:
        parse_quantity(text)
        return True
    except (ValueError, ArithmeticError):
        return False


def _url(text: str) -> dict[str, str]:
    if not _is_url(text):
        raise ValueError(f"URL parse error during conversion from string: {text}")
    return {_URL_KEY: text}


def _is_url(text: str) -> bool:
    try:
        parts = urllib.parse.urlsplit(text)
    except ValueError:
        return False
    return bool(parts.scheme and (parts.netloc or parts.path)) or text.startswith("/")


def _url_part(u: Any, part: str) -> Any:
    if not (isinstance(u, dict) and _URL_KEY in u):
        raise ValueError("no such overload: not a URL")
    parts = urllib.parse.urlsplit(u[_URL_KEY])
    if part == "scheme":
        return parts.scheme
    if part == "host":
        return parts.netloc.rsplit("@", 1)[-1]
    if part == "hostname":
        host = parts.hostname or ""
        return host
    if part == "port":
        return str(parts.port) if parts.port is not None else ""
    if part == "path":
        return parts.path
    query = urllib.parse.parse_qs(parts.query, keep_blank_values=True)
    return {k: list(v) for k, v in query.items()}


def _ip(text: str) -> dict[str, str]:
    try:
        if "%" in text:
            raise ValueError("zones are not allowed")
        addr = ipaddress.ip_address(text)
    except ValueError as e:
        raise ValueError(f"IP Address {text!r} parse error during conversion from string: {e}") from e
    return {_IP_KEY: str(addr)}


def _cidr(text: str) -> dict[str, str]:
    try:
        net = ipaddress.ip_interface(text)
    except ValueError as e:
        raise ValueError(f"network address {text!r} parse error during conversion from string: {e}") from e
    return {_CIDR_KEY: str(net)}


def _addr(v: Any) -> Any:
    if isinstance(v, dict) and _IP_KEY in v:
        return ipaddress.ip_address(v[_IP_KEY])
    raise ValueError("no such overload: not an IP")


def _net(v: Any) -> Any:
    if isinstance(v, dict) and _CIDR_KEY in v:
        return ipaddress.ip_interface(v[_CIDR_KEY]).network
    raise ValueError("no such overload: not a CIDR")


def _ok(fn: Callable[[str], Any]) -> Callable[[str], bool]:
    def check(text: str) -> bool:
        try:
            fn(text)
            return True
        except ValueError:
            return False
    return check


def _compare(a: Any, b: Any) -> int:
    return int(a > b) - int(a < b)


def _numbers(items: Any) -> list[Any]:
    values = list(items)
    if not values:
        raise ValueError("min/max called on an empty list")
    return values


def _find_all(text: str, pattern: str, limit: int = -1) -> list[str]:
    found = [m.group(0) for m in re.finditer(pattern, text)]
    return found if limit < 0 else found[:limit]


def _find(text: str, pattern: str) -> str:
    m = re.search(pattern, text)
    return m.group(0) if m else ""


def _member(name: str, overload: str, ret: Any, params: list[Any], impl: Callable[..., Any]) -> Any:
    return cel.FunctionDecl(name, [cel.Overload(overload, ret, params, is_member=True, impl=impl)])


def _global(name: str, overload: str, ret: Any, params: list[Any], impl: Callable[..., Any]) -> Any:
    return cel.FunctionDecl(name, [cel.Overload(overload, ret, params, impl=impl)])


def _library() -> Any:
    S, B, I, F, L = cel.Type.STRING, cel.Type.BOOL, cel.Type.INT, cel.Type.DOUBLE, cel.Type.List(_D)
    functions = [
        # lists
        _member("isSorted", "list_is_sorted", B, [L], lambda items: list(items) == sorted(items)),
        _member("sum", "list_sum", _D, [L], lambda items: sum(items) if items else 0),
        _member("min", "list_min", _D, [L], lambda items: min(_numbers(items))),
        _member("max", "list_max", _D, [L], lambda items: max(_numbers(items))),
        cel.FunctionDecl("indexOf", [
            cel.Overload("list_index_of", I, [L, _D], is_member=True,
                         impl=lambda items, v: list(items).index(v) if v in list(items) else -1)]),
        cel.FunctionDecl("lastIndexOf", [
            cel.Overload("list_last_index_of", I, [L, _D], is_member=True,
                         impl=lambda items, v: len(items) - 1 - list(items)[::-1].index(v)
                         if v in list(items) else -1)]),
        # regex
        _member("find", "string_find", S, [S, S], _find),
        cel.FunctionDecl("findAll", [
            cel.Overload("string_find_all", cel.Type.List(S), [S, S], is_member=True, impl=_find_all),
            cel.Overload("string_find_all_n", cel.Type.List(S), [S, S, I], is_member=True, impl=_find_all)]),
        # URLs
        _global("url", "string_to_url", _D, [S], _url),
        _global("isURL", "is_url_string", B, [S], _is_url),
        _member("getScheme", "url_get_scheme", S, [_D], lambda u: _url_part(u, "scheme")),
        _member("getHost", "url_get_host", S, [_D], lambda u: _url_part(u, "host")),
        _member("getHostname", "url_get_hostname", S, [_D], lambda u: _url_part(u, "hostname")),
        _member("getPort", "url_get_port", S, [_D], lambda u: _url_part(u, "port")),
        _member("getEscapedPath", "url_get_escaped_path", S, [_D], lambda u: _url_part(u, "path")),
        _member("getQuery", "url_get_query", _D, [_D], lambda u: _url_part(u, "query")),
        # quantities
        _global("quantity", "string_to_quantity", _D, [S], _quantity),
        _global("isQuantity", "is_quantity_string", B, [S], _is_quantity),
        _member("sign", "quantity_sign", I, [_D], lambda q: _compare(_amount(q), 0)),
        _member("isInteger", "quantity_is_integer", B, [_D], lambda q: _amount(q) == _amount(q).to_integral()),
        _member("asInteger", "quantity_as_integer", I, [_D], lambda q: int(_amount(q))),
        _member("asApproximateFloat", "quantity_as_float", F, [_D], lambda q: float(_amount(q))),
        cel.FunctionDecl("add", [cel.Overload(
            "quantity_add", _D, [_D, _D], is_member=True,
            impl=lambda a, b: {_QUANTITY_KEY: _canonical(_amount(a) + (_amount(b) if isinstance(b, dict) else b))})]),
        cel.FunctionDecl("sub", [cel.Overload(
            "quantity_sub", _D, [_D, _D], is_member=True,
            impl=lambda a, b: {_QUANTITY_KEY: _canonical(_amount(a) - (_amount(b) if isinstance(b, dict) else b))})]),
        _member("isGreaterThan", "quantity_is_greater_than", B, [_D, _D], lambda a, b: _amount(a) > _amount(b)),
        _member("isLessThan", "quantity_is_less_than", B, [_D, _D], lambda a, b: _amount(a) < _amount(b)),
        _member("compareTo", "quantity_compare_to", I, [_D, _D], lambda a, b: _compare(_amount(a), _amount(b))),
        # IPs and CIDRs
        _global("ip", "string_to_ip", _D, [S], _ip),
        _global("isIP", "is_ip", B, [S], _ok(_ip)),
        _global("cidr", "string_to_cidr", _D, [S], _cidr),
        _global("isCIDR", "is_cidr", B, [S], _ok(_cidr)),
        _member("family", "ip_family", I, [_D], lambda v: _addr(v).version),
        _member("isLoopback", "ip_is_loopback", B, [_D], lambda v: _addr(v).is_loopback),
        _member("isUnspecified", "ip_is_unspecified", B, [_D], lambda v: _addr(v).is_unspecified),
        _member("isGlobalUnicast", "ip_is_global_unicast", B, [_D],
                lambda v: not (_addr(v).is_multicast or _addr(v).is_loopback or _addr(v).is_link_local
                               or _addr(v).is_unspecified or str(_addr(v)) == "255.255.255.255")),
        _member("isLinkLocalUnicast", "ip_is_link_local_unicast", B, [_D],
                lambda v: _addr(v).is_link_local and not _addr(v).is_multicast),
        _member("isLinkLocalMulticast", "ip_is_link_local_multicast", B, [_D],
                lambda v: _addr(v).is_multicast and _addr(v) in ipaddress.ip_network(
                    "224.0.0.0/24" if _addr(v).version == 4 else "ff02::/16")),
        _member("containsIP", "cidr_contains_ip", B, [_D, _D],
                lambda c, v: (ipaddress.ip_address(v) if isinstance(v, str) else _addr(v)) in _net(c)),
        _member("containsCIDR", "cidr_contains_cidr", B, [_D, _D],
                lambda c, o: (ipaddress.ip_interface(o).network if isinstance(o, str) else _net(o)).subnet_of(
                    _net(c))),
        _member("prefixLength", "cidr_prefix_length", I, [_D], lambda c: _net(c).prefixlen),
        # sets
        _global("sets.contains", "sets_contains", B, [L, L], lambda a, b: all(x in list(a) for x in b)),
        _global("sets.equivalent", "sets_equivalent", B, [L, L],
                lambda a, b: all(x in list(b) for x in a) and all(x in list(a) for x in b)),
        _global("sets.intersects", "sets_intersects", B, [L, L], lambda a, b: any(x in list(b) for x in a)),
    ]
    return cel.CelExtension("kubernetes", functions)


#: What a rule with ``optionalOldSelf`` reads its optional ``oldSelf`` from (names no rule can spell
#: otherwise: Kubernetes escapes property names as ``__name__``, never with this prefix).
_HAS_OLD: Final = "__kubesim_has_old_self"
_OLD: Final = "__kubesim_old_self"


@functools.cache
def _env() -> Any:
    return cel.NewEnv(variables={"self": _D, "oldSelf": _D, _HAS_OLD: cel.Type.BOOL, _OLD: _D},
                      extensions=[ext_strings.ExtStrings(), ext_optional.ExtOptional(),
                                  ext_bindings.ExtBindings(), _library()])


def _with_optional_old_self(text: str) -> str:
    """The rule with ``oldSelf`` bound to an optional: ``optional.none()`` on create, as Kubernetes binds it."""
    return f"cel.bind(oldSelf, {_HAS_OLD} ? optional.of({_OLD}) : optional.none(), ({text}))"


# --- rules ------------------------------------------------------------------------------------------

_OLD_SELF: Final = re.compile(r"\boldSelf\b")
_STRING_LITERAL: Final = re.compile(r"'(?:\\.|[^'\\])*'|\"(?:\\.|[^\"\\])*\"")
_UNDECLARED: Final = re.compile(r"undeclared reference to '([^']+)'|found no matching overload for '([^']+)'")


@dataclass(frozen=True, slots=True)
class Rule:
    """One compiled ``x-kubernetes-validations`` entry."""

    rule: str
    program: Any
    message: str
    message_program: Any | None
    reason: str
    field_path: str
    #: The rule refers to oldSelf: it runs only on updates where the old value exists (unless
    #: ``optional_old_self``: then it runs always, with ``oldSelf`` an optional).
    transition: bool
    optional_old_self: bool


def compile_rule(spec: dict[str, Any]) -> Rule:
    """Compile one rule (``{"rule": ..., "message": ...}``); raises :class:`CELError` with Kubernetes' words."""
    text = spec.get("rule")
    if not isinstance(text, str) or not text.strip():
        raise CELError("rule is not specified")
    program = _compile(text)
    code = _STRING_LITERAL.sub("''", text)
    transition = bool(_OLD_SELF.search(code))
    optional_old_self = transition and spec.get("optionalOldSelf") is True
    if optional_old_self:
        # Compiled as written first (above), so that errors point into the rule as its author wrote it.
        program = _compile(_with_optional_old_self(text))
    message_program = None
    message_expression = spec.get("messageExpression")
    if isinstance(message_expression, str) and message_expression:
        message_program = _compile(message_expression, what="messageExpression")
        if optional_old_self and _OLD_SELF.search(_STRING_LITERAL.sub("''", message_expression)):
            message_program = _compile(_with_optional_old_self(message_expression), what="messageExpression")
    return Rule(rule=text, program=program, message=str(spec.get("message") or ""),
                message_program=message_program, reason=str(spec.get("reason") or "FieldValueInvalid"),
                field_path=str(spec.get("fieldPath") or ""), transition=transition,
                optional_old_self=optional_old_self)


@functools.lru_cache(maxsize=4096)
def _compile(text: str, what: str = "rule") -> Any:
    try:
        return _env().compile(text)
    except RuntimeError as e:
        message = str(e).removeprefix("INVALID_ARGUMENT: ").removesuffix(" [INVALID_ARGUMENT]")
        m = _UNDECLARED.search(message)
        name = next((g for g in m.groups() if g), None) if m else None
        if name in UNSUPPORTED_KUBERNETES_FUNCTIONS:
            raise CELError(f"compilation failed: {name} is a Kubernetes CEL function kubesim does not implement "
                           f"yet ({what} {text!r} cannot be run)") from e
        prefix = "compilation failed" if what == "rule" else "messageExpression compilation failed"
        raise CELError(f"{prefix}: {message}") from e


class EvaluationError(Exception):
    pass


def evaluate(program: Any, self_value: Any, old_value: Any = None, *, has_old: bool = False,
             optional_old_self: bool = False) -> Any:
    """Run a compiled program; raises :class:`EvaluationError` worded as Kubernetes' CEL runtime words it.

    ``optional_old_self``: the program was compiled for a rule with ``optionalOldSelf``.
    """
    data = {"self": self_value}
    if has_old:
        data["oldSelf"] = old_value
    if optional_old_self:
        data[_HAS_OLD] = has_old
        data[_OLD] = old_value
    try:
        result = program.eval(data=data)
    except (RuntimeError, ValueError, TypeError) as e:
        raise EvaluationError(_runtime_message(str(e))) from e
    value = result.value()
    if result.type() == cel.Type.ERROR:
        raise EvaluationError(_runtime_message(str(value)))
    return _plain(value)


def _plain(value: Any) -> Any:
    if isinstance(value, list):
        return [_plain(v.value() if hasattr(v, "value") else v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v.value() if hasattr(v, "value") else v) for k, v in value.items()}
    return value


_NO_KEY: Final = re.compile(r'Key not found in map : "([^"]*)"')


def _runtime_message(text: str) -> str:
    text = re.sub(r"^[A-Z_]+: ", "", text).removesuffix(" [INTERNAL]")
    m = _NO_KEY.search(text)
    if m:
        return f"no such key: {m.group(1)}"
    if "Iteration budget exceeded" in text:
        return "operation cancelled: actual cost limit exceeded"
    m = re.search(r"No matching overloads found : (.*)", text)
    if m:
        return f"no such overload: {m.group(1)}"
    return text


# --- values --------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=4096)
def escape_property(name: str) -> str | None:
    """A property name as CEL sees it (``__dash__``, ``__in__``), or None when CEL cannot reach it."""
    if name in _RESERVED:
        return f"__{name}__"
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        return name.replace("__", "__underscores__")
    if not re.fullmatch(r"[A-Za-z_./\-][A-Za-z0-9_./\-]*", name):
        return None
    return (name.replace("__", "__underscores__").replace(".", "__dot__").replace("-", "__dash__")
            .replace("/", "__slash__"))


def needs_conversion(node: Any) -> bool:
    """Whether :func:`to_cel` would change any value of ``node`` (else values go to CEL as they are)."""
    if not isinstance(node, dict):
        return False
    t = node.get("type")
    if t == "number" or (t == "string" and node.get("format") in ("date-time", "duration")):
        return True
    props = node.get("properties")
    if isinstance(props, dict) and any(escape_property(k) != k or needs_conversion(v) for k, v in props.items()):
        return True
    return needs_conversion(node.get("additionalProperties")) or needs_conversion(node.get("items"))


def to_cel(value: Any, node: dict[str, Any]) -> Any:
    """A JSON value as its schema types it for CEL: numbers as doubles, date-times as timestamps..."""
    if value is None:
        return None
    t = node.get("type")
    if t == "object" and isinstance(value, dict):
        props = node.get("properties")
        if isinstance(props, dict) and props:
            out: dict[str, Any] = {}
            for k, v in value.items():
                sub = props.get(k)
                key = escape_property(k)
                if key is not None:
                    out[key] = to_cel(v, sub) if isinstance(sub, dict) else v
            return out
        extra = node.get("additionalProperties")
        if isinstance(extra, dict):
            return {k: to_cel(v, extra) for k, v in value.items()}
        return value
    if t == "array" and isinstance(value, list):
        items = node.get("items")
        return [to_cel(v, items) for v in value] if isinstance(items, dict) else value
    if t == "number" and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if t == "string" and isinstance(value, str):
        fmt = node.get("format")
        if fmt == "date-time":
            try:
                return datetime.fromisoformat(value)
            except ValueError:
                return value
        if fmt == "duration":
            parsed = _duration(value)
            return parsed if parsed is not None else value
    return value


_DURATION_PART: Final = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_UNIT: Final = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def _duration(text: str) -> timedelta | None:
    """Go's ``time.ParseDuration``: ``1h30m``, ``-2.5s``."""
    sign = -1 if text.startswith("-") else 1
    body = text.lstrip("+-")
    if body == "0":
        return timedelta(0)
    pos, seconds = 0, 0.0
    for m in _DURATION_PART.finditer(body):
        if m.start() != pos:
            return None
        seconds += float(m.group(1)) * _UNIT[m.group(2)]
        pos = m.end()
    if pos != len(body) or not body:
        return None
    return timedelta(seconds=sign * seconds)
