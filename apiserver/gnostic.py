"""An OpenAPI v2 (Swagger 2.0) document in gnostic's protobuf form, which kubectl reads from ``/openapi/v2``.

client-go's discovery asks ``/openapi/v2`` for
``application/com.github.proto-openapi.spec.v2@v1.0+protobuf`` and unmarshals
whatever comes back as gnostic's ``openapi.v2.Document``: kubectl cannot read
the JSON form. kube-openapi's handler makes that message from the JSON
document with gnostic's compiler (``openapi_v2.ParseDocument``) and
``proto.Marshal``; :func:`to_protobuf` does the same here.

The messages are gnostic's own definitions, taken from kubectl
(``gnostic_openapiv2.json``, written by ``hack/gen_gnostic_descriptor.py``),
and the message classes come from the ``protobuf`` package. The mapping from
a Swagger object to its message follows gnostic's compiler:

- a property is the field of the same name in snake case (``operationId`` ->
  ``operation_id``, ``$ref`` -> ``_ref``); every ``x-`` key is a
  ``vendor_extension`` entry whose value is YAML text (``Any.yaml``), which is
  all kubectl reads of it (kube-openapi's ``VendorExtensionToMap``);
- ``default``, ``example`` and each ``enum`` value are ``Any`` messages with
  YAML text, as extensions are;
- a map of named things (``definitions``, ``properties``, ``paths``,
  ``responses``, ``securityDefinitions``...) is a repeated ``Named*`` message,
  in the order of the keys (sorted, as the JSON is written);
- the unions are decided as gnostic decides them: a parameter is a body
  parameter when ``in`` is ``body`` and otherwise the sub-schema its ``in``
  names; a parameter or response with ``$ref`` is a ``JsonReference``; a
  response schema of type ``file`` is a ``FileSchema``; ``type`` and ``items``
  take one value or a list; ``additionalProperties`` a boolean or a schema.

A key the Swagger 2.0 object does not have is a :class:`ValueError` (a
value of the wrong shape a :class:`TypeError`): the document is built by
kubesim, so that is a bug to find, not input to forgive.

Pure functions; the message classes are built once per process (read-only).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Mapping
from importlib import resources
from typing import Any, Final

import yaml
from google.protobuf import any_pb2, descriptor_pb2, descriptor_pool, json_format, message, message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor

Json = dict[str, Any]
#: A message of a class made from the descriptors at run time: mypy cannot know its fields.
Msg = Any

_PACKAGE: Final = "openapi.v2"
_CAMEL: Final = re.compile(r"(?<!^)(?=[A-Z])")
_YAML_DUMPER: Final = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

# ``in`` of a non-body parameter -> its field of NonBodyParameter.
_NON_BODY: Final = {"header": "header_parameter_sub_schema", "formData": "form_data_parameter_sub_schema",
                    "query": "query_parameter_sub_schema", "path": "path_parameter_sub_schema"}
# ``type`` (and ``flow``) of a security scheme -> its field of SecurityDefinitionsItem.
_SECURITY: Final = {("basic", ""): "basic_authentication_security", ("apiKey", ""): "api_key_security",
                    ("oauth2", "implicit"): "oauth2_implicit_security",
                    ("oauth2", "password"): "oauth2_password_security",
                    ("oauth2", "application"): "oauth2_application_security",
                    ("oauth2", "accessCode"): "oauth2_access_code_security"}


@functools.cache
def _pool() -> descriptor_pool.DescriptorPool:
    pool = descriptor_pool.DescriptorPool()
    pool.Add(descriptor_pb2.FileDescriptorProto.FromString(any_pb2.DESCRIPTOR.serialized_pb))
    data = json.loads((resources.files("apiserver") / "gnostic_openapiv2.json").read_bytes())
    pool.Add(json_format.ParseDict(data, descriptor_pb2.FileDescriptorProto()))
    return pool


def message_class(name: str) -> type[message.Message]:
    """gnostic's message class ``openapi.v2.<name>`` (``Document``, ``Schema``...)."""
    cls: type[message.Message] = message_factory.GetMessageClass(_pool().FindMessageTypeByName(f"{_PACKAGE}.{name}"))
    return cls


def to_protobuf(document: Json) -> bytes:
    """The serialized ``openapi.v2.Document`` of a Swagger 2.0 document (its JSON form, parsed)."""
    doc = message_class("Document")()
    _fill(doc, document)
    body: bytes = doc.SerializeToString()
    return body


def from_protobuf(data: bytes) -> message.Message:
    """Parse a serialized ``openapi.v2.Document`` (for tests and tools that check what was served)."""
    return message_class("Document").FromString(data)


def _yaml(value: Any) -> str:
    text: str = yaml.dump(value, Dumper=_YAML_DUMPER, default_flow_style=False, allow_unicode=True,
                          sort_keys=True)
    return text


def _field_name(key: str) -> str:
    if key == "$ref":
        return "_ref"
    return _CAMEL.sub("_", key).lower()


def _fill(msg: Msg, value: Any) -> None:
    """Set ``msg`` from the JSON form of the Swagger object it holds."""
    special = _filler(msg.DESCRIPTOR.full_name)
    if special is not None:
        special(msg, value)
        return
    if not isinstance(value, Mapping):
        raise TypeError(f"{msg.DESCRIPTOR.name} must be an object, not {value!r}")
    msg.SetInParent()
    fields = msg.DESCRIPTOR.fields_by_name
    for key in sorted(value):
        item = value[key]
        if key.startswith("x-") and "vendor_extension" in fields:
            _named(msg.vendor_extension.add(), key, item)
            continue
        field = fields.get(_field_name(key))
        if field is None:
            raise ValueError(f"{msg.DESCRIPTOR.name} has no property {key!r}")
        _set(msg, field, item)


def _set(msg: Msg, field: FieldDescriptor, item: Any) -> None:
    repeated = _is_repeated(field)
    target = getattr(msg, field.name)
    if field.message_type is None:
        if repeated:
            target.extend(item)
        elif field.type == FieldDescriptor.TYPE_DOUBLE:
            setattr(msg, field.name, float(item))
        else:
            setattr(msg, field.name, item)
    elif repeated:
        for element in item:
            _fill(target.add(), element)
    else:
        _fill(target, item)


def _is_repeated(field: FieldDescriptor) -> bool:
    # protobuf 5.29 added is_repeated; 7 removed label.
    repeated = getattr(field, "is_repeated", None)
    if repeated is None:
        return bool(field.label == FieldDescriptor.LABEL_REPEATED)
    return bool(repeated)


def _named(entry: Msg, name: str, value: Any) -> None:
    entry.name = name
    _set(entry, entry.DESCRIPTOR.fields_by_name["value"], value)


def _map_of(descriptor: Descriptor) -> str | None:
    """The field holding the entries, if the message is a map of named things (``Definitions``...)."""
    fields = descriptor.fields
    if len(fields) == 1 and fields[0].name == "additional_properties":
        return "additional_properties"
    return None


def _fill_map(msg: Msg, value: Mapping[str, Any]) -> None:
    msg.SetInParent()
    entries = msg.additional_properties
    for key in sorted(value):
        _named(entries.add(), key, value[key])


def _fill_any(msg: Msg, value: Any) -> None:
    msg.yaml = _yaml(value)


def _fill_list(field: str) -> Callable[[Msg, Any], None]:
    def fill(msg: Msg, value: Any) -> None:
        msg.SetInParent()
        getattr(msg, field).extend([value] if isinstance(value, str) else value)
    return fill


def _fill_items(msg: Msg, value: Any) -> None:
    schemas = msg.schema
    for schema in [value] if isinstance(value, Mapping) else value:
        _fill(schemas.add(), schema)


def _fill_additional_properties(msg: Msg, value: Any) -> None:
    if isinstance(value, bool):
        msg.boolean = value
    else:
        _fill(msg.schema, value)


def _fill_keyed(field: str) -> Callable[[Msg, Any], None]:
    """``paths`` and ``responses``: named entries beside vendor extensions."""
    def fill(msg: Msg, value: Mapping[str, Any]) -> None:
        msg.SetInParent()
        for key in sorted(value):
            if key.startswith("x-"):
                _named(msg.vendor_extension.add(), key, value[key])
            else:
                _named(getattr(msg, field).add(), key, value[key])
    return fill


def _fill_union(choose: Callable[[Mapping[str, Any]], str]) -> Callable[[Msg, Any], None]:
    def fill(msg: Msg, value: Any) -> None:
        if not isinstance(value, Mapping):
            raise TypeError(f"{msg.DESCRIPTOR.name} must be an object, not {value!r}")
        _fill(getattr(msg, choose(value)), value)
    return fill


def _non_body(value: Mapping[str, Any]) -> str:
    where = value.get("in")
    if where not in _NON_BODY:
        raise ValueError(f"a parameter cannot be in {where!r}")
    return _NON_BODY[where]


def _security(value: Mapping[str, Any]) -> str:
    key = (value.get("type"), value.get("flow", "") if value.get("type") == "oauth2" else "")
    if key not in _SECURITY:
        raise ValueError(f"unknown security scheme {key}")
    return _SECURITY[key]


_SPECIAL: Final[dict[str, Callable[[Msg, Any], None]]] = {
    "Any": _fill_any,
    "TypeItem": _fill_list("value"),
    "StringArray": _fill_list("value"),
    "ItemsItem": _fill_items,
    "AdditionalPropertiesItem": _fill_additional_properties,
    "Paths": _fill_keyed("path"),
    "Responses": _fill_keyed("response_code"),
    "ParametersItem": _fill_union(lambda v: "json_reference" if "$ref" in v else "parameter"),
    "ResponseValue": _fill_union(lambda v: "json_reference" if "$ref" in v else "response"),
    "Parameter": _fill_union(lambda v: "body_parameter" if v.get("in") == "body" else "non_body_parameter"),
    "NonBodyParameter": _fill_union(_non_body),
    "SchemaItem": _fill_union(lambda v: "file_schema" if v.get("type") == "file" else "schema"),
    "SecurityDefinitionsItem": _fill_union(_security),
}


@functools.cache
def _filler(full_name: str) -> Callable[[Msg, Any], None] | None:
    """How a message is filled, when it is not field by field: the unions, wrappers and maps."""
    name = full_name.removeprefix(_PACKAGE + ".")
    if name in _SPECIAL:
        return _SPECIAL[name]
    if _map_of(_pool().FindMessageTypeByName(full_name)) is not None:
        return _fill_map
    return None
