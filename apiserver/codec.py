"""Decoding request bodies the way kube-apiserver does: media types, kind checks, field validation.

A body arrives as JSON (``application/json``, or no Content-Type at all, which
is what the official Python client sends) or YAML. It is decoded to a plain
dict, its ``apiVersion`` and ``kind`` are checked against the endpoint (and
filled in when missing), numbers written where a Quantity belongs are turned
into Quantity strings (``cpu: 1`` in YAML is a JSON number), and its shape is
checked against the official model of the kind:

- a field the model does not know is handled per ``fieldValidation``: Strict
  answers 400 naming every such field (``strict decoding error: unknown field
  "spec.containers[0].imagee"``), Warn (the default) drops it and adds a
  ``Warning`` header per field, Ignore drops it silently;
- a value of the wrong type is a 400 BadRequest, as Go's decoder answers.

Pure functions; the quantity walkers are compiled once per definition.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any, Final

import orjson
import pydantic
import yaml

from apiserver import errors, protobuf
from machinery.api import schema as defs
from machinery.api.kinds import ResourceInfo

MAX_BODY_BYTES: Final = 3 * 1024 * 1024
JSON_TYPES: Final = ("application/json", "application/yaml", "application/vnd.kubernetes.protobuf")
PATCH_TYPES: Final = (
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
)
FIELD_VALIDATION: Final = ("Strict", "Warn", "Ignore")

Obj = dict[str, Any]


def media_type(content_type: str | None) -> str:
    return (content_type or "").split(";", 1)[0].strip().lower()


def parse_document(body: bytes, content_type: str | None, *, strict_duplicates: bool = False) -> Any:
    """JSON or YAML bytes to Python data. Raises 400/415 APIErrors."""
    mt = media_type(content_type)
    if mt in ("", "application/json", "*/*", "application/merge-patch+json",
              "application/strategic-merge-patch+json", "application/json-patch+json"):
        try:
            if strict_duplicates:
                return json.loads(body, object_pairs_hook=_reject_duplicates)
            return orjson.loads(body)
        except _DuplicateField as e:
            raise errors.bad_request(f'strict decoding error: json: duplicate field "{e.field}"') from e
        except (orjson.JSONDecodeError, json.JSONDecodeError, UnicodeDecodeError) as e:
            raise errors.bad_request(f"json: cannot parse request body: {e}") from e
    if mt in ("application/yaml", "application/apply-patch+yaml", "application/x-yaml", "text/yaml"):
        try:
            return yaml.safe_load(body)
        except yaml.YAMLError as e:
            raise errors.bad_request(f"yaml: cannot parse request body: {e}") from e
    if mt == protobuf.CONTENT_TYPE:
        try:
            return protobuf.decode(body)
        except (protobuf.ProtobufError, UnicodeDecodeError, orjson.JSONDecodeError) as e:
            raise errors.APIError(415, "UnsupportedMediaType", f"cannot read the protobuf body: {e}") from e
    raise errors.unsupported_media_type(mt, ["application/json", "application/yaml",
                                             "application/vnd.kubernetes.protobuf"])


class _DuplicateField(ValueError):
    def __init__(self, field: str) -> None:
        super().__init__(field)
        self.field = field


def _reject_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _DuplicateField(k)
        out[k] = v
    return out


def check_kind(obj: Any, ri: ResourceInfo[Any], *, kind: str | None = None, api_version: str | None = None) -> Obj:
    """Check that the body is an object of the endpoint's kind and version; fill them in when absent."""
    kind = kind or ri.kind
    api_version = api_version or ri.api_version
    if not isinstance(obj, dict):
        raise errors.bad_request(f"the body of the request must be a JSON object of kind {kind}")
    got_version = obj.get("apiVersion")
    got_kind = obj.get("kind")
    if got_version not in (None, "") and got_version != api_version:
        raise errors.bad_request(
            f"the API version in the data ({got_version}) does not match the expected API version ({api_version})")
    if got_kind not in (None, "") and got_kind != kind:
        raise errors.bad_request(
            f'{got_kind} in version "{api_version}" cannot be handled as a {kind}: '
            f"the kind in the data ({got_kind}) does not match the expected kind ({kind})")
    obj["apiVersion"] = api_version
    obj["kind"] = kind
    if not isinstance(obj.get("metadata", {}), dict):
        raise errors.bad_request(f'{kind} in version "{api_version}" cannot be handled as a {kind}: '
                                 "metadata must be an object")
    return obj


# --- quantities -------------------------------------------------------------------------------

_QUANTITY: Final = "io.k8s.apimachinery.pkg.api.resource.Quantity"
Walker = Callable[[Any], None]


def _is_quantity(schema: defs.Schema) -> bool:
    return defs.ref_name(schema) == _QUANTITY or (
        isinstance(schema.get("allOf"), list) and any(defs.ref_name(s) == _QUANTITY for s in schema["allOf"]))


@functools.cache
def _walker(definition: str) -> Walker | None:
    """A function converting numeric quantities to strings in objects of ``definition``, or None if it has none."""
    return _compile(defs.definition(definition), frozenset([definition]))


def _compile(schema: defs.Schema, seen: frozenset[str]) -> Walker | None:
    props = defs.resolve(schema).get("properties") or {}
    steps: list[tuple[str, str, Walker | None]] = []
    for name, sub in props.items():
        if _is_quantity(sub):
            steps.append((name, "scalar", None))
            continue
        extra = sub.get("additionalProperties")
        if isinstance(extra, dict) and _is_quantity(extra):
            steps.append((name, "map", None))
            continue
        if "items" in sub:
            item = sub["items"]
            ref = defs.ref_name(item)
            if ref and ref not in seen:
                inner = _compile(defs.definition(ref), seen | {ref})
                if inner is not None:
                    steps.append((name, "list", inner))
            continue
        target = defs.ref_name(sub)
        if target and target not in seen:
            inner = _compile(defs.definition(target), seen | {target})
            if inner is not None:
                steps.append((name, "object", inner))
    if not steps:
        return None

    def walk(obj: Any) -> None:
        if not isinstance(obj, dict):
            return
        for name, how, inner in steps:
            value = obj.get(name)
            if value is None:
                continue
            if how == "scalar":
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    obj[name] = _number_to_quantity(value)
            elif how == "map":
                if isinstance(value, dict):
                    for k, v in value.items():
                        if isinstance(v, (int, float)) and not isinstance(v, bool):
                            value[k] = _number_to_quantity(v)
            elif how == "list":
                if isinstance(value, list) and inner is not None:
                    for item in value:
                        inner(item)
            elif inner is not None:
                inner(value)
    return walk


def _number_to_quantity(value: float) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def normalize_quantities(obj: Obj, ri: ResourceInfo[Any]) -> None:
    walker = _walker(ri.definition)
    if walker is not None:
        walker(obj)


# --- model validation -------------------------------------------------------------------------

def _path(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def _drop(obj: Any, loc: tuple[int | str, ...]) -> None:
    cur = obj
    for part in loc[:-1]:
        try:
            cur = cur[part]
        except (KeyError, IndexError, TypeError):
            return
    if isinstance(cur, dict):
        cur.pop(loc[-1], None)


_GO_TYPES: Final = {
    "int_type": "int32", "int_parsing": "int32", "string_type": "string", "bool_type": "bool",
    "bool_parsing": "bool", "float_type": "float64", "list_type": "array", "dict_type": "object",
    "model_type": "object", "model_attributes_type": "object", "datetime_type": "Time",
    "datetime_parsing": "Time", "datetime_from_date_parsing": "Time",
}


def check_fields(obj: Obj, ri: ResourceInfo[Any], field_validation: str, warnings: list[str],
                 *, kind: str | None = None, model: type[pydantic.BaseModel] | None = None) -> None:
    """Type-check ``obj`` against the kind's model; handle unknown fields per ``field_validation``.

    Unknown fields are removed from ``obj`` (Warn, Ignore) or rejected (Strict).
    """
    model = model or ri.model
    kind = kind or ri.kind
    try:
        model.model_validate(obj)
        return
    except pydantic.ValidationError as e:
        errs = e.errors(include_url=False, include_input=True)
    unknown = [er["loc"] for er in errs if er["type"] == "extra_forbidden"]
    wrong = [er for er in errs if er["type"] != "extra_forbidden"]
    if unknown and field_validation == "Strict":
        listed = ", ".join(f'unknown field "{_path(loc)}"' for loc in unknown)
        raise errors.bad_request(f"strict decoding error: {listed}")
    if wrong:
        er = wrong[0]
        got = type(er.get("input")).__name__
        got = {"str": "string", "int": "number", "float": "number", "dict": "object", "list": "array",
               "bool": "bool", "NoneType": "null"}.get(got, got)
        want = _GO_TYPES.get(er["type"], er["type"])
        raise errors.bad_request(
            f'{kind} in version "{ri.version}" cannot be handled as a {kind}: json: cannot unmarshal '
            f"{got} into Go struct field {_path(er['loc'])} of type {want}")
    for loc in unknown:
        if field_validation == "Warn":
            warnings.append(f'unknown field "{_path(loc)}"')
        _drop(obj, loc)
