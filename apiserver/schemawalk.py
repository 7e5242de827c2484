"""One pass over a request body, compiled from its OpenAPI schema: what Go's decoder and CRD pruning do.

kube-apiserver decodes a built-in kind's body into its Go struct: a value of
the wrong JSON type is a decoding error (400, worded by Go's
``encoding/json``), a number written where a ``resource.Quantity`` belongs
becomes that quantity, and a field the struct does not have is an unknown
field (``fieldValidation``: Strict answers 400, Warn drops it with a Warning
header, Ignore drops it). A custom resource has no Go struct: its structural
schema prunes unknown fields the same way (unless
``x-kubernetes-preserve-unknown-fields``), and wrong types are left to the
schema validation (422), so a pruning walk checks no types.

Both are one walk over the object, compiled once per OpenAPI definition
(Kubernetes' 1.32 definitions with their ``$ref``s, and the structural schemas
CustomResourceDefinitions add, see :mod:`machinery.api.schema`) into closures
specialised per node: a body costs one visit of each of its values, nothing is
built for fields that are fine, and paths are only rendered for errors.

Missing fields and nulls are not decoding errors in Go (the zero value is
taken); they are left to validation here too.

Pure functions over the caller's dict (changed in place: quantities
converted, unknown fields removed). The compiled walkers are cached per
definition and dropped when the custom definitions change.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

from machinery.api import schema as defs

_QUANTITY: Final = "io.k8s.apimachinery.pkg.api.resource.Quantity"
_INT_OR_STRING: Final = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
_OBJECT_META: Final = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_INT32: Final = (-(2**31), 2**31 - 1)
_INT64: Final = (-(2**63), 2**63 - 1)

class MapKey(str):
    """A key of a map in a :data:`Path` (Go's type errors leave map keys out of the field path)."""

    __slots__ = ()


#: A position in the body: property names, map keys and list indices from the root.
Path = tuple[str | int, ...]


@dataclass(slots=True)
class TypeError_:
    """The first value of the wrong type, as Go's ``json.UnmarshalTypeError`` reports it."""

    value: str        # "string", "number", "number 1.5", "bool", "array", "object"
    struct: str       # the Go struct holding the field ("ContainerPort")
    path: Path        # from the root, indices included (Go prints it without them)
    go_type: str      # "int32", "v1.PodSpec", "[]v1.Container", "map[string]string"

    def message(self) -> str:
        field_path = ".".join(p for p in self.path if isinstance(p, str) and not isinstance(p, MapKey))
        return (f"json: cannot unmarshal {self.value} into Go struct field {self.struct}.{field_path} "
                f"of type {self.go_type}")


@dataclass(slots=True)
class Outcome:
    """What one walk found: unknown fields (already removed) and the first type error."""

    unknown: list[Path] = field(default_factory=list)
    type_error: TypeError_ | None = None


def render_path(path: Path) -> str:
    """``spec.containers[0].imagee``: a path as Kubernetes' unknown-field messages write it."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + part
    return out


# A compiled walker: (value, path of the value, Go struct holding it, outcome) -> the value to keep.
Walk = Callable[[Any, Path, str, Outcome], Any]


def _keep(value: Any, path: Path, struct: str, out: Outcome) -> Any:
    return value


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _wrong(out: Outcome, value: Any, path: Path, struct: str, go_type: str, *, literal: bool = False) -> None:
    if out.type_error is None:
        got = _json_kind(value)
        if literal:
            got = f"number {value}"
        out.type_error = TypeError_(got, struct, path, go_type)


# --- reading schemas -------------------------------------------------------------------------------

def _types(node: defs.Schema) -> set[str]:
    t = node.get("type")
    if isinstance(t, str):
        return {t}
    if isinstance(t, list):
        return {x for x in t if isinstance(x, str) and x != "null"}
    return set()


def _ref_of(node: defs.Schema) -> str | None:
    name = defs.ref_name(node)
    if name is None:
        all_of = node.get("allOf")
        if isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], dict):
            name = defs.ref_name(all_of[0])
    return name


def _go_name(definition: str) -> str:
    """``io.k8s.api.core.v1.PodSpec`` -> ``v1.PodSpec``, as Go prints a type with its package."""
    parts = definition.split(".")
    return ".".join(parts[-2:]) if len(parts) >= 2 else definition


def _go_type(node: defs.Schema) -> str:
    ref = _ref_of(node)
    if ref is not None:
        return _go_name(ref)
    types = _types(node)
    if "array" in types:
        items = node.get("items")
        return "[]" + (_go_type(items) if isinstance(items, dict) else "interface {}")
    if "object" in types:
        extra = node.get("additionalProperties")
        return "map[string]" + (_go_type(extra) if isinstance(extra, dict) else "interface {}")
    if "integer" in types:
        return "int32" if node.get("format") == "int32" else "int64"
    if "number" in types:
        return "float64"
    if "boolean" in types:
        return "bool"
    if "string" in types:
        return "string"
    return "interface {}"


# --- compiling -------------------------------------------------------------------------------------

class _Compiler:
    """Compiles schema nodes into walkers; ``typed`` for Go structs, else pruning only."""

    def __init__(self, typed: bool) -> None:
        self.typed = typed

    def ref(self, name: str) -> Walk:
        """A walker for a definition, looked up on first use (definitions refer to themselves)."""
        resolved: list[Walk] = []

        def walk(value: Any, path: Path, struct: str, out: Outcome) -> Any:
            if not resolved:
                # Kubernetes' own definitions (ObjectMeta in a custom resource) are Go structs.
                resolved.append(_definition_walker(name, not defs.is_custom(name)))
            return resolved[0](value, path, struct, out)
        return walk

    def node(self, node: defs.Schema, *, embedded_root: bool = False) -> Walk:
        ref = _ref_of(node)
        if ref is not None:
            if ref == _QUANTITY:
                return _quantity if self.typed else _keep
            if ref == _INT_OR_STRING:
                return _int_or_string if self.typed else _keep
            return self.ref(ref)
        if node.get("x-kubernetes-int-or-string"):
            return _int_or_string if self.typed else _keep
        types = _types(node)
        props = node.get("properties")
        preserve = bool(node.get("x-kubernetes-preserve-unknown-fields"))
        embedded = bool(node.get("x-kubernetes-embedded-resource")) or embedded_root
        if isinstance(props, dict) and (props or "object" in types or embedded):
            return self.struct(node, props, preserve=preserve, embedded=embedded)
        if "object" in types or (embedded and not types):
            extra = node.get("additionalProperties")
            if isinstance(extra, dict):
                return self.map(node, self.node(extra))
            if extra is True or self.typed:
                return self.map(node, None)
            # A structural object with neither properties nor additionalProperties keeps nothing
            # unknown, unless it preserves unknown fields.
            return self.struct(node, {}, preserve=preserve, embedded=embedded)
        if "array" in types:
            items = node.get("items")
            return self.array(node, self.node(items) if isinstance(items, dict) else None)
        if not self.typed:
            return _keep
        if "integer" in types:
            bounds = _INT32 if node.get("format") == "int32" else _INT64
            return _integer(bounds, _go_type(node))
        if "number" in types:
            return _number
        if "boolean" in types:
            return _boolean
        if "string" in types:
            return _string
        return _keep

    def struct(self, node: defs.Schema, props: dict[str, Any], *, preserve: bool, embedded: bool,
               name: str | None = None) -> Walk:
        children: dict[str, Walk] = {k: self.node(v) for k, v in props.items() if isinstance(v, dict)}
        if embedded:
            # An embedded resource carries apiVersion, kind and ObjectMeta whatever its schema says.
            children.setdefault("apiVersion", _string if self.typed else _keep)
            children.setdefault("kind", _string if self.typed else _keep)
            children["metadata"] = self.ref(_OBJECT_META)
        typed = self.typed
        go_type = _go_name(name) if name else _go_type(node)
        own = name.rsplit(".", 1)[-1] if name else None

        def walk(value: Any, path: Path, struct: str, out: Outcome) -> Any:
            if not isinstance(value, dict):
                if typed and value is not None:
                    _wrong(out, value, path, struct, go_type)
                return value
            here = own or struct
            unknown: list[str] | None = None
            for key, sub in value.items():
                child = children.get(key)
                if child is None:
                    if not preserve:
                        if unknown is None:
                            unknown = []
                        unknown.append(key)
                    continue
                if sub is None or child is _keep:
                    continue
                new = child(sub, (*path, key), here, out)
                if new is not sub:
                    value[key] = new
            if unknown:
                for key in unknown:
                    out.unknown.append((*path, key))
                    del value[key]
            return value
        return walk

    def map(self, node: defs.Schema, values: Walk | None) -> Walk:
        typed = self.typed
        go_type = _go_type(node)

        def walk(value: Any, path: Path, struct: str, out: Outcome) -> Any:
            if not isinstance(value, dict):
                if typed and value is not None:
                    _wrong(out, value, path, struct, go_type)
                return value
            if values is not None and values is not _keep:
                for key, sub in value.items():
                    if sub is not None:
                        new = values(sub, (*path, MapKey(key)), struct, out)
                        if new is not sub:
                            value[key] = new
            return value
        return walk

    def array(self, node: defs.Schema, items: Walk | None) -> Walk:
        typed = self.typed
        go_type = _go_type(node)

        def walk(value: Any, path: Path, struct: str, out: Outcome) -> Any:
            if not isinstance(value, list):
                if typed and value is not None:
                    _wrong(out, value, path, struct, go_type)
                return value
            if items is not None and items is not _keep:
                for i, sub in enumerate(value):
                    if sub is not None:
                        # A wrong element is reported at the list field, as Go does.
                        new = items(sub, (*path, i), struct, out)
                        if new is not sub:
                            value[i] = new
            return value
        return walk


def _integer(bounds: tuple[int, int], go_type: str) -> Walk:
    lo, hi = bounds

    def walk(value: Any, path: Path, struct: str, out: Outcome) -> Any:
        if type(value) is int:
            if lo <= value <= hi:
                return value
            _wrong(out, value, path, struct, go_type, literal=True)
            return value
        if isinstance(value, float) and not isinstance(value, bool):
            # YAML turns 3.0 into a float; Go's YAML-to-JSON step writes it back as 3.
            if value.is_integer() and lo <= value <= hi:
                return int(value)
            _wrong(out, value, path, struct, go_type, literal=True)
            return value
        _wrong(out, value, path, struct, go_type)
        return value
    return walk


def _number(value: Any, path: Path, struct: str, out: Outcome) -> Any:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    _wrong(out, value, path, struct, "float64")
    return value


def _boolean(value: Any, path: Path, struct: str, out: Outcome) -> Any:
    if not isinstance(value, bool):
        _wrong(out, value, path, struct, "bool")
    return value


def _string(value: Any, path: Path, struct: str, out: Outcome) -> Any:
    if not isinstance(value, str):
        _wrong(out, value, path, struct, "string")
    return value


def _quantity(value: Any, path: Path, struct: str, out: Outcome) -> Any:
    """A Quantity is written as a string; a number (``cpu: 1`` in YAML) is that quantity."""
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if isinstance(value, float) and value.is_integer():
            return str(int(value))
        return str(value)
    _wrong(out, value, path, struct, "resource.Quantity")
    return value


def _int_or_string(value: Any, path: Path, struct: str, out: Outcome) -> Any:
    if isinstance(value, str) or type(value) is int:
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    _wrong(out, value, path, struct, "intstr.IntOrString")
    return value


@functools.cache
def _definition_walker(name: str, typed: bool) -> Walk:
    node = defs.definition(name)
    compiler = _Compiler(typed)
    props = node.get("properties")
    if isinstance(props, dict) and props:
        return compiler.struct(node, props, preserve=bool(node.get("x-kubernetes-preserve-unknown-fields")),
                               embedded=False, name=name)
    return compiler.node(node)


schema_cache_clear = _definition_walker.cache_clear
defs.on_change(schema_cache_clear)


def walk(obj: dict[str, Any], definition: str, *, root: str) -> Outcome:
    """Walk a whole object of ``definition`` in place; ``root`` names its Go struct (the kind).

    A custom resource's definition (added by its CustomResourceDefinition) is
    walked for pruning only; a built-in one for Go's types too.
    """
    out = Outcome()
    walker = _definition_walker(definition, not defs.is_custom(definition))
    walker(obj, (), root, out)
    return out
