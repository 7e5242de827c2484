"""Validating custom objects against their structural schema, as kube-apiextensions-apiserver does.

A schema is compiled once (per served version of an established CRD) into a
tree of small checkers, one per schema node; validating an object visits each
of its values once. The checks and their messages are kube-openapi's, turned
into field errors the way Kubernetes' ``ValidateCustomResource`` turns them:

- ``type`` (and ``nullable``, ``x-kubernetes-int-or-string``):
  ``spec.size: Invalid value: "string": spec.size in body must be of type integer: "string"``;
- ``format`` (date-time, date, duration, byte, uuid, ipv4, ipv6, cidr, mac, hostname, email, uri):
  ``... in body must be of type date-time: "x"``;
- ``enum`` (Unsupported value), ``pattern`` (``should match '^a'``), ``minLength``
  (``should be at least 3 chars long``), ``maxLength`` (Too long), ``minimum``/``maximum``
  and their exclusive forms, ``multipleOf``, ``minItems`` (``should have at least 2 items``),
  ``maxItems`` and ``maxProperties`` (Too many), ``minProperties``, ``uniqueItems``,
  ``required`` (Required value), ``allOf``/``anyOf``/``oneOf``/``not``;
- ``x-kubernetes-list-type`` ``set`` (items unique) and ``map`` (unique by
  ``x-kubernetes-list-map-keys``): Duplicate value;
- ``x-kubernetes-embedded-resource``: apiVersion and kind must not be empty;
- ``x-kubernetes-validations``: CEL rules (:mod:`.cel`), with ``oldSelf`` on
  updates for values that exist in the old object at the same place (object
  fields, map keys, and items of ``map`` and ``set`` lists).

On updates, values that are unchanged from the old object (at a place where
the two correlate) are not validated again: Kubernetes' validation ratcheting,
on by default since 1.30.

Pure; compiled validators are immutable and shared.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import json
import re
from collections.abc import Callable
from typing import Any, Final

from apiserver.apiextensions import cel
from apiserver.validation.field import ErrorType, FieldError

Check = Callable[[Any, Any, bool, str, list[FieldError]], None]

_REASONS: Final = {
    "FieldValueInvalid": ErrorType.INVALID, "FieldValueForbidden": ErrorType.FORBIDDEN,
    "FieldValueRequired": ErrorType.REQUIRED, "FieldValueDuplicate": ErrorType.DUPLICATE,
}

_FORMATS: Final[dict[str, Callable[[str], bool]]] = {}


def _format(name: str) -> Callable[[Callable[[str], bool]], Callable[[str], bool]]:
    def register(fn: Callable[[str], bool]) -> Callable[[str], bool]:
        _FORMATS[name] = fn
        return fn
    return register


_DATE_TIME: Final = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")
_DATE: Final = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_UUID: Final = re.compile(r"^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$")
_MAC: Final = re.compile(r"^([0-9A-Fa-f]{2}[:-]){5}[0-9A-Fa-f]{2}$")
_HOSTNAME: Final = re.compile(r"^(?=.{1,255}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
                              r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$")
_EMAIL: Final = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")

_format("date-time")(lambda v: bool(_DATE_TIME.match(v)))
_format("datetime")(lambda v: bool(_DATE_TIME.match(v)))
_format("date")(lambda v: bool(_DATE.match(v)))
_format("duration")(lambda v: cel._duration(v) is not None)
_format("uuid")(lambda v: bool(_UUID.match(v)))
_format("mac")(lambda v: bool(_MAC.match(v)))
_format("hostname")(lambda v: bool(_HOSTNAME.match(v)))
_format("email")(lambda v: bool(_EMAIL.match(v)))
_format("uri")(lambda v: bool(re.match(r"^[A-Za-z][A-Za-z0-9+.\-]*:", v)))


@_format("byte")
def _is_base64(v: str) -> bool:
    try:
        base64.b64decode(v, validate=True)
        return True
    except (binascii.Error, ValueError):
        return False


def _parses(fn: Callable[[str], Any]) -> Callable[[str], bool]:
    def check(v: str) -> bool:
        try:
            fn(v)
            return True
        except ValueError:
            return False
    return check


_format("ipv4")(_parses(ipaddress.IPv4Address))
_format("ipv6")(_parses(ipaddress.IPv6Address))
_format("cidr")(_parses(lambda v: ipaddress.ip_network(v, strict=False)))


def json_type(value: Any) -> str:
    """The JSON type name kube-openapi reports for a value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _name(path: str) -> str:
    return path or "body"


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _type_ok(t: str, value: Any) -> bool:
    if t == "object":
        return isinstance(value, dict)
    if t == "array":
        return isinstance(value, list)
    if t == "string":
        return isinstance(value, str)
    if t == "boolean":
        return isinstance(value, bool)
    if t == "integer":
        return type(value) is int or (isinstance(value, float) and value.is_integer())
    if t == "number":
        return _number(value)
    return True


def _child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _go_number(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


class _Compiler:
    """Compiles one schema tree; collects the CEL compile errors of its rules (for the CRD's validation)."""

    def __init__(self, *, rules: bool) -> None:
        #: True: compile only the CEL rules (and the walk to them); False: only the schema's checks.
        self.rules = rules
        self.rule_errors: list[tuple[str, int, str, Any]] = []

    def node(self, node: dict[str, Any], schema_path: str = "") -> Check:
        check = self._node(node, schema_path)
        if check is _nothing:
            return check

        def ratcheted(value: Any, old: Any, has_old: bool, path: str, errs: list[FieldError]) -> None:
            # Validation ratcheting (Kubernetes 1.30+, on by default): a value an update leaves as it
            # was is not validated again, so a schema made stricter does not block unrelated changes.
            if has_old and value == old:
                return
            check(value, old, has_old, path, errs)
        return ratcheted

    def _node(self, node: dict[str, Any], schema_path: str = "") -> Check:
        checks: list[Check] = []
        t = node.get("type")
        nullable = bool(node.get("nullable"))
        int_or_string = bool(node.get("x-kubernetes-int-or-string"))
        if not self.rules:
            if int_or_string:
                checks.append(_int_or_string)
            elif isinstance(t, str) and t:
                checks.append(_typed(t, nullable))
            fmt = node.get("format")
            if isinstance(fmt, str) and fmt in _FORMATS and t == "string":
                checks.append(_string_format(fmt, _FORMATS[fmt]))
            if isinstance(node.get("enum"), list):
                checks.append(_enum(node["enum"]))
            checks.extend(_string_bounds(node))
            checks.extend(_number_bounds(node))
        checks.extend(self._object(node, schema_path))
        checks.extend(self._array(node, schema_path))
        if not self.rules:
            for key in ("allOf", "anyOf", "oneOf"):
                branches = node.get(key)
                if isinstance(branches, list) and branches:
                    compiled = [self.node(b, schema_path) for b in branches if isinstance(b, dict)]
                    checks.append(_combined(key, compiled))
            if isinstance(node.get("not"), dict):
                checks.append(_not(self.node(node["not"], schema_path)))
            if node.get("x-kubernetes-embedded-resource"):
                checks.append(_embedded)
        rules = node.get("x-kubernetes-validations")
        if self.rules and isinstance(rules, list) and rules:
            compiled_rules = []
            for i, spec in enumerate(rules):
                try:
                    compiled_rules.append(cel.compile_rule(spec if isinstance(spec, dict) else {}))
                except cel.CELError as e:
                    self.rule_errors.append((schema_path, i, str(e), spec))
            if compiled_rules:
                checks.append(_rules(compiled_rules, node))
        if not checks:
            return _nothing
        if len(checks) == 1:
            return checks[0]
        allowed_null = nullable
        type_check = checks[0] if not self.rules and (int_or_string or (isinstance(t, str) and t)) else None

        def check(value: Any, old: Any, has_old: bool, path: str, errs: list[FieldError]) -> None:
            if value is None and allowed_null:
                return
            before = len(errs)
            for c in checks:
                c(value, old, has_old, path, errs)
                if c is type_check and len(errs) > before:
                    return  # a value of the wrong type is not checked further
        return check

    def _object(self, node: dict[str, Any], schema_path: str) -> list[Check]:
        out: list[Check] = []
        props = node.get("properties")
        required = [r for r in node.get("required") or () if isinstance(r, str)]
        if required and not self.rules:
            out.append(_required(required))
        if isinstance(props, dict) and props:
            children = {k: self.node(v, f"{schema_path}.properties[{k}]") for k, v in props.items()
                        if isinstance(v, dict)}
            children = {k: c for k, c in children.items() if c is not _nothing}
            if children:
                out.append(_properties(children))
        extra = node.get("additionalProperties")
        if isinstance(extra, dict):
            values = self.node(extra, f"{schema_path}.additionalProperties")
            if values is not _nothing:
                out.append(_map_values(values))
        lo, hi = node.get("minProperties"), node.get("maxProperties")
        if (isinstance(lo, int) or isinstance(hi, int)) and not self.rules:
            out.append(_property_count(lo if isinstance(lo, int) else None, hi if isinstance(hi, int) else None))
        return out

    def _array(self, node: dict[str, Any], schema_path: str) -> list[Check]:
        out: list[Check] = []
        lo, hi = node.get("minItems"), node.get("maxItems")
        list_type = node.get("x-kubernetes-list-type")
        keys = tuple(k for k in node.get("x-kubernetes-list-map-keys") or () if isinstance(k, str))
        if not self.rules:
            if isinstance(lo, int) or isinstance(hi, int):
                out.append(_item_count(lo if isinstance(lo, int) else None, hi if isinstance(hi, int) else None))
            if node.get("uniqueItems") is True or list_type == "set":
                out.append(_unique_items(list_type == "set"))
            if list_type == "map" and keys:
                out.append(_unique_keys(keys))
        items = node.get("items")
        if isinstance(items, dict):
            check = self.node(items, f"{schema_path}.items")
            if check is not _nothing:
                out.append(_items(check, list_type, keys))
        return out


def _nothing(value: Any, old: Any, has_old: bool, path: str, errs: list[FieldError]) -> None:
    return None


def _typed(t: str, nullable: bool) -> Check:
    def check(value: Any, old: Any, has_old: bool, path: str, errs: list[FieldError]) -> None:
        if value is None and nullable:
            return
        if not _type_ok(t, value):
            got = json_type(value)
            errs.append(FieldError.type_invalid(path, got, f"{_name(path)} in body must be of type {t}: \"{got}\""))
    return check


def _int_or_string(value: Any, old: Any, has_old: bool, path: str, errs: list[FieldError]) -> None:
    if not (isinstance(value, str) or type(value) is int):
        got = json_type(value)
        errs.append(FieldError.type_invalid(
            path, got, f"{_name(path)} in body must be of type integer,string: \"{got}\""))


def _string_format(fmt: str, ok: Callable[[str], bool]) -> Check:
    def check(value: Any, old: Any, has_old: bool, path: str, errs: list[FieldError]) -> None:
        if isinstance(value, str) and not ok(value):
            errs.append(FieldError.type_invalid(path, value, f"{_name(path)} in body must be of type {fmt}: "
                                                f"{json.dumps(value)}"))
    return check


def _enum(values: list[Any]) -> Check:
    shown = [v if isinstance(v, str) else json.dumps(v, separators=(",", ":")) for v in values]

    def check(value: Any, old: Any, has_old: bool, path: str, errs: list[FieldError]) -> None:
        if not any(value == v and type(value) is type(v) or (_number(value) and _number(v) and value == v)
                   for v in values):
            errs.append(FieldError.not_supported(path, value, shown))
    return check


def _string_bounds(node: dict[str, Any]) -> list[Check]:
    out: list[Check] = []
    lo, hi, pattern = node.get("minLength"), node.get("maxLength"), node.get("pattern")
    if isinstance(hi, int):
        def max_length(value: Any, old: Any, has_old: bool, path: str, errs: list[FieldError]) -> None:
            if isinstance(value, str) and len(value) > hi:
                errs.append(FieldError(ErrorType.TOO_LONG, path, value, f"may not be more than {hi} bytes"))
        out.append(max_length)
    if isinstance(lo, int):
        def min_length(value: Any, old: Any, has_old: bool, path: str, errs: list[FieldError]) -> None:
            if isinstance(value, str) and len(value) < lo:
                errs.append(FieldError.invalid(path, value, f"{_name(path)} in body should be at least {lo} "
                                               "chars long"))
        out.append(min_length)
    if isinstance(pattern, str):
        try:
            compiled = re.compile(pattern)
        except re.error:
            compiled = None
        if compiled is not None:
            def matches(value: Any, old: Any, has_old: bool, path: str, errs: list[FieldError]) -> None:
                if isinstance(value, str) and compiled.search(value) is None:
                    errs.append(FieldError.invalid(path, value, f"{_name(path)} in body should match '{pattern}'"))
            out.append(matches)
    return out


def _number_bounds(node: dict[str, Any]) -> list[Check]:
    out: list[Check] = []
    lo, hi, step = node.get("minimum"), node.get("maximum"), node.get("multipleOf")
    if _number(lo):
        exclusive = bool(node.get("exclusiveMinimum"))

        def minimum(value: Any, old: Any, has_old: bool, path: str, errs: list[FieldError]) -> None:
            if _number(value) and (value <= lo if exclusive else value < lo):
                words = "greater than" if exclusive else "greater than or equal to"
                errs.append(FieldError.invalid(path, value, f"{_name(path)} in body should be {words} "
                                               f"{_go_number(lo)}"))
        out.append(minimum)
    if _number(hi):
        exclusive_max = bool(node.get("exclusiveMaximum"))

        def maximum(value: Any, old: Any, has_old: bool, path: str, errs: list[FieldError]) -> None:
            if _number(value) and (value >= hi if exclusive_max else value > hi):
                words = "less than" if exclusive_max else "less than or equal to"
                errs.append(FieldError.invalid(path, value, f"{_name(path)} in body should be {words} "
                                               f"{_go_number(hi)}"))
        out.append(maximum)
    if isinstance(step, (int, float)) and not isinstance(step, bool) and step > 0:
        def multiple(value: Any, old: Any, has_old: bool, path: str, errs: list[FieldError]) -> None:
            if _number(value) and abs(value / step - round(value / step)) > 1e-9:
                errs.append(FieldError.invalid(path, value, f"{_name(path)} in body should be a multiple of "
                                               f"{_go_number(step)}"))
        out.append(multiple)
    return out


def _required(names: list[str]) -> Check:
    def check(value: Any, old: Any, has_old: bool, path: str, errs: list[FieldError]) -> None:
        if isinstance(value, dict):
            for name in names:
                if name not in value:
                    errs.append(FieldError.required(_child(path, name), ""))
    return check


def _properties(children: dict[str, Check]) -> Check:
    def check(value: Any, old: Any, has_old: bool, path: str, errs: list[FieldError]) -> None:
        if not isinstance(value, dict):
            return
        old_map = old if has_old and isinstance(old, dict) else None
        for key, sub in value.items():
            child = children.get(key)
            if child is not None:
                if old_map is not None and key in old_map:
                    child(sub, old_map[key], True, _child(path, key), errs)
                else:
                    child(sub, None, False, _child(path, key), errs)
    return check


def _map_values(values: Check) -> Check:
    def check(value: Any, old: Any, has_old: bool, path: str, errs: list[FieldError]) -> None:
        if not isinstance(value, dict):
            return
        old_map = old if has_old and isinstance(old, dict) else None
        for key, sub in value.items():
            if old_map is not None and key in old_map:
                values(sub, old_map[key], True, f"{path}[{key}]", errs)
            else:
                values(sub, None, False, f"{path}[{key}]", errs)
    return check


def _property_count(lo: int | None, hi: int | None) -> Check:
    def check(value: Any, old: Any, has_old: bool, path: str, errs: list[FieldError]) -> None:
        if not isinstance(value, dict):
            return
        if hi is not None and len(value) > hi:
            errs.append(FieldError(ErrorType.TOO_MANY, path, len(value), f"must have at most {hi} items"))
        if lo is not None and len(value) < lo:
            errs.append(FieldError.invalid(path, len(value), f"{_name(path)} in body should have at least {lo} "
                                           "properties"))
    return check


def _item_count(lo: int | None, hi: int | None) -> Check:
    def check(value: Any, old: Any, has_old: bool, path: str, errs: list[FieldError]) -> None:
        if not isinstance(value, list):
            return
        if hi is not None and len(value) > hi:
            errs.append(FieldError(ErrorType.TOO_MANY, path, len(value), f"must have at most {hi} items"))
        if lo is not None and len(value) < lo:
            errs.append(FieldError.invalid(path, len(value), f"{_name(path)} in body should have at least {lo} "
                                           "items"))
    return check


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _unique_items(as_set: bool) -> Check:
    def check(value: Any, old: Any, has_old: bool, path: str, errs: list[FieldError]) -> None:
        if not isinstance(value, list):
            return
        seen: set[str] = set()
        for i, item in enumerate(value):
            key = _canonical(item)
            if key in seen:
                if as_set:
                    errs.append(FieldError.duplicate(f"{path}[{i}]", item))
                else:
                    errs.append(FieldError.invalid(path, value, f"{_name(path)} in body shouldn't contain "
                                                   "duplicates"))
                    return
            seen.add(key)
    return check


def _unique_keys(keys: tuple[str, ...]) -> Check:
    def check(value: Any, old: Any, has_old: bool, path: str, errs: list[FieldError]) -> None:
        if not isinstance(value, list):
            return
        seen: set[str] = set()
        for i, item in enumerate(value):
            if not isinstance(item, dict):
                continue
            key = _canonical({k: item.get(k) for k in keys if k in item})
            if key in seen:
                errs.append(FieldError.duplicate(f"{path}[{i}]", {k: item[k] for k in keys if k in item}))
            seen.add(key)
    return check


def _items(item_check: Check, list_type: Any, keys: tuple[str, ...]) -> Check:
    def check(value: Any, old: Any, has_old: bool, path: str, errs: list[FieldError]) -> None:
        if not isinstance(value, list):
            return
        # Items are correlated with the old list only where Kubernetes correlates them.
        old_by: dict[str, Any] | None = None
        if has_old and isinstance(old, list) and list_type in ("map", "set"):
            old_by = {}
            for item in old:
                k = _canonical({f: item.get(f) for f in keys}) if list_type == "map" and isinstance(item, dict) \
                    else _canonical(item)
                old_by[k] = item
        for i, item in enumerate(value):
            if old_by is not None:
                k = _canonical({f: item.get(f) for f in keys}) if list_type == "map" and isinstance(item, dict) \
                    else _canonical(item)
                if k in old_by:
                    item_check(item, old_by[k], True, f"{path}[{i}]", errs)
                    continue
            item_check(item, None, False, f"{path}[{i}]", errs)
    return check


def _combined(key: str, branches: list[Check]) -> Check:
    def check(value: Any, old: Any, has_old: bool, path: str, errs: list[FieldError]) -> None:
        results = []
        for b in branches:
            found: list[FieldError] = []
            b(value, old, has_old, path, found)
            results.append(found)
        passing = sum(1 for r in results if not r)
        if key == "allOf":
            for r in results:
                errs.extend(r)
        elif key == "anyOf" and passing == 0:
            errs.append(FieldError.invalid(path, value, f"{_name(path)} in body must validate at least one schema "
                                           "(anyOf)"))
        elif key == "oneOf" and passing != 1:
            errs.append(FieldError.invalid(path, value, f"{_name(path)} in body must validate one and only one "
                                           "schema (oneOf)"))
    return check


def _not(inner: Check) -> Check:
    def check(value: Any, old: Any, has_old: bool, path: str, errs: list[FieldError]) -> None:
        found: list[FieldError] = []
        inner(value, old, has_old, path, found)
        if not found:
            errs.append(FieldError.invalid(path, value, f"{_name(path)} in body must not validate the schema (not)"))
    return check


def _embedded(value: Any, old: Any, has_old: bool, path: str, errs: list[FieldError]) -> None:
    if isinstance(value, dict):
        for name in ("apiVersion", "kind"):
            if not value.get(name):
                errs.append(FieldError.required(_child(path, name), "must not be empty"))


def _rules(rules: list[cel.Rule], node: dict[str, Any]) -> Check:
    convert = cel.needs_conversion(node)

    def check(value: Any, old: Any, has_old: bool, path: str, errs: list[FieldError]) -> None:
        if value is None:
            return
        typed = cel.to_cel(value, node) if convert else value
        typed_old = (cel.to_cel(old, node) if convert else old) if has_old else None
        for rule in rules:
            if rule.transition and not has_old and not rule.optional_old_self:
                continue
            where = (path + rule.field_path if rule.field_path else path) or "<nil>"
            shown = json_type(value)
            try:
                ok = cel.evaluate(rule.program, typed, typed_old, has_old=has_old,
                                  optional_old_self=rule.optional_old_self)
            except cel.EvaluationError as e:
                errs.append(FieldError.invalid(where, shown, f"{e} evaluating rule: {rule.rule}"))
                continue
            if ok is True:
                continue
            if ok is not False:
                errs.append(FieldError.invalid(where, shown, f"rule did not evaluate to a boolean: {rule.rule}"))
                continue
            detail = rule.message or f"failed rule: {rule.rule}"
            if rule.message_program is not None:
                try:
                    text = cel.evaluate(rule.message_program, typed, typed_old, has_old=has_old,
                                        optional_old_self=rule.optional_old_self)
                    if isinstance(text, str) and text.strip():
                        detail = text
                except cel.EvaluationError:
                    pass
            kind = _REASONS.get(rule.reason, ErrorType.INVALID)
            # As Kubernetes' fieldErrorForReason: Forbidden and Required carry the message, Duplicate
            # only the value's type.
            errs.append(FieldError(kind, where, "" if kind in (ErrorType.REQUIRED, ErrorType.FORBIDDEN) else shown,
                                   "" if kind is ErrorType.DUPLICATE else detail))
    return check


#: The errors after which Kubernetes runs no CEL rule (the object is not of the schema's shape).
_BLOCKING: Final = frozenset({ErrorType.TYPE_INVALID, ErrorType.NOT_SUPPORTED})


class SchemaValidator:
    """A compiled ``openAPIV3Schema``: ``validate(obj, old)`` returns every field error.

    The schema's checks run first; the CEL rules run only when no value had the
    wrong type or an unsupported enum value, as in Kubernetes.
    """

    def __init__(self, schema: dict[str, Any]) -> None:
        compiler = _Compiler(rules=False)
        cel_compiler = _Compiler(rules=True)
        # metadata is ObjectMeta, validated by the metadata rules; the schema only says name/generateName.
        root = {k: v for k, v in schema.items()}
        props = dict(root.get("properties") or {})
        props.pop("metadata", None)
        props.pop("apiVersion", None)
        props.pop("kind", None)
        root["properties"] = props
        self._check = compiler.node(root)
        self._rules = cel_compiler.node(root)
        #: (schema path, rule index, message, the rule) of every rule that does not compile.
        self.rule_errors = cel_compiler.rule_errors

    def validate(self, obj: Any, old: Any = None) -> list[FieldError]:
        errs: list[FieldError] = []
        self._check(obj, old, old is not None, "", errs)
        if self._rules is not _nothing:
            if any(e.type in _BLOCKING for e in errs):
                errs.append(FieldError.invalid("<nil>", None, "some validation rules were not checked because the "
                                               "object was invalid; correct the existing errors to complete "
                                               "validation"))
            else:
                self._rules(obj, old, old is not None, "", errs)
        return errs
