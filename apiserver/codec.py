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
import re
from collections.abc import Sequence
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


def parse_document(body: bytes, content_type: str | None, *, duplicates: list[str] | None = None) -> Any:
    """JSON or YAML bytes to Python data. Raises 400/415 APIErrors.

    Given ``duplicates``, the keys a JSON object holds more than once are appended to it (each
    repetition, in document order; the last value is the one kept, as Go's decoder keeps it), for
    the caller to refuse or warn about as its ``fieldValidation`` says.
    """
    mt = media_type(content_type)
    budget = len(body) + 16
    if mt in ("", "application/json", "*/*", "application/merge-patch+json",
              "application/strategic-merge-patch+json", "application/json-patch+json"):
        try:
            doc = orjson.loads(body)
            if duplicates is not None and not _no_repeated_keys(body, doc):
                json.loads(body, object_pairs_hook=lambda pairs: _note_duplicates(pairs, duplicates))
            return decodelimits.checked(doc, budget=budget) if decodelimits.needs_walk(body) else doc
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


#: A key's closing quote with white space before its colon: the count below would miss that key.
_SPACED_COLON: Final = re.compile(rb'"[ \t\r\n]+:')


def _no_repeated_keys(body: bytes, doc: Any) -> bool:
    """Whether ``body`` surely holds no object with a key twice (then orjson's ``doc`` is all of it).

    Every key of a JSON text ends in ``":`` when no white space comes before its colon, and a
    string's own ``":`` has its quote escaped (``\\":``), so counting ``":`` counts each key at
    least once. If that count equals the keys ``doc`` kept, no key was repeated. A text where the
    count says more (strings holding JSON, such as kubectl's last-applied annotation) or that has
    spaced colons is decoded a second time, key by key (``json`` with a hook, four times slower
    than the count; every write that does not ask for ``fieldValidation=Ignore`` needs the check).
    """
    if _SPACED_COLON.search(body) is not None:
        return False
    return body.count(b'":') == _count_keys(doc)


def _count_keys(value: Any) -> int:
    n = 0
    if type(value) is dict:
        n = len(value)
        for v in value.values():
            if type(v) is dict or type(v) is list:
                n += _count_keys(v)
    elif type(value) is list:
        for v in value:
            if type(v) is dict or type(v) is list:
                n += _count_keys(v)
    return n


def _note_duplicates(pairs: list[tuple[str, Any]], duplicates: list[str]) -> None:
    seen: set[str] = set()
    for k, _ in pairs:
        if k in seen:
            duplicates.append(k)
        seen.add(k)


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
                 *, kind: str | None = None, definition: str | None = None,
                 duplicates: Sequence[str] = ()) -> None:
    """Decode ``obj`` in place as kube-apiserver decodes a body of the kind (see :mod:`apiserver.schemawalk`).

    Numeric quantities become strings; a value of the wrong type is a 400
    worded as Go's decoder words it (built-in kinds only: a custom resource's
    types are checked by its schema validation); unknown fields are removed
    and, with the ``duplicates`` the body's decoding found (the last value
    kept), reported as its ``fieldValidation`` says: Warn with a warning each,
    Ignore silently, Strict with a 400 naming every one of them.
    """
    kind = kind or ri.kind
    out = schemawalk.walk(obj, definition or ri.definition, root=kind)
    if out.type_error is not None:
        raise errors.bad_request(f'{kind} in version "{ri.version}" cannot be handled as a {kind}: '
                                 f"{out.type_error.message()}")
    report_strict_decoding(field_validation, warnings, duplicates,
                           [schemawalk.render_path(p) for p in out.unknown])


def report_strict_decoding(field_validation: str, warnings: list[str], duplicates: Sequence[str],
                           unknown: Sequence[str] = ()) -> None:
    """kube-apiserver's strict decoding errors (``duplicate field "x"``, ``unknown field "a.b"``):
    under Strict one 400 naming them all, under Warn a warning each, under Ignore nothing."""
    found = [f"duplicate field {go_quote(d)}" for d in duplicates] + [f"unknown field {go_quote(u)}"
                                                                      for u in unknown]
    if not found:
        return
    if field_validation == "Strict":
        raise errors.bad_request("strict decoding error: " + ", ".join(found))
    if field_validation == "Warn":
        warnings.extend(found)
