"""Decoding request bodies the way kube-apiserver does: media types, kind checks, field validation.

A body arrives as JSON (``application/json``, or no Content-Type at all, which
is what the official Python client sends) or YAML. It is decoded to a plain
dict, its ``apiVersion`` and ``kind`` are checked against the endpoint (and
filled in when missing), numbers written where a Quantity belongs are turned
into Quantity strings (``cpu: 1`` in YAML is a JSON number), and its shape is
checked against the kind's OpenAPI schema in one compiled walk
(:mod:`apiserver.schemawalk`):

- a field the model does not know is handled per ``fieldValidation``: Strict
  answers 400 naming every such field (``strict decoding error: unknown field
  "spec.containers[0].imagee"``), Warn (the default) drops it and adds a
  ``Warning`` header per field, Ignore drops it silently;
- a value of the wrong type is a 400 BadRequest, as Go's decoder answers.

Pure functions; the walkers are compiled once per definition.
"""

from __future__ import annotations

import json
from typing import Any, Final

import orjson
import yaml

from apiserver import errors, protobuf, schemawalk
from apiserver.request import decodelimits
from apiserver.request.warning import go_quote
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
    budget = len(body) + 16
    if mt in ("", "application/json", "*/*", "application/merge-patch+json",
              "application/strategic-merge-patch+json", "application/json-patch+json"):
        try:
            if strict_duplicates:
                return decodelimits.checked(json.loads(body, object_pairs_hook=_reject_duplicates), budget=budget)
            doc = orjson.loads(body)
            return decodelimits.checked(doc, budget=budget) if decodelimits.needs_walk(body) else doc
        except _DuplicateField as e:
            raise errors.bad_request(f'strict decoding error: json: duplicate field "{e.field}"') from e
        except RecursionError:
            raise decodelimits.exceeded_depth() from None
        except orjson.JSONDecodeError as e:
            if "depth limit" in str(e):
                raise decodelimits.exceeded_depth() from None
            raise errors.bad_request(f"json: cannot parse request body: {e}") from e
        except (json.JSONDecodeError, UnicodeDecodeError, ValueError) as e:
            raise errors.bad_request(f"json: cannot parse request body: {e}") from e
    if mt in ("application/yaml", "application/apply-patch+yaml", "application/x-yaml", "text/yaml"):
        try:
            return decodelimits.checked(yaml.safe_load(body), budget=budget)
        except RecursionError:
            raise decodelimits.exceeded_depth() from None
        except (yaml.YAMLError, ValueError) as e:
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


# --- fields -------------------------------------------------------------------------------------

def check_fields(obj: Obj, ri: ResourceInfo[Any], field_validation: str, warnings: list[str],
                 *, kind: str | None = None, definition: str | None = None) -> None:
    """Decode ``obj`` in place as kube-apiserver decodes a body of the kind (see :mod:`apiserver.schemawalk`).

    Numeric quantities become strings; a value of the wrong type is a 400
    worded as Go's decoder words it (built-in kinds only: a custom resource's
    types are checked by its schema validation); unknown fields are removed
    (Warn: with a warning each, Ignore: silently) or, under Strict, refused
    with a 400 naming every one of them.
    """
    kind = kind or ri.kind
    out = schemawalk.walk(obj, definition or ri.definition, root=kind)
    if out.type_error is not None:
        raise errors.bad_request(f'{kind} in version "{ri.version}" cannot be handled as a {kind}: '
                                 f"{out.type_error.message()}")
    if out.unknown:
        if field_validation == "Strict":
            listed = ", ".join(f"unknown field {go_quote(schemawalk.render_path(p))}" for p in out.unknown)
            raise errors.bad_request(f"strict decoding error: {listed}")
        if field_validation == "Warn":
            warnings.extend(f"unknown field {go_quote(schemawalk.render_path(p))}" for p in out.unknown)
